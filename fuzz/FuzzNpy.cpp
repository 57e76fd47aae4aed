// .npy bytes -> the loader's parser. Any input must give an array whose data
// matches its header, or an error; never a crash, throw or huge allocation.
#include "Npy.h"
#include "otc/runtime/limits.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  otc::NpyArray a;
  std::string error;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  if (otc::parseNpy(bytes, a, error)) {
    int64_t count = 1;
    for (int64_t d : a.shape)
      if (!otc_mul_count(count, d, &count))
        std::abort(); // the parser let an overflowing shape through
    if (a.data.size() > size)
      std::abort();
  } else if (error.empty()) {
    std::abort(); // a failure must say why
  }
  return 0;
}
