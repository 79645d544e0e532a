//===- ImportSpec.cpp - ArchSpec -> arch IR -------------------------------===//
//
// One function, @forward, with every layer unrolled so that passes see (and
// may rewrite) each layer on its own. Parameters carry their checkpoint
// names; module attributes carry what the runtime needs to size its state.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/ImportSpec.h"
#include "arch/Dialect/ArchDialect.h"
#include "compiler/spec/ArchSpec.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace arch {
namespace {

class Importer {
public:
  Importer(MLIRContext &ctx, const ArchSpec &spec)
      : ctx(ctx), spec(spec), b(&ctx) {}

  OwningOpRef<ModuleOp> run();

private:
  Location loc(const std::string &key) {
    SourceLoc l = spec.locOf(key);
    return FileLineColLoc::get(&ctx, l.file, l.line, l.col);
  }
  Location layerLoc(int64_t layer, const std::string &key) {
    return NameLoc::get(
        b.getStringAttr("layers." + std::to_string(layer)), loc(key));
  }
  RankedTensorType act(int64_t width) {
    return RankedTensorType::get({ShapedType::kDynamic, width}, b.getF32Type());
  }
  Value param(Location l, const std::string &name,
              llvm::ArrayRef<int64_t> shape) {
    return b.create<ParamOp>(l, RankedTensorType::get(shape, b.getF32Type()),
                             SymbolRefAttr::get(&ctx, name));
  }
  Value layer(int64_t i, Value x, Value pos);

  MLIRContext &ctx;
  const ArchSpec &spec;
  OpBuilder b;
};

Value Importer::layer(int64_t i, Value x, Value pos) {
  const int64_t d = spec.model.dModel, ff = spec.ffn.dFF;
  const AttentionSpec &a = spec.attention;
  const std::string p = "model.layers." + std::to_string(i) + ".";
  auto eps = [&] { return llvm::APFloat(float(spec.norm.eps)); };

  // Attention sublayer (pre-norm).
  Location nl = layerLoc(i, "norm");
  Value h = b.create<NormOp>(nl, act(d), x,
                             param(nl, p + "input_layernorm.weight", {d}),
                             NormKind::rms, eps());
  Location al = layerLoc(i, "attention");
  Value q = b.create<LinearOp>(
      al, act(spec.qDim()), h,
      param(al, p + "self_attn.q_proj.weight", {spec.qDim(), d}), Value());
  Value k = b.create<LinearOp>(
      al, act(spec.kvDim()), h,
      param(al, p + "self_attn.k_proj.weight", {spec.kvDim(), d}), Value());
  Value v = b.create<LinearOp>(
      al, act(spec.kvDim()), h,
      param(al, p + "self_attn.v_proj.weight", {spec.kvDim(), d}), Value());
  if (a.position.kind == spec::PositionKind::Rope) {
    Location rl = layerLoc(i, "attention.position");
    RopeStyle style = a.position.style == spec::RopeStyle::HalfSplit
                          ? RopeStyle::half_split
                          : RopeStyle::interleaved;
    auto rope = [&](Value t, int64_t heads) -> Value {
      return b.create<RopeOp>(rl, t.getType(), t, pos, style, heads,
                              a.headDim, a.position.rotaryDim,
                              llvm::APFloat(a.position.theta));
    };
    q = rope(q, a.nHeads);
    k = rope(k, a.nKVHeads);
  }
  Value attn = b.create<AttentionOp>(al, q.getType(), q, k, v, pos, i,
                                     a.nHeads, a.nKVHeads, a.headDim,
                                     llvm::APFloat(a.scale));
  Value o = b.create<LinearOp>(
      al, act(d), attn,
      param(al, p + "self_attn.o_proj.weight", {d, spec.qDim()}), Value());
  x = b.create<AddOp>(al, x, o);

  // FFN sublayer (pre-norm, gated).
  h = b.create<NormOp>(nl, act(d), x,
                       param(nl, p + "post_attention_layernorm.weight", {d}),
                       NormKind::rms, eps());
  Location fl = layerLoc(i, "ffn");
  Value g = b.create<LinearOp>(
      fl, act(ff), h, param(fl, p + "mlp.gate_proj.weight", {ff, d}), Value());
  Value u = b.create<LinearOp>(
      fl, act(ff), h, param(fl, p + "mlp.up_proj.weight", {ff, d}), Value());
  Value m = b.create<GluOp>(fl, g, u, Activation::silu);
  Value down = b.create<LinearOp>(
      fl, act(d), m, param(fl, p + "mlp.down_proj.weight", {d, ff}), Value());
  return b.create<AddOp>(fl, x, down);
}

OwningOpRef<ModuleOp> Importer::run() {
  ctx.loadDialect<ArchDialect, func::FuncDialect>();
  const int64_t d = spec.model.dModel, vocab = spec.model.vocabSize;
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc("model"));
  module->setSymNameAttr(b.getStringAttr(spec.model.name));
  module->getOperation()->setAttr("arch.max_seq_len",
                                  b.getI64IntegerAttr(spec.model.maxSeqLen));
  module->getOperation()->setAttr("arch.n_layers",
                                  b.getI64IntegerAttr(spec.model.nLayers));

  b.setInsertionPointToEnd(module->getBody());
  auto tokensTy =
      RankedTensorType::get({ShapedType::kDynamic}, b.getIntegerType(32));
  auto logitsTy = RankedTensorType::get({1, vocab}, b.getF32Type());
  auto fnTy = b.getFunctionType({tokensTy, b.getIndexType()}, {logitsTy});
  auto fn = b.create<func::FuncOp>(loc("model"), "forward", fnTy);
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  Value tokens = entry->getArgument(0), pos = entry->getArgument(1);

  Location ml = loc("model.vocab_size");
  Value table = param(ml, "model.embed_tokens.weight", {vocab, d});
  Value x = b.create<EmbedOp>(ml, act(d), tokens, table,
                              llvm::APFloat(1.0f));
  for (int64_t i = 0; i < spec.model.nLayers; ++i)
    x = layer(i, x, pos);

  Location nl = loc("norm");
  Value last = b.create<LastTokenOp>(
      nl, RankedTensorType::get({1, d}, b.getF32Type()), x);
  Value h = b.create<NormOp>(nl, last.getType(), last,
                             param(nl, "model.norm.weight", {d}),
                             NormKind::rms,
                             llvm::APFloat(float(spec.norm.eps)));
  Location cl = loc("model.tie_embeddings");
  Value cls = spec.model.tieEmbeddings
                  ? table
                  : param(cl, "lm_head.weight", {vocab, d});
  Value logits = b.create<LinearOp>(cl, logitsTy, h, cls, Value());
  b.create<func::ReturnOp>(cl, logits);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importSpec(MLIRContext &ctx, const ArchSpec &spec) {
  return Importer(ctx, spec).run();
}

} // namespace arch
