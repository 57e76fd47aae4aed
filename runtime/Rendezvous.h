// Joining a data-parallel group without mpirun: a launcher sets OTC_RANK,
// OTC_WORLD_SIZE and OTC_RENDEZVOUS (a file path every rank can read; it
// must not exist before the launch). Rank 0 writes what the others need to
// reach it (NCCL's unique id, or its address), they wait for it, and rank
// 0 removes the file once the group has formed.
#ifndef OTC_RUNTIME_RENDEZVOUS_H
#define OTC_RUNTIME_RENDEZVOUS_H

#include <cstddef>
#include <string>

namespace otc {

struct Rendezvous {
  int rank = 0, size = 1;
  std::string path;
};

/// The launcher's OTC_RANK, OTC_WORLD_SIZE and OTC_RENDEZVOUS: false when
/// OTC_RENDEZVOUS is unset; Fatal naming the variable when one is malformed.
bool rendezvousFromEnvironment(Rendezvous &r);

/// Rank 0 writes `bytes` bytes at `data` to the file (whole, or not at
/// all: written aside and renamed); the others wait up to `timeout` seconds
/// for it and read them into `data`.
void exchange(const Rendezvous &r, void *data, size_t bytes, double timeout);

/// Rank 0, once every rank has joined: removes the file.
void rendezvousDone(const Rendezvous &r);

} // namespace otc

#endif
