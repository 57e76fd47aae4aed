/* Every CUDA and cuBLAS call is checked: a failure names the call and exits. */
#ifndef OTC_RUNTIME_CUDA_CHECK_H
#define OTC_RUNTIME_CUDA_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define OTC_CUDA_CHECK(call)                                                   \
  do {                                                                         \
    cudaError_t otc_err = (call);                                              \
    if (otc_err != cudaSuccess) {                                              \
      fprintf(stderr, "train: error: CUDA: %s at %s:%d: %s\n", #call,          \
              __FILE__, __LINE__, cudaGetErrorString(otc_err));                \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#define OTC_CUBLAS_CHECK(call)                                                 \
  do {                                                                         \
    cublasStatus_t otc_status = (call);                                        \
    if (otc_status != CUBLAS_STATUS_SUCCESS) {                                 \
      fprintf(stderr, "train: error: cuBLAS: %s at %s:%d: status %d\n", #call, \
              __FILE__, __LINE__, (int)otc_status);                            \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

#endif
