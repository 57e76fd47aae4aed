// The main of forward-only executables (otc compile --forward-only): reads
// each data input from DIR/NAME.npy and the parameters from the embedded
// model, runs the graph once per micro-batch of the data, and writes every
// graph output to OUT/NAME.npy.
#include "Backend.h"
#include "ModelFile.h"
#include "Npy.h"
#include "ExecutableMain.h"
#include "TensorFiles.h"
#include "otc/runtime/abi.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace otc {
namespace {

[[noreturn]] void die(const std::string &message) { throw Fatal{message}; }

const char kUsage[] =
    "usage: %s --data DIR --out DIR [--init MODEL.onnx] [--threads N]\n"
    "  Runs the model's forward graph on DIR/NAME.npy, one file per graph input,\n"
    "  and writes each graph output to OUT/NAME.npy (names with characters\n"
    "  outside [A-Za-z0-9._-] have them replaced by '_'). Parameters are the\n"
    "  model's initializers, or with --init those of MODEL.onnx (same names,\n"
    "  shapes, float32: a trained model). Data holding several micro-batches along axis 0\n"
    "  runs once per micro-batch: outputs whose axis 0 is the micro-batch are\n"
    "  concatenated, the others (a loss) stacked along a new axis 0.\n";

struct Options {
  std::string data, out, init;
  long threads = 0;
};

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf(kUsage, argv[0]);
      std::exit(0);
    }
    if (i + 1 >= argc)
      throw Fatal{flag.substr(0, 40) + " needs a value (see --help)", 2};
    std::string v = argv[++i];
    if (flag == "--data") o.data = v;
    else if (flag == "--out") o.out = v;
    else if (flag == "--init") o.init = v;
    else if (flag == "--threads") {
      char *end;
      errno = 0;
      o.threads = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || errno || o.threads < 1 || o.threads > 4096)
        throw Fatal{"--threads expects an integer from 1 to 4096, got '" + v.substr(0, 40) + "'",
                    2};
    } else {
      throw Fatal{"unknown flag '" + flag.substr(0, 40) + "' (see --help)", 2};
    }
  }
  if (o.data.empty() || o.out.empty())
    throw Fatal{"--data and --out are required (see --help)", 2};
  return o;
}

/// One input's data: the whole array, and the bytes one run reads.
struct InputData {
  NpyArray array;
  size_t runBytes = 0;
};

/// Reads each data input (by argument index) from `dir`: an array of
/// exactly one run's shape, or a whole number of micro-batches along axis
/// 0. Returns the number of runs, on which all inputs agree (1 without
/// inputs).
int64_t loadInputs(const otc_function &fn, const std::string &dir,
                   std::map<int, InputData> &data) {
  int64_t runs = -1;
  std::string runsFrom;
  TensorFileNames inputFiles("inputs", "read");
  for (int i = 0; i < fn.num_args; ++i) {
    const otc_tensor_desc &d = fn.args[i];
    if (fn.arg_roles[i] == OTC_ARG_PARAM)
      continue;
    std::string path = dir + "/" + inputFiles.claim(d.name), error;
    InputData &in = data[i];
    if (!readNpy(path, in.array, error))
      die(error + " (the data for input '" + d.name + "')");
    if (d.dtype == OTC_I64)
      widenIntegers(in.array, path);
    const NpyArray &a = in.array;
    if (a.dtype != npyDtypeFor(d.dtype))
      die("'" + path + "' has dtype " + a.dtype + ", but input '" + d.name + "' needs " +
          npyDtypeFor(d.dtype));
    std::vector<int64_t> want(d.shape, d.shape + d.rank);
    int64_t n = 1;
    bool sameTail = d.rank > 0 && (int)a.shape.size() == d.rank &&
                    std::equal(want.begin() + 1, want.end(), a.shape.begin() + 1);
    if (a.shape == want)
      n = 1;
    else if (sameTail && a.shape[0] % want[0] == 0 && a.shape[0] > 0)
      n = a.shape[0] / want[0];
    else
      die("'" + path + "' has shape " + shapeText(a.shape.data(), int(a.shape.size())) +
          ", but input '" + d.name + "' needs " + shapeText(d.shape, d.rank) +
          (d.rank ? " or a whole number of those along axis 0" : ""));
    if (runs >= 0 && n != runs)
      die("'" + path + "' holds " + std::to_string(n) + " micro-batches, but '" + runsFrom +
          "' holds " + std::to_string(runs));
    runs = n;
    runsFrom = path;
    checkValues(d, a, path, /*requireFinite=*/false);
    in.runBytes = a.data.size() / size_t(n);
  }
  return runs < 0 ? 1 : runs;
}

