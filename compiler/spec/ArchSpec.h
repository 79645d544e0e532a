//===- ArchSpec.h - Architecture spec as plain data ------------*- C++ -*-===//
//
// The parsed, validated form of a TOML architecture spec. Plain C++ structs:
// no MLIR, no Halide, so anyone can test the spec layer on its own.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_SPEC_ARCHSPEC_H
#define ARCHC_SPEC_ARCHSPEC_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace arch {

/// A place in a spec file; line and col are 1-based, 0 when unknown.
struct SourceLoc {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;
  std::string str() const;
};

namespace spec {
enum class NormKind { RMSNorm, LayerNorm };
/// pre: x + f(norm(x)); post: norm(x + f(x)); sandwich: x + norm(f(norm(x)))
/// (Gemma 2/3); post_sublayer: x + norm(f(x)) (OLMo 2).
enum class NormPlacement { Pre, Post, Sandwich, PostSublayer };
enum class PositionKind { None, Rope, Learned, Sinusoidal, ALiBi, T5Bias, Shaw };
enum class RopeStyle { HalfSplit, Interleaved };
/// Context extension of RoPE: position interpolation (linear), NTK-aware
/// base scaling, YaRN, Llama 3.1's per-frequency scaling, and LongRoPE's
/// factor per pair (Phi-3 128k).
enum class RopeScaling { None, Linear, NTK, YaRN, Llama3, LongRoPE };
enum class FFNKind { GLU, MLP };
/// The spelling of each in the spec is the same as in the dialect.
enum class Activation {
  SiLU, GELU, GELUTanh, GELUSigmoid, ReLU, SquaredReLU, Sigmoid, Identity
};
enum class BlockLayout { Serial, Parallel };
enum class QKNorm { None, Head, Full, HeadSeparate };
/// Linear attention's feature map (the dialect's FeatureMap, in order), or
/// None: softmax attention.
enum class LinearMap { None, Elu1, Identity, ReLU };
/// Hugging Face tensor-naming schemes (see compiler/spec/Checkpoint.h).
enum class Naming {
  Llama, GPT2, GPTJ, GPTNeoX, OPT, Bloom, Falcon, Phi3, Mixtral
};
/// How a mixture-of-experts router turns its logits into the top_k experts
/// and their weights: softmax over every expert, then the top k (Mixtral
/// renormalizes them, DeepSeek-V2 and Qwen1.5-MoE do not); the top k
/// logits, then a softmax over those k (the same numbers as the first with
/// renormalization); sigmoid scores (DeepSeek-V3), chosen with a
/// selection-only bias.
enum class Router { SoftmaxTopK, TopKSoftmax, Sigmoid };
} // namespace spec

struct ModelSpec {
  std::string name;
  int64_t vocabSize = 0;
  int64_t dModel = 0;
  int64_t nLayers = 0;
  int64_t maxSeqLen = 0;
  bool tieEmbeddings = false;
  double embeddingScale = 1.0;
};

struct NormSpec {
  spec::NormKind kind = spec::NormKind::RMSNorm;
  double eps = 1e-5;
  bool bias = false;
  spec::NormPlacement placement = spec::NormPlacement::Pre;
  bool finalNorm = true;
  double weightOffset = 0.0; ///< Gemma: the norm scales by (offset + w)
  bool embeddingNorm = false; ///< BLOOM: a norm right after the embedding
};

struct PositionSpec {
  spec::PositionKind kind = spec::PositionKind::Rope;
  double theta = 10000.0;
  int64_t rotaryDim = 0; ///< 0 before validation; then defaults to head_dim.
  spec::RopeStyle style = spec::RopeStyle::HalfSplit;
  int64_t offset = 0; ///< learned: row of position 0 (OPT: 2)
  spec::RopeScaling scaling = spec::RopeScaling::None;
  double factor = 1.0;
  int64_t originalMaxSeqLen = 0; ///< yarn, llama3: pre-extension context
  double lowFreqFactor = 1.0, highFreqFactor = 4.0; ///< llama3
  double betaFast = 32.0, betaSlow = 1.0;           ///< yarn
  /// DeepSeek's YaRN: cos and sin scaled by m(mscale) / m(mscale_all_dim),
  /// the softmax scale by m(mscale_all_dim)^2 when mscale_all_dim > 0, with
  /// m(x) = 0.1 x ln(factor) + 1. The defaults give YaRN's own factor.
  double mscale = 1.0, mscaleAllDim = 0.0;
  /// LongRoPE (Phi-3 128k, Phi-3.5, Phi-4-mini): each pair's frequency
  /// divided by its factor, the long list's where max_seq_len exceeds
  /// original_max_seq_len, else the short one's (llama.cpp's rule, with
  /// the library's context as its n_ctx); cos and sin times
  /// attentionFactor, 0 where the spec leaves it to its default: each
  /// layer's from its own original context (longRoPEAttention).
  std::vector<double> shortFactor, longFactor;
  double attentionFactor = 0.0;
  int64_t buckets = 32, maxDistance = 128;          ///< t5_bias
  int64_t clip = 16; ///< shaw: relative distances clipped to [-clip, clip]
};

