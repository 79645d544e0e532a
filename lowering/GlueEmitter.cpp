//===- GlueEmitter.cpp - Kernel-call IR -> kernel catalogue + host C ------===//
//
// Prints the planned kernel-call level (arch-lower-to-kernels, then
// archk-plan-buffers) as C, one case per op, in order: every decision
// (kernels, views, buffer slots, scratch offsets, copies) is in the IR.
// Index values print as C expressions, buffers as a pointer expression
// with C extents per dimension and the strides of their memref type.
//
//===----------------------------------------------------------------------===//
#include "lowering/GlueEmitter.h"
#include "lowering/CText.h"
#include "arch/Dialect/ArchDialect.h"
#include "arch/Kernel/ArchK.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace mlir;

namespace arch {
/// The module's layers (`arch.n_layers`, which the importer sets), else
/// `counted` (its attention calls: IR written by hand).
static int64_t layersOf(ModuleOp module, int64_t counted) {
  auto n = module->getAttrOfType<IntegerAttr>("arch.n_layers");
  return n ? n.getInt() : counted;
}

namespace {

/// A buffer in C: its first element, its extents and, where its type
/// has a dynamic stride (a head-major cache's heads), its strides in
/// elements; outermost first.
struct CBuf {
  std::string ptr;
  std::vector<std::string> extents, strides;
};

class GlueEmitter {
public:
  GlueEmitter(ModuleOp module, const GlueOptions &opts, LoweredModel &out)
      : module(module), opts(opts), out(out) {}
  LogicalResult run();

private:
  LogicalResult emitFunction(func::FuncOp fn, bool forward, std::string &c);
  LogicalResult emitOp(Operation *op, bool forward, llvm::raw_ostream &os);
  LogicalResult emitBlock(Block &block, bool forward, llvm::raw_ostream &os);
  /// `head` ("for (...)", "if (...)"), then `block` indented in braces.
  LogicalResult emitNested(const std::string &head, Block &block, bool forward,
                           llvm::raw_ostream &os);
  /// A fresh C local for a value computed at run time in a loop.
  std::string local() { return "v" + std::to_string(locals++); }
  int locals = 0;
  std::string indent = "  ";
  std::string bufferArg(Value v, int index);
  std::vector<std::string> stridesOf(Value v);
  /// What kernel call `op` computes and where the spec declares it
  /// ("linear layers.0 (spec.toml:15:1)"): its comment and profile label.
  std::string label(Operation *op);
  std::string emitDesc();

  ModuleOp module;
  const GlueOptions &opts;
  LoweredModel &out;

