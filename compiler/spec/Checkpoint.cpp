//===- Checkpoint.cpp - Hugging Face naming schemes -----------------------===//
//
// One table per family, read off the Hugging Face modeling code of each:
// our module path -> theirs, and which part of a fused tensor it is.
//
//===----------------------------------------------------------------------===//
#include "compiler/spec/Checkpoint.h"

namespace arch {
namespace {

using spec::Naming;

/// The part of a fused tensor a parameter takes.
enum class Part { Whole, Q, K, V, Gate, Up };

struct Rename {
  const char *ours, *theirs;
  Part part = Part::Whole;
  bool conv1d = false; ///< GPT-2's Conv1D stores [in, out]
};

struct Scheme {
  const char *basePrefix;
  const char *layers; ///< "<layers><i>." starts a layer's tensors
  /// q/k/v rows of a fused tensor: per K/V group [q heads of the group, k,
  /// v] (GPT-NeoX, BLOOM, Falcon), or [all q; all k; all v] (GPT-2, Phi-3).
  bool groupedQKV;
  std::vector<Rename> global, layer;
  /// Tensors the tables do not rename keep our names (else they have none).
  bool keepOthers = false;
};

const Scheme &scheme(Naming n) {
  static const Scheme gpt2{
      "transformer.", "transformer.h.", false,
      {{"model.embed_tokens", "transformer.wte"},
       {"model.embed_positions", "transformer.wpe"},
       {"model.norm", "transformer.ln_f"},
       {"lm_head", "lm_head"}},
      {{"input_layernorm", "ln_1"},
       {"post_attention_layernorm", "ln_2"},
       {"self_attn.q_proj", "attn.c_attn", Part::Q, true},
       {"self_attn.k_proj", "attn.c_attn", Part::K, true},
       {"self_attn.v_proj", "attn.c_attn", Part::V, true},
       {"self_attn.o_proj", "attn.c_proj", Part::Whole, true},
       {"mlp.up_proj", "mlp.c_fc", Part::Whole, true},
       {"mlp.down_proj", "mlp.c_proj", Part::Whole, true}}};
  static const Scheme gptj{
      "transformer.", "transformer.h.", false,
      {{"model.embed_tokens", "transformer.wte"},
       {"model.norm", "transformer.ln_f"},
       {"lm_head", "lm_head"}},
      {{"input_layernorm", "ln_1"},
       {"self_attn.q_proj", "attn.q_proj"},
       {"self_attn.k_proj", "attn.k_proj"},
       {"self_attn.v_proj", "attn.v_proj"},
       {"self_attn.o_proj", "attn.out_proj"},
       {"mlp.up_proj", "mlp.fc_in"},
       {"mlp.down_proj", "mlp.fc_out"}}};
  static const Scheme neox{
      "gpt_neox.", "gpt_neox.layers.", true,
      {{"model.embed_tokens", "gpt_neox.embed_in"},
       {"model.norm", "gpt_neox.final_layer_norm"},
       {"lm_head", "embed_out"}},
      {{"input_layernorm", "input_layernorm"},
       {"post_attention_layernorm", "post_attention_layernorm"},
       {"self_attn.q_proj", "attention.query_key_value", Part::Q},
       {"self_attn.k_proj", "attention.query_key_value", Part::K},
       {"self_attn.v_proj", "attention.query_key_value", Part::V},
       {"self_attn.o_proj", "attention.dense"},
       {"mlp.up_proj", "mlp.dense_h_to_4h"},
       {"mlp.down_proj", "mlp.dense_4h_to_h"}}};
  static const Scheme opt{
      "model.", "model.decoder.layers.", false,
      {{"model.embed_tokens", "model.decoder.embed_tokens"},
       {"model.embed_positions", "model.decoder.embed_positions"},
       {"model.norm", "model.decoder.final_layer_norm"},
       {"lm_head", "lm_head"}},
      {{"input_layernorm", "self_attn_layer_norm"},
       {"post_attention_layernorm", "final_layer_norm"},
       {"self_attn.q_proj", "self_attn.q_proj"},
       {"self_attn.k_proj", "self_attn.k_proj"},
       {"self_attn.v_proj", "self_attn.v_proj"},
       {"self_attn.o_proj", "self_attn.out_proj"},
       {"mlp.up_proj", "fc1"},
       {"mlp.down_proj", "fc2"}}};
  // BLOOM and Falcon share their layer names; BLOOM alone has the
  // embedding norm, Falcon alone ln_attn / ln_mlp (see checkpointSource).
  static const std::vector<Rename> bloomLayer{
      {"input_layernorm", "input_layernorm"},
      {"post_attention_layernorm", "post_attention_layernorm"},
      {"self_attn.q_proj", "self_attention.query_key_value", Part::Q},
      {"self_attn.k_proj", "self_attention.query_key_value", Part::K},
      {"self_attn.v_proj", "self_attention.query_key_value", Part::V},
      {"self_attn.o_proj", "self_attention.dense"},
      {"mlp.up_proj", "mlp.dense_h_to_4h"},
      {"mlp.down_proj", "mlp.dense_4h_to_h"}};
  static const Scheme bloom{
      "transformer.", "transformer.h.", true,
      {{"model.embed_tokens", "transformer.word_embeddings"},
       {"model.embed_layernorm", "transformer.word_embeddings_layernorm"},
       {"model.norm", "transformer.ln_f"},
       {"lm_head", "lm_head"}},
      bloomLayer};
  static const Scheme falcon{
      "transformer.", "transformer.h.", true,
      {{"model.embed_tokens", "transformer.word_embeddings"},
       {"model.norm", "transformer.ln_f"},
       {"lm_head", "lm_head"}},
      bloomLayer};
  static const Scheme phi3{
      "model.", "model.layers.", false,
      {{"model.embed_tokens", "model.embed_tokens"},
       {"model.norm", "model.norm"},
       {"lm_head", "lm_head"}},
      {{"input_layernorm", "input_layernorm"},
       {"post_attention_layernorm", "post_attention_layernorm"},
       {"self_attn.q_proj", "self_attn.qkv_proj", Part::Q},
       {"self_attn.k_proj", "self_attn.qkv_proj", Part::K},
       {"self_attn.v_proj", "self_attn.qkv_proj", Part::V},
       {"self_attn.o_proj", "self_attn.o_proj"},
       {"mlp.gate_proj", "mlp.gate_up_proj", Part::Gate},
       {"mlp.up_proj", "mlp.gate_up_proj", Part::Up},
       {"mlp.down_proj", "mlp.down_proj"}}};
  // Mixtral: Llama's names but for the sparse MoE block (its experts'
  // w1 / w3 / w2 are gate / up / down; see checkpointSource).
  static const Scheme mixtral{"model.", "model.layers.", false, {},
                              {{"mlp.gate", "block_sparse_moe.gate"}},
                              /*keepOthers=*/true};
  // Our own names: nothing to rename.
  static const Scheme llama{"model.", "model.layers.", false, {}, {}};
  switch (n) {
  case Naming::GPT2: return gpt2;
  case Naming::GPTJ: return gptj;
  case Naming::GPTNeoX: return neox;
  case Naming::OPT: return opt;
  case Naming::Bloom: return bloom;
  case Naming::Falcon: return falcon;
  case Naming::Phi3: return phi3;
  case Naming::Mixtral: return mixtral;
  case Naming::Llama: break;
  }
  return llama;
}

const Rename *find(const std::vector<Rename> &table, const std::string &ours) {
  for (const Rename &r : table)
    if (ours == r.ours)
      return &r;
  return nullptr;
}

bool anyLayer(const ArchSpec &s, bool (*pred)(const LayerSpec &)) {
  for (const LayerSpec &l : s.layers)
    if (pred(l))
      return true;
  return false;
}

} // namespace

const std::vector<std::string> &namingNames() {
  static const std::vector<std::string> names{
      "hf-llama", "hf-gpt2",  "hf-gptj",   "hf-gpt-neox",
      "hf-opt",   "hf-bloom", "hf-falcon", "hf-phi3",
      "hf-mixtral"};
  return names;
}

const char *namingBasePrefix(Naming n) { return scheme(n).basePrefix; }

std::string namingProblem(const ArchSpec &s) {
  const Naming n = s.weights.naming;
  if (n == Naming::Llama)
    return "";
  const bool parallel = s.block.layout == spec::BlockLayout::Parallel;
  const spec::PositionKind pos = s.attention.position.kind;
  std::string lacks;
  const MoESpec &m = s.moe;
  bool anyDense = anyLayer(s, [](const LayerSpec &l) { return !l.moe; });
  if (n == Naming::Mixtral && anyDense)
    lacks = "a dense FFN (every Mixtral layer is a mixture of experts)";
  else if (n == Naming::Mixtral && (m.nShared || m.selectionBias))
    lacks = m.nShared ? "shared experts" : "a router's selection bias";
  else if (n != Naming::Mixtral && anyLayer(s, [](const LayerSpec &l) {
             return l.moe;
           }))
    lacks = "mixture-of-experts routers and experts";
  else if (s.isMLA())
    lacks = "multi-head latent attention's projections (DeepSeek's "
            "checkpoints use hf-llama names)";
  else if (!parallel && s.norm.placement != spec::NormPlacement::Pre)
    lacks = "the norms of a placement other than \"pre\"";
  else if (anyLayer(s, [](const LayerSpec &l) {
             return l.attention.qkNorm != spec::QKNorm::None;
           }))
    lacks = "QK-norm weights";
  else if (pos == spec::PositionKind::T5Bias || pos == spec::PositionKind::Shaw)
    lacks = "relative position tables";
  else if (pos == spec::PositionKind::Learned && n != Naming::GPT2 &&
           n != Naming::OPT)
    lacks = "a learned position table";
  else if (s.norm.embeddingNorm && n != Naming::Bloom)
    lacks = "an embedding norm";
  else if (n != Naming::Phi3 && n != Naming::Mixtral &&
           anyLayer(s, [](const LayerSpec &l) {
             return l.ffn.kind == spec::FFNKind::GLU;
           }))
    lacks = "a gated FFN's gate_proj (set ffn.kind = \"mlp\")";
  else if (n == Naming::Phi3 && anyLayer(s, [](const LayerSpec &l) {
             return l.ffn.kind == spec::FFNKind::MLP;
           }))
    lacks = "an ungated FFN (gate_up_proj holds gate and up)";
  else if (n == Naming::GPTJ && !(parallel && s.block.sharedNorm))
    lacks = "a second norm per layer (GPT-J's ln_1 feeds a parallel block: "
            "block.layout = \"parallel\", shared_norm = true)";
  else if ((n == Naming::GPTNeoX || n == Naming::Bloom) &&
           s.attention.nKVHeads != s.attention.nHeads)
    lacks = "grouped K/V heads (query_key_value holds q, k and v of every "
            "head)";
  if (lacks.empty())
    return "";
  return namingNames()[size_t(n)] + " checkpoints have no tensor for " + lacks;
}

std::optional<CheckpointSource>
checkpointSource(const ArchSpec &s, const std::string &name,
                 const std::vector<int64_t> &shape) {
  const Naming n = s.weights.naming;
  if (n == Naming::Llama)
    return std::nullopt;
  const Scheme &sc = scheme(n);
  CheckpointSource src;
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || shape.empty())
    return src;
  std::string module = name.substr(0, dot), suffix = name.substr(dot);
  const std::string layers = "model.layers.";
  const Rename *r = nullptr;
  std::string prefix, ours = module;
  if (module.compare(0, layers.size(), layers) == 0) {
    size_t end = module.find('.', layers.size());
    if (end == std::string::npos)
      return src;
    std::string index = module.substr(layers.size(), end - layers.size());
    const std::string &rest = ours = module.substr(end + 1);
    prefix = sc.layers + index + ".";
    const std::string experts = "mlp.experts.";
    if (n == Naming::Mixtral && rest.compare(0, experts.size(), experts) == 0) {
      // mlp.experts.E.{gate,up,down}_proj -> block_sparse_moe.experts.E.w1/3/2
      size_t d = rest.find('.', experts.size());
      std::string proj = d == std::string::npos ? "" : rest.substr(d + 1);
      const char *w = proj == "gate_proj" ? "w1"
                      : proj == "up_proj" ? "w3"
                      : proj == "down_proj" ? "w2"
                                            : nullptr;
      if (!w)
        return src;
      src.tensor = prefix + "block_sparse_moe.experts." +
                   rest.substr(experts.size(), d - experts.size()) + "." + w +
                   suffix;
      src.shape = shape;
      return src;
    }
    r = find(sc.layer, rest);
  } else {
    r = find(sc.global, module);
  }
  if (!r && !sc.keepOthers)
    return src;
  std::string theirs = r ? r->theirs : ours;
  // Falcon's new decoder with two norms per parallel block.
  if (n == Naming::Falcon && s.block.layout == spec::BlockLayout::Parallel &&
      !s.block.sharedNorm)
    theirs = theirs == "input_layernorm"            ? "ln_attn"
             : theirs == "post_attention_layernorm" ? "ln_mlp"
                                                    : theirs;
  src.tensor = prefix + theirs + suffix;
  src.shape = shape;
  if (r && r->part != Part::Whole) {
    const int64_t hd = s.attention.headDim, q = s.qDim(), kv = s.kvDim();
    const int64_t rows = shape[0];
    int64_t total = 0;
    if (r->part == Part::Gate || r->part == Part::Up) {
      total = 2 * rows;
      src.groups = 1;
      src.offset = r->part == Part::Up ? rows : 0;
      src.length = rows;
    } else if (sc.groupedQKV) {
      const int64_t perGroup = s.attention.nHeads / s.attention.nKVHeads;
      total = q + 2 * kv;
      src.groups = s.attention.nKVHeads;
      src.offset = r->part == Part::Q   ? 0
                   : r->part == Part::K ? perGroup * hd
                                        : (perGroup + 1) * hd;
      src.length = r->part == Part::Q ? perGroup * hd : hd;
    } else {
      total = q + 2 * kv;
      src.groups = 1;
      src.offset = r->part == Part::Q ? 0 : r->part == Part::K ? q : q + kv;
      src.length = rows;
    }
    src.stride = total / src.groups;
    src.shape[0] = total;
  }
  if (r && r->conv1d && src.shape.size() == 2) {
    src.transpose = true;
    std::swap(src.shape[0], src.shape[1]);
  }
  return src;
}

} // namespace arch
