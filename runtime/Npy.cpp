#include "Npy.h"
#include "SafeFile.h"

#include "otc/runtime/limits.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace otc {
namespace {

/// A cursor over the header dict, which is a Python literal such as
/// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
class HeaderParser {
public:
  HeaderParser(const char *p, size_t n) : p(p), end(p + n) {}

  bool parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape,
             std::string &error) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    if (!eat('{'))
      return fail("its header is not a dict", error);
    while (skip(), p < end && *p != '}') {
      std::string key;
      if (!string(key) || (skip(), !eat(':')))
        return fail("its header dict is malformed", error);
      skip();
      if (key == "descr") {
        if (p < end && *p == '[')
          return fail("it has a structured dtype, which otc does not read", error);
        if (!string(descr))
          return fail("its 'descr' is not a string", error);
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (word("True"))
          fortran = true;
        else if (word("False"))
          fortran = false;
        else
          return fail("its 'fortran_order' is not True or False", error);
        haveFortran = true;
      } else if (key == "shape") {
        if (!tuple(shape, error))
          return false;
        haveShape = true;
      } else {
        return fail("its header has an unknown key", error);
      }
      skip();
      if (!eat(','))
        break;
    }
    skip();
    if (!eat('}'))
      return fail("its header dict is not closed", error);
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t' || *p == '\0'))
      ++p;
    if (p != end)
      return fail("its header has bytes after the dict", error);
    if (!haveDescr || !haveFortran || !haveShape)
      return fail("its header lacks 'descr', 'fortran_order' or 'shape'", error);
    return true;
  }

private:
  static bool fail(const char *message, std::string &error) {
    error = message;
    return false;
  }
  void skip() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
      ++p;
  }
  bool eat(char c) {
    if (p < end && *p == c) {
      ++p;
      return true;
    }
    return false;
  }
  bool word(const char *w) {
    size_t n = std::strlen(w);
    if (size_t(end - p) >= n && std::memcmp(p, w, n) == 0) {
      p += n;
      return true;
    }
    return false;
  }
  bool string(std::string &out) {
    if (p >= end || (*p != '\'' && *p != '"'))
      return false;
    char quote = *p++;
    const char *begin = p;
    while (p < end && *p != quote && *p != '\\')
      ++p;
    if (p >= end || *p != quote || p - begin > 64)
      return false;
    out.assign(begin, p - begin);
    ++p;
    return true;
  }
  bool tuple(std::vector<int64_t> &shape, std::string &error) {
    if (!eat('('))
      return fail("its 'shape' is not a tuple", error);
    shape.clear();
    while (skip(), p < end && *p != ')') {
      const char *begin = p;
      int64_t v = 0;
      while (p < end && *p >= '0' && *p <= '9' && p - begin < 18)
        v = v * 10 + (*p++ - '0');
      if (p == begin)
        return fail("its 'shape' holds something other than non-negative integers", error);
      if (p < end && *p >= '0' && *p <= '9')
        return fail("its 'shape' holds a dimension too large to be real", error);
      eat('L'); // Python 2 wrote long integers as 3L
      shape.push_back(v);
      if (shape.size() > OTC_MAX_RANK)
        return fail("its 'shape' has more dimensions than otc's limit of 8", error);
      skip();
      if (!eat(','))
        break;
    }
    if (!eat(')'))
      return fail("its 'shape' tuple is not closed", error);
    return true;
  }

  const char *p, *end;
};

/// Normalises a numeric descr to "<" (or "|" for single bytes) and returns
/// its item size, or 0 with an error.
/// `s` with control bytes shown as '?', for a message.
std::string printable(const std::string &s) {
  std::string out = s;
  for (char &c : out)
    if ((unsigned char)c < 0x20 || c == 0x7f)
      c = '?';
  return out;
}

int64_t itemSizeOf(std::string &descr, std::string &error) {
  std::string d = descr, shown = printable(descr);
  char order = '<';
  if (!d.empty() && std::strchr("<>|=", d[0])) {
    order = d[0];
    d = d.substr(1);
  }
  if (d.size() < 2 || d.size() > 3 || !std::strchr("biufc", d[0]) ||
      d.find_first_not_of("0123456789", 1) != std::string::npos) {
    error = "its dtype '" + shown + "' is not a numeric type otc reads";
    return 0;
  }
  int64_t size = std::atoi(d.c_str() + 1);
  if (size < 1 || size > 16) {
    error = "its dtype '" + shown + "' has an impossible item size";
    return 0;
  }
  if (order == '>' && size > 1) {
    error = "its dtype '" + shown + "' is big-endian; save it little-endian";
    return 0;
  }
  descr = std::string(size == 1 ? "|" : "<") + d;
  return size;
}

} // namespace

