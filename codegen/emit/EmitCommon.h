// What the CPU and CUDA emitters share: the analysis of a loop step (which
// nodes vary along the reduced dims, in which pass they can run) and the
// printing of nodes, loads, stores and coordinates as C.
#ifndef OTC_CODEGEN_EMIT_EMITCOMMON_H
#define OTC_CODEGEN_EMIT_EMITCOMMON_H

#include "../Program.h"

#include <functional>
#include <ostream>

namespace otc {

/// The C type a buffer of `t` is stored as (the same names on both targets;
/// kernel_support.h defines the 16-bit ones).
const char *storageType(ElemType t);
/// The C type of a node of type `t`.
const char *valueType(ElemType t);

struct LoopInfo {
  explicit LoopInfo(const Step &s);
  const Step &step;
  std::vector<bool> inner;    // per node: varies along a reduced dim
  std::vector<int> phase;     // per node: passes that must finish first
  std::vector<int> pass;      // per reduction: the pass over the row it joins
  int passes = 0;
  std::vector<int> kept, reducedDims;
  int64_t rows = 1, cols = 1; // products of the kept and reduced dims
  std::vector<bool> innerStore;
  std::vector<int> buffers; // those the step reads or writes, ascending
  bool usesSeed = false, usesFirst = false, usesRng = false;

  /// The nodes of the stores that run per row (`inner` false) or per element.
  std::vector<int> storeRoots(bool inner) const;
  /// Every store's node and every reduction's body.
  std::vector<int> allRoots() const;
  /// A filter for NodePrinter::emit: nodes computable once per row after
  /// `passes` passes over it.
  std::function<bool(int)> outerAfter(int passes) const {
    return [this, passes](int i) { return !inner[i] && phase[i] <= passes; };
  }
};

class NodePrinter {
public:
  NodePrinter(const Program &p, const Step &s) : program(p), step(s) {}
  /// How reduction k's result is spelled (default `a<k>`).
  std::function<std::string(int)> reducedName = [](int k) { return "a" + std::to_string(k); };
  /// When set and non-empty for a load node, what it reads instead (a lane
  /// of a vector load).
  std::function<std::string(int)> loadOverride;

  /// Emits, in SSA order, the nodes that `roots` need and `defined` lacks,
  /// only those `want` accepts when given; marks them defined.
  void emit(std::ostream &os, const std::vector<int> &roots,
            std::vector<char> &defined, const std::string &pad,
            const std::function<bool(int)> &want = nullptr) const;
  /// buffer[index] = node, narrowing to the buffer's type.
  std::string store(const Store &s) const;
  std::string index(const std::vector<int64_t> &strides, int64_t offset = 0) const;

private:
  std::string expr(int i) const;
  const Program &program;
  const Step &step;
};

std::string var(int node);
/// `b<id>`; inside a kernel, while a KernelParamNames lives, `p<position>`
/// of its parameters, so that steps that differ only in their buffers print
/// the same kernel and the source keeps one (emitSource).
std::string bufferName(int id);
struct KernelParamNames {
  explicit KernelParamNames(const std::vector<int> &buffers);
  ~KernelParamNames();
};
/// Kernel `k`'s name, saying what it computes: k7_softmax_cross_entropy,
/// k12_tanh_grad_recomputed.
std::string kernelName(const Step &s, int k);
/// `const IT c<d> = ...;` for each of `dims`, from the flat index `flat`
/// over exactly those dims (row-major).
std::string coords(const Step &s, const std::vector<int> &dims, const std::string &flat,
                   const std::string &indexType, const std::string &pad);
/// The kernel's parameter list and the matching call arguments.
/// A kernel's parameters and its launch's arguments: its buffers, then the
/// scalars it reads. `scalarsInMemory` (CUDA): seed and the generator's
/// words come from device memory (otc_step_scalars), not parameters.
std::string kernelParams(const Program &p, const LoopInfo &info, bool scalarsInMemory = false);
std::string kernelArgs(const LoopInfo &info, bool scalarsInMemory = false);
/// ", LDALL, LDBLL, LDCLL" for a product with padded rows (Buffer::pitch;
/// 0 for a dense operand), appended to the kernel library's GEMM
/// arguments; empty when all three are dense.
std::string leadingDimArgs(const Gemm &g);
/// `0.0f` or `-INFINITY`: where a reduction starts.
const char *reductionInit(Reduction::Kind k);
/// `acc = acc + v` or `acc = fmaxf(acc, v)`.
std::string reductionUpdate(Reduction::Kind k, const std::string &acc, const std::string &v);

// The parts of a RowReduce kernel both targets share; `colLoop` opens the
// loop over a row's elements (with the target's pragma or lane stride).
/// Pass `pass` over the row: the per-row values it needs, its accumulators
/// a<k>, and the loop that updates them.
/// `colEnd` closes what `colLoop` opened.
/// `tail`, when given, opens a second loop over the row's last elements
/// (after the vectors `colLoop` reads), whose body its printer prints.
struct RowTail {
  const NodePrinter &np;
  std::string open, close = "    }\n";
};
void emitRowPass(std::ostream &os, const NodePrinter &np, const LoopInfo &info, int pass,
                 std::vector<char> &defined, const std::string &colLoop,
                 const std::string &colEnd = "    }\n", const RowTail *tail = nullptr);
/// The row-shaped stores, in a last loop over the row, if there are any.
void emitInnerStores(std::ostream &os, const NodePrinter &np, const LoopInfo &info,
                     std::vector<char> &defined, const std::string &colLoop);

} // namespace otc

#endif
