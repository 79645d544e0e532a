//===- AbsorbMLA.cpp - Multi-head latent attention in the latent space ----===//
//
// Naive MLA up-projects every cached latent to per-head keys and values on
// every call: decode at context P multiplies P x kv_lora_rank x n_heads x
// (qk_nope + v) weights for one token. Folding the key up-projection into
// the query and the value up-projection after the attention (DeepSeek-V2,
// section 2.1.3) leaves attention over the cache rows as they are: one
// key/value head of the latent, shared by every query head.
//
//===----------------------------------------------------------------------===//
#include "arch/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_ABSORBMLAPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// The pieces of one naive MLA, as latentAttention imports it.
struct NaiveMLA {
  AttentionOp attn;
  HeadsConcatOp query, key;
  HeadsSplitOp upSplit; ///< per head [key part, value]
  LinearOp up;          ///< every cached latent times kv_b_proj
  SplitOp cached;       ///< the context's [latent, rotary key]
  WeightOp upWeight;
  int64_t heads, nope, rope, value, latent;
};

/// The naive MLA whose attention is `a`, if `a` is one.
static std::optional<NaiveMLA> match(AttentionOp a, SymbolTable &symbols) {
  NaiveMLA m;
  m.attn = a;
  int64_t H = a.getNHeads();
  if (int64_t(a.getNKvHeads()) != H || a.getRelBias() || a.getRelKey() ||
      a.getAlibi() || a.getWindow() || a.getSoftcap().convertToDouble() != 0)
    return std::nullopt;
  m.key = a.getKey().getDefiningOp<HeadsConcatOp>();
  m.query = a.getQuery().getDefiningOp<HeadsConcatOp>();
  if (!m.key || !m.query || m.key == m.query ||
      m.key.getInputs().size() != 2 ||
      m.query.getInputs().size() != 2 ||
      m.key.getInputHeads() != ArrayRef<int64_t>{H, 1} ||
      m.query.getInputHeads() != ArrayRef<int64_t>{H, H})
    return std::nullopt;
  // Keys [k_nope of head h, the shared rotary key]; values of the same
  // up-projection.
  m.upSplit = m.key.getInputs()[0].getDefiningOp<HeadsSplitOp>();
  if (!m.upSplit || m.upSplit.getNumResults() != 2 ||
      int64_t(m.upSplit.getHeads()) != H ||
      m.upSplit.getResult(0) != m.key.getInputs()[0] ||
      m.upSplit.getResult(1) != a.getValue())
    return std::nullopt;
  m.up = m.upSplit.getInput().getDefiningOp<LinearOp>();
  if (!m.up || m.up.getBias())
    return std::nullopt;
  m.cached = m.up.getInput().getDefiningOp<SplitOp>();
  if (!m.cached || m.cached.getNumResults() != 2 ||
      m.cached.getResult(0) != m.up.getInput() ||
      m.cached.getResult(1) != m.key.getInputs()[1] ||
      !m.cached.getInput().getDefiningOp<CacheAppendOp>())
    return std::nullopt;
  auto param = m.up.getWeight().getDefiningOp<ParamOp>();
  m.upWeight = param ? symbols.lookup<WeightOp>(param.getName()) : WeightOp();
  // The pass takes the checkpoint's rows of kv_b_proj as two weights: a
  // weight already assembled from rows or transposed is left naive.
  if (!m.upWeight || m.upWeight.getPrepared() || m.upWeight.getRows() ||
      m.upWeight.getTranspose())
    return std::nullopt;
  // The two weights it becomes must have names of their own.
  for (const char *suffix : {".k_up", ".v_up"})
    if (symbols.lookup((m.upWeight.getSymName() + suffix).str()))
      return std::nullopt;
  m.heads = H;
  m.nope = widthOf(m.upSplit.getResult(0)) / H;
  m.value = widthOf(m.upSplit.getResult(1)) / H;
  m.rope = widthOf(m.cached.getResult(1));
  m.latent = widthOf(m.cached.getResult(0));
  // The query's heads split alike: [q_nope, q_rope].
  if (widthOf(m.query.getInputs()[0]) != H * m.nope ||
      widthOf(m.query.getInputs()[1]) != H * m.rope ||
      int64_t(a.getHeadDim()) != m.nope + m.rope)
    return std::nullopt;
  return m;
}

/// Rows [groups, stride, offset, length] of kv_b_proj's checkpoint tensor
/// as a weight of its own, declared after kv_b_proj's.
static WeightOp rowsOf(WeightOp w, StringRef suffix, int64_t rows,
                       ArrayRef<int64_t> pick) {
  OpBuilder b(w);
  b.setInsertionPointAfter(w);
  RankedTensorType t = w.getTensorType();
  auto type = RankedTensorType::get({rows, t.getDimSize(1)}, t.getElementType());
  StringAttr source = w.getSourceAttr() ? w.getSourceAttr() : w.getSymNameAttr();
  DenseI64ArrayAttr shape = w.getSourceShapeAttr()
                                ? w.getSourceShapeAttr()
                                : b.getDenseI64ArrayAttr(t.getShape());
  return b.create<WeightOp>(w.getLoc(), (w.getSymName() + suffix).str(), type,
                            source, shape, false, b.getDenseI64ArrayAttr(pick),
                            false);
}

