//===- PlanBuffers.cpp - Activation slots and scratch from liveness -------===//
//
// A 32-layer model's @forward allocates hundreds of buffers; alive at once
// are a handful. mlir::Liveness gives each allocation's last use (through
// its views); a linear scan in program order then reuses slots of token
// rows, and places fixed-size buffers first fit in one scratch block.
//
//===----------------------------------------------------------------------===//
#include "arch/Transforms/Passes.h"

#include "mlir/Analysis/Liveness.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_PLANBUFFERSPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

struct PlanBuffersPass : impl::PlanBuffersPassBase<PlanBuffersPass> {
  void runOnOperation() override {
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        plan(fn);
  }
  void plan(func::FuncOp fn);
};

/// The op after which neither `alloc` nor any view of it is read.
Operation *lastUse(const LivenessBlockInfo *info, memref::AllocOp alloc) {
  Operation *end = alloc;
  for (Value v : archk::viewsOf(alloc.getResult())) {
    // A view made in a loop (an expert's rows) lives as long as the loop.
    Operation *start = info->getBlock()->findAncestorOpInBlock(*v.getDefiningOp());
    Operation *e = info->getEndOperation(v, start);
    if (end->isBeforeInBlock(e))
      end = e;
  }
  return end;
}

void PlanBuffersPass::plan(func::FuncOp fn) {
  Builder b(fn.getContext());
  Block &body = fn.getBody().front();
  Liveness liveness(fn);
  const LivenessBlockInfo *info = liveness.getLiveness(&body);

  struct Slot {
    int64_t width;
    Operation *end; ///< the current owner's last use
    bool context;   ///< holds a context's rows (up to the capacity)
  };
  struct Fixed {
    int64_t offset, size;
    Operation *end;
  };
  std::vector<Slot> slots;
  std::vector<Fixed> live; ///< fixed buffers live at the current op
  int64_t scratch = 0;
  for (auto alloc : body.getOps<memref::AllocOp>()) {
    MemRefType t = alloc.getType();
    Operation *end = lastUse(info, alloc);
    auto dead = [&](Operation *e) { return e->isBeforeInBlock(alloc); };
    if (t.isDynamicDim(0)) {
      // Token rows: a free slot, a wider one if this one is too narrow.
      // Rows of a context (archk.context: naive MLA's up-projected keys and
      // values) go to slots of their own, as many rows as the sequence's
      // positions.
      // (In floats: a bf16 row, archk-bf16-inputs', takes half as many.)
      int64_t width = 1;
      for (int64_t d : t.getShape().drop_front())
        width *= d;
      width = (width * t.getElementTypeBitWidth() + 31) / 32;
      bool context = alloc->hasAttr("archk.context");
      int slot = -1;
      for (size_t i = 0; i < slots.size(); ++i)
        if (dead(slots[i].end) && slots[i].context == context &&
            (slot < 0 || (slots[slot].width < width &&
                          slots[i].width > slots[slot].width)))
          slot = int(i);
      if (slot < 0) {
        slot = int(slots.size());
        slots.push_back({width, end, context});
      }
      slots[slot].width = std::max(slots[slot].width, width);
      slots[slot].end = end;
      alloc->setAttr("archk.slot", b.getI64IntegerAttr(slot));
      continue;
    }
    // Fixed size: the lowest offset clear of every buffer still live.
    llvm::erase_if(live, [&](const Fixed &f) { return dead(f.end); });
    std::sort(live.begin(), live.end(), [](const Fixed &x, const Fixed &y) {
      return x.offset < y.offset;
    });
    // In floats: a 16-bit buffer (a weight packed in the forward function)
    // takes half as many, rounded up.
    int64_t size = (t.getNumElements() * t.getElementTypeBitWidth() + 31) / 32,
            offset = 0;
    for (const Fixed &f : live)
      if (offset + size <= f.offset)
        break;
      else
        offset = std::max(offset, f.offset + f.size);
    live.push_back({offset, size, end});
    scratch = std::max(scratch, offset + size);
    alloc->setAttr("archk.offset", b.getI64IntegerAttr(offset));
  }
  SmallVector<int64_t> widths, contextSlots;
  for (size_t i = 0; i < slots.size(); ++i) {
    widths.push_back(slots[i].width);
    if (slots[i].context)
      contextSlots.push_back(int64_t(i));
  }
  fn->setAttr("archk.slot_widths", b.getDenseI64ArrayAttr(widths));
  if (!contextSlots.empty())
    fn->setAttr("archk.context_slots", b.getDenseI64ArrayAttr(contextSlots));
  fn->setAttr("archk.scratch_floats", b.getI64IntegerAttr(scratch));
}

} // namespace
} // namespace arch
