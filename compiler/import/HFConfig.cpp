//===- HFConfig.cpp - A Hugging Face config.json as an archc spec ---------===//
//
// One function per family of model_types reads the fields its Hugging Face
// modeling code reads, with the same defaults, and writes the spec keys
// (docs/spec.md) that say the same; each key's comment names its field.
// A Reader records which fields were read: the rest, less those known to
// change nothing at inference (token ids, dropout, initialisation, dtype),
// are returned for a warning.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/HFConfig.h"
#include "compiler/spec/ArchSpec.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

namespace arch {
namespace {

namespace json = llvm::json;

/// A failed import: the message names the field.
struct Failure {
  std::string message;
};

/// The config's fields, read once each, typed, with their defaults.
class Reader {
public:
  explicit Reader(const json::Object &o) : obj(o) {}

  bool has(const std::string &key) const {
    const json::Value *v = obj.get(key);
    return v && v->kind() != json::Value::Null;
  }
  /// Whether the key is written at all (null included: "none", where an
  /// absent key takes the default).
  bool present(const std::string &key) const { return obj.get(key); }
  std::optional<int64_t> intOpt(const std::string &key) {
    const json::Value *v = take(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    std::optional<int64_t> i = v->getAsInteger();
    if (!i)
      if (auto d = v->getAsNumber(); d && *d == std::floor(*d) &&
                                     std::fabs(*d) < 9.2e18)
        i = int64_t(*d);
    if (!i)
      throw Failure{key + ": expected an integer, got " + show(*v)};
    // (The spec's own bounds are far smaller; this keeps the arithmetic
    // below, 4 x hidden_size and the like, from overflowing.)
    if (*i < -(int64_t(1) << 53) || *i > (int64_t(1) << 53))
      throw Failure{key + ": " + std::to_string(*i) + " is out of range"};
    return *i;
  }
  /// A count that divides: at least 1.
  int64_t positive(const std::string &key, std::optional<int64_t> def = {}) {
    int64_t v = integer(key, def);
    if (v < 1)
      throw Failure{key + ": must be at least 1, got " + std::to_string(v)};
    return v;
  }
  int64_t integer(const std::string &key, std::optional<int64_t> def = {}) {
    if (auto v = intOpt(key))
      return *v;
    if (def)
      return *def;
    throw Failure{key + ": missing (a required field of this model_type)"};
  }
  std::optional<double> numberOpt(const std::string &key) {
    const json::Value *v = take(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (auto d = v->getAsNumber())
      return *d;
    throw Failure{key + ": expected a number, got " + show(*v)};
  }
  double number(const std::string &key, double def) {
    return numberOpt(key).value_or(def);
  }
  bool boolean(const std::string &key, bool def) {
    const json::Value *v = take(key);
    if (!v || v->kind() == json::Value::Null)
      return def;
    if (auto b = v->getAsBoolean())
      return *b;
    throw Failure{key + ": expected true or false, got " + show(*v)};
  }
  std::optional<std::string> stringOpt(const std::string &key) {
    const json::Value *v = take(key);
    if (!v || v->kind() == json::Value::Null)
      return std::nullopt;
    if (auto s = v->getAsString())
      return s->str();
    throw Failure{key + ": expected a string, got " + show(*v)};
  }
  const json::Object *object(const std::string &key) {
    return typed(key, &json::Value::getAsObject, "an object");
  }
  const json::Array *array(const std::string &key) {
    return typed(key, &json::Value::getAsArray, "an array");
  }
  /// Fields read elsewhere, or known to change nothing here.
  void known(std::initializer_list<const char *> keys) {
    for (const char *k : keys)
      used.insert(k);
  }
  std::vector<std::string> unknown() const {
    std::vector<std::string> out;
    for (const auto &kv : obj)
      if (!used.count(kv.first.str()))
        out.push_back(kv.first.str());
    std::sort(out.begin(), out.end());
    return out;
  }

private:
  /// The value of `key` as a T (null or absent: none).
  template <typename T>
  const T *typed(const std::string &key,
                 const T *(json::Value::*get)() const, const char *what) {
    const json::Value *v = take(key);
    if (!v || v->kind() == json::Value::Null)
      return nullptr;
    if (const T *x = (v->*get)())
      return x;
    throw Failure{key + ": expected " + what + ", got " + show(*v)};
  }
  const json::Value *take(const std::string &key) {
    used.insert(key);
    return obj.get(key);
  }
  static std::string show(const json::Value &v) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << v; // JSON: strings quoted and escaped
    if (s.size() > 40)
      s = s.substr(0, 37) + "...";
    return s;
  }
  const json::Object &obj;
  std::set<std::string> used;
};

/// The spec being written: tables in order, each key with its comment.
class Spec {
public:
  void set(const std::string &table, const std::string &key,
           const std::string &value, const std::string &from) {
    Table &t = tableOf(table);
    t.lines.push_back(key + " = " + value + (from.empty() ? "" : "  # " + from));
  }
  void setInt(const std::string &table, const std::string &key, int64_t v,
              const std::string &from) {
    set(table, key, std::to_string(v), from);
  }
  void setReal(const std::string &table, const std::string &key, double v,
               const std::string &from);
  void setBool(const std::string &table, const std::string &key, bool v,
               const std::string &from) {
    set(table, key, v ? "true" : "false", from);
  }
  void setStr(const std::string &table, const std::string &key,
              const std::string &v, const std::string &from) {
    set(table, key, "\"" + v + "\"", from);
  }
  /// A [[layer_overrides]] entry: its selector lines, then its tables.
  void override(const std::string &selector,
                const std::vector<std::pair<std::string, std::string>> &keys,
                const std::string &comment) {
    overrides.push_back({selector, keys, comment});
  }
  std::string text(const std::string &header) const {
    std::string s = header;
    for (const Table &t : tables) {
      s += "\n[" + t.name + "]\n";
      for (const std::string &l : t.lines)
        s += l + "\n";
    }
    for (const Override &o : overrides) {
      s += "\n# " + o.comment + "\n[[layer_overrides]]\n" + o.selector + "\n";
      std::string current;
      for (const auto &[table, line] : o.keys) {
        if (table != current)
          s += "[layer_overrides." + table + "]\n";
        current = table;
        s += line + "\n";
      }
    }
    return s;
  }

private:
  struct Table {
    std::string name;
    std::vector<std::string> lines;
  };
  struct Override {
    std::string selector;
    std::vector<std::pair<std::string, std::string>> keys;
    std::string comment;
  };
  Table &tableOf(const std::string &name) {
    for (Table &t : tables)
      if (t.name == name)
        return t;
    tables.push_back({name, {}});
    return tables.back();
  }
  std::vector<Table> tables;
  std::vector<Override> overrides;
};

/// `v` as a TOML float, in the fewest digits that read back as `v`.
std::string real(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) { // 500000.0, not 5e+05
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

void Spec::setReal(const std::string &table, const std::string &key, double v,
                   const std::string &from) {
  set(table, key, real(v), from);
}

/// `s` from the file, quoted and escaped for a message (a JSON string).
std::string quoted(const std::string &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << json::Value(json::fixUTF8(s.size() > 40 ? s.substr(0, 37) + "..." : s));
  return out;
}

/// Hugging Face's activation names (ACT2FN) as the spec's.
std::string activation(const std::string &field, const std::string &hf) {
  static const std::map<std::string, std::string> names = {
      {"silu", "silu"},          {"swish", "silu"},
      {"gelu", "gelu"},          {"gelu_new", "gelu_tanh"},
      {"gelu_fast", "gelu_tanh"}, {"gelu_pytorch_tanh", "gelu_tanh"},
      {"quick_gelu", "gelu_sigmoid"}, {"relu", "relu"},
      {"relu2", "squared_relu"}, {"sigmoid", "sigmoid"},
      {"linear", "identity"}};
  auto it = names.find(hf);
  if (it == names.end())
    throw Failure{field + ": activation " + quoted(hf) + " has no archc "
                  "equivalent (silu, gelu, gelu_new, gelu_pytorch_tanh, "
                  "quick_gelu, relu, relu2, sigmoid, linear)"};
  return it->second;
}

/// LongRoPE's rope_scaling (Phi-3 128k, Phi-3.5, Phi-4-mini; "su" in the
/// first configs) as Hugging Face computes it: the extension is
/// max_position_embeddings / original_max_position_embeddings where the
/// config has the latter (its own `factor` then unused), else `factor`
/// over max_position_embeddings; the attention factor, unless given,
/// sqrt(1 + ln(extension) / ln(original)) above an extension of 1.
void longRoPE(Reader &r, Reader &sc, Spec &s, const std::string &table) {
  const std::string from = "rope_scaling.";
  s.setStr(table, "scaling", "longrope", from + "rope_type");
  int64_t maxPos = r.positive("max_position_embeddings");
  // (Newer configs may keep the original context in rope_scaling.)
  std::string origFrom = "original_max_position_embeddings";
  std::optional<int64_t> orig = r.intOpt(origFrom);
  if (!orig && (orig = sc.intOpt(origFrom)))
    origFrom = from + origFrom;
  double extension;
  if (orig) {
    if (*orig < 1)
      throw Failure{origFrom + ": must be at least 1, got " +
                    std::to_string(*orig)};
    extension = double(maxPos) / double(*orig);
    sc.known({"factor"});
  } else {
    orig = maxPos;
    origFrom = "max_position_embeddings";
    extension = sc.number("factor", 1.0);
  }
  s.setInt(table, "original_max_seq_len", *orig, origFrom);
  for (const char *key : {"short_factor", "long_factor"}) {
    const json::Array *list = sc.array(key);
    if (!list)
      throw Failure{from + key + ": missing (LongRoPE's factor per pair)"};
    std::string text = "[";
    for (const json::Value &v : *list) {
      std::optional<double> f = v.getAsNumber();
      if (!f || !(*f > 0) || !std::isfinite(*f))
        throw Failure{from + key + ": expected positive numbers"};
      text += (text.size() > 1 ? ", " : "") + real(*f);
    }
    s.set(table, key, text + "]", from + key);
  }
  if (auto a = sc.numberOpt("attention_factor"))
    s.setReal(table, "attention_factor", *a, from + "attention_factor");
  else
    s.setReal(table, "attention_factor",
              longRoPEAttentionOf(extension, double(*orig)),
              "sqrt(1 + ln(max / original) / ln(original)), LongRoPE's");
}

/// rope_theta and rope_scaling into [attention.position] (or an
/// override's table, `table`).
void rope(Reader &r, Spec &s, const std::string &table, double thetaDefault,
          const char *thetaKey = "rope_theta") {
  s.setStr(table, "kind", "rope", "");
  s.setReal(table, "theta", r.number(thetaKey, thetaDefault), thetaKey);
  const json::Object *scaling = r.object("rope_scaling");
  if (!scaling)
    return;
  Reader sc(*scaling);
  std::string type = sc.stringOpt("rope_type")
                         .value_or(sc.stringOpt("type").value_or(""));
  sc.known({"type", "rope_type"});
  std::string from = "rope_scaling.";
  if (type == "linear") {
    s.setStr(table, "scaling", "linear", from + "rope_type");
    s.setReal(table, "factor", sc.number("factor", 1.0), from + "factor");
  } else if (type == "dynamic") {
    s.setStr(table, "scaling", "ntk", from + "rope_type (NTK-aware)");
    s.setReal(table, "factor", sc.number("factor", 1.0), from + "factor");
  } else if (type == "llama3") {
    s.setStr(table, "scaling", "llama3", from + "rope_type");
    s.setReal(table, "factor", sc.number("factor", 8.0), from + "factor");
    s.setInt(table, "original_max_seq_len",
             sc.integer("original_max_position_embeddings"),
             from + "original_max_position_embeddings");
    s.setReal(table, "low_freq_factor", sc.number("low_freq_factor", 1.0),
              from + "low_freq_factor");
    s.setReal(table, "high_freq_factor", sc.number("high_freq_factor", 4.0),
              from + "high_freq_factor");
  } else if (type == "yarn") {
    s.setStr(table, "scaling", "yarn", from + "rope_type");
    s.setReal(table, "factor", sc.number("factor", 1.0), from + "factor");
    s.setInt(table, "original_max_seq_len",
             sc.integer("original_max_position_embeddings"),
             from + "original_max_position_embeddings");
    s.setReal(table, "beta_fast", sc.number("beta_fast", 32.0),
              from + "beta_fast");
    s.setReal(table, "beta_slow", sc.number("beta_slow", 1.0),
              from + "beta_slow");
    if (auto m = sc.numberOpt("mscale"))
      s.setReal(table, "mscale", *m, from + "mscale");
    if (auto m = sc.numberOpt("mscale_all_dim"))
      s.setReal(table, "mscale_all_dim", *m, from + "mscale_all_dim");
  } else if (type == "longrope" || type == "su") {
    longRoPE(r, sc, s, table);
  } else if (type != "default") {
    throw Failure{"rope_scaling.rope_type: " + quoted(type) +
                  " has no archc equivalent (linear, dynamic, llama3, yarn, "
                  "longrope)"};
  }
  if (auto left = sc.unknown(); !left.empty())
    throw Failure{"rope_scaling: field " + quoted(left.front()) +
                  " is one archc does not model"};
}

/// Fields with no effect on inference that every family may carry.
void common(Reader &r) {
  r.known({"architectures", "model_type", "torch_dtype", "transformers_version",
           "_name_or_path", "bos_token_id", "eos_token_id", "pad_token_id",
           "unk_token_id", "sep_token_id", "decoder_start_token_id",
           "use_cache", "initializer_range", "initializer_factor",
           "attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop",
           "attn_pdrop", "summary_type", "summary_use_proj",
           "summary_activation", "summary_proj_to_labels",
           "summary_first_dropout", "task_specific_params", "tokenizer_class",
           "pretraining_tp", "dropout", "activation_dropout",
           "layerdrop", "classifier_dropout", "attention_probs_dropout_prob",
           "hidden_dropout_prob", "output_attentions",
           "output_hidden_states", "return_dict", "id2label", "label2id",
           "is_decoder", "is_encoder_decoder", "bias_dropout_fusion",
           "masked_softmax_fusion", "skip_bias_add", "skip_bias_add_qkv",
           "slow_but_exact", "use_flash_attn", "_attn_implementation",
           "attn_implementation", "router_aux_loss_coef", "output_router_logits",
           "router_jitter_noise", "quantization_config", "auto_map",
           "use_sliding_window_cache", "cache_implementation",
           "reorder_and_upcast_attn", "use_memory_efficient_attention",
           "n_ctx_orig", "gradient_checkpointing", "prefix",
           "tie_encoder_decoder", "use_return_dict", "init_std",
           "emb_dropout", "offset_alibi", "pretraining_sequence_length",
           "attention_softmax_in_fp32", "max_sequence_length", "output_past"});
}

/// [model]'s keys from the fields most families name alike, with the
/// family's defaults; returns hidden_size.
int64_t modelTable(Reader &r, Spec &s, int64_t vocab, int64_t maxSeq,
                   bool tie) {
  s.setInt("model", "vocab_size", r.integer("vocab_size", vocab),
           "vocab_size");
  int64_t d = r.integer("hidden_size");
  s.setInt("model", "d_model", d, "hidden_size");
  s.setInt("model", "n_layers", r.integer("num_hidden_layers"),
           "num_hidden_layers");
  s.setInt("model", "max_seq_len",
           r.integer("max_position_embeddings", maxSeq),
           "max_position_embeddings");
  s.setBool("model", "tie_embeddings", r.boolean("tie_word_embeddings", tie),
            "tie_word_embeddings");
  return d;
}

/// head_dim (`def` where the key is absent, not null) as the spec's key
/// where it is not hidden_size / heads; returns the head width.
int64_t headDimKey(Reader &r, Spec &s, int64_t d, int64_t heads,
                   std::optional<int64_t> def = std::nullopt) {
  std::optional<int64_t> hd = r.intOpt("head_dim");
  if (!hd && def && !r.present("head_dim"))
    hd = def;
  if (hd && (*hd != d / heads || d % heads))
    s.setInt("attention", "head_dim", *hd, "head_dim");
  return hd.value_or(d / heads);
}

/// partial_rotary_factor (default `def`) as RoPE's rotary_dim where it is
/// not the whole head.
void partialRotary(Reader &r, Spec &s, int64_t headDim, double def) {
  double f = r.number("partial_rotary_factor", def);
  if (!(f > 0 && f <= 1))
    throw Failure{"partial_rotary_factor: must be in (0, 1], got " + real(f)};
  if (f != 1)
    s.setInt("attention.position", "rotary_dim", int64_t(double(headDim) * f),
             "partial_rotary_factor x head_dim");
}

/// Layer indices from a config's array (Qwen-MoE's mlp_only_layers).
std::vector<int64_t> layerList(Reader &r, const std::string &key,
                               int64_t layers) {
  std::vector<int64_t> out;
  if (const json::Array *a = r.array(key))
    for (const json::Value &v : *a) {
      std::optional<int64_t> i = v.getAsInteger();
      if (!i || *i < 0 || *i >= layers)
        throw Failure{key + ": expected layer indices in [0, " +
                      std::to_string(layers) + ")"};
      out.push_back(*i);
    }
  return out;
}

/// Qwen2-MoE and Qwen3-MoE's experts: every decoder_sparse_step-th layer
/// (but those in mlp_only_layers) routes each token to num_experts_per_tok
/// of num_experts; Qwen2-MoE adds one gated shared expert.
void qwenMoe(Reader &r, Spec &s, const std::string &type, int64_t layers) {
  const bool q2 = type == "qwen2_moe";
  int64_t experts = r.integer("num_experts", q2 ? 60 : 128);
  int64_t step = r.positive("decoder_sparse_step", 1);
  if (experts < 0)
    throw Failure{"num_experts: must not be negative"};
  if (experts == 0 || step > layers) { // (Hugging Face: every layer dense.)
    r.known({"num_experts_per_tok", "moe_intermediate_size", "norm_topk_prob",
             "shared_expert_intermediate_size", "mlp_only_layers"});
    return;
  }
  s.setInt("moe", "n_experts", experts, "num_experts");
  s.setInt("moe", "top_k", r.positive("num_experts_per_tok", q2 ? 4 : 8),
           "num_experts_per_tok");
  s.setInt("moe", "d_ff", r.positive("moe_intermediate_size", q2 ? 1408 : 768),
           "moe_intermediate_size");
  s.setStr("moe", "router", "softmax_topk", "");
  s.setBool("moe", "normalize", r.boolean("norm_topk_prob", false),
            "norm_topk_prob");
  if (q2) {
    int64_t shared = r.integer("shared_expert_intermediate_size", 5632);
    if (shared < 0)
      throw Failure{"shared_expert_intermediate_size: must not be negative"};
    if (shared > 0) {
      s.setInt("moe", "n_shared_experts", 1, "Qwen2-MoE: one shared expert");
      s.setInt("moe", "shared_d_ff", shared, "shared_expert_intermediate_size");
      s.setBool("moe", "shared_gate", true,
                "Qwen2-MoE: the shared expert's sigmoid gate");
    }
  }
  if (step > 1) {
    s.override("first = " + std::to_string(layers), {{"ffn", "moe = false"}},
               "Qwen-MoE: dense layers, but every decoder_sparse_step-th");
    s.override("every = " + std::to_string(step) + "\noffset = " +
                   std::to_string(step - 1),
               {{"ffn", "moe = true  # decoder_sparse_step"}},
               "Qwen-MoE: layer i routes when (i + 1) % decoder_sparse_step "
               "== 0");
  }
  std::vector<int64_t> dense = layerList(r, "mlp_only_layers", layers);
  if (!dense.empty()) {
    std::string list;
    for (int64_t i : dense)
      list += (list.empty() ? "" : ", ") + std::to_string(i);
    s.override("layers = [" + list + "]", {{"ffn", "moe = false"}},
               "Qwen-MoE: mlp_only_layers keep the dense FFN");
  }
}

/// Llama and the models written as Llama (Mistral, Mixtral, Qwen 2 and 3
/// and their MoE, OLMo 2, Phi-3): RMSNorm, SwiGLU, RoPE half-split (the
/// checkpoints' q/k rows are permuted for it).
void llamaFamily(Reader &r, Spec &s, const std::string &type) {
  const bool qwen2 = type == "qwen2" || type == "qwen2_moe";
  const bool qwen3 = type == "qwen3" || type == "qwen3_moe";
  const bool phi3 = type == "phi3";
  const int64_t maxPos = phi3 ? 4096 : qwen2 || qwen3 ? 32768 : 2048;
  int64_t d = modelTable(r, s, phi3 ? 32064 : qwen2 || qwen3 ? 151936 : 32000,
                         maxPos, false);
  const int64_t layers = r.integer("num_hidden_layers");
  s.setStr("norm", "kind", "rmsnorm", "");
  // (The families' own defaults where they differ from Llama's.)
  bool e5 = type == "mixtral" || type == "olmo2" || type == "llama" ||
            type == "mistral" || phi3;
  s.setReal("norm", "eps", r.number("rms_norm_eps", e5 ? 1e-5 : 1e-6),
            "rms_norm_eps");
  if (type == "olmo2")
    s.setStr("norm", "placement", "post_sublayer",
             "OLMo 2: norms after each sublayer");
  int64_t heads = r.positive("num_attention_heads");
  s.setInt("attention", "n_heads", heads, "num_attention_heads");
  s.setInt("attention", "n_kv_heads", r.integer("num_key_value_heads", heads),
           "num_key_value_heads");
  // (Qwen3Config's head_dim defaults to 128.)
  int64_t headDim =
      headDimKey(r, s, d, heads,
                 type == "qwen3" ? std::optional<int64_t>(128) : std::nullopt);
  // (Phi-3's modeling code has no biases: its keys change nothing; nor
  // does it read the three Phi-4 mini's config carries over from its
  // multimodal sibling: lm_head_bias, full_attn_mod, interpolate_factor.)
  if (phi3)
    r.known({"attention_bias", "mlp_bias", "lm_head_bias", "full_attn_mod",
             "interpolate_factor"});
  bool bias = !phi3 && r.boolean("attention_bias", false);
  // (Qwen2-MoE's config class has a qkv_bias key, Qwen 2's not.)
  if (qwen2 && (type == "qwen2" || r.boolean("qkv_bias", true))) {
    s.setBool("attention", "qkv_bias", true, "Qwen 2: q/k/v biases");
  } else if (bias && !qwen2) {
    s.setBool("attention", "qkv_bias", true, "attention_bias");
    s.setBool("attention", "out_bias", true, "attention_bias");
  }
  if (qwen3)
    s.setStr("attention", "qk_norm", "head", "Qwen 3: RMSNorm per head");
  if (type == "olmo2")
    s.setStr("attention", "qk_norm", "full",
             "OLMo 2: RMSNorm over the q and k projections");
  // Mistral slides a window of sliding_window (4096 when the key is
  // absent, none when null), Mixtral and Phi-3 when it is set; Qwen 2 and
  // 3 only with use_sliding_window, and only from layer max_window_layers
  // on; Llama and OLMo 2 never (their modeling code ignores the key).
  if (type == "mistral" || type == "mixtral" || phi3) {
    std::optional<int64_t> w = r.intOpt("sliding_window");
    if (!w && type == "mistral" && !r.present("sliding_window"))
      w = 4096;
    // (A window as long as the context slides nothing: Phi-3.5's 262144.)
    if (w && *w < r.integer("max_position_embeddings", maxPos))
      s.setInt("attention", "window", *w, "sliding_window");
  } else if (qwen2 || qwen3) {
    bool sliding = r.boolean("use_sliding_window", false);
    int64_t from = r.integer("max_window_layers",
                             type == "qwen3" ? layers : 28);
    std::optional<int64_t> w = r.intOpt("sliding_window");
    if (sliding && w && from < layers) {
      s.setInt("attention", "window", *w,
               "sliding_window (use_sliding_window)");
      if (from > 0)
        s.override("first = " + std::to_string(from),
                   {{"attention", "window = 0  # below max_window_layers"}},
                   "Qwen: layers below max_window_layers attend globally");
    }
  } else {
    r.known({"sliding_window", "use_sliding_window", "max_window_layers"});
  }
  rope(r, s, "attention.position", type == "mixtral" ? 1e6 : 10000.0);
  if (phi3) {
    // (Read by LongRoPE alone.)
    r.known({"original_max_position_embeddings"});
    partialRotary(r, s, headDim, 1.0);
  }
  s.setStr("ffn", "kind", "glu", "");
  s.setStr("ffn", "activation",
           activation("hidden_act", r.stringOpt("hidden_act").value_or("silu")),
           "hidden_act");
  s.setInt("ffn", "d_ff", r.integer("intermediate_size"), "intermediate_size");
  if (!phi3 && r.boolean("mlp_bias", false))
    s.setBool("ffn", "bias", true, "mlp_bias");
  if (type == "mixtral") {
    s.setInt("moe", "n_experts", r.integer("num_local_experts"),
             "num_local_experts");
    s.setInt("moe", "top_k", r.integer("num_experts_per_tok"),
             "num_experts_per_tok");
    s.setStr("moe", "router", "softmax_topk", "");
    s.setBool("moe", "normalize", true, "Mixtral: the top k renormalized");
    s.setStr("weights", "naming", "hf-mixtral", "");
    return;
  }
  if (type == "qwen2_moe" || type == "qwen3_moe")
    qwenMoe(r, s, type, layers);
  s.setStr("weights", "naming", phi3 ? "hf-phi3" : "hf-llama", "");
}

/// Gemma 2 and 3: Gemma's RMSNorm (1 + w), sandwich norms, embeddings
/// times sqrt(d_model), GeGLU, tied; local (sliding) and global layers.
void gemmaFamily(Reader &r, Spec &s, const std::string &type) {
  // Gemma3TextConfig's defaults where Gemma2Config's differ (a Gemma 3
  // text_config lists only what its size changes).
  const bool g3 = type == "gemma3_text";
  r.positive("hidden_size"); // (its square root scales the embeddings)
  int64_t d = modelTable(r, s, g3 ? 262208 : 256000, g3 ? 131072 : 8192, true);
  s.setReal("model", "embedding_scale", std::sqrt(double(d)),
            "Gemma: sqrt(hidden_size)");
  s.setStr("norm", "kind", "rmsnorm", "");
  s.setReal("norm", "eps", r.number("rms_norm_eps", 1e-6), "rms_norm_eps");
  s.setStr("norm", "placement", "sandwich", "Gemma 2/3: pre and post norms");
  s.setReal("norm", "weight_offset", 1.0, "Gemma: scales by 1 + w");
  int64_t heads = g3 ? r.positive("num_attention_heads", 8)
                     : r.positive("num_attention_heads");
  s.setInt("attention", "n_heads", heads, "num_attention_heads");
  s.setInt("attention", "n_kv_heads", r.integer("num_key_value_heads", 4),
           "num_key_value_heads");
  int64_t hd = r.integer("head_dim", 256);
  s.setInt("attention", "head_dim", hd, "head_dim");
  double scalar = r.number("query_pre_attn_scalar", 256.0);
  if (!(scalar > 0))
    throw Failure{"query_pre_attn_scalar: must be positive, got " +
                  real(scalar)};
  s.setReal("attention", "scale", 1.0 / std::sqrt(scalar),
            "query_pre_attn_scalar^-1/2");
  if (r.boolean("attention_bias", false)) {
    s.setBool("attention", "qkv_bias", true, "attention_bias");
    s.setBool("attention", "out_bias", true, "attention_bias");
  }
  // Soft-capping where set (Gemma 2's defaults are 50 and 30, Gemma 3's
  // none; null turns them off).
  auto cap = [&](const char *key, double g2) -> std::optional<double> {
    if (auto c = r.numberOpt(key))
      return *c;
    if (!g3 && !r.present(key))
      return g2;
    return std::nullopt;
  };
  if (auto c = cap("attn_logit_softcapping", 50.0))
    s.setReal("attention", "softcap", *c, "attn_logit_softcapping");
  if (auto c = cap("final_logit_softcapping", 30.0))
    s.setReal("output", "final_softcap", *c, "final_logit_softcapping");
  if (type == "gemma2") {
    rope(r, s, "attention.position", 10000.0);
    int64_t w = r.integer("sliding_window", 4096);
    s.override("every = 2\noffset = 0",
               {{"attention", "window = " + std::to_string(w) +
                                  "  # sliding_window"}},
               "Gemma 2: even layers slide a window (sliding_window), odd "
               "ones attend globally");
  } else { // gemma3_text
    s.setStr("attention", "qk_norm", "head", "Gemma 3: RMSNorm per head");
    int64_t w = r.integer("sliding_window", 4096);
    s.setInt("attention", "window", w, "sliding_window (local layers)");
    // Local layers: rope_local_base_freq, no scaling; every
    // sliding_window_pattern-th layer is global: rope_theta, rope_scaling.
    s.setStr("attention.position", "kind", "rope", "");
    s.setReal("attention.position", "theta",
              r.number("rope_local_base_freq", 10000.0),
              "rope_local_base_freq (local layers)");
    int64_t pattern = r.integer("sliding_window_pattern", 6);
    std::vector<std::pair<std::string, std::string>> global = {
        {"attention", "window = 0  # a global layer"},
        {"attention.position",
         "theta = " + real(r.number("rope_theta", 1000000.0)) +
             "  # rope_theta"}};
    if (const json::Object *sc = r.object("rope_scaling")) {
      Reader rs(*sc);
      std::string t = rs.stringOpt("rope_type")
                          .value_or(rs.stringOpt("type").value_or(""));
      if (t != "linear")
        throw Failure{"rope_scaling.rope_type: Gemma 3's global layers "
                      "take linear scaling here, got " + quoted(t)};
      global.push_back({"attention.position",
                        "scaling = \"linear\"  # rope_scaling.rope_type"});
      global.push_back({"attention.position",
                        "factor = " + real(rs.number("factor", 1.0)) +
                            "  # rope_scaling.factor"});
    }
    s.override("every = " + std::to_string(pattern) + "\noffset = " +
                   std::to_string(pattern - 1),
               global,
               "Gemma 3: every sliding_window_pattern-th layer is global");
  }
  s.setStr("ffn", "kind", "glu", "");
  std::string act = r.stringOpt("hidden_activation")
                        .value_or(r.stringOpt("hidden_act")
                                      .value_or("gelu_pytorch_tanh"));
  s.setStr("ffn", "activation", activation("hidden_activation", act),
           "hidden_activation");
  s.setInt("ffn", "d_ff", r.integer("intermediate_size"), "intermediate_size");
  r.known({"cache_implementation", "sliding_window_size"});
}

/// GPT-2: learned positions, LayerNorm with biases, GELU (tanh) MLP,
/// Conv1D checkpoints.
void gpt2(Reader &r, Spec &s) {
  int64_t d = r.integer("n_embd", 768);
  s.setInt("model", "vocab_size", r.integer("vocab_size", 50257), "vocab_size");
  s.setInt("model", "d_model", d, "n_embd");
  s.setInt("model", "n_layers", r.integer("n_layer", 12), "n_layer");
  s.setInt("model", "max_seq_len", r.integer("n_positions", 1024),
           "n_positions");
  r.known({"n_ctx"});
  s.setBool("model", "tie_embeddings", r.boolean("tie_word_embeddings", true),
            "tie_word_embeddings");
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", r.number("layer_norm_epsilon", 1e-5),
            "layer_norm_epsilon");
  s.setBool("norm", "bias", true, "");
  s.setInt("attention", "n_heads", r.integer("n_head", 12), "n_head");
  s.setBool("attention", "qkv_bias", true, "");
  s.setBool("attention", "out_bias", true, "");
  s.setStr("attention.position", "kind", "learned", "wpe");
  s.setStr("ffn", "kind", "mlp", "");
  s.setStr("ffn", "activation",
           activation("activation_function",
                      r.stringOpt("activation_function").value_or("gelu_new")),
           "activation_function");
  s.setInt("ffn", "d_ff", r.intOpt("n_inner").value_or(4 * d),
           "n_inner (null: 4 n_embd)");
  s.setBool("ffn", "bias", true, "");
  if (!r.boolean("scale_attn_weights", true) ||
      r.boolean("scale_attn_by_inverse_layer_idx", false))
    throw Failure{"scale_attn_weights / scale_attn_by_inverse_layer_idx: "
                  "GPT-2 without the 1/sqrt(head_dim) scale or with a "
                  "per-layer one is not supported by this import"};
  s.setStr("weights", "naming", "hf-gpt2", "");
}

/// GPT-J: parallel blocks sharing one LayerNorm, interleaved partial RoPE,
/// biases on the MLP and the classifier, none on attention.
void gptj(Reader &r, Spec &s) {
  int64_t d = r.integer("n_embd", 4096);
  int64_t heads = r.positive("n_head", 16);
  s.setInt("model", "vocab_size", r.integer("vocab_size", 50400), "vocab_size");
  s.setInt("model", "d_model", d, "n_embd");
  s.setInt("model", "n_layers", r.integer("n_layer", 28), "n_layer");
  s.setInt("model", "max_seq_len", r.integer("n_positions", 2048),
           "n_positions");
  s.setBool("model", "tie_embeddings", r.boolean("tie_word_embeddings", false),
            "tie_word_embeddings");
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", r.number("layer_norm_epsilon", 1e-5),
            "layer_norm_epsilon");
  s.setBool("norm", "bias", true, "");
  s.setInt("attention", "n_heads", heads, "n_head");
  s.setStr("attention.position", "kind", "rope", "");
  s.setReal("attention.position", "theta", 10000.0, "");
  s.setInt("attention.position", "rotary_dim",
           r.intOpt("rotary_dim").value_or(d / heads),
           "rotary_dim (null: the whole head)");
  s.setStr("attention.position", "style", "interleaved", "GPT-J");
  s.setStr("ffn", "kind", "mlp", "");
  s.setStr("ffn", "activation",
           activation("activation_function",
                      r.stringOpt("activation_function").value_or("gelu_new")),
           "activation_function");
  s.setInt("ffn", "d_ff", r.intOpt("n_inner").value_or(4 * d),
           "n_inner (null: 4 n_embd)");
  s.setBool("ffn", "bias", true, "");
  r.known({"rotary", "scale_attn_weights"}); // (GPT-J always scales)
  s.setStr("block", "layout", "parallel", "GPT-J");
  s.setBool("output", "bias", true, "lm_head.bias");
  s.setStr("weights", "naming", "hf-gptj", "");
}

/// GPT-NeoX (Pythia): parallel residual with two norms (or serial), partial
/// half-split RoPE, biases everywhere.
void gptNeox(Reader &r, Spec &s) {
  int64_t d = r.integer("hidden_size");
  int64_t heads = r.positive("num_attention_heads");
  s.setInt("model", "vocab_size", r.integer("vocab_size", 50432), "vocab_size");
  s.setInt("model", "d_model", d, "hidden_size");
  s.setInt("model", "n_layers", r.integer("num_hidden_layers"),
           "num_hidden_layers");
  s.setInt("model", "max_seq_len", r.integer("max_position_embeddings", 2048),
           "max_position_embeddings");
  s.setBool("model", "tie_embeddings", r.boolean("tie_word_embeddings", false),
            "tie_word_embeddings");
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", r.number("layer_norm_eps", 1e-5), "layer_norm_eps");
  s.setBool("norm", "bias", true, "");
  s.setInt("attention", "n_heads", heads, "num_attention_heads");
  bool bias = r.boolean("attention_bias", true);
  s.setBool("attention", "qkv_bias", bias, "attention_bias");
  s.setBool("attention", "out_bias", bias, "attention_bias");
  s.setStr("attention.position", "kind", "rope", "");
  s.setStr("attention.position", "style", "half_split", "");
  double pct = r.number("rotary_pct", 0.25);
  if (!(pct > 0 && pct <= 1))
    throw Failure{"rotary_pct: must be in (0, 1], got " + real(pct)};
  s.setInt("attention.position", "rotary_dim",
           int64_t(double(d / heads) * pct), "rotary_pct x head_dim");
  s.setReal("attention.position", "theta",
            r.number("rotary_emb_base", r.number("rope_theta", 10000.0)),
            "rotary_emb_base");
  s.setStr("ffn", "kind", "mlp", "");
  s.setStr("ffn", "activation",
           activation("hidden_act", r.stringOpt("hidden_act").value_or("gelu")),
           "hidden_act");
  s.setInt("ffn", "d_ff", r.integer("intermediate_size"), "intermediate_size");
  s.setBool("ffn", "bias", true, "");
  if (r.boolean("use_parallel_residual", true)) {
    s.setStr("block", "layout", "parallel", "use_parallel_residual");
    s.setBool("block", "shared_norm", false, "GPT-NeoX: two norms");
  }
  if (r.object("rope_scaling"))
    throw Failure{"rope_scaling: RoPE scaling of GPT-NeoX is not supported "
                  "by this import"};
  s.setStr("weights", "naming", "hf-gpt-neox", "");
}

/// OPT: learned positions from row 2, LayerNorm, ReLU MLP, biases.
void opt(Reader &r, Spec &s) {
  int64_t d = r.integer("hidden_size");
  if (auto p = r.intOpt("word_embed_proj_dim"); p && *p != d)
    throw Failure{"word_embed_proj_dim: " + std::to_string(*p) +
                  " differs from hidden_size (OPT-350m's embedding "
                  "projections have no archc equivalent)"};
  if (r.boolean("_remove_final_layer_norm", false))
    throw Failure{"_remove_final_layer_norm: true is not supported by this "
                  "import"};
  if (!r.boolean("do_layer_norm_before", true))
    throw Failure{"do_layer_norm_before: false (post-norm OPT-350m) is not "
                  "supported by this import"};
  if (!r.boolean("enable_bias", true) ||
      !r.boolean("layer_norm_elementwise_affine", true))
    throw Failure{"enable_bias / layer_norm_elementwise_affine: OPT without "
                  "biases or norm weights is not supported by this import"};
  s.setInt("model", "vocab_size", r.integer("vocab_size", 50272), "vocab_size");
  s.setInt("model", "d_model", d, "hidden_size");
  s.setInt("model", "n_layers", r.integer("num_hidden_layers"),
           "num_hidden_layers");
  s.setInt("model", "max_seq_len", r.integer("max_position_embeddings", 2048),
           "max_position_embeddings");
  s.setBool("model", "tie_embeddings", r.boolean("tie_word_embeddings", true),
            "tie_word_embeddings");
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", 1e-5, "");
  s.setBool("norm", "bias", true, "");
  s.setInt("attention", "n_heads", r.integer("num_attention_heads"),
           "num_attention_heads");
  s.setBool("attention", "qkv_bias", true, "enable_bias");
  s.setBool("attention", "out_bias", true, "enable_bias");
  s.setStr("attention.position", "kind", "learned", "");
  s.setInt("attention.position", "offset", 2, "OPT: positions from row 2");
  s.setStr("ffn", "kind", "mlp", "");
  s.setStr("ffn", "activation",
           activation("activation_function",
                      r.stringOpt("activation_function").value_or("relu")),
           "activation_function");
  s.setInt("ffn", "d_ff", r.integer("ffn_dim"), "ffn_dim");
  s.setBool("ffn", "bias", true, "");
  s.setStr("weights", "naming", "hf-opt", "");
}

/// BLOOM: ALiBi, an embedding LayerNorm, GELU (tanh) MLP, biases. ALiBi
/// has no trained context: max_seq_len comes from the caller.
void bloom(Reader &r, Spec &s, int64_t maxSeqLen) {
  // BloomConfig: n_embed, where given, over hidden_size.
  std::optional<int64_t> embed = r.intOpt("n_embed");
  int64_t d = embed ? *embed : r.integer("hidden_size", 64);
  r.known({"hidden_size"});
  if (r.boolean("apply_residual_connection_post_layernorm", false))
    throw Failure{"apply_residual_connection_post_layernorm: true is not "
                  "supported by this import"};
  s.setInt("model", "vocab_size", r.integer("vocab_size", 250880), "vocab_size");
  s.setInt("model", "d_model", d, "hidden_size");
  s.setInt("model", "n_layers", r.integer("n_layer", 2), "n_layer");
  s.setInt("model", "max_seq_len", maxSeqLen,
           "not in the config (ALiBi has no trained context): edit for more");
  s.setBool("model", "tie_embeddings", r.boolean("tie_word_embeddings", true),
            "tie_word_embeddings");
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", r.number("layer_norm_epsilon", 1e-5),
            "layer_norm_epsilon");
  s.setBool("norm", "bias", true, "");
  s.setBool("norm", "embedding_norm", true, "word_embeddings_layernorm");
  s.setInt("attention", "n_heads", r.integer("n_head", 8), "n_head");
  s.setBool("attention", "qkv_bias", true, "");
  s.setBool("attention", "out_bias", true, "");
  s.setStr("attention.position", "kind", "alibi", "BLOOM");
  s.setStr("ffn", "kind", "mlp", "");
  s.setStr("ffn", "activation", "gelu_tanh", "BLOOM's bloom_gelu");
  s.setInt("ffn", "d_ff", 4 * d, "4 hidden_size");
  s.setBool("ffn", "bias", true, "");
  r.known({"n_inner"});
  s.setStr("weights", "naming", "hf-bloom", "");
}

/// Falcon: parallel attention and MLP, MQA (7B) or GQA with the new
/// decoder architecture, RoPE, GELU MLP without biases.
void falcon(Reader &r, Spec &s) {
  int64_t d = r.integer("hidden_size");
  int64_t heads = r.positive("num_attention_heads");
  if (r.boolean("alibi", false))
    throw Failure{"alibi: true (Falcon with ALiBi) is not supported by this "
                  "import"};
  if (r.boolean("apply_residual_connection_post_layernorm", false))
    throw Failure{"apply_residual_connection_post_layernorm: true is not "
                  "supported by this import"};
  if (!r.boolean("parallel_attn", true))
    throw Failure{"parallel_attn: false is not supported by this import"};
  bool newArch = r.boolean("new_decoder_architecture", false);
  int64_t kv = newArch ? r.integer("num_kv_heads", heads)
               : r.boolean("multi_query", true) ? 1
                                                : heads;
  r.known({"num_kv_heads", "multi_query"});
  s.setInt("model", "vocab_size", r.integer("vocab_size", 65024), "vocab_size");
  s.setInt("model", "d_model", d, "hidden_size");
  s.setInt("model", "n_layers", r.integer("num_hidden_layers"),
           "num_hidden_layers");
  s.setInt("model", "max_seq_len", r.integer("max_position_embeddings", 2048),
           "max_position_embeddings");
  s.setBool("model", "tie_embeddings", r.boolean("tie_word_embeddings", true),
            "tie_word_embeddings");
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", r.number("layer_norm_epsilon", 1e-5),
            "layer_norm_epsilon");
  s.setBool("norm", "bias", true, "");
  s.setInt("attention", "n_heads", heads, "num_attention_heads");
  s.setInt("attention", "n_kv_heads", kv,
           newArch ? "num_kv_heads" : "multi_query");
  if (d % heads)
    s.setInt("attention", "head_dim", d / heads, "hidden_size / heads");
  if (r.boolean("bias", false))
    throw Failure{"bias: true (Falcon with linear biases) is not supported "
                  "by this import"};
  rope(r, s, "attention.position", 10000.0);
  s.setStr("ffn", "kind", "mlp", "");
  s.setStr("ffn", "activation",
           activation("activation", r.stringOpt("activation").value_or("gelu")),
           "activation");
  s.setInt("ffn", "d_ff", r.intOpt("ffn_hidden_size").value_or(4 * d),
           "ffn_hidden_size (null: 4 hidden_size)");
  s.setStr("block", "layout", "parallel", "parallel_attn");
  // The new architecture's 40B/180B have ln_attn and ln_mlp;
  // num_ln_in_parallel_attn = 1 (Falcon 2) one input_layernorm.
  int64_t norms = newArch ? r.integer("num_ln_in_parallel_attn", 2) : 1;
  s.setBool("block", "shared_norm", !(newArch && norms == 2),
            "num_ln_in_parallel_attn / new_decoder_architecture");
  s.setStr("weights", "naming", "hf-falcon", "");
}