  llvm::DenseMap<Value, CBuf> bufs;
  llvm::DenseMap<Value, std::string> ints; ///< index values
  std::vector<WeightOp> params;   ///< loaded weights, in table order
  std::vector<WeightOp> prepared; ///< computed by @prepare_params
  std::map<std::string, int> paramIndex; ///< index into P: loaded, prepared
  std::vector<CacheOp> caches;           ///< the runtime's cache table
  std::map<std::string, int> cacheIndex; ///< into C
  llvm::StringSet<> forwardReads;        ///< weights @forward reads
  llvm::StringSet<> acquired; ///< weights @prepare_params acquires
  /// A forward kernel call (a profile site): its symbol, its label and
  /// the FLOPs of each row of its work ARCHRT_CALL counts (0: none).
  struct Site {
    std::string kernel, label;
    int64_t flopsPerRow = 0;
  };
  /// Site `site`'s work in one call, as C expressions: its rows (token
  /// rows of a matmul, query-key pairs of an attention) and the bytes it
  /// reads (weights; cache rows); "0" where not counted.
  void work(archk::CallOp call, const KernelSpec &spec, Site &site,
            std::string &rows, std::string &bytes);
  /// The forward function's kernel calls in text order.
  std::vector<Site> sites;
  std::vector<int64_t> slotWidth;
  std::vector<uint8_t> slotContext; ///< 1: sized for the sequence's positions
  int64_t scratchFloats = 0, prepareTemp = 0;
  // Model facts for the descriptor, read off the kernel calls.
  int64_t vocab = 0, dModel = 0, nLayers = 0, nHeads = 0, nKVHeads = 0,
          headDim = 0, dFF = 0, maxSeq = 0;
  /// The rotations the forward pass runs (its RoPE kernels' styles).
  bool ropeHalfSplit = false, ropeInterleaved = false;
};

std::string GlueEmitter::label(Operation *op) {
  std::string s;
  llvm::raw_string_ostream cs(s);
  cs << cast<archk::CallOp>(op).getKind();
  Location loc = op->getLoc();
  // (A fusion's call: the first fused op's place, the linear's.)
  auto fused = dyn_cast<FusedLoc>(loc);
  if (fused && !fused.getLocations().empty())
    loc = fused.getLocations().front();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    cs << " " << name.getName().getValue();
    loc = name.getChildLoc();
  }
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    cs << " (" << file.getFilename().getValue() << ":" << file.getLine()
       << ":" << file.getColumn() << ")";
  return cs.str();
}

/// The strides of buffer `v` in C, outermost first: its type's, the
/// dynamic ones as its CBuf spells them.
std::vector<std::string> GlueEmitter::stridesOf(Value v) {
  SmallVector<int64_t> strides;
  int64_t offset;
  (void)getStridesAndOffset(cast<MemRefType>(v.getType()), strides, offset);
  const CBuf &b = bufs[v];
  std::vector<std::string> out;
  for (size_t d = 0; d < strides.size(); ++d)
    out.push_back(ShapedType::isDynamic(strides[d]) ? b.strides.at(d)
                                                   : std::to_string(strides[d]));
  return out;
}

/// `v` as the kernel's halide_buffer_t argument `index`: extents innermost
/// first, strides spelled out only for a view that is not dense.
std::string GlueEmitter::bufferArg(Value v, int index) {
  auto type = cast<MemRefType>(v.getType());
  const CBuf &b = bufs[v];
  std::string i = std::to_string(index);
  if (type.getElementType().isSignlessInteger(32))
    return "ARCHRT_I32(" + i + ", " + b.ptr + ", " +
           b.extents[type.getRank() - 1] + ", " +
           (type.getRank() == 2 ? b.extents[0] : std::string("0")) + ")";
  std::vector<std::string> strides = stridesOf(v);
  // Dense: each stride the product of the static extents inside it.
  bool dense = true;
  for (int64_t d = type.getRank() - 1, expect = 1; d >= 0; --d) {
    dense &= strides[d] == std::to_string(expect);
    expect *= type.getDimSize(d);
  }
  std::string args;
  if (!type.getElementType().isF32()) {
    // 16 bits (a cache of --kv-type f16 or bf16): every stride spelled out.
    for (int64_t d = type.getRank() - 1; d >= 0; --d)
      args += ", " + b.extents[d] + ", " + (dense ? "0" : strides[d]);
    for (int64_t d = type.getRank(); d < 3; ++d)
      args += ", 0, 0";
    return "ARCHRT_F16(" + i + ", " + b.ptr + ", " +
           (type.getElementType().isBF16() ? "halide_type_bfloat"
                                           : "halide_type_float") +
           args + ")";
  }
  for (int64_t d = type.getRank() - 1; d >= 0; --d)
    args += ", " + b.extents[d] + (dense ? "" : ", " + strides[d]);
  for (int64_t d = type.getRank(); d < 3; ++d)
    args += dense ? ", 0" : ", 0, 0";
  return std::string(dense ? "ARCHRT_F32(" : "ARCHRT_STRIDED(") + i + ", " +
         b.ptr + args + ")";
}

/// The C pointer `ptr` of a buffer of `elem`s: a 16-bit buffer's (a cache
/// of --kv-type, a weight of --weight-type) is offset in 16-bit elements.
static std::string elemPointer(std::string ptr, Type elem) {
  return elem.isF16() || elem.isBF16() ? "((uint16_t *)" + ptr + ")" : ptr;
}

LogicalResult GlueEmitter::emitOp(Operation *op, bool forward,
                                  llvm::raw_ostream &os) {
  auto s = [](int64_t v) { return std::to_string(v); };
  auto extentsOf = [&](ArrayRef<OpFoldResult> sizes) {
    std::vector<std::string> e;
    for (OpFoldResult f : sizes)
      e.push_back(isa<Attribute>(f)
                      ? s(cast<IntegerAttr>(cast<Attribute>(f)).getInt())
                      : ints[cast<Value>(f)]);
    return e;
  };
  auto staticExtents = [&](MemRefType t) {
    std::vector<std::string> e;
    for (int64_t d : t.getShape())
      e.push_back(s(d));
    return e;
  };
  if (auto c = dyn_cast<arith::ConstantIndexOp>(op)) {
    ints[c] = s(c.value());
    return success();
  }
  if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
    const char *sign = isa<arith::AddIOp>(op)   ? " + "
                       : isa<arith::SubIOp>(op) ? " - "
                                                : " * ";
    ints[op->getResult(0)] = "(" + ints[op->getOperand(0)] + sign +
                             ints[op->getOperand(1)] + ")";
    return success();
  }
  if (isa<arith::RemUIOp>(op)) {
    ints[op->getResult(0)] = "(" + ints[op->getOperand(0)] + " % " +
                             ints[op->getOperand(1)] + ")";
    return success();
  }
  if (isa<arith::MinUIOp>(op)) {
    const std::string &x = ints[op->getOperand(0)], &y = ints[op->getOperand(1)];
    ints[op->getResult(0)] = "(" + x + " < " + y + " ? " + x + " : " + y + ")";
    return success();
  }
  if (auto d = dyn_cast<memref::DimOp>(op)) {
    std::optional<int64_t> i = d.getConstantIndex();
    if (!i || !bufs.count(d.getSource()))
      return d.emitOpError() << "has no C form (a constant index of a buffer "
                                "is needed)";
    ints[d] = bufs[d.getSource()].extents[*i];
    return success();
  }
  if (auto w = dyn_cast<archk::WeightOp>(op)) {
    auto it = paramIndex.find(w.getName().str());
    if (it == paramIndex.end())
      return w.emitOpError() << "reads a weight the module does not declare";
    bufs[w] = {elemPointer("P[" + s(it->second) + "]",
                           w.getType().getElementType()),
               staticExtents(w.getType())};
    return success();
  }
  if (auto c = dyn_cast<archk::CacheOp>(op)) {
    auto it = cacheIndex.find(c.getName().str());
    if (it == cacheIndex.end())
      return c.emitOpError() << "reads a cache the module does not declare";
    CBuf b{elemPointer("C[" + s(it->second) + "]",
                       c.getType().getElementType()),
           staticExtents(c.getType()),
           {}};
    if (c.getType().getRank() == 3 && !c.getType().getLayout().isIdentity()) {
      // Head-major: a head's rows are the sequence's positions (a state
      // cache, dense, has the static strides).
      int64_t d = c.getType().getDimSize(2);
      // (arch-lower-to-kernels keeps max_seq_len x D within int32.)
      b.strides = {"(c->capacity * " + s(d) + ")", s(d), "1"};
    }
    bufs[c] = b;
    return success();
  }
  if (auto a = dyn_cast<memref::AllocOp>(op)) {
    // Where archk-plan-buffers put it: a slot of token rows, or scratch.
    CBuf b{"", extentsOf(a.getMixedSizes())};
    if (auto slot = a->getAttrOfType<IntegerAttr>("archk.slot"))
      b.ptr = "S[" + s(slot.getInt()) + "]";
    else if (auto off = a->getAttrOfType<IntegerAttr>("archk.offset"))
      b.ptr = std::string("(") + (forward ? "c->scratch" : "W") + " + " +
              s(off.getInt()) + ")";
    else
      return a.emitOpError() << "has no planned place (run "
                                "archk-plan-buffers)";
    b.ptr = elemPointer(b.ptr, a.getType().getElementType());
    bufs[a] = b;
    return success();
  }
  if (auto v = dyn_cast<memref::SubViewOp>(op)) {
    // The window's first element: the offsets times the source's strides
    // (unit steps, the source's rank).
    if (v.getType().getRank() != v.getSourceType().getRank())
      return v.emitOpError() << "has no C form (a rank-reducing view)";
    SmallVector<int64_t> strides;
    int64_t offset;
    (void)getStridesAndOffset(v.getSourceType(), strides, offset);
    std::vector<std::string> spelled = stridesOf(v.getSource());
    CBuf src = bufs[v.getSource()];
    std::string at;
    for (auto [i, o] : llvm::enumerate(v.getMixedOffsets())) {
      std::optional<int64_t> c = getConstantIntValue(o);
      if (c == std::optional<int64_t>(0))
        continue;
      std::string term;
      if (ShapedType::isDynamic(strides[i]))
        term = "(size_t)" + (c ? s(*c) : ints[cast<Value>(o)]) +
               " * (size_t)" + spelled[i];
      else if (c)
        term = s(*c * strides[i]);
      else
        term = "(size_t)" + ints[cast<Value>(o)] +
               (strides[i] == 1 ? "" : " * " + s(strides[i]));
      at += (at.empty() ? "" : " + ") + term;
    }
    bufs[v] = {at.empty() ? src.ptr : "(" + src.ptr + " + " + at + ")",
               extentsOf(v.getMixedSizes()), spelled};
    return success();
  }
  if (auto t = dyn_cast<memref::TransposeOp>(op)) {
    // The same memory, its dimensions permuted.
    CBuf src = bufs[t.getIn()];
    std::vector<std::string> spelled = stridesOf(t.getIn());
    CBuf out{src.ptr, {}, {}};
    for (unsigned d = 0; d < t.getPermutation().getNumResults(); ++d) {
      unsigned from = t.getPermutation().getDimPosition(d);
      out.extents.push_back(src.extents[from]);
      out.strides.push_back(spelled[from]);
    }
    bufs[t] = out;
    return success();
  }
  if (auto e = dyn_cast<memref::ExpandShapeOp>(op)) {
    Builder b(e.getContext());
    bufs[e] = {bufs[e.getSrc()].ptr,
               extentsOf(getMixedValues(e.getStaticOutputShape(),
                                        e.getOutputShape(), b))};
    return success();
  }
  if (auto c = dyn_cast<memref::CollapseShapeOp>(op)) {
    // Dense groups of dimensions: extents multiplied.
    const CBuf &src = bufs[c.getSrc()];
    std::vector<std::string> extents;
    for (auto [i, group] : llvm::enumerate(c.getReassociationIndices())) {
      if (!c.getResultType().isDynamicDim(i)) {
        extents.push_back(std::to_string(c.getResultType().getDimSize(i)));
        continue;
      }
      std::string e;
      for (int64_t d : group)
        e += (e.empty() ? "" : " * ") + src.extents[d];
      extents.push_back(group.size() > 1 ? "(" + e + ")" : e);
    }
    bufs[c] = {src.ptr, extents};
    return success();
  }
  if (auto l = dyn_cast<memref::LoadOp>(op)) {
    // An element of an i32 table (arch.moe's offsets), read once here.
    if (l.getIndices().size() != 1 || !l.getType().isSignlessInteger(32))
      return l.emitOpError() << "has no C form (one index into i32 only)";
    std::string v = local();
    os << indent << "const int32_t " << v << " = ((const int32_t *)"
       << bufs[l.getMemRef()].ptr << ")[" << ints[l.getIndices()[0]]
       << "];\n";
    ints[l] = v;
    return success();
  }
  if (isa<arith::IndexCastOp>(op)) {
    ints[op->getResult(0)] = ints[op->getOperand(0)];
    return success();
  }
  if (auto c = dyn_cast<arith::CmpIOp>(op)) {
    if (c.getPredicate() != arith::CmpIPredicate::sgt)
      return c.emitOpError() << "has no C form (sgt only)";
    ints[c] = "(" + ints[c.getLhs()] + " > " + ints[c.getRhs()] + ")";
    return success();
  }
  if (auto f = dyn_cast<scf::ForOp>(op)) {
    std::string v = local();
    ints[f.getInductionVar()] = v;
    return emitNested("for (int64_t " + v + " = " + ints[f.getLowerBound()] +
                          "; " + v + " < " + ints[f.getUpperBound()] + "; " +
                          v + " += " + ints[f.getStep()] + ")",
                      *f.getBody(), forward, os);
  }
  if (auto i = dyn_cast<scf::IfOp>(op)) {
    if (!i.getElseRegion().empty() || i.getNumResults())
      return i.emitOpError() << "has no C form (an if without else only)";
    return emitNested("if (" + ints[i.getCondition()] + ")", *i.thenBlock(),
                      forward, os);
  }
  if (isa<scf::YieldOp>(op))
    return success();
  if (auto d = dyn_cast<archk::DispatchOp>(op)) {
    auto experts = cast<MemRefType>(d.getExperts().getType());
    const CBuf &e = bufs[d.getExperts()];
    os << indent << "archrt_gen_moe_dispatch((const int32_t *)" << e.ptr
       << ", " << e.extents[0] << ", " << experts.getDimSize(1) << ", "
       << d.getNExperts() << ", (int32_t *)" << bufs[d.getOffsets()].ptr
       << ", (int32_t *)" << bufs[d.getRows()].ptr << ", (int32_t *)"
       << bufs[d.getSlots()].ptr << ");\n";
    return success();
  }
  if (auto c = dyn_cast<memref::CastOp>(op)) {
    CBuf src = bufs[c.getSource()]; // a copy: inserting may move the map
    bufs[c] = src;
    return success();
  }
  if (auto a = dyn_cast<archk::AcquireOp>(op)) {
    os << "  archrt_gen_acquire(" << bufs[a.getBuffer()].ptr << ", "
       << a.getBuffer().getType().getNumElements() << ");\n";
    return success();
  }
  if (auto r = dyn_cast<archk::ReleaseOp>(op)) {
    os << "  archrt_gen_release(" << bufs[r.getBuffer()].ptr << ", "
       << r.getBuffer().getType().getNumElements() << ");\n";
    return success();
  }
  if (auto call = dyn_cast<archk::CallOp>(op)) {
    KernelSpec spec = call.getSpec();
    if (forward) {
      if (auto *e = spec.get<EmbedKernel>())
        dModel = e->dModel;
      // (The widest head: a differential layer's two maps score half
      // heads over full-width values.)
      if (auto *a = spec.get<AttentionKernel>())
        nHeads = a->heads, nKVHeads = a->kvHeads,
        headDim = std::max(a->headDim, a->vHeadDim), ++nLayers;
      // (Or a linear's rope epilogue: arch-fuse-rope.)
      if (const RopeKernel *r = spec.rotation())
        (r->style == RopeStyle::interleaved ? ropeInterleaved
                                            : ropeHalfSplit) = true;
      if (auto *g = spec.get<ElementwiseKernel>())
        if (g->op == ElementwiseKernel::Glu ||
            g->op == ElementwiseKernel::Activate)
          dFF = g->width;
      // (A gated FFN's gating fused into its up projection: arch-fuse-glu.)
      if (auto *l = spec.get<LinearKernel>(); l && l->glu)
        dFF = l->N;
    }
    bool seen = false;
    for (const KernelSpec &k : out.kernels)
      seen |= k == spec;
    if (!seen)
      out.kernels.push_back(spec);
    std::string args;
    int index = 0;
    for (Value v : call.getArgs()) {
      auto t = dyn_cast<MemRefType>(v.getType());
      if (t ? !bufs.count(v) || bufs[v].extents.size() != size_t(t.getRank())
            : !ints.count(v))
        return call.emitOpError() << "reads a value with no C form";
      args += args.empty() ? "" : ", ";
      args += isa<MemRefType>(v.getType()) ? bufferArg(v, index++) : ints[v];
    }
    std::string what = label(op);
    os << indent.substr(2) << "  " << cComment(what) << "\n" << indent;
    // A forward call is a profile site (ARCHRT_CALL), in text order, with
    // its work.
    if (forward) {
      Site site{spec.name(), what};
      std::string rows = "0", bytes = "0";
      work(call, spec, site, rows, bytes);
      os << "ARCHRT_CALL(" << sites.size() << ", " << rows << ", " << bytes
         << ", ";
      sites.push_back(site);
    } else {
      os << "ARCHRT_CHECK(";
    }
    os << spec.name() << "(" << args << "));\n";
    return success();
  }
  if (isa<func::ReturnOp>(op))
    return success();
  return op->emitOpError() << "has no C form (not an op of the planned "
                              "kernel-call level)";
}

