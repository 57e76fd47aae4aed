/* Everything a generated CPU step includes, in one header so that the
 * build can precompile it (runtime/CMakeLists.txt): parsing these headers
 * was most of a small step's compile. It must stay the step's first
 * include for the precompiled form to be used. */
#ifndef OTC_RUNTIME_CPU_STEP_H
#define OTC_RUNTIME_CPU_STEP_H

#include "otc/runtime/step_kernels.h"
#include "otc/kernels/gemm_f32acc.h"
#include "otc/kernels/optimizer.h"
#include <cblas.h>
#include <omp.h>

#endif
