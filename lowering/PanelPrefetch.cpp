//===- PanelPrefetch.cpp - Prefetches of packed weights -------------------===//
//
// Two lowering passes that call the archu_prefetch_read ukernel
// (prefetcht0): a packed linear GEMM's prefetch of its next panel
// (NextPanel, below), and the rows ahead of a loop's dense loads
// (RowsAhead: the 16-bit GEMV's, docs/design.md "Decode at the bandwidth
// roofline", and tiled attention's key and value rows).
//
// A packed linear's GEMM task reads its weight panel from memory once, in
// its first token tile, and from the L2 in every later one; nothing
// overlaps that first read with compute. This lowering pass makes the
// token tiles after the first of each task prefetch the next task's
// panel, a new line every 2^s steps of K (a prefetch at every step: 2^s
// of each line), so that the next task finds it in the L2; in a K-blocked
// GEMM, the tiles after the first of each block prefetch the next block
// (after a panel's last block, the next panel's first, which follows it
// in memory; a glu epilogue's gate and up panels alternate: GluPanels
// maps them). The lines are spread over as many tiles as the call has (s
// chosen at run time from the tile loop's extent): issued a line a step,
// over the 4 tiles that take, a 64-column f32 panel's prefetches asked
// for about the core's whole read bandwidth and slowed the tiles issuing
// them (docs/performance.md "The next panel's prefetch, spread").
// Halide 14's prefetch directive cannot place it (its region is the
// whole panel, at every step) and emits prefetchnta; the pass calls the
// archu_prefetch_read ukernel (lowering/ukernels.ll) instead.
//
//===----------------------------------------------------------------------===//
#include "lowering/Algorithms.h"

#include <algorithm>

using namespace Halide;

namespace arch {
namespace {

using namespace Halide::Internal;

/// A pass that must find what it changes: mutating a whole statement in
/// which no visit set `found` is an error (`missing()` says what), not a
/// kernel silently without its prefetch.
class MustFind : public IRMutator {
public:
  /// `required`: whether a statement without what the pass looks for is
  /// an error.
  explicit MustFind(bool required = true) : required(required) {}
  /// The whole statement (depth 0), then each part of it.
  Stmt mutate(const Stmt &s) override {
    if (depth)
      return IRMutator::mutate(s);
    ++depth;
    Stmt out = IRMutator::mutate(s);
    --depth;
    if (!found && required)
      throw CompileError(missing());
    return out;
  }
  using IRMutator::mutate;

protected:
  virtual std::string missing() const = 0;
  bool found = false;
  const bool required;

private:
  int depth = 0;
};

/// The pass over the lowered statement. It works on Halide's loop names,
/// which the schedule fixes: the task loop `task` (a panel per task), the
/// block loop `block` of a K-blocked GEMM (else none), the token tile loop
/// `tile` and the K loop `kLoop` of the register tile inside them, whose
/// `kLen` steps are rows of `blockBytes` (a whole panel's when unblocked).
/// A block is m = blockBytes / 64 / kLen times kLen lines: tiles 1..m 2^s
/// prefetch it, a new line every 2^s steps, 2^s the largest power of two
/// up to 32 with m 2^s no more than the tiles after the first.
/// A statement in which it finds no such K loop is an error, not a kernel
/// silently without its prefetch (test/Lowering/panel-prefetch.test).
class NextPanel : public MustFind {
public:
  NextPanel(std::string weight, std::string task, std::string block,
            std::string tile, std::string kLoop, int64_t kLen,
            int64_t panelBytes, int64_t blockBytes, int64_t panels,
            GluPanels glu)
      : weight(std::move(weight)), task(std::move(task)),
        block(std::move(block)), tile(std::move(tile)),
        kLoop(std::move(kLoop)), kLen(kLen), panelBytes(panelBytes),
        blockBytes(blockBytes), panels(panels),
        tiles(int(blockBytes / 64 / kLen)), glu(std::move(glu)) {}

private:
  std::string missing() const override {
    return "the next panel's prefetch found no loop " + kLoop +
           " inside loops " + task + " and " + tile;
  }

