// Program-level rewrites of Reduce steps (ReduceSteps.cpp): sibling
// reductions over one iteration space merged into one step, and a long
// column reduction, or one over an outer and an inner dim, split into
// partial sums and their sum, so that its threads are many and its columns
// short.
#ifndef OTC_CODEGEN_REDUCESTEPS_H
#define OTC_CODEGEN_REDUCESTEPS_H

#include "Program.h"

namespace otc {

/// Whether Reduce steps `a` then `b` can run as one: the same iteration
/// space, and neither writes a buffer the other reads or writes. The
/// caller keeps their arena buffers apart (one step reads all of them).
bool mergeableReduces(const Step &a, const Step &b);

/// `a` with `b`'s reductions and stores added, equal nodes shared (the
/// gradient that LayerNorm's scale and bias sums both read, loaded once).
void mergeReduces(Step &a, const Step &b);

/// Columns shorter than this stay one step.
constexpr int64_t kSplitMinRows = 1024;
/// More outputs than this keep a device busy unsplit.
constexpr int64_t kSplitMaxOutputs = 16384;
/// Outer and inner reductions of fewer terms per output stay one step: a
/// block per output streams them fast enough (the tiny models' BatchNorms).
constexpr int64_t kSplitMinSums = 1 << 16;
/// The rows each partial sum covers, roughly (a divisor of the rows).
constexpr int64_t kSplitChunk = 128;

/// For a Reduce step [R (reduced), O] (after collapseDims) worth
/// splitting: the rows per partial sum, a divisor of R. Else 0.
int64_t columnChunk(const Step &s);

/// `first` sums `chunk` rows at a time into `partials`, a float32 buffer
/// of [reductions, R / chunk, O]; `second` sums those per output and
/// stores what `s` stored.
void splitColumns(const Step &s, int64_t chunk, int partials, Step &first, Step &second);

/// For a Reduce step [R1 (reduced), O, R2 (reduced)] (after collapseDims:
/// BatchNorm's sums over batch and pixels per channel) worth splitting:
/// true where O outputs alone would leave the device idle and each of the
/// R1 O inner rows is long enough to share.
bool splitsOuter(const Step &s);

/// `first` reduces each of the R1 O rows over R2 into `partials`, a
/// float32 buffer of [reductions, R1, O]; `second` reduces those over R1
/// per output and stores what `s` stored.
void splitOuter(const Step &s, int partials, Step &first, Step &second);

/// Whether Elementwise step `e` can run as more of Reduce step `r`'s
/// per-output epilogue (BatchNorm's running-statistic updates, after the
/// statistics): e's iteration space is r's kept dims; what e reads of r's
/// results it reads where r stores them, float32 (so e can take the values
/// r stores, unrounded as they are); e uses no coordinates, gathers or
/// random numbers; and r reads nothing e writes. The caller checks the
/// steps between them.
bool foldsIntoReduce(const Program &p, const Step &r, const Step &e);

/// `r` with `e`'s nodes, loads of r's results replaced by the values r
/// stores, and e's stores added.
void foldIntoReduce(Step &r, const Step &e);

} // namespace otc

#endif
