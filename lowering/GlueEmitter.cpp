//===- GlueEmitter.cpp - arch IR -> kernel catalogue + host C -------------===//
//
// Walks @forward in order. Each tensor value gets a C pointer expression and
// a row count ("T" tokens or "1"); values produced by ops live in activation
// slots that are reused once their last reader has run (linear scan), so a
// 32-layer model needs a handful of buffers, not hundreds.
//
//===----------------------------------------------------------------------===//
#include "lowering/GlueEmitter.h"
#include "lowering/CText.h"
#include "arch/Dialect/ArchDialect.h"

#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <limits>
#include <map>

using namespace mlir;

namespace arch {
namespace {

struct ValueInfo {
  std::string ptr;  ///< C expression of the first element
  std::string rows; ///< C expression of the token count
  int64_t width = 0;
  int64_t stride = 0; ///< floats from one token row to the next
  int slot = -1;    ///< activation slot, -1 for params and inputs
};

/// A buffer argument: the C pointer, extents innermost first (the token
/// rows last), and the token-row stride of a view (0: dense).
struct Buf {
  std::string ptr;
  std::vector<std::string> dims;
  int64_t rowStride = 0;
};

/// Ops whose results are views of their first operand's buffer.
static bool isView(Operation *op) { return isa<LastTokenOp, SplitOp>(op); }

class GlueEmitter {
public:
  GlueEmitter(ModuleOp module, const GlueOptions &opts, LoweredModel &out)
      : module(module), opts(opts), out(out), os(body) {}
  LogicalResult run();

private:
  LogicalResult emitOp(Operation *op);
  LogicalResult emitPrepare(func::FuncOp fn);
  LogicalResult emitWeightOp(Operation *op, const std::string &dst);
  std::string kernel(KernelSpec spec);
  void call(const KernelSpec &spec, const std::map<std::string, Buf> &bufs);
  void copyRows(int64_t width, const Buf &src, const std::string &dst,
                int64_t dstStride);
  ValueInfo &info(Value v) { return values[v]; }
  void defineResult(Operation *op, int64_t width, const std::string &rows);
  void releaseDead(Operation *op);
  std::string comment(Operation *op);
  static int64_t widthOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape().back();
  }
  std::string emitDesc();

  ModuleOp module;
  const GlueOptions &opts;
  LoweredModel &out;
  std::string body;
  llvm::raw_string_ostream os;

  llvm::DenseMap<Value, ValueInfo> values;
  llvm::DenseMap<Value, Operation *> lastUse; ///< of each slot's owner
  llvm::DenseMap<Value, Value> owner;         ///< alias -> slot owner
  std::vector<int64_t> slotWidth;
  std::vector<bool> slotFree;
  std::vector<WeightOp> params;   ///< loaded weights, in table order
  std::vector<WeightOp> prepared; ///< computed by @prepare_params
  std::map<std::string, int> paramIndex; ///< index into P: loaded, prepared
  std::vector<CacheOp> caches;           ///< the runtime's cache table
  std::map<std::string, int> cacheIndex; ///< into C
  int64_t scratchFloats = 0; ///< weight-only values computed per call
  llvm::SetVector<Operation *> forwardWeightOnly; ///< ops but arch.param
  int64_t prepareTemp = 0;    ///< floats of its temporaries (W)
  llvm::StringSet<> forwardReads; ///< weights @forward reads
  llvm::StringSet<> appended;     ///< caches @forward appended to
  Value returned;
  // Model facts for the descriptor, taken from the IR.
  int64_t vocab = 0, dModel = 0, nLayers = 0, nHeads = 0, nKVHeads = 0,
          headDim = 0, dFF = 0, maxSeq = 0;
};

std::string GlueEmitter::kernel(KernelSpec spec) {
  bool seen = false;
  for (const KernelSpec &k : out.kernels)
    seen |= k == spec;
  if (!seen)
    out.kernels.push_back(spec);
  return spec.name();
}

std::string GlueEmitter::comment(Operation *op) {
  std::string s;
  llvm::raw_string_ostream cs(s);
  cs << op->getName().stripDialect();
  Location loc = op->getLoc();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    cs << " " << name.getName().getValue();
    loc = name.getChildLoc();
  }
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    cs << " (" << file.getFilename().getValue() << ":" << file.getLine()
       << ":" << file.getColumn() << ")";
  return "  " + cComment(cs.str()) + "\n";
}

