// What every executable knows of data parallelism, with or without a
// collective backend linked (Collective.h).
#include "Collective.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace otc {

bool launchedAsRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "OTC_WORLD_SIZE"})
    if (const char *v = std::getenv(name); v && std::atoi(v) > 1)
      return true;
  return false;
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

bool launchedAsGroup() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "OTC_RENDEZVOUS"})
    if (std::getenv(name))
      return true;
  return false;
}

int localRank() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK"})
    if (const char *v = std::getenv(name); v && *v)
      return std::atoi(v);
  return -1;
}

} // namespace otc
