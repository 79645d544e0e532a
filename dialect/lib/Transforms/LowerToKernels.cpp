//===- LowerToKernels.cpp - arch ops -> kernel calls on buffers -----------===//
//
// One OpConversionPattern per arch op, in the style of Toy's lowering: each
// allocates its result buffer, emits the archk.call of its kernel (the
// typed description, argument by name in the order the kind declares) and
// replaces its tensor result by the buffer, or by a view of another buffer.
// The checks before the conversion name what has no lowering; the
// clean-up after it writes results straight into their final buffers.
//
//===----------------------------------------------------------------------===//
#include "arch/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <limits>
#include <map>

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_LOWERTOKERNELSPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

using EW = ElementwiseKernel;
using Args = std::map<std::string, Value>;

/// The buffer an operand became (the tokens reach their pattern through
/// the cast that keeps the function well typed during the conversion).
Value buf(Value v) {
  while (auto c = v.getDefiningOp<UnrealizedConversionCastOp>())
    v = c.getInputs()[0];
  return v;
}

/// Token rows of buffer `m`: the value its producer sized it with.
Value rowsOf(OpBuilder &b, Location loc, Value m) {
  return b.createOrFold<memref::DimOp>(loc, m, 0);
}

/// A buffer of `rows` token rows of `width` floats.
Value newRows(OpBuilder &b, Location loc, Value rows, int64_t width) {
  auto type = MemRefType::get({ShapedType::kDynamic, width}, b.getF32Type());
  return b.create<memref::AllocOp>(loc, type, ValueRange{rows});
}

/// Whether buffer `m` holds a context's rows, pos + T of them: a view of a
/// cache, or a buffer made from one (tagged archk.context).
bool holdsContext(Value m) {
  while (Operation *def = m.getDefiningOp()) {
    if (isa<archk::CacheOp>(def))
      return true;
    if (def->hasAttr("archk.context"))
      return true;
    if (!archk::isBufferView(def))
      return false;
    m = def->getOperand(0);
  }
  return false;
}

/// A buffer of as many rows as `like` of `width` floats, tagged
/// archk.context when those are a context's rows (naive MLA's keys and
/// values): archk-plan-buffers sizes its slot for the sequence.
Value newRowsLike(OpBuilder &b, Location loc, Value like, int64_t width) {
  Value out = newRows(b, loc, rowsOf(b, loc, like), width);
  if (holdsContext(like))
    out.getDefiningOp()->setAttr("archk.context", b.getUnitAttr());
  return out;
}

/// A buffer of static shape: weight-only work (f32 unless `elem` says).
Value newFixed(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
               Type elem = {}) {
  return b.create<memref::AllocOp>(
      loc, MemRefType::get(shape, elem ? elem : b.getF32Type()));
}

/// `m` reshaped to `shape` (its dimensions split as `re` says), a view.
Value expand(OpBuilder &b, Location loc, Value m,
             ArrayRef<ReassociationIndices> re, ArrayRef<OpFoldResult> shape) {
  SmallVector<int64_t> staticShape =
      decomposeMixedValues(SmallVector<OpFoldResult>(shape)).first;
  auto type = memref::ExpandShapeOp::computeExpandedType(
      cast<MemRefType>(m.getType()), staticShape, re);
  assert(succeeded(type) && "contiguous dimensions split");
  return b.create<memref::ExpandShapeOp>(loc, *type, m, re, shape);
}

/// The view of 2-D `m` [R, W] as [R, groups, W / groups]: the heads (a
/// head-major cache's context is that view already).
Value heads(OpBuilder &b, Location loc, Value m, int64_t groups) {
  auto t = cast<MemRefType>(m.getType());
  if (t.getRank() == 3)
    return m;
  OpFoldResult rows = t.isDynamicDim(0) ? OpFoldResult(rowsOf(b, loc, m))
                                        : b.getIndexAttr(t.getDimSize(0));
  return expand(b, loc, m, {{0}, {1, 2}},
                {rows, b.getIndexAttr(groups),
                 b.getIndexAttr(t.getDimSize(1) / groups)});
}

/// `m` as rows: a vector [n] is the one row [1, n].
Value asRows(OpBuilder &b, Location loc, Value m) {
  auto t = cast<MemRefType>(m.getType());
  if (t.getRank() != 1)
    return m;
  return expand(b, loc, m, {{0, 1}},
                {b.getIndexAttr(1), b.getIndexAttr(t.getDimSize(0))});
}

/// A dense buffer of rank above 2 as rows of its last dimension (a
/// packed weight [panels, K, panel] as [panels * K, panel]).
Value collapseRows(OpBuilder &b, Location loc, Value m) {
  auto t = cast<MemRefType>(m.getType());
  if (t.getRank() <= 2)
    return m;
  ReassociationIndices outer;
  for (int64_t d = 0; d + 1 < t.getRank(); ++d)
    outer.push_back(d);
  SmallVector<ReassociationIndices> re{outer, {t.getRank() - 1}};
  return b.create<memref::CollapseShapeOp>(loc, m, re);
}

/// A weight packed in pairs, [panels, K / 2, panel, 2], as the kernels take
/// it: [panels, K / 2, 2 * panel], a view (any other buffer as it is).
Value pairsAsRows(OpBuilder &b, Location loc, Value m) {
  if (cast<MemRefType>(m.getType()).getRank() != 4)
    return m;
  return b.create<memref::CollapseShapeOp>(
      loc, m, SmallVector<ReassociationIndices>{{0}, {1}, {2, 3}});
}

/// The window [offsets, offsets + sizes) of `m`, unit strides.
Value view(OpBuilder &b, Location loc, Value m, ArrayRef<OpFoldResult> offsets,
           ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return b.create<memref::SubViewOp>(loc, m, offsets, sizes, strides);
}

/// The kernel `spec` over `args` (by argument name), in its declared order.
void call(OpBuilder &b, Location loc, const KernelSpec &spec,
          const Args &args) {
  SmallVector<Value> operands;
  for (const KernelArg &a : spec.args()) {
    auto it = args.find(a.name);
    assert(it != args.end() && it->second && "every declared argument");
    operands.push_back(it->second);
  }
  b.create<archk::CallOp>(loc, spec.kindName(),
                          archk::kernelAttr(b.getContext(), spec), operands);
}

/// Element type of a buffer as a kernel stores it.
static StoreType storeOf(Value buffer) {
  return *archk::storeTypeOf(
      cast<MemRefType>(buffer.getType()).getElementType());
}

/// Rows `src` copied into `dst` (a buffer or a view of one), converted to
/// `dst`'s element type.
void copy(OpBuilder &b, Location loc, Value src, Value dst) {
  src = asRows(b, loc, collapseRows(b, loc, src));
  dst = asRows(b, loc, collapseRows(b, loc, dst));
  EW kernel{EW::Copy, widthOf(src)};
  kernel.store = storeOf(dst);
  call(b, loc, kernel, {{"a", src}, {"out", dst}});
}

template <class Op> struct Lowering : OpConversionPattern<Op> {
  using OpConversionPattern<Op>::OpConversionPattern;
  using Adaptor = typename OpConversionPattern<Op>::OpAdaptor;
  LogicalResult
  matchAndRewrite(Op op, Adaptor a,
                  ConversionPatternRewriter &rw) const override {
    Value result = lower(op, a, rw, op.getLoc());
    if (!result)
      return failure();
    rw.replaceOp(op, result);
    return success();
  }
  /// The buffer of the op's result, its calls emitted.
  virtual Value lower(Op op, Adaptor a, OpBuilder &b, Location loc) const = 0;
};

struct LowerParam : Lowering<ParamOp> {
  using Lowering::Lowering;
  Value lower(ParamOp op, OpAdaptor, OpBuilder &b, Location loc) const override {
    auto t = cast<RankedTensorType>(op.getType());
    return b.create<archk::WeightOp>(
        loc, MemRefType::get(t.getShape(), t.getElementType()),
        op.getNameAttr());
  }
};