/// Writes each result to OUT/NAME.npy: over several runs, concatenated along
/// axis 0 when that is the micro-batch, else stacked along a new axis 0.
void writeOutputs(const otc_function &fn, const std::string &out, int64_t runs,
                  const std::vector<std::vector<char>> &outputs) {
  if (mkdir(out.c_str(), 0777) != 0 && errno != EEXIST)
    die("cannot create the output folder '" + out + "': " + std::strerror(errno));
  TensorFileNames files("outputs", "write");
  for (int i = 0; i < fn.num_results; ++i) {
    const otc_tensor_desc &d = fn.results[i];
    std::string file = files.claim(d.name);
    std::vector<int64_t> shape(d.shape, d.shape + d.rank);
    if (runs > 1 && d.rank > 0 && d.shape[0] == fn.micro_batch)
      shape[0] *= runs;
    else if (runs > 1)
      shape.insert(shape.begin(), runs);
    writeNpyFile(out + "/" + file, d.dtype, shape, outputs[i]);
  }
}

int run(int argc, char **argv) {
  const otc_function &fn = *otc_get_function();
  Options opt = parseOptions(argc, argv);
  if (opt.threads > 0 && fn.set_threads)
    fn.set_threads(int(opt.threads));
  std::map<int, InputData> data;
  int64_t runs = loadInputs(fn, opt.data, data);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (int i = 0; i < fn.num_args; ++i)
    if (fn.arg_roles[i] == OTC_ARG_PARAM) {
      shapes[fn.args[i].name].assign(fn.args[i].shape, fn.args[i].shape + fn.args[i].rank);
    }
  std::map<std::string, std::vector<float>> values;
  std::string error;
  uint64_t hash = 0;
  if (!readInitialParameters(opt.init, shapes, values, hash, error))
    die(error);

  std::unique_ptr<Backend> backend = makeBackend();
  std::vector<void *> args(fn.num_args), results(fn.num_results);
  for (int i = 0; i < fn.num_args; ++i) {
    const otc_tensor_desc &d = fn.args[i];
    args[i] = backend->alloc(elements(d) * storageBytes(d.dtype));
    if (fn.arg_roles[i] == OTC_ARG_PARAM) {
      std::vector<char> bytes = toStorage(
          d.dtype, reinterpret_cast<const char *>(values[d.name].data()), elements(d));
      backend->toDevice(args[i], bytes.data(), bytes.size());
    }
  }
  std::vector<std::vector<char>> outputs(fn.num_results);
  for (int i = 0; i < fn.num_results; ++i)
    results[i] = backend->alloc(elements(fn.results[i]) * storageBytes(fn.results[i].dtype));
  otc_function_args fa{(char *)backend->alloc(fn.arena_bytes), args.data(), results.data(),
                       backend->blas(), backend->blasWorkspace()};
  for (int64_t r = 0; r < runs; ++r) {
    for (auto &[i, in] : data) {
      const otc_tensor_desc &d = fn.args[i];
      std::vector<char> bytes =
          toStorage(d.dtype, in.array.data.data() + r * in.runBytes, elements(d));
      backend->toDevice(args[i], bytes.data(), bytes.size());
    }
    fn.run(&fa);
    for (int i = 0; i < fn.num_results; ++i) {
      const otc_tensor_desc &d = fn.results[i];
      std::vector<char> raw(elements(d) * storageBytes(d.dtype));
      backend->toHost(raw.data(), results[i], raw.size());
      std::vector<char> v = fromStorage(d.dtype, raw.data(), elements(d));
      outputs[i].insert(outputs[i].end(), v.begin(), v.end());
    }
  }

  writeOutputs(fn, opt.out, runs, outputs);
  std::fprintf(stderr, "forward: %lld run%s, %d output%s written to %s\n", (long long)runs,
               runs == 1 ? "" : "s", fn.num_results, fn.num_results == 1 ? "" : "s",
               opt.out.c_str());
  return 0;
}

} // namespace
} // namespace otc

int main(int argc, char **argv) {
  return otc::executableMain("forward", otc::run, argc, argv, otc_get_function()->set_threads);
}
