// The MPI side of a data-parallel group, shared by its backends: joining
// the group mpirun started, and telling, after a wait timed out, the ranks
// that stopped responding from those that are only late. A waiting rank
// answers the others' pings (answerPings, called in every wait loop); a
// rank that timed out pings all others, and those that do not answer within
// a grace period are stopped or dead.
#ifndef OTC_RUNTIME_MPIGROUP_H
#define OTC_RUNTIME_MPIGROUP_H

#include <string>
#include <vector>

namespace otc {

class MpiGroup {
public:
  /// MPI_Init (once), rank and size; throws Fatal on failure.
  MpiGroup();
  ~MpiGroup();
  int rank() const { return rank_; }
  int size() const { return size_; }
  void answerPings();
  /// The Fatal message for `what` having waited `timeout` seconds: the
  /// ranks that do not answer a ping within min(timeout, 10) s, named.
  std::string timedOut(const std::string &what, double timeout);
  /// Raises an MPI error code as Fatal, naming `what`.
  static void check(int code, const std::string &what);
  [[noreturn]] void abort(int code);

private:
  std::vector<int> silentRanks(double grace);
  int rank_ = 0, size_ = 1;
  int token = 1; // what pings and answers carry
};

} // namespace otc

#endif
