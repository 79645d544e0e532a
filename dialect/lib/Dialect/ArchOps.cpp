//===- ArchOps.cpp - arch op verifiers ------------------------------------===//
//
// Shape checks ODS cannot state: the token dimension is dynamic, every
// feature dimension is static and must agree with the op's attributes.
//
//===----------------------------------------------------------------------===//
#include "arch/Dialect/ArchDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;

#define GET_OP_CLASSES
#include "arch/Dialect/ArchOps.cpp.inc"

namespace arch {

llvm::SetVector<Operation *> weightOnlyOps(func::FuncOp fn) {
  llvm::SetVector<Operation *> weightOnly;
  fn.walk([&](Operation *op) {
    if (isa<ParamOp>(op)) {
      weightOnly.insert(op);
      return;
    }
    if (op->getNumResults() == 0 || op->getNumOperands() == 0 ||
        !isMemoryEffectFree(op))
      return;
    if (llvm::all_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && weightOnly.contains(def);
        }))
      weightOnly.insert(op);
  });
  return weightOnly;
}

int64_t widthOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape().back();
}

std::string modelName(ModuleOp module) {
  return module.getSymName() ? module.getSymName()->str() : "model";
}

int64_t maxChunkOf(ModuleOp module) {
  auto chunk = module->getAttrOfType<IntegerAttr>("arch.max_chunk");
  auto maxSeq = module->getAttrOfType<IntegerAttr>("arch.max_seq_len");
  // (arch-lower-to-kernels reports a chunk below 1; figures take 1.)
  int64_t n = std::max<int64_t>(chunk ? chunk.getInt() : kDefaultMaxChunk, 1);
  return maxSeq ? std::max<int64_t>(std::min(n, maxSeq.getInt()), 1) : n;
}

int64_t ringRows(CacheOp c) {
  constexpr int64_t page = 4096;
  auto module = c->getParentOfType<ModuleOp>();
  // Whole pages of rows, in a unit every ring of the same capacity shares:
  // an attention's key and value rings must have as many rows (the kernel
  // finds both contexts' first position from the keys'), and a
  // differential layer's key halves have half the bytes of its values.
  auto unitOf = [&](CacheOp r) {
    int64_t rowBytes =
        r.getRowElements() * r.getRowType().getElementTypeBitWidth() / 8;
    return page / std::gcd(page, rowBytes);
  };
  int64_t unit = unitOf(c);
  for (CacheOp r : module.getOps<CacheOp>())
    if (r.getLayout() == CacheLayout::ring &&
        r.getCapacity() == c.getCapacity())
      unit = std::lcm(unit, unitOf(r));
  int64_t rows = int64_t(c.getCapacity().value_or(1)) + maxChunkOf(module) - 1;
  rows = (rows + unit - 1) / unit * unit;
  auto maxSeq = module->getAttrOfType<IntegerAttr>("arch.max_seq_len");
  return maxSeq && rows >= maxSeq.getInt() ? 0 : rows;
}

FailureOr<func::FuncOp> lookupForward(ModuleOp module) {
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn || fn.isExternal())
    return module.emitError() << "module has no func.func @forward with a body";
  FunctionType type = fn.getFunctionType();
  auto tokens = type.getNumInputs() == 2
                    ? dyn_cast<RankedTensorType>(type.getInput(0))
                    : RankedTensorType();
  auto logits = type.getNumResults() == 1
                    ? dyn_cast<RankedTensorType>(type.getResult(0))
                    : RankedTensorType();
  if (!tokens || tokens.getRank() != 1 || !tokens.isDynamicDim(0) ||
      !tokens.getElementType().isInteger(32) ||
      !type.getInput(1).isIndex() || !logits || logits.getRank() != 2 ||
      logits.getDimSize(0) != 1 || logits.isDynamicDim(1) ||
      !logits.getElementType().isF32())
    return fn.emitError() << "@forward must be (tensor<?xi32>, index) -> "
                             "tensor<1xVxf32>, got "
                          << type;
  Operation *ret = fn.getBody().front().getTerminator();
  if (!ret->getOperand(0).getDefiningOp())
    return fn.emitError() << "@forward must return a computed value";
  return fn;
}

/// A [?, N] activation: dynamic tokens, static features. Returns N or -1.
static int64_t featureDim(Operation *op, Value v, StringRef what) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() != 2 || t.isDynamicDim(1)) {
    op->emitOpError() << what << " must be a rank-2 tensor with a static "
                      << "feature dimension, got " << t;
    return -1;
  }
  return t.getDimSize(1);
}

