// The data-parallel group over NCCL, for the CUDA target. mpirun starts the
// ranks and MPI carries NCCL's unique id (MpiGroup), or another launcher
// sets OTC_RANK, OTC_WORLD_SIZE and OTC_RENDEZVOUS and the id travels
// through that file (Rendezvous.h); each rank drives the GPU its local rank
// names (CudaBackend). Collectives run on a stream of their
// own: a sum waits for an event recorded on the compute stream when it is
// started (grad_ready fires as the step's kernels are issued, so the event
// follows the last one touching the bucket), and the compute stream waits
// for the sums before the update. Waits poll against the deadline and
// NCCL's asynchronous errors; on a timeout the communicator is aborted.
#include "Backend.h"
#include "Collective.h"
#include "MpiGroup.h"
#include "Rendezvous.h"

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace otc {
namespace {

class NcclCollective final : public Collective {
public:
  explicit NcclCollective(double timeout) : timeout(timeout) {
    ncclUniqueId id;
    Rendezvous r;
    bool viaFile = rendezvousFromEnvironment(r);
    if (viaFile) {
      // Another launcher: the id travels through a file rank 0 writes.
      rank_ = r.rank, size_ = r.size;
      if (rank_ == 0)
        nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      exchange(r, &id, sizeof id, timeout);
    } else {
      group = std::make_unique<MpiGroup>();
      rank_ = group->rank(), size_ = group->size();
      if (rank_ == 0)
        nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
      MpiGroup::check(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD),
                      "sending NCCL's unique id");
    }
    cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    // Nonblocking, so that a rank that never arrives cannot hang NCCL's
    // init (MPI_Bcast above has no deadline: mpirun ends a rank that dies).
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    nccl(ncclCommInitRankConfig(&comm, size_, id, rank_, &config), "ncclCommInitRank");
    wait("joining the NCCL group");
    if (viaFile) // every rank has read it: NCCL's init completed
      rendezvousDone(r);
    cuda(cudaMalloc(&scalars, kScalars * sizeof(double)), "cudaMalloc");
  }

  ~NcclCollective() override {
    if (comm) { // a nonblocking communicator finalizes in the background
      ncclResult_t state = ncclCommFinalize(comm);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
      while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline)
        ncclCommGetAsyncError(comm, &state);
      if (state == ncclSuccess)
        ncclCommDestroy(comm);
      else
        ncclCommAbort(comm);
    }
    for (cudaEvent_t e : events)
      cudaEventDestroy(e);
    for (cudaEvent_t e : done)
      cudaEventDestroy(e);
    cudaFree(scalars);
    cudaStreamDestroy(stream);
  }

  const char *name() const override { return "NCCL"; }

  int startSum(const Span &span, const std::string &what) override {
    afterCompute();
    nccl(ncclAllReduce(span.data, span.data, size_t(span.count), ncclFloat32, ncclSum, comm,
                       stream),
         "the all-reduce of " + what);
    // One event per sum of the window, never reused within it.
    if (sums == done.size()) {
      done.emplace_back();
      cuda(cudaEventCreateWithFlags(&done.back(), cudaEventDisableTiming), "cudaEventCreate");
    }
    cuda(cudaEventRecord(done[sums], stream), "cudaEventRecord");
    return int(sums++);
  }

  bool progress(int id) override {
    return id >= 0 && size_t(id) < sums && cudaEventQuery(done[size_t(id)]) == cudaSuccess;
  }

  void finishSums(const std::string &what) override {
    wait("the all-reduce of " + what);
    sums = 0;
    beforeCompute();
  }

  void sumHost(double *values, int n, const std::string &what) override {
    reduceHost(values, n, ncclSum, what);
  }
  void maxHost(double *values, int n, const std::string &what) override {
    reduceHost(values, n, ncclMax, what);
  }

  void broadcast(void *data, size_t bytes, int root, const std::string &what) override {
    afterCompute();
    nccl(ncclBroadcast(data, data, bytes, ncclUint8, root, comm, stream),
         "the broadcast of " + what);
    wait("the broadcast of " + what);
    beforeCompute();
  }

  void toRoot(const void *data, void *hostOut, size_t bytes, int from,
              const std::string &what) override {
    if (from == 0) {
      if (rank_ == 0)
        cuda(cudaMemcpy(hostOut, data, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      return;
    }
    if (rank_ != 0 && rank_ != from)
      return;
    afterCompute();
    void *staging = nullptr;
    if (rank_ == 0)
      cuda(cudaMalloc(&staging, bytes ? bytes : 1), "cudaMalloc");
    nccl(rank_ == from ? ncclSend(data, bytes, ncclUint8, 0, comm, stream)
                       : ncclRecv(staging, bytes, ncclUint8, from, comm, stream),
         "the gathering of " + what);
    wait("the gathering of " + what);
    if (rank_ == 0) {
      cuda(cudaMemcpy(hostOut, staging, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
      cudaFree(staging);
    }
  }

  [[noreturn]] void abort(int code) override {
    if (comm)
      ncclCommAbort(comm);
    comm = nullptr;
    if (group)
      group->abort(code);
    std::fflush(stderr);
    std::_Exit(code);
  }

private:
  static constexpr int kScalars = 16;

  void reduceHost(double *values, int n, ncclRedOp_t op, const std::string &what) {
    if (n > kScalars)
      throw Fatal{"internal error: " + std::to_string(n) + " scalars to reduce"};
    // All on the collective stream, in order: in, reduce, out.
    cuda(cudaMemcpyAsync(scalars, values, size_t(n) * sizeof(double), cudaMemcpyHostToDevice,
                         stream),
         "cudaMemcpyAsync");
    nccl(ncclAllReduce(scalars, scalars, size_t(n), ncclFloat64, op, comm, stream),
         "the reduction of " + what);
    cuda(cudaMemcpyAsync(values, scalars, size_t(n) * sizeof(double), cudaMemcpyDeviceToHost,
                         stream),
         "cudaMemcpyAsync");
    wait("the reduction of " + what);
  }

  /// The collective stream waits for what the compute stream (the legacy
  /// default stream the step runs on) has issued so far.
  void afterCompute() {
    cudaEvent_t e = event();
    cuda(cudaEventRecord(e, 0), "cudaEventRecord");
    cuda(cudaStreamWaitEvent(stream, e, 0), "cudaStreamWaitEvent");
  }
  /// And the compute stream for the collectives.
  void beforeCompute() {
    cudaEvent_t e = event();
    cuda(cudaEventRecord(e, stream), "cudaEventRecord");
    cuda(cudaStreamWaitEvent(0, e, 0), "cudaStreamWaitEvent");
  }

  /// An event for a stream to wait on, from a pool reused round-robin
  /// (cudaStreamWaitEvent takes the event's state when it is called).
  cudaEvent_t event() {
    if (events.size() < 256) {
      events.emplace_back();
      cuda(cudaEventCreateWithFlags(&events.back(), cudaEventDisableTiming), "cudaEventCreate");
      return events.back();
    }
    return events[nextEvent++ % events.size()];
  }

  /// Until the collective stream is idle, or the deadline: answers the
  /// other ranks' pings and watches NCCL's asynchronous errors meanwhile.
  void wait(const std::string &what) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    for (int spins = 0;; ++spins) {
      ncclResult_t state = ncclSuccess;
      if (comm)
        ncclCommGetAsyncError(comm, &state);
      if (state != ncclSuccess && state != ncclInProgress)
        throw Fatal{what + ": NCCL: " + ncclGetErrorString(state)};
      cudaError_t q = cudaStreamQuery(stream);
      if (state == ncclSuccess && q == cudaSuccess)
        return;
      if (q != cudaSuccess && q != cudaErrorNotReady)
        throw Fatal{what + ": CUDA: " + cudaGetErrorString(q)};
      whileWaiting(what, deadline);
      if (spins > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  /// One turn of a wait: answers the other ranks' pings; past the deadline,
  /// aborts the communicator and throws the timeout's error.
  template <typename Deadline> void whileWaiting(const std::string &what, Deadline deadline) {
    if (group)
      group->answerPings();
    if (std::chrono::steady_clock::now() > deadline) {
      std::string message = timedOut(what);
      ncclCommAbort(comm);
      comm = nullptr;
      throw Fatal{message};
    }
  }

  /// A nonblocking communicator may answer ncclInProgress: it takes the
  /// next call only once its state is settled, within the deadline.
  void nccl(ncclResult_t r, const std::string &what) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    while (r == ncclInProgress && comm) {
      whileWaiting(what, deadline);
      ncclCommGetAsyncError(comm, &r);
    }
    if (r != ncclSuccess && r != ncclInProgress)
      throw Fatal{what + ": NCCL: " + ncclGetErrorString(r)};
  }
  static void cuda(cudaError_t e, const char *what) {
    if (e != cudaSuccess)
      throw Fatal{std::string(what) + ": CUDA: " + cudaGetErrorString(e)};
  }

  /// The timeout's error: MPI's group names the ranks that stopped.
  std::string timedOut(const std::string &what) {
    if (group)
      return group->timedOut(what, timeout);
    return what + " did not complete within " + seconds(timeout) +
           " (--collective-timeout): a rank stopped or died; stopping without saving";
  }

  std::unique_ptr<MpiGroup> group; // null when launched through a rendezvous file
  double timeout;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  double *scalars = nullptr;
  std::vector<cudaEvent_t> events, done; // done: per sum of the window
  size_t nextEvent = 0, sums = 0;
};

} // namespace

std::unique_ptr<Collective> joinGroup(Backend &backend, double timeoutSeconds) {
  if (std::strcmp(backend.name(), "cuda") != 0)
    throw Fatal{"--data-parallel: the NCCL group needs the CUDA target"};
  return std::make_unique<NcclCollective>(timeoutSeconds);
}

} // namespace otc