struct LowerEmbed : Lowering<EmbedOp> {
  using Lowering::Lowering;
  Value lower(EmbedOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    Value tokens = buf(a.getTokens()), table = buf(a.getTable());
    auto t = cast<MemRefType>(table.getType());
    int64_t v = t.getDimSize(0), d = t.getDimSize(1);
    Value out = newRows(b, loc, rowsOf(b, loc, tokens), d);
    call(b, loc, EmbedKernel{v, d, double(op.getScale().convertToFloat())},
         {{"tokens", tokens}, {"table", table}, {"out", out}});
    return out;
  }
};

struct LowerNorm : Lowering<NormOp> {
  using Lowering::Lowering;
  Value lower(NormOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    // Groups are a dimension of their own: [T, g * d] is [T, g, d].
    Value x = buf(a.getInput()), weight = buf(a.getWeight());
    int64_t g = op.getGroups(), d = widthOf(x) / g;
    bool perGroup = cast<MemRefType>(weight.getType()).getRank() == 2;
    NormKernel k{d,
                 g,
                 op.getKind(),
                 bool(a.getBias()),
                 perGroup,
                 double(op.getEps().convertToFloat()),
                 double(op.getWeightOffset().convertToFloat())};
    Value out = newRows(b, loc, rowsOf(b, loc, x), d * g);
    Args args{{"x", heads(b, loc, x, g)},
              {"weight", weight},
              {"out", heads(b, loc, out, g)}};
    if (a.getBias())
      args["bias"] = buf(a.getBias());
    call(b, loc, k, args);
    return out;
  }
};

struct LowerPosEmbed : Lowering<PosEmbedOp> {
  using Lowering::Lowering;
  Value lower(PosEmbedOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    Value x = buf(a.getInput());
    int64_t d = widthOf(x), rows = 0;
    Value out = newRows(b, loc, rowsOf(b, loc, x), d);
    Args args{{"x", x}, {"pos", a.getPos()}, {"out", out}};
    if (a.getTable()) {
      args["table"] = buf(a.getTable());
      rows = cast<MemRefType>(args["table"].getType()).getDimSize(0);
    }
    call(b, loc, PosEmbedKernel{d, op.getKind(), int64_t(op.getOffset()), rows},
         args);
    return out;
  }
};

/// The kernel description of `op`'s rotation.
static RopeKernel ropeKernel(RopeOp op) {
  RopeKernel k{int64_t(op.getNHeads()),
               int64_t(op.getHeadDim()),
               int64_t(op.getRotaryDim()),
               op.getStyle(),
               op.getScaling(),
               int64_t(op.getOriginalMaxSeqLen()),
               op.getTheta().convertToDouble(),
               op.getFactor().convertToDouble(),
               op.getLowFreqFactor().convertToDouble(),
               op.getHighFreqFactor().convertToDouble(),
               op.getBetaFast().convertToDouble(),
               op.getBetaSlow().convertToDouble(),
               op.getMscale().convertToDouble(),
               op.getMscaleAllDim().convertToDouble(),
               {},
               op.getAttentionFactor().convertToDouble()};
  if (std::optional<ArrayRef<double>> f = op.getFactors())
    k.factors.assign(f->begin(), f->end());
  return k;
}

/// The rope epilogue of `l` its kernel computes: its epilogue rope (the
/// one reader of its result), where the result is whole panels of its
/// packed weight (or it is unpacked). Else none: a ragged last panel would
/// leave the epilogue's last task of whole heads and panels past the
/// weight, and LowerRope lowers the rope as a kernel of its own.
static RopeOp ropeEpilogueOf(LinearOp l) {
  auto r = l->hasOneUse() ? dyn_cast<RopeOp>(*l->user_begin()) : RopeOp();
  if (!r || !r.getEpilogue())
    return {};
  auto w = cast<RankedTensorType>(l.getWeight().getType());
  int64_t panel = w.getRank() > 2 ? w.getDimSize(2) : 0;
  return !panel || widthOf(l.getResult()) % panel == 0 ? r : RopeOp();
}

/// The linear kernel of x [T, K] times `weight`, packed [panels, K,
/// panel] (or in pairs, [panels, K / 2, panel, 2]) or [N, K], to N
/// columns; with `glu`, the gated product of the weight's two halves.
static LinearKernel linearKernel(Value x, Value weight, int64_t n, bool bias,
                                 bool oneRow,
                                 std::optional<Activation> glu = {},
                                 bool residual = false) {
  auto t = cast<MemRefType>(weight.getType());
  return LinearKernel{widthOf(x),
                      n,
                      bias,
                      t.getRank() > 2 ? t.getDimSize(2) : 0,
                      oneRow,
                      storeOf(weight),
                      t.getRank() == 4,
                      glu.has_value(),
                      glu.value_or(Activation::identity),
                      residual};
}

struct LowerLinear : Lowering<LinearOp> {
  using Lowering::Lowering;
  Value lower(LinearOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    Value x = buf(a.getInput()), weight = buf(a.getWeight());
    int64_t N = widthOf(op.getResult());
    Value rows = rowsOf(b, loc, x);
    Value out = newRowsLike(b, loc, x, N);
    Args args{{"x", x}, {"weight", pairsAsRows(b, loc, weight)}, {"out", out}};
    if (a.getBias())
      args["bias"] = buf(a.getBias());
    if (a.getResidual())
      args["residual"] = buf(a.getResidual());
    // The kernel picks its GEMM or GEMV code by the rows it is given; one
    // row known here (the classifier's) needs the GEMV code only.
    bool oneRow = getConstantIntValue(rows) == std::optional<int64_t>(1);
    LinearKernel k = linearKernel(x, weight, N, bool(a.getBias()), oneRow,
                                  op.getGlu(), bool(a.getResidual()));
    // A rope epilogue (arch-fuse-rope) rotates the output's first heads as
    // the kernel stores them; its output is given by heads.
    if (RopeOp rope = ropeEpilogueOf(op)) {
      k.rope = ropeKernel(rope);
      args["pos"] = rope.getPos();
      args["out"] = heads(b, loc, out, N / k.rope.headDim);
    }
    call(b, loc, k, args);
    return out;
  }
};

struct LowerRope : Lowering<RopeOp> {
  using Lowering::Lowering;
  Value lower(RopeOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    Value x = buf(a.getInput());
    // (Its linear's kernel rotated the heads as it stored them: LowerLinear.)
    auto l = op.getInput().getDefiningOp<LinearOp>();
    if (op.getEpilogue() && l && ropeEpilogueOf(l) == op)
      return x;
    // Else a kernel of its own over the heads; the columns after them (an
    // epilogue's that its linear did not take) copied beside.
    int64_t h = op.getNHeads(), hd = op.getHeadDim(), n = widthOf(x);
    Value rows = rowsOf(b, loc, x);
    Value out = newRows(b, loc, rows, n);
    auto columns = [&](Value m, int64_t from, int64_t width) {
      if (from == 0 && width == n)
        return m;
      return view(b, loc, m, {b.getIndexAttr(0), b.getIndexAttr(from)},
                  {rows, b.getIndexAttr(width)});
    };
    call(b, loc, ropeKernel(op),
         {{"x", heads(b, loc, columns(x, 0, h * hd), h)},
          {"pos", a.getPos()},
          {"out", heads(b, loc, columns(out, 0, h * hd), h)}});
    if (h * hd < n)
      copy(b, loc, columns(x, h * hd, n - h * hd),
           columns(out, h * hd, n - h * hd));
    return out;
  }
};

/// Blocks of a tiled attention; none (the one-row-per-task kernel) for
/// arch.attention.
static void setTiling(AttentionKernel &, AttentionOp) {}
static void setTiling(AttentionKernel &k, FlashAttentionOp op) {
  k.blockQ = op.getBlockQ(), k.blockKV = op.getBlockKv(),
  k.splitKV = op.getSplitKv(), k.pairs = op.getBf16Dot();
}

