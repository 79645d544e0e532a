//===- GGUFConfig.cpp - A GGUF file's metadata as a config.json -----------===//
#include "compiler/import/GGUFConfig.h"

// The runtime's bounded cursor over a GGUF file (every length checked
// against the file before use) and its value readers; the loops over the
// metadata and the tensor table are this file's (the runtime's header
// reader keeps only the keys its loader checks).
#include "../../runtime/src/gguf_read.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace arch {

namespace {

/// What the config needs of a GGUF file: its metadata's numbers, booleans
/// and strings by key, its arrays' lengths, and its tensors' dims.
struct GGUFMeta {
  std::map<std::string, double> numbers;
  std::map<std::string, bool> booleans;
  std::map<std::string, std::string> strings;
  std::map<std::string, uint64_t> arrays;
  std::map<std::string, std::vector<uint64_t>> tensors;
  /// The RoPE tables' values (rope_freqs.weight, Llama 3.1's scaling;
  /// rope_factors_long.weight and rope_factors_short.weight, LongRoPE's),
  /// by name, where one is F32, 1-D, of at most 4096 and inside the file.
  std::map<std::string, std::vector<float>> ropeTables;
};

/// `v` as JSON: integers without a fraction; reals in the fewest digits
/// that give v back (as a float where v is one: llama.cpp keeps most reals
/// as F32, so rms_norm_eps 1e-5 reads 9.99999975e-06).
std::string jsonNumber(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  bool single = std::fabs(v) <= FLT_MAX && double(float(v)) == v;
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    double back = std::strtod(buf, nullptr);
    if (single ? float(back) == float(v) : back == v)
      break;
  }
  return buf;
}

/// Whether `name` is one of the RoPE tables GGUFMeta keeps.
bool isRopeTable(const std::string &name) {
  return name == "rope_freqs.weight" || name == "rope_factors_long.weight" ||
         name == "rope_factors_short.weight";
}