  using IRMutator::visit;

  Stmt visit(const For *op) override {
    // (Halide drops a loop of one iteration, and its variable: hence
    // prefetchNextPanel asks for at least two panels.)
    bool *within = op->name == task           ? &inTask
                   : op->name == block        ? &inBlock
                   : op->name == tile         ? &inTile
                   : op->name == glu.taskLoop ? &inGluTask
                                              : nullptr;
    if (within) {
      bool outer = *within;
      Expr outerTiles = tileCount;
      *within = true;
      if (within == &inTile) {
        // (s is computed from this loop alone: all of the tiles.)
        if (!is_const_zero(op->min))
          throw CompileError("the next panel's prefetch found tile loop " +
                             tile + " not starting at 0");
        tileCount = op->extent;
      }
      Stmt s = IRMutator::visit(op);
      *within = outer;
      tileCount = outerTiles;
      return s;
    }
    if (!inTask || (!block.empty() && !inBlock) || !inTile ||
        op->name != kLoop)
      return IRMutator::visit(op);
    found = true;
    // The next block (panel) starts at `next`; tile `to` (from 1)
    // prefetches its line ((to - 1) * kLen + k) / 2^s at step k: tiles
    // 1..m 2^s cover its lines.
    Expr to = Variable::make(Int(32), tile);
    Expr no = Variable::make(Int(32), task);
    Expr k = Variable::make(Int(32), op->name);
    // The matmul's panel no (within the epilogue's task: its first, plus
    // no), and where it starts in the weight: a glu epilogue's gate and
    // up panels alternate. (An epilogue of one task has no task loop:
    // Halide drops it.)
    auto matmulPanel = [&](Expr v) {
      if (inGluTask)
        v += Variable::make(Int(32), glu.taskLoop) * glu.taskPanels;
      return v;
    };
    auto start = [&](Expr v) {
      return cast<int64_t>(weightPanel(v, glu.halfPanels)) * Expr(panelBytes);
    };
    Expr following = matmulPanel(no + 1);
    Expr next = start(following);
    // Whether there is a next panel: tested on the matmul's panels, as
    // past the last one the glu's order leads back into the weight (its
    // first up panel).
    Expr more = following < int(panels);
    if (!block.empty()) {
      Expr after = Variable::make(Int(32), block) + 1;
      next = start(matmulPanel(no)) + cast<int64_t>(after) * Expr(blockBytes);
      // After a panel's last block, the next panel's first: the next in
      // memory, but with a glu epilogue the next the task computes.
      Expr inPanel = after < int(panelBytes / blockBytes);
      if (!glu.taskLoop.empty())
        next = select(inPanel, next, start(following));
      more = inPanel || more;
    }
    // s (bound before the loop): 2^s is the tiles after the first over
    // m, rounded down to a power of two, at most 32.
    Expr spare = (tileCount - 1) / tiles;
    std::string shiftName = op->name + ".prefetch_shift";
    Expr shift = Variable::make(Int(32), shiftName);
    Expr line = cast<int64_t>(((to - 1) * int(kLen) + k) >> shift);
    Expr offset = next + line * Expr(int64_t(64));
    Stmt prefetch = Evaluate::make(
        Call::make(Int(32), "archu_prefetch_read",
                   {Variable::make(Handle(), weight), offset}, Call::Extern));
    Stmt with = For::make(op->name, op->min, op->extent, op->for_type,
                          op->device_api, Block::make(prefetch, op->body));
    // (The loop is taken apart on the tile, not tested at every step.)
    Expr prefetches = to >= 1 && to <= (Expr(tiles) << shift) && more;
    return LetStmt::make(shiftName,
                         select(spare >= 32, 5, spare >= 16, 4, spare >= 8,
                                3, spare >= 4, 2, spare >= 2, 1, 0),
                         IfThenElse::make(prefetches, with, op));
  }

