// How each executable's main starts and reports errors (ExecutableMain.h).
#include "ExecutableMain.h"
#include "Backend.h"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <unistd.h>

namespace otc {

/// OpenMP (the generated kernels) and OpenBLAS (the GEMMs) each keep a
/// thread pool; threads that spin while waiting starve the other pool's
/// (3x slower steps at 2 threads on 2 cores). libgomp reads its wait policy
/// from the environment only, when it loads, so set it and start again,
/// same process id, unless the user chose a policy. Returns on failure.
static void relaunchWithPassiveWait(char **argv) {
  if (std::getenv("OMP_WAIT_POLICY"))
    return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  execv("/proc/self/exe", argv); // on failure, go on with spinning threads
}

int executableMain(const char *tool, int (*run)(int, char **), int argc, char **argv,
                   bool cpuThreads) {
  if (cpuThreads)
    relaunchWithPassiveWait(argv);
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