/// Reads the header of a file's `size` bytes at `base` into `m`; false
/// with `why` on a malformed one.
bool readMeta(const uint8_t *base, size_t size, GGUFMeta &m,
              std::string &why) {
  if (!size) {
    why = "an empty file";
    return false;
  }
  cursor c = {base, base + size, nullptr};
  uint32_t magic = 0, version = 0;
  uint64_t nTensors = 0, nKV = 0;
  bool ok = false;
  // (Each RoPE table's offset and count, read once the data's start is
  // known.)
  std::map<std::string, std::pair<uint64_t, uint64_t>> tables;
  auto text = [](const uint8_t *s, uint64_t n) {
    return std::string(reinterpret_cast<const char *>(s), size_t(n));
  };
  do {
    if (!u32(&c, &magic) || std::memcmp(&magic, "GGUF", 4)) {
      why = "not a GGUF file";
      break;
    }
    if (!u32(&c, &version) || version != 3) {
      why = "GGUF version " + std::to_string(version) + " (archc reads 3)";
      break;
    }
    if (!u64(&c, &nTensors) || !u64(&c, &nKV) || nKV > GGUF_MAX_KV ||
        nTensors > GGUF_MAX_TENSORS) {
      why = "a header with more tensors or metadata entries than archc "
            "reads";
      break;
    }
    bool bad = false;
    for (uint64_t i = 0; i < nKV && !bad; ++i) {
      const uint8_t *key;
      uint64_t keyLen;
      uint32_t type;
      if (!str(&c, &key, &keyLen) || !u32(&c, &type)) {
        bad = true;
        break;
      }
      std::string k = text(key, keyLen);
      const uint8_t *at = c.p;
      double v;
      if (type == GV_STRING) {
        const uint8_t *s;
        uint64_t n;
        if (str(&c, &s, &n))
          m.strings[k] = text(s, std::min<uint64_t>(n, 4096));
      } else if (type == GV_BOOL) {
        uint8_t b;
        if (take(&c, &b, 1))
          m.booleans[k] = b != 0;
      } else if (type == GV_ARRAY) {
        uint32_t et;
        uint64_t n;
        cursor head = c;
        if (u32(&head, &et) && u64(&head, &n))
          m.arrays[k] = n;
        c.p = at;
        skip_value(&c, type, 0);
      } else if (number(&c, type, &v)) {
        m.numbers[k] = v;
      } else {
        c.p = at;
        skip_value(&c, type, 0);
      }
      bad = c.err != nullptr;
    }
    if (bad) {
      why = std::string("metadata: ") + (c.err ? c.err : "truncated");
      break;
    }
    for (uint64_t i = 0; i < nTensors && !bad; ++i) {
      const uint8_t *name;
      uint64_t nameLen, offset;
      uint32_t nDims, type;
      if (!str(&c, &name, &nameLen) || !u32(&c, &nDims) || nDims > 4 ||
          nameLen >= GGUF_MAX_NAME) {
        bad = true;
        break;
      }
      std::vector<uint64_t> dims(nDims);
      for (uint64_t &d : dims)
        if (!u64(&c, &d))
          bad = true;
      if (bad || !u32(&c, &type) || !u64(&c, &offset)) {
        bad = true;
        break;
      }
      std::string tensor = text(name, nameLen);
      m.tensors[tensor] = dims;
      if (isRopeTable(tensor) && type == GGML_F32 && nDims == 1 &&
          dims[0] <= 4096)
        tables[tensor] = {offset, dims[0]};
    }
    if (bad) {
      why = std::string("tensor table: ") +
            (c.err ? c.err : "a name of 256 bytes or more, or more than 4 "
                             "dims");
      break;
    }
    // The data section starts at the next multiple of general.alignment.
    // (Of any number type, a power of two in [1, 65536], as the runtime's
    // reader takes it.)
    auto align = m.numbers.find("general.alignment");
    double alignment = align == m.numbers.end() ? 32 : align->second;
    if (!(alignment >= 1 && alignment <= 65536) ||
        std::exp2(std::floor(std::log2(alignment))) != alignment) {
      why = "general.alignment " + jsonNumber(alignment) +
            " is not a power of two in [1, 65536]";
      break;
    }
    uint64_t a = uint64_t(alignment), start = uint64_t(c.p - base);
    start = (start + a - 1) / a * a;
    for (const auto &[tensor, at] : tables) {
      auto [offset, count] = at;
      if (count && start <= size && offset <= size - start &&
          count * 4 <= size - start - offset) {
        std::vector<float> &values = m.ropeTables[tensor];
        values.resize(count);
        std::memcpy(values.data(), base + start + offset, count * 4);
      }
    }
    ok = true;
  } while (false);
  return ok;
}

/// Whether `freqs` (rope_freqs.weight: a factor dividing each of the
/// head's headDim / 2 frequencies of base `theta`) is Llama 3.1's scaling
/// of some factor with low_freq_factor 1, high_freq_factor 4 and an
/// original context of 8192; `json` gets its rope_scaling.
bool llama3Factors(const std::vector<float> &freqs, double theta,
                   double headDim, std::string &json) {
  const double low = 1, high = 4, original = 8192;
  if (freqs.empty() || double(freqs.size()) * 2 != headDim)
    return false;
  double factor = *std::max_element(freqs.begin(), freqs.end());
  if (!(factor > 1) || !std::isfinite(factor))
    return false;
  for (size_t i = 0; i < freqs.size(); ++i) {
    double freq = 1 / std::pow(theta, double(2 * i) / headDim);
    double wavelen = 2 * M_PI / freq, want;
    if (wavelen < original / high)
      want = 1;
    else if (wavelen > original / low)
      want = factor;
    else {
      double smooth = (original / wavelen - low) / (high - low);
      want = 1 / ((1 - smooth) / factor + smooth);
    }
    if (!(std::fabs(double(freqs[i]) - want) <= 1e-4 * want))
      return false;
  }
  json = "{\"rope_type\": \"llama3\", \"factor\": " + jsonNumber(factor) +
         ", \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
         "\"original_max_position_embeddings\": 8192}";
  return true;
}

