//===- SpecParser.cpp - TOML spec -> ArchSpec -----------------------------===//
//
// Reads a TOML architecture spec with TOML++, checks every key's type and
// value, rejects unknown keys with a suggestion, and validates dimensions
// across sections. Every error names file:line:col and the dotted key.
//
//===----------------------------------------------------------------------===//
#include "compiler/spec/ArchSpec.h"
#include "compiler/spec/Checkpoint.h"

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmath>
#include <set>
#include <sstream>

namespace arch {

std::string SourceLoc::str() const {
  std::ostringstream os;
  os << file;
  if (line)
    os << ":" << line << ":" << col;
  return os.str();
}

std::string SpecError::str() const {
  std::string s = loc.str() + ": error: ";
  if (!key.empty())
    s += key + ": ";
  return s + message;
}

SourceLoc ArchSpec::locOf(const std::string &path) const {
  std::string p = path;
  while (true) {
    auto it = locs.find(p);
    if (it != locs.end())
      return it->second;
    auto dot = p.rfind('.');
    if (dot == std::string::npos)
      break;
    p = p.substr(0, dot);
  }
  return SourceLoc{file, 0, 0};
}


using namespace spec;

namespace {

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// The closest of `candidates` to `word`, if it is close enough to be a typo.
std::string suggest(const std::string &word,
                    const std::vector<std::string> &candidates) {
  std::string best;
  size_t bestDist = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string &c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

/// Every dotted key deeper than this is rejected before TOML++ sees it: its
/// parser recurses once per key component.
constexpr int kMaxKeyDepth = 64;

/// What a lexical pass finds wrong before TOML++ parses the text.
struct LexProblem {
  unsigned line = 0, col = 0; ///< 0: none
  std::string message;
};

/// What TOML++ 3.3 does not survive, found without parsing: a dotted
/// key of more than kMaxKeyDepth components (its parser recurses per
/// component and overflows the stack), and a non-ASCII byte outside a
/// comment (its whitespace classifier reaches __builtin_unreachable on some
/// code points, and it classifies bytes ahead of a bad value; every string a
/// spec holds is ASCII anyway); control bytes, which TOML forbids
/// everywhere, are refused first. Strings and comments are
/// skipped; a chain of key segments is broken by any character that cannot
/// continue a key.
LexProblem lexCheck(const std::string &text) {
  unsigned line = 1, col = 0;
  int depth = 0;
  // A UTF-8 byte-order mark may open the file.
  size_t start = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  for (size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    ++col;
    // TOML allows no control character but tab and line breaks anywhere,
    // not even in strings (they must be escaped) or comments.
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' &&
         c != '\r') ||
        c == 0x7f) {
      char hex[8];
      snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(c));
      return {line, col, std::string("control byte ") + hex};
    }
    if (c == '\n') {
      ++line;
      col = 0;
      depth = 0;
      continue;
    }
    if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n')
        ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      // A quoted key segment or a string value: skip to its end.
      bool multi = text.compare(i, 3, std::string(3, c)) == 0;
      size_t j = i + (multi ? 3 : 1);
      for (; j < text.size(); ++j) {
        unsigned char b = static_cast<unsigned char>(text[j]);
        if (b >= 0x80 || (b < 0x20 && b != '\t' && b != '\n' && b != '\r') ||
            b == 0x7f) {
          char hex[8];
          snprintf(hex, sizeof hex, "0x%02x", b);
          return {line, col + 1,
                  std::string(b >= 0x80 ? "non-ASCII" : "control") + " byte " +
                      hex + " in a string (spec strings are ASCII)"};
        }
        if (c == '"' && text[j] == '\\') {
          ++j;
          continue;
        }
        // A one-line string ends at the line's end (TOML++ reports it).
        if (text[j] == '\n' && !multi) {
          --j;
          break;
        }
        if (text[j] == '\n') {
          ++line;
          col = 0;
        }
        if (text[j] == c && (!multi || text.compare(j, 3, std::string(3, c)) == 0)) {
          j += multi ? 2 : 0;
          break;
        }
        ++col;
      }
      i = j;
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      char hex[8];
      snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(c));
      return {line, col,
              std::string("non-ASCII byte ") + hex +
                  " outside a comment (spec text is ASCII but for comments)"};
    }
    if (c == '.') {
      if (++depth > kMaxKeyDepth)
        return {line, col,
                "dotted key with more than " + std::to_string(kMaxKeyDepth) +
                    " components"};
    } else if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
                 c == '-' || c == ' ' || c == '\t')) {
      depth = 0;
    }
  }
  return {};
}

} // namespace

const std::vector<KeyBound> &keyBounds() {
  // Products of these stay far inside int64 (parameter counts reach about
  // 2^52), widths times the 256-row chunk inside int32, and every float
  // derived from them (RoPE frequencies, scales, caps) finite in f32.
  static const std::vector<KeyBound> bounds = {
      {"vocab_size", 1, 1 << 22, true, "int32 ids; a chunk of logits < 2^31"},
      {"d_model", 1, 1 << 16, true, "weights and activations inside int64 / int32"},
      {"n_layers", 1, 4096, true, "parameter counts inside int64"},
      {"max_seq_len", 1, 1 << 24, true, "positions inside int32 and f32"},
      {"n_heads", 1, 1024, true, "n_heads * head_dim inside 2^20"},
      {"n_kv_heads", 1, 1024, true, "as n_heads"},
      {"head_dim", 1, 1024, true, "as n_heads"},
      {"d_ff", 1, 1 << 20, true, "a chunk of FFN activations < 2^31"},
      {"window", 0, 1 << 24, true, "as max_seq_len (0 = none)"},
      {"dilation", 1, 1 << 16, true, "window * dilation, as max_seq_len"},
      {"global_tokens", 0, (1 << 24) - 1, true, "positions, as max_seq_len"},
      {"random_blocks", 0, 16, true, "hash terms per query block in the kernel"},
      {"block_size", 1, 1 << 16, true, "positions, as max_seq_len"},
      {"random_seed", 0, 0x7fffffff, true, "a 32-bit hash's seed"},
      {"rotary_dim", 1, 1024, true, "at most head_dim"},
      {"offset", 0, 1 << 16, true, "learned-position offset; layer-selector offset"},
      {"original_max_seq_len", 1, 1 << 24, true, "as max_seq_len"},
      {"buckets", 2, 1 << 16, true, "T5 bias table rows"},
      {"max_distance", 2, 1 << 24, true, "as max_seq_len"},
      {"clip", 1, 1 << 16, true, "Shaw tables of 2 clip + 1 rows"},
      {"every", 1, 4096, true, "as n_layers"},
      {"first", 1, 4096, true, "as n_layers"},
      {"layers", 0, 4095, true, "layer indices, as n_layers"},
      {"n_experts", 1, 4096, true, "expert weights and routing tables inside int32"},
      {"top_k", 1, 64, true, "routed rows (a chunk's tokens x top_k) inside int32"},
      {"n_shared_experts", 0, 64, true, "as top_k"},
      {"shared_d_ff", 1, 1 << 20, true, "as d_ff"},
      {"n_group", 1, 4096, true, "as n_experts"},
      {"topk_group", 1, 4096, true, "as n_experts"},
      {"first_k_dense", 0, 4096, true, "as n_layers"},
      {"q_lora_rank", 0, 1 << 16, true, "as d_model (0 = no query bottleneck)"},
      {"kv_lora_rank", 1, 1 << 16, true, "as d_model"},
      {"qk_nope_head_dim", 1, 1024, true, "as head_dim"},
      {"qk_rope_head_dim", 2, 1024, true, "as head_dim"},
      {"v_head_dim", 1, 1024, true, "as head_dim"},
      {"routed_scaling", 1e-6, 1e6, false, "expert weights finite in f32"},
      {"eps", 1e-12, 1, false, "added to a variance in f32"},
      {"theta", 1, 1e12, false, "RoPE frequencies theta^(-2i/d) normal in f32"},
      {"scale", 1e-6, 1e6, false, "attention scores finite in f32"},
      {"softcap", 1e-3, 1e6, false, "c * tanh(x / c) finite in f32"},
      {"final_softcap", 1e-3, 1e6, false, "as softcap"},
      {"embedding_scale", 1e-6, 1e6, false, "embeddings finite in f32"},
      {"weight_offset", 1e-6, 1e3, false, "norm weights finite in f32"},
      {"factor", 1e-3, 1e6, false, "scaled RoPE frequencies finite in f32"},
      {"low_freq_factor", 1e-3, 1e6, false, "as factor"},
      {"high_freq_factor", 1e-3, 1e6, false, "as factor"},
      {"beta_fast", 1e-3, 1e6, false, "as factor"},
      {"beta_slow", 1e-3, 1e6, false, "as factor"},
      {"mscale", 1e-3, 1e3, false, "as factor"},
      {"mscale_all_dim", 0, 1e3, false, "as factor (0 = YaRN's own factor)"},
      {"short_factor", 1e-3, 1e6, false, "as factor"},
      {"long_factor", 1e-3, 1e6, false, "as factor"},
      {"attention_factor", 1e-3, 1e3, false, "as factor"},
      {"z_loss", 1e-12, 1e3, false, "reported only"},
      {"logit_scale", 1e-6, 1e6, false, "logits finite in f32"},
  };
  return bounds;
}

