//===- ModelFigures.cpp - Size and cost figures read off the IR -----------===//
//
// Parameters are the module's loaded weights (prepared ones are derived
// from them); a value's weights are found by following it back through
// weight-only ops and, for a prepared weight, through the arch.assign of
// @prepare_params that computes it.
//
//===----------------------------------------------------------------------===//
#include "arch/Analysis/ModelFigures.h"
#include "arch/Dialect/ArchDialect.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>

using namespace mlir;

namespace arch {

double ModelFigures::decodeFlopsPerToken(int64_t ctx) const {
  return 2.0 * matmulParamsPerToken + double(attnFlopsPerCtx) * ctx +
         double(stateFlopsPerToken + chunkFlopsPerPair);
}

double ModelFigures::prefillFlopsPerToken(int64_t n) const {
  // Token i (0-based) attends to i + 1 positions: mean (n + 1) / 2; under
  // linear attention to the i mod chunk + 1 rows of its chunk before it.
  int64_t chunk = linearChunk ? std::min(linearChunk, n) : n;
  return 2.0 * matmulParamsPerToken + double(attnFlopsPerCtx) * (n + 1) / 2.0 +
         double(stateFlopsPerToken) +
         double(chunkFlopsPerPair) * (chunk + 1) / 2.0;
}

namespace {

/// Whether `v` is one token's row whatever the call's length: the last
/// token's (arch-sink-last-token's picks, the classifier's input).
static bool oneRow(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 2 && t.getDimSize(0) == 1;
}

class Figures {
public:
  explicit Figures(ModuleOp module) : module(module), symbols(module) {
    if (auto prep = module.lookupSymbol<func::FuncOp>("prepare_params"))
      for (AssignOp a : prep.getOps<AssignOp>())
        assigned[a.getName()] = a.getValue();
  }

  /// Adds to `out` the loaded weights `v` is computed from.
  void loadedSources(Value v, llvm::SetVector<Operation *> &out) {
    SmallVector<Value> work{v};
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value x = work.pop_back_val();
      if (!x || !seen.insert(x).second)
        continue;
      Operation *def = x.getDefiningOp();
      if (!def)
        continue;
      if (auto p = dyn_cast<ParamOp>(def)) {
        auto w = symbols.lookup<WeightOp>(p.getName());
        if (w && !w.getPrepared())
          out.insert(w);
        else if (w)
          work.push_back(assigned.lookup(p.getName()));
        continue;
      }
      llvm::append_range(work, def->getOperands());
    }
  }

  FailureOr<ModelFigures> run();

private:
  /// An attention's tables and cost, tiled or not.
  template <class Op>
  void attention(Op a, llvm::SetVector<Operation *> &embedding) {
    loadedSources(a.getRelBias(), embedding);
    figures.attnFlopsPerCtx +=
        2 * a.getNHeads() * (a.getHeadDim() + a.getValueHeadDim());
  }