LogicalResult WeightOp::verify() {
  auto type = getTensorType();
  if (!type.hasStaticShape())
    return emitOpError() << "weight must have a static shape, got " << type;
  auto shape = type.getShape();
  if (getPrepared() && (getSource() || getSourceShape() || getTranspose() ||
                        getRows()))
    return emitOpError() << "a prepared weight has no checkpoint source";
  if (!getPrepared() && !type.getElementType().isF32())
    return emitOpError() << "a loaded weight is f32 (16-bit weights are "
                            "prepared from it), got "
                         << type;
  if (!getSource()) {
    if (getSourceShape() || getTranspose() || getRows())
      return emitOpError() << "has a source layout but no source tensor";
    return success();
  }
  if (!getSourceShape())
    return emitOpError() << "source tensor needs its stored shape";
  llvm::SmallVector<int64_t, 2> view(*getSourceShape());
  if (view.size() != shape.size())
    return emitOpError() << "source tensor has rank " << view.size()
                         << ", the weight " << shape.size();
  if (getTranspose()) {
    if (view.size() != 2)
      return emitOpError() << "only a rank-2 source can be transposed";
    std::swap(view[0], view[1]);
  }
  for (size_t i = 1; i < view.size(); ++i)
    if (view[i] != shape[i])
      return emitOpError() << "source dimension " << i << " is " << view[i]
                           << ", the weight's " << shape[i];
  if (!getRows()) {
    if (view[0] != shape[0])
      return emitOpError() << "source has " << view[0]
                           << " rows, the weight " << shape[0];
    return success();
  }
  ArrayRef<int64_t> r = *getRows();
  if (r.size() != 4)
    return emitOpError() << "rows must be [groups, stride, offset, length]";
  int64_t groups = r[0], stride = r[1], offset = r[2], length = r[3];
  if (groups <= 0 || length <= 0 || offset < 0 || offset + length > stride)
    return emitOpError() << "rows [" << groups << ", " << stride << ", "
                         << offset << ", " << length
                         << "] do not select a block within each group";
  if (groups * stride != view[0] || groups * length != shape[0])
    return emitOpError() << "rows of " << groups << " groups of " << stride
                         << " take " << groups * length << " of "
                         << view[0] << " source rows, the weight has "
                         << shape[0];
  return success();
}

/// The `arch.weight` that `op` names through `name`, if its type is `type`.
static WeightOp lookupWeight(Operation *op, FlatSymbolRefAttr name, Type type,
                             SymbolTableCollection &symbols) {
  auto w = symbols.lookupNearestSymbolFrom<WeightOp>(op, name);
  if (!w) {
    op->emitOpError() << "names " << name << ", which is not an arch.weight";
    return {};
  }
  if (w.getType() != type) {
    op->emitOpError() << "has type " << type << " but weight " << name
                      << " is " << w.getType();
    return {};
  }
  return w;
}

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return success(bool(lookupWeight(*this, getNameAttr(), getType(), symbols)));
}

LogicalResult AssignOp::verifySymbolUses(SymbolTableCollection &symbols) {
  WeightOp w =
      lookupWeight(*this, getNameAttr(), getValue().getType(), symbols);
  if (!w)
    return failure();
  if (!w.getPrepared())
    return emitOpError() << "assigns " << getNameAttr()
                         << ", a weight loaded from the checkpoint (only "
                            "prepared weights are assigned)";
  return success();
}

LogicalResult CacheOp::verify() {
  Type elem = getRowType().getElementType();
  if (!elem.isF32() && !elem.isF16() && !elem.isBF16())
    return emitOpError() << "stores f32, f16 or bf16, not " << elem;
  // The runtime's cache table holds 32-bit capacities; kernels index rows
  // with 32-bit extents.
  const int64_t int32Max = std::numeric_limits<int32_t>::max();
  int64_t elements = getRowType().getNumElements();
  if (elements <= 0 || elements > int32Max)
    return emitOpError() << "row " << getRowType() << " must hold 1 to "
                         << int32Max << " elements";
  bool bounded = getLayout() != CacheLayout::state;
  if (bounded && (!getCapacity() || *getCapacity() <= 0 ||
                  *getCapacity() > int32Max))
    return emitOpError() << "a " << stringifyCacheLayout(getLayout())
                         << " cache needs a capacity in [1, " << int32Max
                         << "]";
  if (!bounded && getCapacity())
    return emitOpError() << "a state cache has no capacity: it holds one row";
  return success();
}

LogicalResult CacheAppendOp::verify() {
  auto rows = cast<RankedTensorType>(getRows().getType());
  auto context = cast<RankedTensorType>(getContext().getType());
  if (rows.getRank() != 2 || rows.isDynamicDim(1))
    return emitOpError() << "rows must be [T, width] with a static width, got "
                         << rows;
  if (context.getRank() != 2 || context.getDimSize(1) != rows.getDimSize(1))
    return emitOpError() << "context must be [positions, "
                         << rows.getDimSize(1) << "], got " << context;
  return success();
}