const KeyBound *findKeyBound(const std::string &key) {
  std::string leaf = key.substr(key.rfind('.') + 1);
  for (const KeyBound &b : keyBounds())
    if (leaf == b.key)
      return &b;
  return nullptr;
}

namespace {

/// Why `name` cannot name a model ("" if it can): it becomes the library's
/// file name and appears in generated C.
std::string modelNameProblem(const std::string &name) {
  if (name.empty())
    return "must not be empty";
  if (name.size() > kMaxModelNameLength)
    return "is " + std::to_string(name.size()) + " bytes long; at most " +
           std::to_string(kMaxModelNameLength) + " are allowed";
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool ok = std::isalnum(c) || (i > 0 && (c == '_' || c == '.' || c == '-'));
    if (!ok || c >= 0x80) {
      char hex[8];
      snprintf(hex, sizeof hex, "0x%02x", c);
      return std::string("byte ") + hex + " at offset " + std::to_string(i) +
             " is not allowed: a model name is letters, digits, '_', '.' and "
             "'-', starting with a letter or digit";
    }
  }
  return "";
}

std::string formatBound(double v, bool integer) {
  std::ostringstream os;
  if (integer)
    os << static_cast<int64_t>(v);
  else
    os << v;
  return os.str();
}

class Parser {
public:
  Parser(std::string file, std::vector<SpecError> &errors)
      : file(std::move(file)), errors(errors), sink(&errors) {}

  SourceLoc loc(const toml::source_region &r) const {
    return SourceLoc{file, static_cast<unsigned>(r.begin.line),
                     static_cast<unsigned>(r.begin.column)};
  }
  void error(const SourceLoc &l, const std::string &key,
             const std::string &msg) {
    sink->push_back(SpecError{l, key, msg});
  }

  std::string file;
  std::vector<SpecError> &errors;
  /// Where errors go: `errors`, or a scratch list while an override is
  /// applied to its second and later layers (one report per key).
  std::vector<SpecError> *sink;
  ArchSpec spec;
};

/// Reads one TOML table, remembering which keys were consumed so that the
/// rest can be reported as unknown.
class TableReader {
public:
  TableReader(Parser &p, const toml::table *tbl, std::string path,
              std::vector<std::string> keys)
      : p(p), tbl(tbl), path(std::move(path)), keys(std::move(keys)) {
    if (tbl)
      p.spec.locs[this->path] = p.loc(tbl->source());
  }

  bool present() const { return tbl != nullptr; }

  const toml::node *node(const std::string &key) {
    if (!tbl)
      return nullptr;
    const toml::node *n = tbl->get(key);
    if (n)
      p.spec.locs[full(key)] = p.loc(n->source());
    return n;
  }

  std::string full(const std::string &key) const {
    return path.empty() ? key : path + "." + key;
  }

  void missing(const std::string &key) {
    SourceLoc l = tbl ? p.loc(tbl->source()) : SourceLoc{p.file, 0, 0};
    p.error(l, full(key),
            tbl ? "missing required key"
                : "missing required key (table [" + path + "] is absent)");
  }

  void wrongType(const toml::node *n, const std::string &key,
                 const char *want) {
    p.error(p.loc(n->source()), full(key),
            std::string("expected ") + want + ", got " + typeName(n));
  }

  static const char *typeName(const toml::node *n) {
    switch (n->type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date/time";
    }
  }

  /// Reports `v` outside the key's bound (keyBounds()); true if inside.
  bool inBounds(const toml::node &n, const std::string &key, double v) {
    const KeyBound *b = findKeyBound(key);
    if (!b || (v >= b->min && v <= b->max))
      return true;
    std::string got = b->integer ? std::to_string(*n.value<int64_t>())
                                 : formatBound(v, false);
    std::string msg =
        v < b->min ? "must be >= " + formatBound(b->min, b->integer)
                   : "must be <= " + formatBound(b->max, b->integer);
    msg += ", got " + got;
    // The lower bound of an integer is its meaning; any other is a limit.
    if (!(b->integer && v < b->min))
      msg += std::string(" (limit: ") + b->why + ")";
    p.error(p.loc(n.source()), full(key), msg);
    return false;
  }

  /// An integer key within its bound; `required` ones report their absence.
  std::optional<int64_t> getInt(const std::string &key, bool required) {
    const toml::node *n = node(key);
    if (!n) {
      if (required)
        missing(key);
      return std::nullopt;
    }
    auto v = n->value_exact<int64_t>();
    if (!n->is_integer() || !v) {
      wrongType(n, key, "an integer");
      return std::nullopt;
    }
    if (!inBounds(*n, key, double(*v)))
      return std::nullopt;
    return *v;
  }

  /// A positive float key within its bound; integers are accepted.
  std::optional<double> getFloat(const std::string &key, bool required) {
    const toml::node *n = node(key);
    if (!n) {
      if (required)
        missing(key);
      return std::nullopt;
    }
    double v;
    if (n->is_floating_point())
      v = *n->value<double>();
    else if (n->is_integer())
      v = static_cast<double>(*n->value<int64_t>());
    else {
      wrongType(n, key, "a number");
      return std::nullopt;
    }
    if (!(v > 0) || !std::isfinite(v)) {
      p.error(p.loc(n->source()), full(key),
              "must be a positive finite number");
      return std::nullopt;
    }
    if (!inBounds(*n, key, v))
      return std::nullopt;
    return v;
  }