  std::string weight, task, block, tile, kLoop;
  int64_t kLen, panelBytes, blockBytes, panels;
  int tiles; ///< m
  Expr tileCount; ///< the extent of the tile loop the visit is in
  GluPanels glu;
  bool inTask = false, inBlock = false, inTile = false, inGluTask = false;
};

/// Rows ahead (the 16-bit GEMV's weight rows, tiled attention's key and
/// value rows: prefetchRows): in loop `kLoop`, before each store or let
/// whose value loads `weight` (dense vectors), a prefetch `aheadBytes` further
/// on from each of those loads that starts a line or may (a load known to
/// start inside one is another's line), once per iteration of the loop: a
/// load at the same index as one an earlier statement of the body (not
/// in a loop or branch of its own) prefetched gets none. Past the
/// weight's end a prefetch reads nothing (it cannot fault).
class RowsAhead : public MustFind {
public:
  RowsAhead(std::string weight, std::string kLoop, int64_t aheadBytes,
            bool mustFind)
      : MustFind(mustFind), weight(std::move(weight)),
        kLoop(std::move(kLoop)), aheadBytes(aheadBytes) {}

private:
  std::string missing() const override {
    return "the GEMV's prefetch found no loop " + kLoop + " loading " +
           weight;
  }

  using IRMutator::visit;

  /// The first lanes of the dense loads of `weight` in an expression, each
  /// once, but those whose index uses a variable the expression binds
  /// itself (a prefetch before it could not name it).
  struct Lines : public IRVisitor {
    explicit Lines(const std::string &weight) : weight(weight) {}
    using IRVisitor::visit;
    void visit(const Let *op) override {
      bound.push(op->name);
      IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
      IRVisitor::visit(op);
      const Ramp *r = op->index.as<Ramp>();
      if (op->name != weight || !r || !is_const_one(r->stride) ||
          expr_uses_vars(r->base, bound))
        return;
      int64_t size = op->type.bytes();
      if (op->alignment.modulus * size % 64 == 0 &&
          op->alignment.remainder * size % 64 != 0)
        return;
      for (const Expr &b : bases)
        if (equal(b, r->base))
          return;
      bases.push_back(r->base);
      bytes = int(size);
    }
    const std::string &weight;
    Scope<> bound;
    std::vector<Expr> bases;
    int bytes = 0;
  };

  Stmt visit(const For *op) override {
    if (op->name != kLoop)
      return scoped([&] { return IRMutator::visit(op); });
    bool outer = inLoop;
    inLoop = true;
    issued.clear();
    Stmt s = IRMutator::visit(op);
    inLoop = outer;
    return s;
  }
  /// The statement `f` returns, with what it prefetches forgotten after
  /// it: a loop may run no iteration, a branch not at all.
  template <typename F> Stmt scoped(F &&f) {
    std::vector<Expr> before = issued;
    Stmt s = f();
    issued = std::move(before);
    return s;
  }
  Stmt visit(const IfThenElse *op) override {
    Expr cond = mutate(op->condition);
    Stmt then = scoped([&] { return mutate(op->then_case); });
    Stmt otherwise;
    if (op->else_case.defined())
      otherwise = scoped([&] { return mutate(op->else_case); });
    return IfThenElse::make(cond, then, otherwise);
  }

  /// The prefetches of the lines `value` loads, in the K loop, for a
  /// statement computing it.
  std::vector<Stmt> ahead(const Expr &value) {
    std::vector<Stmt> prefetches;
    if (!inLoop)
      return prefetches;
    Lines lines(weight);
    value.accept(&lines);
    if (lines.bases.empty())
      return prefetches;
    found = true;
    for (const Expr &b : lines.bases) {
      // A line an earlier statement of the loop's body prefetched already
      // (decode attention's chunks load each key row once per query head
      // of a register tile: one prefetch serves them all).
      if (std::any_of(issued.begin(), issued.end(),
                      [&](const Expr &e) { return equal(e, b); }))
        continue;
      issued.push_back(b);
      Expr offset = cast<int64_t>(b) * Expr(int64_t(lines.bytes)) +
                    Expr(aheadBytes);
      prefetches.push_back(Evaluate::make(
          Call::make(Int(32), "archu_prefetch_read",
                     {Variable::make(Handle(), weight), offset},
                     Call::Extern)));
    }
    return prefetches;
  }
  /// `s` after `prefetches`.
  static Stmt after(std::vector<Stmt> prefetches, Stmt s) {
    if (prefetches.empty())
      return s;
    prefetches.push_back(s);
    return Block::make(prefetches);
  }

