//===- FuseLinears.cpp - Linears on one input as one linear ---------------===//
#include "FuseLinears.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace arch {

LinearOp projectionOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto l = dyn_cast<LinearOp>(def))
      return l;
    if (auto s = dyn_cast<SplitOp>(def))
      v = s.getInput();
    else if (auto n = dyn_cast<NormOp>(def))
      v = n.getInput();
    else if (auto r = dyn_cast<RopeOp>(def))
      v = r.getInput();
    else if (auto c = dyn_cast<CacheAppendOp>(def))
      v = c.getRows();
    else if (auto p = dyn_cast<LastTokenOp>(def))
      v = p.getInput();
    else
      return {};
  }
  return {};
}

/// Whether `v` is available before `at`, or can be made so by moving the
/// op without operands (arch.param) that defines it in the same block.
static bool canHoistAbove(Value v, Operation *at, DominanceInfo &dom) {
  if (!v || dom.properlyDominates(v, at))
    return true;
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0 && def->getBlock() == at->getBlock();
}

static void hoistAbove(Value v, Operation *at, DominanceInfo &dom) {
  if (v && !dom.properlyDominates(v, at))
    v.getDefiningOp()->moveBefore(at);
}

/// The parts `v` is made of: a single-use arch.concat's inputs, else `v`.
static void partsOf(Value v, SmallVectorImpl<Value> &parts) {
  auto c = v ? v.getDefiningOp<ConcatOp>() : ConcatOp();
  if (c && c.getDim() == 0 && c->hasOneUse())
    parts.append(c.getInputs().begin(), c.getInputs().end());
  else if (v)
    parts.push_back(v);
}

/// The pieces of `l`'s result: an arch.split's results if that is its only
/// reader, else the result itself.
static void piecesOf(LinearOp l, SmallVectorImpl<Value> &pieces) {
  Value r = l.getResult();
  auto s = r.hasOneUse() ? dyn_cast<SplitOp>(*r.user_begin()) : SplitOp();
  if (s)
    pieces.append(s.getResults().begin(), s.getResults().end());
  else
    pieces.push_back(r);
}

// linear(x, W1, b1), ..., linear(x, Wn, bn)
//   => split(linear(x, concat(W1, ..., Wn), concat(b1, ..., bn)))
LogicalResult fuseSiblingLinears(ArrayRef<LinearOp> linears,
                                 DominanceInfo &dom) {
  if (linears.size() < 2)
    return failure();
  LinearOp head = linears.front();
  Value x = head.getInput();
  bool bias = bool(head.getBias());
  Operation *first = head;
  for (LinearOp l : linears) {
    auto w = cast<RankedTensorType>(l.getWeight().getType());
    if (l.getInput() != x || bool(l.getBias()) != bias || w.getRank() != 2 ||
        l.getGlu() || l.getResidual() ||
        l->getBlock() != first->getBlock() ||
        llvm::count(linears, l) != 1)
      return failure();
    if (l->isBeforeInBlock(first))
      first = l;
  }
  // Every check before the first change: a failure leaves the IR as it was.
  for (LinearOp l : linears)
    if (!canHoistAbove(l.getWeight(), first, dom) ||
        !canHoistAbove(l.getBias(), first, dom))
      return failure();
  for (LinearOp l : linears) {
    hoistAbove(l.getWeight(), first, dom);
    hoistAbove(l.getBias(), first, dom);
  }

  OpBuilder b(first);
  SmallVector<Location> locs;
  SmallVector<Value> weights, biases, pieces;
  for (LinearOp l : linears) {
    locs.push_back(l.getLoc());
    partsOf(l.getWeight(), weights);
    partsOf(l.getBias(), biases);
    piecesOf(l, pieces);
  }
  Location loc = b.getFusedLoc(locs);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t n = 0;
  SmallVector<Type> types;
  for (Value p : pieces) {
    types.push_back(p.getType());
    n += cast<RankedTensorType>(p.getType()).getDimSize(1);
  }
  Type f32 = b.getF32Type();
  Value w = b.create<ConcatOp>(
      loc, RankedTensorType::get({n, xt.getDimSize(1)}, f32), weights, 0);
  Value fusedBias =
      bias ? b.create<ConcatOp>(loc, RankedTensorType::get({n}, f32), biases, 0)
           : Value();
  Value y = b.create<LinearOp>(
      loc, RankedTensorType::get({xt.getDimSize(0), n}, f32), x, w, fusedBias);
  auto split = b.create<SplitOp>(loc, types, y);
  for (auto [piece, r] : llvm::zip(pieces, split.getResults()))
    piece.replaceAllUsesWith(r);
  // What the old linears (and their splits and concatenations) were is dead.
  for (LinearOp l : linears) {
    Value oldW = l.getWeight(), oldB = l.getBias();
    for (Operation *u : llvm::make_early_inc_range(l->getUsers()))
      u->erase();
    l.erase();
    for (Value v : {oldW, oldB})
      if (auto c = v ? v.getDefiningOp<ConcatOp>() : ConcatOp())
        if (c->use_empty())
          c.erase();
  }
  return success();
}

} // namespace arch