/// Gives the op's result a slot (a free one of any width, grown if needed),
/// or the caller's logits buffer if the function returns it.
void GlueEmitter::defineResult(Operation *op, int64_t width,
                               const std::string &rows) {
  Value r = op->getResult(0);
  ValueInfo &vi = values[r];
  vi.width = width;
  vi.stride = width;
  vi.rows = rows;
  if (r == returned) {
    vi.ptr = "c->logits";
    return;
  }
  int slot = -1;
  for (size_t i = 0; i < slotFree.size(); ++i)
    if (slotFree[i] && (slot < 0 || (slotWidth[slot] < width &&
                                     slotWidth[i] > slotWidth[slot])))
      slot = int(i);
  if (slot < 0) {
    slot = int(slotWidth.size());
    slotWidth.push_back(width);
    slotFree.push_back(false);
  }
  slotFree[slot] = false;
  slotWidth[slot] = std::max(slotWidth[slot], width);
  vi.slot = slot;
  vi.ptr = "S[" + std::to_string(slot) + "]";
}

void GlueEmitter::releaseDead(Operation *op) {
  for (Value v : op->getOperands()) {
    Value o = owner.lookup(v);
    if (!o)
      o = v;
    auto it = values.find(o);
    if (it == values.end() || it->second.slot < 0)
      continue;
    if (lastUse.lookup(o) == op)
      slotFree[it->second.slot] = true;
  }
}

/// Activation `v` as a buffer, its token rows last in `dims`.
static Buf act(const ValueInfo &v, std::vector<std::string> dims) {
  return {v.ptr, std::move(dims), v.stride != v.width ? v.stride : 0};
}

/// `ARCHRT_CHECK(kernel(...));` with the buffers given by argument name,
/// passed in the order spec.args() declares (the position is `pos`).
void GlueEmitter::call(const KernelSpec &spec,
                       const std::map<std::string, Buf> &bufs) {
  std::string args;
  int index = 0;
  for (const KernelArg &a : spec.args()) {
    args += args.empty() ? "" : ", ";
    if (a.kind == KernelArg::Position) {
      args += "pos";
      continue;
    }
    auto it = bufs.find(a.name);
    assert(it != bufs.end() && "the glue passes every declared argument");
    Buf b = it->second;
    while (b.dims.size() < 3)
      b.dims.push_back("0");
    std::string i = std::to_string(index++);
    if (a.kind == KernelArg::Tokens)
      args += "ARCHRT_I32(" + i + ", " + b.ptr + ", " + b.dims[0] + ")";
    else
      args += (b.rowStride ? "ARCHRT_VIEW(" : "ARCHRT_F32(") + i + ", " +
              b.ptr + ", " + b.dims[0] + ", " + b.dims[1] + ", " + b.dims[2] +
              (b.rowStride ? ", " + std::to_string(b.rowStride) : "") + ")";
  }
  os << "  ARCHRT_CHECK(" << kernel(spec) << "(" << args << "));\n";
}

/// Rows of `width` floats of `src` into rows `dstStride` floats apart (0:
/// dense) from `dst`: the copy kernel.
void GlueEmitter::copyRows(int64_t width, const Buf &src,
                           const std::string &dst, int64_t dstStride) {
  call(ElementwiseKernel{ElementwiseKernel::Copy, width},
       {{"a", src}, {"out", {dst, src.dims, dstStride}}});
}

