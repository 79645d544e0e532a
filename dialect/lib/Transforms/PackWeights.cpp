//===- PackWeights.cpp - GEMM weights in register-tile panels -------------===//
//
// Halide reaches 88-94% of FP32 peak on these machines only over weights
// packed once into panels of the register tile's width; over PyTorch's
// [N, K] layout about 55% (shared/TOOLCHAIN.md). The layout is a load-time
// decision: this pass states it, arch-hoist-param-prep moves it to load.
//
//===----------------------------------------------------------------------===//
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_PACKWEIGHTSPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

struct PackWeightsPass : impl::PackWeightsPassBase<PackWeightsPass> {
  using PackWeightsPassBase::PackWeightsPassBase;

  // linear(x, W) over many rows  =>  linear(x, pack(W))
  void runOnOperation() override {
    if (panel <= 0) {
      getOperation().emitError() << "arch-pack-weights: panel must be "
                                    "positive, got "
                                 << panel;
      return signalPassFailure();
    }
    bool changed = false;
    getOperation().walk([&](LinearOp l) {
      auto w = cast<RankedTensorType>(l.getWeight().getType());
      auto x = cast<RankedTensorType>(l.getInput().getType());
      // One row (the classifier on the last token) is a GEMV only.
      if (w.getRank() != 2 || !x.isDynamicDim(0) ||
          w.getDimSize(0) < minColumns)
        return;
      OpBuilder b(l);
      int64_t n = w.getDimSize(0), k = w.getDimSize(1);
      auto packed = RankedTensorType::get({(n + panel - 1) / panel, k, panel},
                                          w.getElementType());
      Value p = b.create<PackOp>(l.getLoc(), packed, l.getWeight(),
                                 b.getI64IntegerAttr(panel), IntegerAttr());
      l.getWeightMutable().assign(p);
      changed = true;
    });
    // The experts of arch.moe: each expert's block of rows packed alone.
    getOperation().walk([&](MoEOp m) {
      OpBuilder b(m);
      int64_t e = m.getNExperts();
      for (OpOperand *o : {m.getGate() ? &m->getOpOperand(3) : nullptr,
                           &m.getUpMutable(), &m.getDownMutable()}) {
        auto w = o ? cast<RankedTensorType>(o->get().getType())
                   : RankedTensorType();
        if (!w || w.getRank() != 2)
          continue;
        int64_t n = w.getDimSize(0) / e, k = w.getDimSize(1);
        auto packed = RankedTensorType::get(
            {e * ((n + panel - 1) / panel), k, panel}, w.getElementType());
        o->set(b.create<PackOp>(m.getLoc(), packed, o->get(),
                                b.getI64IntegerAttr(panel),
                                b.getI64IntegerAttr(e)));
        changed = true;
      }
    });
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
