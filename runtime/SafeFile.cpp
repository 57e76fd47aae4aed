#include "SafeFile.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <climits>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace otc {
namespace {

std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string q(const std::string &s) { return "'" + s + "'"; }

bool tmpfileUnsupported(int err) {
  return err == EOPNOTSUPP || err == EISDIR || err == EINVAL;
}

/// What is at `path` now: false with `error` unless it is absent or a
/// regular file; `mode` receives the existing file's permission bits or -1.
bool inspect(const std::string &path, int &mode, std::string &error) {
  mode = -1;
  if (path.empty() || path.back() == '/') {
    error = "the output path " + q(path) + " names no file";
    return false;
  }
  if (baseOf(path).size() > NAME_MAX) {
    error = "the file name of " + q(path) + " is longer than the filesystem allows";
    return false;
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      error = q(path) + " is a symbolic link; otc replaces only regular files";
      return false;
    }
    if (!S_ISREG(st.st_mode)) {
      error = q(path) + " exists and is not a regular file; otc replaces only regular files";
      return false;
    }
    mode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    error = "cannot inspect " + q(path) + ": " + std::strerror(errno);
    return false;
  }
  std::string dir = folderOf(path);
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = "the folder " + q(dir) + " of " + q(path) + " does not exist";
    return false;
  }
  return true;
}

/// An unnamed file in `dir` (O_TMPFILE), or where the filesystem has none a
/// named one whose name goes to `named`. -1 with errno on failure.
int openTemp(const std::string &dir, std::string &named) {
  named.clear();
  int fd = open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0 && tmpfileUnsupported(errno)) {
    named = dir + "/.otc-tmp.XXXXXX";
    fd = mkstemp(&named[0]);
    if (fd < 0)
      named.clear();
  }
  return fd;
}

/// Removes the names `.otc-tmp.PID.N` in `dir` of processes that no longer
/// run: what a kill between naming a finished file and renaming it onto
/// its target leaves (a complete copy under that name). Names of running
/// processes, and anything else, stay.
void sweepOrphans(const std::string &dir) {
  DIR *d = opendir(dir.c_str());
  if (!d)
    return;
  const std::string prefix = ".otc-tmp.";
  while (const dirent *e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    char *end = nullptr;
    long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '.' || pid == long(getpid()))
      continue;
    if (kill(pid_t(pid), 0) != 0 && errno == ESRCH)
      unlinkat(dirfd(d), name.c_str(), 0);
  }
  closedir(d);
}

unsigned currentUmask() {
  mode_t old = umask(022);
  umask(old);
  return old;
}

} // namespace

/// Moves all `size` bytes with `io(data, size, done)` (a read or write of
/// at most that many bytes, `done` bytes in), retrying short transfers and
/// interrupted calls.
template <typename Io> static bool transferAll(char *data, size_t size, Io io) {
  for (size_t done = 0; done < size;) {
    ssize_t n = io(data + done, size - done, done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

bool writeAll(int fd, const char *data, size_t size) {
  return transferAll(const_cast<char *>(data), size,
                     [&](char *p, size_t n, size_t) { return ::write(fd, p, n); });
}

bool readAllAt(int fd, char *data, size_t size, long long at) {
  return transferAll(data, size,
                     [&](char *p, size_t n, size_t done) { return ::pread(fd, p, n, off_t(at + done)); });
}

bool checkReplaceable(const std::string &path, std::string &error) {
  int mode;
  if (!inspect(path, mode, error))
    return false;
  // Creating an anonymous file proves the folder takes new files, even for
  // root, whom access(2) never refuses.
  std::string dir = folderOf(path), probe;
  int fd = openTemp(dir, probe);
  if (!probe.empty())
    unlink(probe.c_str());
  if (fd < 0) {
    error = "cannot write in the folder " + q(dir) + " of " + q(path) + ": " +
            std::strerror(errno);
    return false;
  }
  close(fd);
  return true;
}

bool replaceFile(const std::string &path, unsigned mode,
                 const std::function<bool(int fd)> &write, std::string &error) {
  int oldMode;
  if (!inspect(path, oldMode, error))
    return false;
  std::string dir = folderOf(path);
  unsigned finalMode = oldMode >= 0 ? unsigned(oldMode) : (mode & ~currentUmask() & 07777);
  sweepOrphans(dir);

  std::string named; // set when the file has a name that must go on failure
  int fd = openTemp(dir, named);
  if (fd < 0) {
    error = "cannot create a file in " + q(dir) + ": " + std::strerror(errno);
    return false;
  }
  auto failWith = [&](const std::string &message) {
    error = message;
    close(fd);
    if (!named.empty())
      unlink(named.c_str());
    return false;
  };
  if (!write(fd))
    return failWith("cannot write " + q(path) + ": " + std::strerror(errno));
  if (fchmod(fd, finalMode) != 0 || fsync(fd) != 0)
    return failWith("cannot write " + q(path) + ": " + std::strerror(errno));
  if (named.empty()) {
    // Give the anonymous file a name only now that it is complete; the
    // rename right after makes it the target. A kill between the two calls
    // is the one moment that can leave this name behind.
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    int err = EEXIST;
    for (unsigned attempt = 0; err == EEXIST && attempt < 100; ++attempt) {
      named = dir + "/.otc-tmp." + std::to_string(getpid()) + "." +
              std::to_string(unsigned(random()) % 1000000u);
      err = linkat(AT_FDCWD, self.c_str(), AT_FDCWD, named.c_str(), AT_SYMLINK_FOLLOW) == 0 ||
                    linkat(fd, "", AT_FDCWD, named.c_str(), AT_EMPTY_PATH) == 0
                ? 0
                : errno;
    }
    if (err != 0) {
      named.clear();
      close(fd);
      error = "cannot link the new " + q(path) + " into its folder: " + std::strerror(err);
      return false;
    }
  }
  if (rename(named.c_str(), path.c_str()) != 0)
    return failWith("cannot rename the new file onto " + q(path) + ": " + std::strerror(errno));
  close(fd);
  // Make the rename itself durable.
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return true;
}

} // namespace otc
