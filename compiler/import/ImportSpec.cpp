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
#include "compiler/spec/Checkpoint.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

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
  /// A layer's global positions as the attention attribute (none if
  /// empty; the spec parser empties them where the layer has no window).
  DenseI64ArrayAttr globalsOf(const AttentionSpec &a) {
    return a.globalTokens.empty() ? nullptr
                                  : b.getDenseI64ArrayAttr(a.globalTokens);
  }
  /// Reads weight `name`, declaring it at module level on first use with
  /// where its checkpoint keeps it unless that is the tensor of that name.
  Value param(Location l, const std::string &name,
              llvm::ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, b.getF32Type());
    if (!weights.count(name)) {
      OpBuilder wb(forward);
      auto w = wb.create<WeightOp>(l, name, type);
      weights.insert(name);
      auto src = checkpointSource(spec, name, {shape.begin(), shape.end()});
      bool same = src && src->tensor == name && !src->transpose &&
                  src->groups == 0;
      if (src && !same) {
        // The spec parser rejected schemes that cannot name a parameter.
        assert(!src->tensor.empty() && "naming scheme checked by the parser");
        w.setSourceAttr(b.getStringAttr(src->tensor));
        w.setSourceShapeAttr(b.getDenseI64ArrayAttr(src->shape));
        if (src->transpose)
          w.setTransposeAttr(b.getUnitAttr());
        if (src->groups > 0)
          w.setRowsAttr(b.getDenseI64ArrayAttr(
              {src->groups, src->stride, src->offset, src->length}));
      }
    }
    return b.create<ParamOp>(l, type, FlatSymbolRefAttr::get(&ctx, name));
  }
  Value norm(Location l, Value x, const std::string &prefix,
             int64_t groups = 1, bool separate = false);
  Value linear(Location l, Value x, const std::string &prefix, int64_t out,
               bool bias);
  Value rope(Location l, Value x, Value pos, const AttentionSpec &a,
             int64_t heads, int64_t headDim);
  Value attention(int64_t i, Value h, Value pos);
  Value append(Location l, Value rows, Value pos, const std::string &name,
               const AttentionSpec &a, int64_t heads, int64_t headDim);
  Value latentAttention(int64_t i, Value h, Value pos);
  Value differentialAttention(int64_t i, Value h, Value pos);
  Value linearAttention(int64_t i, Value q, Value k, Value v);
  Value ffn(int64_t i, Value h);
  Value denseFFN(Location l, Value h, const std::string &prefix,
                 const FFNSpec &f, int64_t dFF);
  Value moe(int64_t i, Value h);
  Value layer(int64_t i, Value x, Value pos);

  MLIRContext &ctx;
  const ArchSpec &spec;
  OpBuilder b;
  func::FuncOp forward;          ///< weights are declared before it
  llvm::StringSet<> weights;     ///< names declared so far
};

Value Importer::norm(Location l, Value x, const std::string &prefix,
                     int64_t groups, bool separate) {
  int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(1) / groups;
  // A weight per group is [groups, d]; a shared one [d].
  llvm::SmallVector<int64_t, 2> shape{d};
  if (separate)
    shape.insert(shape.begin(), groups);
  Value bias = spec.norm.bias ? param(l, prefix + ".bias", shape) : Value();
  NormKind kind = spec.norm.kind == spec::NormKind::RMSNorm ? NormKind::rms
                                                             : NormKind::layer;
  return b.create<NormOp>(l, x.getType(), x, param(l, prefix + ".weight", shape),
                          bias, kind, llvm::APFloat(float(spec.norm.eps)),
                          llvm::APFloat(float(spec.norm.weightOffset)), groups);
}

Value Importer::linear(Location l, Value x, const std::string &prefix,
                       int64_t out, bool bias) {
  int64_t in = cast<RankedTensorType>(x.getType()).getDimSize(1);
  Value b0 = bias ? param(l, prefix + ".bias", {out}) : Value();
  auto ty = RankedTensorType::get(
      {cast<RankedTensorType>(x.getType()).getDimSize(0), out},
      b.getF32Type());
  return b.create<LinearOp>(l, ty, x, param(l, prefix + ".weight", {out, in}),
                            b0);
}

