#include "AdafactorKernels.cuh"
#include "Backend.h"
#include "Collective.h"
#include "otc/runtime/cuda_check.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

namespace otc {
namespace {

/// One optimizer step; `low` (Low = float: none) receives the step's 16-bit
/// copy of the new values.
template <typename Low>
__global__ void updateKernel(OptimizerStep s, float *param, const float *grad,
                             float *m, float *v, Low *low, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  float m0 = 0.0f, v0 = 0.0f; // state this optimizer does not keep (null)
  if (i < n) {
    updateElement(s, param[i], grad[i], m ? m[i] : m0, v ? v[i] : v0);
    if constexpr (!std::is_same_v<Low, float>)
      otc_store(&low[i], param[i]);
  }
}

/// A block's share of a multi-tensor update: elements [begin, end) of span
/// `span`.
struct UpdateChunk {
  int64_t span, begin, end;
};
constexpr int64_t kUpdateChunk = 1 << 16;

/// Whether `p` (null: absent) lies on a `bytes` boundary.
__device__ __forceinline__ bool onBoundary(const void *p, unsigned bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Elements [at, at + 4) of span `u`: 16-byte loads and stores of the
/// value, gradient and state, 8 bytes of 16-bit copy; the element formula
/// of updateKernel, so the bits are the scalar loop's.
__device__ __forceinline__ void updateFour(const OptimizerStep &s, const Backend::UpdateSpan &u,
                                           int64_t at) {
  float4 p = *reinterpret_cast<const float4 *>(u.param + at);
  float4 g = *reinterpret_cast<const float4 *>(u.grad + at);
  float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float4 m = u.m ? *reinterpret_cast<const float4 *>(u.m + at) : z;
  float4 v = u.v ? *reinterpret_cast<const float4 *>(u.v + at) : z;
  updateElement(s, p.x, g.x, m.x, v.x);
  updateElement(s, p.y, g.y, m.y, v.y);
  updateElement(s, p.z, g.z, m.z, v.z);
  updateElement(s, p.w, g.w, m.w, v.w);
  *reinterpret_cast<float4 *>(u.param + at) = p;
  if (u.m)
    *reinterpret_cast<float4 *>(u.m + at) = m;
  if (u.v)
    *reinterpret_cast<float4 *>(u.v + at) = v;
  if (u.low && (u.lowDtype == OTC_F16 || u.lowDtype == OTC_BF16)) {
    const float four[4] = {p.x, p.y, p.z, p.w};
    if (u.lowDtype == OTC_F16)
      otc_vstore<4>(static_cast<otc_f16 *>(u.low) + at, 0, four);
    else
      otc_vstore<4>(static_cast<otc_bf16 *>(u.low) + at, 0, four);
  }
}

/// Every tensor's optimizer step in one launch: block b updates chunk b,
/// four elements per thread and access where the span's tensors allow it
/// (they start on 16-byte boundaries: cudaMalloc's and the gradient
/// block's), then the rest one by one, with the element formula of
/// updateKernel.
__global__ void updateManyKernel(OptimizerStep decay, OptimizerStep plain,
                                 const Backend::UpdateSpan *spans, const UpdateChunk *chunks) {
  UpdateChunk c = chunks[blockIdx.x];
  Backend::UpdateSpan u = spans[c.span];
  const OptimizerStep &s = u.decays ? decay : plain;
  int64_t from = c.begin;
  if (c.begin % 4 == 0 && onBoundary(u.param, 16) && onBoundary(u.grad, 16) &&
      onBoundary(u.m, 16) && onBoundary(u.v, 16) && onBoundary(u.low, 8)) {
    int64_t fours = (c.end - c.begin) / 4;
    for (int64_t q = threadIdx.x; q < fours; q += blockDim.x)
      updateFour(s, u, c.begin + 4 * q);
    from = c.begin + 4 * fours;
  }
  for (int64_t i = from + threadIdx.x; i < c.end; i += blockDim.x) {
    float m0 = 0.0f, v0 = 0.0f;
    updateElement(s, u.param[i], u.grad[i], u.m ? u.m[i] : m0, u.v ? u.v[i] : v0);
    if (u.low && u.lowDtype == OTC_F16)
      otc_store(static_cast<otc_f16 *>(u.low) + i, u.param[i]);
    else if (u.low && u.lowDtype == OTC_BF16)
      otc_store(static_cast<otc_bf16 *>(u.low) + i, u.param[i]);
  }
}

/// Sets *flag when any element is NaN or infinite (grid-stride).
__global__ void nonFiniteKernel(const float *p, int64_t n, int *flag) {
  bool bad = false;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    bad |= !isfinite(p[i]);
  if (__syncthreads_or(bad) && threadIdx.x == 0)
    *flag = 1;
}

/// Sums of squares over the `n` tensors of `spans` in one launch: block row
/// y takes tensors y, y + gridDim.y, ..., and each block writes its partial
/// sum; sumPartials adds them. No atomics, so the sum is reproducible.
__global__ void sumSquaresKernel(const Backend::Span *spans, int64_t n, double *partial) {
  double acc = 0;
  for (int64_t t = blockIdx.y; t < n; t += gridDim.y) {
    Backend::Span s = spans[t];
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < s.count;
         i += (int64_t)gridDim.x * blockDim.x)
      acc += double(s.data[i]) * double(s.data[i]);
  }
  double sum = adafactor::sum256(acc);
  if (threadIdx.x == 0)
    partial[blockIdx.y * gridDim.x + blockIdx.x] = sum;
}

/// Block-wise 8-bit AdamW (kernels/adamw8bit.h): CUDA block b takes
/// quantisation block b, each of its 256 threads 8 elements, with the code
/// maps in shared memory.
template <typename Low>
__global__ void adamw8bitKernel(OptimizerStep s, float *param, const float *grad, uint8_t *q1,
                                uint8_t *q2, float *absmax1, float *absmax2, Low *low, int64_t n,
                                const float *codes) {
  __shared__ float code1[256], code2[256], max1[256], max2[256];
  code1[threadIdx.x] = codes[threadIdx.x];
  code2[threadIdx.x] = codes[256 + threadIdx.x];
  __syncthreads();
  constexpr int kPer = kQuantBlock / 256;
  int64_t at = blockIdx.x * kQuantBlock;
  float a1 = absmax1[blockIdx.x], a2 = absmax2[blockIdx.x];
  float m[kPer], v[kPer], top1 = 0.0f, top2 = 0.0f;
  for (int k = 0; k < kPer; ++k) {
    int64_t i = at + k * 256 + threadIdx.x;
    if (i >= n)
      continue;
    m[k] = code1[q1[i]] * a1;
    v[k] = code2[q2[i]] * a2;
    updateElementOf<OTC_ADAMW>(s, param[i], grad[i], m[k], v[k]);
    if constexpr (!std::is_same_v<Low, float>)
      otc_store(&low[i], param[i]);
    top1 = fmaxf(top1, fabsf(m[k]));
    top2 = fmaxf(top2, fabsf(v[k]));
  }
  max1[threadIdx.x] = top1, max2[threadIdx.x] = top2;
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      max1[threadIdx.x] = fmaxf(max1[threadIdx.x], max1[threadIdx.x + half]);
      max2[threadIdx.x] = fmaxf(max2[threadIdx.x], max2[threadIdx.x + half]);
    }
    __syncthreads();
  }
  float inv1 = max1[0] > 0.0f ? 1.0f / max1[0] : 0.0f, inv2 = max2[0] > 0.0f ? 1.0f / max2[0] : 0.0f;
  for (int k = 0; k < kPer; ++k) {
    int64_t i = at + k * 256 + threadIdx.x;
    if (i < n) {
      q1[i] = nearestCode(code1, m[k] * inv1);
      q2[i] = nearestCode(code2, v[k] * inv2);
    }
  }
  if (threadIdx.x == 0)
    absmax1[blockIdx.x] = max1[0], absmax2[blockIdx.x] = max2[0];
}