  std::optional<bool> getBool(const std::string &key) {
    const toml::node *n = node(key);
    if (!n)
      return std::nullopt;
    if (!n->is_boolean()) {
      wrongType(n, key, "a boolean");
      return std::nullopt;
    }
    return *n->value<bool>();
  }

  std::optional<std::string> getString(const std::string &key, bool required) {
    const toml::node *n = node(key);
    if (!n) {
      if (required)
        missing(key);
      return std::nullopt;
    }
    if (!n->is_string()) {
      wrongType(n, key, "a string");
      return std::nullopt;
    }
    return *n->value<std::string>();
  }

  /// A string key restricted to `choices`; returns the index of the choice.
  std::optional<size_t> getEnum(const std::string &key,
                                const std::vector<std::string> &choices) {
    auto s = getString(key, false);
    if (!s)
      return std::nullopt;
    for (size_t i = 0; i < choices.size(); ++i)
      if (*s == choices[i])
        return i;
    std::string list;
    for (const auto &c : choices)
      list += (list.empty() ? "" : ", ") + ("\"" + c + "\"");
    std::string msg = "unknown value \"" + *s + "\" (expected one of " + list + ")";
    std::string guess = suggest(*s, choices);
    if (!guess.empty())
      msg += "; did you mean \"" + guess + "\"?";
    p.error(p.loc(tbl->get(key)->source()), full(key), msg);
    return std::nullopt;
  }

  /// Key `key`'s array, each element read by `element` (none where it is
  /// not one: an error saying `expected`) within the key's bound; none
  /// (and an error) on a bad element or a value of another type (`what`).
  template <class T, class F>
  std::optional<std::vector<T>> getArray(const std::string &key,
                                         const char *what,
                                         const char *expected, F element) {
    const toml::node *n = node(key);
    if (!n)
      return std::nullopt;
    if (!n->is_array()) {
      wrongType(n, key, what);
      return std::nullopt;
    }
    std::vector<T> out;
    for (const toml::node &e : *n->as_array()) {
      std::optional<T> v = element(e);
      if (!v) {
        p.error(p.loc(e.source()), full(key), expected);
        return std::nullopt;
      }
      if (!inBounds(e, key, double(*v)))
        return std::nullopt;
      out.push_back(*v);
    }
    return out;
  }

  /// An array of integers >= 0; none (and an error) on a bad element.
  std::optional<std::vector<int64_t>> getIntArray(const std::string &key) {
    return getArray<int64_t>(
        key, "an array of integers", "expected non-negative integers",
        [](const toml::node &e) -> std::optional<int64_t> {
          auto v = e.value_exact<int64_t>();
          if (!e.is_integer() || !v || *v < 0)
            return std::nullopt;
          return *v;
        });
  }

  /// An array of positive finite numbers within the key's bound; none
  /// (and an error) on a bad element.
  std::optional<std::vector<double>> getFloatArray(const std::string &key) {
    return getArray<double>(
        key, "an array of numbers", "expected positive finite numbers",
        [](const toml::node &e) -> std::optional<double> {
          std::optional<double> v;
          if (e.is_floating_point())
            v = *e.value<double>();
          else if (e.is_integer())
            v = static_cast<double>(*e.value<int64_t>());
          if (!v || !(*v > 0) || !std::isfinite(*v))
            return std::nullopt;
          return v;
        });
  }

  const toml::table *subtable(const std::string &key) {
    const toml::node *n = node(key);
    if (!n)
      return nullptr;
    if (!n->is_table()) {
      wrongType(n, key, "a table");
      return nullptr;
    }
    return n->as_table();
  }

  /// Reports every key of the table that no getter asked for.
  void finish() {
    if (!tbl)
      return;
    for (auto &&[k, v] : *tbl) {
      std::string key(k.str());
      if (std::find(keys.begin(), keys.end(), key) != keys.end())
        continue;
      std::string msg = "unknown key";
      std::string guess = suggest(key, keys);
      if (!guess.empty())
        msg += "; did you mean '" + guess + "'?";
      p.error(p.loc(k.source()), full(key), msg);
    }
  }

private:
  Parser &p;
  const toml::table *tbl;
  std::string path;
  std::vector<std::string> keys;
};

/// In the order of spec::Activation.
const std::vector<std::string> &activationNames() {
  static const std::vector<std::string> names = {
      "silu", "gelu", "gelu_tanh", "gelu_sigmoid", "relu", "squared_relu",
      "sigmoid", "identity"};
  return names;
}

/// The attention keys a layer override may set too (shapes stay global).
void parseLayerAttention(Parser &p, TableReader &attn, AttentionSpec &a,
                         const std::string &path) {
  if (auto v = attn.getFloat("scale", false))
    a.scale = *v;
  if (auto v = attn.getFloat("softcap", false))
    a.softcap = *v;
  if (auto k = attn.getEnum("qk_norm",
                            {"none", "head", "full", "head_separate"}))
    a.qkNorm = QKNorm(*k);
  if (auto v = attn.getInt("window", false))
    a.window = *v;
  if (auto k = attn.getEnum("linear", {"none", "elu1", "identity", "relu"}))
    a.linear = LinearMap(*k);
  if (auto v = attn.getBool("linear_normalize"))
    a.linearNormalize = *v;
  if (auto v = attn.getInt("dilation", false))
    a.dilation = *v;
  if (auto v = attn.getIntArray("global_tokens"))
    a.globalTokens = *v;
  if (auto v = attn.getInt("random_blocks", false))
    a.randomBlocks = *v;
  if (auto v = attn.getInt("block_size", false))
    a.blockSize = *v;
  if (auto v = attn.getInt("random_seed", false))
    a.randomSeed = *v;
  TableReader pos(p, attn.subtable("position"), path + ".position",
                  {"kind", "theta", "rotary_dim", "style", "offset", "scaling",
                   "factor", "original_max_seq_len", "low_freq_factor",
                   "high_freq_factor", "beta_fast", "beta_slow", "mscale",
                   "mscale_all_dim", "short_factor", "long_factor",
                   "attention_factor", "buckets", "max_distance", "clip"});
  PositionSpec &ps = a.position;
  if (auto k = pos.getEnum("kind", {"rope", "none", "learned", "sinusoidal",
                                    "alibi", "t5_bias", "shaw"}))
    ps.kind = std::array<PositionKind, 7>{
        PositionKind::Rope,       PositionKind::None,  PositionKind::Learned,
        PositionKind::Sinusoidal, PositionKind::ALiBi, PositionKind::T5Bias,
        PositionKind::Shaw}[*k];
  if (auto v = pos.getInt("clip", false))
    ps.clip = *v;
  if (auto v = pos.getInt("buckets", false))
    ps.buckets = *v;
  if (auto v = pos.getInt("max_distance", false))
    ps.maxDistance = *v;
  if (auto v = pos.getInt("offset", false))
    ps.offset = *v;
  if (auto k = pos.getEnum("scaling", {"none", "linear", "ntk", "yarn",
                                       "llama3", "longrope"}))
    ps.scaling = RopeScaling(*k);
  if (auto v = pos.getFloatArray("short_factor"))
    ps.shortFactor = *v;
  if (auto v = pos.getFloatArray("long_factor"))
    ps.longFactor = *v;
  if (auto v = pos.getFloat("attention_factor", false))
    ps.attentionFactor = *v;
  if (auto v = pos.getFloat("factor", false))
    ps.factor = *v;
  if (auto v = pos.getInt("original_max_seq_len", false))
    ps.originalMaxSeqLen = *v;
  if (auto v = pos.getFloat("low_freq_factor", false))
    ps.lowFreqFactor = *v;
  if (auto v = pos.getFloat("high_freq_factor", false))
    ps.highFreqFactor = *v;
  if (auto v = pos.getFloat("beta_fast", false))
    ps.betaFast = *v;
  if (auto v = pos.getFloat("beta_slow", false))
    ps.betaSlow = *v;
  if (auto v = pos.getFloat("mscale", false))
    ps.mscale = *v;
  if (auto v = pos.getFloat("mscale_all_dim", false))
    ps.mscaleAllDim = *v;
  if (auto v = pos.getFloat("theta", false))
    ps.theta = *v;
  if (auto v = pos.getInt("rotary_dim", false))
    ps.rotaryDim = *v;
  if (auto k = pos.getEnum("style", {"half_split", "interleaved"}))
    ps.style = *k == 0 ? RopeStyle::HalfSplit : RopeStyle::Interleaved;
  pos.finish();
}