/// One architecture llama.cpp names in general.architecture: the
/// model_type of the config.json its converter read, and the
/// architecture's own keys this file reads beside the shared ones.
struct Family {
  const char *arch, *modelType;
  std::vector<const char *> keys;
};

const Family *familyOf(const std::string &arch) {
  static const Family families[] = {
      {"llama", "llama", {"expert_count", "expert_used_count"}},
      {"qwen2", "qwen2", {}},
      {"qwen2moe",
       "qwen2_moe",
       {"expert_count", "expert_used_count", "expert_feed_forward_length",
        "expert_shared_feed_forward_length"}},
      {"qwen3", "qwen3", {}},
      {"qwen3moe",
       "qwen3_moe",
       {"expert_count", "expert_used_count", "expert_feed_forward_length"}},
      {"gemma2",
       "gemma2",
       {"attention.sliding_window", "attn_logit_softcapping",
        "final_logit_softcapping"}},
      {"gemma3", "gemma3_text",
       {"attention.sliding_window", "final_logit_softcapping"}},
      // (Its attention.sliding_window is named unread: llama.cpp turns
      // Phi-3's window off; rope.scaling.attn_factor is read with
      // LongRoPE's tables only.)
      {"phi3", "phi3", {}}};
  for (const Family &f : families)
    if (arch == f.arch)
      return &f;
  return nullptr;
}

/// The config.json fields made from one file's metadata. A number read
/// by key is checked (finite, positive, an integer where it counts) and
/// named in the error where it is not; the first error is kept.
struct Config {
  const GGUFMeta &m;
  const std::string &path, &arch;
  std::vector<std::pair<std::string, std::string>> fields;
  std::string error;

  /// The architecture's key `suffix` (llama.cpp's names).
  std::string key(const std::string &suffix) const {
    return arch + "." + suffix;
  }
  const double *num(const std::string &suffix) const {
    auto it = m.numbers.find(key(suffix));
    return it == m.numbers.end() ? nullptr : &it->second;
  }
  /// Config field `field` from key `suffix` (else `def`, else absent, an
  /// error where `required`); false once anything failed.
  bool put(const std::string &field, const std::string &suffix, bool required,
           bool count, const double *def = nullptr) {
    if (!error.empty())
      return false;
    const double *v = num(suffix);
    if (!v)
      v = def;
    if (!v)
      return !required || fail("the metadata has no " + key(suffix) +
                               " (a number), which the spec needs");
    if (!valid(*v, suffix, count))
      return false;
    add(field, jsonNumber(*v));
    return true;
  }
  /// Whether `v`, key `suffix`'s value, is finite and positive (a whole
  /// number up to 1e12 where `count`); else the error naming the key.
  bool valid(double v, const std::string &suffix, bool count) {
    if (std::isfinite(v) && v > 0 &&
        (!count || (v == std::floor(v) && v <= 1e12)))
      return true;
    return fail(key(suffix) + " is " + jsonNumber(v) +
                (count ? ", not a positive integer" : ", not a positive number"));
  }
  /// put() where the file has the key and it is not 0 (llama.cpp's "none"
  /// for a window or a soft-cap); whether it was put.
  bool putIfSet(const std::string &field, const std::string &suffix,
                bool count) {
    const double *v = num(suffix);
    return v && *v != 0 && put(field, suffix, true, count);
  }
  void add(const std::string &field, const std::string &value) {
    fields.push_back({field, value});
  }
  /// False, with `why` about the file as the error.
  bool fail(const std::string &why) {
    if (error.empty())
      error = path + ": " + why;
    return false;
  }
  std::string json() const {
    std::string out = "{";
    for (size_t i = 0; i < fields.size(); ++i)
      out += (i ? ", \"" : "\"") + fields[i].first + "\": " + fields[i].second;
    return out + "}\n";
  }
};