class CudaBackend final : public Backend {
public:
  CudaBackend() {
    // Each data-parallel rank on a machine drives a GPU of its own.
    if (int local = localRank(); local >= 0) {
      int devices = 0;
      OTC_CUDA_CHECK(cudaGetDeviceCount(&devices));
      OTC_CUDA_CHECK(cudaSetDevice(local % std::max(devices, 1)));
    }
    // The context first, so that the baseline excludes it but counts cuBLAS.
    OTC_CUDA_CHECK(cudaFree(nullptr));
    size_t total = 0;
    OTC_CUDA_CHECK(cudaMemGetInfo(&freeAtStart, &total));
    OTC_CUBLAS_CHECK(cublasCreate(&handle));
    // cuBLAS's workspace is ours, of the size the memory plan counts.
    workspace = alloc(OTC_CUDA_WORKSPACE_BYTES);
    OTC_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, OTC_CUDA_WORKSPACE_BYTES));
    flag = static_cast<int *>(alloc(sizeof(int)));
    partials = static_cast<double *>(alloc(kGridX * kGridY * sizeof(double)));
    sumTotal = static_cast<double *>(alloc(2 * sizeof(double))); // the sum, then a loss
  }
  ~CudaBackend() override {
    for (Staging &st : staging) {
      if (st.pinned)
        cudaFreeHost(st.pinned);
      if (st.copied)
        cudaEventDestroy(st.copied), cudaEventDestroy(st.read);
    }
    if (copyStream)
      cudaStreamDestroy(copyStream);
    for (auto &[key, r] : replays)
      if (r.exec)
        cudaGraphExecDestroy(r.exec);
    if (captureStream)
      cudaStreamDestroy(captureStream);
    for (void *p : blocks)
      cudaFree(p);
    cublasDestroy(handle);
  }
  int inputSlots() const override { return 2; }
  // Slot X's copy for micro-batch j waits for step j - 2 (the last to read
  // set X, marked when slot X's partner was staged), and step j waits for
  // the copy; the host waits only for set X's previous copy out of its
  // pinned buffer, done while step j - 1 computed.
  void stageInputs(int slot, void *const *dst, const void *const *src, const size_t *bytes,
                   size_t n) override {
    if (!copyStream) {
      OTC_CUDA_CHECK(cudaStreamCreateWithFlags(&copyStream, cudaStreamNonBlocking));
      // Both sets were zeroed on stream 0 (alloc): the first copies follow.
      for (Staging &st : staging) {
        OTC_CUDA_CHECK(cudaEventCreateWithFlags(&st.copied, cudaEventDisableTiming));
        OTC_CUDA_CHECK(cudaEventCreateWithFlags(&st.read, cudaEventDisableTiming));
        OTC_CUDA_CHECK(cudaEventRecord(st.read, 0));
      }
    }
    Staging &st = staging[slot], &other = staging[1 - slot];
    OTC_CUDA_CHECK(cudaEventRecord(other.read, 0)); // every step so far, the other set's
    OTC_CUDA_CHECK(cudaEventSynchronize(st.copied));
    size_t total = 0;
    for (size_t i = 0; i < n; ++i)
      total += bytes[i];
    if (total > st.pinnedBytes) {
      if (st.pinned)
        OTC_CUDA_CHECK(cudaFreeHost(st.pinned));
      st.pinned = nullptr;
      cudaError_t err = cudaMallocHost(&st.pinned, total);
      if (err == cudaErrorMemoryAllocation)
        throw Fatal{"out of pinned host memory allocating " + std::to_string(total) + " bytes"};
      OTC_CUDA_CHECK(err);
      st.pinnedBytes = total;
    }
    char *pinned = static_cast<char *>(st.pinned);
    for (size_t i = 0, at = 0; i < n; at += bytes[i++])
      std::memcpy(pinned + at, src[i], bytes[i]);
    OTC_CUDA_CHECK(cudaStreamWaitEvent(copyStream, st.read, 0));
    for (size_t i = 0, at = 0; i < n; at += bytes[i++])
      OTC_CUDA_CHECK(
          cudaMemcpyAsync(dst[i], pinned + at, bytes[i], cudaMemcpyHostToDevice, copyStream));
    OTC_CUDA_CHECK(cudaEventRecord(st.copied, copyStream));
    OTC_CUDA_CHECK(cudaStreamWaitEvent(0, st.copied, 0));
  }
  const char *name() const override { return "cuda"; }
  void *alloc(size_t bytes) override {
    void *p = nullptr;
    cudaError_t err = cudaMalloc(&p, bytes ? bytes : 1);
    if (err == cudaErrorMemoryAllocation)
      throw Fatal{"out of GPU memory allocating " + std::to_string(bytes) + " bytes"};
    OTC_CUDA_CHECK(err);
    blocks.push_back(p);
    allocated += bytes;
    OTC_CUDA_CHECK(cudaMemset(p, 0, bytes ? bytes : 1));
    return p;
  }
  void toDevice(void *dst, const void *src, size_t bytes) override {
    OTC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
  void fill(void *dst, unsigned char value, size_t bytes) override {
    OTC_CUDA_CHECK(cudaMemset(dst, value, bytes));
  }
  void toHost(void *dst, const void *src, size_t bytes) override {
    OTC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
  void *blas() override { return handle; }
  void *blasWorkspace() override { return workspace; }
  void update(const OptimizerStep &s, float *param, const float *grad, float *m,
              float *v, void *low, int lowDtype, int64_t n) override {
    unsigned grid = (unsigned)((n + 255) / 256);
    if (low && lowDtype == OTC_F16)
      updateKernel<<<grid, 256>>>(s, param, grad, m, v, static_cast<otc_f16 *>(low), n);
    else if (low && lowDtype == OTC_BF16)
      updateKernel<<<grid, 256>>>(s, param, grad, m, v, static_cast<otc_bf16 *>(low), n);
    else
      updateKernel<<<grid, 256>>>(s, param, grad, m, v, (float *)nullptr, n);
    OTC_CUDA_CHECK(cudaGetLastError());
  }
  void updateMany(const OptimizerStep &decay, const OptimizerStep &plain,
                  const std::vector<UpdateSpan> &spans) override {
    if (spans.empty())
      return;
    if (spans.size() != updateSpans.size() ||
        std::memcmp(updateSpans.data(), spans.data(), spans.size() * sizeof(UpdateSpan)) != 0) {
      updateSpans = spans;
      std::vector<UpdateChunk> chunks;
      for (size_t t = 0; t < spans.size(); ++t)
        for (int64_t at = 0; at < spans[t].count; at += kUpdateChunk)
          chunks.push_back({int64_t(t), at, std::min(spans[t].count, at + kUpdateChunk)});
      size_t bytes = spans.size() * sizeof(UpdateSpan) + chunks.size() * sizeof(UpdateChunk);
      if (bytes > updateTableBytes) {
        updateTable = static_cast<char *>(alloc(bytes));
        updateTableBytes = bytes;
      }
      toDevice(updateTable, spans.data(), spans.size() * sizeof(UpdateSpan));
      toDevice(updateTable + spans.size() * sizeof(UpdateSpan), chunks.data(),
               chunks.size() * sizeof(UpdateChunk));
      updateChunks = chunks.size();
    }
    if (updateChunks == 0)
      return;
    const auto *table = reinterpret_cast<const UpdateSpan *>(updateTable);
    updateManyKernel<<<(unsigned)updateChunks, 256>>>(
        decay, plain, table,
        reinterpret_cast<const UpdateChunk *>(updateTable + spans.size() * sizeof(UpdateSpan)));
    OTC_CUDA_CHECK(cudaGetLastError());
  }
  bool anyNonFinite(const float *p, int64_t n) override {
    OTC_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int)));
    int64_t grid = std::min<int64_t>((n + 255) / 256, 1024);
    nonFiniteKernel<<<(unsigned)std::max<int64_t>(grid, 1), 256>>>(p, n, flag);
    OTC_CUDA_CHECK(cudaGetLastError());
    int host = 0;
    OTC_CUDA_CHECK(cudaMemcpy(&host, flag, sizeof(int), cudaMemcpyDeviceToHost));
    return host != 0;
  }
  double sumOfSquares(const std::vector<Span> &spans) override {
    if (spans.empty())
      return 0;
    launchSumOfSquares(spans);
    double host = 0;
    OTC_CUDA_CHECK(cudaMemcpy(&host, sumTotal, sizeof(double), cudaMemcpyDeviceToHost));
    return host;
  }
  void readLossAndSumOfSquares(const float *loss, const std::vector<Span> &spans, float &lossOut,
                               double &sumSquares) override {
    if (spans.empty())
      OTC_CUDA_CHECK(cudaMemsetAsync(sumTotal, 0, sizeof(double)));
    else
      launchSumOfSquares(spans);
    // The loss beside the sum (sumTotal is a double then a float), one read.
    OTC_CUDA_CHECK(cudaMemcpyAsync(sumTotal + 1, loss, sizeof(float), cudaMemcpyDeviceToDevice));
    unsigned char both[sizeof(double) + sizeof(float)];
    OTC_CUDA_CHECK(cudaMemcpy(both, sumTotal, sizeof both, cudaMemcpyDeviceToHost));
    std::memcpy(&sumSquares, both, sizeof(double));
    std::memcpy(&lossOut, both + sizeof(double), sizeof(float));
  }
  /// The sum of squares' kernels, leaving the total at sumTotal.
  void launchSumOfSquares(const std::vector<Span> &spans) {
    // The table is copied once: the gradient buffers do not move.
    if (spans.size() != hostTable.size() ||
        std::memcmp(hostTable.data(), spans.data(), spans.size() * sizeof(Span)) != 0) {
      hostTable = spans;
      if (spans.size() > tableSize) {
        spansTable = static_cast<Span *>(alloc(spans.size() * sizeof(Span)));
        tableSize = spans.size();
      }
      toDevice(spansTable, spans.data(), spans.size() * sizeof(Span));
      most = 1;
      for (const Span &s : spans)
        most = std::max(most, s.count);
    }
    unsigned gx = (unsigned)std::min<int64_t>((most + 255) / 256, kGridX);
    unsigned gy = (unsigned)std::min<size_t>(spans.size(), kGridY);
    sumSquaresKernel<<<dim3(gx, gy), 256>>>(spansTable, (int64_t)spans.size(), partials);
    OTC_CUDA_CHECK(cudaGetLastError());
    adafactor::sumPartials<<<1, 256>>>(partials, int(gx * gy), sumTotal);
    OTC_CUDA_CHECK(cudaGetLastError());
  }
  void adamw8bit(const OptimizerStep &s, float *param, const float *grad, uint8_t *q1, uint8_t *q2,
                 float *absmax1, float *absmax2, void *low, int lowDtype, int64_t n) override {
    if (!codes) { // the code maps, once, for the kernel to stage in shared memory
      codes = static_cast<float *>(alloc(512 * sizeof(float)));
      toDevice(codes, kDynamicMapSigned, 256 * sizeof(float));
      toDevice(codes + 256, kDynamicMapUnsigned, 256 * sizeof(float));
    }
    unsigned grid = (unsigned)quantBlocks(n);
    if (low && lowDtype == OTC_F16)
      adamw8bitKernel<<<grid, 256>>>(s, param, grad, q1, q2, absmax1, absmax2, static_cast<otc_f16 *>(low), n, codes);
    else if (low && lowDtype == OTC_BF16)
      adamw8bitKernel<<<grid, 256>>>(s, param, grad, q1, q2, absmax1, absmax2, static_cast<otc_bf16 *>(low), n, codes);
    else
      adamw8bitKernel<<<grid, 256>>>(s, param, grad, q1, q2, absmax1, absmax2, (float *)nullptr, n, codes);
    OTC_CUDA_CHECK(cudaGetLastError());
  }
  void adafactor(const AdafactorStep &s, const AdafactorShape &sh, float *param, const float *grad,
                 float *row, float *col, float *expAvg, void *low, int lowDtype) override {
    // Scratch: two sums, the partial sums, and a row mean per leading index.
    size_t need = (2 + adafactor::kPartials) * sizeof(double) + size_t(sh.lead) * sizeof(float);
    if (need > scratchBytes) {
      scratch = static_cast<double *>(alloc(need));
      scratchBytes = need;
    }
    adafactor::step(s, sh, param, grad, row, col, expAvg, low, lowDtype, scratch);
  }
  void copy(void *dst, const void *src, size_t bytes) override {
    OTC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  }
  void markTime(int i, void *stream = nullptr) override {
    while (marks.size() <= size_t(i)) {
      cudaEvent_t e;
      OTC_CUDA_CHECK(cudaEventCreate(&e));
      marks.push_back(e);
    }
    OTC_CUDA_CHECK(cudaEventRecord(marks[size_t(i)], static_cast<cudaStream_t>(stream)));
  }
  std::vector<double> markedSeconds(int n) override {
    std::vector<double> s(static_cast<size_t>(n));
    OTC_CUDA_CHECK(cudaEventSynchronize(marks[size_t(n - 1)]));
    for (size_t i = 1; i < s.size(); ++i) {
      float ms = 0;
      OTC_CUDA_CHECK(cudaEventElapsedTime(&ms, marks[0], marks[i]));
      s[i] = ms * 1e-3;
    }
    return s;
  }
  double copyBytesPerSecond() override {
    const size_t bytes = size_t(256) << 20;
    void *a = nullptr, *b = nullptr;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      cudaFree(a);
      return 0; // no room left: the report shows no fraction of copy
    }
    OTC_CUDA_CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)); // warm-up
    const int reps = 10;
    markTime(0);
    for (int r = 0; r < reps; ++r)
      OTC_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
    markTime(1);
    double seconds = markedSeconds(2)[1];
    OTC_CUDA_CHECK(cudaFree(a));
    OTC_CUDA_CHECK(cudaFree(b));
    return seconds > 0 ? 2.0 * double(bytes) * reps / seconds : 0;
  }
  std::string deviceName() override {
    int device = 0;
    cudaDeviceProp p;
    OTC_CUDA_CHECK(cudaGetDevice(&device));
    OTC_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    return p.name;
  }
  void useGraphs(bool on) override { graphs = on; }
  // Every pointer in the arguments but the inputs' is fixed for the run,
  // and the scalars the kernels read are set before each replay: a graph
  // per input set (the array's address) and first flag. The first run of
  // each is eager, so cuBLASLt's and cuDNN's plans and workspaces exist
  // before a capture. The last micro-batch of a data-parallel window calls
  // back into the host (grad_ready) and stays eager.
  void runStep(const otc_program &prog, const otc_step_args &args) override {
    if (!graphs || !prog.body || !prog.set_scalars || args.grad_ready) {
      prog.step(&args);
      return;
    }
    Replay &r = replays[{static_cast<const void *>(args.inputs), args.first != 0}];
    if (r.runs++ == 0 || r.eager) {
      prog.step(&args);
      return;
    }
    if (!r.exec && !capture(prog, args, r)) {
      prog.step(&args);
      return;
    }
    prog.set_scalars(&args); // on the default stream, before the replay
    OTC_CUDA_CHECK(cudaGraphLaunch(r.exec, 0));
  }

  std::string deviceMemoryNote() override {
    size_t free = 0, total = 0;
    OTC_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    long long grew = (long long)freeAtStart - (long long)free;
    return "device memory in use grew by " + std::to_string(grew) +
           " bytes since start (kernel images, cuBLAS's own state and allocation rounding "
           "included)";
  }