/// Cohere (Command R) and Cohere 2 (Command R7B, Command A): parallel
/// blocks, bias-free LayerNorm, interleaved RoPE, optional per-head
/// QK-norm, a logit scale, tied; Cohere 2 slides a window in three layers
/// of four and leaves the fourth global without positions (NoPE).
void cohere(Reader &r, Spec &s, const std::string &type) {
  const bool v2 = type == "cohere2";
  int64_t heads = r.positive("num_attention_heads");
  int64_t d = modelTable(r, s, 256000, 8192, true);
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", r.number("layer_norm_eps", 1e-5), "layer_norm_eps");
  s.setInt("attention", "n_heads", heads, "num_attention_heads");
  s.setInt("attention", "n_kv_heads", r.integer("num_key_value_heads", heads),
           "num_key_value_heads");
  headDimKey(r, s, d, heads);
  if (!v2 && r.boolean("use_qk_norm", false)) // (Cohere 2 has none.)
    s.setStr("attention", "qk_norm", "head_separate", "use_qk_norm");
  if (r.boolean("attention_bias", false)) {
    s.setBool("attention", "qkv_bias", true, "attention_bias");
    s.setBool("attention", "out_bias", true, "attention_bias");
  }
  rope(r, s, "attention.position", 10000.0);
  s.setStr("attention.position", "style", "interleaved", "Cohere's rotation");
  s.setStr("ffn", "kind", "glu", "");
  s.setStr("ffn", "activation",
           activation("hidden_act", r.stringOpt("hidden_act").value_or("silu")),
           "hidden_act");
  s.setInt("ffn", "d_ff", r.integer("intermediate_size"), "intermediate_size");
  s.setStr("block", "layout", "parallel", "Cohere");
  s.setReal("output", "logit_scale", r.number("logit_scale", 0.0625),
            "logit_scale");
  if (!v2)
    return;
  // The checkpoint's own keys for what Cohere2's modeling code fixes:
  // refused where they say otherwise.
  auto expect = [&](const char *key, const char *want) {
    if (auto v = r.stringOpt(key); v && *v != want)
      throw Failure{std::string(key) + ": " + quoted(*v) + " is not " +
                    "supported by this import (Cohere 2 is " + want + ")"};
  };
  expect("position_embedding_type", "rope_gptj");
  expect("order_of_interleaved_layers", "local_attn_first");
  if (r.number("rotary_pct", 1.0) != 1.0)
    throw Failure{"rotary_pct: not 1.0 (Cohere 2 rotates whole heads; a "
                  "checkpoint that says otherwise is not imported)"};
  if (!r.boolean("use_gated_activation", true) ||
      !r.boolean("use_parallel_block", true))
    throw Failure{"use_gated_activation / use_parallel_block: false is not "
                  "supported by this import"};
  r.known({"use_embedding_sharing", "use_parallel_embedding"});
  // (A null window is no window and, in Cohere2's modeling code, no RoPE
  // in any layer.)
  if (r.present("sliding_window") && !r.has("sliding_window"))
    throw Failure{"sliding_window: null (Cohere 2 without local layers or "
                  "RoPE) is not supported by this import"};
  int64_t w = r.positive("sliding_window", 4096);
  int64_t pattern = r.positive("sliding_window_pattern", 4);
  const int64_t layers = r.integer("num_hidden_layers");
  if (const json::Array *types = r.array("layer_types")) {
    if (int64_t(types->size()) != layers)
      throw Failure{"layer_types: " + std::to_string(types->size()) +
                    " entries for " + std::to_string(layers) + " layers"};
    int64_t i = 0;
    for (const json::Value &v : *types) {
      std::optional<llvm::StringRef> t = v.getAsString();
      const char *want = (i + 1) % pattern ? "sliding_attention"
                                           : "full_attention";
      if (!t || *t != want)
        throw Failure{"layer_types: layer " + std::to_string(i) + " is not " +
                      want + " (this import reads Cohere 2's layers as "
                      "sliding_window_pattern lays them out)"};
      ++i;
    }
  }
  s.setInt("attention", "window", w, "sliding_window (local layers)");
  if (pattern <= layers)
    s.override("every = " + std::to_string(pattern) + "\noffset = " +
                   std::to_string(pattern - 1),
               {{"attention", "window = 0  # a global layer"},
                {"attention.position", "kind = \"none\"  # no positions"}},
               "Cohere 2: every sliding_window_pattern-th layer is global, "
               "without RoPE");
}