/// Gemma 2 and 3 as llama.cpp runs them: the sliding window (Gemma 2's
/// even layers, 4096 where the file has none; Gemma 3's five layers of
/// six, none where the file has no window), Gemma 3's local layers at RoPE
/// base 10000 and only its global ones scaled (writeConfig takes linear
/// scaling alone for them), the soft-caps the file has (Gemma 2's
/// defaults 50 and 30 where it has none), and the query scale llama.cpp
/// picks by size: d / heads for its 27B models (46 layers for Gemma 2, 62
/// for Gemma 3), the head's width otherwise.
bool gemmaFields(Config &c, double headDim) {
  const bool g2 = c.arch == "gemma2";
  double layers = *c.num("block_count");
  double d = *c.num("embedding_length"), heads = *c.num("attention.head_count");
  bool big = layers == (g2 ? 46 : 62);
  c.add("query_pre_attn_scalar", jsonNumber(big ? std::floor(d / heads)
                                                : headDim));
  const double window = 4096;
  if (g2)
    return c.put("sliding_window", "attention.sliding_window", true, true,
                 &window) &&
           c.put("attn_logit_softcapping", "attn_logit_softcapping", false,
                 false) &&
           c.put("final_logit_softcapping", "final_logit_softcapping", false,
                 false);
  bool slides = c.putIfSet("sliding_window", "attention.sliding_window", true);
  if (!c.error.empty())
    return false;
  c.add("sliding_window_pattern", slides ? "6" : "1");
  c.add("rope_local_base_freq", "10000");
  // (Gemma 3 has no attention soft-cap.)
  c.putIfSet("final_logit_softcapping", "final_logit_softcapping", false);
  return c.error.empty();
}

/// Qwen2-MoE and Qwen3-MoE as llama.cpp runs them: every layer routed, the
/// top k renormalized for Qwen3-MoE only, an expert feed_forward_length /
/// expert_used_count wide and Qwen2-MoE's gated shared expert
/// feed_forward_length wide where the file does not say.
bool qwenMoeFields(Config &c) {
  const bool q3 = c.arch == "qwen3moe";
  if (!c.put("num_experts", "expert_count", true, true) ||
      !c.put("num_experts_per_tok", "expert_used_count", true, true))
    return false;
  double ff = *c.num("feed_forward_length");
  const double expert = std::floor(ff / *c.num("expert_used_count"));
  if (!c.put("moe_intermediate_size", "expert_feed_forward_length", true, true,
             &expert))
    return false;
  c.add("decoder_sparse_step", "1");
  c.add("mlp_only_layers", "[]");
  c.add("norm_topk_prob", q3 ? "true" : "false");
  if (q3)
    return true;
  c.add("qkv_bias", c.m.tensors.count("blk.0.attn_q.bias") ? "true" : "false");
  return c.put("shared_expert_intermediate_size",
               "expert_shared_feed_forward_length", true, true, &ff);
}

/// Phi-3's LongRoPE as llama.cpp's converter keeps it: the factors as two
/// F32 tensors of a factor per rotated pair, the original context as
/// rope.scaling.original_context_length, the attention factor as
/// rope.scaling.attn_factor (Hugging Face's own where absent).
bool longRoPEFields(Config &c, bool phi3, double headDim) {
  if (!phi3)
    return c.fail("rope_factors_long.weight / rope_factors_short.weight: "
                  "LongRoPE tables, which archc imports for phi3 files only");
  const double *dims = c.num("rope.dimension_count");
  double pairs = (dims ? *dims : headDim) / 2;
  std::string lists;
  for (const char *kind : {"short", "long"}) {
    std::string tensor = std::string("rope_factors_") + kind + ".weight";
    auto t = c.m.ropeTables.find(tensor);
    if (t == c.m.ropeTables.end() || double(t->second.size()) != pairs)
      return c.fail(tensor + ": LongRoPE needs it F32, a factor for each of "
                    "the " + jsonNumber(pairs) + " rotated pairs");
    std::string list;
    for (float f : t->second) {
      if (!(f > 0) || !std::isfinite(f))
        return c.fail(tensor + ": a factor that is not positive and finite");
      list += (list.empty() ? "" : ", ") + jsonNumber(f);
    }
    lists += std::string(", \"") + kind + "_factor\": [" + list + "]";
  }
  if (!c.put("original_max_position_embeddings",
             "rope.scaling.original_context_length", true, true))
    return false;
  std::string scaling = "{\"type\": \"longrope\"" + lists;
  if (const double *a = c.num("rope.scaling.attn_factor")) {
    if (!c.valid(*a, "rope.scaling.attn_factor", false))
      return false;
    scaling += ", \"attention_factor\": " + jsonNumber(*a);
  }
  c.add("rope_scaling", scaling + "}");
  return true;
}