LogicalResult
CacheAppendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto cache = symbols.lookupNearestSymbolFrom<CacheOp>(*this, getCacheAttr());
  if (!cache)
    return emitOpError() << "names " << getCacheAttr()
                         << ", which is not an arch.cache";
  if (cache.getLayout() == CacheLayout::state)
    return emitOpError() << "appends to " << getCacheAttr()
                         << ", a state cache (it holds no positions)";
  int64_t width = cast<RankedTensorType>(getRows().getType()).getDimSize(1);
  if (width != cache.getRowElements())
    return emitOpError() << "rows are " << width << " wide but a row of "
                         << getCacheAttr() << " " << cache.getRowType()
                         << " holds " << cache.getRowElements();
  return success();
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t dim = getDim(), rank = out.getRank();
  if (dim < 0 || dim >= rank)
    return emitOpError() << "dim " << dim << " is outside the rank " << rank;
  if (out.isDynamicDim(dim))
    return emitOpError() << "the result must be static along dim " << dim;
  int64_t total = 0;
  for (Value in : getInputs()) {
    auto t = cast<RankedTensorType>(in.getType());
    if (t.getRank() != rank || t.isDynamicDim(dim))
      return emitOpError() << "inputs must be tensors of rank " << rank
                           << ", static along dim " << dim << ", got " << t;
    for (int64_t i = 0; i < rank; ++i)
      if (i != dim && t.getDimSize(i) != out.getDimSize(i))
        return emitOpError() << "input " << t << " differs from the result "
                             << out << " outside dim " << dim;
    total += t.getDimSize(dim);
  }
  if (total != out.getDimSize(dim))
    return emitOpError() << "inputs add up to " << total << " along dim "
                         << dim << ", the result has " << out.getDimSize(dim);
  return success();
}

/// K of packed weight type `t`: [panels, K, panel], or [panels, K / 2,
/// panel, 2] (the pairs of the bf16 dot product); -1 if `t` is neither.
static int64_t packedK(RankedTensorType t) {
  if (t.getRank() == 3)
    return t.getDimSize(1);
  if (t.getRank() == 4 && t.getDimSize(3) == 2 && t.getElementType().isBF16())
    return 2 * t.getDimSize(1);
  return -1;
}

LogicalResult PackOp::verify() {
  if (getWeights().empty())
    return emitOpError() << "needs a weight";
  auto w = cast<RankedTensorType>(getWeights().front().getType());
  auto r = cast<RankedTensorType>(getResult().getType());
  int64_t panel = getPanel(), groups = getGroups().value_or(1);
  int64_t parts = int64_t(getWeights().size());
  if (w.getRank() != 2 || !w.hasStaticShape())
    return emitOpError() << "weight must be a static [N, K] tensor, got " << w;
  if (panel <= 0)
    return emitOpError() << "panel must be positive";
  // Several weights: one group each, of one shape.
  if (parts > 1) {
    if (groups != parts)
      return emitOpError() << parts << " weights must be " << parts
                           << " groups, got " << groups;
    for (Value v : getWeights())
      if (v.getType() != w)
        return emitOpError() << "weights must share one type, got " << w
                             << " and " << v.getType();
  }
  int64_t n = w.getDimSize(0) * parts, k = w.getDimSize(1);
  if (groups <= 0 || n % groups != 0)
    return emitOpError() << "groups (" << groups << ") must divide N = " << n;
  int64_t panels = groups * ((n / groups + panel - 1) / panel);
  if (r.getRank() == 4) {
    if (packedK(r) != k || k % 2 || r.getDimSize(0) != panels ||
        r.getDimSize(2) != panel)
      return emitOpError() << "result in pairs must be tensor<" << panels
                           << "x" << k / 2 << "x" << panel
                           << "x2xbf16> (an even K), got " << r;
    return success();
  }
  if (r.getRank() != 3 || r.getDimSize(0) != panels || r.getDimSize(1) != k ||
      r.getDimSize(2) != panel)
    return emitOpError() << "result must be tensor<" << panels << "x" << k
                         << "x" << panel << "x(f32|f16|bf16)>, got " << r;
  return success();
}

LogicalResult RouteOp::verify() {
  int64_t e = featureDim(*this, getLogits(), "logits");
  if (e < 0)
    return failure();
  int64_t k = getTopK(), groups = getNGroup(), kept = getTopkGroup();
  if (k < 1 || k > e)
    return emitOpError() << "top_k = " << k << " must be in [1, " << e
                         << "] (the router scores " << e << " experts)";
  if (groups < 1 || e % groups != 0)
    return emitOpError() << "n_group = " << groups
                         << " must divide the " << e << " experts";
  if (kept < 1 || kept > groups)
    return emitOpError() << "topk_group = " << kept << " must be in [1, "
                         << groups << "]";
  if (k > kept * (e / groups))
    return emitOpError() << "top_k = " << k << " exceeds the "
                         << kept * (e / groups)
                         << " experts of the groups kept";
  if (groups > 1 && getScoring() == RouterScoring::sigmoid && e / groups < 2)
    return emitOpError() << "sigmoid group scores sum a group's best two "
                            "experts: groups of at least 2";
  if (getBias()) {
    auto b = cast<RankedTensorType>(getBias().getType());
    if (b.getRank() != 1 || b.getDimSize(0) != e)
      return emitOpError() << "bias must be tensor<" << e << "xf32>, got "
                           << b;
  }
  if (!(getScaling().convertToFloat() > 0))
    return emitOpError() << "scaling must be positive";
  auto tokens = cast<RankedTensorType>(getLogits().getType()).getDimSize(0);
  for (Value r : {getExperts(), getWeights()}) {
    auto t = cast<RankedTensorType>(r.getType());
    if (t.getRank() != 2 || t.getDimSize(0) != tokens || t.getDimSize(1) != k)
      return emitOpError() << "results must be [tokens, top_k] = [" << 
                              (ShapedType::isDynamic(tokens)
                                   ? std::string("?")
                                   : std::to_string(tokens))
                           << ", " << k << "], got " << t;
  }
  return success();
}

