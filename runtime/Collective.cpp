// What every executable knows of data parallelism, with or without a
// collective backend linked (Collective.h).
#include "Collective.h"

#include <cstdlib>

namespace otc {

bool launchedAsRanks() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *v = std::getenv(name); v && std::atoi(v) > 1)
      return true;
  return false;
}

} // namespace otc
