#include "Rendezvous.h"
#include "Backend.h"
#include "Collective.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

namespace otc {
namespace {

int integer(const char *name, int least, int most) {
  const char *v = std::getenv(name);
  char *end = nullptr;
  long n = v ? std::strtol(v, &end, 10) : -1;
  if (!v || !*v || *end || n < least || n > most)
    throw Fatal{std::string(name) + " must be an integer from " + std::to_string(least) + " to " +
                std::to_string(most) + (v ? ", got '" + std::string(v).substr(0, 40) + "'" : ", and is unset") +
                " (OTC_RENDEZVOUS is set)"};
  return int(n);
}

} // namespace

bool rendezvousFromEnvironment(Rendezvous &r) {
  const char *path = std::getenv("OTC_RENDEZVOUS");
  if (!path || !*path)
    return false;
  r.path = path;
  r.size = integer("OTC_WORLD_SIZE", 1, 1 << 16);
  r.rank = integer("OTC_RANK", 0, r.size - 1);
  return true;
}

void exchange(const Rendezvous &r, void *data, size_t bytes, double timeout) {
  if (r.rank == 0) {
    std::string aside = r.path + ".writing";
    int fd = open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, data, bytes) == ssize_t(bytes);
    ok = fd >= 0 && close(fd) == 0 && ok;
    if (!ok || rename(aside.c_str(), r.path.c_str()) != 0) {
      int saved = errno;
      unlink(aside.c_str());
      throw Fatal{"OTC_RENDEZVOUS: cannot write '" + r.path + "': " + std::strerror(saved)};
    }
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  for (;;) {
    int fd = open(r.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t got = read(fd, data, bytes);
      close(fd);
      if (got == ssize_t(bytes))
        return;
      throw Fatal{"OTC_RENDEZVOUS: '" + r.path + "' holds " + std::to_string(got) +
                  " bytes, not the " + std::to_string(bytes) + " rank 0 writes (a stale file?)"};
    }
    if (errno != ENOENT)
      throw Fatal{"OTC_RENDEZVOUS: cannot read '" + r.path + "': " + std::strerror(errno)};
    if (std::chrono::steady_clock::now() > deadline)
      throw Fatal{"rank 0 did not write OTC_RENDEZVOUS '" + r.path + "' within " +
                  seconds(timeout) + " (--collective-timeout)"};
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void rendezvousDone(const Rendezvous &r) {
  if (r.rank == 0)
    unlink(r.path.c_str());
}

} // namespace otc