bool parseNpyHeader(const char *bytes, size_t size, NpyArray &out,
                    size_t &dataOffset, int64_t &dataBytes, std::string &error) {
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) {
    error = "it is not a .npy file";
    return false;
  }
  unsigned major = (unsigned char)bytes[6];
  if (major < 1 || major > 3) {
    error = "it is .npy format version " + std::to_string(major) + ", which otc does not read";
    return false;
  }
  size_t lenBytes = major == 1 ? 2 : 4;
  if (size < 8 + lenBytes) {
    error = "its header is truncated";
    return false;
  }
  uint64_t headerLen = 0;
  for (size_t i = lenBytes; i-- > 0;)
    headerLen = headerLen * 256 + (unsigned char)bytes[8 + i];
  if (headerLen > OTC_MAX_NPY_HEADER) {
    error = "its header claims " + std::to_string(headerLen) + " bytes, more than a .npy header holds";
    return false;
  }
  size_t begin = 8 + lenBytes;
  if (size - begin < headerLen) {
    error = "its header is truncated";
    return false;
  }
  bool fortran = false;
  HeaderParser parser(bytes + begin, headerLen);
  if (!parser.parse(out.dtype, fortran, out.shape, error))
    return false;
  if (fortran) {
    error = "it is in Fortran order; save it C-ordered";
    return false;
  }
  int64_t itemSize = itemSizeOf(out.dtype, error);
  if (itemSize == 0)
    return false;
  int64_t count = 1;
  for (int64_t d : out.shape)
    if (!otc_mul_count(count, d, &count) || count > OTC_MAX_ELEMENTS) {
      error = "its shape holds more than " + std::to_string(OTC_MAX_ELEMENTS) +
              " elements, otc's limit for one array";
      return false;
    }
  dataOffset = begin + headerLen;
  dataBytes = count * itemSize;
  return true;
}

bool parseNpy(const std::string &bytes, NpyArray &out, std::string &error) {
  size_t offset;
  int64_t dataBytes;
  if (!parseNpyHeader(bytes.data(), bytes.size(), out, offset, dataBytes, error))
    return false;
  if (uint64_t(bytes.size() - offset) != uint64_t(dataBytes)) {
    error = "it holds " + std::to_string(bytes.size() - offset) +
            " bytes of data, but its header describes " + std::to_string(dataBytes);
    return false;
  }
  out.data.assign(bytes.begin() + offset, bytes.end());
  return true;
}

/// Opens the regular file `path` for reading; -1 with one line in `error`.
/// Non-blocking, so a FIFO is refused instead of waited on.
static int openDataFile(const std::string &path, struct stat &st, std::string &error) {
  std::string name = "'" + path + "'";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = fd < 0 && errno != ENOENT ? "cannot read data file " + name + ": " + std::strerror(errno)
            : fd < 0                  ? "cannot open data file " + name
                                      : "data file " + name + " is not a regular file";
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  std::string name = "'" + path + "'";
  struct stat st;
  int fd = openDataFile(path, st, error);
  if (fd < 0)
    return false;
  // The header is read first, so a lying header never sizes an allocation.
  std::string head(size_t(std::min<off_t>(st.st_size, 12 + OTC_MAX_NPY_HEADER)), '\0');
  size_t offset = 0;
  int64_t dataBytes = 0;
  bool ok = readAllAt(fd, &head[0], head.size(), 0);
  if (!ok)
    error = "cannot read data file " + name;
  else if (!(ok = parseNpyHeader(head.data(), head.size(), out, offset, dataBytes, error)))
    error = name + ": " + error;
  else if (!(ok = uint64_t(st.st_size) - offset == uint64_t(dataBytes)))
    error = name + " holds " + std::to_string(uint64_t(st.st_size) - offset) +
            " bytes of data, but its header describes " + std::to_string(dataBytes);
  if (ok) {
    out.data.resize(size_t(dataBytes));
    if (!(ok = readAllAt(fd, out.data.data(), out.data.size(), (long long)offset)))
      error = "cannot read data file " + name;
  }
  close(fd);
  return ok;
}

MappedFile &MappedFile::operator=(MappedFile &&o) noexcept {
  std::swap(base, o.base);
  std::swap(length, o.length);
  return *this;
}

MappedFile::~MappedFile() {
  if (base)
    munmap(base, length);
}

bool MappedFile::map(const std::string &path, std::string &error) {
  struct stat st;
  int fd = openDataFile(path, st, error);
  if (fd < 0)
    return false;
  length = size_t(st.st_size);
  void *p = length ? mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0) : nullptr;
  close(fd);
  if (p == MAP_FAILED) {
    length = 0;
    error = "cannot map data file '" + path + "': " + std::strerror(errno);
    return false;
  }
  base = static_cast<char *>(p);
  return true;
}

void MappedFile::release(size_t offset, size_t bytes) const {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  size_t from = offset / page * page, to = std::min(length, offset + bytes);
  if (base && to > from)
    madvise(base + from, to - from, MADV_DONTNEED);
}

bool mapNpy(const std::string &path, MappedNpy &out, std::string &error) {
  if (!out.file.map(path, error))
    return false;
  size_t offset = 0;
  int64_t dataBytes = 0;
  const MappedFile &f = out.file;
  std::string name = "'" + path + "'";
  if (!parseNpyHeader(f.data() ? f.data() : "", f.size(), out.array, offset, dataBytes, error)) {
    error = name + ": " + error;
    return false;
  }
  if (uint64_t(f.size()) - offset != uint64_t(dataBytes)) {
    error = name + " holds " + std::to_string(uint64_t(f.size()) - offset) +
            " bytes of data, but its header describes " + std::to_string(dataBytes);
    return false;
  }
  out.data = f.data() + offset;
  out.bytes = size_t(dataBytes);
  return true;
}

} // namespace otc
