// The kernel program: what one training step runs, in order. Buffers are
// typed and placed; steps are structs of a few kinds, each with an emitter
// per target. Nothing here is C text: the emitters write all of it.
#ifndef OTC_CODEGEN_PROGRAM_H
#define OTC_CODEGEN_PROGRAM_H

#include "otc/kernels/adafactor.h"
#include "otc/runtime/abi.h"

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace otc {

/// Storage types of buffers. Arithmetic happens in F32, I64 or I1 (bool):
/// a load of F16 or BF16 widens to F32, a store narrows with round to nearest.
enum class ElemType : uint8_t { F32, F16, BF16, I64, I1 };

const char *typeName(ElemType t);
int64_t byteSize(ElemType t);
bool isFloat(ElemType t);

struct Buffer {
  /// Where the bytes live: an arena offset, or a runtime-owned tensor.
  /// LowParam: a parameter's low-precision copy, which the optimizer update
  /// writes and the runtime owns (binding: the parameter's index).
  enum class Place { Arena, Input, Param, Grad, Loss, Argument, Result, Constant, LowParam };
  int id = 0;
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
  Place place = Place::Arena;
  int64_t offset = 0; // Arena: bytes from the arena's base
  int binding = 0;    // Input, Param, Grad, Argument, Result, LowParam: the index
  std::string name;   // for readers of --emit program
  /// Constant: the elements, as doubles (floats) or integers (I64, I1),
  /// emitted into the generated source.
  std::vector<double> values;
  std::vector<int64_t> ivalues;
  /// Arena: a low-precision copy of a parameter (a cast of it), which the
  /// memory report counts apart from activations.
  bool lowCopy = false;
  /// Elements from the start of one row of the last dim to the next, where
  /// rows are padded so that each starts 16-byte aligned (a 16-bit
  /// [tokens, 50257] logits tensor, for cuBLAS's vectorized GEMMs); 0: dense.
  int64_t pitch = 0;

  /// The elements the buffer holds, padding included.
  int64_t count() const;
  int64_t bytes() const { return count() * byteSize(type); }
};

/// One value of a step's expression DAG, in SSA form: operands are indices of
/// earlier nodes, so each subexpression is computed once.
struct Node {
  enum Op : uint8_t {
#define OTC_NODE(Kind, name) Kind,
#include "Nodes.def"
  };
  Op op;
  ElemType type;            // F32, I64 or I1
  std::vector<int> args;    // node indices
  int buffer = -1;          // Load
  std::vector<int64_t> strides; // Load: element stride per iteration dim
  double value = 0;         // Const F32
  int64_t ivalue = 0;       // Const I64/I1, Reduced, Coord: the dim; Gather: stride
  int64_t extent = 0;       // Gather: the size of the gathered dim
  int64_t offset = 0;       // Load, Gather: elements added to the index (slices)
};

/// A reduction of a step: `node` combined over the reduced dims.
struct Reduction {
  enum Kind : uint8_t { Sum, Max } kind;
  int node;
};

/// Writes `node` to `buffer` at sum of coord * strides. In a Reduce or
/// RowReduce step, a store whose node does not vary along the reduced dims
/// happens once per output, after the reductions; one that varies along them
/// is the RowReduce's row-shaped result and runs over the row again.
struct Store {
  int buffer;
  std::vector<int64_t> strides;
  int node;
  int64_t offset = 0; // elements added to the index (concat, slice gradients)
};

/// Row-major C = alpha * op(A) * op(B) + beta * C, `batch` times, with
/// products summed in F32 whatever the operand types.
struct Gemm {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0; // elements between batches
  /// Leading dimensions: elements between rows of A, B and C as stored
  /// (Buffer::pitch, batch 1 only); 0 for dense rows.
  int64_t lda = 0, ldb = 0, ldc = 0;
  double alpha = 1;
  /// Zero, one, a constant, or 0 on the window's first micro-batch and 1
  /// after it (accumulation into a gradient buffer).
  enum class Beta : uint8_t { Zero, One, FirstZeroElseOne } beta = Beta::Zero;
  int a = -1, b = -1, c = -1; // buffers
  /// Epilogues (batch 1): `bias` [n] added to every row of the product
  /// (beta zero), or `biasGrad` [m] or [n], the sums of op(A) or op(B) over
  /// the contraction index, written beside C. Any float type; CUDA fuses
  /// them into cuBLASLt's product when they have C's.
  int bias = -1;
  /// With `gelu`, C is the tanh GELU of the product (plus bias) and `aux`
  /// the product itself (the preactivation), both of C's type. With
  /// `dgelu`, C is the product times gelu_tanh'(aux), aux read.
  bool gelu = false, dgelu = false;
  int aux = -1;
  enum class BiasGradOf : uint8_t { None, A, B } biasGradOf = BiasGradOf::None;
  int biasGrad = -1;
};

/// The leading dimension of `g`'s operand 'a', 'b' or 'c' as stored
/// (row-major): its pitch, or its row length.
int64_t leadingDim(const Gemm &g, char operand);

/// A kernel from the runtime's kernel library (runtime/include/otc/kernels),
/// instantiated with compile-time integers and the buffers' element types.
struct LibraryCall {
  /// The kernels the library has, one row each: the enumerator, the
  /// template's name in otc_kernels, whether it calls BLAS itself (on CUDA
  /// it then takes cuBLAS's handle before the stream), and the elements
  /// each of its pointer arguments spans (kernels/extents.h).
#define OTC_LIBRARY_KERNELS(X)                                                 \
  X(GatherBackward, "gather_backward", false, gather_backward_extents)         \
  X(Im2Col, "im2col", false, im2col_extents)                                   \
  X(Col2Im, "col2im", false, col2im_extents)                                   \
  X(ConvForward, "conv_forward", false, conv_forward_extents)                  \
  X(ConvDataGrad, "conv_data_grad", false, conv_data_grad_extents)             \
  X(ConvFilterGrad, "conv_filter_grad", false, conv_filter_grad_extents)       \
  X(MaxPool, "max_pool", false, max_pool_extents)                              \
  X(MaxPoolGrad, "max_pool_grad", false, max_pool_grad_extents)                \
  X(AvgPool, "avg_pool", false, avg_pool_extents)                              \
  X(AvgPoolGrad, "avg_pool_grad", false, avg_pool_grad_extents)                \
  X(AttentionForward, "attention_forward", false, attention_forward_extents)   \
  X(AttentionBackward, "attention_backward", false, attention_backward_extents) \
  X(LstmForward, "lstm_forward", true, lstm_forward_extents)                   \
  X(LstmBackward, "lstm_backward", true, lstm_backward_extents)                \
  X(GruForward, "gru_forward", true, gru_forward_extents)                      \
  X(GruBackward, "gru_backward", true, gru_backward_extents)                   \
  X(RnnForward, "rnn_forward", true, rnn_forward_extents)                      \
  X(RnnBackward, "rnn_backward", true, rnn_backward_extents)
  enum class Kernel : uint8_t {
#define OTC_KERNEL_ENUM(Kind, name, blas, extents) Kind,
    OTC_LIBRARY_KERNELS(OTC_KERNEL_ENUM)
#undef OTC_KERNEL_ENUM
  };
  Kernel kernel = Kernel::GatherBackward;
  std::vector<int64_t> constants;
  std::vector<int> buffers;
  /// Per buffer, elements from its start where the kernel's tensor begins
  /// (a row view: Lowering::rowView); empty for none.
  std::vector<int64_t> offsets;
  /// Run-time arguments after the buffers: integers, floats, or the
  /// window's first-micro-batch flag (for kernels that accumulate into
  /// gradients).
  struct Scalar {
    enum Kind : uint8_t { Int, First, Float } kind;
    int64_t value = 0;
    double real = 0; // Float
  };
  std::vector<Scalar> scalars;
  /// The trailing `outputs` buffers are written; the others are read.
  int outputs = 1;
};

struct Step {
  enum Kind : uint8_t { Elementwise, Reduce, RowReduce, Gemm, LibraryCall };
  Kind kind = Elementwise;
  std::string origin; // the op it came from
  bool recomputed = false; // that op is otc-recompute's copy (in the backward)

  /// Elementwise, Reduce, RowReduce: the iteration space, and which of its
  /// dims are reduced (RowReduce: one, usually the innermost).
  std::vector<int64_t> shape;
  std::vector<bool> reduced;
  std::vector<Node> nodes;
  std::vector<Reduction> reductions;
  std::vector<Store> stores;

  otc::Gemm gemm;
  otc::LibraryCall call;
  /// LibraryCall: the op's own FLOP count (its FlopsFact), for --profile.
  int64_t flops = 0;
};

/// A runtime-facing description of an input or parameter.
struct TensorDesc {
  std::string name;
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
  int64_t numClasses = 0; // > 0 for cross-entropy labels or gather indices
  bool hasIgnoreIndex = false;
  int64_t ignoreIndex = 0;
  bool negativeIndices = false; // gather indices: [-n, n) rather than [0, n)
  /// A plain function's argument: positional (argN), a named data input or
  /// a parameter read from the embedded model (otc_arg_role).
  int role = 0;
  /// A parameter's low-precision copy written by the optimizer update (F16
  /// or BF16), or F32 for none.
  ElemType lowType = ElemType::F32;
  /// A parameter the step writes itself (otc.assign).
  bool assigned = false;
  int init = 0; // an otc_init
  /// A frozen parameter (no gradient, not assigned) that the step reads only
  /// as its low-precision copy: the runtime keeps no float32 value of it
  /// on the device (LoRA's base under --precision fp16/bf16).
  bool lowOnly = false;
};

/// otc_lora: parameter indices of an adapter and its base.
struct LoraAdapter {
  int base = -1, a = -1, b = -1;
  double scale = 1;
  bool transposed = true;
};

struct Program {
  std::vector<Buffer> buffers;
  std::deque<Step> steps; // stable references while rules append
  int64_t arenaBytes = 0;
  int64_t microBatch = 0;
  std::vector<TensorDesc> inputs, params;
  std::vector<int> gradIndex; // per parameter: its gradient buffer, or -1
  int numGrads = 0;
  /// The input whose counted labels divide the loss (otc_program.token_labels).
  int tokenLabels = -1;
  /// 8-bit AdamW keeps float32 moments for smaller tensors (min_8bit_size).
  int64_t min8bitSize = 4096;
  std::vector<LoraAdapter> lora;
  /// For a plain function (not a training step): its arguments and results.
  std::vector<TensorDesc> arguments, results;
  /// The training step's loss-scaling policy (otc-loss-scaling), for the
  /// runtime.
  struct LossScale {
    otc_loss_scale_mode mode = OTC_LOSS_SCALE_NONE;
    double initScale = 1.0, minScale = 0.0;
    int64_t window = 2000, hysteresis = 1;
  } lossScale;
  /// What mixed precision and recompute chose, for the runtime's report.
  otc_precision precision = OTC_PRECISION_FP32;
  otc_recompute_policy recompute = OTC_RECOMPUTE_NONE;
  /// The most bytes of low-precision weight copies live at once in the arena.
  int64_t lowCopyBytes = 0;
  /// The library workspace the runtime allocates (cuBLAS's on CUDA).
  int64_t workspaceBytes = 0;
  /// Sets of input buffers the runtime rotates through (CUDA double-buffers
  /// them: Backend::inputSlots).
  int inputSlots = 1;
};

/// The buffers step `s` reads or writes.
std::vector<int> stepBuffers(const Step &s);
/// The buffers step `s` writes (a subset of stepBuffers).
std::vector<int> stepWrites(const Step &s);

/// The least bytes step `s` moves: each buffer element it reads, and each
/// it writes, once (train --profile's bandwidth).
int64_t stepBytes(const Program &p, const Step &s);
/// Its floating-point operations: per iteration point, one per arithmetic
/// node and reduction (for a row step's per-row nodes, an overcount: they
/// run once a row); 2mnk per product; a library call's op's own count
/// (attention's counts every query-key pair, causal or not).
int64_t stepFlops(const Step &s);
/// "elementwise", "reduce", "row_reduce", "gemm" or "library_call".
const char *kindName(Step::Kind k);

/// The program as text, for `otc compile --emit program`.
std::string printProgram(const Program &program);

/// Bytes that live through the whole step, outside the arena. Parameters,
/// gradients and optimizer state are float32; the state of each trained
/// parameter is optimizerStateBytes (kernels/adafactor.h), which the
/// runtime allocates.
struct PersistentBytes {
  int64_t params = 0, lowCopies = 0, grads = 0, optimizerState = 0, inputs = 0, constants = 0;
  int64_t workspace = 0; // cuBLAS's, on CUDA
  int64_t total() const {
    return params + lowCopies + grads + optimizerState + inputs + constants + workspace;
  }
};
PersistentBytes persistentBytes(const Program &program, otc_optimizer optimizer);

/// Bytes per category of the step's memory, which sum to the total: the
/// memory report `otc compile` prints.
std::string memoryReport(const Program &program, otc_optimizer optimizer);

/// The memory of a training step over its kernel program's steps
/// (MemoryTimeline.cpp): bytes that live throughout, and arena bytes live at
/// each step, by category; the peak step; where the backward begins.
struct MemoryTimeline {
  enum Category {
    Parameters, LowCopies, Gradients, OptimizerState, Inputs, Workspace, KeptActivations,
    Temporaries, Count
  };
  std::array<int64_t, Count> persistent{};
  std::vector<std::array<int64_t, Count>> live; // per step: arena bytes
  int64_t peakStep = -1, backwardStep = 0, arenaBytes = 0;
  /// Arena bytes written in the forward and read in the backward.
  int64_t keptBytes = 0;
  /// The least bytes the steps read and write (stepBytes), for auto-fit's
  /// time estimate.
  int64_t traffic = 0;

  static const char *name(int category);
  /// What is live at the peak, by category, summing to its total.
  std::string table(const Program &program) const;
  /// Stacked areas of live bytes per step, by category, as an SVG picture.
  std::string svg(const std::string &title) const;
};

MemoryTimeline memoryTimeline(const Program &program, otc_optimizer optimizer);

/// The library template `k` names (otc_kernels::NAME).
const char *kernelTemplate(LibraryCall::Kernel k);
/// Whether library kernel `k` calls BLAS itself.
bool kernelUsesBlas(LibraryCall::Kernel k);
/// The elements each buffer of `call` must hold from its offset, in order
/// (kernels/extents.h); empty where the kernel has no form with the call's
/// constants and buffers.
std::vector<int64_t> kernelExtents(const LibraryCall &call);
/// A library call's run-time scalar as C: `first`, or a literal.
std::string scalarText(const LibraryCall::Scalar &s);

/// Merges adjacent iteration dims that every access walks contiguously, so
/// an identity map becomes one flat loop. Keeps a RowReduce's last dim.
void collapseDims(Step &step);

} // namespace otc

#endif
