//===- SpecReport.cpp - Analytic figures of a spec ------------------------===//
//
// Parameter count, weight and KV-cache bytes, and FLOPs per token, derived
// from the spec alone. `archc check` prints these; they must equal the
// figures published for real models.
//
//===----------------------------------------------------------------------===//
#include "compiler/spec/ArchSpec.h"

namespace arch {

SpecReport analyzeSpec(const ArchSpec &s) {
  SpecReport r;
  const int64_t d = s.model.dModel, v = s.model.vocabSize;
  const int64_t q = s.qDim(), kv = s.kvDim();
  const int64_t normWidth = s.norm.bias ? 2 : 1; // weight (+ bias) per dim
  const int64_t normParams = normWidth * d;
  const bool oneNorm = s.block.layout == spec::BlockLayout::Parallel &&
                       s.block.sharedNorm;
  const int64_t normsPerLayer =
      oneNorm ? 1 : s.norm.placement == spec::NormPlacement::Sandwich ? 4 : 2;
  const int64_t attnMat = d * q + 2 * d * kv + q * d;
  const int64_t attnBias = (s.attention.qkvBias ? q + 2 * kv : 0) +
                           (s.attention.outBias ? d : 0);
  int64_t layerParams = 0, layerMatmul = 0;
  // Layers may differ (overrides of the FFN or QK-norm).
  for (const LayerSpec &l : s.layers) {
    const bool glu = l.ffn.kind == spec::FFNKind::GLU;
    const int64_t ff = l.ffn.dFF;
    const int64_t ffnMat = (glu ? 3 : 2) * d * ff;
    const int64_t ffnBias = l.ffn.bias ? (glu ? 2 : 1) * ff + d : 0;
    const int64_t qkNorm =
        l.attention.qkNorm == spec::QKNorm::Head
            ? 2 * s.attention.headDim * normWidth
        : l.attention.qkNorm == spec::QKNorm::Full ||
                  l.attention.qkNorm == spec::QKNorm::HeadSeparate
            ? (q + kv) * normWidth
            : 0;
    // Shaw: relative key and value tables [2 clip + 1, head_dim] per layer.
    const int64_t shaw = l.attention.position.kind == spec::PositionKind::Shaw
                             ? 2 * (2 * l.attention.position.clip + 1) *
                                   s.attention.headDim
                             : 0;
    layerParams += attnMat + ffnMat + attnBias + ffnBias + qkNorm + shaw +
                   normsPerLayer * normParams;
    layerMatmul += attnMat + ffnMat;
  }
  r.embeddingParams = v * d * (s.model.tieEmbeddings ? 1 : 2) +
                      (s.output.bias ? v : 0);
  if (s.attention.position.kind == spec::PositionKind::Learned)
    r.embeddingParams += (s.model.maxSeqLen + s.attention.position.offset) * d;
  // T5: one [buckets, heads] table shared by every layer.
  if (s.attention.position.kind == spec::PositionKind::T5Bias)
    r.embeddingParams += s.attention.position.buckets * s.attention.nHeads;
  r.params = layerParams + (s.norm.finalNorm ? normParams : 0) +
             (s.norm.embeddingNorm ? normParams : 0) + r.embeddingParams;
  r.weightBytes = r.params * 4;
  r.kvBytesPerToken = 2 * s.model.nLayers * kv * 4;
  // The classifier is a matmul per token; the embedding is a lookup.
  r.matmulParamsPerToken = layerMatmul + v * d;
  r.classifierParams = v * d;
  // q·k and p·v: 2 FLOPs each per head dim, per head, per past token.
  r.attnFlopsPerCtx = 2 * 2 * s.model.nLayers * q;
  return r;
}

double SpecReport::decodeFlopsPerToken(int64_t ctx) const {
  return 2.0 * matmulParamsPerToken + double(attnFlopsPerCtx) * ctx;
}

double SpecReport::prefillFlopsPerToken(int64_t n) const {
  // Token i (0-based) attends to i + 1 positions: mean (n + 1) / 2.
  return 2.0 * matmulParamsPerToken + double(attnFlopsPerCtx) * (n + 1) / 2.0;
}

} // namespace arch
