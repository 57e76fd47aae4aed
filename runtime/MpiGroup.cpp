#include "MpiGroup.h"
#include "Backend.h"
#include "Collective.h"

// The C API only: the deprecated C++ bindings need a library of their own.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace otc {
namespace {
constexpr int kPingTag = 7301, kPongTag = 7302;
}

MpiGroup::MpiGroup() {
  int ready = 0;
  MPI_Initialized(&ready);
  if (!ready) {
    int provided;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw Fatal{"--data-parallel: MPI_Init failed"};
  }
  // Errors come back as codes, so that they end the run as Fatal.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiGroup::~MpiGroup() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done)
    MPI_Finalize();
}

void MpiGroup::check(int code, const std::string &what) {
  if (code == MPI_SUCCESS)
    return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw Fatal{"MPI failed in " + what + ": " + std::string(text, size_t(len))};
}

void MpiGroup::answerPings() {
  for (;;) {
    int waiting = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, MPI_COMM_WORLD, &waiting, &status);
    if (!waiting)
      return;
    int got;
    MPI_Recv(&got, 1, MPI_INT, status.MPI_SOURCE, kPingTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Request answer;
    MPI_Isend(&token, 1, MPI_INT, status.MPI_SOURCE, kPongTag, MPI_COMM_WORLD, &answer);
    MPI_Request_free(&answer); // completes on its own; `token` outlives it
  }
}

std::vector<int> MpiGroup::silentRanks(double grace) {
  std::vector<MPI_Request> pings, answers;
  std::vector<int> peers, got(size_t(size_), 0);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_)
      continue;
    peers.push_back(r);
    pings.emplace_back();
    MPI_Isend(&token, 1, MPI_INT, r, kPingTag, MPI_COMM_WORLD, &pings.back());
    answers.emplace_back();
    MPI_Irecv(&got[size_t(r)], 1, MPI_INT, r, kPongTag, MPI_COMM_WORLD, &answers.back());
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
  for (;;) {
    int done = 0;
    MPI_Testall(int(answers.size()), answers.data(), &done, MPI_STATUSES_IGNORE);
    answerPings();
    if (done || std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<int> silent;
  for (size_t i = 0; i < answers.size(); ++i) {
    int done = 0;
    MPI_Test(&answers[i], &done, MPI_STATUS_IGNORE);
    if (!done) {
      silent.push_back(peers[i]);
      MPI_Cancel(&answers[i]); // its buffer is about to go
      MPI_Request_free(&answers[i]);
    }
  }
  for (MPI_Request &p : pings) // `token` outlives them
    if (p != MPI_REQUEST_NULL)
      MPI_Request_free(&p);
  return silent;
}

std::string MpiGroup::timedOut(const std::string &what, double timeout) {
  std::vector<int> silent = silentRanks(std::min(timeout, 10.0));
  if (silent.empty())
    return what + " did not complete within " + seconds(timeout) +
           " (--collective-timeout), though every rank answers; stopping without saving";
  std::string names;
  for (size_t i = 0; i < silent.size(); ++i)
    names += (i ? (i + 1 == silent.size() ? " and " : ", ") : "") + std::to_string(silent[i]);
  return std::string(silent.size() > 1 ? "ranks " : "rank ") + names +
         " stopped responding (stopped, dead, or busy outside the group longer than the "
         "timeout): " + what + " waited " + seconds(timeout) +
         " (--collective-timeout); stopping without saving";
}

void MpiGroup::abort(int code) {
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return; should it, leave anyway
}

} // namespace otc
