// .npy bytes -> the loader: the in-memory parser, and for one input in eight
// the file reader too (through a memfd, so nothing touches the disk). Any
// input must give an array whose data matches its header, or an error;
// never a crash, throw or huge allocation, and both paths must agree.
#include "Npy.h"
#include "otc/runtime/limits.h"

#include <cstdlib>
#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  otc::NpyArray a;
  std::string error;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  bool parsed = otc::parseNpy(bytes, a, error);
  if (parsed) {
    int64_t count = 1;
    for (int64_t d : a.shape)
      if (!otc_mul_count(count, d, &count))
        std::abort(); // the parser let an overflowing shape through
    if (a.data.size() > size)
      std::abort();
  } else if (error.empty()) {
    std::abort(); // a failure must say why
  }
  if (size % 8 == 0) {
    int fd = memfd_create("fuzz.npy", 0);
    if (fd < 0 || write(fd, data, size) != ssize_t(size))
      std::abort();
    otc::NpyArray b;
    std::string readError;
    bool read = otc::readNpy("/proc/self/fd/" + std::to_string(fd), b, readError);
    close(fd);
    if (read != parsed || (read && (b.data != a.data || b.shape != a.shape || b.dtype != a.dtype)))
      std::abort(); // the file reader and the parser disagree
  }
  return 0;
}