/// RoPE with the layer's position keys on `heads` heads of `headDim`.
Value Importer::rope(Location l, Value x, Value pos, const AttentionSpec &a,
                     int64_t heads, int64_t headDim) {
  const PositionSpec &ps = a.position;
  RopeStyle style = ps.style == spec::RopeStyle::HalfSplit
                        ? RopeStyle::half_split
                        : RopeStyle::interleaved;
  // LongRoPE: the long factors where the model's context exceeds the
  // original one, else the short (llama.cpp's choice by its n_ctx).
  bool longRoPE = ps.scaling == spec::RopeScaling::LongRoPE;
  DenseF64ArrayAttr factors;
  if (longRoPE)
    factors = b.getDenseF64ArrayAttr(
        spec.model.maxSeqLen > ps.originalMaxSeqLen ? ps.longFactor
                                                    : ps.shortFactor);
  // spec::RopeScaling lists the dialect's cases in the same order.
  return b.create<RopeOp>(
      l, x.getType(), x, pos, style, heads, headDim, ps.rotaryDim,
      llvm::APFloat(ps.theta), static_cast<RopeScaling>(ps.scaling),
      llvm::APFloat(ps.factor), ps.originalMaxSeqLen,
      llvm::APFloat(ps.lowFreqFactor), llvm::APFloat(ps.highFreqFactor),
      llvm::APFloat(ps.betaFast), llvm::APFloat(ps.betaSlow),
      llvm::APFloat(ps.mscale), llvm::APFloat(ps.mscaleAllDim), factors,
      llvm::APFloat(longRoPE ? longRoPEAttention(ps, spec.model.maxSeqLen)
                             : 1.0));
}

/// Multi-head latent attention in its naive form (DeepSeek-V2 section
/// 2.1): the cache keeps, per position, the normalized latent c_KV and the
/// rotary key k_R shared by every head; each call up-projects every cached
/// latent to per-head keys (with k_R appended) and values. arch-absorb-mla
/// rewrites it to attend in the latent space.
Value Importer::latentAttention(int64_t i, Value h, Value pos) {
  const AttentionSpec &a = spec.layers[size_t(i)].attention;
  const MLASpec &m = spec.mla;
  const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
  Location al = layerLoc(i, "attention.mla");
  Location rl = layerLoc(i, "attention.position");
  const int64_t H = a.nHeads, dn = m.qkNopeHeadDim, dr = m.qkRopeHeadDim,
                dv = m.vHeadDim, c = m.kvLoraRank;
  Value q = m.qLoraRank
                ? linear(al,
                         norm(al, linear(al, h, p + "q_a_proj", m.qLoraRank,
                                         false),
                              p + "q_a_layernorm"),
                         p + "q_b_proj", H * (dn + dr), false)
                : linear(al, h, p + "q_proj", H * (dn + dr), false);
  auto rowsOf = [&](Value v) {
    return cast<RankedTensorType>(v.getType()).getDimSize(0);
  };
  auto type = [&](Value like, int64_t width) {
    return RankedTensorType::get({rowsOf(like), width}, b.getF32Type());
  };
  // Each query head: [its part without position, its rotary part].
  auto qs = b.create<HeadsSplitOp>(
      al, TypeRange{type(q, H * dn), type(q, H * dr)}, q, H);
  Value qr = rope(rl, qs.getResult(1), pos, a, H, dr);
  q = b.create<HeadsConcatOp>(al, type(q, H * (dn + dr)),
                              ValueRange{qs.getResult(0), qr}, H,
                              b.getDenseI64ArrayAttr({H, H}));
  // The latent and the shared rotary key, into the cache.
  Value kva = linear(al, h, p + "kv_a_proj_with_mqa", c + dr, false);
  auto ks = b.create<SplitOp>(al, TypeRange{type(kva, c), type(kva, dr)}, kva);
  Value latent = norm(al, ks.getResult(0), p + "kv_a_layernorm");
  Value kr = rope(rl, ks.getResult(1), pos, a, 1, dr);
  Value row = b.create<ConcatOp>(al, type(kva, c + dr),
                                 ValueRange{latent, kr}, 1);
  const std::string cache = p + "latent_cache";
  OpBuilder(forward).create<CacheOp>(
      al, cache, CacheLayout::tokens,
      b.getI64IntegerAttr(spec.model.maxSeqLen),
      RankedTensorType::get({c + dr}, b.getF32Type()));
  Value ctx = b.create<CacheAppendOp>(al, row.getType(), cache, row, pos);
  auto cs = b.create<SplitOp>(al, TypeRange{type(ctx, c), type(ctx, dr)}, ctx);
  // Every cached latent up-projected: per head [key part, value].
  Value kv = linear(al, cs.getResult(0), p + "kv_b_proj", H * (dn + dv), false);
  auto kvs = b.create<HeadsSplitOp>(
      al, TypeRange{type(kv, H * dn), type(kv, H * dv)}, kv, H);
  Value k = b.create<HeadsConcatOp>(al, type(kv, H * (dn + dr)),
                                    ValueRange{kvs.getResult(0), cs.getResult(1)},
                                    H, b.getDenseI64ArrayAttr({H, 1}));
  Value attn = b.create<AttentionOp>(
      al, type(q, H * dv), q, k, kvs.getResult(1), pos, Value(), Value(),
      Value(), H, H, dn + dr, llvm::APFloat(a.scale), llvm::APFloat(0.0),
      false, 0, a.position.maxDistance, 0, dv, 1, nullptr, 0, 0, 0);
  return linear(al, attn, p + "o_proj", spec.model.dModel, false);
}