void GlueEmitter::work(archk::CallOp call, const KernelSpec &spec,
                       Site &site, std::string &rows, std::string &bytes) {
  std::vector<KernelArg> kargs = spec.args();
  ValueRange a = call.getArgs();
  auto arg = [&](llvm::StringRef name) -> Value {
    for (size_t i = 0; i < kargs.size() && i < a.size(); ++i)
      if (name == kargs[i].name)
        return a[i];
    return {};
  };
  // A matmul (a linear; a head linear: absorbed MLA's): x's outermost
  // extent (tokens, an expert's rows, a context), 2 K N FLOPs a row (per
  // head; a glu epilogue's weight has two halves of N), the bytes of its
  // `weight` and `bias` (not a residual: an activation; a weight's shape
  // is static, a view of one expert's too).
  int64_t flops = 0;
  if (auto *l = spec.get<LinearKernel>())
    flops = 2 * l->K * (l->glu ? 2 * l->N : l->N);
  if (auto *h = spec.get<HeadLinearKernel>())
    flops = 2 * h->heads * h->K * h->N;
  if (flops) {
    int64_t weightBytes = 0;
    for (llvm::StringRef name : {"weight", "bias"}) {
      Value v = arg(name);
      auto t = v ? dyn_cast<MemRefType>(v.getType()) : MemRefType();
      if (t && t.hasStaticShape())
        weightBytes += t.getNumElements() * t.getElementTypeBitWidth() / 8;
    }
    site.flopsPerRow = flops;
    rows = bufs[arg("x")].extents.front();
    bytes = std::to_string(weightBytes);
    return;
  }
  // Causal attention, full or in a window (a sparse pattern's keys are
  // not counted): the query-key pairs its rows score, 2 (head_dim +
  // v_head_dim) FLOPs each per query head, and the cache rows they see,
  // each once (keys and values: one row where the values are a view of
  // the keys' cache, absorbed MLA's latents).
  auto *at = spec.get<AttentionKernel>();
  if (!at || at->dilation != 1 || !at->globals.empty() || at->randomBlocks)
    return;
  Value q = arg("q"), k = arg("k"), v = arg("v"), pos = arg("pos");
  if (!q || !k || !v || !pos || !ints.count(pos))
    return;
  int64_t vhd = at->vHeadDim ? at->vHeadDim : at->headDim;
  int64_t elem = at->kv == StoreType::f32 ? 4 : 2;
  int64_t rowBytes = at->kvHeads * at->headDim * elem;
  if (bufs[v].ptr != bufs[k].ptr)
    rowBytes += at->kvHeads * vhd * elem;
  std::string call3 = "(" + ints[pos] + ", " + bufs[q].extents.front() +
                      ", " + std::to_string(at->window) + ")";
  site.flopsPerRow = 2 * at->heads * (at->headDim + vhd);
  rows = "archrt_gen_pairs" + call3;
  bytes = "archrt_gen_keys" + call3 + " * " + std::to_string(rowBytes);
}

