//===- FuseLinears.h - Linears on one input as one linear -------*- C++ -*-===//
//
// The rewrite behind arch-fuse-qkv and arch-fuse-parallel-block, and the
// walk of the epilogue fusions.
//
//===----------------------------------------------------------------------===//
#ifndef ARCH_TRANSFORMS_FUSELINEARS_H
#define ARCH_TRANSFORMS_FUSELINEARS_H

#include "arch/Dialect/ArchDialect.h"

#include "mlir/IR/Dominance.h"

namespace arch {

/// The linear that produced `v`, looking through the ops between a
/// projection and attention (the split of a fused projection, QK-norm,
/// RoPE, the cache append that turns keys and values into the context,
/// the last layer's pick of its last query row):
/// linear -> [split] -> [norm] -> [rope] -> [cache_append | last_token]
/// -> attention.
LinearOp projectionOf(mlir::Value v);

/// Replaces `linears`, which must read the same input and all have a bias
/// or none, by one linear over their weights concatenated along N (and
/// their biases), then one arch.split into every part. A linear that is
/// itself fused (its weight an arch.concat, its result read only by an
/// arch.split) contributes its parts, so fusions compose: the fused q/k/v
/// projection and the FFN's up and gate projections become one 5-way
/// split. Fails, changing nothing, where the linears do not qualify.
mlir::LogicalResult fuseSiblingLinears(llvm::ArrayRef<LinearOp> linears,
                                       mlir::DominanceInfo &dom);

/// `fuse` (true where it changed the IR) on every OpT under `root`, all
/// collected first, so that a fusion may erase the op it is given; whether
/// any changed the IR. (arch-fuse-glu's, arch-fuse-residual's and
/// arch-fuse-rope's walk.)
template <class OpT, class Fuse>
bool fuseEach(mlir::Operation *root, Fuse &&fuse) {
  llvm::SmallVector<OpT> ops;
  root->walk([&](OpT op) { ops.push_back(op); });
  bool changed = false;
  for (OpT op : ops)
    changed |= fuse(op);
  return changed;
}

} // namespace arch

#endif // ARCH_TRANSFORMS_FUSELINEARS_H