/// Keys or values to a cache of their own, one row of [heads, headDim]
/// per position; attention reads back the context. A sliding-window
/// layer's caches keep only the last window * dilation positions (a ring,
/// sized for a call's rows by arch-lower-to-kernels).
Value Importer::append(Location l, Value rows, Value pos,
                       const std::string &name, const AttentionSpec &a,
                       int64_t heads, int64_t headDim) {
  // A window reaches back window * dilation positions; global positions
  // stay attended however far back, so their layers keep every position.
  bool ring = a.window > 0 && a.span() < spec.model.maxSeqLen &&
              a.globalTokens.empty() && a.randomBlocks == 0;
  OpBuilder cb(forward);
  cb.create<CacheOp>(
      l, name, ring ? CacheLayout::ring : CacheLayout::tokens,
      cb.getI64IntegerAttr(ring ? a.span() : spec.model.maxSeqLen),
      RankedTensorType::get({heads, headDim}, b.getF32Type()));
  return b.create<CacheAppendOp>(l, rows.getType(), name, rows, pos);
}

/// Differential attention (DIFF Transformer, Ye et al. 2024, with its
/// reference code's layout): q and k are 2H heads of half width, head h's
/// two halves 2h and 2h + 1 (RoPE rotates each half-head); map j of head h
/// is the softmax of half j of its query against half j of its key, over
/// the head's full-width value. The two maps are two arch.attention ops
/// (half-head queries and keys, each half's keys a cache of its own, the
/// values one cache), then first - lambda * second, an RMSNorm per head
/// (`subln`, the weight shared by the heads), times 1 - lambda_init, where
/// lambda_init = 0.8 - 0.6 exp(-0.3 i) for layer i (0-based).
Value Importer::differentialAttention(int64_t i, Value h, Value pos) {
  const AttentionSpec &a = spec.layers[size_t(i)].attention;
  const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
  Location al = layerLoc(i, "attention.differential");
  const int64_t H = a.nHeads, D = a.headDim, half = D / 2;
  Value q = linear(al, h, p + "q_proj", H * D, a.qkvBias);
  Value k = linear(al, h, p + "k_proj", H * D, a.qkvBias);
  Value v = linear(al, h, p + "v_proj", H * D, a.qkvBias);
  if (a.position.kind == spec::PositionKind::Rope) {
    Location rl = layerLoc(i, "attention.position");
    q = rope(rl, q, pos, a, 2 * H, half);
    k = rope(rl, k, pos, a, 2 * H, half);
  }
  auto halves = [&](Value x) {
    auto t = RankedTensorType::get(
        {cast<RankedTensorType>(x.getType()).getDimSize(0), H * half},
        b.getF32Type());
    return b.create<HeadsSplitOp>(al, TypeRange{t, t}, x, H).getResults();
  };
  auto qs = halves(q), ks = halves(k);
  Value kc[2];
  for (int j = 0; j < 2; ++j)
    kc[j] = append(al, ks[j], pos, p + "k" + std::to_string(j + 1) + "_cache",
                   a, H, half);
  Value vc = append(al, v, pos, p + "v_cache", a, H, D);
  Value maps[2];
  for (int j = 0; j < 2; ++j)
    maps[j] = b.create<AttentionOp>(
        al, v.getType(), qs[j], kc[j], vc, pos, Value(), Value(), Value(), H,
        H, half, llvm::APFloat(a.scale), llvm::APFloat(a.softcap), false,
        a.window, a.position.maxDistance, 0, D, a.dilation, globalsOf(a),
        a.randomBlocks, a.blockSize, a.randomSeed);
  double lambdaInit = 0.8 - 0.6 * std::exp(-0.3 * double(i));
  Value lambdas[4];
  const char *names[] = {"lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"};
  for (int j = 0; j < 4; ++j)
    lambdas[j] = param(al, p + names[j], {half});
  Value diff = b.create<DifferentialOp>(
      al, v.getType(), maps[0], maps[1], lambdas[0], lambdas[1], lambdas[2],
      lambdas[3], llvm::APFloat(lambdaInit));
  Value normed = b.create<NormOp>(
      al, diff.getType(), diff, param(al, p + "subln.weight", {D}), Value(),
      NormKind::rms, llvm::APFloat(float(spec.norm.eps)),
      llvm::APFloat(0.0f), H);
  Value scaled = b.create<ScaleOp>(al, normed,
                                   llvm::APFloat(float(1.0 - lambdaInit)));
  return linear(al, scaled, p + "o_proj", spec.model.dModel, a.outBias);
}

