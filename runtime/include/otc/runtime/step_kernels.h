/* The kernel library as a generated step sees it on both targets;
 * cpu_step.h and cuda_step.h add what each target needs. */
#ifndef OTC_RUNTIME_STEP_KERNELS_H
#define OTC_RUNTIME_STEP_KERNELS_H

#include "otc/runtime/abi.h"
#include "otc/runtime/kernel_support.h"
#include <math.h>
#include "otc/kernels/attention.h"
#include "otc/kernels/conv.h"
#include "otc/kernels/gather.h"
#include "otc/kernels/recurrent.h"
#include "otc/kernels/window.h"
#include "otc/kernels/gemm_epilogue.h"

#endif