void parseFFN(TableReader &ffn, FFNSpec &f, bool dffRequired) {
  if (auto k = ffn.getEnum("kind", {"glu", "mlp"}))
    f.kind = *k == 0 ? FFNKind::GLU : FFNKind::MLP;
  if (auto k = ffn.getEnum("activation", activationNames()))
    f.activation = Activation(*k);
  if (auto v = ffn.getInt("d_ff", dffRequired))
    f.dFF = *v;
  if (auto v = ffn.getBool("bias"))
    f.bias = *v;
}

void parseMoE(TableReader &moe, MoESpec &m) {
  if (auto v = moe.getInt("n_experts", true))
    m.nExperts = *v;
  if (auto v = moe.getInt("top_k", true))
    m.topK = *v;
  if (auto v = moe.getInt("d_ff", false))
    m.dFF = *v;
  if (auto k = moe.getEnum("router", {"softmax_topk", "topk_softmax",
                                      "sigmoid"}))
    m.router = Router(*k);
  // DeepSeek-V3 (sigmoid) renormalizes; Qwen1.5-MoE and DeepSeek-V2 do not.
  m.normalize = m.router != Router::SoftmaxTopK;
  if (auto v = moe.getBool("normalize"))
    m.normalize = *v;
  if (auto v = moe.getBool("selection_bias"))
    m.selectionBias = *v;
  if (auto v = moe.getInt("n_group", false))
    m.nGroup = *v;
  if (auto v = moe.getInt("topk_group", false))
    m.topkGroup = *v;
  if (auto v = moe.getFloat("routed_scaling", false))
    m.routedScaling = *v;
  if (auto v = moe.getInt("n_shared_experts", false))
    m.nShared = *v;
  if (auto v = moe.getInt("shared_d_ff", false))
    m.sharedDFF = *v;
  if (auto v = moe.getInt("first_k_dense", false))
    m.firstKDense = *v;
  if (auto v = moe.getBool("shared_gate"))
    m.sharedGate = *v;
}

/// Checks of [moe] against itself and the model; fills the defaults.
void validateMoE(Parser &p) {
  ArchSpec &s = p.spec;
  MoESpec &m = s.moe;
  auto has = [&](const char *key) {
    return s.locs.count(std::string("moe.") + key) != 0;
  };
  auto err = [&](const char *key, const std::string &msg) {
    p.error(s.locOf(std::string("moe.") + key), std::string("moe.") + key,
            msg);
  };
  auto str = [](int64_t v) { return std::to_string(v); };
  if (!m.dFF)
    m.dFF = s.ffn.dFF;
  if (m.nShared && !m.sharedDFF)
    m.sharedDFF = m.nShared * m.dFF;
  if (m.topK > m.nExperts)
    err("top_k", "top_k = " + str(m.topK) + " exceeds n_experts = " +
                     str(m.nExperts));
  if (m.topK * m.dFF > (int64_t(1) << 20))
    err("top_k", "top_k x d_ff = " + str(m.topK * m.dFF) +
                     " exceeds 2^20 (limit: a chunk's routed FFN activations "
                     "< 2^31)");
  if (m.router == Router::TopKSoftmax && has("normalize"))
    err("normalize", "router \"topk_softmax\" is normalized by "
                     "construction (a softmax over the k chosen)");
  if (has("shared_d_ff") && !m.nShared)
    err("shared_d_ff", "set n_shared_experts to give shared experts");
  if (m.sharedGate && !m.nShared)
    err("shared_gate", "a gate on the shared experts needs n_shared_experts");
  if (m.nExperts % m.nGroup != 0)
    err("n_group", "n_experts (" + str(m.nExperts) +
                       ") is not divisible by n_group (" + str(m.nGroup) +
                       ")");
  else if (m.topkGroup > m.nGroup)
    err("topk_group", "topk_group = " + str(m.topkGroup) +
                          " exceeds n_group = " + str(m.nGroup));
  else if (m.topK <= m.nExperts &&
           m.topK > m.topkGroup * (m.nExperts / m.nGroup))
    err("top_k", "top_k = " + str(m.topK) + " exceeds the " +
                     str(m.topkGroup * (m.nExperts / m.nGroup)) +
                     " experts of the topk_group groups kept");
  else if (m.router == Router::Sigmoid && m.nGroup > 1 &&
           m.nExperts / m.nGroup < 2)
    err("n_group", "with sigmoid scores a group's score is the sum of its "
                   "best two experts: groups need at least 2");
  if (has("topk_group") && !has("n_group"))
    err("topk_group", "topk_group goes with n_group");
  if (m.firstKDense > s.model.nLayers)
    err("first_k_dense", "first_k_dense = " + str(m.firstKDense) +
                             " exceeds n_layers = " + str(s.model.nLayers));
  if (s.ffn.bias)
    p.error(s.locOf("ffn.bias"), "ffn.bias",
            "experts without biases only (no MoE family has them)");
}