LogicalResult GlueEmitter::emitOp(Operation *op) {
  auto s = [](int64_t v) { return std::to_string(v); };
  using EW = ElementwiseKernel;
  if (auto p = dyn_cast<ParamOp>(op)) {
    auto it = paramIndex.find(p.getName().str());
    if (it == paramIndex.end())
      return p.emitOpError() << "reads a weight the module does not declare";
    ValueInfo &vi = values[p.getResult()];
    vi.ptr = "P[" + std::to_string(it->second) + "]";
    vi.width = vi.stride = cast<RankedTensorType>(p.getType()).getShape().back();
    return success();
  }
  if (forwardWeightOnly.contains(op)) {
    // Weight-only work left in @forward (arch-hoist-param-prep off): redone
    // on every call, into scratch memory of its own.
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    std::string dst = "(c->scratch + " + std::to_string(scratchFloats) + ")";
    scratchFloats += type.getNumElements();
    return emitWeightOp(op, dst);
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    // Activations side by side (the fused output projection of a parallel
    // block): each input copied into its columns of the result.
    if (c.getDim() != 1)
      return c.emitOpError() << "of activations has a lowering along their "
                                "features (dim 1) only";
    int64_t width = widthOf(c.getResult()), offset = 0;
    ValueInfo first = info(c.getInputs().front());
    defineResult(op, width, first.rows);
    std::string dst = info(c.getResult()).ptr;
    os << comment(op);
    for (Value in : c.getInputs()) {
      ValueInfo v = info(in);
      copyRows(v.width, act(v, {s(v.width), v.rows}),
               "(" + dst + " + " + s(offset) + ")", width);
      offset += v.width;
    }
    return success();
  }
  if (auto ap = dyn_cast<CacheAppendOp>(op)) {
    // Rows to positions pos .. of the cache; the context is the cache.
    auto it = cacheIndex.find(ap.getCache().str());
    if (it == cacheIndex.end())
      return ap.emitOpError() << "appends to a cache the module does not "
                                 "declare";
    if (!appended.insert(ap.getCache()).second)
      return ap.emitOpError() << "appends to " << ap.getCacheAttr()
                              << " a second time in one call, which has no "
                                 "lowering (its first context would change)";
    ValueInfo rows = info(ap.getRows());
    std::string cache = "C[" + s(it->second) + "]";
    int64_t w = rows.width;
    os << comment(op);
    copyRows(w, act(rows, {s(w), rows.rows}),
             "(" + cache + " + (size_t)pos * " + s(w) + ")", 0);
    ValueInfo &vi = values[ap.getContext()];
    vi.ptr = cache;
    vi.width = vi.stride = w;
    vi.rows = "(pos + " + rows.rows + ")";
    return success();
  }
  if (auto sp = dyn_cast<SplitOp>(op)) {
    ValueInfo in = info(sp.getInput());
    int64_t offset = 0;
    for (Value r : sp.getResults()) {
      ValueInfo &vi = values[r];
      vi.width = widthOf(r);
      vi.stride = in.stride;
      vi.rows = in.rows;
      vi.ptr = offset ? "(" + in.ptr + " + " + std::to_string(offset) + ")"
                      : in.ptr;
      offset += vi.width;
    }
    return success();
  }
  if (auto e = dyn_cast<EmbedOp>(op)) {
    auto table = cast<RankedTensorType>(e.getTable().getType());
    int64_t v = table.getDimSize(0), d = table.getDimSize(1);
    dModel = d;
    defineResult(op, d, "T");
    os << comment(op);
    call(EmbedKernel{v, d, double(e.getScale().convertToFloat())},
         {{"tokens", {"c->tokens", {"T"}}},
          {"table", {info(e.getTable()).ptr, {s(d), s(v)}}},
          {"out", {info(e.getResult()).ptr, {s(d), "T"}}}});
    return success();
  }
  if (auto n = dyn_cast<NormOp>(op)) {
    // Groups are a dimension of their own: [T, g * d] is (d, g, T).
    int64_t g = n.getGroups();
    int64_t d = widthOf(n.getInput()) / g;
    ValueInfo in = info(n.getInput());
    bool perGroup =
        cast<RankedTensorType>(n.getWeight().getType()).getRank() == 2;
    NormKernel k{d,
                 g,
                 n.getKind(),
                 bool(n.getBias()),
                 perGroup,
                 double(n.getEps().convertToFloat()),
                 double(n.getWeightOffset().convertToFloat())};
    defineResult(op, d * g, in.rows);
    std::vector<std::string> wdims{s(d)};
    if (perGroup)
      wdims.push_back(s(g));
    std::map<std::string, Buf> bufs{
        {"x", act(in, {s(d), s(g), in.rows})},
        {"weight", {info(n.getWeight()).ptr, wdims}},
        {"out", {info(n.getResult()).ptr, {s(d), s(g), in.rows}}}};
    if (n.getBias())
      bufs["bias"] = {info(n.getBias()).ptr, wdims};
    os << comment(op);
    call(k, bufs);
    return success();
  }
  if (auto pe = dyn_cast<PosEmbedOp>(op)) {
    int64_t d = widthOf(pe.getInput());
    ValueInfo in = info(pe.getInput());
    bool learned = pe.getKind() == PosEmbedKind::learned;
    int64_t rows =
        learned ? cast<RankedTensorType>(pe.getTable().getType()).getDimSize(0)
                : 0;
    defineResult(op, d, in.rows);
    std::map<std::string, Buf> bufs{
        {"x", act(in, {s(d), in.rows})},
        {"out", {info(pe.getResult()).ptr, {s(d), in.rows}}}};
    if (learned)
      bufs["table"] = {info(pe.getTable()).ptr, {s(d), s(rows)}};
    os << comment(op);
    call(PosEmbedKernel{d, pe.getKind(), int64_t(pe.getOffset()), rows}, bufs);
    return success();
  }
  if (auto l = dyn_cast<LinearOp>(op)) {
    int64_t K = widthOf(l.getInput()), N = widthOf(l.getResult());
    auto wt = cast<RankedTensorType>(l.getWeight().getType());
    // Packed [panels, K, panel] is (panel, K, panels) to the kernel.
    int64_t panel = wt.getRank() == 3 ? wt.getDimSize(2) : 0;
    std::vector<std::string> wdims{s(K), s(N)};
    if (panel)
      wdims = {s(panel), s(K), s(wt.getDimSize(0))};
    ValueInfo in = info(l.getInput());
    defineResult(op, N, in.rows);
    std::map<std::string, Buf> bufs{
        {"x", act(in, {s(K), in.rows})},
        {"weight", {info(l.getWeight()).ptr, wdims}},
        {"out", {info(l.getResult()).ptr, {s(N), in.rows}}}};
    if (l.getBias())
      bufs["bias"] = {info(l.getBias()).ptr, {s(N)}};
    os << comment(op);
    // The kernel picks its GEMM or GEMV code by the rows it is given.
    call(LinearKernel{K, N, bool(l.getBias()), panel, in.rows == "1"}, bufs);
    return success();
  }
  if (auto r = dyn_cast<RopeOp>(op)) {
    int64_t h = r.getNHeads(), hd = r.getHeadDim();
    ValueInfo in = info(r.getInput());
    RopeKernel k{h,
                 hd,
                 int64_t(r.getRotaryDim()),
                 r.getStyle(),
                 r.getScaling(),
                 int64_t(r.getOriginalMaxSeqLen()),
                 r.getTheta().convertToDouble(),
                 r.getFactor().convertToDouble(),
                 r.getLowFreqFactor().convertToDouble(),
                 r.getHighFreqFactor().convertToDouble(),
                 r.getBetaFast().convertToDouble(),
                 r.getBetaSlow().convertToDouble()};
    defineResult(op, h * hd, in.rows);
    os << comment(op);
    call(k, {{"x", act(in, {s(hd), s(h), in.rows})},
             {"out", {info(r.getResult()).ptr, {s(hd), s(h), in.rows}}}});
    return success();
  }
  if (auto a = dyn_cast<AttentionOp>(op)) {
    // Keys and values must hold positions 0 ..< pos + T: a cache's context.
    if (!a.getKey().getDefiningOp<CacheAppendOp>() ||
        !a.getValue().getDefiningOp<CacheAppendOp>())
      return a.emitOpError() << "reads keys or values that are not the "
                                "context of an arch.cache_append, which has "
                                "no lowering";
    int64_t h = a.getNHeads(), kvh = a.getNKvHeads(), hd = a.getHeadDim();
    nHeads = h, nKVHeads = kvh, headDim = hd;
    ++nLayers;
    ValueInfo q = info(a.getQuery()), k = info(a.getKey()),
              v = info(a.getValue());
    int64_t buckets =
        a.getRelBias()
            ? cast<RankedTensorType>(a.getRelBias().getType()).getDimSize(0)
            : 0;
    AttentionKernel kd{h,
                       kvh,
                       hd,
                       bool(a.getAlibi()),
                       int64_t(a.getWindow()),
                       buckets,
                       buckets ? int64_t(a.getT5MaxDistance()) : 0,
                       int64_t(a.getShawClip()),
                       a.getScale().convertToDouble(),
                       a.getSoftcap().convertToDouble()};
    defineResult(op, h * hd, q.rows);
    std::map<std::string, Buf> bufs{
        {"q", act(q, {s(hd), s(h), q.rows})},
        {"k", act(k, {s(hd), s(kvh), k.rows})},
        {"v", act(v, {s(hd), s(kvh), v.rows})},
        {"out", {info(a.getResult()).ptr, {s(hd), s(h), q.rows}}}};
    if (buckets)
      bufs["rel_bias"] = {info(a.getRelBias()).ptr, {s(h), s(buckets)}};
    if (a.getRelKey()) {
      std::string rows = s(2 * int64_t(a.getShawClip()) + 1);
      bufs["rel_key"] = {info(a.getRelKey()).ptr, {s(hd), rows}};
      bufs["rel_value"] = {info(a.getRelValue()).ptr, {s(hd), rows}};
    }
    os << comment(op);
    call(kd, bufs);
    return success();
  }
  if (isa<GluOp, AddOp, ActivationOp, SoftcapOp, ScaleOp>(op)) {
    int64_t d = widthOf(op->getResult(0));
    ValueInfo x = info(op->getOperand(0));
    EW k{EW::Add, d};
    if (auto g = dyn_cast<GluOp>(op)) {
      dFF = d;
      k = EW{EW::Glu, d, g.getActivation()};
    } else if (auto a = dyn_cast<ActivationOp>(op)) {
      dFF = d;
      k = EW{EW::Activate, d, a.getActivation()};
    } else if (auto sc = dyn_cast<ScaleOp>(op)) {
      k = EW{EW::Scale, d, Activation::identity,
             double(sc.getFactor().convertToFloat())};
    } else if (auto c = dyn_cast<SoftcapOp>(op)) {
      k = EW{EW::Softcap, d, Activation::identity,
             double(c.getCap().convertToFloat())};
    }
    defineResult(op, d, x.rows);
    std::map<std::string, Buf> bufs{
        {"a", act(x, {s(d), x.rows})},
        {"out", {info(op->getResult(0)).ptr, {s(d), x.rows}}}};
    if (op->getNumOperands() == 2) {
      ValueInfo y = info(op->getOperand(1));
      bufs["b"] = act(y, {s(d), y.rows});
    }
    os << comment(op);
    call(k, bufs);
    return success();
  }
  if (auto l = dyn_cast<LastTokenOp>(op)) {
    ValueInfo in = info(l.getInput());
    ValueInfo &vi = values[l.getResult()];
    vi.width = vi.stride = in.width;
    vi.rows = "1";
    vi.ptr = "(" + in.ptr + " + (size_t)(" + in.rows + " - 1) * " +
             std::to_string(in.stride) + ")";
    return success();
  }
  if (isa<func::ReturnOp>(op))
    return success();
  return op->emitOpError() << "has no lowering";
}

