/* Everything a generated CUDA step includes. */
#ifndef OTC_RUNTIME_CUDA_STEP_H
#define OTC_RUNTIME_CUDA_STEP_H

#include "otc/runtime/step_kernels.h"
#include "otc/runtime/cuda_check.h"
#include <cublas_v2.h>

#endif
