// cuDNN, opened at a step's first call of it (so an executable starts on a
// machine without libcudnn.so.9) and shared by attention and convolution.
#ifndef OTC_RUNTIME_CUDNNLIBRARY_H
#define OTC_RUNTIME_CUDNNLIBRARY_H

#include <cudnn.h>

namespace otc {

/// A new cuDNN handle in `handle`, opening libcudnn.so.9 for
/// cudnn-frontend on the first call; false, with one note naming `what`
/// ("attention runs otc's kernels"), where cuDNN does not start.
bool startCudnn(cudnnHandle_t &handle, const char *what);

} // namespace otc

#endif
