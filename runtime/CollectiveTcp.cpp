// The data-parallel group over TCP, for the CPU target when a launcher other
// than mpirun starts the ranks (OTC_RANK, OTC_WORLD_SIZE, OTC_RENDEZVOUS).
// A star through rank 0: rank 0 listens, writes its address to the
// rendezvous file, and every other rank connects to it. A sum sends each
// rank's span to rank 0, which adds them in rank order and sends the result
// back, so every rank gets the same bits. Every wait is a poll() against
// the deadline: rank 0 names a rank that stops sending, or whose connection
// closes; the others wait longer than it, so that its message comes first.
#include "Backend.h"
#include "Collective.h"
#include "Rendezvous.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace otc {

std::unique_ptr<Collective> joinTcpGroup(const Rendezvous &r, double timeout);

namespace {

using Clock = std::chrono::steady_clock;

/// What rank 0 writes to the rendezvous file.
struct Address {
  char host[256];
  uint16_t port;
};

class TcpCollective final : public Collective {
public:
  TcpCollective(const Rendezvous &r, double timeout) : timeout(timeout) {
    rank_ = r.rank, size_ = r.size;
    peers.assign(size_t(size_), -1);
    Address a{};
    if (rank_ == 0) {
      listen(a);
      exchange(r, &a, sizeof a, timeout);
      accept();
      rendezvousDone(r);
    } else {
      exchange(r, &a, sizeof a, timeout);
      connect(a);
    }
  }

  ~TcpCollective() override {
    for (int fd : peers)
      if (fd >= 0)
        close(fd);
    if (listener >= 0)
      close(listener);
  }

  const char *name() const override { return "TCP"; }

  // Sums run to completion when started: each rank blocks on rank 0, which
  // is the synchronisation a bucket needs anyway.
  int startSum(const Span &span, const std::string &what) override {
    reduce(span.data, size_t(span.count), what, [](float &a, float b) { a += b; });
    return sums++;
  }
  bool progress(int) override { return true; }
  void finishSums(const std::string &) override { sums = 0; }

  void sumHost(double *values, int n, const std::string &what) override {
    reduce(values, size_t(n), what, [](double &a, double b) { a += b; });
  }
  void maxHost(double *values, int n, const std::string &what) override {
    reduce(values, size_t(n), what, [](double &a, double b) { a = a >= b ? a : b; });
  }

  void broadcast(void *data, size_t bytes, int root, const std::string &what) override {
    if (rank_ == 0) {
      if (root != 0)
        receive(root, data, bytes, what);
      for (int r = 1; r < size_; ++r)
        if (r != root)
          send(r, data, bytes, what);
    } else if (rank_ == root) {
      send(0, data, bytes, what);
    } else {
      receive(0, data, bytes, what);
    }
  }

  void toRoot(const void *data, void *hostOut, size_t bytes, int from,
              const std::string &what) override {
    if (from == 0) {
      if (rank_ == 0)
        std::memcpy(hostOut, data, bytes);
    } else if (rank_ == from) {
      send(0, data, bytes, what);
    } else if (rank_ == 0) {
      receive(from, hostOut, bytes, what);
    }
  }

  [[noreturn]] void abort(int code) override {
    // Closing the connections ends the others' waits at once.
    for (int &fd : peers)
      if (fd >= 0)
        close(fd), fd = -1;
    std::fflush(stderr);
    std::_Exit(code);
  }

private:
  template <typename T, typename Combine>
  void reduce(T *data, size_t n, const std::string &what, Combine combine) {
    size_t bytes = n * sizeof(T);
    if (rank_ != 0) {
      send(0, data, bytes, what);
      receive(0, data, bytes, what);
      return;
    }
    scratch.resize(bytes);
    const T *other = reinterpret_cast<const T *>(scratch.data());
    for (int r = 1; r < size_; ++r) { // in rank order: the same bits everywhere
      receive(r, scratch.data(), bytes, what);
      for (size_t i = 0; i < n; ++i)
        combine(data[i], other[i]);
    }
    for (int r = 1; r < size_; ++r)
      send(r, data, bytes, what);
  }

  /// Seconds to wait on rank `peer`: the others outwait rank 0, which names
  /// the rank that stopped.
  double patience(int peer) const { return peer == 0 && rank_ != 0 ? timeout + 15 : timeout; }

  [[noreturn]] void lost(int peer, const std::string &what, bool closed) {
    std::string exchange = "the exchange of " + what;
    std::string how = closed ? " closed its connection during " + exchange
                             : " stopped responding: " + exchange + " waited " +
                                   seconds(patience(peer)) + " (--collective-timeout)";
    if (rank_ == 0 || peer != 0)
      throw Fatal{"rank " + std::to_string(peer) + how + "; stopping without saving"};
    throw Fatal{"rank 0" + how + " (it ends the group when another rank stops: see its error); "
                "stopping without saving"};
  }