  Stmt visit(const Store *op) override {
    std::vector<Stmt> p = ahead(op->value);
    return after(std::move(p), IRMutator::visit(op));
  }
  Stmt visit(const LetStmt *op) override {
    // (The value's prefetches first: they run before the body's.)
    std::vector<Stmt> p = ahead(op->value);
    return after(std::move(p), IRMutator::visit(op));
  }

  std::string weight, kLoop;
  int64_t aheadBytes;
  bool inLoop = false;
  std::vector<Expr> issued; ///< the lines prefetched in the loop's body
};

} // namespace

void prefetchNextPanel(KernelFuncs &k, const LinearKernel &d,
                       const std::string &taskLoop,
                       const std::string &blockLoop,
                       const std::string &tileLoop, const std::string &kLoop,
                       const GluPanels &glu) {
  int64_t panels = (d.N + d.panel - 1) / d.panel;
  int bytes = elementType(d.weight).bytes();
  int64_t panelBytes = d.K * d.panel * bytes;
  int64_t kb = kBlockOf(d, k.l2Bytes);
  // Panels of whole lines (16 f32 or 32 16-bit columns a line: a 16-bit
  // weight's GEMM widens the task's panel, or block, from the prefetched
  // lines), at least two; blocks of a K-blocked GEMM (an eighth of the L2
  // at most), or whole panels of up to three quarters of the L2 (where
  // kBlockOf blocks an f32 panel; a K with no block of its range stays
  // unblocked at any size, and a larger panel goes without, unmeasured).
  // Two of those need not fit: the Zen 5's 704 KiB panels (K = 2816) on
  // its 1 MiB L2 gained a median 2% a GEMM on one thread and 3% on two
  // with it (docs/performance.md "The next panel past half the L2").
  // (Only two in half the L2 until the prefetch was spread: K = 2816 on
  // the Xeon's 2 MiB then measured no faster, 4096 slower; spread, 2816
  // +10%, 4096 the same.)
  if (blockLoop.empty() == (kb != 0))
    throw CompileError("the next panel's prefetch was given " +
                       (kb ? "no block loop for a K-blocked GEMM"
                           : "block loop " + blockLoop +
                                 " for a GEMM that is not K-blocked"));
  if (d.oneRow || d.panel % (64 / bytes) || panels < 2 ||
      (!kb && 4 * panelBytes > 3 * k.l2Bytes))
    return;
  // The K loop's steps a block: K indices, or pairs of them (bf16 pairs).
  // At least two: Halide drops a loop of one step (K = 2 in pairs).
  int64_t kElems = kb ? kb : d.K, kLen = d.pairs ? kElems / 2 : kElems;
  if (kLen < 2)
    return;
  // An epilogue's task of one panel (a rope epilogue's of a head as wide):
  // its loop is the panels' (Halide drops the matmul's loop of one).
  bool onePanel = glu.taskPanels == 1 && !glu.halfPanels;
  k.output().add_custom_lowering_pass(new NextPanel(
      k.in("weight").name(), onePanel ? glu.taskLoop : taskLoop, blockLoop,
      tileLoop, kLoop, kLen, panelBytes, panelBytes / d.K * kElems, panels,
      onePanel ? GluPanels{} : glu));
  k.ukernels = true;
}

void prefetchGemvRows(KernelFuncs &k, const std::string &kLoop) {
  prefetchRows(k, "weight", kLoop, kGemvAheadBytes, true);
}

void prefetchRows(KernelFuncs &k, const std::string &input,
                  const std::string &loop, int64_t aheadBytes,
                  bool mustFind) {
  k.output().add_custom_lowering_pass(
      new RowsAhead(k.in(input).name(), loop, aheadBytes, mustFind));
  k.ukernels = true;
}

} // namespace arch
