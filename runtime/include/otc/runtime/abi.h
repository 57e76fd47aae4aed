/* The contract between a generated training step and the runtime linked
 * with it. Plain C so both g++ and nvcc accept it. */
#ifndef OTC_RUNTIME_ABI_H
#define OTC_RUNTIME_ABI_H

#include <stdint.h>

#include "otc/runtime/limits.h"

#ifdef __cplusplus
extern "C" {
#endif

enum otc_dtype { OTC_F32 = 0, OTC_I64 = 1, OTC_F16 = 2, OTC_BF16 = 3, OTC_BOOL = 4 };

/* The compile's policies. Each has the cases of the IR's enum attribute of
 * the same name (OtcEnums.td), value for value: codegen/AbiEnums.h checks it
 * at compile time. */

/* The loss-scaling policy: none, a static scale, or GradScaler's dynamic
 * rules (LossScaleModeAttr). */
typedef enum otc_loss_scale_mode {
  OTC_LOSS_SCALE_NONE = 0,
  OTC_LOSS_SCALE_STATIC = 1,
  OTC_LOSS_SCALE_DYNAMIC = 2
} otc_loss_scale_mode;

/* The step's compute precision; parameters stay float32 (PrecisionAttr). */
typedef enum otc_precision {
  OTC_PRECISION_FP32 = 0,
  OTC_PRECISION_FP16 = 1,
  OTC_PRECISION_BF16 = 2
} otc_precision;

/* What otc-recompute recomputes in the backward (RecomputePolicyAttr). */
typedef enum otc_recompute_policy {
  OTC_RECOMPUTE_NONE = 0,
  OTC_RECOMPUTE_SELECTIVE = 1,
  OTC_RECOMPUTE_BLOCKS = 2,
  OTC_RECOMPUTE_SQRT = 3,
  OTC_RECOMPUTE_BUDGET = 4
} otc_recompute_policy;

/* The optimizers the runtime implements. */
typedef enum otc_optimizer {
  OTC_SGD = 0,
  OTC_MOMENTUM = 1,
  OTC_ADAM = 2,
  OTC_ADAMW = 3,
  OTC_ADAFACTOR = 4, /* per tensor, in the runtime (kernels/adafactor.h) */
  OTC_ADAMW8BIT = 5  /* bitsandbytes' block-wise 8-bit AdamW (kernels/adamw8bit.h) */
} otc_optimizer;

typedef struct otc_tensor_desc {
  const char *name;
  int dtype;
  int rank;
  int64_t shape[OTC_MAX_RANK];
  /* Class labels of a cross-entropy, or gather indices: each value must
   * lie in [0, num_classes) (or [-num_classes, num_classes) when
   * negative_indices), or equal ignore_index (when has_ignore_index). */
  int64_t num_classes; /* 0: not labels or indices */
  int64_t ignore_index;
  int has_ignore_index;
  int negative_indices;
  /* Parameters: the dtype (OTC_F16 or OTC_BF16) of the low-precision copy
   * that the optimizer update writes beside the float32 value and the step
   * reads (otc_step_args.low_params); 0 for none. */
  int low_dtype;
  /* Parameters: nonzero when the step writes it itself (otc.assign:
   * BatchNorm's running statistics). The runtime restores such a parameter
   * when a window's step is skipped. */
  int assigned;
  /* Parameters not in the model, initialised by the runtime (LoRA's A and
   * B): an otc_init. */
  int init;
  /* Parameters: nonzero when frozen and read by the step only as the low-
   * precision copy (LoRA's base under fp16/bf16). The runtime keeps its
   * float32 values on the host, for --save, and on the device only for
   * evaluation (--eval-data); otherwise params[i] is null. */
  int low_only;
} otc_tensor_desc;

enum otc_init { OTC_INIT_MODEL = 0, OTC_INIT_ZEROS = 1, OTC_INIT_KAIMING_UNIFORM = 2 };

/* A LoRA adapter (otc-insert-lora): parameters a [r, in] and b [out, r] of
 * base weight `base`, whose saved value is base + scale (b a), or its
 * transpose when the base is stored [in, out] (transposed == 0). */
typedef struct otc_lora {
  int base, a, b;
  double scale;
  int transposed;
} otc_lora;

/* Pointers are device pointers on the CUDA target. */
typedef struct otc_step_args {
  char *arena;
  void *const *inputs;
  float *const *params;
  float *const *grads;
  float *loss;   /* one float: the window's objective times the loss scale,
                  the sum over its micro-batches of seed x the micro-
                  batch's loss (set on the first, added after) */
  float seed;    /* gradient of the objective with respect to the loss */
  int first;     /* nonzero on the first micro-batch of a window */
  void *blas;    /* cublasHandle_t on CUDA, unused on CPU */
  /* Dropout's counter-based generator: the run's seed (--seed) and the
   * micro-batch's index in the run. */
  unsigned long long rng_seed;
  unsigned long long rng_offset;
  /* Per parameter: its low-precision copy (see low_dtype), or null. */
  void *const *low_params;
  /* When not null, called with gradient buffer g as soon as the step has
   * done with it (after the last kernel that reads or writes it is issued;
   * on CUDA, final in stream order): data parallelism starts its
   * all-reduce then, overlapping the rest of the backward. */
  void (*grad_ready)(void *ctx, int g);
  void *grad_ready_ctx;
  /* cuBLAS's workspace (OTC_CUDA_WORKSPACE_BYTES) on CUDA, which its
   * cuBLASLt calls share; null on the CPU. */
  void *blas_workspace;
  /* CUDA: the stream the step's work goes to (a cudaStream_t; null: the
   * legacy default stream, the runtime's). */
  void *stream;
  /* train --profile: when not null, called before step k of the program
   * (k = 0 .. num_steps - 1) and once more with num_steps after the last,
   * in stream order on CUDA (the runtime then runs no CUDA graph). */
  void (*mark)(void *ctx, int k);
  void *mark_ctx;
} otc_step_args;

/* What train --profile reports of one step of the program. */
typedef struct otc_step_info {
  const char *op;   /* the otc op it came from */
  const char *kind; /* elementwise, reduce, row_reduce, gemm or library_call */
  int64_t bytes;    /* the bytes it must read and write at least: each
                       buffer element touched, once per read and per write */
  int64_t flops;    /* floating-point operations (a multiply-add is two) */
  int recomputed;   /* from otc-recompute's copy of the op */
} otc_step_info;

typedef struct otc_program {
  const char *target; /* "cpu" or "cuda" */
  int64_t micro_batch;
  int num_inputs;
  const otc_tensor_desc *inputs;
  int num_params;
  const otc_tensor_desc *params;
  const int *grad_index; /* per parameter: its gradient buffer, or -1 */
  int num_grads;
  int64_t arena_bytes;
  int optimizer; /* an otc_optimizer */
  void (*step)(const otc_step_args *);
  void (*set_threads)(int); /* CPU threads for kernels and BLAS; may be null */
  /* The CPU optimizer update (otc::OptimizerStep at `step`); null on CUDA.
   * It also writes the parameter's low-precision copy `low` (of the dtype
   * low_dtype) when that is not null. */
  void (*update)(const void *step, float *param, const float *grad, float *m,
                 float *v, void *low, int low_dtype, int64_t n);
  /* Loss scaling (otc-loss-scaling). The seed is scale / k; updates
   * multiply by 1/scale. */
  otc_loss_scale_mode loss_scale_mode;
  double init_scale;
  int64_t scale_window, scale_hysteresis;
  double min_scale;
  /* --accum-steps when not given: the K that otc compile's auto-fit chose
   * (--global-batch), else 1. */
  int64_t default_accum_steps;
  /* What the compile chose, for the run's report. */
  otc_precision precision;
  otc_recompute_policy recompute;
  /* The input whose labels not equal to their ignore_index are the loss's
   * divisor (the loss is a mean cross-entropy over them), or -1. The
   * runtime then weights each micro-batch by its share of the window's
   * counted labels. */
  int token_labels;
  /* OTC_ADAMW8BIT: tensors with fewer elements keep float32 moments. */
  int64_t min_8bit_size;
  int num_lora;
  const otc_lora *lora;
  /* The num_grads gradient buffers in the order the step has done with
   * them (grad_ready's order; buffers the step never touches last). */
  const int *grad_order;
  /* CUDA (null on the CPU): step is set_scalars then body. set_scalars
   * stores seed, rng_seed and rng_offset in device memory, where the
   * body's kernels read them, so the body, captured once in a CUDA graph
   * per input set and first flag, replays with new values. */
  void (*set_scalars)(const otc_step_args *);
  void (*body)(const otc_step_args *);
  /* The step's steps, in order, for train --profile. */
  int num_steps;
  const otc_step_info *steps;
} otc_program;

/* What a plain function's argument is: positional (otc kernel: argN.npy),
 * a named data input (--forward-only: NAME.npy) or a parameter, read from
 * the embedded model. */
enum otc_arg_role { OTC_ARG_POSITIONAL = 0, OTC_ARG_INPUT = 1, OTC_ARG_PARAM = 2 };

/* A plain function (otc kernel, otc compile --forward-only): arguments in,
 * results out, no training. */
typedef struct otc_function_args {
  char *arena;
  void *const *args;
  void *const *results;
  void *blas;
  void *blas_workspace; /* as otc_step_args' */
} otc_function_args;

typedef struct otc_function {
  const char *target;
  int64_t micro_batch; /* forward-only: samples per run; 0 for otc kernel */
  int num_args;
  const otc_tensor_desc *args;
  const int *arg_roles; /* per argument, an otc_arg_role */
  int num_results;
  const otc_tensor_desc *results;
  int64_t arena_bytes;
  void (*run)(const otc_function_args *);
  void (*set_threads)(int);
} otc_function;

/* Defined by the generated code: one of the two. */
const otc_program *otc_get_program(void);
const otc_function *otc_get_function(void);

/* The ONNX model, embedded so the runtime can read the initial parameter
 * values and write the trained model. Unless compiled with --embed-weights,
 * the parameters' initializers hold no values: the runtime reads them from
 * the file named by the metadata entry OTC_WEIGHTS_FILE_KEY, where a copy
 * that otc made is held under its source's name (OTC_WEIGHTS_ALIASES_KEY:
 * lines "COPY\tSOURCE"). Keys with OTC_WEIGHTS_KEY_PREFIX are the
 * runtime's: the compiler drops a model's own, and --save leaves them out. */
#define OTC_WEIGHTS_KEY_PREFIX "otc.weights"
#define OTC_WEIGHTS_FILE_KEY "otc.weights.file"
#define OTC_WEIGHTS_ALIASES_KEY "otc.weights.aliases"
/* Initializers that are not parameters, and Constant nodes' values (named
 * by the node's output), that hold OTC_EMBED_CONSTANT_BYTES or more (a
 * causal mask per layer) are left out too, their values baked into the
 * program where it reads them: lines "NAME\tBYTES\tFNV" (the
 * 64-bit FNV-1a of their little-endian bytes, in hex), which a run that
 * saves the model reads back from the compiled-from file and checks. */
#define OTC_WEIGHTS_CONSTANTS_KEY "otc.weights.constants"
#define OTC_EMBED_CONSTANT_BYTES 65536
extern const unsigned char otc_model_begin[];
extern const unsigned char otc_model_end[];

#ifdef __cplusplus
}
#endif

#endif /* OTC_RUNTIME_ABI_H */