/// Weight-only op `op` (a concatenation, a packing, a sum of biases)
/// computed into `dst`; its result then lives there.
LogicalResult GlueEmitter::emitWeightOp(Operation *op, const std::string &dst) {
  auto s = [](int64_t v) { return std::to_string(v); };
  using EW = ElementwiseKernel;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  ValueInfo &vi = values[op->getResult(0)];
  vi.ptr = dst;
  vi.width = vi.stride = type.getShape().back();
  os << comment(op);
  if (auto c = dyn_cast<ConcatOp>(op)) {
    // Row-major: along dim 0 each input is one block of rows; along the
    // last dim of a matrix, its rows go into their columns of each row.
    bool columns = c.getDim() == 1 && type.getRank() == 2;
    if (c.getDim() != 0 && !columns)
      return c.emitOpError() << "of weights along dim " << c.getDim()
                             << " of rank " << type.getRank()
                             << " has no lowering";
    int64_t offset = 0, width = type.getShape().back();
    for (Value in : c.getInputs()) {
      auto t = cast<RankedTensorType>(in.getType());
      int64_t w = t.getShape().back(), rows = t.getNumElements() / w;
      copyRows(w, {info(in).ptr, {s(w), s(rows)}},
               "(" + dst + " + " + s(offset) + ")", columns ? width : 0);
      offset += columns ? w : t.getNumElements();
    }
    return success();
  }
  if (auto a = dyn_cast<AddOp>(op)) {
    // Summed biases, as one row.
    int64_t n = type.getNumElements();
    call(EW{EW::Add, n}, {{"a", {info(a.getLhs()).ptr, {s(n), "1"}}},
                          {"b", {info(a.getRhs()).ptr, {s(n), "1"}}},
                          {"out", {dst, {s(n), "1"}}}});
    return success();
  }
  auto p = dyn_cast<PackOp>(op);
  if (!p)
    return op->emitOpError() << "depends only on weights and has no lowering "
                                "as weight preparation";
  auto w = cast<RankedTensorType>(p.getWeight().getType());
  int64_t n = w.getDimSize(0), k = w.getDimSize(1), panel = p.getPanel();
  call(PackKernel{k, n, panel},
       {{"weight", {info(p.getWeight()).ptr, {s(k), s(n)}}},
        {"out", {dst, {s(panel), s(k), s(type.getDimSize(0))}}}});
  return success();
}