void parseTables(Parser &p, const toml::table &root) {
  ArchSpec &s = p.spec;
  TableReader top(p, &root, "",
                  {"model", "norm", "attention", "ffn", "moe", "block",
                   "output", "weights", "layer_overrides"});

  TableReader model(p, top.subtable("model"), "model",
                    {"name", "vocab_size", "d_model", "n_layers",
                     "max_seq_len", "tie_embeddings", "embedding_scale"});
  if (auto v = model.getString("name", true)) {
    s.model.name = *v;
    std::string why = modelNameProblem(*v);
    if (!why.empty())
      p.error(s.locOf("model.name"), "model.name", why);
  }
  if (auto v = model.getInt("vocab_size", true))
    s.model.vocabSize = *v;
  if (auto v = model.getInt("d_model", true))
    s.model.dModel = *v;
  if (auto v = model.getInt("n_layers", true))
    s.model.nLayers = *v;
  if (auto v = model.getInt("max_seq_len", true))
    s.model.maxSeqLen = *v;
  if (auto v = model.getBool("tie_embeddings"))
    s.model.tieEmbeddings = *v;
  if (auto v = model.getFloat("embedding_scale", false))
    s.model.embeddingScale = *v;
  model.finish();

  TableReader norm(p, top.subtable("norm"), "norm",
                   {"kind", "eps", "bias", "placement", "final",
                    "weight_offset", "embedding_norm"});
  if (auto k = norm.getEnum("kind", {"rmsnorm", "layernorm"}))
    s.norm.kind = *k == 0 ? NormKind::RMSNorm : NormKind::LayerNorm;
  if (auto v = norm.getFloat("eps", false))
    s.norm.eps = *v;
  if (auto v = norm.getBool("bias"))
    s.norm.bias = *v;
  if (auto k = norm.getEnum("placement",
                             {"pre", "post", "sandwich", "post_sublayer"}))
    s.norm.placement = NormPlacement(*k);
  if (auto v = norm.getFloat("weight_offset", false))
    s.norm.weightOffset = *v;
  if (auto v = norm.getBool("embedding_norm"))
    s.norm.embeddingNorm = *v;
  if (auto v = norm.getBool("final"))
    s.norm.finalNorm = *v;
  norm.finish();

  TableReader attn(p, top.subtable("attention"), "attention",
                   {"n_heads", "n_kv_heads", "head_dim", "scale", "qkv_bias",
                    "out_bias", "softcap", "qk_norm", "window", "dilation",
                    "global_tokens", "random_blocks", "block_size",
                    "random_seed", "linear", "linear_normalize", "position", "mla",
                    "differential"});
  if (auto v = attn.getInt("n_heads", true))
    s.attention.nHeads = *v;
  if (auto v = attn.getInt("n_kv_heads", false))
    s.attention.nKVHeads = *v;
  if (auto v = attn.getInt("head_dim", false))
    s.attention.headDim = *v;
  if (auto v = attn.getBool("qkv_bias"))
    s.attention.qkvBias = *v;
  if (auto v = attn.getBool("out_bias"))
    s.attention.outBias = *v;
  if (auto v = attn.getBool("differential"))
    s.attention.differential = *v;
  parseLayerAttention(p, attn, s.attention, "attention");
  if (const toml::table *m = attn.subtable("mla")) {
    TableReader mla(p, m, "attention.mla",
                    {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                     "qk_rope_head_dim", "v_head_dim"});
    MLASpec &l = s.mla;
    if (auto v = mla.getInt("q_lora_rank", false))
      l.qLoraRank = *v;
    if (auto v = mla.getInt("kv_lora_rank", true))
      l.kvLoraRank = *v;
    if (auto v = mla.getInt("qk_nope_head_dim", true))
      l.qkNopeHeadDim = *v;
    if (auto v = mla.getInt("qk_rope_head_dim", true))
      l.qkRopeHeadDim = *v;
    if (auto v = mla.getInt("v_head_dim", true))
      l.vHeadDim = *v;
    mla.finish();
  }
  attn.finish();

  TableReader ffn(p, top.subtable("ffn"), "ffn",
                  {"kind", "activation", "d_ff", "bias"});
  parseFFN(ffn, s.ffn, true);
  ffn.finish();

  if (const toml::table *m = top.subtable("moe")) {
    TableReader moe(p, m, "moe",
                    {"n_experts", "top_k", "d_ff", "router", "normalize",
                     "selection_bias", "n_group", "topk_group",
                     "routed_scaling", "n_shared_experts", "shared_d_ff",
                     "shared_gate", "first_k_dense"});
    parseMoE(moe, s.moe);
    moe.finish();
  }

  TableReader block(p, top.subtable("block"), "block",
                    {"layout", "shared_norm"});
  if (auto k = block.getEnum("layout", {"serial", "parallel"}))
    s.block.layout = *k == 0 ? BlockLayout::Serial : BlockLayout::Parallel;
  if (auto v = block.getBool("shared_norm"))
    s.block.sharedNorm = *v;
  block.finish();

  TableReader output(p, top.subtable("output"), "output",
                     {"final_softcap", "z_loss", "bias", "logit_scale"});
  if (auto v = output.getFloat("final_softcap", false))
    s.output.finalSoftcap = *v;
  if (auto v = output.getFloat("z_loss", false))
    s.output.zLoss = *v;
  if (auto v = output.getBool("bias"))
    s.output.bias = *v;
  if (auto v = output.getFloat("logit_scale", false))
    s.output.logitScale = *v;
  output.finish();

  TableReader weights(p, top.subtable("weights"), "weights", {"naming"});
  if (auto k = weights.getEnum("naming", namingNames()))
    s.weights.naming = spec::Naming(*k);
  weights.finish();

  top.finish();
}