template <class Op> struct LowerAttention : Lowering<Op> {
  using Lowering<Op>::Lowering;
  using OpAdaptor = typename Lowering<Op>::Adaptor;
  Value lower(Op op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    int64_t h = op.getNHeads(), kvh = op.getNKvHeads(), hd = op.getHeadDim();
    Value q = buf(a.getQuery());
    int64_t buckets =
        a.getRelBias()
            ? cast<MemRefType>(buf(a.getRelBias()).getType()).getDimSize(0)
            : 0;
    AttentionKernel k{h,
                      kvh,
                      hd,
                      bool(op.getAlibi()),
                      int64_t(op.getWindow()),
                      buckets,
                      buckets ? int64_t(op.getT5MaxDistance()) : 0,
                      int64_t(op.getShawClip()),
                      op.getScale().convertToDouble(),
                      op.getSoftcap().convertToDouble()};
    setTiling(k, op);
    k.kv = storeOf(buf(a.getKey()));
    k.kvByHead = cast<MemRefType>(buf(a.getKey()).getType()).getRank() == 3;
    k.vHeadDim = op.getValueHeadDim();
    k.dilation = int64_t(op.getDilation());
    if (auto globals = op.getGlobalTokens())
      k.globals.assign(globals->begin(), globals->end());
    k.randomBlocks = int64_t(op.getRandomBlocks());
    k.blockSize = int64_t(op.getBlockSize());
    k.randomSeed = int64_t(op.getRandomSeed());
    Value out = newRows(b, loc, rowsOf(b, loc, q), h * k.vHeadDim);
    Args args{{"q", heads(b, loc, q, h)},
              {"k", heads(b, loc, buf(a.getKey()), kvh)},
              {"v", heads(b, loc, buf(a.getValue()), kvh)},
              {"pos", a.getPos()},
              {"out", heads(b, loc, out, h)}};
    if (buckets)
      args["rel_bias"] = buf(a.getRelBias());
    if (a.getRelKey()) {
      args["rel_key"] = buf(a.getRelKey());
      args["rel_value"] = buf(a.getRelValue());
    }
    call(b, loc, k, args);
    return out;
  }
};

/// Heads `x` (rows [R, n * width], n = 1 or heads) copied into the window
/// of columns [offset, offset + width) of each of the heads of `out` [R,
/// heads * W].
static void copyHeads(OpBuilder &b, Location loc, Value x, int64_t n,
                      Value out, int64_t h, int64_t offset) {
  int64_t width = widthOf(x) / n;
  Value rows = rowsOf(b, loc, out);
  Value window = view(b, loc, heads(b, loc, out, h),
                      {b.getIndexAttr(0), b.getIndexAttr(0),
                       b.getIndexAttr(offset)},
                      {rows, b.getIndexAttr(h), b.getIndexAttr(width)});
  call(b, loc, HeadsCopyKernel{h, width, n == 1},
       {{"x", heads(b, loc, x, n)}, {"out", window}});
}

struct LowerHeadsConcat : Lowering<HeadsConcatOp> {
  using Lowering::Lowering;
  Value lower(HeadsConcatOp op, OpAdaptor a, OpBuilder &b,
              Location loc) const override {
    int64_t h = op.getHeads(), offset = 0;
    Value first = buf(a.getInputs().front());
    Value out = newRowsLike(b, loc, first, widthOf(op.getResult()));
    for (auto [in, n] : llvm::zip(a.getInputs(), op.getInputHeads())) {
      copyHeads(b, loc, buf(in), n, out, h, offset);
      offset += widthOf(in) / n;
    }
    return out;
  }
};

struct LowerHeadsSplit : OpConversionPattern<HeadsSplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(HeadsSplitOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    // Each result's columns of every head, copied out dense.
    Location loc = op.getLoc();
    Value x = buf(a.getInput());
    int64_t h = op.getHeads(), offset = 0;
    Value rows = rowsOf(rw, loc, x);
    SmallVector<Value> outs;
    for (Value r : op.getResults()) {
      int64_t w = widthOf(r) / h;
      Value out = newRowsLike(rw, loc, x, h * w);
      Value window = view(rw, loc, heads(rw, loc, x, h),
                          {rw.getIndexAttr(0), rw.getIndexAttr(0),
                           rw.getIndexAttr(offset)},
                          {rows, rw.getIndexAttr(h), rw.getIndexAttr(w)});
      call(rw, loc, HeadsCopyKernel{h, w, false},
           {{"x", window}, {"out", heads(rw, loc, out, h)}});
      outs.push_back(out);
      offset += w;
    }
    rw.replaceOp(op, outs);
    return success();
  }
};

struct LowerHeadLinear : Lowering<HeadLinearOp> {
  using Lowering::Lowering;
  Value lower(HeadLinearOp op, OpAdaptor a, OpBuilder &b,
              Location loc) const override {
    Value x = buf(a.getInput());
    int64_t h = op.getHeads(), K = widthOf(x) / h,
            N = widthOf(op.getResult()) / h;
    // Over weights (MLA's o_proj x W_UV) the rows are static.
    auto type = cast<RankedTensorType>(op.getType());
    Value out = type.hasStaticShape() ? newFixed(b, loc, type.getShape())
                                      : newRowsLike(b, loc, x, h * N);
    call(b, loc, HeadLinearKernel{h, K, N, op.getKMajor()},
         {{"x", heads(b, loc, x, h)},
          {"weight", buf(a.getWeight())},
          {"out", heads(b, loc, out, h)}});
    return out;
  }
};

/// The row-wise ops: one kernel each, over rows of activations or (a sum
/// of biases) one row of weights.
template <class Op> struct LowerElementwise : Lowering<Op> {
  using Lowering<Op>::Lowering;
  static EW kernelOf(GluOp op, int64_t d) {
    return EW{EW::Glu, d, op.getActivation()};
  }
  static EW kernelOf(AddOp, int64_t d) { return EW{EW::Add, d}; }
  static EW kernelOf(ActivationOp op, int64_t d) {
    return EW{EW::Activate, d, op.getActivation()};
  }
  static EW kernelOf(ScaleOp op, int64_t d) {
    return EW{EW::Scale, d, Activation::identity,
              double(op.getFactor().convertToFloat())};
  }
  static EW kernelOf(SoftcapOp op, int64_t d) {
    return EW{EW::Softcap, d, Activation::identity,
              double(op.getCap().convertToFloat())};
  }
  Value lower(Op op, typename Lowering<Op>::Adaptor a, OpBuilder &b,
              Location loc) const override {
    Value x = buf(a.getOperands()[0]);
    auto type = cast<RankedTensorType>(op.getResult().getType());
    Value out = type.hasStaticShape()
                    ? newFixed(b, loc, type.getShape())
                    : newRows(b, loc, rowsOf(b, loc, x), type.getShape().back());
    Args args{{"a", asRows(b, loc, x)}, {"out", asRows(b, loc, out)}};
    if (a.getOperands().size() == 2)
      args["b"] = asRows(b, loc, buf(a.getOperands()[1]));
    call(b, loc, kernelOf(op, widthOf(args["out"])), args);
    return out;
  }
};

struct LowerDifferential : Lowering<DifferentialOp> {
  using Lowering::Lowering;
  Value lower(DifferentialOp op, OpAdaptor a, OpBuilder &b,
              Location loc) const override {
    Value first = buf(a.getFirst());
    int64_t width = widthOf(first);
    Value out = newRows(b, loc, rowsOf(b, loc, first), width);
    DifferentialKernel k{
        width,
        cast<RankedTensorType>(op.getLambdaQ1().getType()).getDimSize(0),
        op.getLambdaInit().convertToDouble()};
    Args args{{"a", asRows(b, loc, first)},
              {"b", asRows(b, loc, buf(a.getSecond()))},
              {"out", asRows(b, loc, out)}};
    Value lambdas[] = {a.getLambdaQ1(), a.getLambdaK1(), a.getLambdaQ2(),
                       a.getLambdaK2()};
    for (int i = 0; i < 4; ++i)
      args[DifferentialKernel::lambdas[i]] = buf(lambdas[i]);
    call(b, loc, k, args);
    return out;
  }
};