/// DeepSeek-V2 and V3: multi-head latent attention (a cached latent and
/// one shared rotary key), interleaved RoPE with YaRN, the first layers
/// dense and the rest routed plus shared experts.
void deepseek(Reader &r, Spec &s, const std::string &type) {
  const bool v3 = type == "deepseek_v3";
  modelTable(r, s, v3 ? 129280 : 102400, v3 ? 4096 : 2048, false);
  s.setStr("norm", "kind", "rmsnorm", "");
  s.setReal("norm", "eps", r.number("rms_norm_eps", 1e-6), "rms_norm_eps");
  s.setInt("attention", "n_heads", r.positive("num_attention_heads"),
           "num_attention_heads");
  // (MLA: every head reads the one latent; the field is not used.)
  r.known({"num_key_value_heads"});
  if (r.boolean("attention_bias", false))
    throw Failure{"attention_bias: true (MLA with projection biases) is not "
                  "supported by this import"};
  // (Absent: both config classes' 1536; null: no query bottleneck.)
  std::optional<int64_t> q = r.intOpt("q_lora_rank");
  if (!q && !r.present("q_lora_rank"))
    q = 1536;
  if (q && *q > 0)
    s.setInt("attention.mla", "q_lora_rank", *q, "q_lora_rank");
  s.setInt("attention.mla", "kv_lora_rank", r.positive("kv_lora_rank"),
           "kv_lora_rank");
  s.setInt("attention.mla", "qk_nope_head_dim",
           r.positive("qk_nope_head_dim"), "qk_nope_head_dim");
  s.setInt("attention.mla", "qk_rope_head_dim",
           r.positive("qk_rope_head_dim"), "qk_rope_head_dim");
  s.setInt("attention.mla", "v_head_dim", r.positive("v_head_dim"),
           "v_head_dim");
  rope(r, s, "attention.position", 10000.0);
  // (Hugging Face's DeepSeek-V3 may rotate half-split: rope_interleave.)
  if (!v3 || r.boolean("rope_interleave", true))
    s.setStr("attention.position", "style", "interleaved",
             "DeepSeek: rotary pairs interleaved");
  s.setStr("ffn", "kind", "glu", "");
  s.setStr("ffn", "activation",
           activation("hidden_act", r.stringOpt("hidden_act").value_or("silu")),
           "hidden_act");
  s.setInt("ffn", "d_ff", r.integer("intermediate_size"), "intermediate_size");
  // Training-only routing fields; the multi-token-prediction layers
  // (num_nextn_predict_layers) are not part of the next-token model.
  r.known({"aux_loss_alpha", "seq_aux", "ep_size", "num_nextn_predict_layers"});
  // The routing as DeepSeek's modeling code runs it: V2 softmax scores,
  // greedy or group-limited (a group scored by its best expert); V3
  // sigmoid scores with the selection bias, groups scored by their best
  // two (noaux_tc); with DeepseekV3Config's defaults for V3.
  std::optional<int64_t> experts = r.intOpt("n_routed_experts");
  if (!experts && v3 && !r.present("n_routed_experts"))
    experts = 256;
  if (!experts || *experts == 0) {
    s.setStr("weights", "naming", "hf-llama", "");
    return;
  }
  if (r.integer("moe_layer_freq", 1) != 1)
    throw Failure{"moe_layer_freq: only 1 (every layer after "
                  "first_k_dense_replace) is supported by this import"};
  s.setInt("moe", "n_experts", *experts, "n_routed_experts");
  int64_t topK = r.positive("num_experts_per_tok",
                             v3 ? std::optional<int64_t>(8) : std::nullopt);
  s.setInt("moe", "top_k", topK, "num_experts_per_tok");
  s.setInt("moe", "d_ff",
           r.positive("moe_intermediate_size",
                      v3 ? std::optional<int64_t>(2048) : std::nullopt),
           "moe_intermediate_size");
  const char *wantScoring = v3 ? "sigmoid" : "softmax";
  std::string scoring = r.stringOpt("scoring_func").value_or(wantScoring);
  if (scoring != wantScoring)
    throw Failure{"scoring_func: " + quoted(scoring) + " is not " +
                  "supported by this import (" + type + " routes with " +
                  wantScoring + " scores)"};
  s.setStr("moe", "router", v3 ? "sigmoid" : "softmax_topk", "scoring_func");
  std::string method =
      r.stringOpt("topk_method").value_or(v3 ? "noaux_tc" : "greedy");
  if (v3 ? method != "noaux_tc"
         : method != "greedy" && method != "group_limited_greedy")
    throw Failure{"topk_method: " + quoted(method) + " is not supported by "
                  "this import (" + type + ": " +
                  (v3 ? "noaux_tc" : "greedy, group_limited_greedy") + ")"};
  // (Both renormalize only more than one expert's weights.)
  bool norm = r.boolean("norm_topk_prob", v3) && topK > 1;
  s.setBool("moe", "normalize", norm, "norm_topk_prob");
  if (v3)
    s.setBool("moe", "selection_bias", true,
              "topk_method noaux_tc: e_score_correction_bias");
  if (method == "greedy") {
    r.known({"n_group", "topk_group"});
  } else if (int64_t groups = r.positive("n_group", v3 ? 8 : 1); groups > 1) {
    s.setInt("moe", "n_group", groups, "n_group");
    s.setInt("moe", "topk_group", r.positive("topk_group", v3 ? 4 : 1),
             "topk_group");
  } else {
    r.known({"topk_group"});
  }
  // DeepSeek-V2 scales the weights only when it does not renormalize
  // them; V3 always.
  double scale = r.number("routed_scaling_factor", v3 ? 2.5 : 1.0);
  if (scale != 1.0 && (v3 || !norm))
    s.setReal("moe", "routed_scaling", scale, "routed_scaling_factor");
  std::optional<int64_t> shared = r.intOpt("n_shared_experts");
  if (!shared && v3 && !r.present("n_shared_experts"))
    shared = 1;
  if (shared && *shared < 0)
    throw Failure{"n_shared_experts: must not be negative"};
  if (shared && *shared > 0)
    s.setInt("moe", "n_shared_experts", *shared, "n_shared_experts");
  if (int64_t dense = r.integer("first_k_dense_replace", v3 ? 3 : 0);
      dense > 0)
    s.setInt("moe", "first_k_dense", dense, "first_k_dense_replace");
  s.setStr("weights", "naming", "hf-llama", "");
}