LogicalResult MoEOp::verify() {
  int64_t d = featureDim(*this, getInput(), "input");
  if (d < 0)
    return failure();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type";
  int64_t e = getNExperts(), f = getDFf();
  if (e < 1 || f < 1)
    return emitOpError() << "n_experts and d_ff must be positive";
  auto experts = cast<RankedTensorType>(getExperts().getType());
  auto weights = cast<RankedTensorType>(getWeights().getType());
  auto input = cast<RankedTensorType>(getInput().getType());
  if (experts.getRank() != 2 || experts.getShape() != weights.getShape() ||
      experts.getDimSize(0) != input.getDimSize(0) ||
      experts.isDynamicDim(1))
    return emitOpError() << "experts and weights must be [tokens, top_k] "
                            "alike, got "
                         << experts << " and " << weights;
  if (experts.getDimSize(1) > e)
    return emitOpError() << "top_k = " << experts.getDimSize(1)
                         << " exceeds n_experts = " << e;
  // Stacked [E * rows, cols] or packed by expert [E * panels, cols, panel].
  auto check = [&](Value w, const char *name, int64_t rows,
                   int64_t cols) -> LogicalResult {
    auto t = cast<RankedTensorType>(w.getType());
    if (t.getRank() == 2 && !t.getElementType().isF32())
      return emitOpError() << name << ": a 16-bit weight must be packed, got "
                           << t;
    if (t.getRank() == 2 && t.getDimSize(0) == e * rows &&
        t.getDimSize(1) == cols)
      return success();
    if (t.getRank() >= 3 && t.getDimSize(2) > 0 && packedK(t) == cols &&
        t.getDimSize(0) ==
            e * ((rows + t.getDimSize(2) - 1) / t.getDimSize(2)))
      return success();
    return emitOpError() << name << " must be tensor<" << e * rows << "x"
                         << cols << "xf32> (" << e << " experts of [" << rows
                         << ", " << cols << "]) or packed by expert, got "
                         << t;
  };
  if ((getGate() && failed(check(getGate(), "gate", f, d))) ||
      failed(check(getUp(), "up", f, d)) ||
      failed(check(getDown(), "down", d, f)))
    return failure();
  return success();
}

/// The width of each of the `heads` heads of `v` ([?, heads * w], w > 0),
/// or -1 with an error.
static int64_t headWidth(Operation *op, Value v, int64_t heads,
                         StringRef what) {
  int64_t w = featureDim(op, v, what);
  if (w < 0)
    return -1;
  if (w == 0 || w % heads != 0) {
    op->emitOpError() << what << " width " << w
                      << " is not a positive multiple of " << heads
                      << " heads";
    return -1;
  }
  return w / heads;
}

/// a * b, or -1 when it overflows int64 (operands non-negative).
static int64_t product(int64_t a, int64_t b) {
  int64_t r;
  return llvm::MulOverflow(a, b, r) ? -1 : r;
}

/// split and heads_split: `results` share out the columns of `input` (of
/// each of its `heads` heads when `heads` > 0; a plain split has none), all
/// with the input's token dimension, together covering it.
static LogicalResult verifySplit(Operation *op, Value input,
                                 ValueRange results, int64_t heads) {
  auto width = [&](Value v, StringRef what) {
    return heads > 0 ? headWidth(op, v, heads, what)
                     : featureDim(op, v, what);
  };
  int64_t w = width(input, "input");
  if (w < 0)
    return failure();
  if (results.empty())
    return op->emitOpError() << "needs at least one result";
  int64_t total = 0;
  for (Value r : results) {
    int64_t rw = width(r, "result");
    if (rw < 0)
      return failure();
    if (cast<RankedTensorType>(r.getType()).getDimSize(0) !=
        cast<RankedTensorType>(input.getType()).getDimSize(0))
      return op->emitOpError()
             << "results must have the input's token dimension";
    total += rw;
  }
  if (total == w)
    return success();
  if (heads > 0)
    return op->emitOpError() << "results cover " << total
                             << " columns of each head, the input's heads have "
                             << w;
  return op->emitOpError() << "results cover " << total
                           << " columns, the input has " << w;
}

LogicalResult SplitOp::verify() {
  return verifySplit(*this, getInput(), getResults(), 0);
}

LogicalResult HeadsSplitOp::verify() {
  if (getHeads() < 1)
    return emitOpError() << "heads must be positive";
  return verifySplit(*this, getInput(), getResults(), getHeads());
}

LogicalResult HeadsConcatOp::verify() {
  int64_t h = getHeads();
  if (h < 1)
    return emitOpError() << "heads must be positive";
  ArrayRef<int64_t> inHeads = getInputHeads();
  if (getInputs().empty() || inHeads.size() != getInputs().size())
    return emitOpError() << "needs inputs and one input_heads entry each";
  int64_t total = 0;
  for (auto [v, n] : llvm::zip(getInputs(), inHeads)) {
    if (n != h && n != 1)
      return emitOpError() << "an input has " << h
                           << " heads or one (shared), got " << n;
    int64_t w = headWidth(*this, v, n, "input");
    if (w < 0)
      return failure();
    if (cast<RankedTensorType>(v.getType()).getDimSize(0) !=
        cast<RankedTensorType>(getResult().getType()).getDimSize(0))
      return emitOpError() << "inputs must have the result's token dimension";
    total += w;
  }
  int64_t out = featureDim(*this, getResult(), "result");
  if (out < 0)
    return failure();
  if (product(h, total) < 0 || out != h * total)
    return emitOpError() << "result width " << out << " != heads * "
                         << "the inputs' head widths (" << h << " x " << total
                         << ")";
  return success();
}

