// cuDNN, opened once for cudnn-frontend (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING).
#include "CudnnLibrary.h"

#include <cuda_runtime.h>
#include <cudnn_frontend.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>

// cudnn-frontend calls cuDNN through this library handle.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
}

namespace otc {

bool startCudnn(cudnnHandle_t &handle, const char *what) {
  static std::once_flag opened;
  static std::string why; // dlopen's reason, when it failed
  std::call_once(opened, [] {
    // cudnn-frontend opens a CUDA runtime of its own, the first of
    // libcudart.so.12 and .13 it finds (PyTorch's wheels put a 12 on the
    // path): this executable's major version, unless the user chose.
    std::string cudart = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
    setenv("CUDNN_FRONTEND_CUDART_LIB_NAME", cudart.c_str(), /*overwrite=*/0);
    cudnn_frontend::cudnn_dlhandle = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_GLOBAL);
    const char *error = cudnn_frontend::cudnn_dlhandle ? nullptr : dlerror();
    why = error ? error : "";
  });
  bool started = false;
  try {
    started = cudnn_frontend::cudnn_dlhandle &&
              cudnn_frontend::detail::create_handle(&handle) == CUDNN_STATUS_SUCCESS;
  } catch (const std::exception &) {
  }
  if (!started)
    std::fprintf(stderr, "train: note: cuDNN (libcudnn.so.9) did not start%s%s; %s\n",
                 why.empty() ? "" : ": ", why.c_str(), what);
  return started;
}

int64_t workspaceLimit() {
  static const int64_t limit = [] {
    const char *env = std::getenv("OTC_CUDNN_WORKSPACE_MB");
    char *end = nullptr;
    double mb = env ? std::strtod(env, &end) : 1024;
    if (env && (end == env || *end || !(mb >= 0 && mb <= 1e9))) {
      std::fprintf(stderr, "train: note: OTC_CUDNN_WORKSPACE_MB='%s' is not a number of MiB; "
                           "1024 it is\n", env);
      mb = 1024;
    }
    return int64_t(mb * 1048576.0);
  }();
  return limit;
}

bool growWorkspace(void *&buffer, int64_t &have, int64_t bytes, const char *what) {
  if (bytes <= have)
    return true;
  void *grown = nullptr;
  if (cudaMalloc(&grown, size_t(bytes)) != cudaSuccess) {
    (void)cudaGetLastError();
    std::fprintf(stderr, "train: note: no device memory for cuDNN %s's workspace of %lld bytes; "
                         "that shape runs otc's kernels\n", what, (long long)bytes);
    return false;
  }
  static bool noted = false;
  if (bytes > (int64_t(256) << 20) && !noted) {
    noted = true;
    std::fprintf(stderr, "train: note: cuDNN %s takes a workspace of %lld bytes, outside the "
                         "memory plan (OTC_CUDNN_WORKSPACE_MB caps it)\n", what, (long long)bytes);
  }
  buffer = grown;
  have = bytes;
  return true;
}

void executeOrExit(cudnn_frontend::graph::Graph &g, cudnnHandle_t handle,
                   std::unordered_map<int64_t, void *> &pack, void *workspace, const char *what,
                   const char *env) {
  std::string why;
  try {
    cudnn_frontend::error_t e = g.execute(handle, pack, workspace);
    if (e.is_good())
      return;
    why = e.get_message();
  } catch (const std::exception &e) {
    why = e.what();
  }
  std::fprintf(stderr, "train: error: cuDNN %s: %s (%s=kernel runs otc's own)\n", what, why.c_str(),
               env);
  std::exit(1);
}

} // namespace otc
