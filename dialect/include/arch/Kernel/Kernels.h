//===- Kernels.h - The kernel catalogue ------------------------*- C++ -*-===//
//
// A KernelSpec names one compiled kernel: a typed description of its kind
// with every static value baked into it. Two ops with equal specs share one
// kernel, so a model with 32 identical layers compiles each distinct kernel
// once. Each kind declares its argument list once (args()): the Halide
// inputs (Algorithms.cpp), the C prototype and the glue's call site are
// all derived from it; and its static values once (fields()): the kernel's
// name, equality and the `archk.call` attribute that carries it in the IR
// are derived from those. Plain data: arch-lower-to-kernels produces specs
// (as attributes), the Halide side compiles them; the enums are the
// dialect's.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_KERNELS_H
#define ARCHC_LOWERING_KERNELS_H

#include "arch/Dialect/ArchEnums.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace arch {

/// Whether a field visitor reads fields (has(name): the description holds
/// it) rather than writes them.
template <class F, class = void> struct ReadsFields : std::false_type {};
template <class F>
struct ReadsFields<F, std::void_t<decltype(std::declval<F &>().has(""))>>
    : std::true_type {};

/// Whether a field visitor keeps tags (tag(t): the key of a kernel name).
template <class F, class = void> struct KeepsTags : std::false_type {};
template <class F>
struct KeepsTags<F, std::void_t<decltype(std::declval<F &>().tag(0))>>
    : std::true_type {};

/// A field most kernels of its kind leave at `def` (a 16-bit weight type):
/// spelled in the name, the key and the attribute only when it differs, so
/// that the usual kernels keep their names; read when present. Where a
/// kind has several such fields, each gets a distinct `tag` (> 0), which
/// the name's integers carry before the field's, so that no two sets of
/// fields spell the same integers.
template <class F, class T>
void optionalField(F &&f, const char *name, T &v, T def, int64_t tag = 0) {
  using Visitor = std::remove_reference_t<F>;
  if constexpr (ReadsFields<Visitor>::value) {
    if (f.has(name))
      f(name, v);
  } else if (v != def) {
    if constexpr (KeepsTags<Visitor>::value)
      if (tag)
        f.tag(tag);
    f(name, v);
  }
}

/// One argument of a kernel, in call order; the output comes last.
struct KernelArg {
  enum Kind : uint8_t {
    Input,    ///< an f32 buffer the kernel reads
    Tokens,   ///< the i32 buffer of token ids
    Position, ///< int32_t: the position of the first token row
    Output,   ///< the f32 buffer the kernel writes
  };
  Kind kind;
  const char *name;
  int rank = 0; ///< dimensions of a buffer (innermost first in Halide)
  StoreType elem = StoreType::f32; ///< an Input's or the Output's elements
};

/// Rows of `table` [vocab, d_model] picked by token, times `scale`.
struct EmbedKernel {
  int64_t vocab, dModel;
  double scale;
  template <class F> void fields(F &&f) {
    f("vocab", vocab), f("d_model", dModel), f("scale", scale);
  }
};

/// RMS or layer norm of `groups` groups of `width` per token, with one
/// weight (and bias) shared by the groups or one per group; stored as
/// `store` (bf16: rounded for the bf16 dot products that read it,
/// archk-bf16-inputs).
struct NormKernel {
  int64_t width, groups;
  NormKind kind;
  bool bias, weightPerGroup;
  double eps, weightOffset;
  StoreType store = StoreType::f32;
  template <class F> void fields(F &&f) {
    f("width", width), f("groups", groups), f("norm", kind), f("bias", bias),
        f("weight_per_group", weightPerGroup), f("eps", eps),
        f("weight_offset", weightOffset);
    optionalField(f, "store", store, StoreType::f32);
  }
};

