//===- PanelPrefetch.cpp - A packed GEMM prefetches its next panel --------===//
//
// A packed linear's GEMM task reads its weight panel from memory once, in
// its first token tile, and from the L2 in every later one; nothing
// overlaps that first read with compute. This lowering pass makes token
// tiles 1..m of each task prefetch the next task's panel, a line per step
// of K (m = the panel's lines / K), so that the next task finds it in the
// L2. Halide 14's prefetch directive cannot place it (its region is the
// whole panel, at every step) and emits prefetchnta; the pass calls the
// archu_prefetch_read ukernel (lowering/ukernels.ll) instead.
//
//===----------------------------------------------------------------------===//
#include "lowering/Algorithms.h"

using namespace Halide;

namespace arch {
namespace {

using namespace Halide::Internal;

/// The pass over the lowered statement. It works on Halide's loop names,
/// which the schedule fixes: the task loop `task` (a panel per task), the
/// token tile loop `tile` and the K loop `kLoop` of the register tile
/// inside it. A statement in which it finds no such K loop is an error,
/// not a kernel silently without its prefetch
/// (test/Lowering/panel-prefetch.test).
class NextPanel : public IRMutator {
public:
  NextPanel(std::string weight, std::string task, std::string tile,
            std::string kLoop, int64_t K, int64_t panelBytes, int64_t panels)
      : weight(std::move(weight)), task(std::move(task)),
        tile(std::move(tile)), kLoop(std::move(kLoop)), K(K),
        panelBytes(panelBytes), panels(panels),
        tiles(int(panelBytes / 64 / K)) {}

  /// The whole statement (depth 0), then each part of it.
  Stmt mutate(const Stmt &s) override {
    if (depth)
      return IRMutator::mutate(s);
    ++depth;
    Stmt out = IRMutator::mutate(s);
    --depth;
    if (!found)
      throw CompileError("the next panel's prefetch found no loop " + kLoop +
                         " inside loops " + task + " and " + tile);
    return out;
  }
  using IRMutator::mutate;

private:
  using IRMutator::visit;

  Stmt visit(const For *op) override {
    // (Halide drops a loop of one iteration, and its variable: hence
    // prefetchNextPanel asks for at least two panels.)
    bool *within = op->name == task   ? &inTask
                   : op->name == tile ? &inTile
                                      : nullptr;
    if (within) {
      bool outer = *within;
      *within = true;
      Stmt s = IRMutator::visit(op);
      *within = outer;
      return s;
    }
    if (!inTask || !inTile || op->name != kLoop)
      return IRMutator::visit(op);
    found = true;
    // Tile `to` (from 1) prefetches line (to - 1) * K + k of the next
    // panel at step k: tiles 1..m cover its lines.
    Expr to = Variable::make(Int(32), tile);
    Expr no = Variable::make(Int(32), task);
    Expr k = Variable::make(Int(32), op->name);
    Expr line = cast<int64_t>((to - 1) * int(K) + k);
    Expr offset = cast<int64_t>(no + 1) * Expr(panelBytes) +
                  line * Expr(int64_t(64));
    Stmt prefetch = Evaluate::make(
        Call::make(Int(32), "archu_prefetch_read",
                   {Variable::make(Handle(), weight), offset}, Call::Extern));
    Stmt with = For::make(op->name, op->min, op->extent, op->for_type,
                          op->device_api, Block::make(prefetch, op->body));
    // (The loop is taken apart on the tile, not tested at every step.)
    Expr prefetches = to >= 1 && to <= tiles && no + 1 < int(panels);
    return IfThenElse::make(prefetches, with, op);
  }

  std::string weight, task, tile, kLoop;
  int64_t K, panelBytes, panels;
  int tiles; ///< m
  int depth = 0;
  bool inTask = false, inTile = false, found = false;
};

} // namespace

bool prefetchNextPanel(KernelFuncs &k, const LinearKernel &d,
                       const std::string &taskLoop,
                       const std::string &tileLoop,
                       const std::string &kLoop) {
  int64_t panels = (d.N + d.panel - 1) / d.panel;
  int64_t panelBytes = d.K * d.panel * elementType(d.weight).bytes();
  // f32 panels of whole lines (16 columns a line), at least two, not
  // K-blocked, of which two fit in half the L2.
  if (d.weight != StoreType::f32 || d.oneRow || d.panel % 16 ||
      panels < 2 || kBlockOf(d, k.l2Bytes) || 4 * panelBytes > k.l2Bytes)
    return false;
  k.out.add_custom_lowering_pass(new NextPanel(k.in("weight").name(), taskLoop,
                                               tileLoop, kLoop, d.K,
                                               panelBytes, panels));
  k.ukernels = true;
  return true;
}

} // namespace arch