LogicalResult HeadLinearOp::verify() {
  int64_t h = getHeads();
  if (h < 1)
    return emitOpError() << "heads must be positive";
  int64_t k = headWidth(*this, getInput(), h, "input");
  int64_t n = k < 0 ? -1 : headWidth(*this, getResult(), h, "result");
  if (n < 0)
    return failure();
  if (cast<RankedTensorType>(getResult().getType()).getDimSize(0) !=
      cast<RankedTensorType>(getInput().getType()).getDimSize(0))
    return emitOpError() << "result must have the input's token dimension";
  auto w = cast<RankedTensorType>(getWeight().getType());
  SmallVector<int64_t, 2> want =
      getKMajor() ? SmallVector<int64_t, 2>{h * k, n}
                  : SmallVector<int64_t, 2>{h * n, k};
  if (!w.hasStaticShape() || w.getShape() != ArrayRef<int64_t>(want))
    return emitOpError() << "weight must be tensor<" << want[0] << "x"
                         << want[1] << "xf32> (" << h << " heads of "
                         << (getKMajor() ? "[K, N]" : "[N, K]") << ", K = " << k
                         << ", N = " << n << "), got " << w;
  return success();
}

LogicalResult DifferentialOp::verify() {
  auto a = cast<RankedTensorType>(getFirst().getType());
  if (a.getRank() != 2 || a.isDynamicDim(1))
    return emitOpError() << "maps must be [tokens, width], got " << a;
  if (getSecond().getType() != a || getResult().getType() != a)
    return emitOpError() << "both maps and the result must have one type, got "
                         << a << ", " << getSecond().getType() << " -> "
                         << getResult().getType();
  auto l = cast<RankedTensorType>(getLambdaQ1().getType());
  if (l.getRank() != 1 || !l.hasStaticShape())
    return emitOpError() << "lambda vectors must be 1-D and static, got " << l;
  for (Value v : {getLambdaK1(), getLambdaQ2(), getLambdaK2()})
    if (v.getType() != l)
      return emitOpError() << "the four lambda vectors must have one type, got "
                           << l << " and " << v.getType();
  return success();
}

LogicalResult EmbedOp::verify() {
  auto table = cast<RankedTensorType>(getTable().getType());
  if (table.getRank() != 2 || !table.hasStaticShape())
    return emitOpError() << "table must be a static [vocab, d_model] tensor";
  int64_t d = featureDim(*this, getResult(), "result");
  if (d < 0)
    return failure();
  if (d != table.getDimSize(1))
    return emitOpError() << "result width " << d
                         << " does not match the table's d_model "
                         << table.getDimSize(1);
  return success();
}

LogicalResult NormOp::verify() {
  int64_t d = featureDim(*this, getInput(), "input");
  if (d < 0)
    return failure();
  if (getGroups() < 1 || d % getGroups() != 0)
    return emitOpError() << "groups (" << getGroups()
                         << ") must divide the input width " << d;
  int64_t g = int64_t(getGroups());
  d /= g;
  // One weight for every group ([d]) or one per group ([groups, d]).
  auto w = cast<RankedTensorType>(getWeight().getType());
  bool shared = w.getRank() == 1 && w.getDimSize(0) == d;
  bool perGroup = w.getRank() == 2 && w.getDimSize(0) == g &&
                  w.getDimSize(1) == d;
  if (!shared && !perGroup)
    return emitOpError() << "weight must be tensor<" << d << "xf32> or tensor<"
                         << g << "x" << d << "xf32>, got " << w;
  if (getBias() && getBias().getType() != getWeight().getType())
    return emitOpError() << "bias must have the weight's type " << w
                         << ", got " << getBias().getType();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type";
  if (getEps().convertToFloat() <= 0)
    return emitOpError() << "eps must be positive";
  return success();
}