/// Rotary embedding of the first `rotaryDim` dims of each head.
struct RopeKernel {
  int64_t heads, headDim, rotaryDim;
  RopeStyle style;
  RopeScaling scaling;
  int64_t originalMaxSeqLen;
  double theta, factor, lowFreqFactor, highFreqFactor, betaFast, betaSlow;
  double mscale = 1.0, mscaleAllDim = 0.0; ///< yarn's factor on cos and sin
  /// longrope: each rotated pair's factor, and the factor on cos and sin.
  std::vector<double> factors;
  double attentionFactor = 1.0;
  template <class F> void fields(F &&f) {
    f("heads", heads);
    rotation(f, false);
  }
  /// The fields but `heads`, named with "rope_" where `epilogue` (a
  /// linear's: LinearKernel).
  template <class F> void rotation(F &&f, bool epilogue) {
    auto name = [&](const char *plain, const char *prefixed) {
      return epilogue ? prefixed : plain;
    };
    f(name("head_dim", "rope_head_dim"), headDim),
        f(name("rotary_dim", "rope_rotary_dim"), rotaryDim),
        f(name("style", "rope_style"), style),
        f(name("scaling", "rope_scaling"), scaling),
        f(name("original_max_seq_len", "rope_original_max_seq_len"),
          originalMaxSeqLen),
        f(name("theta", "rope_theta"), theta),
        f(name("factor", "rope_factor"), factor),
        f(name("low_freq_factor", "rope_low_freq_factor"), lowFreqFactor),
        f(name("high_freq_factor", "rope_high_freq_factor"), highFreqFactor),
        f(name("beta_fast", "rope_beta_fast"), betaFast),
        f(name("beta_slow", "rope_beta_slow"), betaSlow),
        f(name("mscale", "rope_mscale"), mscale),
        f(name("mscale_all_dim", "rope_mscale_all_dim"), mscaleAllDim),
        f(name("factors", "rope_factors"), factors),
        f(name("attention_factor", "rope_attention_factor"), attentionFactor);
  }
};

/// x [T, K] times weight [N, K] (panel = 0) or packed [ceil(N / panel), K,
/// panel]. One kernel for every row count: it specializes on the rows,
/// GEMM register tiles for >= 4, GEMV below (unless `oneRow`: the glue
/// knows it is called with one row only, as the classifier is). A packed
/// weight may be 16-bit (`weight`), widened to f32 in registers. A bf16
/// one packed in `pairs` ([ceil(N / panel), K / 2, panel, 2], passed as
/// [.., K / 2, 2 * panel]) takes the bf16 dot product: x rounded to bf16,
/// products of pairs summed in f32. With `glu` the weight holds 2N
/// columns, the gate's N then the up's N (packed: each half on its own,
/// [2 ceil(N / panel), ..]), and the output is activation(gate) * up: the
/// gated FFN's gating as the GEMM's epilogue (arch.linear's glu; no bias).
/// archk-bf16-inputs gives a bf16 dot product's x as bf16 (`input`: its
/// producer rounded it), and has a glu linear whose products only such
/// linears read store them as bf16 (`store`).
struct LinearKernel {
  int64_t K, N;
  bool bias;
  int64_t panel;
  bool oneRow;
  StoreType weight = StoreType::f32;
  bool pairs = false;
  bool glu = false;
  Activation activation = Activation::identity;
  bool residual = false; ///< adds the `residual` input [T, N] (not with glu)
  StoreType input = StoreType::f32; ///< x's elements
  StoreType store = StoreType::f32; ///< the output's elements
  /// RoPE on the output's first rope.heads heads as the epilogue
  /// (arch.rope {epilogue}): the output is [T, N / head_dim, head_dim],
  /// its other heads as the matmul made them. None where heads is 0.
  RopeKernel rope{};
  template <class F> void fields(F &&f) {
    f("K", K), f("N", N), f("bias", bias), f("panel", panel),
        f("one_row", oneRow);
    optionalField(f, "weight", weight, StoreType::f32);
    optionalField(f, "pairs", pairs, false);
    // (Tagged: a glu linear's name must not read as another weight type.)
    optionalField(f, "glu", glu, false, 9);
    if (glu)
      f("activation", activation);
    optionalField(f, "residual", residual, false, 10);
    optionalField(f, "input", input, StoreType::f32, 11);
    optionalField(f, "store", store, StoreType::f32, 12);
    optionalField(f, "rope_heads", rope.heads, int64_t(0), 13);
    if (rope.heads)
      rope.rotation(f, true);
  }
};