/// @prepare_params: weight-only work the runtime runs once per load. A
/// value only an arch.assign reads is computed straight into its prepared
/// weight; others (a concatenation then packed) into temporary memory W.
LogicalResult GlueEmitter::emitPrepare(func::FuncOp fn) {
  // The op after which each loaded weight is not read again.
  llvm::StringMap<Operation *> lastRead;
  llvm::StringMap<int64_t> weightNumel;
  llvm::StringSet<> assigned;
  int64_t tempOffset = 0;
  SmallVector<Value> temps; ///< values in W
  for (ParamOp p : fn.getOps<ParamOp>()) {
    weightNumel[p.getName()] =
        cast<RankedTensorType>(p.getType()).getNumElements();
    Operation *&last = lastRead[p.getName()];
    for (Operation *u : p->getUsers())
      if (!last || last->isBeforeInBlock(u))
        last = u;
  }
  // Weights only preparation reads, once `op` has read them for the last
  // time.
  auto release = [&](Operation *op) {
    std::map<int, int64_t> done;
    for (const auto &e : lastRead)
      if (e.second == op && !forwardReads.contains(e.first()))
        done[paramIndex[e.first().str()]] = weightNumel[e.first()];
    for (auto [index, numel] : done)
      os << "  archrt_gen_release(P[" << index << "], " << numel << ");\n";
  };
  for (Operation &op : fn.getBody().front()) {
    if (isa<ParamOp, func::ReturnOp>(op)) {
      if (failed(emitOp(&op)))
        return failure();
      continue;
    }
    if (auto a = dyn_cast<AssignOp>(op)) {
      if (!assigned.insert(a.getName()).second)
        return a.emitOpError() << "assigns " << a.getNameAttr() << " twice";
      std::string dst =
          "P[" + std::to_string(paramIndex[a.getName().str()]) + "]";
      ValueInfo v = info(a.getValue());
      if (v.ptr != dst) {
        auto t = cast<RankedTensorType>(a.getValue().getType());
        int64_t w = t.getShape().back();
        os << comment(&op);
        copyRows(w, {v.ptr,
                  {std::to_string(w), std::to_string(t.getNumElements() / w)}},
                 dst, 0);
      }
      release(&op);
      // W is reused once no temporary in it is read after this assign.
      if (llvm::all_of(temps, [&](Value t) {
            return llvm::none_of(t.getUsers(), [&](Operation *u) {
              return op.isBeforeInBlock(u);
            });
          })) {
        temps.clear();
        tempOffset = 0;
      }
      continue;
    }
    if (!isa<ConcatOp, PackOp, AddOp>(op))
      return op.emitOpError() << "has no lowering in @prepare_params";
    std::string dst;
    Operation *user = op.hasOneUse() ? *op.user_begin() : nullptr;
    if (auto a = dyn_cast_or_null<AssignOp>(user)) {
      dst = "P[" + std::to_string(paramIndex[a.getName().str()]) + "]";
    } else {
      auto type = cast<RankedTensorType>(op.getResult(0).getType());
      dst = "(W + " + std::to_string(tempOffset) + ")";
      tempOffset += type.getNumElements();
      prepareTemp = std::max(prepareTemp, tempOffset);
      temps.push_back(op.getResult(0));
    }
    if (failed(emitWeightOp(&op, dst)))
      return failure();
    release(&op);
  }
  for (WeightOp w : prepared)
    if (!assigned.contains(w.getSymName()))
      return w.emitOpError() << "is prepared but @prepare_params never "
                                "assigns it";
  return success();
}

