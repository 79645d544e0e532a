//===- Kernels.h - The kernel catalogue ------------------------*- C++ -*-===//
//
// A KernelSpec names one compiled kernel: a typed description of its kind
// with every static value baked into it. Two ops with equal specs share one
// kernel, so a model with 32 identical layers compiles each distinct kernel
// once. Each kind declares its argument list once (args()): the Halide
// inputs (Algorithms.cpp), the C prototype and the glue's call site are
// all derived from it. Plain data: the glue emitter (MLIR side) produces
// specs, the Halide side compiles them; the enums are the dialect's.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_KERNELS_H
#define ARCHC_LOWERING_KERNELS_H

#include "arch/Dialect/ArchEnums.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace arch {

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
};

/// Rows of `table` [vocab, d_model] picked by token, times `scale`.
struct EmbedKernel {
  int64_t vocab, dModel;
  double scale;
};

/// RMS or layer norm of `groups` groups of `width` per token, with one
/// weight (and bias) shared by the groups or one per group.
struct NormKernel {
  int64_t width, groups;
  NormKind kind;
  bool bias, weightPerGroup;
  double eps, weightOffset;
};

/// x [T, K] times weight [N, K] (panel = 0) or packed [ceil(N / panel), K,
/// panel]. One kernel for every row count: it specializes on the rows,
/// GEMM register tiles for >= 4, GEMV below (unless `oneRow`: the glue
/// knows it is called with one row only, as the classifier is).
struct LinearKernel {
  int64_t K, N;
  bool bias;
  int64_t panel;
  bool oneRow;
};

/// weight [N, K] -> [ceil(N / panel), K, panel], zeros past N.
struct PackKernel {
  int64_t K, N, panel;
};

/// Rotary embedding of the first `rotaryDim` dims of each head.
struct RopeKernel {
  int64_t heads, headDim, rotaryDim;
  RopeStyle style;
  RopeScaling scaling;
  int64_t originalMaxSeqLen;
  double theta, factor, lowFreqFactor, highFreqFactor, betaFast, betaSlow;
};

/// Causal attention over the context (arch.attention).
struct AttentionKernel {
  int64_t heads, kvHeads, headDim;
  bool alibi;
  int64_t window, t5Buckets, t5MaxDistance, shawClip;
  double scale, softcap;
};

/// x plus a learned or sinusoidal embedding of each row's position.
struct PosEmbedKernel {
  int64_t dModel;
  PosEmbedKind kind;
  int64_t offset, rows;
};

/// Row-wise ops on [T, width]: a + b, act(a) * b, act(a), a * factor,
/// factor * tanh(a / factor), and a copy of a into a (column) view.
struct ElementwiseKernel {
  enum Op : uint8_t { Add, Glu, Activate, Scale, Softcap, Copy };
  Op op;
  int64_t width;
  Activation activation = Activation::identity;
  double factor = 0;
};

class KernelSpec {
public:
  using Description =
      std::variant<EmbedKernel, NormKernel, LinearKernel, PackKernel,
                   RopeKernel, AttentionKernel, PosEmbedKernel,
                   ElementwiseKernel>;
  template <class T> KernelSpec(T d) : desc(std::move(d)) {}

  /// The description, if it is a `T`.
  template <class T> const T *get() const { return std::get_if<T>(&desc); }
  const Description &description() const { return desc; }

  /// What the name starts with: "linear", "attention", "copy", ...
  const char *kindName() const;
  /// A C identifier unique to the description, e.g.
  /// archk_linear_288x768x0x64x0.
  std::string name() const;
  /// The arguments in call order, declared once per kind.
  std::vector<KernelArg> args() const;
  /// `int NAME(halide_buffer_t *, ..., int32_t, ...);`
  std::string cPrototype() const;

  /// Same kind and static values.
  bool operator==(const KernelSpec &o) const;

private:
  Description desc;
};

} // namespace arch

#endif // ARCHC_LOWERING_KERNELS_H