struct LowerConcat : Lowering<ConcatOp> {
  using Lowering::Lowering;
  Value lower(ConcatOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    // Each input copied into its block of the result: its columns (along
    // dim 1) or, for weights along dim 0, its rows.
    auto type = cast<RankedTensorType>(op.getResult().getType());
    bool rows = op.getDim() == 0;
    Value first = buf(a.getInputs().front());
    Value n = type.hasStaticShape() ? Value() : rowsOf(b, loc, first);
    Value out = n ? newRows(b, loc, n, type.getShape().back())
                  : newFixed(b, loc, type.getShape());
    int64_t offset = 0;
    for (Value in : a.getInputs()) {
      in = buf(in);
      auto t = cast<MemRefType>(in.getType());
      int64_t size = t.getDimSize(rows ? 0 : 1);
      SmallVector<OpFoldResult> offsets, sizes;
      for (int64_t d = 0; d < t.getRank(); ++d) {
        bool along = d == int64_t(op.getDim());
        offsets.push_back(b.getIndexAttr(along ? offset : 0));
        // (An input's dynamic rows are its own count: a one-row result
        // may take a buffer whose row count is a value, attention's.)
        sizes.push_back(along || !t.isDynamicDim(d)
                            ? OpFoldResult(b.getIndexAttr(t.getDimSize(d)))
                            : OpFoldResult(n ? n : rowsOf(b, loc, in)));
      }
      copy(b, loc, in, view(b, loc, out, offsets, sizes));
      offset += size;
    }
    return out;
  }
};

struct LowerPack : Lowering<PackOp> {
  using Lowering::Lowering;
  Value lower(PackOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    auto type = cast<RankedTensorType>(op.getResult().getType());
    Value out = newFixed(b, loc, type.getShape(), type.getElementType());
    ValueRange weights = a.getWeights();
    if (weights.size() == 1) {
      Value weight = buf(weights.front());
      auto w = cast<MemRefType>(weight.getType());
      call(b, loc,
           PackKernel{w.getDimSize(1), w.getDimSize(0), int64_t(op.getPanel()),
                      int64_t(op.getGroups().value_or(1)), storeOf(out),
                      type.getRank() == 4},
           {{"weight", weight}, {"out", pairsAsRows(b, loc, out)}});
      return out;
    }
    // Several weights, a group each: each packed into its panels of the
    // result (a window along its first dimension).
    int64_t panels = type.getDimSize(0) / int64_t(weights.size());
    for (auto [i, v] : llvm::enumerate(weights)) {
      Value weight = buf(v);
      auto w = cast<MemRefType>(weight.getType());
      SmallVector<OpFoldResult> offsets{b.getIndexAttr(int64_t(i) * panels)},
          sizes{b.getIndexAttr(panels)};
      for (int64_t d = 1; d < type.getRank(); ++d) {
        offsets.push_back(b.getIndexAttr(0));
        sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
      }
      call(b, loc,
           PackKernel{w.getDimSize(1), w.getDimSize(0), int64_t(op.getPanel()),
                      1, storeOf(out), type.getRank() == 4},
           {{"weight", weight},
            {"out", pairsAsRows(b, loc, view(b, loc, out, offsets, sizes))}});
    }
    return out;
  }
};

/// A buffer of `rows` x `k` rows of `width` (the routed rows of arch.moe:
/// k per token), allocated per token ([rows, k * width], an activation
/// slot's shape) and viewed as [rows * k, width], or [rows * k] when
/// `width` is 1.
static Value routedRows(OpBuilder &b, Location loc, Value rows, int64_t k,
                        int64_t width, Type elem) {
  auto type = MemRefType::get({ShapedType::kDynamic, k * width}, elem);
  Value m = b.create<memref::AllocOp>(loc, type, ValueRange{rows});
  if (width == 1)
    return b.create<memref::CollapseShapeOp>(
        loc, m, ArrayRef<ReassociationIndices>{{0, 1}});
  Value split = expand(b, loc, m, {{0}, {1, 2}},
                       {rows, b.getIndexAttr(k), b.getIndexAttr(width)});
  return b.create<memref::CollapseShapeOp>(
      loc, split, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// arch.route: the experts (a route kernel), then their weights.
struct LowerRoute : OpConversionPattern<RouteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RouteOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Value logits = buf(a.getLogits());
    int64_t e = widthOf(logits), k = op.getTopK();
    Value rows = rowsOf(rw, loc, logits);
    auto i32 = MemRefType::get({ShapedType::kDynamic, k}, rw.getI32Type());
    Value experts = rw.create<memref::AllocOp>(loc, i32, ValueRange{rows});
    Args args{{"logits", logits}, {"out", experts}};
    if (a.getBias())
      args["bias"] = buf(a.getBias());
    call(rw, loc,
         RouteKernel{e, k, op.getScoring(), int64_t(op.getNGroup()),
                     int64_t(op.getTopkGroup()), bool(a.getBias())},
         args);
    Value weights = newRows(rw, loc, rows, k);
    call(rw, loc,
         RouteWeightsKernel{e, k, op.getScoring(), op.getNormalize(),
                            double(op.getScaling().convertToFloat())},
         {{"logits", logits}, {"experts", experts}, {"out", weights}});
    rw.replaceOp(op, ValueRange{experts, weights});
    return success();
  }
};

/// arch.moe: the routed pairs sorted by expert (archk.dispatch), the
/// inputs gathered in that order, then for each expert that has rows its
/// FFN over those rows only (an scf.for over the experts, an scf.if on the
/// count: a decoded token runs top_k experts' kernels and reads only their
/// weights), and the outputs combined per token with the router's weights.
struct LowerMoE : Lowering<MoEOp> {
  using Lowering::Lowering;
  /// Expert `e`'s block of stacked weight `w` ([E * rows, cols] or
  /// packed [E * panels, cols, panel]).
  static Value expertWeight(OpBuilder &b, Location loc, Value w, Value e,
                            int64_t experts) {
    auto t = cast<MemRefType>(w.getType());
    int64_t block = t.getDimSize(0) / experts;
    Value first = b.create<arith::MulIOp>(
        loc, e, b.create<arith::ConstantIndexOp>(loc, block));
    SmallVector<OpFoldResult> offsets{first}, sizes{b.getIndexAttr(block)};
    for (int64_t d = 1; d < t.getRank(); ++d) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(t.getDimSize(d)));
    }
    return view(b, loc, w, offsets, sizes);
  }
  static LinearKernel linearOf(Value x, Value w, int64_t n) {
    return linearKernel(x, w, n, /*bias=*/false, /*oneRow=*/false);
  }
  Value lower(MoEOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    Value x = buf(a.getInput()), experts = buf(a.getExperts()),
          weights = buf(a.getWeights());
    Value gate = a.getGate() ? buf(a.getGate()) : Value();
    Value up = buf(a.getUp()), down = buf(a.getDown());
    int64_t d = widthOf(x), f = op.getDFf(), e = op.getNExperts(),
            k = cast<MemRefType>(experts.getType()).getDimSize(1);
    Value tokens = rowsOf(b, loc, x);
    Type i32 = b.getI32Type();
    Value offsets = b.create<memref::AllocOp>(
        loc, MemRefType::get({e + 1}, i32));
    Value order = routedRows(b, loc, tokens, k, 1, i32);
    Value slots = b.create<memref::AllocOp>(
        loc, MemRefType::get({ShapedType::kDynamic, k}, i32),
        ValueRange{tokens});
    b.create<archk::DispatchOp>(loc, experts, offsets, order, slots, e);
    Type f32 = b.getF32Type();
    Value xs = routedRows(b, loc, tokens, k, d, f32);
    call(b, loc, GatherKernel{d}, {{"x", x}, {"rows", order}, {"out", xs}});
    Value g = gate ? routedRows(b, loc, tokens, k, f, f32) : Value();
    Value u = routedRows(b, loc, tokens, k, f, f32);
    Value h = routedRows(b, loc, tokens, k, f, f32);
    Value ys = routedRows(b, loc, tokens, k, d, f32);
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    Value count = b.create<arith::ConstantIndexOp>(loc, e);
    auto loop = b.create<scf::ForOp>(loc, zero, count, one);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value ex = loop.getInductionVar();
      auto at = [&](Value i) -> Value {
        Value v = b.create<memref::LoadOp>(loc, offsets, ValueRange{i});
        return b.create<arith::IndexCastOp>(loc, b.getIndexType(), v);
      };
      Value lo = at(ex);
      Value hi = at(b.create<arith::AddIOp>(loc, ex, one));
      Value n = b.create<arith::SubIOp>(loc, hi, lo);
      Value any = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, n,
                                          zero);
      auto ifOp = b.create<scf::IfOp>(loc, any, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
      auto rowsOfExpert = [&](Value m, int64_t width) {
        return view(b, loc, m, {lo, b.getIndexAttr(0)},
                    {n, b.getIndexAttr(width)});
      };
      Value xe = rowsOfExpert(xs, d), ue = rowsOfExpert(u, f),
            he = rowsOfExpert(h, f);
      Value wu = expertWeight(b, loc, up, ex, e);
      call(b, loc, linearOf(xe, wu, f),
           {{"x", xe}, {"weight", pairsAsRows(b, loc, wu)}, {"out", ue}});
      if (gate) {
        Value ge = rowsOfExpert(g, f), wg = expertWeight(b, loc, gate, ex, e);
        call(b, loc, linearOf(xe, wg, f),
             {{"x", xe}, {"weight", pairsAsRows(b, loc, wg)}, {"out", ge}});
        call(b, loc, EW{EW::Glu, f, op.getActivation()},
             {{"a", ge}, {"b", ue}, {"out", he}});
      } else {
        call(b, loc, EW{EW::Activate, f, op.getActivation()},
             {{"a", ue}, {"out", he}});
      }
      Value wd = expertWeight(b, loc, down, ex, e);
      Value ye = rowsOfExpert(ys, d);
      call(b, loc, linearOf(he, wd, d),
           {{"x", he}, {"weight", pairsAsRows(b, loc, wd)}, {"out", ye}});
    }
    Value out = newRows(b, loc, tokens, d);
    call(b, loc, CombineKernel{d, k},
         {{"y", ys}, {"slots", slots}, {"weights", weights}, {"out", out}});
    return out;
  }
};