std::string GlueEmitter::emitDesc() {
  std::string prefix;
  if (auto a = module->getAttrOfType<StringAttr>("arch.checkpoint_prefix"))
    prefix = a.str();
  std::string d;
  llvm::raw_string_ostream ds(d);
  ds << "static const archrt_gen_param params[" << params.size() << "] = {\n";
  auto list = [&](llvm::ArrayRef<int64_t> v) {
    ds << v.size() << ", {";
    for (size_t i = 0; i < v.size(); ++i)
      ds << (i ? ", " : "") << v[i];
    ds << "}";
  };
  for (WeightOp p : params) {
    ds << "    {" << cStringLiteral(p.getSymName().str()) << ", ";
    list(p.getTensorType().getShape());
    if (p.getSource()) {
      ds << ", " << cStringLiteral(p.getSource()->str()) << ", ";
      list(*p.getSourceShape());
      ds << ", " << (p.getTranspose() ? 1 : 0);
      if (p.getRows()) {
        ArrayRef<int64_t> r = *p.getRows();
        ds << ", {" << r[0] << ", " << r[1] << ", " << r[2] << ", " << r[3]
           << "}";
      }
    }
    // Read only to prepare other weights: the runtime drops its pages then.
    if (!forwardReads.contains(p.getSymName()))
      ds << ", .prepare_only = 1";
    ds << "},\n";
  }
  ds << "};\n\nstatic const archrt_gen_param prepared[" << prepared.size()
     << "] = {\n";
  for (WeightOp p : prepared) {
    ds << "    {" << cStringLiteral(p.getSymName().str()) << ", ";
    list(p.getTensorType().getShape());
    ds << "},\n";
  }
  ds << "};\n\nstatic const archrt_gen_cache caches[" << caches.size()
     << "] = {\n";
  for (CacheOp c : caches)
    ds << "    {" << cStringLiteral(c.getSymName().str())
       << ", ARCHRT_GEN_CACHE_" << llvm::StringRef(
              stringifyCacheLayout(c.getLayout())).upper()
       << ", " << c.getCapacity().value_or(0) << ", " << c.getRowElements()
       << ", " << c.getRowType().getElementTypeBitWidth() / 8 << "},\n";
  ds << "};\n\nstatic const int64_t slot_width[" << slotWidth.size()
     << "] = {";
  for (size_t i = 0; i < slotWidth.size(); ++i)
    ds << (i ? ", " : "") << slotWidth[i];
  ds << "};\n\nconst archrt_gen_model archrt_gen_model_desc = {\n"
     << "    .name = " << cStringLiteral(out.name) << ",\n"
     << "    .spec_toml = " << cStringLiteral(opts.specText) << ",\n"
     << "    .vocab_size = " << vocab << ", .d_model = " << dModel
     << ", .n_layers = " << nLayers << ",\n"
     << "    .n_heads = " << nHeads << ", .n_kv_heads = " << nKVHeads
     << ", .head_dim = " << headDim << ", .d_ff = " << dFF << ",\n"
     << "    .max_seq_len = " << maxSeq << ", .max_chunk = "
     << std::min(opts.maxChunk, maxSeq) << ",\n"
     << "    .n_params = " << params.size() << ", .params = params,\n"
     << "    .n_prepared = " << prepared.size()
     << ", .prepared = prepared,\n"
     << "    .checkpoint_prefix = "
     << (prefix.empty() ? std::string("0") : cStringLiteral(prefix)) << ",\n"
     << "    .n_slots = " << slotWidth.size()
     << ", .slot_width = slot_width,\n"
     << "    .scratch_floats = " << scratchFloats << ",\n"
     << "    .n_caches = " << caches.size() << ", .caches = caches,\n};\n";
  return ds.str();
}