/// Checks of one layer's attention keys (the model's, under `path` =
/// "attention", or an override's), filling in defaults that depend on
/// head_dim.
void validateLayerAttention(Parser &p, AttentionSpec &a,
                            const std::string &path) {
  ArchSpec &s = p.spec;
  auto has = [&](const std::string &key) { return s.locs.count(path + key); };
  auto err = [&](const std::string &key, const std::string &msg) {
    p.error(s.locOf(path + key), path + key, msg);
  };
  PositionSpec &ps = a.position;
  // Differential attention scores (and rotates) half-heads.
  const int64_t qkDim = a.qkHeadDim();
  const std::string qkName = a.differential ? "head_dim / 2" : "head_dim";
  if (ps.kind == PositionKind::Rope && a.headDim > 0) {
    if (ps.rotaryDim == 0)
      ps.rotaryDim = qkDim;
    if (ps.rotaryDim > qkDim)
      err(".position.rotary_dim",
          "rotary_dim (" + std::to_string(ps.rotaryDim) +
              ") is larger than " + qkName + " (" + std::to_string(qkDim) +
              ")");
    else if (ps.rotaryDim % 2 != 0 && !s.isMLA()) // (MLA: qk_rope_head_dim)
      err(has(".position.rotary_dim") || path != "attention"
              ? ".position.rotary_dim"
              : ".head_dim",
          "RoPE rotates pairs of dimensions: rotary dimension " +
              std::to_string(ps.rotaryDim) + " is odd");
  }
  if (has(".position.offset") && ps.kind != PositionKind::Learned)
    err(".position.offset", "offset applies only to learned positions");
  bool scaled = ps.scaling != RopeScaling::None;
  const bool longRoPE = ps.scaling == RopeScaling::LongRoPE;
  if (scaled && !longRoPE && !has(".position.factor") && ps.factor == 1.0)
    err(".position.scaling", "a RoPE scaling needs attention.position.factor");
  if (longRoPE && has(".position.factor"))
    err(".position.factor", "longrope scales each pair by short_factor or "
                            "long_factor, not by factor");
  bool needsOriginal = ps.scaling == RopeScaling::YaRN ||
                       ps.scaling == RopeScaling::Llama3 || longRoPE;
  if (needsOriginal && ps.originalMaxSeqLen == 0)
    err(".position.scaling", "yarn, llama3 and longrope scaling need "
                             "attention.position.original_max_seq_len");
  for (const char *key : {"short_factor", "long_factor", "attention_factor"})
    if (has(std::string(".position.") + key) && !longRoPE)
      err(std::string(".position.") + key,
          std::string(key) + " applies only to longrope scaling");
  if (longRoPE && ps.kind == PositionKind::Rope && ps.rotaryDim > 0) {
    // A factor for each rotated pair, in each list.
    size_t pairs = size_t(ps.rotaryDim / 2);
    for (auto [key, list] : {std::pair{"short_factor", &ps.shortFactor},
                             std::pair{"long_factor", &ps.longFactor}})
      if (list->size() != pairs)
        err(std::string(".position.") + (has(std::string(".position.") + key)
                                             ? key
                                             : "scaling"),
            std::string("longrope needs ") + key + ": one factor per "
                "rotated pair (rotary_dim / 2 = " + std::to_string(pairs) +
                "), got " + std::to_string(list->size()));
  }
  if (ps.scaling == RopeScaling::Llama3 &&
      ps.highFreqFactor <= ps.lowFreqFactor)
    err(".position.high_freq_factor",
        "high_freq_factor must exceed low_freq_factor");
  for (const char *key : {"mscale", "mscale_all_dim"})
    if (has(std::string(".position.") + key) &&
        ps.scaling != RopeScaling::YaRN)
      err(std::string(".position.") + key,
          std::string(key) + " applies only to yarn scaling");
  if (s.isMLA()) {
    // The latent cache holds every position; the score is a plain dot.
    if (a.window)
      err(".window", "multi-head latent attention keeps every position "
                     "(no sliding window)");
    if (a.softcap > 0)
      err(".softcap", "soft-capping is not supported with multi-head "
                      "latent attention");
    if (a.qkNorm != QKNorm::None)
      err(".qk_norm", "multi-head latent attention normalizes its latents "
                      "(no QK-norm)");
    if (ps.kind != PositionKind::Rope)
      err(".position.kind", "multi-head latent attention takes rope "
                            "positions (its decoupled rotary key)");
    if (path != "attention" && has(".position.rotary_dim") &&
        ps.rotaryDim != s.mla.qkRopeHeadDim)
      err(".position.rotary_dim",
          "MLA rotates its whole rotary part: rotary_dim must equal "
          "qk_rope_head_dim = " + std::to_string(s.mla.qkRopeHeadDim));
  }
  for (const char *key : {"factor", "original_max_seq_len"})
    if (has(std::string(".position.") + key) && !scaled)
      err(std::string(".position.") + key,
          std::string(key) + " applies only with a RoPE scaling");
  if (has(".position.clip") && ps.kind != PositionKind::Shaw)
    err(".position.clip", "clip applies only to shaw positions");
  for (const char *key : {"buckets", "max_distance"})
    if (has(std::string(".position.") + key) && ps.kind != PositionKind::T5Bias)
      err(std::string(".position.") + key,
          std::string(key) + " applies only to t5_bias positions");
  if (ps.kind == PositionKind::T5Bias && ps.maxDistance <= ps.buckets / 2)
    err(".position.max_distance",
        "max_distance (" + std::to_string(ps.maxDistance) +
            ") must exceed buckets / 2 (" + std::to_string(ps.buckets / 2) +
            "), the exactly-bucketed distances");
  for (const char *key : {"theta", "rotary_dim", "style", "scaling"})
    if (has(std::string(".position.") + key) && ps.kind != PositionKind::Rope)
      err(std::string(".position.") + key,
          std::string(key) + " applies only to rope positions");
  // Sparse patterns refine a sliding window (a layer whose window an
  // override turns off drops those it inherits).
  if (has(".dilation") && a.dilation > 1 && a.window == 0)
    err(".dilation", "a dilation spaces a sliding window's keys: set "
                     "window too");
  if (a.span() > (int64_t(1) << 24))
    err(has(".dilation") ? ".dilation" : ".window",
        "window * dilation = " + std::to_string(a.span()) +
            " exceeds 2^24 positions");
  if (has(".global_tokens")) {
    if (a.window == 0 && !a.globalTokens.empty())
      err(".global_tokens", "global tokens widen a sliding window (without "
                            "one every earlier position is attended): set "
                            "window too");
    for (size_t i = 0; i < a.globalTokens.size(); ++i) {
      int64_t g = a.globalTokens[i];
      if (i > 0 && g <= a.globalTokens[i - 1]) {
        err(".global_tokens", "positions must be listed in increasing order, "
                              "each once: " + std::to_string(g) + " follows " +
                                  std::to_string(a.globalTokens[i - 1]));
        break;
      }
      if (g >= s.model.maxSeqLen) {
        err(".global_tokens", "position " + std::to_string(g) +
                                  " is past max_seq_len (" +
                                  std::to_string(s.model.maxSeqLen) + ")");
        break;
      }
    }
    if (a.globalTokens.size() > 64)
      err(".global_tokens", "at most 64 global positions, got " +
                                std::to_string(a.globalTokens.size()));
  }
  if (has(".random_blocks") || has(".block_size") || has(".random_seed")) {
    if (a.window == 0)
      err(has(".random_blocks") ? ".random_blocks"
          : has(".block_size")  ? ".block_size"
                                : ".random_seed",
          "block-random keys widen a sliding window: set window too");
    else if (a.randomBlocks > 0 && a.blockSize == 0)
      err(".random_blocks", "random blocks need block_size (positions per "
                            "block)");
    else if (a.randomBlocks == 0)
      for (const char *key : {".block_size", ".random_seed"})
        if (has(key))
          err(key, std::string(key + 1) + " applies to random_blocks > 0");
  }
  // A layer without a window (an override may turn it off) keeps none of
  // its refinements: what the importer and the kernels see.
  if (a.window == 0) {
    a.dilation = 1;
    a.globalTokens.clear();
    a.randomBlocks = a.blockSize = a.randomSeed = 0;
  }
  if (a.isLinear()) {
    // A recurrent state keeps no positions: no window, no score terms.
    // (The sparse refinements need a window: the parser reports them.)
    if (a.window > 0)
      err(has(".window") ? ".window" : ".linear",
          "linear attention attends to every earlier position through its "
          "state (no sliding window or sparse pattern): window is " +
              std::to_string(a.window));
    if (a.softcap > 0)
      err(".softcap", "linear attention has no scores to soft-cap");
    if (ps.kind == PositionKind::ALiBi || ps.kind == PositionKind::T5Bias ||
        ps.kind == PositionKind::Shaw)
      err(".position.kind",
          "linear attention takes rope, none or absolute positions (no "
          "score biases: it forms no scores)");
    if (s.isMLA())
      err(".linear", "linear attention does not combine with multi-head "
                     "latent attention");
    if (a.differential)
      err(".linear", "linear attention does not combine with differential "
                     "attention");
  } else if (has(".linear_normalize") && path != "attention") {
    // (The model's may serve the layers overrides make linear:
    // applyOverrides checks it.)
    err(".linear_normalize", "linear_normalize applies to linear attention "
                             "(set linear too)");
  }
  if (a.differential) {
    if (ps.kind == PositionKind::ALiBi || ps.kind == PositionKind::T5Bias ||
        ps.kind == PositionKind::Shaw)
      err(".position.kind",
          "differential attention takes rope, none or absolute positions "
          "(no score biases)");
    if (a.qkNorm != QKNorm::None)
      err(".qk_norm", "differential attention has no QK-norm (it "
                      "normalizes each head's output)");
  }
  if (a.scale == 0 && a.headDim > 0) {
    a.scale = 1.0 / std::sqrt(static_cast<double>(qkDim));
    // DeepSeek's YaRN puts its attention factor on the scores, squared.
    if (ps.scaling == RopeScaling::YaRN && ps.mscaleAllDim > 0 &&
        ps.factor > 1) {
      double m = 0.1 * ps.mscaleAllDim * std::log(ps.factor) + 1.0;
      a.scale *= m * m;
    }
  }
}

