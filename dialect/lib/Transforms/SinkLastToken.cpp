//===- SinkLastToken.cpp - Rows only the last token needs ------------------===//
//
// A forward call returns the last token's logits, picked by arch.last_token
// after the last layer. What the last layer does after its attention works
// row by row (the output projection, the residual adds, the norm, the FFN
// or the experts), so on a prompt of T tokens it computes T - 1 rows that
// nothing reads: the output projection and FFN are 86% of a layer's
// matmul weights in bench-156m, 11% of its 8 layers' linears. Its
// attention's other query rows are read by nothing either: the last row
// alone, at its position, is a decode step over the same context.
// Moving the pick up through those ops leaves them one row each, where
// llama.cpp selects the rows it outputs before the last layer's FFN.
//
//===----------------------------------------------------------------------===//
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_SINKLASTTOKENPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// The numbers of `op`'s operands indexed by token row, where row t of
/// each of `op`'s results reads row t of those operands and no other row
/// (its other operands are weights, or attention's context); none where
/// `op` does not work row by row: RoPE turns row t by its position, a
/// cache append has state, an embedding starts the rows.
static SmallVector<unsigned> rowOperands(Operation *op) {
  SmallVector<unsigned> rows;
  auto take = [&](auto &&...operands) {
    auto one = [&](auto &&o) {
      if constexpr (std::is_same_v<std::decay_t<decltype(o)>, OpOperand>)
        rows.push_back(o.getOperandNumber());
      else
        for (OpOperand &x : o)
          rows.push_back(x.getOperandNumber());
    };
    (one(operands), ...);
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case<NormOp, ActivationOp, SoftcapOp, ScaleOp, SplitOp, HeadsSplitOp,
            HeadLinearOp>([&](auto o) { take(o.getInputMutable()); })
      .Case([&](LinearOp o) {
        take(o.getInputMutable(), o.getResidualMutable());
      })
      .Case([&](GluOp o) { take(o.getGateMutable(), o.getUpMutable()); })
      .Case([&](AddOp o) { take(o.getLhsMutable(), o.getRhsMutable()); })
      .Case([&](HeadsConcatOp o) { take(o.getInputsMutable()); })
      .Case([&](DifferentialOp o) {
        take(o.getFirstMutable(), o.getSecondMutable());
      })
      .Case([&](RouteOp o) { take(o.getLogitsMutable()); })
      .Case([&](MoEOp o) {
        take(o.getInputMutable(), o.getExpertsMutable(),
             o.getWeightsMutable());
      })
      // Attention's rows are its queries (its keys and values are the
      // context, read in full): a pick of its output is its last query
      // row's attention, as a decode step at that row's position would
      // compute it (sinkInto moves the position).
      .Case<AttentionOp, FlashAttentionOp>(
          [&](auto o) { take(o.getQueryMutable()); });
  return rows;
}

/// The position operand of an attention `op`; null for any other op.
static OpOperand *positionOf(Operation *op) {
  if (auto a = dyn_cast<AttentionOp>(op))
    return &a.getPosMutable();
  if (auto a = dyn_cast<FlashAttentionOp>(op))
    return &a.getPosMutable();
  return nullptr;
}

/// `t`, a [T, N] tensor type, with one row; null for any other type.
static RankedTensorType oneRow(Type t) {
  auto r = dyn_cast<RankedTensorType>(t);
  if (!r || r.getRank() != 2 || r.getDimSize(0) == 1)
    return {};
  return RankedTensorType::get({1, r.getDimSize(1)}, r.getElementType());
}

/// The last row of `x` for `reader`: a pick of it that comes before
/// `reader`, or a new one right after `x` is made, so that every reader of
/// the same rows shares one pick (x's readers: its pick and nothing else,
/// once the pick's own readers are sunk in turn).
static Value pickOf(Value x, Operation *reader, DominanceInfo &dom) {
  for (Operation *u : x.getUsers())
    if (isa<LastTokenOp>(u) && dom.properlyDominates(u, reader))
      return u->getResult(0);
  OpBuilder b(reader);
  b.setInsertionPointAfterValue(x);
  return b.create<LastTokenOp>(x.getLoc(), oneRow(x.getType()), x);
}

/// op(x1, .., w) whose every result is read only by arch.last_token
///   => op(last_token(x1), .., w), one row
/// False, changing nothing, where `op` does not work row by row, a result
/// is read by anything else, or its rows are not [T, N] tensors.
static bool sinkInto(Operation *op) {
  SmallVector<unsigned> rows = rowOperands(op);
  if (rows.empty())
    return false;
  for (Value r : op->getResults())
    if (!oneRow(r.getType()) ||
        !llvm::all_of(r.getUsers(),
                      [](Operation *u) { return isa<LastTokenOp>(u); }))
      return false;
  for (unsigned i : rows)
    if (!oneRow(op->getOperand(i).getType()))
      return false;

  OpBuilder b(op);
  DominanceInfo dom;
  SmallVector<Value> picked;
  for (unsigned i : rows)
    picked.push_back(pickOf(op->getOperand(i), op, dom));
  // attention(q, k, v, pos) => attention(last_token(q), k, v, pos + T - 1)
  OpOperand *pos = positionOf(op);
  Value last = pos ? b.create<LastPositionOp>(
                         op->getLoc(), op->getOperand(rows.front()), pos->get())
                   : Value();
  Operation *one = b.clone(*op);
  for (auto [i, p] : llvm::zip(rows, picked))
    one->setOperand(i, p);
  if (pos)
    one->setOperand(pos->getOperandNumber(), last);
  for (auto [r, r1] : llvm::zip(op->getResults(), one->getResults())) {
    r1.setType(oneRow(r.getType()));
    for (Operation *u : llvm::make_early_inc_range(r.getUsers())) {
      u->getResult(0).replaceAllUsesWith(r1);
      u->erase();
    }
  }
  op->erase();
  return true;
}

struct SinkLastTokenPass : impl::SinkLastTokenPassBase<SinkLastTokenPass> {
  void runOnOperation() override {
    // One sink a walk: a sink erases picks (its op's readers) that a walk
    // would otherwise visit after it. A few dozen sinks a model.
    bool changed = false, sunk = true;
    while (sunk) {
      sunk = false;
      getOperation().walk([&](LastTokenOp p) {
        Operation *op = p.getInput().getDefiningOp();
        if (!op || !sinkInto(op))
          return WalkResult::advance();
        sunk = changed = true;
        return WalkResult::interrupt();
      });
    }
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace arch