/// weight [N, K] -> [ceil(N / panel), K, panel], zeros past N; with
/// `groups` G, each block of N / G rows packed on its own (the experts of
/// a mixture): [G * ceil(N / G / panel), K, panel]; stored as `store`
/// (rounded to nearest even when 16-bit); in `pairs` (bf16, K even), each
/// panel's rows two at a time: [.., K / 2, panel, 2], written through its
/// view [.., K / 2, 2 * panel].
struct PackKernel {
  int64_t K, N, panel, groups = 1;
  StoreType store = StoreType::f32;
  bool pairs = false;
  template <class F> void fields(F &&f) {
    f("K", K), f("N", N), f("panel", panel), f("groups", groups);
    optionalField(f, "store", store, StoreType::f32);
    optionalField(f, "pairs", pairs, false);
  }
};

/// The top_k of `experts` experts per token from router logits [T, E]
/// (plus a selection-only `bias` [E]): expert indices [T, k], best first,
/// ties to the lower index; group-limited when nGroup > 1 (arch.route).
struct RouteKernel {
  int64_t experts, topK;
  RouterScoring scoring;
  int64_t nGroup, topkGroup;
  bool bias;
  template <class F> void fields(F &&f) {
    f("experts", experts), f("top_k", topK), f("scoring", scoring),
        f("n_group", nGroup), f("topk_group", topkGroup), f("bias", bias);
  }
};

/// The weights [T, k] of the experts [T, k] a route kernel chose: their
/// scores from the logits, over the k's sum when `normalize`, times
/// `scaling`.
struct RouteWeightsKernel {
  int64_t experts, topK;
  RouterScoring scoring;
  bool normalize;
  double scaling;
  template <class F> void fields(F &&f) {
    f("experts", experts), f("top_k", topK), f("scoring", scoring),
        f("normalize", normalize), f("scaling", scaling);
  }
};

/// Rows of x [T, width] gathered: out[r] = x[rows[r]] (the tokens routed
/// to the experts, expert by expert).
struct GatherKernel {
  int64_t width;
  /// The rows' elements (bf16: rounded for the experts' bf16 dot
  /// products, archk-bf16-inputs).
  StoreType store = StoreType::f32;
  template <class F> void fields(F &&f) {
    f("width", width);
    optionalField(f, "store", store, StoreType::f32);
  }
};

/// The experts' outputs y [T * k, width] combined per token:
/// out[t] = sum over j < k of weights[t, j] * y[slots[t, j]], j ascending.
struct CombineKernel {
  int64_t width, topK;
  template <class F> void fields(F &&f) {
    f("width", width), f("top_k", topK);
  }
};

/// Causal attention over the context: one task per (head, query row)
/// (arch.attention), or tiled with an online softmax when `blockQ` > 0
/// (arch.flash_attention: tiles of blockQ positions x the query heads of a
/// key/value head against blocks of blockKV keys; with fewer than blockQ
/// rows, chunks of splitKV keys in parallel, their partials merged). Keys
/// and values are read as `kv` (the caches' element type), computed in f32
/// (the tiles' products in bf16 pairs with `pairs`),
/// from a head-major cache (`kvByHead`: each head's positions consecutive)
/// or a position-major one (a ring: each position's heads consecutive).
/// Values have heads of vHeadDim (MLA's differ from the keys'). A window
/// may be dilated (keys `dilation` apart) and widened by global positions.
struct AttentionKernel {
  int64_t heads, kvHeads, headDim;
  bool alibi;
  int64_t window, t5Buckets, t5MaxDistance, shawClip;
  double scale, softcap;
  int64_t blockQ = 0, blockKV = 0, splitKV = 0;
  StoreType kv = StoreType::f32;
  bool kvByHead = false;
  int64_t vHeadDim = 0;
  int64_t dilation = 1;         ///< a dilated window's key spacing
  std::vector<int64_t> globals; ///< global positions (with a window)
  /// Block-random keys: per query block, randomBlocks drawn key blocks of
  /// blockSize positions (hashed with randomSeed).
  int64_t randomBlocks = 0, blockSize = 0, randomSeed = 0;
  /// The tiles' Q.K^T and P.V as bf16 dot products (vdpbf16ps): queries,
  /// keys, probabilities and values rounded to bf16, sums in f32.
  bool pairs = false;
  /// The output's elements (bf16: rounded for the bf16 dot products that
  /// read it, archk-bf16-inputs).
  StoreType store = StoreType::f32;
  template <class F> void fields(F &&f) {
    f("heads", heads), f("kv_heads", kvHeads), f("head_dim", headDim),
        f("alibi", alibi), f("window", window), f("t5_buckets", t5Buckets),
        f("t5_max_distance", t5MaxDistance), f("shaw_clip", shawClip),
        f("scale", scale), f("softcap", softcap), f("block_q", blockQ),
        f("block_kv", blockKV), f("split_kv", splitKV), f("kv", kv),
        f("kv_by_head", kvByHead), f("v_head_dim", vHeadDim);
    optionalField(f, "dilation", dilation, int64_t(1), 1);
    optionalField(f, "globals", globals, std::vector<int64_t>(), 2);
    optionalField(f, "random_blocks", randomBlocks, int64_t(0), 3);
    optionalField(f, "block_size", blockSize, int64_t(0), 4);
    optionalField(f, "random_seed", randomSeed, int64_t(0), 5);
    optionalField(f, "pairs", pairs, false, 6);
    optionalField(f, "store", store, StoreType::f32, 7);
  }
};

