//===- FuseParallelBlock.cpp - A parallel block's two GEMM pairs as two ---===//
//
// In a parallel block (GPT-J, PaLM, Falcon, Command) attention and FFN read
// the same normalized input and their outputs are summed into the residual:
// x + attn(n(x)) + ffn(n(x)). So their input projections are one GEMM over
// the normalized input, and their output projections one GEMM over the
// concatenated activations (PaLM's fused block).
//
//===----------------------------------------------------------------------===//
#include "FuseLinears.h"
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_FUSEPARALLELBLOCKPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

static bool readsFFN(LinearOp l) {
  Operation *def = l.getInput().getDefiningOp();
  if (auto up = dyn_cast_or_null<LinearOp>(def)) // gated by arch-fuse-glu
    return bool(up.getGlu());
  return isa_and_nonnull<GluOp, ActivationOp>(def);
}

/// An FFN input projection: read only by the activation or the gating.
static bool feedsFFN(LinearOp l) {
  return llvm::all_of(l->getUsers(),
                      [](Operation *u) { return isa<GluOp, ActivationOp>(u); });
}

/// The attention's projection and the FFN input projections on the same
/// input: in a parallel block with a shared norm, up (and gate). A serial
/// block's FFN reads another norm's output. `attn` is arch.attention or
/// arch.flash_attention (its query is the first operand).
static bool fuseInputs(Operation *attn, DominanceInfo &dom) {
  LinearOp proj = projectionOf(attn->getOperand(0));
  if (!proj)
    return false;
  SmallVector<LinearOp> linears;
  for (Operation *u : proj.getInput().getUsers())
    if (auto l = dyn_cast<LinearOp>(u);
        l && l != proj && l.getInput() == proj.getInput() && feedsFFN(l))
      linears.push_back(l);
  // In program order (use lists are not), after the attention's.
  llvm::sort(linears, [](LinearOp a, LinearOp b) {
    return a->isBeforeInBlock(b);
  });
  linears.insert(linears.begin(), proj);
  return succeeded(fuseSiblingLinears(linears, dom));
}

// add(linear(a, Wo, bo), linear(m, Wd, bd))
//   => linear(concat(a, m), concat(Wo, Wd along K), bo + bd)
static bool fuseOutputs(AddOp add) {
  auto o = add.getLhs().getDefiningOp<LinearOp>();
  auto d = add.getRhs().getDefiningOp<LinearOp>();
  if (o && d && readsFFN(o))
    std::swap(o, d);
  if (!o || !d ||
      !isa_and_nonnull<AttentionOp, FlashAttentionOp>(
          o.getInput().getDefiningOp()) ||
      !readsFFN(d) || !o->hasOneUse() || !d->hasOneUse() || o.getGlu() ||
      d.getGlu() || o.getResidual() || d.getResidual())
    return false;
  auto wo = cast<RankedTensorType>(o.getWeight().getType());
  auto wd = cast<RankedTensorType>(d.getWeight().getType());
  if (wo.getRank() != 2 || wd.getRank() != 2)
    return false;
  OpBuilder b(add);
  Location loc = b.getFusedLoc({o.getLoc(), d.getLoc(), add.getLoc()});
  Type f32 = b.getF32Type();
  auto at = cast<RankedTensorType>(o.getInput().getType());
  auto mt = cast<RankedTensorType>(d.getInput().getType());
  int64_t k = at.getDimSize(1) + mt.getDimSize(1), n = wo.getDimSize(0);
  Value x = b.create<ConcatOp>(
      loc, RankedTensorType::get({at.getDimSize(0), k}, f32),
      ValueRange{o.getInput(), d.getInput()}, 1);
  Value w = b.create<ConcatOp>(loc, RankedTensorType::get({n, k}, f32),
                               ValueRange{o.getWeight(), d.getWeight()}, 1);
  Value bias = o.getBias();
  if (bias && d.getBias())
    bias = b.create<AddOp>(loc, bias, d.getBias());
  else if (!bias)
    bias = d.getBias();
  Value y = b.create<LinearOp>(loc, add.getType(), x, w, bias);
  add.replaceAllUsesWith(y);
  add.erase();
  o.erase();
  d.erase();
  return true;
}

struct FuseParallelBlockPass
    : impl::FuseParallelBlockPassBase<FuseParallelBlockPass> {
  void runOnOperation() override {
    DominanceInfo &dom = getAnalysis<DominanceInfo>();
    SmallVector<Operation *> attns;
    SmallVector<AddOp> adds;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp, FlashAttentionOp>(op))
        attns.push_back(op);
      else if (auto a = dyn_cast<AddOp>(op))
        adds.push_back(a);
    });
    bool changed = false;
    for (Operation *a : attns)
      changed |= fuseInputs(a, dom);
    for (AddOp a : adds)
      changed |= fuseOutputs(a);
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