/// LongRoPE's factor on cos and sin for a context extended `extension`
/// times over `original` positions: sqrt(1 + ln(extension) /
/// ln(original)) for an extension above 1, else 1 (the paper's, and
/// Hugging Face's from its config).
double longRoPEAttentionOf(double extension, double original);

/// The spec's attention factor for a model of `maxSeqLen` positions, else
/// longRoPEAttentionOf(maxSeqLen / original_max_seq_len).
double longRoPEAttention(const PositionSpec &ps, int64_t maxSeqLen);

struct AttentionSpec {
  int64_t nHeads = 0;
  int64_t nKVHeads = 0;
  int64_t headDim = 0;
  double scale = 0.0; ///< 1/sqrt(head_dim) unless set.
  bool qkvBias = false;
  bool outBias = false;
  double softcap = 0.0; ///< Gemma 2: scores -> c * tanh(scores / c); 0 = off
  /// QK-norm with the model's norm kind: over each head with one shared
  /// weight (Gemma 3, Qwen 3) or a weight per head (Command R+), or over the
  /// whole q / k projection (OLMo 2).
  spec::QKNorm qkNorm = spec::QKNorm::None;
  int64_t window = 0; ///< sliding window: attend to the last `window` tokens
  /// Dilated window (Longformer): the window's keys are `dilation` apart,
  /// reaching back window * dilation positions.
  int64_t dilation = 1;
  /// Global positions (Longformer, BigBird): each attends to every
  /// earlier position and is attended by every later one, window or not.
  std::vector<int64_t> globalTokens;
  /// Block-random keys (BigBird): positions in blocks of `blockSize`; each
  /// query block attends, besides its window, to `randomBlocks` earlier key
  /// blocks drawn by a hash of (randomSeed, query block, draw). Layers of
  /// one seed draw the same blocks (and share a kernel). The parser resets
  /// dilation, globals and random blocks where a layer has no window.
  int64_t randomBlocks = 0, blockSize = 0, randomSeed = 0;
  /// How far back a windowed query reaches: window * dilation.
  int64_t span() const { return window * dilation; }
  /// Differential attention (DIFF Transformer): each head's query and key
  /// are two halves of head_dim / 2, two softmax maps over the same value
  /// head subtracted (the second times a learned lambda), the result
  /// RMS-normed per head and scaled by 1 - lambda_init. Model-wide.
  bool differential = false;
  /// Linear attention (Katharopoulos et al. 2020) with this feature map in
  /// place of the softmax: a recurrent state per key/value head replaces
  /// the layer's KV cache. Per layer (a hybrid stack sets it by override).
  spec::LinearMap linear = spec::LinearMap::None;
  /// Linear attention's output divided by phi(q) . sum phi(k) (+ 1e-6);
  /// without, times `scale`.
  bool linearNormalize = true;
  bool isLinear() const { return linear != spec::LinearMap::None; }
  PositionSpec position;
  /// The width of a query or key head that scores are taken over (and
  /// RoPE rotates): head_dim, or its half under differential attention.
  int64_t qkHeadDim() const { return differential ? headDim / 2 : headDim; }
};

/// Multi-head latent attention ([attention.mla], DeepSeek-V2/V3): keys and
/// values come from a per-token latent of kv_lora_rank (RMS-normed) that the
/// cache keeps with one rotary key of qk_rope_head_dim shared by all heads;
/// each head's key is [its qk_nope_head_dim up-projection of the latent,
/// the shared rotary key], its value a v_head_dim up-projection. The query
/// is projected directly or through a q_lora_rank bottleneck (RMS-normed).
struct MLASpec {
  int64_t qLoraRank = 0;  ///< 0: q_proj straight from the input (V2-Lite)
  int64_t kvLoraRank = 0; ///< 0: no [attention.mla], attention is MHA/GQA
  int64_t qkNopeHeadDim = 0, qkRopeHeadDim = 0, vHeadDim = 0;
  /// Cache elements per token and layer: the latent and the rotary key.
  int64_t cacheWidth() const { return kvLoraRank + qkRopeHeadDim; }
};

struct FFNSpec {
  spec::FFNKind kind = spec::FFNKind::GLU;
  spec::Activation activation = spec::Activation::SiLU;
  int64_t dFF = 0;
  bool bias = false;
};

