// Replacing an output file so that no reader, crash or kill ever sees half
// of it: the training executable's --save and otc compile's -o.
#ifndef OTC_RUNTIME_SAFEFILE_H
#define OTC_RUNTIME_SAFEFILE_H

#include <functional>
#include <string>

namespace otc {

/// Checks, before any work is done, that `path` can be written: its folder
/// exists and takes new files, and nothing but a regular file is there.
/// Returns false with one line in `error`.
bool checkReplaceable(const std::string &path, std::string &error);

/// Writes `path` through an anonymous temporary file in its folder (Linux
/// O_TMPFILE: a killed process leaves nothing behind, but for the instant
/// between naming the finished file and renaming it, whose complete copy
/// `.otc-tmp.PID.N` the next write into the folder removes), fsyncs it, gives
/// it the mode of the file it replaces (or `mode` minus the umask for a new
/// file), and renames it into place. `write` fills the file descriptor and
/// returns false on failure. Refuses to replace anything but a regular file.
bool replaceFile(const std::string &path, unsigned mode,
                 const std::function<bool(int fd)> &write, std::string &error);

/// Writes all of `data` to `fd`, retrying short writes.
bool writeAll(int fd, const char *data, size_t size);

/// Reads exactly `size` bytes at offset `at` of `fd`, retrying short reads;
/// false on an error or the end of the file.
bool readAllAt(int fd, char *data, size_t size, long long at);

} // namespace otc

#endif
