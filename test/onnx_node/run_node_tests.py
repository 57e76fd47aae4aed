"""ONNX's own node tests (Debian's libonnx-testdata) through otc's forward
executables on the CPU.

  run_node_tests.py OTC EXPECTED WORKDIR [-j N] [--codegen-only] [--write]

Each test folder holds model.onnx and test_data_set_*/{input,output}_K.pb.
For every case the script either
  - excludes it, with the reason: otc refuses the model (its one-line error:
    an operator or attribute outside what is built, a dtype otc does not
    run), or the data needs what the forward runner does not read; or
  - compiles it with `otc compile --forward-only`, runs every data set and
    compares each output with ONNX's reference at ONNX's own backend-test
    tolerance (rtol 1e-3, atol 1e-7, onnx/backend/test/case/node/__init__.py),
    NaNs in the same places.
EXPECTED lists the cases that passed when it was last written (--write):
the run fails when one of them no longer passes (a regression) or when a
case imports but computes a wrong answer, and says when a new case passes.
--codegen-only stops after `otc compile --emit source` (the sanitizer build:
import and code generation under ASan, no host compile per case).
"""
import argparse
import collections
import concurrent.futures
import glob
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

NODE_DIR = "/usr/share/libonnx-testdata/data/node"
RTOL, ATOL = 1e-3, 1e-7
# What the forward runner reads and writes for each ONNX element type.
NPY_TYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float32,
             onnx.TensorProto.BFLOAT16: np.float32, onnx.TensorProto.INT64: np.int64,
             onnx.TensorProto.BOOL: np.bool_,
             # Integers of other widths stay as they are: the runtime widens
             # them to int64, the width otc computes in.
             onnx.TensorProto.INT8: np.int8, onnx.TensorProto.INT16: np.int16,
             onnx.TensorProto.INT32: np.int32, onnx.TensorProto.UINT8: np.uint8,
             onnx.TensorProto.UINT16: np.uint16, onnx.TensorProto.UINT32: np.uint32,
             onnx.TensorProto.UINT64: np.uint64}


# Cases where otc computes what it means to and ONNX 1.12's reference data
# says otherwise.
KNOWN = {
    "test_cast_FLOAT_to_BFLOAT16":
        "ONNX 1.12's reference truncates to bfloat16; otc rounds to nearest even, "
        "as PyTorch does and the Cast spec says from opset 19",
    "test_batchnorm_epsilon_training_mode":
        "otc updates the running variance with the unbiased batch variance, as "
        "PyTorch does; ONNX's reference uses the population variance",
    "test_batchnorm_example_training_mode":
        "otc updates the running variance with the unbiased batch variance, as "
        "PyTorch does; ONNX's reference uses the population variance",
}


def file_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def first_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1][:300] if lines else "(no output)"


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def to_npy(t, onnx_type):
    """The array the forward runner reads for TensorProto `t` of a value
    whose declared type is `onnx_type`, or None."""
    a = numpy_helper.to_array(t)
    if onnx_type == onnx.TensorProto.BFLOAT16 and a.dtype == np.uint16:
        # ONNX 1.12 stores bfloat16 test data as its bit patterns.
        return (a.astype(np.uint32) << 16).view(np.float32)
    if t.data_type not in NPY_TYPES:
        return None
    return a.astype(NPY_TYPES[t.data_type])


def fold_inputs(folder, out, first):
    """A copy of the case's model in which inputs `first`.. are initializers
    holding test_data_set_0's values."""
    model = onnx.load(os.path.join(folder, "model.onnx"))
    g = model.graph
    keep = []
    for k, inp in enumerate(g.input):
        if k < first:
            keep.append(inp)
            continue
        t = load_pb(os.path.join(folder, "test_data_set_0", f"input_{k}.pb"))
        t.name = inp.name
        g.initializer.append(t)
    del g.input[:]
    g.input.extend(keep)
    path = os.path.join(out, f"folded{first}.onnx")
    onnx.save(model, path)
    return path


def run_case(otc, case, work, codegen_only):
    """(status, reason): status is PASS, FAIL or EXCLUDED; a pass with
    inputs folded into initializers says from which input in `reason`."""
    folder = os.path.join(NODE_DIR, case)
    out = os.path.join(work, case)
    os.makedirs(out, exist_ok=True)
    if case in KNOWN:
        return "EXCLUDED", KNOWN[case]
    status, why = run_model(otc, folder, os.path.join(folder, "model.onnx"), out, codegen_only, 0)
    if status != "EXCLUDED" or "compile-time" not in why:
        return status, why
    # Real models hold axes, shapes, bounds and exponents as constants; ONNX's
    # tests feed them as inputs. Retry with them as initializers: inputs 1..
    # (the operand stays an input), then all of them.
    n = len(onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False).graph.input)
    for first in (1, 0):
        if first >= n:
            continue
        s2, w2 = run_model(otc, folder, fold_inputs(folder, out, first), out, codegen_only, first)
        if s2 != "EXCLUDED":
            return s2, (f"inputs {first}.. as initializers" if s2 == "PASS" else w2)
        why = w2
    return "EXCLUDED", why