/// Mixture of experts in place of the dense FFN ([moe]): each token goes
/// through the top_k of n_experts expert FFNs (of the [ffn] kind and
/// activation, d_ff wide each), weighted by the router, plus the shared
/// experts every token passes through.
struct MoESpec {
  int64_t nExperts = 0; ///< 0: no [moe] table, every FFN dense
  int64_t topK = 0;
  int64_t dFF = 0;     ///< per expert; defaults to ffn.d_ff
  spec::Router router = spec::Router::SoftmaxTopK;
  bool normalize = false; ///< the k weights renormalized to sum 1
  bool selectionBias = false; ///< a learned bias added to choose, not weigh
  /// Group-limited routing (DeepSeek): experts in n_group groups, the top
  /// topk_group groups kept (a group's score its best expert's, or with
  /// sigmoid scores the sum of its best two), the top k chosen among them.
  int64_t nGroup = 1, topkGroup = 1;
  double routedScaling = 1.0; ///< the routed experts' weights times this
  int64_t nShared = 0;        ///< shared experts, as one FFN of sharedDFF
  int64_t sharedDFF = 0;      ///< defaults to n_shared_experts * d_ff
  /// Qwen-MoE: the shared expert's output times sigmoid(x . w), w one
  /// learned row (mlp.shared_expert_gate); its FFN is mlp.shared_expert.
  bool sharedGate = false;
  int64_t firstKDense = 0;    ///< the first layers keep the dense FFN
};

struct BlockSpec {
  spec::BlockLayout layout = spec::BlockLayout::Serial;
  /// Parallel blocks: one norm feeds attention and FFN (GPT-J, PaLM,
  /// Falcon) or each has its own (GPT-NeoX).
  bool sharedNorm = true;
};

struct OutputSpec {
  double finalSoftcap = 0.0; ///< Gemma 2: logits -> c * tanh(logits / c)
  double zLoss = 0.0;        ///< training-time term: reported, no effect
  bool bias = false;         ///< the classifier adds lm_head.bias (GPT-J)
  double logitScale = 1.0;   ///< logits times this (Command R: 0.0625)
};

struct WeightsSpec {
  /// The tensor names and layouts of the model family's checkpoints.
  spec::Naming naming = spec::Naming::Llama;
};

/// What one layer computes: the model's attention and FFN, with the keys of
/// every [[layer_overrides]] entry that selects the layer applied in order.
struct LayerSpec {
  AttentionSpec attention;
  FFNSpec ffn;
  bool moe = false; ///< the [moe] experts in place of the dense FFN
};

struct ArchSpec {
  std::string file;
  ModelSpec model;
  NormSpec norm;
  AttentionSpec attention;
  MLASpec mla;
  FFNSpec ffn;
  MoESpec moe;
  BlockSpec block;
  OutputSpec output;
  WeightsSpec weights;
  std::vector<LayerSpec> layers; ///< n_layers entries after parsing
  /// Where each key or table came from, by dotted path ("attention.n_heads").
  std::map<std::string, SourceLoc> locs;

  /// The location of `path`, or of its closest enclosing table, or the file.
  SourceLoc locOf(const std::string &path) const;
  bool isMLA() const { return mla.kvLoraRank > 0; }
  int64_t qDim() const { return attention.nHeads * attention.headDim; }
  int64_t kvDim() const { return attention.nKVHeads * attention.headDim; }
};

/// One problem found in a spec: where, which key, and what is wrong.
struct SpecError {
  SourceLoc loc;
  std::string key;
  std::string message;
  /// "file:line:col: error: key: message"
  std::string str() const;
};

/// The range every numeric spec key must fall in (docs/spec.md lists the
/// same table; `archc check --limits` prints it). The bounds keep every
/// derived count inside int64, every dimension inside the library's int32
/// descriptors and the kernels' indexing, and every derived float finite in
/// f32. Keys are matched by their last component.
struct KeyBound {
  const char *key;
  double min, max;
  bool integer;
  const char *why;
};
const std::vector<KeyBound> &keyBounds();
/// The bound of a key by its last component; null for keys without one.
const KeyBound *findKeyBound(const std::string &key);

/// Model names become C identifiers' neighbours and file names: letters,
/// digits, '_', '.' and '-', starting with a letter or digit, at most this
/// many bytes.
constexpr size_t kMaxModelNameLength = 64;
/// Spec files larger than this are rejected before parsing.
constexpr size_t kMaxSpecBytes = 1 << 20;

/// Reads a regular file of at most `maxBytes` into `text`. A FIFO or a
/// device is refused without blocking; false with `error` ("cannot open:
/// ...", "not a regular file", "is N bytes; at most M are read", "cannot
/// read") otherwise, the caller naming the file.
bool readRegularFile(const std::string &path, size_t maxBytes,
                     std::string &text, std::string &error);

/// Reads a spec file: a regular file of at most kMaxSpecBytes (a FIFO or a
/// device is refused without blocking). False with `error` set otherwise.
bool readSpecText(const std::string &path, std::string &text,
                  std::string &error);

/// Parses and validates a spec. Returns nothing and fills `errors` on failure.
std::optional<ArchSpec> parseSpecFile(const std::string &path,
                                      std::vector<SpecError> &errors);
std::optional<ArchSpec> parseSpecString(const std::string &text,
                                        const std::string &path,
                                        std::vector<SpecError> &errors);

} // namespace arch

#endif // ARCHC_SPEC_ARCHSPEC_H