LogicalResult GlueEmitter::run() {
  FailureOr<func::FuncOp> forward = lookupForward(module);
  if (failed(forward))
    return failure();
  func::FuncOp fn = *forward;
  auto maxSeqAttr = module->getAttrOfType<IntegerAttr>("arch.max_seq_len");
  if (!maxSeqAttr || maxSeqAttr.getInt() <= 0 ||
      maxSeqAttr.getInt() > std::numeric_limits<int32_t>::max())
    return module.emitError() << "module needs an arch.max_seq_len "
                                 "attribute in [1, 2147483647]";
  maxSeq = maxSeqAttr.getInt();
  out.name = module.getSymName() ? module.getSymName()->str() : "model";
  // The parameter table: loaded weights in module order, then the
  // prepared ones (P holds both, in this order).
  for (WeightOp w : module.getOps<WeightOp>())
    (w.getPrepared() ? prepared : params).push_back(w);
  for (WeightOp w : params)
    paramIndex[w.getSymName().str()] = int(paramIndex.size());
  for (WeightOp w : prepared)
    paramIndex[w.getSymName().str()] = int(paramIndex.size());
  // The cache table: every arch.cache in module order.
  for (CacheOp c : module.getOps<CacheOp>()) {
    if (c.getLayout() != CacheLayout::tokens)
      return c.emitOpError() << "is a " << stringifyCacheLayout(c.getLayout())
                             << " cache, which has no lowering yet (only "
                                "tokens caches do)";
    if (!c.getRowType().getElementType().isF32())
      return c.emitOpError() << "stores " << c.getRowType().getElementType()
                             << ", which has no lowering yet (only f32 does)";
    // The runtime allocates a tokens cache for the sequence's positions
    // (at most max_seq_len), and appends write at any of them.
    if (*c.getCapacity() < maxSeq)
      return c.emitOpError() << "holds " << *c.getCapacity()
                             << " positions, fewer than the module's "
                                "max_seq_len "
                             << maxSeq;
    cacheIndex[c.getSymName().str()] = int(caches.size());
    caches.push_back(c);
  }
  std::string prepare;
  for (ParamOp p : fn.getOps<ParamOp>())
    forwardReads.insert(p.getName());
  if (auto prep = module.lookupSymbol<func::FuncOp>("prepare_params")) {
    if (prep.isExternal() || prep.getNumArguments() || prep.getNumResults())
      return prep.emitError() << "@prepare_params must be a function of no "
                                 "arguments and results, with a body";
    if (failed(emitPrepare(prep)))
      return failure();
    prepare = body;
    body.clear();
  } else if (!prepared.empty()) {
    return module.emitError()
           << "module has prepared weights but no func.func @prepare_params";
  }
  Block &entry = fn.getBody().front();
  forwardWeightOnly = weightOnlyOps(fn);
  forwardWeightOnly.remove_if([](Operation *op) { return isa<ParamOp>(op); });
  values[entry.getArgument(0)] = {"c->tokens", "T", 1, 1, -1};
  returned = entry.getTerminator()->getOperand(0);
  vocab = cast<RankedTensorType>(returned.getType()).getDimSize(1);

  // Last reader of each slot owner (views extend their owner's life).
  for (Operation &op : entry)
    for (Value v : op.getOperands()) {
      Value o = owner.lookup(v);
      if (!o)
        o = v;
      lastUse[o] = &op;
      if (isView(&op) && v == op.getOperand(0))
        for (Value r : op.getResults())
          owner[r] = o;
    }

  for (Operation &op : entry) {
    if (failed(emitOp(&op)))
      return failure();
    releaseDead(&op);
  }

  // A weight, or one cache, past 2^31 - 1 elements needs
  // Halide's 64-bit buffer indexing (PaLM's and Nemotron-4's embeddings).
  const int64_t int32Max = std::numeric_limits<int32_t>::max();
  for (CacheOp c : caches)
    out.largeBuffers |= c.getCapacity().value_or(1) * c.getRowElements() > int32Max;
  for (auto *table : {&params, &prepared})
    for (WeightOp w : *table)
      out.largeBuffers |= w.getTensorType().getNumElements() > int32Max;

  std::string c;
  llvm::raw_string_ostream cs(c);
  cs << cComment("Host glue of model '" + out.name +
                 "', generated by archc from " + opts.specPath + ".")
     << "\n/* Do not edit: recompile the spec instead. */\n"
     << "#include \"archrt_gen.h\"\n\n";
  for (const KernelSpec &k : out.kernels)
    cs << k.cPrototype() << "\n";
  cs << "\n" << emitDesc() << "\n"
     << "int archrt_gen_forward(const archrt_gen_call *c) {\n"
     << "  const int32_t T = c->n_tokens, pos = c->pos;\n"
     << "  float *const *P = c->params;\n"
     << "  float *const *S = c->slots;\n"
     << "  float *const *C = c->caches;\n"
     << "  halide_buffer_t B[7];\n"
     << "  halide_dimension_t D[7][3];\n"
     << "  (void)S, (void)C;\n\n"
     << body << "  return 0;\n}\n\n"
     << "static int prepare(float *const *P, float *W) {\n"
     << "  halide_buffer_t B[7];\n"
     << "  halide_dimension_t D[7][3];\n"
     << "  (void)P, (void)W, (void)B, (void)D;\n"
     << prepare << "  return 0;\n}\n\n"
     << "int archrt_gen_prepare(float *const *P) {\n";
  if (prepareTemp)
    cs << "  float *W = malloc(sizeof(float) * " << prepareTemp << ");\n"
       << "  if (!W)\n    return ARCHRT_GEN_NO_MEMORY;\n"
       << "  int rc = prepare(P, W);\n  free(W);\n  return rc;\n}\n";
  else
    cs << "  return prepare(P, 0);\n}\n";
  out.glue = cs.str();
  return success();
}

} // namespace

LogicalResult emitGlue(ModuleOp module, const GlueOptions &opts,
                       LoweredModel &out) {
  return GlueEmitter(module, opts, out).run();
}

} // namespace arch