LogicalResult GlueEmitter::emitBlock(Block &block, bool forward,
                                     llvm::raw_ostream &os) {
  for (Operation &op : block)
    if (failed(emitOp(&op, forward, os)))
      return failure();
  return success();
}

LogicalResult GlueEmitter::emitNested(const std::string &head, Block &block,
                                      bool forward, llvm::raw_ostream &os) {
  os << indent << head << " {\n";
  std::string outer = indent;
  indent += "  ";
  LogicalResult r = emitBlock(block, forward, os);
  indent = outer;
  os << indent << "}\n";
  return r;
}

LogicalResult GlueEmitter::emitFunction(func::FuncOp fn, bool forward,
                                        std::string &c) {
  std::string body;
  llvm::raw_string_ostream os(body);
  if (failed(emitBlock(fn.getBody().front(), forward, os)))
    return failure();
  // @prepare_params is straight-line: a mixture's per-expert copies roll
  // into loops.
  c += forward ? body : rollRepeats(body);
  auto scratch = fn->getAttrOfType<IntegerAttr>("archk.scratch_floats");
  auto widths = fn->getAttrOfType<DenseI64ArrayAttr>("archk.slot_widths");
  if (!scratch || !widths)
    return fn.emitError() << "has no buffer plan (run archk-plan-buffers)";
  if (forward) {
    scratchFloats = scratch.getInt();
    slotWidth.assign(widths.asArrayRef().begin(), widths.asArrayRef().end());
    slotContext.assign(slotWidth.size(), 0);
    if (auto ctx = fn->getAttrOfType<DenseI64ArrayAttr>("archk.context_slots"))
      for (int64_t i : ctx.asArrayRef())
        if (i >= 0 && size_t(i) < slotContext.size())
          slotContext[size_t(i)] = 1;
  } else {
    prepareTemp = scratch.getInt();
    if (!widths.empty())
      return fn.emitError() << "@prepare_params has no token rows to put in "
                               "activation slots";
  }
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
    // Read only to prepare other weights: the runtime drops its pages then
    // (and converts it only when acquired, where it is).
    if (!forwardReads.contains(p.getSymName())) {
      ds << ", .prepare_only = 1";
      if (acquired.contains(p.getSymName()))
        ds << ", .deferrable = 1";
    }
    ds << "},\n";
  }
  ds << "};\n\nstatic const archrt_gen_param prepared[" << prepared.size()
     << "] = {\n";
  for (WeightOp p : prepared) {
    ds << "    {" << cStringLiteral(p.getSymName().str()) << ", ";
    list(p.getTensorType().getShape());
    if (!p.getTensorType().getElementType().isF32())
      ds << ", .elem_bytes = 2";
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
  ds << "};\n\nstatic const uint8_t slot_context[" << slotContext.size()
     << "] = {";
  for (size_t i = 0; i < slotContext.size(); ++i)
    ds << (i ? ", " : "") << int(slotContext[i]);
  ds << "};\n\nstatic const archrt_gen_site sites[" << sites.size()
     << "] = {\n";
  for (const Site &site : sites)
    ds << "    {" << cStringLiteral(site.kernel) << ", "
       << cStringLiteral(site.label) << ", " << site.flopsPerRow << "},\n";
  ds << "};\n\nconst archrt_gen_model archrt_gen_model_desc = {\n"
     << "    .name = " << cStringLiteral(out.name) << ",\n"
     << "    .spec_toml = " << cStringLiteral(opts.specText) << ",\n"
     << "    .vocab_size = " << vocab << ", .d_model = " << dModel
     << ", .n_layers = " << layersOf(module, nLayers) << ",\n"
     << "    .n_heads = " << nHeads << ", .n_kv_heads = " << nKVHeads
     << ", .head_dim = " << headDim << ", .d_ff = " << dFF << ",\n"
     << "    .max_seq_len = " << maxSeq << ", .max_chunk = "
     << maxChunkOf(module) << ",\n"
     << "    .rope_styles = "
     << (ropeHalfSplit && ropeInterleaved
             ? "ARCHRT_GEN_ROPE_HALF_SPLIT | ARCHRT_GEN_ROPE_INTERLEAVED"
         : ropeHalfSplit   ? "ARCHRT_GEN_ROPE_HALF_SPLIT"
         : ropeInterleaved ? "ARCHRT_GEN_ROPE_INTERLEAVED"
                           : "0")
     << ",\n"
     << "    .n_params = " << params.size() << ", .params = params,\n"
     << "    .n_prepared = " << prepared.size()
     << ", .prepared = prepared,\n"
     << "    .checkpoint_prefix = "
     << (prefix.empty() ? std::string("0") : cStringLiteral(prefix)) << ",\n"
     << "    .n_slots = " << slotWidth.size()
     << ", .slot_width = slot_width, .slot_context = slot_context,\n"
     << "    .scratch_floats = " << scratchFloats << ",\n"
     << "    .n_caches = " << caches.size() << ", .caches = caches,\n"
     << "    .n_sites = " << sites.size() << ", .sites = sites,\n};\n";
  return ds.str();
}

