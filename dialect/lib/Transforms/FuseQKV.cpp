//===- FuseQKV.cpp - One projection for q, k and v ------------------------===//
//
// Three GEMMs over the same normalized activations become one wider GEMM:
// the activations are read once, and decode's GEMVs stream one weight
// panel instead of three.
//
//===----------------------------------------------------------------------===//
#include "FuseLinears.h"
#include "arch/Transforms/Passes.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_FUSEQKVPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// linear(x, Wq), linear(x, Wk), linear(x, Wv) behind one attention (tiled
/// or not: its first three operands)
///   => split(linear(x, concat(Wq, Wk, Wv)))
static bool fuse(Operation *attn, DominanceInfo &dom) {
  LinearOp q = projectionOf(attn->getOperand(0));
  LinearOp k = projectionOf(attn->getOperand(1));
  LinearOp v = projectionOf(attn->getOperand(2));
  if (!q || !k || !v)
    return false;
  return succeeded(fuseSiblingLinears({q, k, v}, dom));
}

struct FuseQKVPass : impl::FuseQKVPassBase<FuseQKVPass> {
  void runOnOperation() override {
    DominanceInfo &dom = getAnalysis<DominanceInfo>();
    SmallVector<Operation *> attns;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp, FlashAttentionOp>(op))
        attns.push_back(op);
    });
    bool changed = false;
    for (Operation *a : attns)
      changed |= fuse(a, dom);
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