static void absorb(NaiveMLA &m, SymbolTable &symbols, bool foldOutput) {
  const int64_t H = m.heads, dn = m.nope, dr = m.rope, dv = m.value,
                c = m.latent;
  // kv_b_proj holds, per head, dn rows of W_UK then dv rows of W_UV.
  std::string uk = m.upWeight.getSymName().str() + ".k_up";
  std::string uv = m.upWeight.getSymName().str() + ".v_up";
  // (Each declared right after kv_b_proj: W_UK ends up first.)
  symbols.insert(rowsOf(m.upWeight, ".v_up", H * dv, {H, dn + dv, dn, dv}));
  symbols.insert(rowsOf(m.upWeight, ".k_up", H * dn, {H, dn + dv, 0, dn}));
  AttentionOp a = m.attn;
  OpBuilder b(a);
  Location loc = a.getLoc();
  Value q = a.getQuery();
  auto type = [&](int64_t width) {
    return RankedTensorType::get(
        {cast<RankedTensorType>(q.getType()).getDimSize(0), width},
        b.getF32Type());
  };
  auto param = [&](StringRef name) {
    auto w = symbols.lookup<WeightOp>(name);
    return b.create<ParamOp>(loc, w.getTensorType(),
                             FlatSymbolRefAttr::get(w.getSymNameAttr()));
  };
  // Each head's q_nope through its W_UK: a query in the latent space.
  Value latentQuery = b.create<HeadLinearOp>(
      loc, type(H * c), m.query.getInputs()[0], param(uk), H, true);
  Value query = b.create<HeadsConcatOp>(
      loc, type(H * (c + dr)), ValueRange{latentQuery, m.query.getInputs()[1]},
      H, b.getDenseI64ArrayAttr({H, H}));
  // One key/value head: the cached rows [latent, rotary key] are the keys,
  // their latent part the values.
  Value context = m.cached.getInput();
  Value latentOut = b.create<AttentionOp>(
      loc, type(H * c), query, context, m.cached.getResult(0), a.getPos(),
      Value(), Value(), Value(), H, 1, c + dr, a.getScaleAttr().getValue(),
      a.getSoftcapAttr().getValue(), false, 0, a.getT5MaxDistance(), 0, c, 1,
      nullptr, 0, 0, 0);
  // Each head's latent output through its W_UV; or, folded, through
  // o_proj x W_UV per head ([d, H x c], a weight-only product hoisted to
  // load time): head h of o_proj's rows [d, v] times W_UV_h as [v, c].
  auto oproj = a.getResult().hasOneUse()
                   ? dyn_cast<LinearOp>(*a.getResult().getUsers().begin())
                   : LinearOp();
  auto wo = oproj ? cast<RankedTensorType>(oproj.getWeight().getType())
                  : RankedTensorType();
  if (foldOutput && oproj && oproj.getInput() == a.getResult() &&
      wo.getRank() == 2 && !oproj.getGlu()) {
    auto folded = RankedTensorType::get({wo.getDimSize(0), H * c},
                                        b.getF32Type());
    b.setInsertionPoint(oproj); // after o_proj's weight
    Value w = b.create<HeadLinearOp>(loc, folded, oproj.getWeight(),
                                     param(uv), H, true);
    Value y = b.create<LinearOp>(oproj.getLoc(), oproj.getType(), latentOut,
                                 w, oproj.getBias(), oproj.getResidual(),
                                 ActivationAttr());
    oproj.getResult().replaceAllUsesWith(y);
    oproj.erase();
  } else {
    Value out = b.create<HeadLinearOp>(loc, type(H * dv), latentOut,
                                       param(uv), H, false);
    a.getResult().replaceAllUsesWith(out);
  }
  // The naive form, now unused, goes.
  SmallVector<Operation *> dead{a, m.key, m.query, m.upSplit, m.up,
                                m.up.getWeight().getDefiningOp()};
  for (Operation *op : dead)
    if (op->use_empty())
      op->erase();
}

struct AbsorbMLAPass : impl::AbsorbMLAPassBase<AbsorbMLAPass> {
  using AbsorbMLAPassBase::AbsorbMLAPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<AttentionOp> attns;
    module.walk([&](AttentionOp a) { attns.push_back(a); });
    // Matched one at a time: an absorption erases only its own attention,
    // and takes the names the next match checks.
    SmallVector<WeightOp> absorbed;
    for (AttentionOp a : attns)
      if (std::optional<NaiveMLA> m = match(a, symbols)) {
        absorb(*m, symbols, foldOutput);
        absorbed.push_back(m->upWeight);
      }
    if (absorbed.empty())
      return markAllAnalysesPreserved();
    // kv_b_proj weights nothing reads any more are no longer parameters
    // (one walk for all: a use query per layer would scan the module each).
    llvm::StringSet<> read;
    module.walk([&](ParamOp p) { read.insert(p.getName()); });
    for (WeightOp w : absorbed)
      if (!read.contains(w.getSymName()))
        symbols.erase(w);
  }
};

} // namespace
} // namespace arch