/// Linear attention of layer `i` over its projected (normed, rotated)
/// q, k and v: a state cache of [n_kv_heads, head_dim, head_dim (+ 1, the
/// normalizer's column)] replaces the KV cache. arch-flash-tiling picks
/// the chunk.
Value Importer::linearAttention(int64_t i, Value q, Value k, Value v) {
  const AttentionSpec &a = spec.layers[size_t(i)].attention;
  Location al = layerLoc(i, "attention.linear");
  const std::string name =
      "model.layers." + std::to_string(i) + ".self_attn.state";
  int64_t columns = a.headDim + (a.linearNormalize ? 1 : 0);
  OpBuilder cb(forward);
  cb.create<CacheOp>(al, name, CacheLayout::state, IntegerAttr(),
                     RankedTensorType::get({a.nKVHeads, a.headDim, columns},
                                           b.getF32Type()));
  // spec::LinearMap lists the dialect's FeatureMap after None.
  auto map = static_cast<FeatureMap>(int(a.linear) - 1);
  return b.create<LinearAttentionOp>(
      al, q.getType(), name, q, k, v, a.nHeads, a.nKVHeads, a.headDim, 0,
      map, a.linearNormalize, llvm::APFloat(a.scale), 0);
}

/// Self-attention of one layer on normalized input `h`, output projected.
Value Importer::attention(int64_t i, Value h, Value pos) {
  if (spec.isMLA())
    return latentAttention(i, h, pos);
  if (spec.attention.differential)
    return differentialAttention(i, h, pos);
  const AttentionSpec &a = spec.layers[size_t(i)].attention;
  const std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
  Location al = layerLoc(i, "attention");
  Value q = linear(al, h, p + "q_proj", spec.qDim(), a.qkvBias);
  Value k = linear(al, h, p + "k_proj", spec.kvDim(), a.qkvBias);
  Value v = linear(al, h, p + "v_proj", spec.kvDim(), a.qkvBias);
  if (a.qkNorm != spec::QKNorm::None) {
    Location ql = layerLoc(i, "attention.qk_norm");
    bool perHead = a.qkNorm != spec::QKNorm::Full;
    bool separate = a.qkNorm == spec::QKNorm::HeadSeparate;
    q = norm(ql, q, p + "q_norm", perHead ? a.nHeads : 1, separate);
    k = norm(ql, k, p + "k_norm", perHead ? a.nKVHeads : 1, separate);
  }
  if (a.position.kind == spec::PositionKind::Rope) {
    Location rl = layerLoc(i, "attention.position");
    q = rope(rl, q, pos, a, a.nHeads, a.headDim);
    k = rope(rl, k, pos, a, a.nKVHeads, a.headDim);
  }
  if (a.isLinear())
    return linear(al, linearAttention(i, q, k, v), p + "o_proj",
                  spec.model.dModel, a.outBias);
  const PositionSpec &ps = a.position;
  Value relBias;
  if (ps.kind == spec::PositionKind::T5Bias)
    relBias = param(layerLoc(i, "attention.position"),
                    "model.relative_attention_bias.weight",
                    {ps.buckets, a.nHeads});
  Value relKey, relValue;
  if (ps.kind == spec::PositionKind::Shaw) {
    Location sl = layerLoc(i, "attention.position");
    relKey = param(sl, p + "rel_key.weight", {2 * ps.clip + 1, a.headDim});
    relValue = param(sl, p + "rel_value.weight", {2 * ps.clip + 1, a.headDim});
  }
  k = append(al, k, pos, p + "k_cache", a, a.nKVHeads, a.headDim);
  v = append(al, v, pos, p + "v_cache", a, a.nKVHeads, a.headDim);
  Value attn = b.create<AttentionOp>(
      al, q.getType(), q, k, v, pos, relBias, relKey, relValue, a.nHeads,
      a.nKVHeads, a.headDim, llvm::APFloat(a.scale), llvm::APFloat(a.softcap),
      ps.kind == spec::PositionKind::ALiBi, a.window, ps.maxDistance,
      ps.kind == spec::PositionKind::Shaw ? ps.clip : 0, 0, a.dilation,
      globalsOf(a), a.randomBlocks, a.blockSize, a.randomSeed);
  return linear(al, attn, p + "o_proj", spec.model.dModel, a.outBias);
}

