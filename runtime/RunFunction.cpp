// The main of `otc kernel` executables: runs one generated function on
// arguments read from DIR/argN.npy and writes DIR/resultN.npy. Float
// arguments come as float32 and are rounded to the argument's storage type;
// float results are widened to float32. For testing kernels against a
// reference, on either target.
#include "Backend.h"
#include "Npy.h"
#include "ExecutableMain.h"
#include "TensorFiles.h"
#include "otc/runtime/abi.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace otc {
namespace {

[[noreturn]] void die(const std::string &message) { throw Fatal{message}; }

int run(int argc, char **argv) {
  const otc_function &fn = *otc_get_function();
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s DIR [--threads N] [--repeat N]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  long repeat = 0; // extra timed runs, for benchmarks
  if ((argc - 2) % 2)
    die(std::string("'") + argv[argc - 1] + "' needs a value");
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    long v = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--threads" && v > 0 && fn.set_threads)
      fn.set_threads(int(v));
    else if (flag == "--repeat" && v > 0)
      repeat = v;
    else
      die("unknown or bad flag '" + flag + "'");
  }
  std::unique_ptr<Backend> backend = makeBackend();
  std::vector<void *> args, results;
  for (int i = 0; i < fn.num_args; ++i) {
    const otc_tensor_desc &d = fn.args[i];
    std::string path = dir + "/arg" + std::to_string(i) + ".npy", error;
    NpyArray a;
    if (!readNpy(path, a, error))
      die(error);
    const char *want = npyDtypeFor(d.dtype);
    if (a.dtype != want || (int)a.shape.size() != d.rank ||
        !std::equal(a.shape.begin(), a.shape.end(), d.shape))
      die("'" + path + "' must hold " + want + " of the argument's shape");
    // No range check on indices: kernel tests feed out-of-range ones on
    // purpose (the kernels read them as 0).
    std::vector<char> bytes = toStorage(d.dtype, a.data.data(), elements(d));
    void *p = backend->alloc(bytes.size());
    backend->toDevice(p, bytes.data(), bytes.size());
    args.push_back(p);
  }
  for (int i = 0; i < fn.num_results; ++i)
    results.push_back(backend->alloc(elements(fn.results[i]) * storageBytes(fn.results[i].dtype)));
  otc_function_args fa{(char *)backend->alloc(fn.arena_bytes), args.data(), results.data(),
                       backend->blas(), backend->blasWorkspace()};
  fn.run(&fa);
  if (repeat > 0) {
    char sync; // a device-to-host copy waits for the device to finish
    if (fn.num_results)
      backend->toHost(&sync, results[0], 1);
    auto start = std::chrono::steady_clock::now();
    for (long r = 0; r < repeat; ++r)
      fn.run(&fa);
    if (fn.num_results)
      backend->toHost(&sync, results[0], 1);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("{\"runs\": %ld, \"ms_per_run\": %.6f}\n", repeat, ms / double(repeat));
  }
  for (int i = 0; i < fn.num_results; ++i) {
    const otc_tensor_desc &d = fn.results[i];
    int64_t n = elements(d);
    std::vector<char> raw(n * storageBytes(d.dtype));
    backend->toHost(raw.data(), results[i], raw.size());
    std::vector<char> out = fromStorage(d.dtype, raw.data(), n);
    writeNpyFile(dir + "/result" + std::to_string(i) + ".npy", d.dtype,
                 std::vector<int64_t>(d.shape, d.shape + d.rank), out);
  }
  return 0;
}

} // namespace
} // namespace otc

int main(int argc, char **argv) {
  return otc::executableMain("run", otc::run, argc, argv, /*cpuThreads=*/false);
}
