//===- Schedules.cpp - CPU schedules of the arch kernels ------------------===//
//
// The schedules, apart from the algorithms they schedule. Vector widths
// come from the target; token counts are runtime values, so only feature
// dimensions are tiled by constants (a linear's register token tiles use
// ShiftInwards, legal because it takes them only in its specialization
// for at least as many rows as the tile has, and mixed tiles over parts
// of a call's rows at least as many as theirs; the K-blocked GEMM's token
// tiles and attention's query tiles are guarded instead).
//
//===----------------------------------------------------------------------===//
#include "lowering/Algorithms.h"

#include <algorithm>
#include <functional>
#include <numeric>

using namespace Halide;

namespace arch {

/// The target's vector registers: attention's register tiles keep their
/// accumulators within half of them (the rest hold the operands); a
/// linear's tall tile (kTallTokenTile) takes 24 of 32.
static int vectorRegisters(const Target &target) {
  if (target.arch == Target::X86) // AVX-512 (any of its feature sets): 32
    return target.natural_vector_size<float>() >= 16 ? 32 : 16;
  if (target.arch == Target::ARM)
    return target.bits == 64 ? 32 : 16;
  return 32;
}

/// The loops of a linear's output. One kernel serves every row count: it
/// is specialized at run time on the rows, with >= kTokenTile rows taking
/// token tiles of kTokenTile inside the column tile `mid` (GEMM), fewer one
/// row at a time (GEMV; the only code when the glue says `oneRow`).
/// With `tall` (a taller tile the target's registers hold), calls of at
/// least `tall` rows take tiles of `tall` rows instead. With `wideRows`
/// (a 16-bit weight's GEMM over its widened panel, acc_wide), calls of at
/// least that many rows get a specialization of their own, tiled as the
/// tallest, so that the algorithm's select between the two GEMM sums
/// folds too.
/// `columns` splits the columns alike in all (`gemvColumns`, where given,
/// in the GEMV); `inner`, `mid` and `outer` are its innermost, tile and
/// task loops. The 4-row specialization's condition is the algorithm's
/// (rows of x >= kTokenTile), and the tall one's implies it, so that in
/// each the algorithm's select between GEMM and GEMV sums folds. (Calls
/// that take mixed tiles have their specialization before these:
/// mixedTileTasks.)
static void tileLinear(KernelFuncs &k, const LinearKernel &d, Var inner,
                       Var mid, Var outer, int tall, int wideRows,
                       const std::function<void(Stage)> &columns,
                       const std::function<void(Stage)> &blocked = {},
                       const std::function<void(Stage)> &gemvColumns = {}) {
  Var t = k.vars["t"], to("to"), ti("ti");
  // Token tiles of `rows` (GEMM), or one row at a time (0: GEMV).
  auto tile = [&](Stage s, int rows) {
    (rows || !gemvColumns ? columns : gemvColumns)(s);
    if (rows)
      s.split(t, to, ti, rows, TailStrategy::ShiftInwards)
          .reorder(inner, ti, mid, to, outer)
          .unroll(ti);
    else
      s.reorder(inner, mid, t, outer);
  };
  Expr x = k.in("x").dim(1).extent();
  if (blocked)
    blocked(k.out.specialize(x >= kTokenTile));
  else if (!d.oneRow) {
    if (wideRows)
      tile(k.out.specialize(x >= wideRows), tall ? tall : kTokenTile);
    if (tall)
      tile(k.out.specialize(x >= tall), tall);
    tile(k.out.specialize(x >= kTokenTile), kTokenTile);
  }
  tile(k.out, 0);
}

/// Halide's name for the loop of `f`'s definition `stage` (0: pure, 1:
/// the first update) over `var`, or over what `splits` (outer to inner:
/// each split's name for the loop kept) made of it: f.sN.var[.split...].
/// prefetchNextPanel finds its loops by these names.
static std::string loopName(Func f, int stage, const std::string &var,
                            std::initializer_list<std::string> splits = {}) {
  std::string name = f.name() + ".s" + std::to_string(stage) + "." + var;
  for (const std::string &s : splits)
    name += "." + s;
  return name;
}

/// Token rows of a row-wise kernel's parallel task.
static constexpr int kRowsPerTask = 8;

/// `s`'s token rows `t` as parallel tasks of kRowsPerTask rows (the last
/// guarded); returns the rows' loop inside a task. A row of a row-wise
/// kernel is a few hundred ns of work: a task per row spent as much again
/// in the thread pool's lock (halide_mutex_lock, 4% of a 2-thread
/// prefill's profile).
static Var rowTasks(Stage s, Var t) {
  Var to("to"), ti("ti");
  s.split(t, to, ti, kRowsPerTask, TailStrategy::GuardWithIf).parallel(to);
  return ti;
}

/// Whether a packed linear's column tasks are the kernel's parallel
/// tasks: not where an epilogue computes them in its own (a glu's).
static bool ownTasks(const KernelFuncs &k) { return !k.epilogue.defined(); }

/// Output columns of a glu epilogue's task over matmul `mm`'s panels:
/// a gate and an up panel, or as many pairs as the GEMV reads panels at
/// once (gemvPanels), so that its task is one of the epilogue's.
static int gluTaskColumns(const LinearKernel &mm, int lanes) {
  return int(mm.panel) * std::max(1, gemvPanels(mm, lanes) / 2);
}

/// Heads of a rope epilogue's task over matmul `mm`'s panels, in its
/// GEMM (`gemv` false) or its GEMV: whole heads and whole panels, as many
/// as the GEMV reads at once (gemvPanels), so that its task is one of the
/// epilogue's.
static int ropeTaskHeads(const LinearKernel &mm, int64_t headDim, int lanes,
                         bool gemv) {
  int64_t columns = mm.panel * (gemv ? gemvPanels(mm, lanes) : 1);
  return int(std::lcm(headDim, columns) / headDim);
}

/// The weight's panels as an epilogue's tasks compute them (for the next
/// panel's prefetch, which its GEMM's tiles make); none without one.
static GluPanels gluPanels(const KernelFuncs &k, const LinearKernel &mm) {
  if (ownTasks(k))
    return {};
  const LinearKernel &d = *k.spec.get<LinearKernel>();
  if (d.rope.heads) {
    int64_t hd = d.rope.headDim;
    int heads = ropeTaskHeads(mm, hd, k.lanes, mm.oneRow);
    return {loopName(k.epilogue, 0, "rh", {"ho"}),
            int(heads * hd / mm.panel), 0};
  }
  int columns = gluTaskColumns(mm, k.lanes);
  return {loopName(k.epilogue, 0, "m", {"mo"}), int(2 * columns / mm.panel),
          gluHalfPanels(d)};
}

/// The column loops of a packed linear: a task (`no`: parallel with
/// `parallel`) per `task` columns — guarded, not shifted: a last panel
/// past N reads the packing's zeros — in tiles (`nj`) of `tile`,
/// vectorized by `lanes`.
static std::function<void(Stage)> columnTasks(Var n, Var no, Var ni, Var nj,
                                              Var nk, int task, int tile,
                                              int lanes, bool parallel) {
  return [=](Stage s) {
    s.split(n, no, ni, task, TailStrategy::GuardWithIf)
        .split(ni, nj, nk, tile)
        .vectorize(nk, lanes);
    if (parallel)
      s.parallel(no);
  };
}

/// Output tiles of a linear layer over a [N, K] weight: a column block per
/// parallel task (its weight panel stays in L2 while every token tile
/// passes over it), then register tiles of nt columns x kTokenTile tokens
/// (x 1 in the GEMV) whose vector accumulators live in `acc`.
static void scheduleLinear(KernelFuncs &k, const LinearKernel &d) {
  Var n = k.vars["n"], t = k.vars["t"], kk = k.vars["kk"];
  RDom r = k.rdoms["r"];
  Func acc = k.funcs["acc"];
  int nt = int(std::min<int64_t>(4, vectorWidthFor(d.N, 4)));
  int nblock = int(std::min<int64_t>(64, d.N)) / nt * nt;
  Var nb("nb"), nn("nn"), no("no"), ni("ni");
  tileLinear(k, d, ni, no, nb, 0, 0, [&](Stage s) {
    s.split(n, nb, nn, nblock, TailStrategy::ShiftInwards)
        .split(nn, no, ni, nt)
        .unroll(ni)
        .parallel(nb);
  });
  acc.compute_at(k.out, no).vectorize(kk).unroll(n).unroll(t);
  acc.update().reorder(kk, n, t, r).vectorize(kk).unroll(n).unroll(t);
}

/// `acc` (placed by the caller) as a register tile: its columns `n` in
/// vectors of `lanes`, those vectors and its token rows `t` unrolled, and
/// its update over `r` inside them, so the tile's accumulators stay in
/// registers while `r` runs.
static void registerTile(Func acc, Var n, Var t, RVar r, int lanes) {
  acc.vectorize(n, lanes).unroll(n).unroll(t);
  acc.update().reorder(n, t, r).vectorize(n, lanes).unroll(n).unroll(t);
}

/// The output of a GEMM computed a panel per task (`no`: parallel with
/// `parallel`): its `panel` columns (guarded: N may end inside the last)
/// inside its token rows, vectorized by `lanes`; the task's sums are
/// computed at `no`.
static void panelTasks(Stage out, Var n, Var t, Var no, int panel, int lanes,
                       bool parallel) {
  Var ni("ni");
  out.split(n, no, ni, panel, TailStrategy::GuardWithIf)
      .reorder(ni, t, no)
      .vectorize(ni, lanes);
  if (parallel)
    out.parallel(no);
}

/// The GEMM of a packed weight whose panel outgrows the L2 (kBlockOf): a
/// task per panel keeps the panel's `panel` x T sums in a buffer
/// (acc_gemm);
/// for each block of K, every token tile adds that block's register-tile
/// partial sums (`part`, rfactor'd from the block) into it, so the block's
/// slice of the panel stays in L2 while all token tiles pass over it,
/// where each tile would otherwise stream the whole panel.
static void blockedGemm(KernelFuncs &k, const LinearKernel &d, Stage out,
                        Var no, bool prefetch) {
  Var n = k.vars["n"], t = k.vars["t"];
  RDom r = k.rdoms["r"];
  Func gemm = k.funcs["acc_gemm"];
  int lanes = k.lanes, panel = int(d.panel), tile = k.tileRows;
  panelTasks(out, n, t, no, panel, lanes, ownTasks(k));
  gemm.compute_at(k.out, no).bound_extent(n, panel).vectorize(n, lanes);
  RVar ro("ro"), ri("ri");
  Var u("u"), to("to"), ti("ti");
  Func part =
      gemm.update().split(r, ro, ri, kBlockOf(d, k.l2Bytes)).rfactor(ro, u);
  gemm.update()
      .split(t, to, ti, tile, TailStrategy::GuardWithIf)
      .reorder(n, ti, to, ro)
      .vectorize(n, lanes)
      .unroll(n)
      .unroll(ti);
  part.compute_at(gemm, to)
      .bound_extent(n, panel)
      .bound_extent(t, tile);
  registerTile(part, n, t, ri, lanes);
  // x with each token tile's rows interleaved (x_pack, the algorithm's
  // for every K-blocked GEMM), before the tasks: a task per token tile,
  // each step of K its rows' vectors interleaved into one store.
  k.funcs["x_pack"]
      .compute_root()
      .bound(ti, 0, tile)
      .unroll(ti)
      .vectorize(k.vars["kk"], lanes)
      .parallel(to);
  // A 16-bit weight's block widened once, for every token tile.
  auto wide = k.funcs.find("wide_gemm");
  if (wide != k.funcs.end())
    wide->second.compute_at(gemm, ro).vectorize(Var("j"), lanes);
  // The next block prefetched by the token tiles (prefetchNextPanel; on
  // the Xeon +8% at 14336 -> 4096, and +13-20% at 2816 -> 1024 when
  // kBlockOf still blocked it there; docs/performance.md).
  if (prefetch)
    prefetchNextPanel(k, d, loopName(k.out, 0, n.name(), {no.name()}),
                      loopName(gemm, 1, r.x.name(), {ro.name()}),
                      loopName(gemm, 1, t.name(), {to.name()}),
                      loopName(part, 1, r.x.name(), {ri.name()}),
                      gluPanels(k, d));
}

/// A packed GEMM's mixed token tiles (kMixedRows), in a specialization of
/// their own: a panel per task (parallel where the GEMM's tasks are the
/// kernel's), in which gemm_main's 6-token tiles and then gemm_tail's
/// 4-token tiles compute their rows of the panel (sub-tiles of `sub`
/// columns), so that the panel stays in the L2 for both, then the
/// output's rows are stored from them. The 6-token tiles prefetch the
/// next panel as the tall tiles do (in calls of 25-32 rows their 2 or 3
/// tiles after the first fetch part of it: not measured).
static void mixedTileTasks(KernelFuncs &k, const LinearKernel &d, Var no,
                           int sub, bool prefetch) {
  Var n = k.vars["n"], t = k.vars["t"];
  RDom r = k.rdoms["r"];
  int lanes = k.lanes;
  panelTasks(k.out.specialize(k.mixedCall), n, t, no, int(d.panel), lanes,
             ownTasks(k));
  auto tiles = [&](const char *sums, const char *acc, int rows) {
    Func part = k.funcs.at(sums), tile = k.funcs.at(acc);
    Var nj("nj"), nk("nk"), to("to"), ti("ti");
    // (Rounded up: with N inside the panel, its columns past N read the
    // packing's zeros, as the register tile's do; shifted inward, they
    // would start before the panel.)
    part.compute_at(k.out, no)
        .split(n, nj, nk, sub, TailStrategy::RoundUp)
        .vectorize(nk, lanes)
        .split(t, to, ti, rows, TailStrategy::ShiftInwards)
        .reorder(nk, ti, nj, to)
        .unroll(ti);
    tile.compute_at(part, nj).bound_extent(n, sub);
    registerTile(tile, n, t, r, lanes);
  };
  tiles("gemm_main", "acc_main", kTallTokenTile);
  tiles("gemm_tail", "acc_tail", kTokenTile);
  if (prefetch)
    prefetchNextPanel(k, d, loopName(k.out, 0, n.name(), {no.name()}), "",
                      loopName(k.funcs.at("gemm_main"), 0, t.name(), {"to"}),
                      loopName(k.funcs.at("acc_main"), 1, r.x.name()),
                      gluPanels(k, d));
}

/// Over a packed weight: a task per panel of output columns; in it, tiles
/// of 4 vectors of columns x 4 tokens (GEMM; 6 tokens with `tall`), whose
/// 16 (24) vector accumulators stay in registers while K runs: each step
/// one broadcast of x per token and 4 contiguous vector loads of a panel
/// row; the GEMV's (1 token) one panel's 4 vectors, or the vectors of
/// gemvPanels panels read together (acc_gemv, a task per such group). A
/// GEMM over a panel larger than the L2 is blockedGemm's; calls that take
/// mixed token tiles (kMixedRows) are mixedTileTasks'.
static void schedulePackedLinear(KernelFuncs &k, const LinearKernel &d,
                                 int tall, bool prefetch) {
  Var n = k.vars["n"], t = k.vars["t"];
  RDom r = k.rdoms["r"];
  Func acc = k.funcs["acc"];
  int lanes = k.lanes, sub = vectorWidthFor(d.panel, 4 * lanes);
  Var no("no"), ni("ni"), nj("nj"), nk("nk");
  std::function<void(Stage)> blocked, gemvColumns;
  if (kBlockOf(d, k.l2Bytes))
    blocked = [&](Stage s) {
      blockedGemm(k, d, s, no, prefetch);
    };
  int streams = gemvPanels(d, lanes), columns = streams * int(d.panel);
  if (streams > 1)
    gemvColumns =
        columnTasks(n, no, ni, nj, nk, columns, columns, lanes, ownTasks(k));
  int wideRows = k.funcs.count("acc_wide") ? kWideRows : 0;
  // Mixed token tiles first: the other specializations take the calls
  // their condition leaves.
  if (k.mixedCall.defined())
    mixedTileTasks(k, d, no, sub, prefetch);
  tileLinear(k, d, nk, nj, no, tall, wideRows,
             columnTasks(n, no, ni, nj, nk, int(d.panel), sub, lanes,
                         ownTasks(k)),
             blocked, gemvColumns);
  if (streams > 1) {
    // The GEMV's tile: `streams` panels' columns x 1 token, each step of K
    // one vector load from each panel in turn.
    Func gemv = k.funcs["acc_gemv"];
    gemv.compute_at(k.out, nj).bound_extent(n, columns);
    registerTile(gemv, n, t, r, lanes);
    // A 16-bit weight's rows prefetched ahead, where measured (as the
    // bf16 pairs' GEMV in schedulePairedLinear; f32 reads at the
    // bandwidth without).
    if (k.amx && d.weight != StoreType::f32 && d.K > 1)
      prefetchGemvRows(k, loopName(gemv, 1, r.x.name()));
    auto w = k.funcs.find("wide_gemv");
    if (w != k.funcs.end())
      w->second.compute_at(gemv, r).vectorize(Var("j"), lanes);
  }
  // At nj: the token rows of the sub-tile (GEMM) or one (GEMV), over all
  // `sub` columns even where N ends inside the sub-tile (the packing's
  // zeros), so that the unrolled loop has a constant extent.
  acc.compute_at(k.out, nj).bound_extent(n, sub);
  registerTile(acc, n, t, r, lanes);
  // A 16-bit weight's GEMM of >= kWideRows rows: the task's panel widened
  // once, for every token tile (acc_wide: acc's tile over it; the mixed
  // tiles' too, in their calls).
  auto accWide = k.funcs.find("acc_wide");
  if (accWide != k.funcs.end()) {
    accWide->second.compute_at(k.out, nj).bound_extent(n, sub);
    registerTile(accWide->second, n, t, r, lanes);
    k.funcs["wide_gemm"].compute_at(k.out, no).vectorize(Var("j"), lanes);
  }
  // An f16 weight's panel row in acc's tiles (a 16-bit weight's GEMV and
  // GEMMs of fewer than kWideRows rows) widened once per step of K, not
  // once per token of the tile (the multiply of its widening would be).
  auto wide = k.funcs.find("wide");
  if (wide != k.funcs.end())
    wide->second.compute_at(acc, r).vectorize(Var("j"), lanes);
  // The next task's panel prefetched by the token tiles, where it pays
  // (prefetchNextPanel; on the Xeon a GEMM streaming its weight from
  // memory gained 13% at K = 1024; spread over the tiles, also 10% at
  // 2816 and nothing at 4096; a 16-bit weight's, over the widened panel's
  // tiles, +6-8% on the Zen 5; docs/performance.md). (tileLinear splits t
  // by "to".)
  if (prefetch && !blocked)
    prefetchNextPanel(k, d, loopName(k.out, 0, n.name(), {no.name()}), "",
                      loopName(k.out, 0, t.name(), {"to"}),
                      loopName(accWide != k.funcs.end() ? accWide->second
                                                        : acc,
                               1, r.x.name()),
                      gluPanels(k, d));
}

/// The bf16 dot product over a weight in pairs: schedulePackedLinear's
/// tiles with a whole panel per register tile (4 vectors with AVX-512:
/// 16 accumulators with 4 tokens), each step of the pairs one broadcast
/// pair of x and dense vectors of the panel's row of pairs; x rounded to
/// bf16 once per call, before the tasks (tasks of kRowsPerTask rows:
/// rowTasks), unless its producer rounded it. With
/// `prefetch`, the token tiles prefetch the next panel (or block), as
/// schedulePackedLinear's do.
static void schedulePairedLinear(KernelFuncs &k, const LinearKernel &d,
                                 bool prefetch) {
  Var n = k.vars["n"], j = k.vars["j"], p = k.vars["p"], kk = k.vars["kk"],
      t = k.vars["t"];
  int lanes = k.lanes, panel = int(d.panel);
  // A register tile of `f` (placed by the caller) over the pairs `r`: the
  // sum of each pair a vector reduction (vdpbf16ps).
  auto pairTile = [&](Func f, RDom r) {
    f.vectorize(j, lanes).unroll(j).unroll(p).unroll(t);
    f.update()
        .reorder(r.x, j, p, t, r.y)
        .atomic()
        .vectorize(r.x)
        .vectorize(j, lanes)
        .unroll(j)
        .unroll(p)
        .unroll(t);
  };
  Var no("no"), ni("ni"), nj("nj"), nk("nk");
  std::function<void(Stage)> blocked;
  auto amx = k.funcs.find("amx");
  if (amx != k.funcs.end()) {
    // The AMX ukernel's GEMM, a panel per task (it blocks K itself).
    blocked = [&](Stage s) {
      panelTasks(s, n, t, no, panel, lanes, ownTasks(k));
      amx->second.compute_at(k.out, no);
    };
  } else if (kBlockOf(d, k.l2Bytes))
    blocked = [&](Stage s) {
      // As blockedGemm: a task per panel, its panel x T sums in acc_gemm;
      // per block of K, every token tile's register tile (part).
      Func gemm = k.funcs["acc_gemm"], part = k.funcs["part"];
      RDom ob = k.rdoms["ob"];
      Var to("to"), ti("ti");
      panelTasks(s, n, t, no, panel, lanes, ownTasks(k));
      gemm.compute_at(k.out, no)
          .bound_extent(j, panel)
          .bound_extent(p, 1)
          .vectorize(j, lanes);
      gemm.update()
          .split(t, to, ti, kTokenTile, TailStrategy::GuardWithIf)
          .reorder(j, ti, to, ob)
          .vectorize(j, lanes)
          .unroll(j)
          .unroll(ti);
      part.compute_at(gemm, to)
          .bound_extent(j, panel)
          .bound_extent(p, 1)
          .bound_extent(t, kTokenTile)
          .bound_extent(k.vars["b"], 1);
      pairTile(part, k.rdoms["rb"]);
      if (prefetch)
        prefetchNextPanel(k, d, loopName(k.out, 0, n.name(), {no.name()}),
                          loopName(gemm, 1, ob.x.name()),
                          loopName(gemm, 1, t.name(), {to.name()}),
                          loopName(part, 1, k.rdoms["rb"].y.name()),
                          gluPanels(k, d));
    };
  int streams = gemvPanels(d, lanes), columns = streams * panel;
  std::function<void(Stage)> gemvColumns;
  if (streams > 1)
    gemvColumns =
        columnTasks(n, no, ni, nj, nk, columns, columns, lanes, ownTasks(k));
  tileLinear(k, d, nk, nj, no, 0, 0,
             columnTasks(n, no, ni, nj, nk, panel, panel, lanes, ownTasks(k)),
             blocked, gemvColumns);
  if (streams > 1) {
    Func gemv = k.funcs["acc_gemv"];
    gemv.compute_at(k.out, nj).bound_extent(j, panel).bound_extent(p, streams);
    pairTile(gemv, k.rdoms["r"]);
    // Its rows prefetched ahead, where measured: the Xeon (k.amx, which
    // also means x86-64 Linux, the ukernel's; on the Zen 5, not
    // measured, the GEMV read at 89-93% of the bandwidth without). (Not
    // over one pair: Halide drops a loop of one step.)
    if (k.amx && d.K > 2)
      prefetchGemvRows(k, loopName(gemv, 1, k.rdoms["r"].y.name()));
  }
  Func acc = k.funcs["acc"];
  acc.compute_at(k.out, nj).bound_extent(j, panel).bound_extent(p, 1);
  pairTile(acc, k.rdoms["r"]);
  // The next task's panel prefetched by the token tiles (tileLinear
  // splits t by "to"), as the f32 tiles' (docs/performance.md "The bf16
  // tiles' next panel").
  if (prefetch && !blocked)
    prefetchNextPanel(k, d, loopName(k.out, 0, n.name(), {no.name()}), "",
                      loopName(k.out, 0, t.name(), {"to"}),
                      loopName(acc, 1, k.rdoms["r"].y.name()),
                      gluPanels(k, d));
  // x rounded by its producer (archk-bf16-inputs): the tiles (and the
  // AMX ukernel) read it as given, xb inline.
  if (d.input == StoreType::bf16)
    return;
  Func xb = k.funcs["xb"];
  xb.compute_root().vectorize(kk, vectorWidthFor(d.K, 2 * lanes));
  rowTasks(xb, t);
}

/// A glu epilogue over packed panels: a parallel task per `width` output
/// columns, which first computes the matmul's gate and up panels of them
/// (the 2 `width` columns the GEMV reads at once, or 2 panels), then
/// their gated product, vectorized. (The products of a task stay in the
/// caches while 2 `width` T floats fit; at thousands of rows they are
/// stored and read back, as unfused.) Unpacked: the matmul first, whole
/// (its products stored), then the product row by row.
static void scheduleGluEpilogue(KernelFuncs &k, const LinearKernel &d,
                                const LinearKernel &mm, const Target &target) {
  Func glu = k.epilogue;
  Var m = k.vars["m"], t = k.vars["t"];
  if (!d.panel) {
    k.out.compute_root();
    glu.vectorize(m, vectorWidthFor(d.N, target.natural_vector_size<float>()));
    rowTasks(glu, t);
    return;
  }
  int width = gluTaskColumns(mm, k.lanes);
  Var mo("mo"), mi("mi");
  glu.split(m, mo, mi, width, TailStrategy::GuardWithIf)
      .reorder(mi, t, mo)
      .vectorize(mi, k.lanes)
      .parallel(mo);
  k.out.compute_at(glu, mo);
}

/// A head's dimensions j split so that the selects and clamps of the
/// rotation (Algorithms.cpp's `rotated`) simplify away and every load is a
/// dense vector (vectorized over j as it is, each lane selects and
/// gathers):
/// - half-split pairs, where every block of `half` dimensions is a first
///   half, a second half or untouched, and a whole number of vectors: in
///   blocks of `half`, unrolled;
/// - interleaved pairs over the whole head: in pairs, the element of the
///   pair unrolled inside vectors of pairs (stride-2 loads and stores,
///   which Halide interleaves into dense ones).
static void ropeColumns(Stage s, const RopeKernel &r, Var j, int lanes) {
  int64_t half = r.rotaryDim / 2;
  Var jo("jo"), ji("ji");
  if (r.style == RopeStyle::half_split && half % lanes == 0 &&
      r.headDim % half == 0) {
    s.split(j, jo, ji, int(half)).unroll(jo).vectorize(ji, lanes);
  } else if (r.style == RopeStyle::interleaved &&
             r.rotaryDim == r.headDim && half % lanes == 0) {
    s.split(j, jo, ji, 2).unroll(ji).vectorize(jo, lanes);
  } else {
    s.vectorize(j, lanes);
  }
}

/// A rope epilogue over packed panels: a parallel task per whole heads
/// (ropeTaskHeads: their panels, in the GEMM's calls or the GEMV's), which
/// first computes the matmul's columns of them, then their heads rotated,
/// vectorized as the RoPE kernel's (ropeColumns); the cos and sin of the
/// call's rows before the tasks. Unpacked: the matmul first, whole, then
/// the rotation row by row.
static void scheduleRopeEpilogue(KernelFuncs &k, const LinearKernel &d,
                                 const LinearKernel &mm, const Target &target) {
  Func rope = k.epilogue;
  Var j = k.vars["rj"], h = k.vars["rh"], t = k.vars["t"];
  int lanes =
      vectorWidthFor(d.rope.headDim, target.natural_vector_size<float>());
  Var p = k.vars["rp"];
  k.funcs["rope_freq"].compute_root();
  for (const char *f : {"rope_cos", "rope_sin"}) {
    k.funcs[f].compute_root().vectorize(p, 8, TailStrategy::GuardWithIf);
    rowTasks(k.funcs[f], t);
  }
  if (!d.panel) {
    k.out.compute_root();
    ropeColumns(rope, d.rope, j, lanes);
    rowTasks(rope, t);
    return;
  }
  Var ho("ho"), hi("hi");
  auto tasks = [&](Stage s, bool gemv) {
    ropeColumns(s, d.rope, j, lanes);
    s.split(h, ho, hi, ropeTaskHeads(mm, d.rope.headDim, k.lanes, gemv),
            TailStrategy::GuardWithIf)
        .reorder(hi, t, ho)
        .parallel(ho);
  };
  int gemm = ropeTaskHeads(mm, d.rope.headDim, k.lanes, false);
  int gemv = ropeTaskHeads(mm, d.rope.headDim, k.lanes, true);
  if (!d.oneRow && gemm != gemv)
    tasks(rope.specialize(k.in("x").dim(1).extent() >= kTokenTile), false);
  tasks(rope, d.oneRow || gemm != gemv);
  k.out.compute_at(rope, ho);
}

static void schedulePack(KernelFuncs &k) {
  k.out.parallel(k.vars["p"]);
}

/// Tasks of token rows; each group's statistics just before its row.
static void scheduleNorm(KernelFuncs &k) {
  Var i = k.vars["i"], g = k.vars["g"], t = k.vars["t"], kk = k.vars["kk"];
  k.out.vectorize(i, k.lanes);
  rowTasks(k.out, t);
  k.funcs["inv"].compute_at(k.out, g);
  k.funcs["mean"].compute_at(k.out, g);
  for (const char *lanes : {"sq", "s1"}) {
    auto it = k.funcs.find(lanes);
    if (it == k.funcs.end())
      continue;
    it->second.compute_at(k.out, g).vectorize(kk);
    it->second.update().vectorize(kk);
  }
}

/// Tasks of token rows, each row's heads as ropeColumns vectorizes them;
/// the cos and sin of a row's pairs computed for it.
static void scheduleRope(KernelFuncs &k, const RopeKernel &r) {
  Var j = k.vars["j"], t = k.vars["t"];
  ropeColumns(k.out, r, j, k.lanes);
  Var row = rowTasks(k.out, t);
  k.funcs["freq"].compute_root();
  Var p = k.vars["p"];
  // Vectors of the pairs (cosSin is arithmetic in double).
  k.funcs["cos"].compute_at(k.out, row).vectorize(p, 8,
                                                   TailStrategy::GuardWithIf);
  k.funcs["sin"].compute_at(k.out, row).vectorize(p, 8,
                                                   TailStrategy::GuardWithIf);
}

/// One task per (head, query row); scores live only for that row.
static void scheduleAttention(KernelFuncs &k) {
  Var j = k.vars["j"], h = k.vars["h"], t = k.vars["t"], dd = k.vars["dd"];
  Var ht("ht");
  RDom rd = k.rdoms["rd"];
  k.out.fuse(h, t, ht).parallel(ht).vectorize(dd, k.lanes);
  Func score = k.funcs["score"];
  score.compute_at(k.out, ht);
  score.update().reorder(j, rd).vectorize(j, 8, TailStrategy::GuardWithIf);
  k.funcs["row_max"].compute_at(k.out, ht);
  k.funcs["prob"].compute_at(k.out, ht).vectorize(j, 8,
                                                  TailStrategy::GuardWithIf);
  k.funcs["row_sum"].compute_at(k.out, ht);
  Func pv = k.funcs["pv"];
  pv.compute_at(k.out, ht).vectorize(dd, k.lanes);
  pv.update().vectorize(dd, k.lanes);
}

/// Tiled attention: the tile specialization (T >= block_q) runs a task
/// per (key/value head, query tile), everything of a key block computed at
/// that block, vectorized across the tile's rows; its two products are
/// register tiles of row vectors (4 with 32 registers, 2 with 16) x up to
/// 4 keys (scores) or value columns (accumulators). The chunk code (fewer
/// rows) runs a task per chunk of keys; its scores are computed position
/// by position for every key/value head, each dot product a vector of
/// lane partial sums for a register tile of query heads and one
/// horizontal sum; its value product is a register tile of query heads x
/// head_dim vectors.
static void scheduleTiledAttention(KernelFuncs &k, const AttentionKernel &a,
                                   const Target &target) {
  auto F = [&](const char *n) { return k.funcs.at(n); };
  auto V = [&](const char *n) { return k.vars.at(n); };
  Var dd = V("dd"), h = V("h"), t = V("t"), j = V("j"), r = V("r"), g = V("g"),
      l = V("l");
  RDom rd = k.rdoms.at("rd"), rj = k.rdoms.at("rj"), kb = k.rdoms.at("kb"),
       cj = k.rdoms.at("cj"), rl = k.rdoms.at("rl");
  int64_t group = a.heads / a.kvHeads, hd = a.headDim;
  int rows = int(group * a.blockQ);
  int rowLanes = vectorWidthFor(rows, k.lanes);   // lanes across rows
  // Accumulators per register tile: row vectors x keys or value columns.
  int accumulators = vectorRegisters(target) / 2;
  int rvecs = divisorUpTo(rows / rowLanes, accumulators / kAttentionTileColumns);

  // Tiles.
  Var ho("ho"), hi("hi"), to("to"), ti("ti"), task("task"), ro("ro"), ri("ri"),
      ddo("ddo"), ddi("ddi");
  k.out.specialize(takesTiles(k, a))
      .split(h, ho, hi, int(group))
      .split(t, to, ti, int(a.blockQ), TailStrategy::GuardWithIf)
      .reorder(dd, hi, ti, ho, to)
      .fuse(ho, to, task)
      .parallel(task);
  // The running entries hold a group of value columns each (the
  // algorithm's `cols`, up to 4): per group, a register tile of row
  // vectors x its columns.
  Func run = F("running");
  Var dc = V("dc");
  run.compute_at(k.out, task).vectorize(r, rowLanes);
  run.update()
      .split(r, ro, ri, rowLanes * rvecs)
      .reorder(ri, dc, ro, kb)
      .vectorize(ri, rowLanes)
      .unroll(ri);
  // The tile's outputs: row vectors of the running entries, read
  // contiguously (a group's columns unrolled, so that the select between
  // them folds), divided by their sums. The output reads them a gather
  // per vector. (Computed in the output's loop, each 8 outputs gathered
  // from all six running arrays: a quarter of a 128-token prefill's
  // attention in perf. With this and the tile's buffers on the stack,
  // below: attention -29% at 128 tokens, -12% at 512, Zen 5;
  // docs/performance.md "Attention's tile epilogue".)
  Var dco("dco"), dci("dci");
  F("tile_out")
      .compute_at(k.out, task)
      .split(dd, dco, dci, divisorUpTo(a.vHeadDim, kAttentionTileColumns))
      .reorder(r, dci, dco)
      .vectorize(r, rowLanes)
      .unroll(dci);
  F("q_tile").compute_at(k.out, task).vectorize(r, rowLanes);
  // The tile's own terms of the key-block predicate (algorithm: Funcs of
  // the tile, so that bounds inference does not solve them for it).
  for (const char *n :
       {"tile_blocks", "tile_draws", "tile_first_block", "tile_global"})
    if (k.funcs.count(n))
      F(n).compute_at(k.out, task);
  if (k.funcs.count("q_rel")) {
    F("q_rel").compute_at(k.out, task).vectorize(r, rowLanes);
    F("q_rel").update().vectorize(r, rowLanes);
  }
  // The scores of the key groups computed (rj.y; the rest are neither
  // written nor read): a register tile of row vectors x a group's keys
  // (rj.x).
  Func score = F("block_score");
  score.compute_at(run, kb).vectorize(r, rowLanes);
  score.update()
      .split(r, ro, ri, rowLanes * rvecs)
      .reorder(ri, rj.x, ro, rj.y)
      .vectorize(ri, rowLanes)
      .unroll(ri)
      .unroll(rj.x);
  Func dot = F("block_dot");
  dot.compute_at(score, ro).vectorize(r, rowLanes).unroll(r).unroll(j);
  // bf16 pairs (block_dot's and block_pv's): the pair and the row vector
  // vectorized together in an atomic update over `pairs`, which Halide
  // makes a reduction by 2 of 2 x 16 lanes (vdpbf16ps), a register tile of
  // row vectors x `column`s; its rows' pairs (`rowPairs`, the pair
  // innermost) made at `at`.
  auto pairProducts = [&](Func f, RDom pairs, Var column, Func rowPairs,
                          LoopLevel at) {
    f.update()
        .reorder(pairs.x, r, column, pairs.y)
        .atomic()
        .vectorize(pairs.x)
        .vectorize(r, rowLanes)
        .unroll(r)
        .unroll(column);
    Var e = rowPairs.args()[0];
    rowPairs.compute_at(at)
        .bound(e, 0, 2)
        .bound_extent(V("qb"), 1)
        .reorder(e, r)
        .vectorize(e)
        .vectorize(r, rowLanes);
  };
  if (k.funcs.count("q_pairs")) {
    // The tile's queries in pairs once per task, a block's keys rounded
    // once per block (below).
    pairProducts(dot, k.rdoms.at("rp"), j, F("q_pairs"),
                 LoopLevel(k.out, task));
  } else {
    dot.update().reorder(r, j, rd).vectorize(r, rowLanes).unroll(r).unroll(j);
  }
  // A tile's values and a key block's are made for one query tile at a
  // time: a constant size, on the stack where at most Halide's 16 KiB
  // (a size from qb's extent was halide_malloc'd and freed per task: 7%
  // of the attention above).
  Var qb = V("qb");
  for (const char *n : {"q_tile", "running", "tile_out", "block_dot",
                        "block_score", "block_max", "block_prob", "block_sum",
                        "block_pv"})
    F(n).bound_extent(qb, 1);
  // (A block's scores and probabilities take its bk keys' room whatever
  // the trimmed groups: a constant size.)
  for (const char *n : {"block_score", "block_prob"})
    F(n).bound(j, 0, int(a.blockKV));
  F("block_keys").compute_at(run, kb);
  // A 16-bit cache's blocks in f32, or with bf16 pairs the keys in bf16,
  // a vector at a time at each block into buffers of kb's loop, on the
  // stack (32 KiB at head_dim 128: Halide mallocs above 16 otherwise).
  // Stored per task and folded, as until 2026-12-05, they were made
  // without the key-block predicate's guard, for every block of the
  // range, and Halide could not trim kb's loop to the tile's blocks (its
  // body was no longer a no-op past them).
  for (auto [n, width] : {std::pair{"key_block", hd},
                          std::pair{"value_block", a.vHeadDim},
                          std::pair{"key_pairs", hd}}) {
    if (!k.funcs.count(n))
      continue;
    F(n).compute_at(run, kb)
        .store_in(MemoryType::Stack)
        .bound(dd, 0, int(width))
        .bound(j, 0, int(a.blockKV))
        .vectorize(dd, vectorWidthFor(width, k.lanes));
  }
  for (const char *n : {"block_max", "block_sum"}) {
    F(n).compute_at(run, kb).vectorize(r, rowLanes);
    F(n).update().reorder(r, rj.x, rj.y).vectorize(r, rowLanes);
  }
  F("block_prob").compute_at(run, kb).vectorize(r, rowLanes);
  F("block_prob").update().reorder(r, rj.x, rj.y).vectorize(r, rowLanes);
  Func pv = F("block_pv");
  pv.compute_at(run, dc).vectorize(r, rowLanes).unroll(r).unroll(dd);
  // (Its key groups fused back into one loop: as two, LLVM unrolled the
  // inner 4 keys with their clamped value addresses computed as vectors,
  // and AVX2's attention at 2048 tokens ran 11% slower than untrimmed;
  // fused, 4% faster. docs/performance.md "Attention's tile epilogue".)
  RVar rjf("rjf");
  if (k.funcs.count("prob_pairs")) {
    // bf16 pairs, as block_dot's: the exponentials in pairs of keys once
    // per block, and the block's values interleaved two keys at a time
    // (two row loads a pair of vectors, Halide's interleaving store).
    // The values too into a buffer of kb's loop, as the keys above.
    Func pp = F("prob_pairs");
    pairProducts(pv, k.rdoms.at("rpv"), dd, pp, LoopLevel(run, kb));
    pp.bound(pp.args()[2], 0, int(a.blockKV / 2));
    Func vp = F("value_pairs");
    vp.compute_at(run, kb)
        .store_in(MemoryType::Stack)
        .bound(vp.args()[0], 0, 2)
        .bound(dd, 0, int(a.vHeadDim))
        .bound(vp.args()[2], 0, int(a.blockKV / 2))
        .reorder(vp.args()[0], dd, vp.args()[2])
        .vectorize(dd, vectorWidthFor(a.vHeadDim, k.lanes))
        .unroll(vp.args()[0]);
  } else {
    pv.update()
        .fuse(rj.x, rj.y, rjf)
        .reorder(r, dd, rjf)
        .vectorize(r, rowLanes)
        .unroll(r)
        .unroll(dd);
  }

  // Chunks. Key dot products in kl lanes, value columns in dl.
  int kl = vectorWidthFor(hd, k.lanes);
  int dl = vectorWidthFor(a.vHeadDim, k.lanes);
  int dvecs = divisorUpTo(a.vHeadDim / dl, 4);
  int gt = divisorUpTo(group, accumulators / dvecs);
  int jl = chunkKeyLanes(k, a);
  Var c = V("c"), kvh = V("kvh"), go("go"), gi("gi");
  k.out.vectorize(dd, dl);
  Func part = F("chunk_partial");
  part.compute_root()
      .split(dd, ddo, ddi, dl * dvecs)
      .split(g, go, gi, gt)
      .vectorize(ddi, dl)
      .unroll(ddi)
      .unroll(gi);
  // A task per chunk: of one key/value head where the cache is head-major
  // (its keys and values, contiguous, stream from memory), of every head
  // where it is position-major (a chunk's rows, contiguous, hold them all).
  Var ctask = c;
  if (a.kvByHead) {
    ctask = Var("kvh_c");
    part.reorder(ddi, gi, ddo, go, t, c, kvh).fuse(c, kvh, ctask);
  } else {
    part.reorder(ddi, gi, ddo, go, t, kvh, c);
  }
  part.parallel(ctask);
  // The value product's accumulators: one register tile per part tile.
  Func cpv = F("chunk_pv");
  cpv.compute_at(part, ddo).vectorize(dd, dl).unroll(dd).unroll(g);
  // The chunk's keys in at most kChunkStreams parts read at once (a key
  // of each part in turn: cjo innermost), by the value sums as by the
  // scores below. (A ragged last part is guarded; a chunk trimmed to the
  // context leaves the later parts short or empty.)
  int partKeys = int((a.splitKV + kChunkStreams - 1) / kChunkStreams);
  RVar cjo("cjo"), cji("cji");
  cpv.update()
      .split(cj.x, cjo, cji, partKeys, TailStrategy::GuardWithIf)
      .reorder(dd, g, cjo, cji)
      .vectorize(dd, dl)
      .unroll(dd)
      .unroll(g);
  // A task's scores, position by position: its keys are read in the
  // order they lie in the cache.
  for (const char *n : {"chunk_max", "chunk_sum"}) {
    F(n).compute_at(part, ctask);
    if (jl > 1)
      F(n).update().atomic().vectorize(cj, jl);
  }
  F("chunk_score").compute_at(part, ctask).vectorize(j, jl);
  F("chunk_prob").compute_at(part, ctask).vectorize(j, jl);
  Func cdot = F("chunk_dot");
  cdot.compute_at(part, ctask);
  Var jo("jo"), ji("ji");
  cdot.update()
      .split(j, jo, ji, partKeys, TailStrategy::GuardWithIf)
      .reorder(rl, g, kvh, jo, ji, t);
  if (kl > 1)
    cdot.update().atomic().vectorize(rl);
  // A key row, loaded once per lane step, serves a register tile of query
  // heads.
  Func laneDot = F("chunk_dot_lanes");
  RDom rv = k.rdoms.at("rv");
  int gl = divisorUpTo(group, accumulators);
  laneDot.compute_at(cdot, kvh)
      .split(g, go, gi, gl)
      .vectorize(l, kl)
      .unroll(gi);
  laneDot.update()
      .split(g, go, gi, gl)
      .reorder(l, gi, rv, go)
      .vectorize(l, kl)
      .unroll(gi);
  // The key rows a task's scores read, and the value rows its sums read,
  // each of their streams prefetched ahead: from memory at a long context (a
  // decode's cache is read once a token), the hardware's prefetch alone
  // left these loops waiting on their loads (perf: the samples on the
  // row loads). Measured on AVX-512 x86-64 Linux targets (the ukernel's
  // bitcode is x86-64 Linux's): the Xeon 1.2-1.4x at 1900 positions; the
  // Zen 5 -6-10% of attention at 1900 positions on one thread, nothing
  // on two (docs/performance.md "The Zen 5 again"), and at 8K positions
  // -9-15% (f32 caches) and -12-14% (f16) on one thread, -7-9% on two
  // (docs/performance.md "f16 caches converted by F16C").
  if (ukernelTarget(target) && vectorRegisters(target) >= 32) {
    prefetchRows(k, "k", loopName(cdot, 1, "j", {"jo"}), kChunkAheadBytes,
                 false);
    prefetchRows(k, "v", loopName(cpv, 1, cj.x.name(), {"cjo"}),
                 kChunkAheadBytes, false);
  }
  F("total_max").compute_root();
  F("total_sum").compute_root();
  F("total_pv").compute_root().vectorize(dd, dl);
  F("total_pv").update().vectorize(dd, dl);
}

/// As a linear's GEMM and GEMV: with >= kTokenTile rows, a task per
/// (head, tile of kTokenTile tokens) whose register tiles are a few vectors
/// of outputs x the tile's tokens (each weight vector loaded once for
/// kTokenTile tokens); with fewer, a task per (head, token).
static void scheduleHeadLinear(KernelFuncs &k, const HeadLinearKernel &d) {
  Var n = k.vars["n"], h = k.vars["h"], t = k.vars["t"], kk = k.vars["kk"];
  RDom r = k.rdoms["r"];
  Func acc = k.funcs["acc"];
  Var ht("ht"), no("no"), ni("ni"), to("to"), ti("ti");
  // kMajor: vectors along the contiguous outputs; else a few outputs, each
  // a vector of partial sums along K.
  int sub = d.kMajor ? vectorWidthFor(d.N, 4 * k.lanes)
                     : int(vectorWidthFor(d.N, 4));
  auto tiles = [&](Stage s, bool gemm) {
    s.split(n, no, ni, sub);
    if (d.kMajor)
      s.vectorize(ni, k.lanes);
    else
      s.unroll(ni);
    if (gemm)
      s.split(t, to, ti, kTokenTile, TailStrategy::ShiftInwards)
          .reorder(ni, ti, no, h, to)
          .unroll(ti)
          .fuse(h, to, ht)
          .parallel(ht);
    else
      s.reorder(ni, no, h, t).fuse(h, t, ht).parallel(ht);
  };
  tiles(k.out.specialize(k.out.output_buffer().dim(2).extent() >= kTokenTile),
        true);
  tiles(k.out, false);
  if (d.kMajor) {
    acc.compute_at(k.out, no);
    registerTile(acc, n, t, r, k.lanes);
  } else {
    acc.compute_at(k.out, no).vectorize(kk).unroll(n).unroll(t);
    acc.update().reorder(kk, n, t, r).vectorize(kk).unroll(n).unroll(t);
  }
}

/// Linear attention: phi(q) and phi(k) once each; the per-chunk sums a
/// task per (key/value head, chunk) of rank-1 updates along the value
/// columns; the scan over chunks a task per key/value head; then a task
/// per (head, row): its scores against its chunk's rows and its
/// accumulator, vectors along the value columns.
static void scheduleLinearAttention(KernelFuncs &k) {
  Var e = k.vars["e"], j = k.vars["j"], g = k.vars["g"], h = k.vars["h"],
      t = k.vars["t"], n = k.vars["n"], x = k.vars["x"];
  RDom rs = k.rdoms["rs"], rn = k.rdoms["rn"], re = k.rdoms["re"],
       rx = k.rdoms["rx"];
  Func phiq = k.funcs["phi_q"], phik = k.funcs["phi_k"],
       chunkSum = k.funcs["chunk_sum"], start = k.funcs["start"],
       score = k.funcs["score"], acc = k.funcs["acc"];
  // The state's columns (v_head_dim + 1 with the normalizer) are not a
  // whole number of vectors: the last vector is guarded, so that no
  // stage computes (or reads the state) past them. The output's v_head_dim
  // columns are (vl divides them).
  const int vl = k.lanes;
  const TailStrategy guard = TailStrategy::GuardWithIf;
  phiq.compute_root().parallel(t);
  phik.compute_root().parallel(t);
  Var gn("gn");
  chunkSum.compute_root().vectorize(j, vl, guard).fuse(g, n, gn).parallel(gn);
  chunkSum.update()
      .reorder(j, e, rs, g, n)
      .vectorize(j, vl, guard)
      .fuse(g, n, gn)
      .parallel(gn);
  start.compute_root().vectorize(j, vl, guard).parallel(g);
  start.update().reorder(j, e, g, rn).vectorize(j, vl, guard).parallel(g);
  Var ht("ht");
  k.out.vectorize(j, vl).fuse(h, t, ht).parallel(ht);
  acc.compute_at(k.out, ht).vectorize(j, vl, guard);
  acc.update(0).reorder(j, re).vectorize(j, vl, guard);
  acc.update(1).reorder(j, rx).vectorize(j, vl, guard);
  score.compute_at(k.out, ht);
  score.update().reorder(re, x);
}

/// The in-place state update: a task per key/value head, rank-1 updates
/// along the state's columns.
static void scheduleLinearState(KernelFuncs &k) {
  Var j = k.vars["j"], e = k.vars["e"], g = k.vars["g"];
  RDom rt = k.rdoms["rt"];
  k.funcs["phi_k"].compute_root();
  k.out.vectorize(j, k.lanes, TailStrategy::GuardWithIf).parallel(g);
  k.out.update()
      .reorder(j, e, rt, g)
      .vectorize(j, k.lanes, TailStrategy::GuardWithIf)
      .parallel(g);
}

static void scheduleRowwise(KernelFuncs &k) {
  Var i = k.vars["i"], t = k.vars["t"];
  k.out.vectorize(i, k.lanes);
  rowTasks(k.out, t);
}

int gemmTileRows(const Target &t) {
  return t.arch == Target::X86 && vectorRegisters(t) >= 32 ? kTallTokenTile
                                                           : kTokenTile;
}

bool ukernelTarget(const Target &t) {
  return t.arch == Target::X86 && t.bits == 64 && t.os == Target::Linux;
}

void scheduleKernel(KernelFuncs &k, const Target &target) {
  const KernelSpec &spec = k.spec;
  if (const LinearKernel *d = spec.get<LinearKernel>()) {
    // Taller token tiles where the registers hold them: AVX-512's 32 (the
    // only ISA they were measured on).
    // Not for the bf16 dot product: no faster on the Xeon, where
    // vdpbf16ps bounds it (docs/performance.md), and not measured on the
    // Zen 5, where it is the default.
    bool avx512Tiles = k.tileRows > kTokenTile;
    int tall = avx512Tiles ? k.tileRows : 0;
    // The next panel's prefetch: a ukernel whose bitcode is x86-64 Linux's,
    // measured with AVX-512's tiles (a token tile of AVX2's runs K twice,
    // a column half at a time, and would prefetch each line twice); the
    // bf16 pairs' tiles too (a median +6% a GEMM on the Zen 5).
    bool prefetch = avx512Tiles && ukernelTarget(target);
    LinearKernel mm = matmulOf(*d);
    mm.pairs   ? schedulePairedLinear(k, mm, prefetch)
    : mm.panel ? schedulePackedLinear(k, mm, tall, prefetch)
               : scheduleLinear(k, mm);
    if (d->glu)
      scheduleGluEpilogue(k, *d, mm, target);
    if (d->rope.heads)
      scheduleRopeEpilogue(k, *d, mm, target);
  }
  else if (spec.get<PackKernel>())
    schedulePack(k);
  else if (spec.get<NormKernel>())
    scheduleNorm(k);
  else if (const RopeKernel *r = spec.get<RopeKernel>())
    scheduleRope(k, *r);
  else if (const AttentionKernel *a = spec.get<AttentionKernel>()) {
    if (k.funcs.count("drawn_block")) // a few ints per query block
      k.funcs["drawn_block"].compute_root();
    if (a->blockQ)
      scheduleTiledAttention(k, *a, target);
    else
      scheduleAttention(k);
  }
  else if (const HeadLinearKernel *d = spec.get<HeadLinearKernel>())
    scheduleHeadLinear(k, *d);
  else if (spec.get<RouteKernel>() || spec.get<RouteWeightsKernel>()) {
    // A task per token; its scores and picks computed in it.
    Var t = k.vars["t"];
    k.out.parallel(t);
    for (auto &[name, f] : k.funcs)
      f.compute_at(k.out, t);
  }
  else if (spec.get<LinearAttentionKernel>())
    scheduleLinearAttention(k);
  else if (spec.get<LinearStateKernel>())
    scheduleLinearState(k);
  else if (spec.get<DifferentialKernel>()) {
    k.funcs["lambda"].compute_root(); // one scalar per call
    scheduleRowwise(k);
  }
  else // embed, positions, element-wise, gather, combine, heads copies
    scheduleRowwise(k);
}

} // namespace arch