struct LowerLastToken : Lowering<LastTokenOp> {
  using Lowering::Lowering;
  Value lower(LastTokenOp, OpAdaptor a, OpBuilder &b, Location loc) const override {
    // The row T - 1, one row: a count that is a value like any other.
    Value x = buf(a.getInput());
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    Value last = b.create<arith::SubIOp>(loc, rowsOf(b, loc, x), one);
    return view(b, loc, x, {last, b.getIndexAttr(0)},
                {one, b.getIndexAttr(widthOf(x))});
  }
};

struct LowerLastPosition : Lowering<LastPositionOp> {
  using Lowering::Lowering;
  Value lower(LastPositionOp, OpAdaptor a, OpBuilder &b,
              Location loc) const override {
    // pos + T - 1, T the rows' count (a value like any other).
    Value t = rowsOf(b, loc, buf(a.getRows()));
    Value one = b.create<arith::ConstantIndexOp>(loc, 1);
    return b.create<arith::SubIOp>(
        loc, b.create<arith::AddIOp>(loc, a.getPos(), t), one);
  }
};

/// Whether cache `c` is kept head-major (LowerCacheAppend::appendByHead):
/// a tokens cache of rows [heads, head_dim] whose head stride, at most
/// capacity x head_dim elements, fits the kernels' 32-bit strides.
/// `sized`: sizeRings has run. Before it, a ring that ringRows leaves 0
/// counts as the tokens cache of max_seq_len positions it becomes (after
/// it, a ring's capacity is its rows, and ringRows of that means nothing).
static bool byHead(CacheOp c, bool sized) {
  RankedTensorType row = c.getRowType();
  bool tokens = c.getLayout() == CacheLayout::tokens ||
                (!sized && c.getLayout() == CacheLayout::ring &&
                 ringRows(c) == 0);
  int64_t capacity = c.getLayout() == CacheLayout::tokens
                         ? int64_t(c.getCapacity().value_or(0))
                         : int64_t(c->getParentOfType<ModuleOp>()
                                       ->getAttrOfType<IntegerAttr>(
                                           "arch.max_seq_len")
                                       .getInt());
  return tokens && row.getRank() == 2 &&
         capacity * row.getDimSize(1) <= std::numeric_limits<int32_t>::max();
}

struct LowerCacheAppend : Lowering<CacheAppendOp> {
  using Lowering::Lowering;
  /// A tokens cache of rows [H, D] (a KV cache) is head-major: head h's
  /// positions are consecutive rows of D, [H, capacity, D], so that a
  /// decode step streams each head's keys and values from contiguous
  /// memory. The runtime allocates as many positions as the sequence
  /// holds, so the head stride is the sequence's (dynamic). One `append`
  /// call stores the rows [T, H, D] at positions pos ..< pos + T of every
  /// head; the context is [pos + T, H, D] with strides [D, head stride, 1].
  /// Both windows are transposed views of [H, positions, D].
  static Value appendByHead(OpBuilder &b, Location loc, CacheAppendOp op,
                            Value rows, Value pos, Value n, int64_t capacity,
                            RankedTensorType row) {
    int64_t H = row.getDimSize(0), D = row.getDimSize(1);
    auto layout = StridedLayoutAttr::get(
        b.getContext(), 0, {ShapedType::kDynamic, D, 1});
    auto type = MemRefType::get({H, capacity, D}, row.getElementType(),
                                layout);
    Value cache = b.create<archk::CacheOp>(loc, type, op.getCacheAttr());
    OpFoldResult zero = b.getIndexAttr(0);
    auto swap = AffineMapAttr::get(AffineMap::getPermutationMap(
        ArrayRef<unsigned>{1, 0, 2}, b.getContext()));
    auto window = [&](OpFoldResult first, OpFoldResult count) -> Value {
      Value v = view(b, loc, cache, {zero, first, zero},
                     {b.getIndexAttr(H), count, b.getIndexAttr(D)});
      return b.create<memref::TransposeOp>(loc, v, swap);
    };
    AppendKernel kernel{H, D, storeOf(cache)};
    call(b, loc, kernel, {{"rows", heads(b, loc, rows, H)},
                          {"out", window(pos, n)}});
    return window(zero, b.create<arith::AddIOp>(loc, pos, n).getResult());
  }
  Value lower(CacheAppendOp op, OpAdaptor a, OpBuilder &b, Location loc) const override {
    auto decl = SymbolTable::lookupNearestSymbolFrom<CacheOp>(
        op, op.getCacheAttr());
    Value rows = buf(a.getRows());
    int64_t w = widthOf(rows), capacity = int64_t(*decl.getCapacity());
    bool ring = decl.getLayout() == CacheLayout::ring;
    Value n = rowsOf(b, loc, rows), pos = a.getPos();
    if (byHead(decl, /*sized=*/true))
      return appendByHead(b, loc, op, rows, pos, n, capacity,
                          decl.getRowType());
    Value cache = b.create<archk::CacheOp>(
        loc,
        MemRefType::get({ring ? 2 * capacity : capacity, w},
                        decl.getRowType().getElementType()),
        op.getCacheAttr());
    if (!ring) {
      // Rows to positions pos .. pos + T - 1; the context is rows
      // 0 ..< pos + T.
      copy(b, loc, rows, view(b, loc, cache, {pos, b.getIndexAttr(0)},
                              {n, b.getIndexAttr(w)}));
      Value end = b.create<arith::AddIOp>(loc, pos, n);
      return view(b, loc, cache, {b.getIndexAttr(0), b.getIndexAttr(0)},
                  {end, b.getIndexAttr(w)});
    }
    // A ring of C rows, mapped twice in a row by the runtime (row r + C is
    // row r): position p is row p mod C, and any C consecutive positions
    // are consecutive rows. T <= C rows go to rows pos mod C ..; the
    // context is the last min(pos + T, C) positions.
    Value c = b.create<arith::ConstantIndexOp>(loc, capacity);
    copy(b, loc, rows,
         view(b, loc, cache,
              {b.create<arith::RemUIOp>(loc, pos, c).getResult(),
               b.getIndexAttr(0)},
              {n, b.getIndexAttr(w)}));
    Value end = b.create<arith::AddIOp>(loc, pos, n);
    Value kept = b.create<arith::MinUIOp>(loc, end, c);
    Value first = b.create<arith::RemUIOp>(
        loc, b.create<arith::SubIOp>(loc, end, kept), c);
    return view(b, loc, cache, {first, b.getIndexAttr(0)},
                {kept, b.getIndexAttr(w)});
  }
};

