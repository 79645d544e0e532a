//===- Schedules.cpp - CPU schedules of the arch kernels ------------------===//
//
// The schedules, apart from the algorithms they schedule. Vector widths
// come from the target; token counts are runtime values, so only feature
// dimensions are tiled by constants (token tiles use ShiftInwards, which the
// glue guarantees is legal by calling the GEMM kernel only for >= 4 rows).
//
//===----------------------------------------------------------------------===//
#include "lowering/Algorithms.h"

#include <algorithm>

using namespace Halide;

namespace arch {

/// Output tiles of a linear layer: a column block per parallel task (its
/// weight panel stays in L2 while every token tile passes over it), then
/// nt x tt register tiles whose vector accumulators live in `acc`.
static void scheduleLinear(KernelFuncs &k, bool gemm) {
  int64_t N = k.spec.ints[1];
  Var n = k.vars["n"], t = k.vars["t"], kk = k.vars["kk"];
  RDom r = k.rdoms["r"];
  Func acc = k.funcs["acc"];
  int nt = int(std::min<int64_t>(4, vectorWidthFor(N, 4)));
  int tt = gemm ? 4 : 1;
  int nblock = int(std::min<int64_t>(64, N)) / nt * nt;
  Var nb("nb"), nn("nn"), no("no"), ni("ni"), to("to"), ti("ti");
  k.out.split(n, nb, nn, nblock, TailStrategy::ShiftInwards)
      .split(nn, no, ni, nt);
  if (gemm) {
    k.out.split(t, to, ti, tt, TailStrategy::ShiftInwards)
        .reorder(ni, ti, no, to, nb)
        .unroll(ti);
  } else {
    k.out.reorder(ni, no, t, nb);
  }
  k.out.unroll(ni).parallel(nb);
  acc.compute_at(k.out, no).vectorize(kk).unroll(n).unroll(t);
  acc.update().reorder(kk, n, t, r).vectorize(kk).unroll(n).unroll(t);
}

static void scheduleNorm(KernelFuncs &k) {
  Var i = k.vars["i"], t = k.vars["t"], kk = k.vars["kk"];
  k.out.vectorize(i, k.lanes).parallel(t);
  k.funcs["inv"].compute_at(k.out, t);
  k.funcs["mean"].compute_at(k.out, t);
  for (const char *lanes : {"sq", "s1"}) {
    auto it = k.funcs.find(lanes);
    if (it == k.funcs.end())
      continue;
    it->second.compute_at(k.out, t).vectorize(kk);
    it->second.update().vectorize(kk);
  }
}

static void scheduleRope(KernelFuncs &k) {
  Var j = k.vars["j"], t = k.vars["t"];
  k.out.vectorize(j, k.lanes).parallel(t);
  k.funcs["freq"].compute_root();
  k.funcs["cos"].compute_at(k.out, t);
  k.funcs["sin"].compute_at(k.out, t);
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

static void scheduleRowwise(KernelFuncs &k) {
  Var i = k.vars["i"], t = k.vars["t"];
  k.out.vectorize(i, k.lanes).parallel(t);
}

void scheduleKernel(KernelFuncs &k, const Target &) {
  switch (k.spec.kind) {
  case KernelKind::LinearGemm: scheduleLinear(k, true); break;
  case KernelKind::LinearGemv: scheduleLinear(k, false); break;
  case KernelKind::Norm: scheduleNorm(k); break;
  case KernelKind::Rope: scheduleRope(k); break;
  case KernelKind::Attention: scheduleAttention(k); break;
  case KernelKind::Embed:
  case KernelKind::Activation:
  case KernelKind::Softcap:
  case KernelKind::Scale:
  case KernelKind::Glu:
  case KernelKind::PosEmbed:
  case KernelKind::Add: scheduleRowwise(k); break;
  }
}

} // namespace arch
