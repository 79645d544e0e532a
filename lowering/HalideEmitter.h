//===- HalideEmitter.h - Compile kernels with Halide -----------*- C++ -*-===//
//
// The border to Halide: everything here takes and returns plain data and
// turns Halide's exceptions into error strings.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_HALIDEEMITTER_H
#define ARCHC_LOWERING_HALIDEEMITTER_H

#include "arch/Kernel/Kernels.h"

#include <string>

namespace arch {

/// Resolves "host" (this CPU's features; avx512_sapphirerapids only where
/// the CPU has AVX512-FP16, which LLVM 14 assumes with it) or a Halide
/// target string into a canonical Halide target string; with `floatLanes`,
/// also the f32 lanes of its natural vector (what arch-flash-tiling sizes
/// its blocks for).
bool resolveTarget(const std::string &target, std::string &canonical,
                   std::string &error, int *floatLanes = nullptr);

/// Whether the bf16 dot product (`vdpbf16ps`) is the faster way to use
/// bf16 weights on `target` (as resolveTarget takes it): where the
/// kernels for it get the instruction without AVX512-FP16, i.e. this CPU
/// with AVX512-BF16 and without AVX512-FP16 (a Zen 4 or 5, where it runs
/// at twice the FP32 FMA rate); not on a Sapphire Rapids-class Xeon (its
/// vdpbf16ps measured at half the FMA rate: widened weights are faster)
/// nor without AVX512-BF16 (each pair would be widened apart). The
/// default of `archc compile --matmul-input` with --weight-type=bf16.
bool bf16DotProductPays(const std::string &target);

/// The target string kernel `spec` is compiled for in a library for
/// `target` (canonical): `target`, or with avx512_sapphirerapids where the
/// kernel takes the bf16 dot product on this CPU (what a kernel cache keys
/// its object by), and what else its object depends on (the L2's size for
/// a packed linear, AMX, "host-no-fp16" for an avx512_sapphirerapids
/// kernel compiled on a CPU without AVX512-FP16).
std::string kernelTargetString(const KernelSpec &spec,
                               const std::string &target);

/// AOT-compiles one kernel, without a Halide runtime, to an object file
/// defining the C function `spec.name()`.
bool compileKernelObject(const KernelSpec &spec, const std::string &target,
                         const std::string &path, std::string &error);

/// The lowered Halide statement of one kernel (for --emit=halide).
bool kernelLoweredStmt(const KernelSpec &spec, const std::string &target,
                       std::string &stmt, std::string &error);

/// The one Halide runtime a model library carries.
bool compileHalideRuntime(const std::string &target, const std::string &path,
                          std::string &error);

} // namespace arch

#endif // ARCHC_LOWERING_HALIDEEMITTER_H