LogicalResult LinearOp::verify() {
  int64_t k = featureDim(*this, getInput(), "input");
  if (k < 0)
    return failure();
  auto w = cast<RankedTensorType>(getWeight().getType());
  bool packed = w.getRank() > 2;
  if (!w.hasStaticShape() || (packed ? packedK(w) < 0 : w.getRank() != 2))
    return emitOpError() << "weight must be a static [N, K] tensor or packed "
                         << "[panels, K, panel] (or bf16 [panels, K / 2, "
                            "panel, 2]), got "
                         << w;
  int64_t wk = packed ? packedK(w) : w.getDimSize(1);
  if (wk != k)
    return emitOpError() << "weight has K = " << wk
                         << " but the input has " << k << " features";
  int64_t n = featureDim(*this, getResult(), "result");
  if (n < 0)
    return failure();
  if (!packed && !w.getElementType().isF32())
    return emitOpError() << "a 16-bit weight must be packed, got " << w;
  // A glu epilogue's weight: the gate's n rows, then the up's.
  int64_t halves = getGlu() ? 2 : 1;
  if (getGlu() && getBias())
    return emitOpError() << "a glu epilogue takes no bias";
  if (getGlu() && getResidual())
    return emitOpError() << "a glu epilogue takes no residual";
  if (getResidual() && getResidual().getType() != getResult().getType())
    return emitOpError() << "residual must have the result's type "
                         << getResult().getType() << ", got "
                         << getResidual().getType();
  if (packed) {
    int64_t panel = w.getDimSize(2), panels = w.getDimSize(0);
    int64_t want = halves * ((n + panel - 1) / std::max<int64_t>(panel, 1));
    if (panel <= 0 || panels != want)
      return emitOpError() << "a packed weight for " << n << " features"
                           << (getGlu() ? " (glu: two halves)" : "") << " has "
                           << want << " panels of " << panel << ", got " << w;
    // (Packed here: its halves alone, or the count may match a layout that
    // straddles them.)
    if (auto p = getWeight().getDefiningOp<PackOp>();
        p && int64_t(p.getGroups().value_or(1)) != halves)
      return emitOpError() << "a packed weight for " << halves
                           << " half(s) must be packed in " << halves
                           << " group(s), got " << p.getGroups().value_or(1);
  } else if (halves * n != w.getDimSize(0)) {
    return emitOpError() << "result has " << n << " features"
                         << (getGlu() ? " (glu: two halves)" : "")
                         << " but the weight has N = " << w.getDimSize(0);
  }
  if (getBias()) {
    auto b = cast<RankedTensorType>(getBias().getType());
    if (b.getRank() != 1 || b.getDimSize(0) != n)
      return emitOpError() << "bias must be tensor<" << n << "xf32>, got "
                           << b;
  }
  return success();
}

LogicalResult SoftcapOp::verify() {
  if (!(getCap().convertToFloat() > 0))
    return emitOpError() << "cap must be positive";
  return success();
}

LogicalResult LastTokenOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getRank() != 2 || out.getRank() != 2 || out.getDimSize(0) != 1 ||
      in.getDimSize(1) != out.getDimSize(1) ||
      in.getElementType() != out.getElementType())
    return emitOpError() << "expects [T, N] -> [1, N], got " << in << " -> "
                         << out;
  return success();
}

LogicalResult LastPositionOp::verify() {
  if (cast<RankedTensorType>(getRows().getType()).getRank() != 2)
    return emitOpError() << "expects token rows [T, N], got "
                         << getRows().getType();
  return success();
}

LogicalResult PosEmbedOp::verify() {
  int64_t d = featureDim(*this, getInput(), "input");
  if (d < 0)
    return failure();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type";
  if (int64_t(getOffset()) < 0)
    return emitOpError() << "offset must be non-negative";
  bool learned = getKind() == PosEmbedKind::learned;
  if (learned != bool(getTable()))
    return emitOpError() << (learned ? "learned positions need a table"
                                     : "sinusoidal positions take no table");
  if (learned) {
    auto t = cast<RankedTensorType>(getTable().getType());
    if (t.getRank() != 2 || !t.hasStaticShape() || t.getDimSize(1) != d ||
        t.getDimSize(0) <= int64_t(getOffset()))
      return emitOpError() << "table must be a static [positions, " << d
                           << "] tensor with more than offset rows, got " << t;
  } else if (d % 2 != 0) {
    return emitOpError() << "sinusoidal positions need an even width, got "
                         << d;
  }
  return success();
}

LogicalResult RopeOp::verify() {
  int64_t d = featureDim(*this, getInput(), "input");
  if (d < 0)
    return failure();
  int64_t heads = getNHeads(), hd = getHeadDim(), rot = getRotaryDim();
  // (An epilogue's input may be wider: its other columns pass through.)
  if (heads <= 0 || hd <= 0 || heads * hd > d ||
      (heads * hd != d && !getEpilogue()))
    return emitOpError() << "n_heads (" << heads << ") * head_dim (" << hd
                         << ") must equal the input width " << d
                         << (getEpilogue() ? " or be less" : "");
  if (getEpilogue()) {
    // (Its linear's kernel writes the whole result by heads.)
    if (d % hd)
      return emitOpError() << "epilogue needs an input width (" << d
                           << ") of whole heads of " << hd;
    auto l = getInput().getDefiningOp<LinearOp>();
    if (!l || !l->hasOneUse() || l.getGlu() || l.getResidual())
      return emitOpError() << "epilogue needs an input that an arch.linear "
                              "without glu or residual makes for it alone";
  }
  if (rot <= 0 || rot > hd || rot % 2 != 0)
    return emitOpError() << "rotary_dim must be even and in (0, head_dim], "
                         << "got " << rot;
  if (getTheta().convertToDouble() <= 0)
    return emitOpError() << "theta must be positive";
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type";
  // LongRoPE's factor for each rotated pair; no list for another scaling.
  std::optional<ArrayRef<double>> factors = getFactors();
  bool longRoPE = getScaling() == RopeScaling::longrope;
  if (longRoPE != factors.has_value())
    return emitOpError() << "takes factors with longrope scaling and "
                            "only then";
  if (factors && int64_t(factors->size()) != rot / 2)
    return emitOpError() << "has " << factors->size()
                         << " factors for " << rot / 2 << " rotated pairs";
  if (factors && llvm::any_of(*factors, [](double f) {
        return !(f > 0) || !std::isfinite(f);
      }))
    return emitOpError() << "factors must be positive and finite";
  double attn = getAttentionFactor().convertToDouble();
  if (!(attn > 0) || !std::isfinite(attn) || (!longRoPE && attn != 1))
    return emitOpError() << "attention_factor must be positive and finite, "
                            "and 1 but with longrope";
  return success();
}

