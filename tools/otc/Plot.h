// otc plot METRICS.jsonl -o RUN.svg: a training run's log as a picture.
#ifndef OTC_TOOLS_PLOT_H
#define OTC_TOOLS_PLOT_H

namespace otc {

/// Runs `otc plot` on argv (argv[1] is "plot"); returns the exit code.
int plotCommand(int argc, char **argv);

} // namespace otc

#endif