/// x plus a learned or sinusoidal embedding of each row's position.
struct PosEmbedKernel {
  int64_t dModel;
  PosEmbedKind kind;
  int64_t offset, rows;
  template <class F> void fields(F &&f) {
    f("d_model", dModel), f("embedding", kind), f("offset", offset),
        f("rows", rows);
  }
};

/// Row-wise ops on [T, width]: a + b, act(a) * b, act(a), a * factor,
/// factor * tanh(a / factor), and a copy of a into a (column) view,
/// converted to `store` (a cache append into an f16 or bf16 cache; a glu
/// or activation stores bf16 for bf16 dot products, archk-bf16-inputs).
struct ElementwiseKernel {
  enum Op : uint8_t { Add, Glu, Activate, Scale, Softcap, Copy };
  Op op;
  int64_t width;
  Activation activation = Activation::identity;
  double factor = 0;
  StoreType store = StoreType::f32;
  /// The op is the kind (its name); the fields are those it uses.
  template <class F> void fields(F &&f) {
    f("width", width);
    if (op == Glu || op == Activate)
      f("activation", activation);
    if (op == Scale || op == Softcap)
      f("factor", factor);
    if (op == Copy)
      f("store", store);
    else if (op == Glu || op == Activate) // (bf16: archk-bf16-inputs)
      optionalField(f, "store", store, StoreType::f32);
  }
};

/// Rows [T, heads, head_dim] appended to a head-major KV cache: the
/// cache's window [heads, T positions, head_dim] is given transposed, as
/// [T, heads, head_dim] with the sequence's head stride; converted to
/// `store`. One call per cache, whatever the heads.
struct AppendKernel {
  int64_t heads, headDim;
  StoreType store = StoreType::f32;
  template <class F> void fields(F &&f) {
    f("heads", heads), f("head_dim", headDim), f("store", store);
  }
};

/// Heads of x (one, shared, or `heads`) copied into heads of a view:
/// out[t, h, c] = x[t, shared ? 0 : h, c] for c < width, both strided
/// (arch.heads_split and arch.heads_concat).
struct HeadsCopyKernel {
  int64_t heads, width;
  bool shared;
  template <class F> void fields(F &&f) {
    f("heads", heads), f("width", width), f("shared", shared);
  }
};

/// Per head h < heads: x[t, h, :K] times weight block h, [N, K] (rows
/// h N ..< (h + 1) N) or, `kMajor`, [K, N] (rows h K ..< (h + 1) K)
/// (arch.head_linear).
struct HeadLinearKernel {
  int64_t heads, K, N;
  bool kMajor;
  template <class F> void fields(F &&f) {
    f("heads", heads), f("K", K), f("N", N), f("k_major", kMajor);
  }
};

/// Differential attention's maps combined: out = a - lambda * b over
/// [T, width], lambda = exp(lambda_q1 . lambda_k1) - exp(lambda_q2 .
/// lambda_k2) + lambdaInit from four vectors of `dim` (arch.differential).
struct DifferentialKernel {
  /// The four lambda vectors' argument names, in order.
  static constexpr const char *lambdas[4] = {"lambda_q1", "lambda_k1",
                                             "lambda_q2", "lambda_k2"};
  int64_t width, dim;
  double lambdaInit;
  template <class F> void fields(F &&f) {
    f("width", width), f("dim", dim), f("lambda_init", lambdaInit);
  }
};