/// What arch.attention and arch.flash_attention both verify.
template <class Op> static LogicalResult verifyAttention(Op op) {
  int64_t heads = op.getNHeads(), kvHeads = op.getNKvHeads(),
          hd = op.getHeadDim(), vd = op.getValueHeadDim();
  if (heads <= 0 || kvHeads <= 0 || hd <= 0 || int64_t(op.getVHeadDim()) < 0)
    return op.emitOpError() << "n_heads, n_kv_heads and head_dim must be "
                               "positive, v_head_dim non-negative";
  if (heads % kvHeads != 0)
    return op.emitOpError()
           << "n_heads (" << heads << ") must be a multiple of n_kv_heads ("
           << kvHeads << ")";
  int64_t q = featureDim(op, op.getQuery(), "query");
  int64_t k = featureDim(op, op.getKey(), "key");
  int64_t v = featureDim(op, op.getValue(), "value");
  if (q < 0 || k < 0 || v < 0)
    return failure();
  if (product(heads, hd) < 0 || product(heads, vd) < 0 ||
      product(kvHeads, std::max(hd, vd)) < 0)
    return op.emitOpError() << "n_heads, n_kv_heads and head dims overflow "
                               "int64";
  if (q != heads * hd)
    return op.emitOpError() << "query width " << q << " != n_heads * head_dim ("
                            << heads * hd << ")";
  if (k != kvHeads * hd || v != kvHeads * vd)
    return op.emitOpError()
           << "key and value widths must be n_kv_heads * head_dim ("
           << kvHeads * hd << ") and n_kv_heads * v_head_dim (" << kvHeads * vd
           << "), got " << k << " and " << v;
  auto qt = cast<RankedTensorType>(op.getQuery().getType());
  if (op.getResult().getType() !=
      RankedTensorType::get({qt.getDimSize(0), heads * vd},
                            qt.getElementType()))
    return op.emitOpError() << "result must be the query's rows of n_heads * "
                               "v_head_dim ("
                            << heads * vd << ") columns";
  if (vd != hd && op.getRelKey())
    return op.emitOpError() << "Shaw tables need v_head_dim = head_dim";
  if (int64_t(op.getWindow()) < 0)
    return op.emitOpError() << "window must be non-negative";
  int64_t window = int64_t(op.getWindow()), dilation = int64_t(op.getDilation());
  if (dilation < 1 || (dilation > 1 && window == 0))
    return op.emitOpError() << "dilation must be 1, or more with a window; got "
                            << dilation << " with window " << window;
  if (product(window, dilation) < 0 || window * dilation > (int64_t(1) << 24))
    return op.emitOpError() << "window * dilation must be at most 2^24";
  int64_t r = int64_t(op.getRandomBlocks()), bs = int64_t(op.getBlockSize());
  if (r < 0 || r > 16 || (r > 0 && (window == 0 || bs < 1)) ||
      (r == 0 && bs != 0) || bs < 0 || bs > (int64_t(1) << 24) ||
      int64_t(op.getRandomSeed()) < 0 ||
      int64_t(op.getRandomSeed()) > 0xffffffffll)
    return op.emitOpError()
           << "random_blocks must be in [0, 16], and when positive come with "
              "a window and a block_size in [1, 2^24] (0 otherwise); "
              "random_seed a 32-bit value";
  if (auto globals = op.getGlobalTokens()) {
    if (window == 0 || globals->empty() || globals->size() > 64)
      return op.emitOpError() << "global_tokens widen a window: a list of 1 "
                                 "to 64 positions with a window";
    for (size_t i = 0; i < globals->size(); ++i)
      if ((*globals)[i] < 0 || (*globals)[i] >= (int64_t(1) << 24) ||
          (i > 0 && (*globals)[i] <= (*globals)[i - 1]))
        return op.emitOpError() << "global_tokens must be increasing "
                                   "positions in [0, 2^24)";
  }
  if (op.getRelBias()) {
    auto t = cast<RankedTensorType>(op.getRelBias().getType());
    if (t.getRank() != 2 || !t.hasStaticShape() || t.getDimSize(1) != heads ||
        t.getDimSize(0) < 2)
      return op.emitOpError() << "rel_bias must be a static [buckets, " << heads
                              << "] tensor, got " << t;
    if (int64_t(op.getT5MaxDistance()) <= t.getDimSize(0) / 2)
      return op.emitOpError() << "t5_max_distance must exceed buckets / 2";
    if (op.getAlibi())
      return op.emitOpError() << "takes ALiBi or a T5 bias, not both";
  }
  if (bool(op.getRelKey()) != bool(op.getRelValue()))
    return op.emitOpError() << "Shaw positions need both rel_key and rel_value";
  // The tables and a positive clip come together: the kernel reads tables
  // exactly when it is given a clip.
  if (bool(op.getRelKey()) != (int64_t(op.getShawClip()) > 0))
    return op.emitOpError() << "shaw_clip must be positive with Shaw tables "
                               "and 0 without, got "
                            << int64_t(op.getShawClip());
  if (op.getRelKey()) {
    int64_t rows = 2 * int64_t(op.getShawClip()) + 1;
    for (Value t : {op.getRelKey(), op.getRelValue()}) {
      auto ty = cast<RankedTensorType>(t.getType());
      if (ty.getRank() != 2 || ty.getDimSize(0) != rows ||
          ty.getDimSize(1) != hd)
        return op.emitOpError()
               << "Shaw tables must be tensor<" << rows << "x" << hd
               << "xf32> (2 shaw_clip + 1 rows), got " << ty;
    }
  }
  if (op.getSoftcap().convertToDouble() < 0)
    return op.emitOpError() << "softcap must be positive (or 0 for none)";
  return success();
}