  void wait(int peer, short events, Clock::time_point deadline, const std::string &what) {
    for (;;) {
      int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
                         .count());
      if (left <= 0)
        lost(peer, what, false);
      pollfd p{peers[size_t(peer)], events, 0};
      int got = poll(&p, 1, std::min(left, 1000));
      if (got > 0 && (p.revents & (POLLERR | POLLNVAL)))
        lost(peer, what, true);
      if (got > 0)
        return;
      if (got < 0 && errno != EINTR)
        throw Fatal{"poll: " + std::string(std::strerror(errno))};
    }
  }

  void send(int peer, const void *data, size_t bytes, const std::string &what) {
    auto deadline = Clock::now() + std::chrono::duration<double>(patience(peer));
    const char *p = static_cast<const char *>(data);
    while (bytes > 0) {
      wait(peer, POLLOUT, std::chrono::time_point_cast<Clock::duration>(deadline), what);
      ssize_t n = ::send(peers[size_t(peer)], p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR))
        continue;
      if (n <= 0)
        lost(peer, what, true);
      p += n, bytes -= size_t(n);
    }
  }

  void receive(int peer, void *data, size_t bytes, const std::string &what) {
    auto deadline = Clock::now() + std::chrono::duration<double>(patience(peer));
    char *p = static_cast<char *>(data);
    while (bytes > 0) {
      wait(peer, POLLIN, std::chrono::time_point_cast<Clock::duration>(deadline), what);
      ssize_t n = ::recv(peers[size_t(peer)], p, bytes, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR))
        continue;
      if (n <= 0)
        lost(peer, what, true);
      p += n, bytes -= size_t(n);
    }
  }

  static void tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }

  /// Rank 0: a listening socket on every interface, an ephemeral port, and
  /// the address the others reach it at (OTC_MASTER_ADDR, else this host's
  /// name).
  void listen(Address &a) {
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof any;
    if (listener < 0 || bind(listener, reinterpret_cast<sockaddr *>(&any), sizeof any) != 0 ||
        ::listen(listener, size_) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr *>(&any), &len) != 0)
      throw Fatal{"data parallel over TCP: cannot listen: " + std::string(std::strerror(errno))};
    a.port = ntohs(any.sin_port);
    const char *host = std::getenv("OTC_MASTER_ADDR");
    if (host && *host)
      std::snprintf(a.host, sizeof a.host, "%s", host);
    else if (gethostname(a.host, sizeof a.host - 1) != 0)
      std::snprintf(a.host, sizeof a.host, "127.0.0.1");
  }

  /// Rank 0: every other rank connects and says which it is.
  void accept() {
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
    for (int joined = 1; joined < size_;) {
      int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
                         .count());
      pollfd p{listener, POLLIN, 0};
      if (left <= 0 || poll(&p, 1, std::min(left, 1000)) < 0) {
        std::vector<int> missing;
        for (int r = 1; r < size_; ++r)
          if (peers[size_t(r)] < 0)
            missing.push_back(r);
        std::string names;
        for (size_t i = 0; i < missing.size(); ++i)
          names += (i ? (i + 1 == missing.size() ? " and " : ", ") : "") +
                   std::to_string(missing[i]);
        throw Fatal{std::string(missing.size() > 1 ? "ranks " : "rank ") + names +
                    " did not join the group within " + seconds(timeout) +
                    " (--collective-timeout)"};
      }
      if (!(p.revents & POLLIN))
        continue;
      int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      int32_t who = -1;
      if (recv(fd, &who, sizeof who, MSG_WAITALL) != ssize_t(sizeof who) || who <= 0 ||
          who >= size_ || peers[size_t(who)] >= 0) {
        close(fd); // not one of ours, or a rank twice
        continue;
      }
      tune(fd);
      peers[size_t(who)] = fd;
      ++joined;
    }
  }

  void connect(const Address &a) {
    addrinfo hints{}, *found = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    std::string port = std::to_string(a.port);
    std::string host(a.host, strnlen(a.host, sizeof a.host));
    auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
    for (;;) {
      if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) == 0) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
          freeaddrinfo(found);
          int32_t me = rank_;
          if (::send(fd, &me, sizeof me, MSG_NOSIGNAL) != ssize_t(sizeof me))
            throw Fatal{"data parallel over TCP: cannot reach rank 0 at " + host + ":" + port};
          tune(fd);
          peers[0] = fd;
          return;
        }
        if (fd >= 0)
          close(fd);
        freeaddrinfo(found);
      }
      if (Clock::now() > deadline)
        throw Fatal{"data parallel over TCP: cannot reach rank 0 at " + host + ":" + port +
                    " within " + seconds(timeout) + " (set OTC_MASTER_ADDR to an address the "
                    "ranks can reach)"};
      usleep(20000);
    }
  }

  double timeout;
  int listener = -1;
  std::vector<int> peers; // rank 0: a socket per rank; others: peers[0]
  std::vector<char> scratch;
  int sums = 0;
};

} // namespace

std::unique_ptr<Collective> joinTcpGroup(const Rendezvous &r, double timeout) {
  return std::make_unique<TcpCollective>(r, timeout);
}

} // namespace otc