/// The FFN of one layer on normalized input `h`: dense, or its experts.
Value Importer::ffn(int64_t i, Value h) {
  const LayerSpec &l = spec.layers[size_t(i)];
  if (l.moe)
    return moe(i, h);
  return denseFFN(layerLoc(i, "ffn"), h,
                  "model.layers." + std::to_string(i) + ".mlp.", l.ffn,
                  l.ffn.dFF);
}

/// down(act(up h)) or, gated, down(act(gate h) * up h), `dFF` wide.
Value Importer::denseFFN(Location fl, Value h, const std::string &p,
                         const FFNSpec &f, int64_t dFF) {
  // spec::Activation lists the dialect's cases in the same order.
  auto act = static_cast<Activation>(f.activation);
  Value up = linear(fl, h, p + "up_proj", dFF, f.bias);
  Value m;
  if (f.kind == spec::FFNKind::GLU) {
    Value g = linear(fl, h, p + "gate_proj", dFF, f.bias);
    m = b.create<GluOp>(fl, g, up, act);
  } else {
    m = b.create<ActivationOp>(fl, up, act);
  }
  return linear(fl, m, p + "down_proj", spec.model.dModel, f.bias);
}

/// The mixture of experts of layer `i` on normalized input `h`: the router
/// (a linear to one logit per expert, then arch.route), the routed experts
/// (their weights stacked, expert by expert), and the shared experts, one
/// dense FFN of shared_d_ff that every token passes through.
Value Importer::moe(int64_t i, Value h) {
  const MoESpec &m = spec.moe;
  const FFNSpec &f = spec.layers[size_t(i)].ffn;
  const std::string p = "model.layers." + std::to_string(i) + ".mlp.";
  Location ml = layerLoc(i, "moe");
  const int64_t d = spec.model.dModel, e = m.nExperts, k = m.topK;
  Value logits = linear(ml, h, p + "gate", e, false);
  Value bias = m.selectionBias
                   ? param(ml, p + "gate.e_score_correction_bias", {e})
                   : Value();
  int64_t tokens = cast<RankedTensorType>(h.getType()).getDimSize(0);
  // Top-k then softmax over the k is softmax over all, renormalized.
  auto route = b.create<RouteOp>(
      ml,
      TypeRange{RankedTensorType::get({tokens, k}, b.getIntegerType(32)),
                RankedTensorType::get({tokens, k}, b.getF32Type())},
      logits, bias,
      m.router == spec::Router::Sigmoid ? RouterScoring::sigmoid
                                        : RouterScoring::softmax,
      k, m.normalize || m.router == spec::Router::TopKSoftmax, m.nGroup,
      m.topkGroup, llvm::APFloat(float(m.routedScaling)));
  auto stack = [&](const char *proj, int64_t rows, int64_t cols) -> Value {
    SmallVector<Value> ws;
    for (int64_t x = 0; x < e; ++x)
      ws.push_back(param(ml, p + "experts." + std::to_string(x) + "." + proj +
                                 ".weight",
                         {rows, cols}));
    return b.create<ConcatOp>(
        ml, RankedTensorType::get({e * rows, cols}, b.getF32Type()), ws, 0);
  };
  Value gate = f.kind == spec::FFNKind::GLU ? stack("gate_proj", m.dFF, d)
                                            : Value();
  Value up = stack("up_proj", m.dFF, d);
  Value down = stack("down_proj", d, m.dFF);
  Value y = b.create<MoEOp>(ml, h.getType(), h, route.getExperts(),
                            route.getWeights(), gate, up, down,
                            static_cast<Activation>(f.activation), e, m.dFF);
  if (!m.nShared)
    return y;
  if (!m.sharedGate)
    return b.create<AddOp>(
        ml, y, denseFFN(ml, h, p + "shared_experts.", f, m.sharedDFF));
  // Qwen-MoE: sigmoid(h . w) times the shared expert, the one gate value
  // of each token given to all d columns (a head of one, shared).
  Value shared = denseFFN(ml, h, p + "shared_expert.", f, m.sharedDFF);
  Value logit = linear(ml, h, p + "shared_expert_gate", 1, false);
  Value wide = b.create<HeadsConcatOp>(ml, h.getType(), ValueRange{logit}, d,
                                       b.getDenseI64ArrayAttr({1}));
  return b.create<AddOp>(ml, y,
                         b.create<GluOp>(ml, wide, shared, Activation::sigmoid));
}

