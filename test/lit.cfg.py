# lit configuration for otc: FileCheck tests of the tools and passes (lit/),
# and end-to-end training tests against PyTorch fixtures (e2e/).
import os

import lit.formats

config.name = "otc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.otc_obj_root, "test")
config.excludes = ["Inputs", "fixtures", "kernels", "unit", "CMakeLists.txt"]

config.environment["PATH"] = os.pathsep.join(
    [os.path.join(config.otc_obj_root, "bin"), config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])

# Debian's interpreter has numpy and onnx; the first python3 on PATH may not.
config.substitutions.append(("%python", "/usr/bin/python3"))
# The same with onnxruntime, installed by scripts/install-deps.sh.
config.substitutions.append(("%ortpython", os.path.join(config.otc_src_root, ".venv", "bin", "python")))
config.substitutions.append(("%fixtures", os.path.join(config.otc_src_root, "test", "e2e", "fixtures")))
config.substitutions.append(("%inputs", os.path.join(config.otc_src_root, "test", "lit", "Inputs")))
config.substitutions.append(("%zoo", os.path.join(config.otc_src_root, "test", "zoo", "fixtures")))
config.substitutions.append(("%models", os.path.join(config.otc_src_root, "test", "models", "fixtures")))
config.substitutions.append(("%e2e", os.path.join(config.otc_src_root, "test", "e2e")))

# A memory cap for one command; ASan reserves terabytes of address space for
# its shadow, so under the sanitizers the cap is left out.
config.substitutions.append(
    ("%limit_memory", "" if config.sanitized else "ulimit -v 1048576 &&"))

# Under the sanitizers the generated steps build at -O1: ASan at -O3 made
# the LSTM tagger's step alone take about 45 minutes of compiler time.
# Numerics-only loops (every model at every precision) build dozens of
# executables; the sanitizer build sees the same import and code generation
# in the models' own tests, so they run on the release build only.
if not config.sanitized:
    config.available_features.add("release")
if config.sanitized and "OTC_CXXFLAGS" not in os.environ:
    config.environment["OTC_CXXFLAGS"] = "-O1"

if config.have_cuda:
    config.available_features.add("nvcc")
    if config.have_cudnn:
        config.available_features.add("cudnn")
    if config.have_nccl:
        config.available_features.add("nccl")

# Data parallelism: two ranks under OpenMPI's mpirun, on however many cores
# there are (--oversubscribe), unbound; tests run as root in CI.
if config.have_mpi:
    config.available_features.add("mpi")
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    config.substitutions.append(("%mpirun", "mpirun --oversubscribe --bind-to none -np"))

# ONNX's node tests compile one executable per case on the release build; the
# sanitizer build runs import and code generation of every case under ASan.
config.substitutions.append(("%node_test_mode", "--codegen-only" if config.sanitized else ""))
