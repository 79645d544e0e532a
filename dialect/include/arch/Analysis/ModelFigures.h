//===- ModelFigures.h - Size and cost figures read off the IR --*- C++ -*-===//
//
// What `archc check` reports: parameters, weight and cache bytes, FLOPs per
// token. Computed from the arch IR after the pipeline has run, so a pass
// that fuses, re-lays out or adds a cache changes them in one place.
//
//===----------------------------------------------------------------------===//
#ifndef ARCH_ANALYSIS_MODELFIGURES_H
#define ARCH_ANALYSIS_MODELFIGURES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <cstdint>

namespace arch {

struct ModelFigures {
  int64_t params = 0;          ///< elements of the loaded weights
  int64_t embeddingParams = 0; ///< token/position tables, T5 bias, classifier
  /// What decoding one token reads: the routed experts it is sent to (top_k
  /// of each layer's), not the others, nor the embedding rows looked up.
  int64_t activeParams = 0;
  int64_t weightBytes = 0;     ///< bytes of the loaded weights
  int64_t kvBytesPerToken = 0; ///< bytes every position adds to tokens caches
  int64_t kvElementsPerToken = 0; ///< and their elements
  int64_t fixedCacheBytes = 0; ///< ring and state caches, whatever the length
  /// Weights multiplied per token: K x N of every linear, counted as if the
  /// classifier ran on every token (as published FLOP counts do).
  int64_t matmulParamsPerToken = 0;
  int64_t matmulWeightBytes = 0; ///< bytes of those weights (decode reads)
  int64_t classifierParams = 0; ///< K x N of the classifier
  /// K x N of the matmuls (among those above) that compute the last
  /// token's row only, whatever the call's length: the classifier, and
  /// the last layer after its attention (arch-sink-last-token). A prefill
  /// of n tokens multiplies them once, not n times.
  int64_t lastRowParams = 0;
  int64_t attnFlopsPerCtx = 0;  ///< attention FLOPs per (token, past token)
  /// Linear attention: FLOPs per token against the state (its outputs and
  /// its update), whatever the context, and per (token, earlier row of its
  /// chunk) (the intra-chunk part), and the chunk (0: a call's rows).
  int64_t stateFlopsPerToken = 0;
  int64_t chunkFlopsPerPair = 0;
  int64_t linearChunk = 0;

  /// Multiply-add counted as 2 FLOPs. Decode: one token at context `ctx`.
  double decodeFlopsPerToken(int64_t ctx) const;
  /// Mean per token over a prefill of `n` tokens starting at position 0.
  double prefillFlopsPerToken(int64_t n) const;
};

/// The figures of `module` (with @forward, and @prepare_params if weights
/// are prepared); reports an error on the module when it has no @forward.
mlir::FailureOr<ModelFigures> computeModelFigures(mlir::ModuleOp module);

} // namespace arch

#endif // ARCH_ANALYSIS_MODELFIGURES_H
