// cuDNN, opened at a step's first call of it (so an executable starts on a
// machine without libcudnn.so.9) and shared by attention and convolution.
#ifndef OTC_RUNTIME_CUDNNLIBRARY_H
#define OTC_RUNTIME_CUDNNLIBRARY_H

#include <cudnn.h>
#include <cudnn_frontend.h>

#include <cstdint>
#include <unordered_map>

namespace otc {

/// A new cuDNN handle in `handle`, opening libcudnn.so.9 for
/// cudnn-frontend on the first call; false, with one note naming `what`
/// ("attention runs otc's kernels"), where cuDNN does not start.
bool startCudnn(cudnnHandle_t &handle, const char *what);

/// The most workspace one cuDNN plan may take: OTC_CUDNN_WORKSPACE_MB MiB
/// (1024 when unset); cuDNN then picks among the plans that need less, or
/// declines the shape. (cuDNN's deterministic attention backward takes
/// b h T S 2 bytes before cuDNN 9.25: 201 MB for GPT-2 at micro-batch 8.)
int64_t workspaceLimit();

/// Grows `buffer` (of `have` bytes) to `bytes` of device memory; false,
/// with no CUDA error left pending, where the device has no room (the
/// caller runs otc's kernels instead). The outgrown buffer is kept: a
/// captured CUDA graph may still use it. cuDNN's workspaces lie outside
/// the memory plan, so past 256 MiB this notes their size once.
bool growWorkspace(void *&buffer, int64_t &have, int64_t bytes, const char *what);

/// Runs graph `g` on `pack`'s tensors; a failure ends the run with one
/// error naming `what` and the variable (`env`=kernel) that runs otc's own.
void executeOrExit(cudnn_frontend::graph::Graph &g, cudnnHandle_t handle,
                   std::unordered_map<int64_t, void *> &pack, void *workspace, const char *what,
                   const char *env);

} // namespace otc

#endif