LogicalResult AttentionOp::verify() { return verifyAttention(*this); }

LogicalResult FlashAttentionOp::verify() {
  if (failed(verifyAttention(*this)))
    return failure();
  int64_t bq = getBlockQ(), bkv = getBlockKv(), split = getSplitKv();
  auto fits = [](int64_t v) { return v > 0 && v <= kMaxFlashBlock; };
  if (!fits(bq) || !fits(bkv) || !fits(split))
    return emitOpError() << "block_q, block_kv and split_kv must be in [1, "
                         << kMaxFlashBlock << "], got " << bq << ", " << bkv
                         << " and " << split;
  if (getBf16Dot() && !bf16DotFits(getHeadDim(), bkv, getShawClip()))
    return emitOpError() << "bf16_dot needs an even head_dim and block_kv "
                            "and no Shaw relative positions";
  return success();
}

LogicalResult LinearAttentionOp::verify() {
  int64_t heads = getNHeads(), kvHeads = getNKvHeads(), hd = getHeadDim(),
          vd = getValueHeadDim();
  if (heads <= 0 || kvHeads <= 0 || hd <= 0 || int64_t(getVHeadDim()) < 0)
    return emitOpError() << "n_heads, n_kv_heads and head_dim must be "
                            "positive, v_head_dim non-negative";
  if (heads % kvHeads != 0)
    return emitOpError() << "n_heads (" << heads
                         << ") must be a multiple of n_kv_heads (" << kvHeads
                         << ")";
  int64_t q = featureDim(*this, getQuery(), "query");
  int64_t k = featureDim(*this, getKey(), "key");
  int64_t v = featureDim(*this, getValue(), "value");
  if (q < 0 || k < 0 || v < 0)
    return failure();
  if (product(heads, std::max(hd, vd)) < 0 ||
      product(product(kvHeads, hd), vd + 1) < 0)
    return emitOpError() << "n_heads, n_kv_heads and head dims overflow "
                            "int64";
  if (q != heads * hd || k != kvHeads * hd || v != kvHeads * vd)
    return emitOpError() << "query, key and value widths must be n_heads * "
                            "head_dim ("
                         << heads * hd << "), n_kv_heads * head_dim ("
                         << kvHeads * hd << ") and n_kv_heads * v_head_dim ("
                         << kvHeads * vd << "), got " << q << ", " << k
                         << " and " << v;
  auto qt = cast<RankedTensorType>(getQuery().getType());
  if (getResult().getType() !=
      RankedTensorType::get({qt.getDimSize(0), heads * vd},
                            qt.getElementType()))
    return emitOpError() << "result must be the query's rows of n_heads * "
                            "v_head_dim ("
                         << heads * vd << ") columns";
  int64_t chunk = int64_t(getChunk());
  if (chunk < 0 || chunk > kMaxFlashBlock)
    return emitOpError() << "chunk must be in [0, " << kMaxFlashBlock
                         << "], got " << chunk;
  double scale = getScale().convertToDouble();
  if (!(scale > 0) || !std::isfinite(scale))
    return emitOpError() << "scale must be positive and finite";
  return success();
}

LogicalResult
LinearAttentionOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto cache = symbols.lookupNearestSymbolFrom<CacheOp>(*this, getStateAttr());
  if (!cache)
    return emitOpError() << "names " << getStateAttr()
                         << ", which is not an arch.cache";
  if (cache.getLayout() != CacheLayout::state)
    return emitOpError() << "keeps its state in " << getStateAttr() << ", a "
                         << stringifyCacheLayout(cache.getLayout())
                         << " cache: it needs a state cache";
  auto want = RankedTensorType::get(
      {int64_t(getNKvHeads()), int64_t(getHeadDim()), getStateColumns()},
      Float32Type::get(getContext()));
  if (cache.getRowType() != want)
    return emitOpError() << "needs a state of " << want << " (n_kv_heads, "
                         << "head_dim, v_head_dim"
                         << (getNormalize() ? " + 1 for the normalizer" : "")
                         << "), but " << getStateAttr() << " is "
                         << cache.getRowType();
  return success();
}

} // namespace arch