/// Nemotron (Nemotron-4, Minitron): LayerNorm with biases scaling by
/// 1 + w (LayerNorm1P), partial RoPE, a squared-ReLU MLP without gate.
void nemotron(Reader &r, Spec &s) {
  int64_t heads = r.positive("num_attention_heads");
  int64_t d = modelTable(r, s, 256000, 4096, false);
  s.setStr("norm", "kind", "layernorm", "");
  s.setReal("norm", "eps", r.number("norm_eps", 1e-5), "norm_eps");
  s.setBool("norm", "bias", true, "Nemotron: LayerNorm1P");
  s.setReal("norm", "weight_offset", 1.0,
            "Nemotron: LayerNorm1P scales by 1 + w");
  s.setInt("attention", "n_heads", heads, "num_attention_heads");
  s.setInt("attention", "n_kv_heads", r.integer("num_key_value_heads", heads),
           "num_key_value_heads");
  int64_t headDim = headDimKey(r, s, d, heads);
  if (r.boolean("attention_bias", false)) {
    s.setBool("attention", "qkv_bias", true, "attention_bias");
    s.setBool("attention", "out_bias", true, "attention_bias");
  }
  rope(r, s, "attention.position", 10000.0);
  // (NeMo conversions also write rope_percent / rope_percentage, which
  // Hugging Face's code does not read: partial_rotary_factor decides.)
  r.known({"rope_percent", "rope_percentage"});
  partialRotary(r, s, headDim, 0.5);
  s.setStr("ffn", "kind", "mlp", "");
  s.setStr("ffn", "activation",
           activation("hidden_act",
                      r.stringOpt("hidden_act").value_or("relu2")),
           "hidden_act");
  s.setInt("ffn", "d_ff", r.integer("intermediate_size"), "intermediate_size");
  if (r.boolean("mlp_bias", false))
    s.setBool("ffn", "bias", true, "mlp_bias");
  s.setStr("weights", "naming", "hf-llama", "");
}

