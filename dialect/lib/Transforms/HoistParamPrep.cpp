//===- HoistParamPrep.cpp - Weight-only work, once per load ---------------===//
//
// A value that depends only on weights is the same on every forward call:
// computing it there would repeat a weight-sized copy per token. It becomes
// a prepared weight that @prepare_params computes once, when weights load.
//
//===----------------------------------------------------------------------===//
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_HOISTPARAMPREPPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// `a.b.{x,y,z}.c` for weights `a.b.x.c`, `a.b.y.c`, `a.b.z.c`: the common
/// dotted prefix and suffix around the parts that differ.
static std::string joinedName(ArrayRef<StringRef> names) {
  StringRef first = names.front();
  size_t pre = first.size(), suf = first.size();
  for (StringRef n : names.drop_front()) {
    size_t i = 0;
    while (i < pre && i < n.size() && n[i] == first[i])
      ++i;
    pre = i;
    size_t j = 0;
    while (j < suf && j < n.size() &&
           n[n.size() - 1 - j] == first[first.size() - 1 - j])
      ++j;
    suf = j;
  }
  // Cut at dots, so that whole name components differ.
  pre = first.substr(0, pre).rfind('.') + 1; // npos + 1 == 0
  size_t dot = first.substr(first.size() - suf).find('.');
  suf = dot == StringRef::npos ? 0 : suf - dot;
  std::string out = first.substr(0, pre).str() + "{";
  for (size_t i = 0; i < names.size(); ++i) {
    StringRef n = names[i];
    size_t end = n.size() - suf;
    out += (i ? "," : "") + n.substr(pre, end > pre ? end - pre : 0).str();
  }
  return out + "}" + first.substr(first.size() - suf).str();
}

/// A name for the prepared value computed by `slice` (in order): the
/// weights it reads, joined in the order its ops read them (a
/// concatenation's parts in place), then each step after concatenation by
/// its op (`….{q_proj,k_proj,v_proj}.weight.pack`); `prepared.N` when
/// taken.
static std::string preparedName(ArrayRef<Operation *> slice, ModuleOp module,
                                unsigned &counter) {
  SmallVector<StringRef> names;
  std::string steps;
  auto add = [&](ParamOp p) {
    if (p && !llvm::is_contained(names, p.getName()))
      names.push_back(p.getName());
  };
  for (Operation *op : slice) {
    if (isa<ParamOp>(op))
      continue;
    for (Value v : op->getOperands())
      add(v.getDefiningOp<ParamOp>());
    if (!isa<ConcatOp>(op))
      steps += "." + op->getName().stripDialect().str();
  }
  for (Operation *op : slice)
    add(dyn_cast<ParamOp>(op));
  std::string name;
  if (!names.empty())
    name = (names.size() == 1 ? names.front().str() : joinedName(names)) +
           steps;
  while (name.empty() || module.lookupSymbol(name))
    name = "prepared." + std::to_string(counter++);
  return name;
}

struct HoistParamPrepPass
    : impl::HoistParamPrepPassBase<HoistParamPrepPass> {
  void runOnOperation() override;
};

// op(param @a, param @b) in @forward
//   => @forward:        param @"{a,b}"
//      @prepare_params: assign @"{a,b}" = op(param @a, param @b)
void HoistParamPrepPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return;
  llvm::SetVector<Operation *> weightOnly = weightOnlyOps(forward);
  // Roots: weight-only results read by the rest of @forward. A bare
  // arch.param is already a weight.
  SmallVector<Operation *> roots;
  for (Operation *op : weightOnly)
    if (!isa<ParamOp>(op) && op->getNumResults() == 1 &&
        llvm::any_of(op->getUsers(),
                     [&](Operation *u) { return !weightOnly.contains(u); }))
      roots.push_back(op);
  if (roots.empty()) {
    markAllAnalysesPreserved();
    return;
  }

  OpBuilder b(module.getContext());
  auto prepare = module.lookupSymbol<func::FuncOp>("prepare_params");
  if (!prepare) {
    b.setInsertionPoint(forward);
    prepare = b.create<func::FuncOp>(forward.getLoc(), "prepare_params",
                                     b.getFunctionType({}, {}));
    b.setInsertionPointToEnd(prepare.addEntryBlock());
    b.create<func::ReturnOp>(forward.getLoc());
  }
  Block &prep = prepare.getBody().front();
  unsigned counter = 0;
  struct Prepared {
    Operation *root;
    SmallVector<Operation *> ordered; ///< the ops it needs, in order
    std::string name;
  };
  std::vector<Prepared> all;
  for (Operation *root : roots) {
    llvm::SetVector<Operation *> slice;
    SmallVector<Operation *> stack{root};
    while (!stack.empty()) {
      Operation *op = stack.pop_back_val();
      if (!slice.insert(op))
        continue;
      for (Value in : op->getOperands())
        stack.push_back(in.getDefiningOp());
    }
    SmallVector<Operation *> ordered(slice.begin(), slice.end());
    llvm::sort(ordered, [](Operation *a, Operation *c) {
      return a->isBeforeInBlock(c);
    });
    std::string name = preparedName(ordered, module, counter);
    b.setInsertionPoint(prepare);
    b.create<WeightOp>(root->getLoc(), name,
                       cast<RankedTensorType>(root->getResult(0).getType()),
                       /*prepared=*/true);
    all.push_back({root, std::move(ordered), std::move(name)});
  }
  // The largest computed first, the others in forward order: a loader
  // converts each loaded weight to f32 when preparation first reads it
  // (archk.acquire), so a weight's f32 copy is resident beside the
  // prepared weights computed before it, and the largest, first, finds
  // none (a BF16 checkpoint of bench-156m into a bf16 library, its
  // classifier first: the load's peak 497 -> 384 MiB for 366 resident
  // after; docs/performance.md "Loading 16-bit checkpoints"). (Only the
  // largest: specs that differ in sizes mostly keep one glue,
  // test/Lowering/same-glue.)
  auto elements = [](const Prepared &p) {
    return cast<RankedTensorType>(p.root->getResult(0).getType())
        .getNumElements();
  };
  auto largest = std::max_element( // (the first of equals)
      all.begin(), all.end(), [&](const Prepared &x, const Prepared &y) {
        return elements(x) < elements(y);
      });
  if (largest != all.end())
    std::rotate(all.begin(), largest, largest + 1);
  for (Prepared &p : all) {
    IRMapping map;
    b.setInsertionPoint(prep.getTerminator());
    for (Operation *op : p.ordered)
      b.clone(*op, map);
    b.create<AssignOp>(p.root->getLoc(), p.name,
                       map.lookup(p.root->getResult(0)));
  }
  for (Prepared &p : all) {
    Operation *root = p.root;
    Value result = root->getResult(0);
    auto type = cast<RankedTensorType>(result.getType());
    const std::string &name = p.name;
    b.setInsertionPoint(root);
    Value read = b.create<ParamOp>(root->getLoc(), type, name);
    result.replaceUsesWithIf(read, [&](OpOperand &use) {
      return !weightOnly.contains(use.getOwner());
    });
  }
  // What only fed the roots is dead now.
  for (Operation *op : llvm::reverse(weightOnly))
    if (op->use_empty())
      op->erase();
}

} // namespace
} // namespace arch
