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

/// Runs graph `g` on `pack`'s tensors; a failure ends the run with one
/// error naming `what` and the variable (`env`=kernel) that runs otc's own.
void executeOrExit(cudnn_frontend::graph::Graph &g, cudnnHandle_t handle,
                   std::unordered_map<int64_t, void *> &pack, void *workspace, const char *what,
                   const char *env);

} // namespace otc

#endif