LogicalResult GlueEmitter::run() {
  auto fn = module.lookupSymbol<func::FuncOp>("forward");
  FunctionType type = fn ? fn.getFunctionType() : FunctionType();
  auto logits = type && type.getNumInputs() == 3 && !type.getNumResults()
                    ? dyn_cast<MemRefType>(type.getInput(2))
                    : MemRefType();
  if (!logits || logits.getRank() != 2 || fn.isExternal())
    return module.emitError() << "module has no lowered func.func @forward "
                                 "(tokens, pos, logits) (run "
                                 "arch-lower-to-kernels)";
  auto maxSeqAttr = module->getAttrOfType<IntegerAttr>("arch.max_seq_len");
  if (!maxSeqAttr)
    return module.emitError() << "module needs an arch.max_seq_len attribute";
  maxSeq = maxSeqAttr.getInt();
  vocab = logits.getDimSize(1);
  out.name = modelName(module);
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
    cacheIndex[c.getSymName().str()] = int(caches.size());
    caches.push_back(c);
  }
  fn.walk([&](archk::WeightOp w) { forwardReads.insert(w.getName()); });
  if (auto prep = module.lookupSymbol<func::FuncOp>("prepare_params"))
    prep.walk([&](archk::AcquireOp a) {
      if (auto w = a.getBuffer().getDefiningOp<archk::WeightOp>())
        acquired.insert(w.getName());
    });

  Block &entry = fn.getBody().front();
  bufs[entry.getArgument(0)] = {"c->tokens", {"T"}};
  ints[entry.getArgument(1)] = "pos";
  bufs[entry.getArgument(2)] = {"c->logits", {"1", std::to_string(vocab)}};
  std::string body, prepare;
  if (auto prep = module.lookupSymbol<func::FuncOp>("prepare_params"))
    if (failed(emitFunction(prep, false, prepare)))
      return failure();
  if (failed(emitFunction(fn, true, body)))
    return failure();

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
     << "  (void)T, (void)pos, (void)S, (void)C;\n\n"
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