/// The config of the file `c` reads, of architecture `family`; false with
/// c.error on a value a config cannot say or archc does not import. The
/// architecture's keys it does not read go to `unread`.
bool writeConfig(Config &c, const Family &family,
                 std::vector<std::string> &unread) {
  const GGUFMeta &m = c.m;
  const std::string &arch = c.arch;
  // The keys this reads; any other of the architecture's is named in a
  // warning, as config.json's unread fields are.
  static const char *const shared[] = {
      "embedding_length", "block_count", "feed_forward_length",
      "attention.head_count", "attention.head_count_kv",
      "attention.key_length", "attention.value_length", "context_length",
      "attention.layer_norm_rms_epsilon", "rope.freq_base",
      "rope.dimension_count", "rope.scaling.type", "rope.scaling.factor",
      "rope.scale_linear", "rope.scaling.original_context_length",
      "rope.scaling.finetuned", "vocab_size"};
  // Phi-3's LongRoPE keeps its factors as two tensors, and its
  // original context and attention factor as keys.
  bool longRoPE = m.tensors.count("rope_factors_long.weight") ||
                  m.tensors.count("rope_factors_short.weight");
  auto isKnown = [&](const std::string &k) {
    if (longRoPE && k == c.key("rope.scaling.attn_factor"))
      return true;
    for (const char *suffix : shared)
      if (k == c.key(suffix))
        return true;
    for (const char *suffix : family.keys)
      if (k == c.key(suffix))
        return true;
    return false;
  };
  auto unknown = [&](const std::string &k) {
    return k.rfind(arch + ".", 0) == 0 && !isKnown(k);
  };
  for (const auto &[k, v] : m.numbers)
    if (unknown(k))
      unread.push_back(k);
  for (const auto &[k, v] : m.strings)
    if (unknown(k))
      unread.push_back(k);
  for (const auto &[k, v] : m.booleans)
    if (unknown(k))
      unread.push_back(k);
  for (const auto &[k, v] : m.arrays)
    if (k.rfind(arch + ".", 0) == 0) {
      // (A per-layer array where one value is expected.)
      if (isKnown(k))
        return c.fail(k + " is an array (a value a layer): archc imports "
                          "one value for all layers");
      unread.push_back(k);
    }
  const bool gemma = arch == "gemma2" || arch == "gemma3";
  const bool phi3 = arch == "phi3";
  double expertCount = c.num("expert_count") ? *c.num("expert_count") : 0;
  bool mixtral = arch == "llama" && expertCount > 0;
  c.add("model_type",
        "\"" + std::string(mixtral ? "mixtral" : family.modelType) + "\"");
  // (llama.cpp's own defaults where the file has none: a base of 10000,
  // as many key/value heads as heads.)
  const double theta = 10000;
  const double *heads = c.num("attention.head_count");
  if (!c.put("hidden_size", "embedding_length", true, true) ||
      !c.put("num_hidden_layers", "block_count", true, true) ||
      !c.put("intermediate_size", "feed_forward_length", true, true) ||
      !c.put("num_attention_heads", "attention.head_count", true, true) ||
      !c.put("num_key_value_heads", "attention.head_count_kv", true, true,
             heads) ||
      !c.put("max_position_embeddings", "context_length", true, true) ||
      !c.put("rms_norm_eps", "attention.layer_norm_rms_epsilon", true,
             false) ||
      !c.put("rope_theta", "rope.freq_base", false, false, &theta) ||
      (mixtral &&
       (!c.put("num_local_experts", "expert_count", true, true) ||
        !c.put("num_experts_per_tok", "expert_used_count", true, true))))
    return false;
  // A head's width: key_length, else d / heads (llama.cpp's default; a
  // config without head_dim would give Qwen 3 its class's 128).
  const double *keyLength = c.num("attention.key_length");
  const double *valueLength = c.num("attention.value_length");
  double headDim = keyLength ? *keyLength : *c.num("embedding_length") / *heads;
  if (headDim != std::floor(headDim) || !(headDim > 0 && headDim <= 65536) ||
      (valueLength && *valueLength != headDim))
    return c.fail(
        "a head " + jsonNumber(headDim) + " wide" +
        (valueLength && *valueLength != headDim
             ? " for keys and " + jsonNumber(*valueLength) + " for values (" +
                   c.key("attention.value_length") +
                   "), which a config cannot say"
             : " (" +
                   (keyLength ? c.key("attention.key_length")
                              : c.key("embedding_length") + " / " +
                                    c.key("attention.head_count")) +
                   "), not an integer in [1, 65536]"));
  c.add("head_dim", jsonNumber(headDim));
  // RoPE over part of the head (Phi-3's config can say it), or scaled.
  const double *ropeDims = c.num("rope.dimension_count");
  if (ropeDims && *ropeDims != headDim) {
    double dims = *ropeDims;
    if (!(dims > 0 && dims < headDim) || dims != std::floor(dims) ||
        std::fmod(dims, 2) != 0)
      return c.fail(c.key("rope.dimension_count") + " " + jsonNumber(dims) +
                    ": not an even width within the head of " +
                    jsonNumber(headDim));
    if (!phi3 || double(int64_t(headDim * (dims / headDim))) != dims)
      return c.fail(c.key("rope.dimension_count") + " " + jsonNumber(dims) +
                    " rotates part of a head of " + jsonNumber(headDim) +
                    ", which archc does not import for " + arch);
    c.add("partial_rotary_factor", jsonNumber(dims / headDim));
  }
  if (longRoPE && m.tensors.count("rope_freqs.weight"))
    return c.fail("both rope_freqs.weight and LongRoPE's rope_factors "
                  "tensors: which scales is not clear");
  if (longRoPE && !longRoPEFields(c, phi3, headDim))
    return false;
  // Llama 3.1's RoPE scaling, kept as a factor per frequency: the
  // parameters that give that table (as llama.cpp's converter computes
  // it), with the low and high frequency factors and original length all
  // Llama 3.x models use.
  std::string llama3Scaling;
  if (m.tensors.count("rope_freqs.weight")) {
    double base = c.num("rope.freq_base") ? *c.num("rope.freq_base") : theta;
    auto freqs = m.ropeTables.find("rope_freqs.weight");
    if (freqs == m.ropeTables.end() ||
        !llama3Factors(freqs->second, base, headDim, llama3Scaling))
      return c.fail("a rope_freqs.weight tensor (RoPE scaling, kept as a "
                    "factor per frequency) that is not Llama 3.1's scaling "
                    "with low_freq_factor 1, high_freq_factor 4 and an "
                    "original context of 8192: archc does not import it "
                    "(give the model's config.json, and the file as "
                    "--weights)");
    c.add("rope_scaling", llama3Scaling);
  }
  // (llama.cpp: a factor without a type, or the older scale_linear, is
  // linear scaling; YaRN's original length defaults to context_length.)
  auto scaling = m.strings.find(c.key("rope.scaling.type"));
  const double *factor = c.num("rope.scaling.factor");
  if (!factor)
    factor = c.num("rope.scale_linear");
  std::string type = scaling != m.strings.end() ? scaling->second
                     : factor                  ? "linear"
                                               : "none";
  if ((!llama3Scaling.empty() || longRoPE) && type != "none")
    return c.fail(std::string("both a ") +
                  (longRoPE ? "rope_factors" : "rope_freqs.weight") +
                  " tensor and " +
                  c.key("rope.scaling.type") + " \"" + type.substr(0, 40) +
                  "\": which scales is not clear");
  if (type != "none" && !(factor && *factor == 1 && type == "linear")) {
    if (!factor || !std::isfinite(*factor) || *factor <= 0 ||
        (type != "linear" && type != "yarn"))
      return c.fail(c.key("rope.scaling.type") + " \"" + type.substr(0, 40) +
                    "\"" +
                    (factor ? "" : " without " + c.key("rope.scaling.factor")) +
                    ": archc imports linear and yarn scaling");
    if (arch == "gemma3" && type != "linear")
      return c.fail(c.key("rope.scaling.type") + " \"" + type.substr(0, 40) +
                    "\": Gemma 3's global layers scale linearly (archc "
                    "imports no other scaling for them)");
    std::string rs = "{\"type\": \"" + type +
                     "\", \"factor\": " + jsonNumber(*factor);
    if (type == "yarn") {
      const double *orig = c.num("rope.scaling.original_context_length");
      if (orig && !c.valid(*orig, "rope.scaling.original_context_length", true))
        return false;
      rs += ", \"original_max_position_embeddings\": " +
            jsonNumber(orig ? *orig : *c.num("context_length"));
    }
    c.add("rope_scaling", rs + "}");
  }
  // The vocabulary: the embedding's rows (a tokenizer may have fewer).
  auto embed = m.tensors.find("token_embd.weight");
  if (embed == m.tensors.end() || embed->second.size() != 2)
    return c.fail("no token_embd.weight of 2 dims (the vocabulary)");
  c.add("vocab_size", jsonNumber(double(embed->second[1])));
  c.add("tie_word_embeddings",
        m.tensors.count("output.weight") ? "false" : "true");
  // Biases, as the tensor table has them (Qwen 2's q/k/v ones are the
  // family's own).
  if (arch == "llama") {
    bool qBias = m.tensors.count("blk.0.attn_q.bias") != 0;
    bool oBias = m.tensors.count("blk.0.attn_output.bias") != 0;
    if (qBias != oBias)
      return c.fail("blk.0.attn_q.bias and blk.0.attn_output.bias: one "
                    "without the other, which a llama config cannot say");
    if (qBias)
      c.add("attention_bias", "true");
  }
  if (m.tensors.count("blk.0.ffn_up.bias"))
    c.add("mlp_bias", "true");
  if (gemma)
    return gemmaFields(c, headDim);
  if (arch == "qwen2moe" || arch == "qwen3moe")
    return qwenMoeFields(c);
  return true;
}

} // namespace

