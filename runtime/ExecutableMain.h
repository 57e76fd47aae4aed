// What each executable's main shares: the OpenMP wait policy and one-line
// error reports.
#ifndef OTC_RUNTIME_EXECUTABLEMAIN_H
#define OTC_RUNTIME_EXECUTABLEMAIN_H

namespace otc {

/// The mains' shared body: relaunches with a passive OpenMP wait when the
/// generated code runs CPU threads (`cpuThreads`), then runs `run`,
/// reporting a Fatal or running out of memory as one line
/// "TOOL: error: ..." and the exit code.
int executableMain(const char *tool, int (*run)(int, char **), int argc, char **argv,
                   bool cpuThreads);

} // namespace otc

#endif
