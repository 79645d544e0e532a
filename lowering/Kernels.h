//===- Kernels.h - The kernel catalogue ------------------------*- C++ -*-===//
//
// A KernelSpec names one compiled kernel: its kind and every static value
// baked into it. Two ops with equal specs share one kernel, so a model with
// 32 identical layers compiles each distinct kernel once. Plain data: the
// glue emitter (MLIR side) produces specs, the Halide side compiles them.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_KERNELS_H
#define ARCHC_LOWERING_KERNELS_H

#include <cstdint>
#include <string>
#include <vector>

namespace arch {

enum class KernelKind {
  Embed,      ///< ints: vocab, d_model             reals: scale
  Norm,       ///< ints: width, kind (0 rms, 1 layer), bias, groups with
              ///<       their own weight (0 = one shared weight), groups
              ///< reals: eps, weight offset
  LinearGemm, ///< ints: K, N, bias, panel (0: [N, K] weight; else packed
              ///<       [ceil(N / panel), K, panel]) (>= 4 token rows)
  LinearGemv, ///< ints: K, N, bias, panel (any rows; decode)
  Pack,       ///< ints: K, N, panel: [N, K] -> [ceil(N / panel), K, panel]
  Rope,       ///< ints: n_heads, head_dim, rotary_dim, style, scaling,
              ///<       original_max_seq_len
              ///< reals: theta, factor, low/high freq factor, beta fast/slow
  Attention,  ///< ints: n_heads, n_kv_heads, head_dim, alibi, window,
              ///<       t5 buckets (0 = none), t5 max distance, shaw clip
              ///< reals: scale, softcap
  Activation, ///< ints: width, activation (arch::Activation)
  Glu,        ///< ints: width, activation (arch::Activation)
  Add,        ///< ints: width
  PosEmbed,   ///< ints: d_model, kind (0 learned, 1 sinusoidal), offset, rows
  Softcap,    ///< ints: width                      reals: cap
  Scale,      ///< ints: width                      reals: factor
  Copy,       ///< ints: width (rows into a view: cache appends, concats)
};

struct KernelSpec {
  KernelKind kind;
  std::vector<int64_t> ints;
  std::vector<double> reals;

  /// A C identifier unique to (kind, ints, reals), e.g. archk_linear_gemm_288x768.
  std::string name() const;
  bool operator==(const KernelSpec &o) const {
    return kind == o.kind && ints == o.ints && reals == o.reals;
  }
};

const char *kindName(KernelKind k);

/// The C parameter list of kernel `k`, in call order: buffers are
/// `halide_buffer_t *`, the position an `int32_t`, the output last.
std::string cParameters(const KernelSpec &k);

} // namespace arch

#endif // ARCHC_LOWERING_KERNELS_H