/// Linear attention as two kernels over the state cache: the outputs
/// from the state the earlier calls left, then the state updated in place
/// with the call's keys and values.
struct LowerLinearAttention : Lowering<LinearAttentionOp> {
  using Lowering::Lowering;
  Value lower(LinearAttentionOp op, OpAdaptor a, OpBuilder &b,
              Location loc) const override {
    int64_t h = op.getNHeads(), kvh = op.getNKvHeads(), hd = op.getHeadDim(),
            vd = op.getValueHeadDim();
    Value q = buf(a.getQuery());
    Value state = b.create<archk::CacheOp>(
        loc, MemRefType::get({kvh, hd, op.getStateColumns()}, b.getF32Type()),
        op.getStateAttr());
    Value k = heads(b, loc, buf(a.getKey()), kvh);
    Value v = heads(b, loc, buf(a.getValue()), kvh);
    Value out = newRows(b, loc, rowsOf(b, loc, q), h * vd);
    FeatureMap map = op.getFeatureMap();
    bool normalize = op.getNormalize();
    LinearAttentionKernel outputs{h,   kvh,       hd,
                                  vd,  map,       normalize,
                                  op.getScale().convertToDouble(),
                                  int64_t(op.getChunk())};
    call(b, loc, outputs,
         {{"q", heads(b, loc, q, h)},
          {"k", k},
          {"v", v},
          {"state", state},
          {"out", heads(b, loc, out, h)}});
    LinearStateKernel update{kvh, hd, vd, map, normalize};
    call(b, loc, update, {{"k", k}, {"v", v}, {"state", state}, {"out", state}});
    return out;
  }
};

struct LowerSplit : OpConversionPattern<SplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SplitOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    // Column views of the input: no copy.
    Location loc = op.getLoc();
    Value x = buf(a.getInput());
    Value n = rowsOf(rw, loc, x);
    SmallVector<Value> views;
    int64_t offset = 0;
    for (Value r : op.getResults()) {
      int64_t w = widthOf(r);
      views.push_back(view(rw, loc, x, {rw.getIndexAttr(0), rw.getIndexAttr(offset)},
                           {n, rw.getIndexAttr(w)}));
      offset += w;
    }
    rw.replaceOp(op, views);
    return success();
  }
};

struct LowerAssign : OpConversionPattern<AssignOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AssignOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    Value v = buf(a.getValue());
    auto t = cast<MemRefType>(v.getType());
    Value w = rw.create<archk::WeightOp>(
        op.getLoc(), MemRefType::get(t.getShape(), t.getElementType()),
        op.getNameAttr());
    copy(rw, op.getLoc(), v, w);
    rw.eraseOp(op);
    return success();
  }
};

/// @forward's logits: copied into its output argument (the clean-up then
/// writes them there directly).
struct LowerReturn : OpConversionPattern<func::ReturnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(func::ReturnOp op, OpAdaptor a,
                  ConversionPatternRewriter &rw) const override {
    Block *entry = &op->getParentOfType<func::FuncOp>().getBody().front();
    copy(rw, op.getLoc(), buf(a.getOperands()[0]), entry->getArguments().back());
    rw.replaceOpWithNewOp<func::ReturnOp>(op);
    return success();
  }
};

/// The cache_append whose context `v` is or is made from (through the ops
/// that may read a context); none if it is not.
static CacheAppendOp contextOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto ap = dyn_cast<CacheAppendOp>(def))
      return ap;
    if (!isa<SplitOp, HeadsSplitOp, HeadsConcatOp, LinearOp, HeadLinearOp>(def))
      break;
    v = def->getOperand(0);
  }
  return {};
}

struct LowerToKernelsPass
    : impl::LowerToKernelsPassBase<LowerToKernelsPass> {
  void runOnOperation() override;
  LogicalResult check(func::FuncOp forward, func::FuncOp prepare);
};

