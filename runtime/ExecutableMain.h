// What each executable's main shares: the OpenMP wait policy and one-line
// error reports.
#ifndef OTC_RUNTIME_EXECUTABLEMAIN_H
#define OTC_RUNTIME_EXECUTABLEMAIN_H

namespace otc {

/// OpenMP (the generated kernels) and OpenBLAS (the GEMMs) each keep a
/// thread pool; threads that spin while waiting starve the other pool's
/// (3x slower steps at 2 threads on 2 cores). libgomp reads its wait policy
/// from the environment only, when it loads, so set it and start again,
/// same process id, unless the user chose a policy. Returns on failure.
void relaunchWithPassiveWait(char **argv);

/// The mains' shared body: runs `run`, reporting a Fatal or running out of
/// memory as one line "TOOL: error: ..." and the exit code.
int runReportingErrors(const char *tool, int (*run)(int, char **), int argc, char **argv);

} // namespace otc

#endif
