// The data-parallel group: the few collectives a training run needs. A
// backend is one file (CollectiveMpi.cpp for the CPU target, CollectiveNccl.cu
// for CUDA), linked into the executable by `otc compile --data-parallel`.
// Every wait is bounded by the run's --collective-timeout: a rank that never
// arrives makes the others stop with an error naming it (Fatal), never hang.
#ifndef OTC_RUNTIME_COLLECTIVE_H
#define OTC_RUNTIME_COLLECTIVE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace otc {

class Backend;

class Collective {
public:
  virtual ~Collective() = default;
  /// The transport, for the run's header ("MPI", "NCCL").
  virtual const char *name() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// A buffer of `count` floats in the backend's memory.
  struct Span {
    float *data;
    int64_t count;
  };
  /// Starts summing `span` across ranks, in place, and returns at once; the
  /// sums started are numbered from 0 until finishSums. Every rank starts
  /// the same sums in the same order. `what` names the data in errors.
  virtual int startSum(const Span &span, const std::string &what) = 0;
  /// Moves the started sums along (MPI progresses only inside its calls);
  /// whether sum `id` is complete.
  virtual bool progress(int id) = 0;
  /// Waits for every started sum, which then hold the same bits on every
  /// rank, and starts numbering again.
  virtual void finishSums(const std::string &what) = 0;
  void sum(const std::vector<Span> &spans, const std::string &what) {
    for (const Span &s : spans)
      startSum(s, what);
    finishSums(what);
  }
  /// Host scalars, in place: their sum, or their maximum, across ranks.
  virtual void sumHost(double *values, int n, const std::string &what) = 0;
  virtual void maxHost(double *values, int n, const std::string &what) = 0;
  /// `bytes` bytes at `data` (the backend's memory) from rank `root` to all.
  virtual void broadcast(void *data, size_t bytes, int root, const std::string &what) = 0;
  /// `bytes` bytes at `data` (the backend's memory) on rank `from` arrive
  /// in host memory at `hostOut` on rank 0; every rank calls it, and only
  /// those two take part.
  virtual void toRoot(const void *data, void *hostOut, size_t bytes, int from,
                      const std::string &what) = 0;
  /// Ends every rank of the group after this one failed, so that none waits
  /// for it; the launcher reports `code`. Does not return.
  [[noreturn]] virtual void abort(int code) = 0;

protected:
  int rank_ = 0, size_ = 1;
};

/// Joins the group the launcher started this process in (mpirun's
/// environment), with `timeoutSeconds` bounding every wait. Defined only in
/// executables built with --data-parallel (a weak reference elsewhere).
std::unique_ptr<Collective> joinGroup(Backend &backend, double timeoutSeconds)
    __attribute__((weak));

/// Whether a launcher started this process as one of several ranks
/// (OMPI_COMM_WORLD_SIZE, PMI_SIZE or OTC_WORLD_SIZE above 1).
bool launchedAsRanks();

/// Whether a launcher (mpirun, or one setting OTC_RENDEZVOUS) started this
/// process, even as the only rank: then it is a group of one, collectives
/// and all.
bool launchedAsGroup();

/// "3.5 s", as errors print a timeout.
std::string seconds(double s);

/// This rank's index among the ranks on its machine (OMPI_COMM_WORLD_LOCAL_RANK,
/// MPI_LOCALRANKID or LOCAL_RANK), or -1: which GPU a CUDA rank drives.
int localRank();

} // namespace otc

#endif