/// [attention.mla] against the rest of [attention]: the head dims it
/// implies, one latent for every head, no biases (no MLA model has them).
void validateMLA(Parser &p) {
  ArchSpec &s = p.spec;
  const MLASpec &m = s.mla;
  AttentionSpec &a = s.attention;
  auto err = [&](const std::string &key, const std::string &msg) {
    p.error(s.locOf(key), key, msg);
  };
  auto str = [](int64_t v) { return std::to_string(v); };
  int64_t hd = m.qkNopeHeadDim + m.qkRopeHeadDim;
  if (s.locs.count("attention.head_dim") && a.headDim != hd)
    err("attention.head_dim",
        "head_dim = " + str(a.headDim) + " differs from qk_nope_head_dim + "
        "qk_rope_head_dim = " + str(hd) + " (the query and key head dim of "
        "multi-head latent attention)");
  a.headDim = hd;
  if (s.locs.count("attention.n_kv_heads") && a.nKVHeads != a.nHeads)
    err("attention.n_kv_heads",
        "multi-head latent attention gives every head its own key and value "
        "from one shared latent: n_kv_heads does not apply");
  a.nKVHeads = a.nHeads;
  if (a.qkvBias || a.outBias)
    err(a.qkvBias ? "attention.qkv_bias" : "attention.out_bias",
        "multi-head latent attention has no projection biases");
  if (m.qkRopeHeadDim % 2 != 0)
    err("attention.mla.qk_rope_head_dim",
        "RoPE rotates pairs of dimensions: qk_rope_head_dim = " +
            str(m.qkRopeHeadDim) + " is odd");
  PositionSpec &ps = a.position;
  if (s.locs.count("attention.position.rotary_dim") &&
      ps.rotaryDim != m.qkRopeHeadDim)
    err("attention.position.rotary_dim",
        "rotary_dim = " + str(ps.rotaryDim) + " differs from "
        "qk_rope_head_dim = " + str(m.qkRopeHeadDim) +
            " (MLA rotates its whole rotary part)");
  ps.rotaryDim = m.qkRopeHeadDim;
}

/// Cross-key checks, run only on a spec whose keys all parsed.
void validate(Parser &p) {
  ArchSpec &s = p.spec;
  auto err = [&](const std::string &key, const std::string &msg) {
    p.error(s.locOf(key), key, msg);
  };
  AttentionSpec &a = s.attention;
  if (s.isMLA())
    validateMLA(p);
  if (a.nKVHeads == 0)
    a.nKVHeads = a.nHeads;
  if (a.nHeads % a.nKVHeads != 0)
    err("attention.n_kv_heads",
        "n_heads (" + std::to_string(a.nHeads) +
            ") is not divisible by n_kv_heads (" +
            std::to_string(a.nKVHeads) + ")");
  if (a.headDim == 0) {
    if (s.model.dModel % a.nHeads != 0)
      err("attention.n_heads",
          "d_model (" + std::to_string(s.model.dModel) +
              ") is not divisible by n_heads (" + std::to_string(a.nHeads) +
              "); set attention.head_dim explicitly");
    else
      a.headDim = s.model.dModel / a.nHeads;
  }
  if (a.differential) {
    if (s.isMLA())
      err("attention.differential",
          "differential attention does not combine with multi-head latent "
          "attention");
    else if (a.nKVHeads != a.nHeads)
      err("attention.n_kv_heads",
          "differential attention needs n_kv_heads = n_heads (" +
              std::to_string(a.nHeads) + "): its two maps take the two key "
              "halves of a head over that head's value");
    if (a.headDim % 2 != 0)
      err(s.locs.count("attention.head_dim") ? "attention.head_dim"
                                             : "attention.n_heads",
          "differential attention splits each query and key head in two: "
          "head_dim = " + std::to_string(a.headDim) + " is odd");
    if (s.weights.naming != Naming::Llama)
      err("attention.differential",
          "differential attention's lambda vectors and per-head norm are "
          "named for hf-llama checkpoints only");
  }
  if (s.block.layout == BlockLayout::Parallel &&
      s.norm.placement != NormPlacement::Pre)
    err("norm.placement", "parallel blocks (block.layout = \"parallel\") "
                          "take pre-norm only");
  if (s.locs.count("block.shared_norm") &&
      s.block.layout != BlockLayout::Parallel)
    err("block.shared_norm", "only parallel blocks share a norm");
  validateLayerAttention(p, a, "attention");
  if (s.moe.nExperts)
    validateMoE(p);
}