bool isGGUFFile(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return false;
  struct stat st;
  char magic[4] = {0};
  bool yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             pread(fd, magic, 4, 0) == 4 && !std::memcmp(magic, "GGUF", 4);
  close(fd);
  return yes;
}

namespace {

/// Runs `read` on file `path`'s bytes, mapped for the call; false with
/// `error` where the file cannot be opened or mapped, or `read` fails.
bool withMappedFile(const std::string &path, std::string &error,
                    const std::function<bool(const uint8_t *, size_t)> &read) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    error = path + ": not a regular file";
    return false;
  }
  size_t size = size_t(st.st_size);
  void *data = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0)
                    : MAP_FAILED;
  close(fd);
  if (size && data == MAP_FAILED) {
    error = path + ": cannot map: " + std::strerror(errno);
    return false;
  }
  bool ok = read(size ? static_cast<const uint8_t *>(data) : nullptr, size);
  if (size)
    munmap(data, size);
  return ok;
}

} // namespace

bool ggufConfigJSON(const std::string &path, std::string &json,
                    std::vector<std::string> &unread, std::string &error) {
  return withMappedFile(path, error, [&](const uint8_t *data, size_t size) {
    return ggufConfigJSONFromBytes(data, size, path, json, unread, error);
  });
}

bool ggufChatTemplate(const std::string &path, std::string &tmpl,
                      std::string &bos, std::string &eos, std::string &error) {
  return withMappedFile(path, error, [&](const uint8_t *base, size_t size) {
    cursor c = {base, base + size, nullptr};
    uint32_t magic = 0, version = 0;
    uint64_t nTensors = 0, nKV = 0;
    if (!u32(&c, &magic) || std::memcmp(&magic, "GGUF", 4) ||
        !u32(&c, &version) || version != 3 || !u64(&c, &nTensors) ||
        !u64(&c, &nKV) || nKV > GGUF_MAX_KV) {
      error = path + ": not a GGUF version 3 file";
      return false;
    }
    bool found = false;
    double ids[2] = {-1, -1}; // BOS, EOS
    cursor tokens = {nullptr, nullptr, nullptr};
    uint64_t nTokens = 0;
    for (uint64_t i = 0; i < nKV && !c.err; ++i) {
      const uint8_t *key, *s;
      uint64_t keyLen, n;
      uint32_t type, et;
      if (!str(&c, &key, &keyLen) || !u32(&c, &type))
        break;
      std::string k(reinterpret_cast<const char *>(key), size_t(keyLen));
      const uint8_t *at = c.p;
      double v;
      if (k == "tokenizer.chat_template" && type == GV_STRING &&
          str(&c, &s, &n)) {
        tmpl.assign(reinterpret_cast<const char *>(s), size_t(n));
        found = true;
        continue;
      }
      if ((k == "tokenizer.ggml.bos_token_id" ||
           k == "tokenizer.ggml.eos_token_id") &&
          number(&c, type, &v)) {
        ids[k == "tokenizer.ggml.eos_token_id"] = v;
        continue;
      }
      if (k == "tokenizer.ggml.tokens" && type == GV_ARRAY) {
        cursor head = c;
        if (u32(&head, &et) && u64(&head, &n) && et == GV_STRING) {
          tokens = head;
          nTokens = n;
        }
      }
      c.p = at;
      c.err = nullptr;
      skip_value(&c, type, 0);
    }
    if (c.err) {
      error = path + ": metadata: " + c.err;
      return false;
    }
    if (!found) {
      error = path + ": no tokenizer.chat_template in the metadata";
      return false;
    }
    // The special tokens' texts, by id in tokenizer.ggml.tokens.
    std::string *texts[2] = {&bos, &eos};
    for (uint64_t i = 0; tokens.p && i < nTokens; ++i) {
      const uint8_t *s;
      uint64_t n;
      if (!str(&tokens, &s, &n))
        break;
      for (int j = 0; j < 2; ++j)
        if (ids[j] == double(i))
          texts[j]->assign(reinterpret_cast<const char *>(s), size_t(n));
    }
    return true;
  });
}

bool ggufConfigJSONFromBytes(const uint8_t *data, size_t size,
                             const std::string &path, std::string &json,
                             std::vector<std::string> &unread,
                             std::string &error) {
  GGUFMeta m;
  std::string why;
  if (!readMeta(data, size, m, why)) {
    error = path + ": " + why;
    return false;
  }
  auto str = m.strings.find("general.architecture");
  if (str == m.strings.end()) {
    error = path + ": no general.architecture in the metadata";
    return false;
  }
  const std::string arch = str->second;
  const Family *family = familyOf(arch);
  if (!family) {
    std::string shown;
    for (char ch : arch.substr(0, 40))
      shown += ch >= 0x20 && ch < 0x7f ? ch : '?';
    error = path + ": general.architecture \"" + shown + "\": archc makes "
            "a spec of llama, qwen2, qwen2moe, qwen3, qwen3moe, gemma2, "
            "gemma3 and phi3 GGUF files (for this one, give a spec or the "
            "model's config.json, and the file as --weights)";
    return false;
  }
  Config c{m, path, arch, {}, {}};
  if (!writeConfig(c, *family, unread)) {
    error = c.error;
    return false;
  }
  json = c.json();
  return true;
}

} // namespace arch
