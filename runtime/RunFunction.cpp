// The main of `otc kernel` executables: runs one generated function on
// arguments read from DIR/argN.npy and writes DIR/resultN.npy. Float
// arguments come as float32 and are rounded to the argument's storage type;
// float results are widened to float32. For testing kernels against a
// reference, on either target.
#include "Backend.h"
#include "Npy.h"
#include "SafeFile.h"
#include "otc/runtime/abi.h"
#include "otc/runtime/kernel_support.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace otc {
namespace {

[[noreturn]] void die(const std::string &message) { throw Fatal{message}; }

int64_t elements(const otc_tensor_desc &d) {
  int64_t n = 1;
  for (int i = 0; i < d.rank; ++i)
    n *= d.shape[i];
  return n;
}

size_t storageBytes(int dtype) {
  switch (dtype) {
  case OTC_F32: return 4;
  case OTC_F16:
  case OTC_BF16: return 2;
  case OTC_I64: return 8;
  default: return 1;
  }
}

bool isFloatType(int dtype) { return dtype == OTC_F32 || dtype == OTC_F16 || dtype == OTC_BF16; }

/// The .npy bytes of `values` (float32, int64 or bool) with `desc`'s shape.
std::string npyBytes(const otc_tensor_desc &d, const std::vector<char> &values) {
  const char *descr = isFloatType(d.dtype) ? "<f4" : d.dtype == OTC_I64 ? "<i8" : "|b1";
  std::string shape = "(";
  for (int i = 0; i < d.rank; ++i)
    shape += std::to_string(d.shape[i]) + (d.rank == 1 ? "," : i + 1 < d.rank ? ", " : "");
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " +
                       shape + ", }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  return out + header + std::string(values.begin(), values.end());
}

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
    const char *want = isFloatType(d.dtype) ? "<f4" : d.dtype == OTC_I64 ? "<i8" : "|b1";
    if (a.dtype != want || (int)a.shape.size() != d.rank ||
        !std::equal(a.shape.begin(), a.shape.end(), d.shape))
      die("'" + path + "' must hold " + want + " of the argument's shape");
    int64_t n = elements(d);
    std::vector<char> bytes(n * storageBytes(d.dtype));
    const float *f = reinterpret_cast<const float *>(a.data.data());
    for (int64_t k = 0; k < n && isFloatType(d.dtype); ++k) {
      if (d.dtype == OTC_F32) otc_store(reinterpret_cast<float *>(bytes.data()) + k, f[k]);
      if (d.dtype == OTC_F16) otc_store(reinterpret_cast<otc_f16 *>(bytes.data()) + k, f[k]);
      if (d.dtype == OTC_BF16) otc_store(reinterpret_cast<otc_bf16 *>(bytes.data()) + k, f[k]);
    }
    if (!isFloatType(d.dtype))
      bytes = a.data;
    void *p = backend->alloc(bytes.size());
    backend->toDevice(p, bytes.data(), bytes.size());
    args.push_back(p);
  }
  for (int i = 0; i < fn.num_results; ++i)
    results.push_back(backend->alloc(elements(fn.results[i]) * storageBytes(fn.results[i].dtype)));
  otc_function_args fa{(char *)backend->alloc(fn.arena_bytes), args.data(), results.data(),
                       backend->blas()};
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
    std::vector<char> raw(n * storageBytes(d.dtype)), out;
    backend->toHost(raw.data(), results[i], raw.size());
    if (isFloatType(d.dtype)) {
      out.resize(n * 4);
      float *f = reinterpret_cast<float *>(out.data());
      for (int64_t k = 0; k < n; ++k)
        f[k] = d.dtype == OTC_F32   ? reinterpret_cast<float *>(raw.data())[k]
               : d.dtype == OTC_F16 ? otc_ld(reinterpret_cast<otc_f16 *>(raw.data())[k])
                                    : otc_ld(reinterpret_cast<otc_bf16 *>(raw.data())[k]);
    } else {
      out = raw;
    }
    std::string path = dir + "/result" + std::to_string(i) + ".npy", error;
    std::string bytes = npyBytes(d, out);
    if (!replaceFile(path, 0666, [&](int fd) { return writeAll(fd, bytes.data(), bytes.size()); },
                     error))
      die(error);
  }
  return 0;
}

} // namespace
} // namespace otc

int main(int argc, char **argv) {
  try {
    return otc::run(argc, argv);
  } catch (const otc::Fatal &f) {
    std::fprintf(stderr, "run: error: %s\n", f.message.c_str());
    return f.code;
  }
}