/// What has no lowering, with its place: found before the conversion so
/// that each error names the problem, not a failed legalization.
LogicalResult LowerToKernelsPass::check(func::FuncOp forward,
                                        func::FuncOp prepare) {
  ModuleOp module = getOperation();
  auto maxSeqAttr = module->getAttrOfType<IntegerAttr>("arch.max_seq_len");
  if (!maxSeqAttr || maxSeqAttr.getInt() <= 0 ||
      maxSeqAttr.getInt() > std::numeric_limits<int32_t>::max())
    return module.emitError() << "module needs an arch.max_seq_len "
                                 "attribute in [1, 2147483647]";
  int64_t maxSeq = maxSeqAttr.getInt();
  auto chunkAttr = module->getAttr("arch.max_chunk");
  if (chunkAttr && (!isa<IntegerAttr>(chunkAttr) ||
                    cast<IntegerAttr>(chunkAttr).getInt() <= 0 ||
                    cast<IntegerAttr>(chunkAttr).getInt() >
                        std::numeric_limits<int32_t>::max()))
    return module.emitError() << "module's arch.max_chunk must be an "
                                 "integer in [1, 2147483647], got "
                              << chunkAttr;
  // A state cache is a linear attention's, read and written by one op per
  // call (a second would read the state the first has not yet written).
  llvm::StringMap<int> stateUsers;
  forward.walk([&](LinearAttentionOp l) { ++stateUsers[l.getState()]; });
  for (CacheOp c : module.getOps<CacheOp>()) {
    if (c.getLayout() == CacheLayout::state) {
      int users = stateUsers.lookup(c.getSymName());
      if (users != 1)
        return c.emitOpError()
               << "is a state cache that " << users
               << " arch.linear_attention ops read, which has no lowering "
                  "(one op per state)";
      continue;
    }
    if (c.getLayout() == CacheLayout::ring)
      continue; // checked against the windows of its readers below
    // The runtime allocates a tokens cache for the sequence's positions
    // (at most max_seq_len), and appends write at any of them.
    if (int64_t(*c.getCapacity()) < maxSeq)
      return c.emitOpError() << "holds " << *c.getCapacity()
                             << " positions, fewer than the module's "
                                "max_seq_len "
                             << maxSeq;
  }
  bool hasPrepared = false;
  for (WeightOp w : module.getOps<WeightOp>())
    hasPrepared |= bool(w.getPrepared());
  if (prepare && (prepare.isExternal() || prepare.getNumArguments() ||
                  prepare.getNumResults()))
    return prepare.emitError() << "@prepare_params must be a function of no "
                                  "arguments and results, with a body";
  if (!prepare && hasPrepared)
    return module.emitError()
           << "module has prepared weights but no func.func @prepare_params";

  llvm::StringSet<> appended, assigned;
  llvm::SetVector<Operation *> weightOnly = weightOnlyOps(forward);
  auto checkOp = [&](Operation *op, bool inPrepare) -> LogicalResult {
    if (isa<func::ReturnOp>(op))
      return success();
    if (inPrepare &&
        !isa<ParamOp, ConcatOp, PackOp, AddOp, HeadLinearOp, AssignOp>(op))
      return op->emitOpError() << "has no lowering in @prepare_params";
    if (!inPrepare && isa<AssignOp>(op))
      return op->emitOpError() << "assigns a prepared weight in @forward: "
                                  "only @prepare_params does";
    auto scalar = [](Type t) {
      auto r = dyn_cast<RankedTensorType>(t);
      return r && r.getRank() == 0;
    };
    if (llvm::any_of(op->getOperandTypes(), scalar) ||
        llvm::any_of(op->getResultTypes(), scalar))
      return op->emitOpError() << "reads or makes a rank-0 tensor, which "
                                  "has no lowering";
    // Weight-only work left in @forward gets buffers of fixed size (every
    // other result has token rows, or the last token's one row).
    if (!inPrepare && weightOnly.contains(op) &&
        !isa<ParamOp, ConcatOp, PackOp, AddOp, HeadLinearOp>(op))
      return op->emitOpError() << "depends only on weights and has no "
                                  "lowering as weight preparation";
    if (op->getDialect() != module->getContext()->getLoadedDialect<ArchDialect>())
      return op->emitOpError() << "has no lowering";
    // (The verifier has checked that it is a prepared weight.)
    if (auto a = dyn_cast<AssignOp>(op))
      if (!assigned.insert(a.getName()).second)
        return a.emitOpError() << "assigns " << a.getNameAttr() << " twice";
    if (auto ap = dyn_cast<CacheAppendOp>(op)) {
      if (!appended.insert(ap.getCache()).second)
        return ap.emitOpError() << "appends to " << ap.getCacheAttr()
                                << " a second time in one call, which has no "
                                   "lowering (its first context would change)";
      // A context has pos + T rows, not a call's T: attention reads it as
      // its keys and values, directly or through what makes them from it
      // (MLA's split of its cached rows, up-projection and head copies).
      // Only an f32 cache of 1-D rows (a latent cache, position-major) is
      // read by anything but attention.
      auto decl = SymbolTable::lookupNearestSymbolFrom<CacheOp>(
          ap, ap.getCacheAttr());
      bool latent = decl && decl.getRowType().getRank() == 1 &&
                    decl.getRowType().getElementType().isF32();
      SmallVector<Value> derived{ap.getContext()};
      llvm::DenseSet<Operation *> seen;
      while (!derived.empty()) {
        Value d = derived.pop_back_val();
        for (OpOperand &use : d.getUses()) {
          Operation *user = use.getOwner();
          if (isa<AttentionOp, FlashAttentionOp>(user) &&
              (use.getOperandNumber() == 1 || use.getOperandNumber() == 2))
            continue;
          // (A linear with a residual adds T rows to its pos + T.)
          auto linear = dyn_cast<LinearOp>(user);
          bool passes = isa<SplitOp, HeadsSplitOp, HeadsConcatOp>(user) ||
                        (isa<LinearOp, HeadLinearOp>(user) &&
                         use.getOperandNumber() == 0 &&
                         !(linear && linear.getResidual()));
          if (!passes || !latent)
            return ap.emitOpError()
                   << "has a context that " << user->getName()
                   << " reads, which has no lowering (only attention's keys "
                      "and values, and the splits, linears and head copies "
                      "that make them from an f32 cache of 1-D rows, do)";
          // Rows of one context only: a head join takes its rows from its
          // first input.
          if (auto hc = dyn_cast<HeadsConcatOp>(user))
            for (Value in : hc.getInputs())
              if (contextOf(in) != ap)
                return hc.emitOpError()
                       << "joins the context of " << ap.getCacheAttr()
                       << " with rows that are not, which has no lowering";
          if (seen.insert(user).second)
            llvm::append_range(derived, user->getResults());
        }
      }
    }
    if (isa<AttentionOp, FlashAttentionOp>(op)) {
      // Keys and values must come from a cache's context: the positions it
      // holds after the append (0 ..< pos + T, or a ring's last ones).
      auto k = contextOf(op->getOperand(1));
      auto v = contextOf(op->getOperand(2));
      if (!k || !v)
        return op->emitOpError() << "reads keys or values that are not the "
                                    "context of an arch.cache_append, which "
                                    "has no lowering";
      // One kernel reads both as one element type.
      auto stored = [&](CacheAppendOp a) {
        auto c = SymbolTable::lookupNearestSymbolFrom<CacheOp>(
            a, a.getCacheAttr());
        return c ? c.getRowType().getElementType() : Type();
      };
      if (stored(k) != stored(v))
        return op->emitOpError()
               << "reads keys stored as " << stored(k) << " and values "
               << "stored as " << stored(v)
               << ", which has no lowering (one type for both)";
      // Both contexts must hold the same positions.
      auto held = [&](CacheAppendOp a) {
        auto c = SymbolTable::lookupNearestSymbolFrom<CacheOp>(
            a, a.getCacheAttr());
        return c.getLayout() == CacheLayout::ring
                   ? "the last " + std::to_string(*c.getCapacity()) +
                         " positions"
                   : std::string("every position");
      };
      if (held(k) != held(v))
        return op->emitOpError()
               << "reads keys from a cache that keeps " << held(k)
               << " and values from one that keeps " << held(v)
               << ", which has no lowering";
      // How far back the op reads: its window times its dilation, every
      // position with global positions or random blocks.
      auto reach = [](auto a) -> int64_t {
        return a.getGlobalTokens() || a.getRandomBlocks()
                   ? 0
                   : int64_t(a.getWindow()) * int64_t(a.getDilation());
      };
      int64_t reached = isa<AttentionOp>(op)
                            ? reach(cast<AttentionOp>(op))
                            : reach(cast<FlashAttentionOp>(op));
      auto kc = SymbolTable::lookupNearestSymbolFrom<CacheOp>(
          k, k.getCacheAttr());
      auto vc = SymbolTable::lookupNearestSymbolFrom<CacheOp>(
          v, v.getCacheAttr());
      // The kernel finds both contexts' first position from the keys'.
      if (kc.getLayout() == CacheLayout::ring && ringRows(kc) != ringRows(vc))
        return op->emitOpError()
               << "reads keys and values from rings the library gives "
               << ringRows(kc) << " and " << ringRows(vc)
               << " rows (rows of different bytes), which has no lowering";
      // A head-major cache is read as the heads its rows are.
      auto headsOf = [](auto a) {
        return std::pair<int64_t, int64_t>(a.getNKvHeads(), a.getHeadDim());
      };
      auto [kvh, hd] = isa<AttentionOp>(op) ? headsOf(cast<AttentionOp>(op))
                                            : headsOf(cast<FlashAttentionOp>(op));
      int64_t vd = isa<AttentionOp>(op)
                       ? cast<AttentionOp>(op).getValueHeadDim()
                       : cast<FlashAttentionOp>(op).getValueHeadDim();
      for (auto [c, width] : {std::pair{kc, hd}, {vc, vd}}) {
        RankedTensorType row = c.getRowType();
        if (byHead(c, /*sized=*/false) &&
            (row.getDimSize(0) != kvh || row.getDimSize(1) != width))
          return op->emitOpError()
                 << "reads " << kvh << " heads of " << width << " from cache @"
                 << c.getSymName() << ", whose rows are " << row
                 << ": a KV cache's rows are [n_kv_heads, head_dim]";
      }
      if (kc.getLayout() == CacheLayout::ring &&
          (reached == 0 || reached > int64_t(*kc.getCapacity())))
        return op->emitOpError()
               << "attends to "
               << (reached ? "the last " + std::to_string(reached) +
                                 " positions"
                           : std::string("every position"))
               << " but reads ring caches that keep " << held(k);
    }
    // (The verifier keeps the token rows of activations whole: they are
    // joined along their features only.)
    if (auto c = dyn_cast<ConcatOp>(op)) {
      auto type = cast<RankedTensorType>(c.getType());
      if (type.getRank() > 2)
        return c.emitOpError() << "of weights of rank " << type.getRank()
                               << " has no lowering";
    }
    if (isa<AddOp>(op) &&
        cast<RankedTensorType>(op->getResult(0).getType()).getRank() > 2)
      return op->emitOpError() << "of rank above 2 has no lowering";
    return success();
  };
  for (auto [fn, inPrepare] : {std::pair{forward, false}, {prepare, true}}) {
    if (!fn)
      continue;
    if (!fn.getBody().hasOneBlock())
      return fn.emitError() << "@" << fn.getSymName()
                            << " has more than one block, which has no "
                               "lowering";
    for (Operation &op : fn.getBody().front())
      if (failed(checkOp(&op, inPrepare)))
        return failure();
  }
  for (WeightOp w : module.getOps<WeightOp>())
    if (w.getPrepared() && !assigned.contains(w.getSymName()))
      return w.emitOpError() << "is prepared but @prepare_params never "
                                "assigns it";
  return success();
}