Value Importer::layer(int64_t i, Value x, Value pos) {
  const std::string p = "model.layers." + std::to_string(i) + ".";
  Location nl = layerLoc(i, "norm");
  Location bl = layerLoc(i, "block");
  if (spec.block.layout == spec::BlockLayout::Parallel) {
    // x + attn(n1(x)) + ffn(n2(x)), n2 = n1 when the norm is shared.
    Value h1 = norm(nl, x, p + "input_layernorm");
    Value h2 = spec.block.sharedNorm
                   ? h1
                   : norm(nl, x, p + "post_attention_layernorm");
    Value a = attention(i, h1, pos);
    Value f = ffn(i, h2);
    return b.create<AddOp>(bl, x, b.create<AddOp>(bl, a, f));
  }
  switch (spec.norm.placement) {
  case spec::NormPlacement::Post:
    // Vaswani et al.: norm(x + sublayer(x)).
    x = norm(nl, b.create<AddOp>(bl, x, attention(i, x, pos)),
             p + "post_attention_layernorm");
    return norm(nl, b.create<AddOp>(bl, x, ffn(i, x)),
                p + "post_feedforward_layernorm");
  case spec::NormPlacement::Sandwich: {
    // Gemma 2/3: x + norm(sublayer(norm(x))).
    Value a = attention(i, norm(nl, x, p + "input_layernorm"), pos);
    x = b.create<AddOp>(bl, x, norm(nl, a, p + "post_attention_layernorm"));
    Value f = ffn(i, norm(nl, x, p + "pre_feedforward_layernorm"));
    return b.create<AddOp>(bl, x,
                           norm(nl, f, p + "post_feedforward_layernorm"));
  }
  case spec::NormPlacement::PostSublayer: {
    // OLMo 2: x + norm(sublayer(x)).
    Value a = attention(i, x, pos);
    x = b.create<AddOp>(bl, x, norm(nl, a, p + "post_attention_layernorm"));
    Value f = ffn(i, x);
    return b.create<AddOp>(bl, x,
                           norm(nl, f, p + "post_feedforward_layernorm"));
  }
  case spec::NormPlacement::Pre:
    break;
  }
  x = b.create<AddOp>(bl, x,
                      attention(i, norm(nl, x, p + "input_layernorm"), pos));
  return b.create<AddOp>(bl, x,
                         ffn(i, norm(nl, x, p + "post_attention_layernorm")));
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
  if (spec.weights.naming != spec::Naming::Llama)
    module->getOperation()->setAttr(
        "arch.checkpoint_prefix",
        b.getStringAttr(namingBasePrefix(spec.weights.naming)));

  b.setInsertionPointToEnd(module->getBody());
  auto tokensTy =
      RankedTensorType::get({ShapedType::kDynamic}, b.getIntegerType(32));
  auto logitsTy = RankedTensorType::get({1, vocab}, b.getF32Type());
  auto fnTy = b.getFunctionType({tokensTy, b.getIndexType()}, {logitsTy});
  auto fn = b.create<func::FuncOp>(loc("model"), "forward", fnTy);
  forward = fn;
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  Value tokens = entry->getArgument(0), pos = entry->getArgument(1);

  Location ml = loc("model.vocab_size");
  Value table = param(ml, "model.embed_tokens.weight", {vocab, d});
  Value x = b.create<EmbedOp>(ml, act(d), tokens, table,
                              llvm::APFloat(float(spec.model.embeddingScale)));
  const PositionSpec &ps = spec.attention.position;
  if (ps.kind == spec::PositionKind::Learned ||
      ps.kind == spec::PositionKind::Sinusoidal) {
    Location pl = loc("attention.position");
    bool learned = ps.kind == spec::PositionKind::Learned;
    Value ptable =
        learned ? param(pl, "model.embed_positions.weight",
                        {spec.model.maxSeqLen + ps.offset, d})
                : Value();
    x = b.create<PosEmbedOp>(pl, x.getType(), x, pos, ptable,
                             learned ? PosEmbedKind::learned
                                     : PosEmbedKind::sinusoidal,
                             ps.offset);
  }
  if (spec.norm.embeddingNorm)
    x = norm(loc("norm.embedding_norm"), x, "model.embed_layernorm");
  for (int64_t i = 0; i < spec.model.nLayers; ++i)
    x = layer(i, x, pos);

  Location nl = loc("norm");
  Value h = b.create<LastTokenOp>(
      nl, RankedTensorType::get({1, d}, b.getF32Type()), x);
  if (spec.norm.finalNorm)
    h = norm(nl, h, "model.norm");
  Location cl = loc("model.tie_embeddings");
  Value cls = spec.model.tieEmbeddings
                  ? table
                  : param(cl, "lm_head.weight", {vocab, d});
  Value clsBias = spec.output.bias
                      ? param(loc("output.bias"), "lm_head.bias", {vocab})
                      : Value();
  Value logits = b.create<LinearOp>(cl, logitsTy, h, cls, clsBias);
  if (spec.output.logitScale != 1.0)
    logits = b.create<ScaleOp>(loc("output.logit_scale"), logits,
                               llvm::APFloat(float(spec.output.logitScale)));
  if (spec.output.finalSoftcap > 0)
    logits = b.create<SoftcapOp>(loc("output.final_softcap"), logits,
                                 llvm::APFloat(float(spec.output.finalSoftcap)));
  b.create<func::ReturnOp>(cl, logits);
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importSpec(MLIRContext &ctx, const ArchSpec &spec) {
  return Importer(ctx, spec).run();
}

} // namespace arch