/// [[layer_overrides]]: each entry selects layers (every + offset, layers,
/// or first) and sets attention / position / FFN keys on them, in order.
void applyOverrides(Parser &p, const toml::table &root) {
  ArchSpec &s = p.spec;
  s.layers.assign(size_t(s.model.nLayers), LayerSpec{s.attention, s.ffn});
  if (s.moe.nExperts)
    for (int64_t i = s.moe.firstKDense; i < s.model.nLayers; ++i)
      s.layers[size_t(i)].moe = true;
  const toml::node *n = root.get("layer_overrides");
  if (!n)
    return;
  if (!n->is_array_of_tables()) {
    p.error(p.loc(n->source()), "layer_overrides",
            "expected an array of tables ([[layer_overrides]])");
    return;
  }
  int index = 0;
  for (const toml::node &entry : *n->as_array()) {
    std::string path = "layer_overrides." + std::to_string(index++);
    const toml::table *tbl = entry.as_table();
    TableReader sel(p, tbl, path,
                    {"every", "offset", "layers", "first", "attention", "ffn"});
    auto every = sel.getInt("every", false);
    auto offset = sel.getInt("offset", false);
    auto list = sel.getIntArray("layers");
    auto first = sel.getInt("first", false);
    // Count the selectors written, valid or not: a bad value is its own
    // error, not a missing selector.
    int kinds = 0;
    for (const char *key : {".every", ".layers", ".first"})
      kinds += s.locs.count(path + key) ? 1 : 0;
    std::vector<int64_t> chosen;
    const int64_t L = s.model.nLayers;
    if (kinds == 1 && !every && !list && !first) {
      // The selector's value was reported.
    } else if (kinds != 1) {
      p.error(p.loc(tbl->source()), path,
              "select layers with exactly one of 'every' (with 'offset'), "
              "'layers' or 'first'");
    } else if (every) {
      if (*every > L || offset.value_or(0) >= *every)
        p.error(s.locOf(path + (offset ? ".offset" : ".every")),
                path + (offset ? ".offset" : ".every"),
                "every = " + std::to_string(*every) + ", offset = " +
                    std::to_string(offset.value_or(0)) +
                    " selects no layer of " + std::to_string(L));
      else
        for (int64_t i = offset.value_or(0); i < L; i += *every)
        chosen.push_back(i);
    } else if (list) {
      for (int64_t i : *list) {
        if (i >= L)
          p.error(s.locOf(path + ".layers"), path + ".layers",
                  "layer " + std::to_string(i) + " does not exist (n_layers = " +
                      std::to_string(L) + ")");
        else
          chosen.push_back(i);
      }
    } else if (*first > L) {
      p.error(s.locOf(path + ".first"), path + ".first",
              "first = " + std::to_string(*first) + " exceeds n_layers = " +
                  std::to_string(L));
    } else {
      for (int64_t i = 0; i < *first; ++i)
        chosen.push_back(i);
    }
    if (offset && !every)
      p.error(s.locOf(path + ".offset"), path + ".offset",
              "offset goes with 'every'");

    const toml::table *attnTbl = sel.subtable("attention");
    const toml::table *ffnTbl = sel.subtable("ffn");
    std::vector<SpecError> scratch;
    // With no layer chosen, still parse once so that key errors show.
    size_t rounds = std::max<size_t>(chosen.size(), 1);
    for (size_t k = 0; k < rounds; ++k) {
      p.sink = k == 0 ? &p.errors : &scratch;
      LayerSpec probe{s.attention, s.ffn};
      LayerSpec &layer = chosen.empty() ? probe : s.layers[size_t(chosen[k])];
      TableReader attn(p, attnTbl, path + ".attention",
                       {"scale", "softcap", "qk_norm", "window", "dilation",
                        "global_tokens", "random_blocks", "block_size",
                        "random_seed", "linear", "linear_normalize",
                        "position"});
      parseLayerAttention(p, attn, layer.attention, path + ".attention");
      attn.finish();
      PositionKind kind = layer.attention.position.kind;
      if (k == 0 && s.locs.count(path + ".attention.position.kind") &&
          (kind == PositionKind::Learned ||
           kind == PositionKind::Sinusoidal || kind == PositionKind::T5Bias))
        p.error(s.locOf(path + ".attention.position.kind"),
                path + ".attention.position.kind",
                "absolute positions (learned, sinusoidal) and the shared T5 "
                "bias belong to the whole model, not to a layer");
      validateLayerAttention(p, layer.attention, path + ".attention");
      TableReader ffn(p, ffnTbl, path + ".ffn",
                      {"kind", "activation", "d_ff", "bias", "moe"});
      parseFFN(ffn, layer.ffn, false);
      if (auto v = ffn.getBool("moe")) {
        if (*v && !s.moe.nExperts && k == 0)
          p.error(s.locOf(path + ".ffn.moe"), path + ".ffn.moe",
                  "the spec has no [moe] table to take the experts from");
        layer.moe = *v && s.moe.nExperts;
      }
      if (k == 0 && layer.moe && layer.ffn.bias)
        p.error(s.locOf(path + ".ffn.bias"), path + ".ffn.bias",
                "experts without biases only (no MoE family has them)");
      ffn.finish();
    }
    p.sink = &p.errors;
    sel.finish();
  }
}

std::optional<ArchSpec> finishParse(Parser &p, const toml::table &root) {
  size_t before = p.errors.size();
  p.spec.file = p.file;
  parseTables(p, root);
  if (p.errors.size() == before)
    validate(p);
  if (p.errors.size() == before)
    applyOverrides(p, root);
  // The model's linear_normalize must reach a layer that is linear (here
  // or by an override).
  ArchSpec &s = p.spec;
  if (p.errors.size() == before && s.locs.count("attention.linear_normalize") &&
      std::none_of(s.layers.begin(), s.layers.end(), [](const LayerSpec &l) {
        return l.attention.isLinear();
      }))
    p.error(s.locOf("attention.linear_normalize"), "attention.linear_normalize",
            "linear_normalize applies to linear attention (set linear too, "
            "here or in a layer override)");
  if (p.errors.size() == before) {
    std::string why = namingProblem(p.spec);
    if (!why.empty())
      p.error(p.spec.locOf("weights.naming"), "weights.naming", why);
  }
  if (p.errors.size() != before)
    return std::nullopt;
  return std::move(p.spec);
}

std::optional<ArchSpec> parseWith(Parser &p, const std::string &text) {
  if (text.size() > kMaxSpecBytes) {
    p.error(SourceLoc{p.file, 0, 0}, "",
            "spec is " + std::to_string(text.size()) + " bytes; at most " +
                std::to_string(kMaxSpecBytes) + " are read");
    return std::nullopt;
  }
  LexProblem lex = lexCheck(text);
  if (lex.line) {
    p.error(SourceLoc{p.file, lex.line, lex.col}, "", lex.message);
    return std::nullopt;
  }
#if TOML_EXCEPTIONS
  try {
    toml::table root = toml::parse(text, p.file);
    return finishParse(p, root);
  } catch (const toml::parse_error &e) {
    p.error(p.loc(e.source()), "", std::string(e.description()));
    return std::nullopt;
  }
#else
  toml::parse_result r = toml::parse(text, p.file);
  if (!r) {
    p.error(p.loc(r.error().source()), "",
            std::string(r.error().description()));
    return std::nullopt;
  }
  return finishParse(p, r.table());
#endif
}

} // namespace

double longRoPEAttentionOf(double extension, double original) {
  if (!(extension > 1) || !(original > 1))
    return 1.0;
  return std::sqrt(1 + std::log(extension) / std::log(original));
}

double longRoPEAttention(const PositionSpec &ps, int64_t maxSeqLen) {
  if (ps.attentionFactor > 0)
    return ps.attentionFactor;
  if (ps.originalMaxSeqLen <= 0)
    return 1.0;
  return longRoPEAttentionOf(double(maxSeqLen) / double(ps.originalMaxSeqLen),
                             double(ps.originalMaxSeqLen));
}

std::optional<ArchSpec> parseSpecString(const std::string &text,
                                        const std::string &path,
                                        std::vector<SpecError> &errors) {
  Parser p(path, errors);
  return parseWith(p, text);
}

bool readRegularFile(const std::string &path, size_t maxBytes,
                     std::string &text, std::string &error) {
  // O_NONBLOCK: a FIFO or device given as a file must not block the open.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot open: ") + strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    error = "cannot open: not a regular file";
    return false;
  }
  if (size_t(st.st_size) > maxBytes) {
    close(fd);
    error = "is " + std::to_string(st.st_size) + " bytes; at most " +
            std::to_string(maxBytes) + " are read";
    return false;
  }
  text.assign(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd, &text[got], text.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += size_t(n);
  }
  close(fd);
  if (got != text.size()) {
    error = "cannot read";
    return false;
  }
  return true;
}

bool readSpecText(const std::string &path, std::string &text,
                  std::string &error) {
  if (readRegularFile(path, kMaxSpecBytes, text, error))
    return true;
  // The spec's own wording: "cannot open spec file: ...", "spec is N bytes".
  if (error.rfind("cannot open", 0) == 0)
    error.insert(11, " spec file");
  else if (error == "cannot read")
    error = "cannot read spec file";
  else
    error = "spec " + error;
  return false;
}

std::optional<ArchSpec> parseSpecFile(const std::string &path,
                                      std::vector<SpecError> &errors) {
  std::string text, why;
  if (!readSpecText(path, text, why)) {
    errors.push_back(SpecError{SourceLoc{path, 0, 0}, "", why});
    return std::nullopt;
  }
  return parseSpecString(text, path, errors);
}

} // namespace arch
