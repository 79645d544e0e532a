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

/// linear(x, Wq), linear(x, Wk), linear(x, Wv) behind one attention
///   => split(linear(x, concat(Wq, Wk, Wv)))
static bool fuse(AttentionOp attn, DominanceInfo &dom) {
  LinearOp q = projectionOf(attn.getQuery());
  LinearOp k = projectionOf(attn.getKey());
  LinearOp v = projectionOf(attn.getValue());
  if (!q || !k || !v)
    return false;
  return succeeded(fuseSiblingLinears({q, k, v}, dom));
}

struct FuseQKVPass : impl::FuseQKVPassBase<FuseQKVPass> {
  void runOnOperation() override {
    DominanceInfo &dom = getAnalysis<DominanceInfo>();
    SmallVector<AttentionOp> attns;
    getOperation().walk([&](AttentionOp a) { attns.push_back(a); });
    bool changed = false;
    for (AttentionOp a : attns)
      changed |= fuse(a, dom);
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
