// How each executable's main starts and reports errors (ExecutableMain.h).
#include "ExecutableMain.h"
#include "Backend.h"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <unistd.h>

namespace otc {

void relaunchWithPassiveWait(char **argv) {
  if (std::getenv("OMP_WAIT_POLICY"))
    return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  execv("/proc/self/exe", argv); // on failure, go on with spinning threads
}

int runReportingErrors(const char *tool, int (*run)(int, char **), int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const Fatal &f) {
    std::fprintf(stderr, "%s: error: %s\n", tool, f.message.c_str());
    return f.code;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error: out of host memory\n", tool);
    return 1;
  }
}

} // namespace otc
