//===- Passes.h - arch rewrites ---------------------------------*- C++ -*-===//
#ifndef ARCH_TRANSFORMS_PASSES_H
#define ARCH_TRANSFORMS_PASSES_H

#include "arch/Dialect/ArchDialect.h"
#include "arch/Kernel/ArchK.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace arch {

#define GEN_PASS_DECL
#include "arch/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "arch/Transforms/Passes.h.inc"

/// The passes `archc compile` runs, in order, by flag name: the default
/// pipeline's, then those of the kernel lowering that may be left out.
const std::vector<std::string> &defaultPipelinePasses();

/// What the pipeline's target-dependent choices read.
struct PipelineTarget {
  int64_t lanes = 16; ///< f32 lanes of the target's vectors
  std::string weightType = "f32"; ///< arch-pack-weights' weight-type
  std::string inputType = "f32";  ///< arch-pack-weights' input-type
  std::string attentionInput = "f32"; ///< arch-flash-tiling's dot
};

/// Adds the default pipeline, less the passes named in `disabled`, to `pm`
/// (a pass manager on builtin.module), its choices made for `target`.
/// Fails with `error` set when a name is not a pass of the pipeline.
mlir::LogicalResult
buildDefaultPipeline(mlir::OpPassManager &pm,
                     const std::vector<std::string> &disabled,
                     std::string &error, const PipelineTarget &target = {});

/// Adds the lowering from arch IR (after the pipeline) to the planned
/// kernel-call level the C glue is printed from, less the kernel-level
/// passes named in `disabled`.
void buildKernelLowering(mlir::OpPassManager &pm,
                         const std::vector<std::string> &disabled = {});

/// Registers the arch passes and the `arch-default-pipeline` pipeline.
void registerArchPassesAndPipelines();

} // namespace arch

#endif // ARCH_TRANSFORMS_PASSES_H
