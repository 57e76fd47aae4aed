// The per-target emitters of each step kind. A loop step (Elementwise,
// Reduce, RowReduce) becomes one kernel definition plus its launch; a Gemm
// becomes a BLAS call.
#ifndef OTC_CODEGEN_EMIT_TARGETS_H
#define OTC_CODEGEN_EMIT_TARGETS_H

#include "../Program.h"

#include <ostream>
#include <string>

namespace otc {

void emitCpuKernel(std::ostream &os, const Program &p, const Step &s, const std::string &name);
void emitCpuLaunch(std::ostream &os, const Program &p, const Step &s, const std::string &name);
void emitCpuGemm(std::ostream &os, const Program &p, const Gemm &g);

void emitCudaKernel(std::ostream &os, const Program &p, const Step &s, const std::string &name);
void emitCudaLaunch(std::ostream &os, const Program &p, const Step &s, const std::string &name);
void emitCudaGemm(std::ostream &os, const Program &p, const Gemm &g);

/// A kernel-library call: `otc_kernels::NAME<constants...>(buffers...)`,
/// with the CUDA stream last on that target.
void emitLibraryCall(std::ostream &os, const LibraryCall &call, bool cuda);

/// A Reduce whose innermost dim is kept: outputs side by side, so the CPU
/// tiles them and CUDA gives each thread one.
bool isColumnReduce(const Step &s);

} // namespace otc

#endif
