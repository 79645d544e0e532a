//===- FlashTiling.cpp - Attention in blocks with an online softmax -------===//
//
// arch.attention -> arch.flash_attention with block sizes for the target.
// The tiled kernel vectorizes across a tile's rows (query positions x the
// query heads of one key/value head), so a block of keys, loaded once,
// serves every head of its GQA group; the sizes below make those rows a
// whole number of vectors, four where the group size allows (register
// tiles of row vectors by keys, and of row vectors by value columns, take
// as many of them as the target's registers hold). docs/design.md records
// the measurements behind them.
//
//===----------------------------------------------------------------------===//
#include "arch/Transforms/Passes.h"

#include <numeric>

using namespace mlir;

namespace arch {
#define GEN_PASS_DEF_FLASHTILINGPASS
#include "arch/Transforms/Passes.h.inc"

namespace {

/// Query positions per tile: the fewest that make the tile's rows a whole
/// number of vectors, repeated while the rows stay within four vectors.
static int64_t blockQFor(int64_t group, int64_t lanes) {
  int64_t unit = lanes / std::gcd(group, lanes);
  return unit * std::max<int64_t>(1, 4 * lanes / (group * unit));
}

/// Whether attention `a` reads its keys from a ring cache, which keeps
/// each position's heads together (a tokens cache is head-major: a chunk
/// of one head's keys is contiguous, so decode takes longer chunks). A
/// ring no smaller than max_seq_len is lowered as a tokens cache.
static bool readsRing(AttentionOp a) {
  auto append = a.getKey().getDefiningOp<CacheAppendOp>();
  if (!append)
    return false;
  auto decl = SymbolTable::lookupNearestSymbolFrom<CacheOp>(
      append, append.getCacheAttr());
  return decl && decl.getLayout() == CacheLayout::ring && ringRows(decl) > 0;
}

struct FlashTilingPass : impl::FlashTilingPassBase<FlashTilingPass> {
  using FlashTilingPassBase::FlashTilingPassBase;

  void runOnOperation() override {
    int64_t lanes = this->lanes, blockQ = this->blockQ, blockKv = this->blockKv,
            splitKv = this->splitKv;
    if (lanes < 1 || lanes > 64 || (lanes & (lanes - 1))) {
      getOperation().emitError()
          << "arch-flash-tiling: lanes must be a power of two in [1, 64], got "
          << lanes;
      return signalPassFailure();
    }
    auto fits = [](int64_t v) { return v >= 0 && v <= kMaxFlashBlock; };
    if (!fits(blockQ) || !fits(blockKv) || !fits(splitKv)) {
      getOperation().emitError()
          << "arch-flash-tiling: block-q, block-kv and split-kv must be in "
             "[1, "
          << kMaxFlashBlock << "] (or 0 to choose), got " << blockQ << ", "
          << blockKv << " and " << splitKv;
      return signalPassFailure();
    }
    if (linearChunk < 1 || linearChunk > kMaxFlashBlock) {
      getOperation().emitError()
          << "arch-flash-tiling: linear-chunk must be in [1, "
          << kMaxFlashBlock << "], got " << int64_t(linearChunk);
      return signalPassFailure();
    }
    if (dot != "f32" && dot != "bf16") {
      getOperation().emitError()
          << "arch-flash-tiling: dot must be f32 or bf16, got '" << dot << "'";
      return signalPassFailure();
    }
    SmallVector<AttentionOp> attns;
    SmallVector<LinearAttentionOp> linears;
    getOperation().walk([&](Operation *op) {
      if (auto a = dyn_cast<AttentionOp>(op))
        attns.push_back(a);
      else if (auto l = dyn_cast<LinearAttentionOp>(op))
        linears.push_back(l);
    });
    if (attns.empty() && linears.empty())
      return markAllAnalysesPreserved();
    for (LinearAttentionOp l : linears)
      l.setChunk(uint64_t(linearChunk));
    for (AttentionOp a : attns) {
      int64_t group = a.getNHeads() / a.getNKvHeads();
      OpBuilder builder(a);
      OperationState state(a.getLoc(), FlashAttentionOp::getOperationName(),
                           a->getOperands(), a->getResultTypes(),
                           a->getAttrs());
      auto flash = cast<FlashAttentionOp>(builder.create(state));
      flash.setBlockQ(
          std::min(blockQ ? blockQ : blockQFor(group, lanes), kMaxFlashBlock));
      flash.setBlockKv(blockKv ? blockKv : std::max<int64_t>(64, 4 * lanes));
      int64_t chunk = readsRing(a) ? std::max<int64_t>(256, 16 * lanes)
                                   : std::max<int64_t>(1024, 64 * lanes);
      flash.setSplitKv(std::min(splitKv ? splitKv : chunk, kMaxFlashBlock));
      flash.setBf16Dot(dot == "bf16" && bf16DotFits(a.getHeadDim(),
                                                    flash.getBlockKv(),
                                                    a.getShawClip()));
      a.replaceAllUsesWith(flash.getResult());
      a.erase();
    }
  }
};

} // namespace
} // namespace arch
