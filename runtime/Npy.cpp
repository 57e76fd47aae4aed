#include "Npy.h"

#include <cstring>
#include <fstream>

namespace otc {
namespace {

/// The value text of `key` in the header dict, up to the next top-level comma.
std::string field(const std::string &header, const std::string &key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return "";
  size_t colon = header.find(':', k);
  size_t begin = header.find_first_not_of(' ', colon + 1);
  size_t end = header[begin] == '(' ? header.find(')', begin) + 1
                                    : header.find_first_of(",}", begin);
  return header.substr(begin, end - begin);
}

} // namespace

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open data file '" + path + "'";
    return false;
  }
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    error = "'" + path + "' is not a .npy file";
    return false;
  }
  uint32_t headerLen = 0;
  unsigned char len[4] = {0, 0, 0, 0};
  int lenBytes = magic[6] == 1 ? 2 : 4;
  in.read(reinterpret_cast<char *>(len), lenBytes);
  for (int i = lenBytes - 1; i >= 0; --i)
    headerLen = headerLen * 256 + len[i];
  std::string header(headerLen, '\0');
  if (!in.read(&header[0], headerLen)) {
    error = "'" + path + "' has a truncated header";
    return false;
  }
  out.dtype = field(header, "descr");
  if (out.dtype.size() >= 2)
    out.dtype = out.dtype.substr(1, out.dtype.size() - 2); // strip quotes
  if (field(header, "fortran_order") != "False") {
    error = "'" + path + "' is in Fortran order; save it C-ordered";
    return false;
  }
  std::string shape = field(header, "shape");
  out.shape.clear();
  int64_t count = 1;
  for (size_t i = 1; i < shape.size();) {
    size_t end = shape.find_first_of(",)", i);
    std::string num = shape.substr(i, end - i);
    if (num.find_first_not_of(' ') != std::string::npos) {
      out.shape.push_back(std::stoll(num));
      count *= out.shape.back();
    }
    i = end + 1;
  }
  size_t itemSize = out.dtype.size() >= 3 ? std::stoul(out.dtype.substr(2)) : 0;
  out.data.resize(count * itemSize);
  if (!in.read(out.data.data(), out.data.size())) {
    error = "'" + path + "' is truncated: expected " +
            std::to_string(out.data.size()) + " bytes of data";
    return false;
  }
  return true;
}

} // namespace otc
