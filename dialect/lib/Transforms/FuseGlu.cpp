//===- FuseGlu.cpp - A gated FFN's gating as its GEMM's epilogue ----------===//
//
// act(x Wg^T) * (x Wu^T) is one GEMM over [Wg; Wu] whose tasks compute a
// gate panel and its up panel together and write their gated product: the
// [T, 2 d_ff] products stay in the caches (for prompts of up to a few
// hundred rows: docs/design.md), and arch.glu's own pass over them is gone.
//
//===----------------------------------------------------------------------===//
#include "FuseLinears.h"
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_FUSEGLUPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// A linear the fusion may take as a half: read only by `glu`, no bias, no
/// epilogue (glu or residual), an f32 [N, K] weight.
static LinearOp half(Value v, GluOp glu) {
  auto l = v.getDefiningOp<LinearOp>();
  if (!l || !l->hasOneUse() || l.getBias() || l.getResidual() || l.getGlu() ||
      l->getBlock() != glu->getBlock())
    return {};
  auto w = cast<RankedTensorType>(l.getWeight().getType());
  return w.getRank() == 2 && w.getElementType().isF32() ? l : LinearOp();
}

// glu act (linear(x, Wg), linear(x, Wu))
//   => linear(x, concat(Wg, Wu)) glu act
static bool fuse(GluOp glu) {
  LinearOp gate = half(glu.getGate(), glu), up = half(glu.getUp(), glu);
  if (!gate || !up || gate == up || gate.getInput() != up.getInput())
    return false;
  OpBuilder b(glu);
  Location loc = b.getFusedLoc({gate.getLoc(), up.getLoc(), glu.getLoc()});
  auto wg = cast<RankedTensorType>(gate.getWeight().getType());
  Value w = b.create<ConcatOp>(
      loc,
      RankedTensorType::get({2 * wg.getDimSize(0), wg.getDimSize(1)},
                            b.getF32Type()),
      ValueRange{gate.getWeight(), up.getWeight()}, 0);
  Value y = b.create<LinearOp>(loc, glu.getType(), gate.getInput(), w,
                               Value(), Value(), glu.getActivationAttr());
  glu.replaceAllUsesWith(y);
  glu.erase();
  gate.erase();
  up.erase();
  return true;
}

struct FuseGluPass : impl::FuseGluPassBase<FuseGluPass> {
  void runOnOperation() override {
    if (!fuseEach<GluOp>(getOperation(), fuse))
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
