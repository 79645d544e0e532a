//===- GlueEmitter.h - Kernel calls -> kernel catalogue + host C *- C++ -*-===//
#ifndef ARCHC_LOWERING_GLUEEMITTER_H
#define ARCHC_LOWERING_GLUEEMITTER_H

#include "arch/Kernel/Kernels.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace arch {

/// What a model library is built from: the distinct kernels its @forward
/// calls and the C that calls them in order.
struct LoweredModel {
  std::string name;
  std::vector<KernelSpec> kernels;
  std::string glue;
  /// Some tensor has more than 2^31 - 1 elements: kernels are compiled
  /// with Halide's 64-bit buffer indexing (target feature large_buffers).
  bool largeBuffers = false;
};

struct GlueOptions {
  std::string specPath;
  std::string specText;
};

/// Prints `module` at the planned kernel-call level (buildKernelLowering
/// has run) as readable host C, and lists the distinct kernels it calls.
/// Fails with a diagnostic at an op it has no C form for.
mlir::LogicalResult emitGlue(mlir::ModuleOp module, const GlueOptions &opts,
                             LoweredModel &out);

} // namespace arch

#endif // ARCHC_LOWERING_GLUEEMITTER_H
