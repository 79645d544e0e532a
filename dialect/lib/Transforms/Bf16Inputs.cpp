//===- Bf16Inputs.cpp - The bf16 dot product's input rounded by its maker --===//
//
// A bf16 dot product rounds its x to bf16 first: a pass of its own over
// the rows in every call, a parallel loop whose rows the other core reads
// straight after (docs/performance.md "x rounded where it is made"). Where
// the rows come from a kernel that writes them for such linears only, that
// kernel can store them rounded instead: the same values, half the bytes,
// and the linear reads them as they are.
//
//===----------------------------------------------------------------------===//
#include "arch/Kernel/ArchK.h"
#include "arch/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_BF16INPUTSPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// Whether `call` writes rows it could store as bf16 (its kind's
/// roundingStore), storing f32.
bool roundsOutput(archk::CallOp call) {
  KernelSpec spec = call.getSpec();
  const StoreType *store = spec.roundingStore();
  return store && *store == StoreType::f32;
}

/// Whether `call` takes its x (its first argument) as a bf16 dot product's
/// input, given f32, as dense rows (which the kernel then assumes).
bool dotInput(archk::CallOp call) {
  KernelSpec spec = call.getSpec();
  const LinearKernel *l = spec.get<LinearKernel>();
  return l && l->pairs && l->input == StoreType::f32 &&
         archk::denseRows(cast<MemRefType>(call.getArgs()[0].getType()));
}

struct Bf16InputsPass : impl::Bf16InputsPassBase<Bf16InputsPass> {
  void runOnOperation() override {
    SmallVector<archk::CallOp> producers;
    getOperation().walk([&](archk::CallOp c) {
      if (roundsOutput(c))
        producers.push_back(c);
    });
    for (archk::CallOp p : producers)
      round(p);
  }

  /// Stores `producer`'s output as bf16 where every other reader of its
  /// buffer is a bf16 dot product's x.
  void round(archk::CallOp producer) {
    OpOperand &out = producer.getArgsMutable()[producer.getArgs().size() - 1];
    auto alloc = archk::rootOf(out.get()).getDefiningOp<memref::AllocOp>();
    if (!alloc)
      return;
    SmallVector<Value> views = archk::viewsOf(alloc.getResult());
    SmallVector<archk::CallOp> readers;
    for (Value v : views)
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (archk::isBufferView(user) || isa<memref::DimOp>(user) ||
            &use == &out)
          continue;
        auto call = dyn_cast<archk::CallOp>(user);
        if (!call || use.getOperandNumber() != 0 || !dotInput(call))
          return;
        readers.push_back(call);
      }
    if (readers.empty())
      return;
    Type bf16 = BFloat16Type::get(&getContext());
    for (Value v : views)
      v.setType(MemRefType::Builder(cast<MemRefType>(v.getType()))
                    .setElementType(bf16));
    KernelSpec spec = producer.getSpec();
    *spec.roundingStore() = StoreType::bf16;
    producer.setKernelAttr(archk::kernelAttr(&getContext(), spec));
    for (archk::CallOp r : readers) {
      LinearKernel l = *r.getSpec().get<LinearKernel>();
      l.input = StoreType::bf16;
      r.setKernelAttr(archk::kernelAttr(&getContext(), KernelSpec(l)));
    }
  }
};

} // namespace
} // namespace arch
