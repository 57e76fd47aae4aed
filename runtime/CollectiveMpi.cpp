// The data-parallel group over MPI, for the CPU target: the backend's memory
// is host memory, so MPI reads and writes it directly. Every collective is
// nonblocking and polled against the deadline, so that a rank that stops
// never hangs the others (MpiGroup names the ranks that stopped).
#include "Backend.h"
#include "Collective.h"
#include "MpiGroup.h"
#include "Rendezvous.h"

// The C API only: the deprecated C++ bindings need a library of their own.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>

namespace otc {
namespace {

class MpiCollective final : public Collective {
public:
  explicit MpiCollective(double timeout) : timeout(timeout) {
    rank_ = group.rank(), size_ = group.size();
  }

  const char *name() const override { return "MPI"; }

  int startSum(const Span &span, const std::string &what) override {
    started.emplace_back();
    for (int64_t at = 0; at < span.count; at += kChunk) {
      started.back().emplace_back();
      int n = int(std::min<int64_t>(kChunk, span.count - at));
      check(MPI_Iallreduce(MPI_IN_PLACE, span.data + at, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                           &started.back().back()),
            what);
    }
    return int(started.size()) - 1;
  }

  bool progress(int id) override {
    if (id < 0 || size_t(id) >= started.size())
      return false;
    std::vector<MPI_Request> &r = started[size_t(id)];
    int complete = 0;
    MPI_Testall(int(r.size()), r.data(), &complete, MPI_STATUSES_IGNORE);
    return complete;
  }

  void finishSums(const std::string &what) override {
    std::vector<MPI_Request> all;
    for (std::vector<MPI_Request> &r : started)
      all.insert(all.end(), r.begin(), r.end());
    started.clear();
    finish(all, "the all-reduce of " + what);
  }

  void sumHost(double *values, int n, const std::string &what) override {
    reduceHost(values, n, MPI_SUM, what);
  }
  void maxHost(double *values, int n, const std::string &what) override {
    reduceHost(values, n, MPI_MAX, what);
  }

  void broadcast(void *data, size_t bytes, int root, const std::string &what) override {
    std::vector<MPI_Request> requests;
    char *p = static_cast<char *>(data);
    for (size_t at = 0; at < bytes; at += size_t(kChunk)) {
      requests.emplace_back();
      int n = int(std::min<size_t>(size_t(kChunk), bytes - at));
      check(MPI_Ibcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD, &requests.back()), what);
    }
    finish(requests, "the broadcast of " + what);
  }

  void toRoot(const void *data, void *hostOut, size_t bytes, int from,
              const std::string &what) override {
    if (from == 0) {
      if (rank_ == 0)
        std::memcpy(hostOut, data, bytes);
      return;
    }
    if (rank_ != 0 && rank_ != from)
      return;
    std::vector<MPI_Request> requests;
    for (size_t at = 0; at < bytes; at += size_t(kChunk)) {
      requests.emplace_back();
      int n = int(std::min<size_t>(size_t(kChunk), bytes - at));
      if (rank_ == from)
        check(MPI_Isend(static_cast<const char *>(data) + at, n, MPI_BYTE, 0, kGatherTag,
                        MPI_COMM_WORLD, &requests.back()),
              what);
      else
        check(MPI_Irecv(static_cast<char *>(hostOut) + at, n, MPI_BYTE, from, kGatherTag,
                        MPI_COMM_WORLD, &requests.back()),
              what);
    }
    finish(requests, "the gathering of " + what);
  }

  [[noreturn]] void abort(int code) override { group.abort(code); }

private:
  static constexpr int kGatherTag = 7303;
  static constexpr int64_t kChunk = int64_t(1) << 28; // elements per MPI call (int counts)

  void reduceHost(double *values, int n, MPI_Op op, const std::string &what) {
    std::vector<MPI_Request> requests(1);
    check(MPI_Iallreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, op, MPI_COMM_WORLD, &requests[0]),
          what);
    finish(requests, "the reduction of " + what);
  }

  static void check(int code, const std::string &what) { MpiGroup::check(code, what); }

  /// Waits for `requests` until the deadline, answering other ranks'
  /// pings meanwhile; then names the ranks that stopped responding.
  void finish(std::vector<MPI_Request> &requests, const std::string &what) {
    if (!poll(requests, timeout))
      throw Fatal{group.timedOut(what, timeout)};
  }

  /// Polls until `requests` complete (true) or `seconds` pass (false).
  bool poll(std::vector<MPI_Request> &requests, double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (int spins = 0;; ++spins) {
      int done = 0;
      MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
      if (done)
        return true;
      group.answerPings();
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      // Spin briefly (a collective usually completes in microseconds),
      // then leave the core to the computing threads.
      if (spins > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  MpiGroup group;
  double timeout;
  std::vector<std::vector<MPI_Request>> started; // per sum started: its requests
};

} // namespace

std::unique_ptr<Collective> joinTcpGroup(const Rendezvous &r, double timeout);

/// mpirun's group over MPI, or another launcher's (OTC_RENDEZVOUS) over TCP.
std::unique_ptr<Collective> joinGroup(Backend &backend, double timeoutSeconds) {
  if (std::strcmp(backend.name(), "cpu") != 0)
    throw Fatal{"--data-parallel: the CPU group needs the CPU target's host memory"};
  if (Rendezvous r; rendezvousFromEnvironment(r))
    return joinTcpGroup(r, timeoutSeconds);
  return std::make_unique<MpiCollective>(timeoutSeconds);
}

} // namespace otc
