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
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <map>

using namespace mlir;

namespace arch {
namespace {

struct ValueInfo {
  std::string ptr;  ///< C expression of the first element
  std::string rows; ///< C expression of the token count
  int64_t width = 0;
  int slot = -1;    ///< activation slot, -1 for params and inputs
};

class GlueEmitter {
public:
  GlueEmitter(ModuleOp module, const GlueOptions &opts, LoweredModel &out)
      : module(module), opts(opts), out(out), os(body) {}
  LogicalResult run();

private:
  LogicalResult emitOp(Operation *op);
  std::string kernel(KernelSpec spec);
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
  std::vector<ParamOp> params; ///< first use of each, in table order
  std::map<std::string, int> paramIndex;
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

static std::string f32(int i, const std::string &ptr,
                       std::vector<std::string> dims) {
  while (dims.size() < 3)
    dims.push_back("0");
  return "ARCHRT_F32(" + std::to_string(i) + ", " + ptr + ", " + dims[0] +
         ", " + dims[1] + ", " + dims[2] + ")";
}

LogicalResult GlueEmitter::emitOp(Operation *op) {
  auto s = [](int64_t v) { return std::to_string(v); };
  if (auto p = dyn_cast<ParamOp>(op)) {
    std::string name = p.getName().str();
    auto shape = cast<RankedTensorType>(p.getType()).getShape();
    auto [it, added] = paramIndex.try_emplace(name, int(params.size()));
    if (added)
      params.push_back(p);
    else if (params[it->second].getType() != p.getType() ||
             params[it->second].getSourceAttr() != p.getSourceAttr() ||
             params[it->second].getTranspose() != p.getTranspose() ||
             params[it->second].getRowsAttr() != p.getRowsAttr())
      return p.emitOpError() << "parameter '" << name
                             << "' is used with two different shapes or "
                                "sources";
    ValueInfo &vi = values[p.getResult()];
    vi.ptr = "P[" + std::to_string(it->second) + "]";
    vi.width = shape.back();
    return success();
  }
  if (auto e = dyn_cast<EmbedOp>(op)) {
    auto table = cast<RankedTensorType>(e.getTable().getType());
    int64_t v = table.getDimSize(0), d = table.getDimSize(1);
    dModel = d;
    std::string k = kernel({KernelKind::Embed, {v, d},
                            {double(e.getScale().convertToFloat())}});
    defineResult(op, d, "T");
    os << comment(op) << "  ARCHRT_CHECK(" << k
       << "(ARCHRT_I32(0, c->tokens, T), "
       << f32(1, info(e.getTable()).ptr, {s(d), s(v)}) << ", "
       << f32(2, info(e.getResult()).ptr, {s(d), "T"}) << "));\n";
    return success();
  }
  if (auto n = dyn_cast<NormOp>(op)) {
    // Groups are rows of their own: [T, g * d] is [T * g, d].
    int64_t g = n.getGroups();
    int64_t d = widthOf(n.getInput()) / g;
    ValueInfo in = info(n.getInput());
    std::string rows = g > 1 ? "(" + in.rows + ") * " + s(g) : in.rows;
    bool bias = bool(n.getBias());
    bool separate =
        cast<RankedTensorType>(n.getWeight().getType()).getRank() == 2;
    std::string k = kernel({KernelKind::Norm,
                            {d, int64_t(n.getKind() == NormKind::layer), bias,
                             separate ? g : 0},
                            {double(n.getEps().convertToFloat()),
                             double(n.getWeightOffset().convertToFloat())}});
    defineResult(op, d * g, in.rows);
    os << comment(op) << "  ARCHRT_CHECK(" << k << "("
       << f32(0, in.ptr, {s(d), rows}) << ", "
       << f32(1, info(n.getWeight()).ptr, {s(d), separate ? s(g) : "0"})
       << ", ";
    if (bias)
      os << f32(2, info(n.getBias()).ptr, {s(d), separate ? s(g) : "0"})
         << ", ";
    os << f32(3, info(n.getResult()).ptr, {s(d), rows}) << "));\n";
    return success();
  }
  if (auto pe = dyn_cast<PosEmbedOp>(op)) {
    int64_t d = widthOf(pe.getInput());
    ValueInfo in = info(pe.getInput());
    bool learned = pe.getKind() == PosEmbedKind::learned;
    int64_t rows =
        learned ? cast<RankedTensorType>(pe.getTable().getType()).getDimSize(0)
                : 0;
    std::string k = kernel({KernelKind::PosEmbed,
                            {d, learned ? 0 : 1, int64_t(pe.getOffset()), rows},
                            {}});
    defineResult(op, d, in.rows);
    os << comment(op) << "  ARCHRT_CHECK(" << k << "("
       << f32(0, in.ptr, {s(d), in.rows}) << ", ";
    if (learned)
      os << f32(1, info(pe.getTable()).ptr, {s(d), s(rows)}) << ", ";
    os << "pos, " << f32(2, info(pe.getResult()).ptr, {s(d), in.rows})
       << "));\n";
    return success();
  }
  if (auto l = dyn_cast<LinearOp>(op)) {
    int64_t K = widthOf(l.getInput()), N = widthOf(l.getResult());
    int64_t bias = l.getBias() ? 1 : 0;
    ValueInfo in = info(l.getInput());
    std::string gemv = kernel({KernelKind::LinearGemv, {K, N, bias}, {}});
    defineResult(op, N, in.rows);
    std::string args = f32(0, in.ptr, {s(K), in.rows}) + ", " +
                       f32(1, info(l.getWeight()).ptr, {s(K), s(N)}) + ", ";
    if (bias)
      args += f32(2, info(l.getBias()).ptr, {s(N)}) + ", ";
    args += f32(3, info(l.getResult()).ptr, {s(N), in.rows});
    os << comment(op);
    if (in.rows == "1") {
      os << "  ARCHRT_CHECK(" << gemv << "(" << args << "));\n";
    } else {
      std::string gemm = kernel({KernelKind::LinearGemm, {K, N, bias}, {}});
      os << "  ARCHRT_CHECK(" << in.rows << " >= 4 ? " << gemm << "(" << args
         << ")\n             : " << gemv << "(" << args << "));\n";
    }
    return success();
  }
  if (auto r = dyn_cast<RopeOp>(op)) {
    int64_t h = r.getNHeads(), hd = r.getHeadDim();
    ValueInfo in = info(r.getInput());
    std::string k = kernel(
        {KernelKind::Rope,
         {h, hd, int64_t(r.getRotaryDim()),
          int64_t(r.getStyle() == RopeStyle::interleaved),
          int64_t(r.getScaling()), int64_t(r.getOriginalMaxSeqLen())},
         {r.getTheta().convertToDouble(), r.getFactor().convertToDouble(),
          r.getLowFreqFactor().convertToDouble(),
          r.getHighFreqFactor().convertToDouble(),
          r.getBetaFast().convertToDouble(),
          r.getBetaSlow().convertToDouble()}});
    defineResult(op, h * hd, in.rows);
    os << comment(op) << "  ARCHRT_CHECK(" << k << "("
       << f32(0, in.ptr, {s(hd), s(h), in.rows}) << ", pos, "
       << f32(1, info(r.getResult()).ptr, {s(hd), s(h), in.rows}) << "));\n";
    return success();
  }
  if (auto a = dyn_cast<AttentionOp>(op)) {
    int64_t h = a.getNHeads(), kvh = a.getNKvHeads(), hd = a.getHeadDim();
    int64_t layer = a.getLayer();
    nHeads = h, nKVHeads = kvh, headDim = hd;
    nLayers = std::max(nLayers, layer + 1);
    ValueInfo q = info(a.getQuery()), k = info(a.getKey()),
              v = info(a.getValue());
    int64_t buckets =
        a.getRelBias()
            ? cast<RankedTensorType>(a.getRelBias().getType()).getDimSize(0)
            : 0;
    std::string kn = kernel({KernelKind::Attention,
                             {h, kvh, hd, int64_t(a.getAlibi()),
                              int64_t(a.getWindow()), buckets,
                              buckets ? int64_t(a.getT5MaxDistance()) : 0,
                              int64_t(a.getShawClip())},
                             {a.getScale().convertToDouble(),
                              a.getSoftcap().convertToDouble()}});
    defineResult(op, h * hd, q.rows);
    std::string kv = s(kvh * hd);
    os << comment(op) << "  {\n"
       << "    size_t layer = (size_t)" << layer
       << " * c->cache_tokens * " << kv << ";\n"
       << "    float *kc = c->kcache + layer, *vc = c->vcache + layer;\n"
       << "    memcpy(kc + (size_t)pos * " << kv << ", " << k.ptr
       << ", sizeof(float) * " << kv << " * " << k.rows << ");\n"
       << "    memcpy(vc + (size_t)pos * " << kv << ", " << v.ptr
       << ", sizeof(float) * " << kv << " * " << v.rows << ");\n"
       << "    ARCHRT_CHECK(" << kn << "("
       << f32(0, q.ptr, {s(hd), s(h), q.rows}) << ", "
       << f32(1, "kc", {s(hd), s(kvh), "pos + " + q.rows}) << ",\n        "
       << f32(2, "vc", {s(hd), s(kvh), "pos + " + q.rows}) << ", "
       << (buckets ? f32(3, info(a.getRelBias()).ptr, {s(h), s(buckets)}) + ", "
                   : std::string());
    if (a.getRelKey()) {
      std::string rows = s(2 * int64_t(a.getShawClip()) + 1);
      os << f32(4, info(a.getRelKey()).ptr, {s(hd), rows}) << ", "
         << f32(5, info(a.getRelValue()).ptr, {s(hd), rows}) << ", ";
    }
    os << "pos, "
       << f32(6, info(a.getResult()).ptr, {s(hd), s(h), q.rows})
       << "));\n  }\n";
    return success();
  }
  if (isa<GluOp, AddOp, ActivationOp, SoftcapOp, ScaleOp>(op)) {
    int64_t d = widthOf(op->getResult(0));
    ValueInfo x = info(op->getOperand(0));
    KernelSpec spec{KernelKind::Add, {d}, {}};
    if (auto g = dyn_cast<GluOp>(op)) {
      dFF = d;
      spec = {KernelKind::Glu, {d, int64_t(g.getActivation())}, {}};
    } else if (auto a = dyn_cast<ActivationOp>(op)) {
      dFF = d;
      spec = {KernelKind::Activation, {d, int64_t(a.getActivation())}, {}};
    } else if (auto sc = dyn_cast<ScaleOp>(op)) {
      spec = {KernelKind::Scale, {d}, {double(sc.getFactor().convertToFloat())}};
    } else if (auto c = dyn_cast<SoftcapOp>(op)) {
      spec = {KernelKind::Softcap, {d}, {double(c.getCap().convertToFloat())}};
    }
    std::string k = kernel(spec);
    defineResult(op, d, x.rows);
    os << comment(op) << "  ARCHRT_CHECK(" << k << "("
       << f32(0, x.ptr, {s(d), x.rows}) << ", ";
    if (op->getNumOperands() == 2) {
      ValueInfo y = info(op->getOperand(1));
      os << f32(1, y.ptr, {s(d), y.rows}) << ", ";
    }
    os << f32(2, info(op->getResult(0)).ptr, {s(d), x.rows}) << "));\n";
    return success();
  }
  if (auto l = dyn_cast<LastTokenOp>(op)) {
    ValueInfo in = info(l.getInput());
    ValueInfo &vi = values[l.getResult()];
    vi.width = in.width;
    vi.rows = "1";
    vi.ptr = "(" + in.ptr + " + (size_t)(" + in.rows + " - 1) * " +
             std::to_string(in.width) + ")";
    Value root = owner.lookup(l.getInput());
    owner[l.getResult()] = root ? root : l.getInput();
    return success();
  }
  if (isa<func::ReturnOp>(op))
    return success();
  return op->emitOpError() << "has no lowering";
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
  for (ParamOp p : params) {
    auto shape = cast<RankedTensorType>(p.getType()).getShape();
    ds << "    {" << cStringLiteral(p.getName().str()) << ", ";
    list(shape);
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
    ds << "},\n";
  }
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
     << "    .max_seq_len = " << maxSeq << ", .kv_dim = "
     << nKVHeads * headDim << ", .max_chunk = "
     << std::min(opts.maxChunk, maxSeq) << ",\n"
     << "    .n_params = " << params.size() << ", .params = params,\n"
     << "    .checkpoint_prefix = "
     << (prefix.empty() ? std::string("0") : cStringLiteral(prefix)) << ",\n"
     << "    .n_slots = " << slotWidth.size()
     << ", .slot_width = slot_width,\n};\n";
  return ds.str();
}

LogicalResult GlueEmitter::run() {
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  if (!fn)
    return module.emitError() << "module has no func.func @forward";
  auto maxSeqAttr = module->getAttrOfType<IntegerAttr>("arch.max_seq_len");
  if (!maxSeqAttr)
    return module.emitError() << "module lacks the arch.max_seq_len attribute";
  maxSeq = maxSeqAttr.getInt();
  out.name = module.getSymName() ? module.getSymName()->str() : "model";
  if (fn.getNumArguments() != 2 || fn.getNumResults() != 1)
    return fn.emitError() << "@forward must take (tokens, pos) and return "
                             "logits";
  Block &entry = fn.getBody().front();
  values[entry.getArgument(0)] = {"c->tokens", "T", 1, -1};
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  returned = ret.getOperand(0);
  auto logitsTy = cast<RankedTensorType>(returned.getType());
  if (logitsTy.getRank() != 2 || logitsTy.getDimSize(0) != 1)
    return fn.emitError() << "@forward must return tensor<1xVxf32> logits";
  vocab = logitsTy.getDimSize(1);
  if (!returned.getDefiningOp())
    return fn.emitError() << "@forward must return a computed value";

  // Last reader of each slot owner (aliases extend their owner's life).
  for (Operation &op : entry)
    for (Value v : op.getOperands()) {
      Value o = owner.lookup(v);
      if (!o)
        o = v;
      lastUse[o] = &op;
      if (auto lt = dyn_cast<LastTokenOp>(op))
        owner[lt.getResult()] = o;
    }
  owner.clear();

  for (Operation &op : entry) {
    if (failed(emitOp(&op)))
      return failure();
    releaseDead(&op);
  }

  // A weight, or one layer's KV cache, past 2^31 - 1 elements needs
  // Halide's 64-bit buffer indexing (PaLM's and Nemotron-4's embeddings).
  const int64_t int32Max = std::numeric_limits<int32_t>::max();
  out.largeBuffers = maxSeq * nKVHeads * headDim > int32Max;
  for (ParamOp p : params)
    out.largeBuffers |=
        cast<RankedTensorType>(p.getType()).getNumElements() > int32Max;

  std::string c;
  llvm::raw_string_ostream cs(c);
  cs << cComment("Host glue of model '" + out.name +
                 "', generated by archc from " + opts.specPath + ".")
     << "\n/* Do not edit: recompile the spec instead. */\n"
     << "#include <string.h>\n\n#include \"archrt_gen.h\"\n\n";
  for (const KernelSpec &k : out.kernels)
    cs << "int " << k.name() << "(" << cParameters(k) << ");\n";
  cs << "\n" << emitDesc() << "\n"
     << "int archrt_gen_forward(const archrt_gen_call *c) {\n"
     << "  const int32_t T = c->n_tokens, pos = c->pos;\n"
     << "  float *const *P = c->params;\n"
     << "  float *const *S = c->slots;\n"
     << "  halide_buffer_t B[7];\n"
     << "  halide_dimension_t D[7][3];\n"
     << "  (void)S;\n\n"
     << body << "  return 0;\n}\n";
  out.glue = cs.str();
  return success();
}

} // namespace

LogicalResult emitGlue(ModuleOp module, const GlueOptions &opts,
                       LoweredModel &out) {
  return GlueEmitter(module, opts, out).run();
}

} // namespace arch