private:
  size_t freeAtStart = 0;
  cublasHandle_t handle;
  void *workspace = nullptr;
  std::vector<void *> blocks;
  int *flag = nullptr;
  // The sum of squares' grid, at most kGridX x kGridY blocks, and its
  // per-block partial sums and total on the device.
  static constexpr unsigned kGridX = 128, kGridY = 64;
  double *partials = nullptr, *sumTotal = nullptr;
  double *scratch = nullptr; // Adafactor's
  float *codes = nullptr;    // 8-bit AdamW's code maps
  size_t scratchBytes = 0;
  Span *spansTable = nullptr; // on the device
  size_t tableSize = 0;
  std::vector<Span> hostTable;
  // Double-buffered inputs: per set, its pinned host copy, the event of its
  // last copy and that of the last step to read it.
  struct Staging {
    void *pinned = nullptr;
    size_t pinnedBytes = 0;
    cudaEvent_t copied = nullptr, read = nullptr;
  } staging[2];
  cudaStream_t copyStream = nullptr;
  // The multi-tensor update's spans and chunks on the device, and as last
  // copied.
  char *updateTable = nullptr;
  size_t updateTableBytes = 0, updateChunks = 0;
  std::vector<UpdateSpan> updateSpans;
  int64_t most = 1; // the table's largest tensor
  // --cuda-graphs: the step body's graph per input set and first flag.
  struct Replay {
    int64_t runs = 0;
    cudaGraphExec_t exec = nullptr;
    bool eager = false; // capture failed
  };
  /// Captures the body of `args`' step into r.exec; false, with one note,
  /// where CUDA refuses (the key then stays eager).
  bool capture(const otc_program &prog, const otc_step_args &args, Replay &r) {
    if (!captureStream)
      OTC_CUDA_CHECK(cudaStreamCreateWithFlags(&captureStream, cudaStreamNonBlocking));
    otc_step_args c = args;
    c.stream = captureStream;
    cudaGraph_t graph = nullptr;
    cudaError_t err = cudaStreamBeginCapture(captureStream, cudaStreamCaptureModeRelaxed);
    if (err == cudaSuccess) {
      prog.body(&c);
      err = cudaStreamEndCapture(captureStream, &graph);
    }
    if (err == cudaSuccess)
      err = cudaGraphInstantiate(&r.exec, graph, 0);
    if (graph)
      cudaGraphDestroy(graph);
    // The handle back on the default stream, with the planned workspace.
    OTC_CUBLAS_CHECK(cublasSetStream(handle, 0));
    OTC_CUBLAS_CHECK(cublasSetWorkspace(handle, workspace, OTC_CUDA_WORKSPACE_BYTES));
    if (err == cudaSuccess)
      return true;
    (void)cudaGetLastError();
    r.exec = nullptr;
    r.eager = true;
    std::fprintf(stderr, "train: note: CUDA could not capture the step as a graph (%s); it runs "
                         "kernel by kernel\n",
                 cudaGetErrorString(err));
    return false;
  }
  bool graphs = false;
  std::vector<cudaEvent_t> marks; // --profile's clock
  std::map<std::pair<const void *, bool>, Replay> replays;
  cudaStream_t captureStream = nullptr;
};

} // namespace

std::unique_ptr<Backend> makeBackend() { return std::make_unique<CudaBackend>(); }

} // namespace otc