/// Causal linear attention's outputs (arch.linear_attention): q [T, heads,
/// headDim], k [T, kvHeads, headDim], v [T, kvHeads, vHeadDim] and the
/// state [kvHeads, headDim, columns] the earlier calls left (columns =
/// vHeadDim, plus the normalizer's when `normalize`), phi = `map` on q and
/// k. Rows in chunks of `chunk` (0: the call's rows, one chunk): a chunk
/// meets the state at its start (the state plus a prefix of per-chunk
/// sums of phi(k) v^T) and its own earlier rows. The state is not written
/// (LinearStateKernel does, after).
struct LinearAttentionKernel {
  int64_t heads, kvHeads, headDim, vHeadDim;
  FeatureMap map;
  bool normalize;
  double scale;
  int64_t chunk;
  template <class F> void fields(F &&f) {
    f("heads", heads), f("kv_heads", kvHeads), f("head_dim", headDim),
        f("v_head_dim", vHeadDim), f("map", map), f("normalize", normalize),
        f("scale", scale), f("chunk", chunk);
  }
};

/// The state after a call: state [kvHeads, headDim, columns] plus the sum
/// over the call's rows of phi(k_t) [v_t, 1] (the 1 only with `normalize`),
/// written in place (`out` is `state`: each element reads its own value
/// once, first).
struct LinearStateKernel {
  int64_t kvHeads, headDim, vHeadDim;
  FeatureMap map;
  bool normalize;
  template <class F> void fields(F &&f) {
    f("kv_heads", kvHeads), f("head_dim", headDim), f("v_head_dim", vHeadDim),
        f("map", map), f("normalize", normalize);
  }
  int64_t columns() const { return vHeadDim + (normalize ? 1 : 0); }
};

class KernelSpec {
public:
  using Description =
      std::variant<EmbedKernel, NormKernel, LinearKernel, PackKernel,
                   RopeKernel, AttentionKernel, PosEmbedKernel,
                   ElementwiseKernel, AppendKernel, RouteKernel,
                   RouteWeightsKernel, GatherKernel, CombineKernel,
                   HeadsCopyKernel, HeadLinearKernel, DifferentialKernel,
                   LinearAttentionKernel, LinearStateKernel>;
  template <class T> KernelSpec(T d) : desc(std::move(d)) {}

  /// A description of kind `kind` (a kindName()), its fields zero; none
  /// for a name no kind has.
  static std::optional<KernelSpec> ofKind(std::string_view kind);

  /// The description, if it is a `T`.
  template <class T> const T *get() const { return std::get_if<T>(&desc); }
  const Description &description() const { return desc; }
  /// Calls `f(name, field)` for each static value, in declaration order:
  /// int64_t, bool, double, std::vector<int64_t>, std::vector<double> or
  /// one of the dialect's enums.
  template <class F> void forEachField(F &&f) {
    std::visit([&](auto &d) { d.fields(f); }, desc);
  }

  /// What the name starts with: "linear", "attention", "copy", ...
  const char *kindName() const;
  /// A C identifier unique to the description, e.g.
  /// archk_linear_288x768x0x64x0.
  std::string name() const;
  /// Every static value spelled exactly (reals in hexadecimal), e.g.
  /// "linear K=288 N=768 bias=0 panel=64 one_row=0": the kernel cache's
  /// key, where the name's hash of the reals could collide.
  std::string signature() const;
  /// The arguments in call order, declared once per kind.
  std::vector<KernelArg> args() const;
  /// `int NAME(halide_buffer_t *, ..., int32_t, ...);`
  std::string cPrototype() const;

  /// The field that says how the kernel stores its rows, where it can
  /// store them rounded for bf16 dot products (archk-bf16-inputs): a
  /// norm's, attention's, a gather's, a glu's or an activation's, a glu
  /// linear's over panels; null for any other kernel.
  StoreType *roundingStore();
  const StoreType *roundingStore() const {
    return const_cast<KernelSpec *>(this)->roundingStore();
  }

  /// The rotation the kernel applies: a RoPE kernel's, or a linear's rope
  /// epilogue's (arch-fuse-rope); null for any other kernel.
  const RopeKernel *rotation() const;

  /// Same kind and static values.
  bool operator==(const KernelSpec &o) const;

private:
  Description desc;
};

} // namespace arch

#endif // ARCHC_LOWERING_KERNELS_H