/// `name` (a directory's or a repository's) as a spec's model name.
std::string modelName(std::string name) {
  if (auto slash = name.find_last_of('/'); slash != std::string::npos)
    name = name.substr(slash + 1);
  std::string out;
  for (char c : name) {
    unsigned char u = static_cast<unsigned char>(c);
    out += std::isalnum(u) || c == '_' || c == '.' || c == '-'
               ? char(std::tolower(u))
               : '_';
  }
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out[0])))
    out.erase(0, 1);
  if (out.size() > 64)
    out.resize(64);
  return out.empty() ? "model" : out;
}

} // namespace

std::string hfModelTypes() {
  return "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, "
         "olmo2, phi3, gemma2, gemma3, gemma3_text, gpt2, gptj, gpt_neox, "
         "opt, bloom, falcon, cohere, cohere2, nemotron, deepseek_v2, "
         "deepseek_v3";
}

/// Whether `text` nests arrays and objects at most `limit` deep (outside
/// strings): llvm::json's parser recurses once per level.
static bool shallow(const std::string &text, int limit) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit)
        return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

bool importHFConfig(const std::string &text, const std::string &source,
                    std::string name, HFSpec &out, std::string &error) {
  if (!shallow(text, 32)) {
    error = source + ": arrays and objects nest more than 32 deep (a "
                     "config.json nests 3 or 4)";
    return false;
  }
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    error = source + ": not valid JSON: " + llvm::toString(parsed.takeError());
    return false;
  }
  const json::Object *top = parsed->getAsObject();
  if (!top) {
    error = source + ": a config.json holds a JSON object";
    return false;
  }
  try {
    Reader outer(*top);
    std::string type = outer.stringOpt("model_type").value_or("");
    if (type.empty())
      throw Failure{"model_type: missing: archc cannot tell the "
                    "architecture"};
    // Gemma 3's multimodal checkpoints keep the language model's fields
    // in text_config (the vision tower is not archc's).
    const json::Object *fields = top;
    if (type == "gemma3") {
      fields = outer.object("text_config");
      if (!fields)
        throw Failure{"text_config: missing (model_type gemma3)"};
      outer.known({"vision_config", "mm_tokens_per_image", "boi_token_index",
                   "eoi_token_index", "image_token_index",
                   "initializer_range", "architectures", "torch_dtype",
                   "transformers_version", "_name_or_path", "eos_token_id",
                   "bos_token_id", "pad_token_id"});
      type = "gemma3_text";
    }
    Reader r(*fields);
    common(r);
    if (name.empty())
      name = r.stringOpt("_name_or_path").value_or("");
    Spec s;
    s.setStr("model", "name", modelName(name), "");
    if (type == "llama" || type == "mistral" || type == "mixtral" ||
        type == "qwen2" || type == "qwen2_moe" || type == "qwen3" ||
        type == "qwen3_moe" || type == "olmo2" || type == "phi3")
      llamaFamily(r, s, type);
    else if (type == "gemma2" || type == "gemma3_text")
      gemmaFamily(r, s, type);
    else if (type == "gpt2")
      gpt2(r, s);
    else if (type == "gptj")
      gptj(r, s);
    else if (type == "gpt_neox")
      gptNeox(r, s);
    else if (type == "opt")
      opt(r, s);
    else if (type == "bloom")
      bloom(r, s, 2048);
    else if (type == "falcon")
      falcon(r, s);
    else if (type == "cohere" || type == "cohere2")
      cohere(r, s, type);
    else if (type == "deepseek_v2" || type == "deepseek_v3")
      deepseek(r, s, type);
    else if (type == "nemotron")
      nemotron(r, s);
    else
      throw Failure{"model_type: " + quoted(type) + " is not supported (archc "
                    "imports " + hfModelTypes() + ")"};
    out.unknown = r.unknown();
    for (const std::string &k : outer.unknown())
      if (fields != top && k != "text_config")
        out.unknown.push_back(k);
    std::string from = source; // (a comment line: no control bytes)
    for (char &c : from)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        c = '?';
    out.toml = s.text("# Imported by archc import-hf from " + from +
                      " (model_type \"" + type +
                      "\"); each key's comment names its field.\n");
    return true;
  } catch (const Failure &f) {
    error = source + ": " + f.message;
    return false;
  }
}

} // namespace arch
