//===- Ukernels.h - The ukernels' bitcode, embedded -------------*- C++ -*-===//
//
// lowering/ukernels.ll assembled and lowering/ukernels_amx.c compiled into
// LLVM 14 bitcode at build time and written out as byte arrays
// (EmbedBitcode.cmake), for the emitter to link into the modules of the
// kernels whose schedules call a ukernel (KernelFuncs::ukernels, ::callsAmx).
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_UKERNELS_H
#define ARCHC_LOWERING_UKERNELS_H

#include <cstddef>

namespace arch {

extern const unsigned char kUkernelBitcode[];
extern const size_t kUkernelBitcodeSize;
extern const unsigned char kAmxBitcode[];
extern const size_t kAmxBitcodeSize;

} // namespace arch

#endif // ARCHC_LOWERING_UKERNELS_H