def run_model(otc, folder, model_path, out, codegen_only, folded):
    """Compiles and checks one model; inputs `folded`.. are initializers."""
    exe = os.path.join(out, "forward")
    cmd = [otc, "compile", model_path, "--forward-only", "--target", "cpu"]
    cmd += ["--emit", "source"] if codegen_only else ["-o", exe]
    env = dict(os.environ, OTC_CXXFLAGS="-O1")
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        msg = first_line(r.stderr)
        if "otc: error:" not in msg:
            return "FAIL", "otc compile failed without a clear error: " + msg
        return "EXCLUDED", msg.split("otc: error: ", 1)[1]
    if codegen_only:
        return "PASS", ""

    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    sets = sorted(glob.glob(os.path.join(folder, "test_data_set_*")))
    for s in sets:
        data = os.path.join(out, os.path.basename(s), "in")
        result = os.path.join(out, os.path.basename(s), "out")
        os.makedirs(data, exist_ok=True)
        for k, inp in enumerate(inputs):
            t = load_pb(os.path.join(s, f"input_{k}.pb"))
            a = to_npy(t, inp.type.tensor_type.elem_type)
            if a is None:
                return "EXCLUDED", f"input {inp.name!r} is {onnx.TensorProto.DataType.Name(t.data_type)}"
            declared = tuple(d.dim_value for d in inp.type.tensor_type.shape.dim)
            if all(declared) and declared != a.shape:
                return "EXCLUDED", (f"input {inp.name!r}'s test data has shape {a.shape}, "
                                    f"the model declares {declared}")
            np.save(os.path.join(data, file_name(inp.name)), a)
        r = subprocess.run([exe, "--data", data, "--out", result, "--threads", "1"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "FAIL", "the forward executable failed: " + first_line(r.stderr)
        for k, o in enumerate(model.graph.output):
            t = load_pb(os.path.join(s, f"output_{k}.pb"))
            want = to_npy(t, o.type.tensor_type.elem_type)
            if want is None:
                return "EXCLUDED", f"output {o.name!r} is {onnx.TensorProto.DataType.Name(t.data_type)}"
            got = np.load(os.path.join(result, file_name(o.name)))
            if got.shape != want.shape:
                return "FAIL", f"output {o.name!r} has shape {got.shape}, expected {want.shape}"
            if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
                ok = np.array_equal(got, want)
            else:
                ok = np.allclose(got, want.astype(np.float32), rtol=RTOL, atol=ATOL, equal_nan=True)
            if not ok:
                err = np.abs(got.astype(np.float64) - want.astype(np.float64))
                return "FAIL", f"output {o.name!r} differs by up to {np.nanmax(err):.3g}"
    return "PASS", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("otc")
    ap.add_argument("expected")
    ap.add_argument("work")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--codegen-only", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--filter", default="")
    args = ap.parse_args()

    cases = sorted(c for c in os.listdir(NODE_DIR) if args.filter in c)
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        results = dict(zip(cases, pool.map(
            lambda c: run_case(args.otc, c, args.work, args.codegen_only), cases)))

    by_reason = collections.defaultdict(list)
    for c, (status, why) in results.items():
        if status == "EXCLUDED":
            # Group by the reason with the node's name taken out.
            by_reason[re.sub(r"node '[^']*' ", "", why)].append(c)
    print(f"excluded: {sum(len(v) for v in by_reason.values())} cases")
    for why, cs in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  {len(cs):4d}  {why}: {' '.join(cs)}")
    failed = {c: why for c, (status, why) in results.items() if status == "FAIL"}
    passed = {c for c, (status, _) in results.items() if status == "PASS"}
    folded = collections.defaultdict(list)
    for c in passed:
        if results[c][1]:
            folded[results[c][1]].append(c)
    for why, cs in sorted(folded.items()):
        print(f"passed with {why}: {' '.join(sorted(cs))}")
    for c, why in sorted(failed.items()):
        print(f"FAIL {c}: {why}")

    listed = set()
    if os.path.exists(args.expected):
        listed = {l.strip() for l in open(args.expected) if l.strip() and not l.startswith("#")}
    expected = {c for c in listed if args.filter in c}
    if args.write:
        # With --filter, the cases outside it keep their lines.
        with open(args.expected, "w") as f:
            f.write("# ONNX node tests that pass through otc's forward executables\n"
                    "# (test/onnx_node/run_node_tests.py --write).\n")
            f.writelines(c + "\n" for c in sorted(passed | (listed - set(cases))))
    lost = sorted(expected - passed)
    new = sorted(passed - expected)
    for c in lost:
        print(f"REGRESSION {c}: passed before, now {results.get(c, ('MISSING', ''))[0]}")
    if new and not args.write:
        print(f"new passes (update {args.expected} with --write): {' '.join(new)}")
    print(f"node tests: {len(passed)} passed / {len(results)} total, {len(failed)} failed, "
          f"{len(results) - len(passed) - len(failed)} excluded")
    return 1 if failed or lost else 0


if __name__ == "__main__":
    sys.exit(main())
