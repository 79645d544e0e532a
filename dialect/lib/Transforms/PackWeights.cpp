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

  Type elem;         ///< of the packed weights (weight-type)
  bool pairs = false; ///< bf16 inputs: even K packed in pairs (input-type)

  /// Whether a weight of `k` columns is packed in pairs.
  bool inPairs(int64_t k) const { return pairs && k % 2 == 0; }

  /// Weight operand `o` ([N, K], `groups` blocks of rows) read packed
  /// instead, each block packed alone. Where the blocks are the parts of
  /// an arch.concat read only there (a glu linear's gate and up), the
  /// pack reads the parts: no concatenation is made.
  void pack(OpOperand &o, int64_t groups) {
    auto w = cast<RankedTensorType>(o.get().getType());
    OpBuilder b(o.getOwner());
    int64_t n = w.getDimSize(0) / groups, k = w.getDimSize(1);
    int64_t panels = groups * ((n + panel - 1) / panel);
    auto packed = inPairs(k)
                      ? RankedTensorType::get({panels, k / 2, panel, 2}, elem)
                      : RankedTensorType::get({panels, k, panel}, elem);
    SmallVector<Value> weights{o.get()};
    auto c = o.get().getDefiningOp<ConcatOp>();
    if (groups > 1 && c && c.getDim() == 0 && c->hasOneUse() &&
        int64_t(c.getInputs().size()) == groups &&
        llvm::all_of(c.getInputs(), [&](Value v) {
          return cast<RankedTensorType>(v.getType()).getDimSize(0) == n;
        }))
      weights.assign(c.getInputs().begin(), c.getInputs().end());
    o.set(b.create<PackOp>(
        o.getOwner()->getLoc(), packed, weights, b.getI64IntegerAttr(panel),
        groups == 1 ? IntegerAttr() : b.getI64IntegerAttr(groups)));
    if (weights.size() > 1)
      c.erase();
  }

  // linear(x, W) over many rows  =>  linear(x, pack(W))
  void runOnOperation() override {
    if (panel <= 0) {
      getOperation().emitError() << "arch-pack-weights: panel must be "
                                    "positive, got "
                                 << panel;
      return signalPassFailure();
    }
    std::optional<StoreType> type = symbolizeEnum<StoreType>(weightType);
    if (!type || *type == StoreType::i32) {
      getOperation().emitError() << "arch-pack-weights: weight-type must be "
                                    "f32, f16 or bf16, got '"
                                 << weightType << "'";
      return signalPassFailure();
    }
    elem = archk::storeElementType(&getContext(), *type);
    if (inputType != "f32" && inputType != "bf16") {
      getOperation().emitError() << "arch-pack-weights: input-type must be "
                                    "f32 or bf16, got '"
                                 << inputType << "'";
      return signalPassFailure();
    }
    pairs = inputType == "bf16";
    if (pairs && *type != StoreType::bf16) {
      getOperation().emitError()
          << "arch-pack-weights: input-type bf16 needs weight-type bf16 (the "
             "bf16 dot product), got weight-type "
          << weightType;
      return signalPassFailure();
    }
    // 16-bit weights are stored packed: every matmul weight is, and one
    // packed already (an IR input) must be of that type.
    bool all = !elem.isF32();
    bool changed = false, mixed = false;
    auto packedOther = [&](Operation *op, Value w) {
      auto t = cast<RankedTensorType>(w.getType());
      if (!all || t.getRank() < 3)
        return false;
      bool paired = t.getRank() == 4;
      int64_t k = paired ? 2 * t.getDimSize(1) : t.getDimSize(1);
      if (t.getElementType() == elem && paired == inPairs(k))
        return false;
      op->emitOpError() << "has a weight packed as " << t
                        << ", not as arch-pack-weights' weight-type "
                        << weightType << " and input-type " << inputType
                        << " pack it";
      return mixed = true;
    };
    getOperation().walk([&](LinearOp l) {
      auto w = cast<RankedTensorType>(l.getWeight().getType());
      auto x = cast<RankedTensorType>(l.getInput().getType());
      // One row (the classifier on the last token) is a GEMV only, which
      // packing speeds up too (several panels per task, and the prepared
      // copy on huge pages where a checkpoint's is file-mapped), but is not
      // worth a second copy of a weight something else reads as well (a
      // tied embedding table).
      if (packedOther(l, l.getWeight()) || w.getRank() != 2 ||
          (!all && (widthOf(l.getResult()) < minColumns ||
                    (!x.isDynamicDim(0) && !l.getWeight().hasOneUse()))))
        return;
      // A glu epilogue's gate and up halves each packed alone, so that
      // each gate panel has an up panel of the same columns.
      pack(l.getWeightMutable(), l.getGlu() ? 2 : 1);
      changed = true;
    });
    // The experts of arch.moe: each expert's block of rows packed alone.
    getOperation().walk([&](MoEOp m) {
      SmallVector<OpOperand *, 3> weights;
      if (m.getGate())
        weights.push_back(&m.getGateMutable()[0]);
      weights.append({&m.getUpMutable(), &m.getDownMutable()});
      for (OpOperand *o : weights)
        if (!packedOther(m, o->get()) &&
            cast<RankedTensorType>(o->get().getType()).getRank() == 2) {
          pack(*o, m.getNExperts());
          changed = true;
        }
    });
    if (mixed)
      return signalPassFailure();
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
