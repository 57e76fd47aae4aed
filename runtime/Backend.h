// Where tensors live and how the optimizer runs: host memory and loops, or
// device memory and kernels. Each executable links exactly one backend.
#ifndef OTC_RUNTIME_BACKEND_H
#define OTC_RUNTIME_BACKEND_H

#include "otc/kernels/adafactor.h"
#include "otc/kernels/adamw8bit.h"
#include "otc/kernels/optimizer.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace otc {

class Backend {
public:
  virtual ~Backend() = default;
  virtual const char *name() const = 0;
  /// Zero-initialised memory, released with the backend; throws Fatal when
  /// none is left.
  virtual void *alloc(size_t bytes) = 0;
  virtual void toDevice(void *dst, const void *src, size_t bytes) = 0;
  /// Sets `bytes` bytes at `dst` to `value`.
  virtual void fill(void *dst, unsigned char value, size_t bytes) = 0;
  virtual void toHost(void *dst, const void *src, size_t bytes) = 0;
  /// The BLAS handle generated code receives (null on the CPU).
  virtual void *blas() = 0;
  /// cuBLAS's workspace, which the step's cuBLASLt calls share; null on the CPU.
  virtual void *blasWorkspace() { return nullptr; }
  /// Applies one optimizer step to `n` elements; `m` and `v` are its state.
  /// `low` (null for none) receives the new values rounded to `lowDtype`.
  virtual void update(const OptimizerStep &s, float *param, const float *grad,
                      float *m, float *v, void *low, int lowDtype, int64_t n) = 0;
  /// One tensor of a multi-tensor update; `decays` picks the step with
  /// weight decay.
  struct UpdateSpan {
    float *param;
    const float *grad;
    float *m, *v;
    void *low;
    int lowDtype;
    int decays;
    int64_t count;
  };
  /// One optimizer step of every tensor in `spans`: CUDA runs them all in
  /// one launch (the chunk table is copied when the spans change, so once);
  /// the default calls update() per tensor. The same element formula
  /// either way, so the bits are the same.
  virtual void updateMany(const OptimizerStep &decay, const OptimizerStep &plain,
                          const std::vector<UpdateSpan> &spans) {
    for (const UpdateSpan &u : spans)
      update(u.decays ? decay : plain, u.param, u.grad, u.m, u.v, u.low, u.lowDtype, u.count);
  }
  /// The generated program's CPU update, used by backends that take one.
  virtual void setUpdateKernel(decltype(otc_program::update)) {}
  /// Whether any of the `n` floats at `p` is NaN or infinite.
  virtual bool anyNonFinite(const float *p, int64_t n) = 0;
  /// The sum of squares, in double, of every element of many tensors (the
  /// gradient buffers, every step): their global L2 norm squared, and not
  /// finite exactly when an element is not (double holds any float32's
  /// square). CUDA reduces them all in one deterministic pass and reads one
  /// number.
  struct Span {
    const float *data;
    int64_t count;
  };
  virtual double sumOfSquares(const std::vector<Span> &spans) = 0;
  /// The window's two numbers in one read: the float the step summed at
  /// `loss` (device memory) and sumOfSquares(spans). CUDA reads both in one
  /// copy, the step's only synchronisation.
  virtual void readLossAndSumOfSquares(const float *loss, const std::vector<Span> &spans,
                                       float &lossOut, double &sumSquares) {
    toHost(&lossOut, loss, sizeof(float));
    sumSquares = sumOfSquares(spans);
  }
  /// One Adafactor step of a parameter (kernels/adafactor.h): `row` and
  /// `col` its factored second moment (or `row` the full one, `col` null),
  /// `expAvg` its first moment or null.
  virtual void adafactor(const AdafactorStep &s, const AdafactorShape &sh, float *param,
                         const float *grad, float *row, float *col, float *expAvg, void *low,
                         int lowDtype) = 0;
  /// One 8-bit AdamW step (kernels/adamw8bit.h): `q1`, `q2` the moments'
  /// codes, `absmax1`, `absmax2` their per-block scales.
  virtual void adamw8bit(const OptimizerStep &s, float *param, const float *grad, uint8_t *q1,
                         uint8_t *q2, float *absmax1, float *absmax2, void *low, int lowDtype,
                         int64_t n) = 0;
  /// How many sets of input buffers the step's inputs rotate through: CUDA
  /// double-buffers them, so a micro-batch is copied while the one before
  /// computes.
  virtual int inputSlots() const { return 1; }
  /// Copies a micro-batch's `n` host buffers `src` (of `bytes` each) into
  /// input set `slot`'s device buffers `dst`, for the step launched next.
  /// CUDA copies through pinned memory on a stream of its own, after the
  /// step that last read the set and before the next step starts.
  virtual void stageInputs(int slot, void *const *dst, const void *const *src,
                           const size_t *bytes, size_t n) {
    (void)slot;
    for (size_t i = 0; i < n; ++i)
      toDevice(dst[i], src[i], bytes[i]);
  }
  /// Runs one micro-batch of the step. CUDA with useGraphs(true) replays
  /// a CUDA graph of the step's body per input set and first flag, captured
  /// at its second run (the first builds the libraries' plans).
  virtual void runStep(const otc_program &prog, const otc_step_args &args) { prog.step(&args); }
  virtual void useGraphs(bool) {}
  /// train --profile: a clock in the order of the step's work. markTime(i,
  /// stream) notes when the work issued so far to `stream` is done (CUDA:
  /// an event there; null: the default stream); markedSeconds(n) waits for
  /// marks 0 .. n-1 and gives each one's seconds after mark 0.
  virtual void markTime(int i, void *stream = nullptr) = 0;
  virtual std::vector<double> markedSeconds(int n) = 0;
  /// Read plus write bytes per second of a copy of 256 MiB within the
  /// device (the CPU: memcpy on one thread), the bandwidth kernels are set
  /// against; and the device's name.
  virtual double copyBytesPerSecond() = 0;
  virtual std::string deviceName() = 0;
  /// Copies `bytes` bytes between two allocations of this backend.
  virtual void copy(void *dst, const void *src, size_t bytes) = 0;
  /// Bytes requested through alloc() so far.
  size_t allocatedBytes() const { return allocated; }
  /// What the device reports beyond allocatedBytes() (CUDA: the growth of
  /// device memory in use since the backend started, which also counts
  /// cuBLAS's workspace); empty where nothing more is known.
  virtual std::string deviceMemoryNote() { return ""; }

protected:
  size_t allocated = 0;
};

/// An error that ends the run: main prints `message` and exits with `code`.
struct Fatal {
  std::string message;
  int code = 1;
};

std::unique_ptr<Backend> makeBackend();

} // namespace otc

#endif
