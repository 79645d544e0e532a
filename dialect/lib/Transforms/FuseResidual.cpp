//===- FuseResidual.cpp - A residual add as its linear's epilogue ---------===//
//
// x + linear(h, W) is one kernel whose tiles add x as they store: the
// linear's [T, N] result is never written and read back, and the add's
// kernel call (two a layer) is gone.
//
//===----------------------------------------------------------------------===//
#include "FuseLinears.h"
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_FUSERESIDUALPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// The linear `v` if the fusion may take it: read only by `add`, in its
/// block, with no epilogue of its own.
static LinearOp fusible(Value v, AddOp add) {
  auto l = v.getDefiningOp<LinearOp>();
  if (!l || !l->hasOneUse() || l.getResidual() || l.getGlu() ||
      l->getBlock() != add->getBlock())
    return {};
  return l;
}

// add(x, linear(h, W, b)) => linear(h, W, b) residual x
static bool fuse(AddOp add) {
  Value x = add.getLhs();
  LinearOp l = fusible(add.getRhs(), add);
  if (!l) {
    x = add.getRhs();
    l = fusible(add.getLhs(), add);
  }
  if (!l)
    return false;
  // At the add, where x and the linear's operands are all defined.
  OpBuilder b(add);
  Value y = b.create<LinearOp>(
      b.getFusedLoc({l.getLoc(), add.getLoc()}), add.getType(), l.getInput(),
      l.getWeight(), l.getBias(), x, ActivationAttr());
  add.replaceAllUsesWith(y);
  add.erase();
  l.erase();
  return true;
}

struct FuseResidualPass : impl::FuseResidualPassBase<FuseResidualPass> {
  void runOnOperation() override {
    if (!fuseEach<AddOp>(getOperation(), fuse))
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
