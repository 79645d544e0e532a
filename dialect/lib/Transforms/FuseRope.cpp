//===- FuseRope.cpp - RoPE as its projection's epilogue -------------------===//
//
// The rotations of a fused projection's queries and keys become one
// arch.rope {epilogue} over the projection's whole result, whose kernel is
// the linear's own: its tasks rotate each head as they store it, so the
// query and key columns are not written, read back and written again by
// two RoPE kernels of their own (whose rows, on two threads, come half
// from the other core's tiles).
//
//===----------------------------------------------------------------------===//
#include "FuseLinears.h"
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_FUSEROPEPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// The rope that alone reads `v` and may join an epilogue, else null.
static RopeOp soleRope(Value v) {
  auto r = v.hasOneUse() ? dyn_cast<RopeOp>(*v.user_begin()) : RopeOp();
  return r && !r.getEpilogue() ? r : RopeOp();
}

/// Whether `a` and `b` rotate alike (all but their heads and input).
static bool sameRotation(RopeOp a, RopeOp b) {
  return a.getPos() == b.getPos() && a.getStyle() == b.getStyle() &&
         a.getHeadDim() == b.getHeadDim() &&
         a.getRotaryDim() == b.getRotaryDim() &&
         a.getTheta() == b.getTheta() && a.getScaling() == b.getScaling() &&
         a.getFactor() == b.getFactor() &&
         a.getOriginalMaxSeqLen() == b.getOriginalMaxSeqLen() &&
         a.getLowFreqFactor() == b.getLowFreqFactor() &&
         a.getHighFreqFactor() == b.getHighFreqFactor() &&
         a.getBetaFast() == b.getBetaFast() &&
         a.getBetaSlow() == b.getBetaSlow() && a.getMscale() == b.getMscale() &&
         a.getMscaleAllDim() == b.getMscaleAllDim() &&
         a.getFactors() == b.getFactors() &&
         a.getAttentionFactor() == b.getAttentionFactor();
}

// rope(linear(x, W))                        => rope epilogue(linear(x, W))
// split(linear(x, W)) -> rope(q), rope(k), v => split(rope epilogue(..))
// where the result is whole panels of `panel` columns.
static bool fuse(LinearOp l, int64_t panel) {
  Value y = l.getResult();
  auto type = cast<RankedTensorType>(y.getType());
  if (l.getGlu() || l.getResidual() || !y.hasOneUse() ||
      (panel > 0 && type.getDimSize(1) % panel))
    return false;
  if (RopeOp r = soleRope(y)) {
    r.setEpilogue(true);
    return true;
  }
  auto split = dyn_cast<SplitOp>(*y.user_begin());
  if (!split)
    return false;
  // The pieces from the first that a rope alone reads, each rotating as
  // the first does: the rotated heads are then the columns' first.
  SmallVector<RopeOp> ropes;
  for (Value piece : split.getResults()) {
    RopeOp r = soleRope(piece);
    if (!r || (!ropes.empty() && !sameRotation(r, ropes.front())))
      break;
    ropes.push_back(r);
  }
  // (The kernel's output is whole heads: [T, N / head_dim, head_dim].)
  if (ropes.empty() || type.getDimSize(1) % ropes.front().getHeadDim())
    return false;
  int64_t heads = 0;
  SmallVector<Location> locs{l.getLoc()};
  for (RopeOp r : ropes) {
    heads += r.getNHeads();
    locs.push_back(r.getLoc());
  }
  OpBuilder b(split);
  auto rope = cast<RopeOp>(b.clone(*ropes.front()));
  rope->setLoc(b.getFusedLoc(locs));
  rope.getInputMutable().assign(y);
  rope.getResult().setType(type);
  rope.setNHeads(heads);
  rope.setEpilogue(true);
  auto pieces = b.create<SplitOp>(split.getLoc(), split.getResultTypes(),
                                  rope.getResult());
  for (RopeOp r : ropes) {
    r.getResult().replaceAllUsesWith(r.getInput());
    r.erase();
  }
  split.replaceAllUsesWith(pieces.getResults());
  split.erase();
  return true;
}

struct FuseRopePass : impl::FuseRopePassBase<FuseRopePass> {
  using FuseRopePassBase::FuseRopePassBase;
  void runOnOperation() override {
    if (!fuseEach<LinearOp>(getOperation(),
                            [&](LinearOp l) { return fuse(l, panel); }))
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