/// copy(A -> B), A a whole fresh buffer and B a whole final one (the logits
/// argument, a prepared weight): the kernels that wrote A write B instead.
void elideCopies(func::FuncOp fn) {
  SmallVector<archk::CallOp> copies;
  fn.walk([&](archk::CallOp c) {
    if (c.getKind() == "copy")
      copies.push_back(c);
  });
  for (archk::CallOp c : copies) {
    Value src = c.getArgs()[0], dst = c.getArgs()[1];
    auto alloc = archk::rootOf(src).getDefiningOp<memref::AllocOp>();
    Value final = archk::rootOf(dst);
    auto weight = final.getDefiningOp<archk::WeightOp>();
    if (!alloc || !(weight || isa<BlockArgument>(final)))
      continue;
    // Whole buffers only: the views are reshapes, not windows.
    auto isWhole = [](Value v) {
      return archk::rootOf(v, archk::isReshape) == archk::rootOf(v);
    };
    MemRefType from = alloc.getType();
    auto to = cast<MemRefType>(final.getType());
    if (!isWhole(src) || !isWhole(dst) ||
        !memref::CastOp::areCastCompatible(to, from))
      continue;
    OpBuilder b(alloc);
    if (weight)
      weight->moveBefore(alloc);
    Value replacement = final;
    if (to != from)
      replacement = b.create<memref::CastOp>(alloc.getLoc(), from, final);
    alloc.getResult().replaceAllUsesWith(replacement);
    alloc.erase();
    c.erase();
  }
}

/// archk.acquire before the first read and archk.release after the last
/// read of each loaded weight only @prepare_params reads.
void insertReleases(func::FuncOp prepare, const llvm::StringSet<> &forwardReads) {
  Block &body = prepare.getBody().front();
  // One table for the lookups (a nearest-symbol lookup per weight scans the
  // module: quadratic at DeepSeek-V3's 44k weights).
  SymbolTable symbols(prepare->getParentOfType<ModuleOp>());
  struct Reads {
    archk::WeightOp first;
    Operation *begin = nullptr, *end = nullptr; ///< first and last read
  };
  llvm::StringMap<Reads> reads;
  for (auto w : body.getOps<archk::WeightOp>()) {
    auto decl = symbols.lookup<WeightOp>(w.getName());
    if (decl.getPrepared() || forwardReads.contains(w.getName()))
      continue;
    Reads &r = reads[w.getName()];
    if (!r.first)
      r.first = w;
    for (Value v : archk::viewsOf(w.getResult()))
      for (Operation *u : v.getUsers()) {
        Operation *top = body.findAncestorOpInBlock(*u);
        if (!r.end || r.end->isBeforeInBlock(top))
          r.end = top;
        // (a view, not a read: viewsOf follows it to the reads)
        if (archk::isBufferView(top))
          continue;
        if (!r.begin || top->isBeforeInBlock(r.begin))
          r.begin = top;
      }
  }
  for (auto &e : reads) {
    Reads &r = e.second;
    OpBuilder b(prepare.getContext());
    if (r.begin) {
      b.setInsertionPoint(r.begin);
      b.create<archk::AcquireOp>(r.first.getLoc(), r.first.getResult());
    }
    b.setInsertionPointAfter(r.end ? r.end : r.first.getOperation());
    b.create<archk::ReleaseOp>(r.first.getLoc(), r.first.getResult());
  }
}

/// Index constants, dims and views no one reads any more.
void eraseDead(func::FuncOp fn) {
  SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

/// Each ring cache gets its rows (ringRows), or becomes a tokens cache of
/// max_seq_len positions where a ring would not be smaller.
static void sizeRings(ModuleOp module) {
  int64_t maxSeq =
      module->getAttrOfType<IntegerAttr>("arch.max_seq_len").getInt();
  Builder b(module.getContext());
  // All rows first: ringRows reads the other rings' capacities.
  SmallVector<std::pair<CacheOp, int64_t>> rings;
  for (CacheOp c : module.getOps<CacheOp>())
    if (c.getLayout() == CacheLayout::ring)
      rings.push_back({c, ringRows(c)});
  for (auto [c, rows] : rings) {
    if (!rows) {
      c.setLayout(CacheLayout::tokens);
      rows = maxSeq;
    }
    c.setCapacityAttr(b.getI64IntegerAttr(rows));
  }
}

void LowerToKernelsPass::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = &getContext();
  FailureOr<func::FuncOp> found = lookupForward(module);
  if (failed(found))
    return signalPassFailure();
  func::FuncOp forward = *found;
  auto prepare = module.lookupSymbol<func::FuncOp>("prepare_params");
  if (failed(check(forward, prepare)))
    return signalPassFailure();
  sizeRings(module);

  // @forward(tokens, pos) -> logits becomes @forward(tokens, pos, logits):
  // the tokens a buffer (cast back for the patterns), the logits one the
  // caller owns.
  Block &entry = forward.getBody().front();
  auto logitsType = cast<RankedTensorType>(
      forward.getFunctionType().getResult(0));
  auto tokensType = MemRefType::get({ShapedType::kDynamic},
                                    IntegerType::get(ctx, 32));
  auto logits = MemRefType::get(logitsType.getShape(), Float32Type::get(ctx));
  BlockArgument tokens = entry.getArgument(0);
  Type tokensTensor = tokens.getType();
  tokens.setType(tokensType);
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&entry);
  auto asTensor = b.create<UnrealizedConversionCastOp>(
      forward.getLoc(), tokensTensor, ValueRange{tokens});
  tokens.replaceAllUsesExcept(asTensor.getResult(0), asTensor);
  entry.addArgument(logits, forward.getLoc());
  forward.setType(FunctionType::get(
      ctx, {tokensType, IndexType::get(ctx), logits}, {}));

  ConversionTarget target(*ctx);
  target.addLegalDialect<archk::ArchKDialect, memref::MemRefDialect,
                         arith::ArithDialect, scf::SCFDialect>();
  target.addIllegalDialect<ArchDialect>();
  target.addLegalOp<WeightOp, CacheOp, UnrealizedConversionCastOp,
                    func::FuncOp>();
  target.addDynamicallyLegalOp<func::ReturnOp>(
      [](func::ReturnOp r) { return r.getNumOperands() == 0; });
  RewritePatternSet patterns(ctx);
  patterns.add<LowerParam, LowerEmbed, LowerNorm, LowerPosEmbed, LowerLinear,
               LowerRope, LowerAttention<AttentionOp>,
               LowerAttention<FlashAttentionOp>, LowerElementwise<GluOp>,
               LowerElementwise<AddOp>, LowerElementwise<ActivationOp>,
               LowerElementwise<ScaleOp>, LowerElementwise<SoftcapOp>,
               LowerDifferential, LowerLinearAttention,
               LowerConcat, LowerPack, LowerRoute, LowerMoE, LowerLastToken,
               LowerLastPosition,
               LowerCacheAppend, LowerHeadsSplit, LowerHeadsConcat,
               LowerHeadLinear, LowerSplit, LowerAssign, LowerReturn>(ctx);
  // The model is @forward and @prepare_params; other functions are not
  // part of it and stay as they are.
  SmallVector<Operation *> fns{forward};
  if (prepare)
    fns.push_back(prepare);
  if (failed(applyPartialConversion(fns, target, std::move(patterns))))
    return signalPassFailure();

  llvm::StringSet<> forwardReads;
  forward.walk([&](archk::WeightOp w) { forwardReads.insert(w.getName()); });
  for (func::FuncOp fn : {forward, prepare}) {
    if (!fn)
      continue;
    elideCopies(fn);
    eraseDead(fn);
  }
  if (prepare)
    insertReleases(prepare, forwardReads);
}

} // namespace
} // namespace arch