  ModelFigures figures;
  ModuleOp module;
  SymbolTable symbols;
  llvm::StringMap<Value> assigned; ///< prepared weight -> its value
};

static int64_t bytesOf(RankedTensorType t) {
  return t.getNumElements() * int64_t(t.getElementTypeBitWidth() / 8);
}

FailureOr<ModelFigures> Figures::run() {
  FailureOr<func::FuncOp> forward = lookupForward(module);
  if (failed(forward))
    return failure();
  func::FuncOp fn = *forward;
  ModelFigures &f = figures;
  for (WeightOp w : module.getOps<WeightOp>())
    if (!w.getPrepared()) {
      f.params += w.getTensorType().getNumElements();
      f.weightBytes += bytesOf(w.getTensorType());
    }
  // As the library allocates them: a ring its rows, or per token where a
  // ring would not be smaller.
  for (CacheOp c : module.getOps<CacheOp>()) {
    int64_t row = bytesOf(c.getRowType());
    int64_t rows = c.getLayout() == CacheLayout::ring    ? ringRows(c)
                   : c.getLayout() == CacheLayout::state ? 1
                                                         : 0;
    if (rows)
      f.fixedCacheBytes += row * rows;
    else {
      f.kvBytesPerToken += row;
      f.kvElementsPerToken += c.getRowElements();
    }
  }
  // Embedding parameters: the tables read by position, and the
  // classifier that produces the logits (through a final scale or cap).
  llvm::SetVector<Operation *> embedding, lookup, classifier;
  // Experts a decoded token does not read: (E - k) / E of each layer's.
  int64_t unread = 0;
  fn.walk([&](Operation *op) {
    if (auto e = dyn_cast<EmbedOp>(op))
      loadedSources(e.getTable(), lookup);
    else if (auto p = dyn_cast<PosEmbedOp>(op))
      loadedSources(p.getTable(), lookup);
    else if (auto m = dyn_cast<MoEOp>(op)) {
      int64_t e = m.getNExperts(), ff = m.getDFf(),
              k = cast<RankedTensorType>(m.getExperts().getType()).getDimSize(1);
      int64_t kn = k * ff * widthOf(m.getInput()) * (m.getGate() ? 3 : 2);
      f.matmulParamsPerToken += kn;
      f.lastRowParams += oneRow(m.getInput()) ? kn : 0;
      f.matmulWeightBytes +=
          kn * int64_t(cast<RankedTensorType>(m.getUp().getType())
                           .getElementTypeBitWidth() /
                       8);
      llvm::SetVector<Operation *> experts;
      for (Value w : {m.getGate(), m.getUp(), m.getDown()})
        loadedSources(w, experts);
      int64_t all = 0;
      for (Operation *w : experts)
        all += cast<WeightOp>(w).getTensorType().getNumElements();
      unread += all / e * (e - k);
    }
    else if (auto a = dyn_cast<LinearAttentionOp>(op)) {
      // Outputs: phi(q) . state per head; update: phi(k) [v, 1]^T per
      // key/value head; in a chunk, a score and a value row per pair.
      int64_t d = a.getHeadDim(), cols = a.getStateColumns();
      f.stateFlopsPerToken +=
          2 * d * cols * (int64_t(a.getNHeads()) + int64_t(a.getNKvHeads()));
      f.chunkFlopsPerPair += 2 * int64_t(a.getNHeads()) * (d + cols);
      f.linearChunk = int64_t(a.getChunk());
    }
    else if (auto a = dyn_cast<AttentionOp>(op))
      attention(a, embedding);
    else if (auto a = dyn_cast<FlashAttentionOp>(op))
      attention(a, embedding);
    else if (auto l = dyn_cast<LinearOp>(op)) {
      // (A glu epilogue's weight has two halves of the result's width.)
      int64_t kn = widthOf(l.getInput()) * widthOf(l.getResult()) *
                   (l.getGlu() ? 2 : 1);
      auto w = cast<RankedTensorType>(l.getWeight().getType());
      f.matmulWeightBytes += kn * int64_t(w.getElementTypeBitWidth() / 8);
      // Over a cache's context (naive MLA's up-projection of every cached
      // latent), each call multiplies every past position.
      Value in = l.getInput();
      while (auto sp = in.getDefiningOp<SplitOp>())
        in = sp.getInput();
      if (in.getDefiningOp<CacheAppendOp>())
        f.attnFlopsPerCtx += 2 * kn;
      else {
        f.matmulParamsPerToken += kn;
        f.lastRowParams += oneRow(in) ? kn : 0;
      }
    }
    else if (auto l = dyn_cast<HeadLinearOp>(op)) {
      int64_t kn = widthOf(l.getInput()) * widthOf(l.getResult()) /
                   int64_t(l.getHeads());
      f.matmulParamsPerToken += kn;
      f.lastRowParams += oneRow(l.getInput()) ? kn : 0;
      f.matmulWeightBytes += kn * 4;
    }
  });
  Value logits = fn.getBody().front().getTerminator()->getOperand(0);
  while (isa_and_nonnull<SoftcapOp, ScaleOp>(logits.getDefiningOp()))
    logits = logits.getDefiningOp()->getOperand(0);
  if (auto l = logits.getDefiningOp<LinearOp>()) {
    f.classifierParams = widthOf(l.getInput()) * widthOf(l.getResult());
    loadedSources(l.getWeight(), classifier);
    loadedSources(l.getBias(), classifier);
  }
  auto count = [](Operation *w) {
    return cast<WeightOp>(w).getTensorType().getNumElements();
  };
  embedding.insert(lookup.begin(), lookup.end());
  embedding.insert(classifier.begin(), classifier.end());
  for (Operation *w : embedding)
    f.embeddingParams += count(w);
  // Active: what decoding a token reads, but for rows looked up by id.
  f.activeParams = f.params - unread;
  for (Operation *w : lookup)
    if (!classifier.contains(w))
      f.activeParams -= count(w);
  return f;
}

} // namespace

FailureOr<ModelFigures> computeModelFigures(ModuleOp module) {
  return Figures(module).run();
}

} // namespace arch
