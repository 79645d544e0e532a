//===- Algorithms.cpp - Halide algorithms of the arch ops -----------------===//
//
// Layouts (Halide lists dimensions innermost first):
//   activations  (features, tokens)      = row-major [T, N]
//   weights      (K, N)                  = PyTorch's [N, K]
//   heads        (head_dim, heads, tokens)
//   context      (head_dim, kv_heads, positions): a cache's first rows,
//                head-major or (a ring) position-major
// Feature sizes are constants; the token count and position are not.
//
//===----------------------------------------------------------------------===//
#include "lowering/Algorithms.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <type_traits>

using namespace Halide;

namespace arch {

Type elementType(StoreType t) {
  switch (t) {
  case StoreType::f16: return Float(16);
  case StoreType::bf16: return BFloat(16);
  case StoreType::i32: return Int(32);
  case StoreType::f32: break;
  }
  return Float(32);
}

int divisorUpTo(int64_t n, int cap) {
  int d = 1;
  for (int i = 2; i <= cap; ++i)
    if (n % i == 0)
      d = i;
  return d;
}

int kBlockOf(const LinearKernel &d, int64_t l2Bytes) {
  if (!d.panel || d.oneRow)
    return 0;
  // Pairs: a K row of a panel of bf16 pairs is 2 bytes a column (128 at
  // the default 64 columns); an even block, K / 2 split by a divisor up
  // to 256. (Blocked from K > 2048 as f32 was, the Zen 5's K = 2816 and
  // 4096 GEMMs ran at 91-95% of the vdpbf16ps peak; unblocked, 100%:
  // docs/performance.md "The bf16 GEMM's blocks by its own panel's
  // bytes".)
  // At least two blocks: K <= 512 on an L2 under 128 KiB (ARCHC_L2_BYTES)
  // would be one, a loop Halide drops (and the next block's prefetch
  // with it).
  if (d.pairs) {
    int kb = 2 * divisorUpTo(d.K / 2, 256);
    return d.K * d.panel * 2 > l2Bytes / 2 && kb >= 128 && kb < d.K ? kb : 0;
  }
  // A K row of an f32 panel is 4 bytes a column (256 at the default 64
  // columns). (Blocked from half the L2, the Zen 5's K = 2816 GEMM, a
  // panel of 0.69 of its 1 MiB, ran 2.5% slower on one thread and 8% on
  // two than unblocked; K = 4096 the same either way: docs/performance.md
  // "The Zen 5's K = 2816 GEMM unblocked".)
  int64_t most = std::clamp<int64_t>(l2Bytes / 8 / (d.panel * 4), 128, 4096);
  int kb = divisorUpTo(d.K, int(most));
  return d.K * d.panel * 4 * 4 > l2Bytes * 3 && kb >= 128 ? kb : 0;
}

int gemvPanels(const LinearKernel &d, int lanes) {
  if (!d.panel)
    return 1;
  int64_t panels = (d.N + d.panel - 1) / d.panel;
  for (int s : {4, 2})
    if (panels % s == 0 && panels / s >= 4 && s * d.panel <= lanes * lanes)
      return s;
  return 1;
}

int vectorWidthFor(int64_t extent, int lanes) {
  int v = 1;
  while (v * 2 <= lanes && extent % (v * 2) == 0)
    v *= 2;
  return v;
}

int chunkKeyLanes(const KernelFuncs &k, const AttentionKernel &a) {
  return vectorWidthFor(a.splitKV, k.lanes);
}

/// Fixes the static feature extents of a token-major buffer so that the
/// kernel indexes it with constants; the last dimension (tokens or
/// positions) stays dynamic but starts at 0. Its stride is fixed too when
/// `denseRows`; inputs leave it free, so that they may be views of some
/// columns of a wider tensor (the q, k and v of a fused projection).
static void constrain(OutputImageParam p, const std::vector<int64_t> &dims,
                      bool denseRows) {
  int stride = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    p.dim(i).set_bounds(0, int(dims[i])).set_stride(stride);
    stride *= int(dims[i]);
  }
  p.dim(dims.size()).set_min(0);
  if (denseRows)
    p.dim(dims.size()).set_stride(stride);
}

/// Input `name` with static feature extents `dims` and free token rows.
static ImageParam rows(KernelFuncs &k, const char *name,
                       const std::vector<int64_t> &dims) {
  ImageParam p = k.in(name);
  constrain(p, dims, /*denseRows=*/false);
  return p;
}

/// f16 `e` in f32 by the archu_f16_f32 ukernels (lowering/ukernels.ll).
static Expr f16Call(Expr e) {
  return Halide::Internal::Call::make(Float(32), "archu_f16_f32",
                                      {reinterpret<uint16_t>(e)},
                                      Halide::Internal::Call::PureExtern);
}

/// A stored element in f32: an f16 by the archu_f16_f32 ukernels where
/// the target has F16C (one vcvtph2ps a vector, exact for every f16: an
/// f16 KV cache holds subnormals and infinities; Halide 14's own
/// conversion, about fifteen integer instructions a vector, made a 2K
/// prefill's attention over an f16 cache 2.4x slower than over an f32
/// one: docs/performance.md "f16 caches converted by F16C"), else a cast.
static Expr toF32(KernelFuncs &k, Expr e) {
  if (e.type() != Float(16) || !k.f16c)
    return cast<float>(e);
  k.ukernels = true;
  return f16Call(e);
}

/// A 16-bit weight element widened to f32 in registers. bf16 is an f32's
/// top half. An f16 converts by F16C where the target has it (toF32: one
/// vcvtph2ps from memory; the f16 GEMV's reads 33-34 -> 36-37 GB/s on the
/// Zen 5, docs/performance.md "f16 caches converted by F16C"); elsewhere
/// an f16 (normal or zero: the pack flushes subnormals, so no f32
/// subnormal ever reaches the multiply) sign-extended and shifted left by
/// 13 has its exponent and mantissa where an f32's go, the exponent 112
/// lower, which one multiply by 2^112 restores: four instructions, where
/// Halide 14 emulates the conversion in many more.
static Expr widen(KernelFuncs &k, Expr w, StoreType t) {
  if (t == StoreType::f32)
    return w;
  if (t != StoreType::f16 || k.f16c)
    return toF32(k, w);
  Expr bits = cast<int32_t>(reinterpret<int16_t>(w)) << 13;
  bits = bits & Expr(int32_t(0x8fffe000u));
  return reinterpret<float>(bits) * std::ldexp(1.0f, 112);
}

bool amxGemm(const LinearKernel &d) {
  return d.pairs && d.weight == StoreType::bf16 && d.panel == 64 &&
         !d.oneRow && d.K % 32 == 0;
}

LinearKernel matmulOf(const LinearKernel &d) {
  LinearKernel m = d;
  if (d.glu)
    m.N = d.panel ? 2 * ((d.N + d.panel - 1) / d.panel) * d.panel : 2 * d.N;
  m.glu = false;
  m.activation = Activation::identity;
  m.rope = {};
  m.store = StoreType::f32; // (the epilogue stores the kernel's output)
  return m;
}

int64_t gluHalfPanels(const LinearKernel &d) {
  return d.glu && d.panel ? (d.N + d.panel - 1) / d.panel : 0;
}

Expr weightPanel(Expr v, int64_t halfPanels) {
  if (!halfPanels)
    return v;
  return v / 2 + (v % 2) * int(halfPanels);
}

static Expr activate(Expr x, Activation act);
static void ropeEpilogue(KernelFuncs &k, const LinearKernel &d);

/// A glu epilogue (k.epilogue, the kernel's output): act(gate) * up of
/// k.out, the matmul's columns (matmulOf: gate panel q at columns 2q
/// panels on, its up panel next; unpacked, the gate's N then the up's).
static void gluEpilogue(KernelFuncs &k, const LinearKernel &d) {
  Var m("m"), t = k.vars["t"];
  Expr gate, up;
  if (d.panel) {
    int p = int(d.panel);
    Expr col = m / p * (2 * p) + m % p;
    gate = k.out(col, t), up = k.out(col + p, t);
  } else {
    gate = k.out(m, t), up = k.out(m + int(d.N), t);
  }
  Func glu("glu");
  glu(m, t) = cast(elementType(d.store), activate(gate, d.activation) * up);
  k.epilogue = glu;
  k.vars["m"] = m;
  k.outDims = {d.N};
}

/// A packed linear's sums: the GEMM's where the call has kTokenTile rows
/// or more, else the GEMV's (one expression where they are one, or where
/// the linear has one row). The condition must be tileLinear's
/// specialization's, so that each specialization realizes only its own
/// sums (docs/design.md "Decode at the bandwidth roofline": an unused one
/// left in the expression crashed Halide 14's bounds inference).
static Expr gemmOrGemv(const LinearKernel &d, Expr rows, Expr gemmDot,
                       Expr gemvDot) {
  return d.oneRow || gemmDot.same_as(gemvDot)
             ? gemvDot
             : select(rows >= kTokenTile, gemmDot, gemvDot);
}

/// A linear's sums `dot` of column n, token t plus its bias and its
/// residual (arch-fuse-residual's epilogue), where it has them: added as
/// the output tile is stored.
static Expr plusInputs(KernelFuncs &k, const LinearKernel &d, Expr dot, Var n,
                       Var t) {
  if (d.bias) {
    ImageParam bias = k.in("bias");
    bias.dim(0).set_bounds(0, int(d.N));
    dot = dot + bias(n);
  }
  if (d.residual)
    dot = dot + rows(k, "residual", {d.N})(n, t);
  return dot;
}

/// The bf16 dot product over a weight packed in pairs, w (2 * panel, K / 2,
/// panels): element 2 * j + e of row i of panel p is column p * panel + j,
/// K index 2 * i + e. x is rounded to bf16 once (xb; given so, its
/// producer rounded it: archk-bf16-inputs); the sums over each
/// pair are a vector reduction by 2 of bf16 products, which Halide 14 emits
/// as `vdpbf16ps` for avx512_sapphirerapids (AVX512-BF16) and otherwise
/// widens. acc keeps its columns as (j, p), so that a panel row's pairs
/// are one dense load.
static void lowerPairedLinear(KernelFuncs &k, const LinearKernel &linear) {
  LinearKernel d = matmulOf(linear);
  int64_t K = d.K, N = d.N, panel = d.panel;
  // (Rounded by its producer, x is a dense buffer of rows, as xb is:
  // archk-bf16-inputs takes no other; the tiles' row addresses then fold.)
  ImageParam x = k.in("x");
  constrain(x, {K}, /*denseRows=*/d.input == StoreType::bf16);
  ImageParam w = k.in("weight");
  w.dim(0).set_bounds(0, int(2 * panel)).set_stride(1);
  w.dim(1).set_bounds(0, int(K / 2)).set_stride(int(2 * panel));
  w.dim(2).set_bounds(0, int((N + panel - 1) / panel))
      .set_stride(int(K * panel));
  Var kk("kk"), n("n"), t("t"), j("j"), p("p"), b("b");
  Func xb("xb"), acc("acc"), out("linear");
  xb(kk, t) = cast(BFloat(16), x(kk, t));
  RDom r(0, 2, 0, int(K / 2), "r"); // r.x: in the pair, r.y: the pair
  Expr wp = weightPanel(p, gluHalfPanels(linear));
  acc(j, p, t) = 0.0f;
  acc(j, p, t) += cast<float>(w(2 * j + r.x, r.y, wp)) *
                  cast<float>(xb(2 * r.y + r.x, t));
  // The sums the GEMM (>= kTokenTile rows) and the GEMV read: acc, unless
  // the GEMM is K-blocked (acc_gemm) or AMX tiles compute it (the amx
  // extern stage), or the GEMV reads several panels at once (acc_gemv).
  Expr rows = x.dim(1).extent();
  Expr gemmDot = acc(n % int(panel), n / int(panel), t), gemvDot = gemmDot;
  k.lanes = vectorWidthFor(panel, k.lanes);
  if (gemvPanels(d, k.lanes) > 1) {
    Func gemv("acc_gemv");
    gemv(j, p, t) = 0.0f;
    gemv(j, p, t) += cast<float>(w(2 * j + r.x, r.y, wp)) *
                     cast<float>(xb(2 * r.y + r.x, t));
    gemvDot = gemv(n % int(panel), n / int(panel), t);
    k.funcs["acc_gemv"] = gemv;
  }
  if (k.amx && amxGemm(d)) {
    // The GEMM as an extern stage (computed per panel by the schedule):
    // the AMX ukernel over xb (x itself where its producer rounded it)
    // and the packed weight, blocking K itself (and reading a glu
    // epilogue's halves as weightPanel does).
    Func amx("amx");
    std::vector<ExternFuncArgument> args{
        xb, w, Expr(int32_t(K)), Expr(int32_t(gluHalfPanels(linear)))};
    if (d.input == StoreType::bf16)
      args[0] = x;
    amx.define_extern("archu_amx_bf16_panels", args, Float(32), {n, t},
                      NameMangling::C);
    gemmDot = amx(n, t);
    k.funcs["amx"] = amx;
  } else if (int kb = kBlockOf(d, k.l2Bytes)) {
    // `part` sums block b for a register tile (computed for whole token
    // tiles, a ragged last one reading the last row again), acc_gemm adds
    // the blocks.
    Func part("part"), gemm("acc_gemm");
    RDom rb(0, 2, 0, kb / 2, "rb");
    RDom ob(0, int(K / kb), "ob");
    Expr i = b * (kb / 2) + rb.y;
    part(j, p, t, b) = 0.0f;
    part(j, p, t, b) += cast<float>(w(2 * j + rb.x, i, wp)) *
                        cast<float>(xb(2 * i + rb.x, min(t, rows - 1)));
    gemm(j, p, t) = 0.0f;
    gemm(j, p, t) += part(j, p, t, ob);
    gemmDot = gemm(n % int(panel), n / int(panel), t);
    k.funcs["acc_gemm"] = gemm;
    k.funcs["part"] = part;
    k.rdoms["rb"] = rb;
    k.rdoms["ob"] = ob;
  }
  out(n, t) = plusInputs(k, d, gemmOrGemv(d, rows, gemmDot, gemvDot), n, t);
  k.out = out;
  k.funcs["acc"] = acc;
  k.funcs["xb"] = xb;
  k.rdoms["r"] = r;
  k.vars = {{"kk", kk}, {"n", n}, {"t", t}, {"j", j}, {"p", p}, {"b", b}};
  k.outDims = {N};
  if (linear.glu)
    gluEpilogue(k, linear);
  if (linear.rope.heads)
    ropeEpilogue(k, linear);
}

/// The rows a mixed call of `rows` rows leaves to its two 4-token tiles:
/// 7 (the tiles share a row) where rows mod 6 is 1, 8 where it is 2.
static Expr mixedTailRows(Expr rows) {
  static_assert(kTallTokenTile == 6, "the rows are the 6-token tile's");
  return select(rows % 6 == 1, 7, 8);
}

/// A packed GEMM's mixed token tiles (kMixedRows) over weight element
/// `weight` of column n, K index r: 6-token tiles' sums (gemm_main, of
/// acc_main's register tiles) for the rows before the split, 4-token
/// tiles' (gemm_tail, of acc_tail's) for the rest, each computed in its
/// task by the schedule, in calls of `minRows` to kMixedEnd - 1 rows, 1
/// or 2 over a multiple of 6 (k.mixedCall); `dot` in the others.
static Expr mixedTiles(KernelFuncs &k, ImageParam x, Expr weight, RDom r,
                       Var n, Var t, int minRows, Expr dot) {
  Expr rows = x.dim(1).extent();
  Func accMain("acc_main"), accTail("acc_tail");
  Func tallSums("gemm_main"), tailSums("gemm_tail");
  for (Func acc : {accMain, accTail}) {
    acc(n, t) = 0.0f;
    acc(n, t) += x(r, t) * weight;
  }
  tallSums(n, t) = accMain(n, t);
  tailSums(n, t) = accTail(n, t);
  k.funcs["acc_main"] = accMain;
  k.funcs["acc_tail"] = accTail;
  k.funcs["gemm_main"] = tallSums;
  k.funcs["gemm_tail"] = tailSums;
  // ((rows + 5) % 6 < 2: rows mod 6 is 1 or 2. Halide folds the select
  // below on this condition in every specialization, so that the others'
  // bounds drop these tiles and this one's the others' sums:
  // test/Lowering/mixed-tiles.test.)
  k.mixedCall =
      cast<uint32_t>(rows - minRows) < Expr(uint32_t(kMixedEnd - minRows)) &&
      (rows + 5) % 6 < 2;
  // Each part read within its own rows: its bounds are its rows alone.
  Expr split = rows - mixedTailRows(rows);
  Expr mixed = select(t < split, tallSums(n, min(t, split - 1)),
                      tailSums(n, max(t, split)));
  return select(k.mixedCall, mixed, dot);
}

/// x (K, T) . w (K, N) -> (N, T). The reduction over K is split into
/// `lanes`-wide partial sums (acc) so the inner loop is a vector FMA.
/// With a packed weight (panel > 0), w is (panel, K, panels) and acc keeps
/// a partial sum per output column instead, column n in panel n / panel:
/// the inner loop is a vector FMA along a panel row.
static void lowerLinear(KernelFuncs &k, const LinearKernel &linear) {
  if (linear.pairs)
    return lowerPairedLinear(k, linear);
  LinearKernel d = matmulOf(linear);
  int64_t K = d.K, N = d.N, panel = d.panel;
  ImageParam x = rows(k, "x", {K});
  ImageParam w = k.in("weight");
  if (panel) {
    w.dim(0).set_bounds(0, int(panel)).set_stride(1);
    w.dim(1).set_bounds(0, int(K)).set_stride(int(panel));
    w.dim(2).set_bounds(0, int((N + panel - 1) / panel))
        .set_stride(int(K * panel));
  } else {
    w.dim(0).set_bounds(0, int(K)).set_stride(1);
    w.dim(1).set_bounds(0, int(N)).set_stride(int(K));
  }
  Var kk("kk"), n("n"), t("t");
  Func acc("acc");
  Func out("linear");
  Expr dot;
  if (panel) {
    RDom r(0, int(K), "r");
    acc(n, t) = 0.0f;
    // The weight widened: an f16 one as a Func of its own, computed once per
    // step of K (inlined, its multiply would be taken once per token). With
    // a 16-bit weight acc serves the GEMV and GEMMs of fewer than kWideRows
    // rows (see wide_gemm below); K-blocked, the GEMV only (acc_gemm takes
    // every call of kTokenTile rows or more).
    Func wide("wide");
    Var j("j"), p("p");
    Expr wp = weightPanel(p, gluHalfPanels(linear));
    wide(j, kk, p) = widen(k, w(j, kk, wp), d.weight);
    if (d.weight == StoreType::f16)
      k.funcs["wide"] = wide;
    Expr wv = wide(n % int(panel), r, n / int(panel));
    acc(n, t) += x(r, t) * wv;
    // The sums the GEMM (>= kTokenTile rows) and the GEMV read: acc,
    // unless the GEMM is K-blocked (acc_gemm) or over a 16-bit weight
    // (acc_wide), or the GEMV reads several panels at once (acc_gemv); in
    // the calls that take mixed token tiles, acc_main's and acc_tail's. A
    // 16-bit weight is widened by a Func of each's own, placed in its
    // loops.
    Expr rows = x.dim(1).extent();
    Expr gemmDot = acc(n, t), gemvDot = gemmDot;
    // A 16-bit weight's GEMM reads its panel widened (wide_gemm), placed by
    // the schedule so that each element is widened once per call, not once
    // per token tile.
    bool widened = d.weight != StoreType::f32 && !d.oneRow;
    // Mixed token tiles (mixedTiles) where the GEMM takes tall ones,
    // unblocked; a 16-bit weight's read its widened panel, in the calls
    // that widen it (kWideRows), in place of a tall tile's.
    int kb = kBlockOf(d, k.l2Bytes);
    bool mixed = !d.oneRow && !kb && k.tileRows == kTallTokenTile;
    Func wideGemm("wide_gemm");
    wideGemm(j, kk, p) = widen(k, w(j, kk, wp), d.weight);
    Expr wideGemmAt = wideGemm(n % int(panel), r, n / int(panel));
    if (widened)
      k.funcs["wide_gemm"] = wideGemm;
    if (kb) {
      // K-blocked by the schedule: computed for whole token tiles of
      // k.tileRows, a ragged last one reading the last row again. x_pack
      // is x copied once a call with each tile's rows interleaved (token
      // tile `to`, its row `ti` innermost), so that a register tile's
      // step reads its rows' elements of one K from one place, and its K
      // loop one stream. (Copied per block and tile from x's rows, so
      // once a panel, the GEMM ran about 10% slower at K = 4096 and
      // 14336 on the Zen 5; read in place, the clamped rows cost address
      // arithmetic in every step; docs/performance.md.)
      int tile = k.tileRows;
      Func gemm("acc_gemm"), xPack("x_pack");
      Var ti("ti"), to("to");
      xPack(ti, kk, to) = x(kk, min(to * tile + ti, rows - 1));
      gemm(n, t) = 0.0f;
      gemm(n, t) += xPack(t % tile, r, t / tile) * wideGemmAt;
      gemmDot = gemm(n, t);
      k.funcs["acc_gemm"] = gemm;
      k.funcs["x_pack"] = xPack;
    } else if (widened) {
      // Only for calls of kWideRows rows or more: fewer tiles do not repay
      // the buffer, and widen in registers (acc). (Mixed tiles read it
      // too, in the calls that take them.)
      Func gemm("acc_wide");
      gemm(n, t) = 0.0f;
      gemm(n, t) += x(r, t) * wideGemmAt;
      gemmDot = select(rows >= kWideRows, gemm(n, t), gemmDot);
      k.funcs["acc_wide"] = gemm;
    }
    k.lanes = vectorWidthFor(panel, k.lanes);
    if (gemvPanels(d, k.lanes) > 1) {
      Func gemv("acc_gemv"), wideGemv("wide_gemv");
      wideGemv(j, kk, p) = widen(k, w(j, kk, wp), d.weight);
      if (d.weight == StoreType::f16)
        k.funcs["wide_gemv"] = wideGemv;
      gemv(n, t) = 0.0f;
      gemv(n, t) += x(r, t) * wideGemv(n % int(panel), r, n / int(panel));
      gemvDot = gemv(n, t);
      k.funcs["acc_gemv"] = gemv;
    }
    dot = gemmOrGemv(d, rows, gemmDot, gemvDot);
    if (mixed)
      dot = mixedTiles(k, x, widened ? wideGemmAt : wv, r, n, t,
                       widened ? kWideRows : kMixedRows, dot);
    k.rdoms["r"] = r;
  } else {
    int vl = vectorWidthFor(K, k.lanes);
    RDom r(0, int(K / vl), "r");
    acc(kk, n, t) = 0.0f;
    acc(kk, n, t) += x(r * vl + kk, t) * w(r * vl + kk, n);
    RDom lane(0, vl, "lane");
    dot = sum(acc(lane, n, t), "lane_sum");
    k.rdoms["r"] = r;
    k.lanes = vl;
  }
  out(n, t) = plusInputs(k, d, dot, n, t);
  k.out = out;
  k.funcs["acc"] = acc;
  k.vars = {{"kk", kk}, {"n", n}, {"t", t}};
  k.outDims = {N};
  if (linear.glu)
    gluEpilogue(k, linear);
  if (linear.rope.heads)
    ropeEpilogue(k, linear);
}

/// f32 -> the 16-bit `store`, rounded to nearest even. An f16 saturates at
/// +-65504 (no infinities) and its subnormals (below 2^-14 in magnitude)
/// become zeros of their sign, so that widen() reads every stored value
/// exactly.
static Expr narrow(Expr v, StoreType store) {
  if (store != StoreType::f16)
    return cast(elementType(store), v);
  Expr h = cast(Float(16), clamp(v, -65504.0f, 65504.0f));
  Expr bits = reinterpret<uint16_t>(h);
  return reinterpret(Float(16), select((bits & 0x7c00) == 0,
                                       bits & 0x8000, bits));
}

/// w (K, N) -> (panel, K, panels): column p * panel + j of row k, zero past
/// N; in pairs, (2 * panel, K / 2, panels): element 2 * j + e of row i is
/// column p * panel + j of row 2 * i + e.
static void lowerPack(KernelFuncs &k, const PackKernel &d) {
  int64_t K = d.K, N = d.N, panel = d.panel;
  ImageParam w = k.in("weight");
  w.dim(0).set_bounds(0, int(K)).set_stride(1);
  w.dim(1).set_bounds(0, int(N)).set_stride(int(K));
  Var j("j"), kk("kk"), p("p");
  // Group g (an expert) of n rows is panels g * per ..< (g + 1) * per.
  int64_t n = N / d.groups, per = (n + panel - 1) / panel;
  Expr jj = d.pairs ? j / 2 : j, kin = d.pairs ? 2 * kk + j % 2 : kk;
  Expr col = (p % int(per)) * int(panel) + jj;
  Expr row = (p / int(per)) * int(n) + col;
  Func out("pack");
  out(j, kk, p) = narrow(
      select(col < int(n), w(kin, min(row, int(N) - 1)), 0.0f), d.store);
  k.out = out;
  k.vars = {{"j", j}, {"kk", kk}, {"p", p}};
  k.outDims = d.pairs ? std::vector<int64_t>{2 * panel, K / 2}
                      : std::vector<int64_t>{panel, K};
}

/// The router's score of expert e: softmax over the experts, or sigmoid.
static Func routerScores(KernelFuncs &k, ImageParam logits, int64_t experts,
                         RouterScoring scoring) {
  Var e("e"), t("t");
  Func score("score");
  if (scoring == RouterScoring::sigmoid) {
    score(e, t) = 1.0f / (1.0f + exp(-logits(e, t)));
    return score;
  }
  RDom all(0, int(experts), "all");
  Func mx("mx"), sum("sum");
  mx(t) = maximum(logits(all, t));
  sum(t) = 0.0f;
  sum(t) += exp(logits(all, t) - mx(t));
  score(e, t) = exp(logits(e, t) - mx(t)) / sum(t);
  k.funcs["mx"] = mx, k.funcs["sum"] = sum;
  return score;
}

/// The indices i < extent of the n largest value(i) of each token, best
/// first, ties to the lower index (argmax keeps the first maximum): n
/// passes of argmax, each excluding the indices already picked, a Func per
/// pass (`name` + m, in k.funcs for the schedule).
static std::vector<Expr> topIndices(KernelFuncs &k, const std::string &name,
                                    int n, int extent, Var t,
                                    const std::function<Expr(Expr)> &value) {
  RDom r(0, extent, name + "_r");
  std::vector<Expr> picks;
  for (int m = 0; m < n; ++m) {
    Expr taken = Halide::Internal::const_false();
    for (const Expr &p : picks)
      taken = taken || r.x == p;
    Func pick(name + std::to_string(m));
    pick(t) = cast<int32_t>(
        argmax(select(taken, Float(32).min(), value(r.x)))[0]);
    k.funcs[pick.name()] = pick;
    picks.push_back(pick(t));
  }
  return picks;
}

/// arch.route's choice: the top k experts by score (+ selection bias),
/// among the topk_group best groups when grouped; ties to the lower index.
static void lowerRoute(KernelFuncs &k, const RouteKernel &r) {
  const int E = int(r.experts), K = int(r.topK);
  ImageParam logits = rows(k, "logits", {r.experts});
  Var e("e"), j("j"), t("t");
  Func score = routerScores(k, logits, r.experts, r.scoring);
  Func choice("choice");
  if (r.bias) {
    ImageParam bias = k.in("bias");
    bias.dim(0).set_bounds(0, E).set_stride(1);
    choice(e, t) = score(e, t) + bias(e);
  } else {
    choice(e, t) = score(e, t);
  }
  const Expr none = Float(32).min();
  Func masked("masked");
  if (r.nGroup > 1) {
    const int G = int(r.nGroup), size = E / G;
    Var g("g");
    RDom in(0, size, "in");
    Func group("group");
    if (r.scoring == RouterScoring::sigmoid) {
      // The sum of the group's best two.
      Tuple best = argmax(choice(g * size + in, t));
      Expr second = maximum(
          select(in == best[0], none, choice(g * size + in, t)));
      group(g, t) = best[1] + second;
    } else {
      group(g, t) = maximum(choice(g * size + in, t));
    }
    Expr keep = Halide::Internal::const_false();
    for (const Expr &kept :
         topIndices(k, "group_pick", int(r.topkGroup), G, t,
                    [&](Expr x) { return group(x, t); }))
      keep = keep || e / size == kept;
    masked(e, t) = select(keep, choice(e, t), none);
    k.funcs["group"] = group;
  } else {
    masked(e, t) = choice(e, t);
  }
  std::vector<Expr> picks = topIndices(
      k, "pick", K, E, t, [&](Expr x) { return masked(x, t); });
  Func out("route");
  out(j, t) = K == 1 ? picks[0] : mux(j, picks);
  k.funcs["score"] = score, k.funcs["choice"] = choice,
  k.funcs["masked"] = masked;
  k.out = out;
  k.vars = {{"j", j}, {"t", t}};
  k.outDims = {r.topK};
}

/// The weights of the experts a route kernel chose: score, over the k's
/// sum when normalized, times scaling.
static void lowerRouteWeights(KernelFuncs &k, const RouteWeightsKernel &r) {
  const int E = int(r.experts), K = int(r.topK);
  ImageParam logits = rows(k, "logits", {r.experts});
  ImageParam experts = rows(k, "experts", {r.topK});
  Var j("j"), t("t");
  Func score = routerScores(k, logits, r.experts, r.scoring);
  Func chosen("chosen");
  chosen(j, t) = score(clamp(experts(j, t), 0, E - 1), t);
  Expr w = chosen(j, t);
  if (r.normalize) {
    Expr total = chosen(0, t);
    for (int m = 1; m < K; ++m)
      total += chosen(m, t);
    w = w / total;
  }
  Func out("route_weights");
  out(j, t) = r.scaling == 1.0 ? w : w * float(r.scaling);
  k.funcs["score"] = score, k.funcs["chosen"] = chosen;
  k.out = out;
  k.vars = {{"j", j}, {"t", t}};
  k.outDims = {r.topK};
}

/// out[r] = x[rows[r]]: the routed rows, expert by expert.
static void lowerGather(KernelFuncs &k, const GatherKernel &g) {
  ImageParam x = rows(k, "x", {g.width});
  ImageParam which = k.in("rows");
  which.dim(0).set_min(0);
  Var i("i"), t("t");
  Func out("gather");
  out(i, t) = cast(elementType(g.store),
                   x(i, clamp(which(t), 0, x.dim(1).extent() - 1)));
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(g.width, k.lanes);
  k.outDims = {g.width};
}

/// out[t] = sum over j of weights[t, j] * y[slots[t, j]], j ascending.
static void lowerCombine(KernelFuncs &k, const CombineKernel &c) {
  ImageParam y = rows(k, "y", {c.width});
  ImageParam slots = rows(k, "slots", {c.topK});
  ImageParam weights = rows(k, "weights", {c.topK});
  Var i("i"), t("t");
  Expr last = y.dim(1).extent() - 1;
  Expr sum = weights(0, t) * y(i, clamp(slots(0, t), 0, last));
  for (int j = 1; j < int(c.topK); ++j)
    sum += weights(j, t) * y(i, clamp(slots(j, t), 0, last));
  Func out("combine");
  out(i, t) = sum;
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(c.width, k.lanes);
  k.outDims = {c.width};
}

/// a - lambda * b, lambda = exp(lq1 . lk1) - exp(lq2 . lk2) + lambda_init:
/// one scalar per call (Func "lambda", computed once), then row-wise.
static void lowerDifferential(KernelFuncs &k, const DifferentialKernel &d) {
  ImageParam a = rows(k, "a", {d.width}), b = rows(k, "b", {d.width});
  ImageParam l[4];
  for (int j = 0; j < 4; ++j) {
    l[j] = k.in(DifferentialKernel::lambdas[j]);
    l[j].dim(0).set_bounds(0, int(d.dim)).set_stride(1);
  }
  RDom r(0, int(d.dim), "r");
  Func lambda("lambda");
  lambda() = exp(sum(l[0](r) * l[1](r))) - exp(sum(l[2](r) * l[3](r))) +
             float(d.lambdaInit);
  Var i("i"), t("t");
  Func out("differential");
  out(i, t) = a(i, t) - lambda() * b(i, t);
  k.out = out;
  k.funcs["lambda"] = lambda;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(d.width, k.lanes);
  k.outDims = {d.width};
}

/// Linear attention's feature map phi.
static Expr featureMap(Expr x, FeatureMap m) {
  switch (m) {
  case FeatureMap::elu1: return select(x > 0.0f, x + 1.0f, exp(x));
  case FeatureMap::identity: return x;
  case FeatureMap::relu: return max(x, 0.0f);
  }
  return x;
}

/// The state [kvHeads, headDim, columns] (dense) as input `name` of `k`.
static ImageParam stateInput(KernelFuncs &k, int64_t kvHeads,
                             int64_t headDim, int64_t columns) {
  ImageParam st = k.in("state");
  st.dim(0).set_bounds(0, int(columns)).set_stride(1);
  st.dim(1).set_bounds(0, int(headDim)).set_stride(int(columns));
  st.dim(2).set_bounds(0, int(kvHeads)).set_stride(int(headDim * columns));
  return st;
}

/// phi(k) (Func "phi_k", (e, g, t)) and the values extended by a column
/// of ones where the state keeps the normalizer ((j, g, t), j < columns).
static std::pair<Func, Func> linearKeys(KernelFuncs &k, int64_t kvHeads,
                                        int64_t headDim, int64_t vHeadDim,
                                        FeatureMap map, bool normalize) {
  ImageParam key = rows(k, "k", {headDim, kvHeads});
  ImageParam v = rows(k, "v", {vHeadDim, kvHeads});
  Var e("e"), g("g"), t("t"), j("j");
  Func phik("phi_k"), vx("v_ext");
  phik(e, g, t) = featureMap(key(e, g, t), map);
  int V = int(vHeadDim);
  vx(j, g, t) = normalize ? select(j < V, v(min(j, V - 1), g, t), 1.0f)
                          : v(j, g, t);
  return {phik, vx};
}

/// Causal linear attention, chunked (LinearAttentionKernel): for query row
/// t of head h (key/value head g), chunk n = t / C,
///   acc(j) = phi(q_t) . start(:, j, g, n) + sum over rows s of chunk n,
///            s <= t, of (phi(q_t) . phi(k_s)) vx(j, s)
/// with start(n) = state + the sums of phi(k) vx^T of chunks before n (a
/// scan over chunks); out = acc(j) / (acc(V) + 1e-6) with the normalizer,
/// else scale * acc(j).
static void lowerLinearAttention(KernelFuncs &k,
                                 const LinearAttentionKernel &d) {
  const int H = int(d.heads), G = int(d.kvHeads), D = int(d.headDim),
            V = int(d.vHeadDim), group = H / G;
  const int cols = V + (d.normalize ? 1 : 0);
  ImageParam q = rows(k, "q", {d.headDim, d.heads});
  ImageParam st = stateInput(k, d.kvHeads, d.headDim, cols);
  auto [phik, vx] = linearKeys(k, d.kvHeads, d.headDim, d.vHeadDim, d.map,
                               d.normalize);
  Expr T = q.dim(2).extent();
  Expr C = d.chunk ? Expr(int(d.chunk)) : T;
  Var e("e"), j("j"), g("g"), h("h"), t("t"), n("n"), x("x");
  Func phiq("phi_q");
  phiq(e, h, t) = featureMap(q(e, h, t), d.map);

  // Per-chunk sums of phi(k) vx^T, then the state at each chunk's start.
  RDom rs(0, C, "rs");
  rs.where(n * C + rs < T);
  Func chunkSum("chunk_sum");
  chunkSum(j, e, g, n) = 0.0f;
  // (Rows clamped to the call's: bounds inference does not read the
  // predicate, and rows past the call are never summed.)
  Expr row = min(n * C + rs, T - 1);
  chunkSum(j, e, g, n) += phik(e, g, row) * vx(j, g, row);
  Expr chunks = (T + C - 1) / C;
  RDom rn(1, chunks - 1, "rn");
  Func start("chunk_state");
  start(j, e, g, n) = st(j, e, g);
  start(j, e, g, rn) = start(j, e, g, rn - 1) + chunkSum(j, e, g, rn - 1);

  // Scores of row t against the rows of its chunk up to t (clamped past
  // t: those are never read).
  Expr first = (t / C) * C;
  RDom re(0, D, "re");
  Func score("intra_score");
  score(x, h, t) = 0.0f;
  score(x, h, t) += phiq(re, h, t) * phik(re, h / group, min(first + x, t));
  // (At most the call's rows: a decode step scores its one row.)
  RDom rx(0, min(C, T), "rx");
  rx.where(rx <= t - first);
  Func acc("la_acc");
  acc(j, h, t) = 0.0f;
  acc(j, h, t) += phiq(re, h, t) * start(j, re, h / group, t / C);
  acc(j, h, t) += score(rx, h, t) * vx(j, h / group, min(first + rx, t));
  Func out("linear_attention");
  out(j, h, t) = d.normalize ? acc(j, h, t) / (acc(V, h, t) + 1e-6f)
                             : acc(j, h, t) * float(d.scale);
  k.out = out;
  k.funcs = {{"phi_q", phiq},   {"phi_k", phik},     {"chunk_sum", chunkSum},
             {"start", start},  {"score", score},    {"acc", acc}};
  k.vars = {{"e", e}, {"j", j}, {"g", g}, {"h", h},
            {"t", t}, {"n", n}, {"x", x}};
  k.rdoms = {{"rs", rs}, {"rn", rn}, {"re", re}, {"rx", rx}};
  k.lanes = vectorWidthFor(V, k.lanes);
  k.outDims = {d.vHeadDim, d.heads};
}

/// The state after a call (LinearStateKernel), in place: out(j, e, g) =
/// state(j, e, g) + sum over the call's rows t of phi(k_t)(e) vx(j, t).
static void lowerLinearState(KernelFuncs &k, const LinearStateKernel &d) {
  const int cols = int(d.columns());
  ImageParam st = stateInput(k, d.kvHeads, d.headDim, cols);
  auto [phik, vx] = linearKeys(k, d.kvHeads, d.headDim, d.vHeadDim, d.map,
                               d.normalize);
  Expr T = k.in("k").dim(2).extent();
  Var j("j"), e("e"), g("g");
  RDom rt(0, T, "rt");
  Func out("linear_state");
  out(j, e, g) = st(j, e, g);
  out(j, e, g) += phik(e, g, rt) * vx(j, g, rt);
  OutputImageParam o = out.output_buffer();
  o.dim(0).set_bounds(0, cols).set_stride(1);
  o.dim(1).set_bounds(0, int(d.headDim)).set_stride(cols);
  o.dim(2).set_bounds(0, int(d.kvHeads)).set_stride(int(d.headDim) * cols);
  k.out = out;
  k.funcs = {{"phi_k", phik}};
  k.vars = {{"j", j}, {"e", e}, {"g", g}};
  k.rdoms = {{"rt", rt}};
  // Vectors no wider than the state's rows (they may be narrower than the
  // target's: head_dim 8).
  while (k.lanes > 1 && k.lanes > cols)
    k.lanes /= 2;
}

/// Per token and group: rms: x / sqrt(mean(x^2) + eps) * w (+ b);
/// layer: (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) * w (+ b).
/// Both reductions are split into `lanes`-wide partial sums.
static void lowerNorm(KernelFuncs &k, const NormKernel &n) {
  int64_t d = n.width, groups = n.groups;
  bool layer = n.kind == NormKind::layer, hasBias = n.bias;
  bool separate = n.weightPerGroup;
  float eps = float(n.eps);
  int vl = vectorWidthFor(d, k.lanes);
  ImageParam x = rows(k, "x", {d, groups});
  ImageParam w = k.in("weight"), bias;
  if (hasBias)
    bias = k.in("bias");
  for (ImageParam *p : {&w, &bias}) {
    if (!p->defined())
      continue;
    p->dim(0).set_bounds(0, int(d)).set_stride(1);
    if (separate)
      p->dim(1).set_bounds(0, int(groups)).set_stride(int(d));
  }

  Var i("i"), g("g"), t("t"), kk("kk");
  RDom r(0, int(d / vl), "r");
  RDom lane(0, vl, "lane");
  Func mean("mean");
  if (layer) {
    Func s1("sum_lanes");
    s1(kk, g, t) = 0.0f;
    s1(kk, g, t) += x(r * vl + kk, g, t);
    mean(g, t) = sum(s1(lane, g, t)) / float(d);
    k.funcs["s1"] = s1;
  } else {
    mean(g, t) = 0.0f;
  }
  Func centered("centered");
  centered(i, g, t) = x(i, g, t) - mean(g, t);
  Func sq("sumsq_lanes");
  sq(kk, g, t) = 0.0f;
  sq(kk, g, t) += centered(r * vl + kk, g, t) * centered(r * vl + kk, g, t);
  Func inv("inv_std");
  inv(g, t) = 1.0f / sqrt(sum(sq(lane, g, t)) / float(d) + eps);
  Func out(layer ? "layernorm" : "rmsnorm");
  float offset = float(n.weightOffset);
  Expr wi = separate ? w(i, g) : w(i);
  Expr scaleBy = offset == 0.0f ? wi : wi + offset;
  Expr y = centered(i, g, t) * inv(g, t) * scaleBy;
  if (hasBias)
    y = y + (separate ? bias(i, g) : bias(i));
  out(i, g, t) = cast(elementType(n.store), y);
  k.out = out;
  k.funcs["sq"] = sq;
  k.funcs["inv"] = inv;
  k.funcs["mean"] = mean;
  k.vars = {{"i", i}, {"g", g}, {"t", t}, {"kk", kk}};
  k.lanes = vl;
  k.outDims = {d, groups};
}

static void lowerEmbed(KernelFuncs &k, const EmbedKernel &e) {
  int64_t vocab = e.vocab, d = e.dModel;
  float scale = float(e.scale);
  ImageParam tokens = k.in("tokens");
  tokens.dim(0).set_min(0);
  ImageParam table = k.in("table");
  table.dim(0).set_bounds(0, int(d)).set_stride(1);
  table.dim(1).set_bounds(0, int(vocab)).set_stride(int(d));
  Var i("i"), t("t");
  Func out("embed");
  // The runtime rejects out-of-range tokens; the clamp keeps reads in bounds.
  Expr row = clamp(tokens(t), 0, int(vocab) - 1);
  out(i, t) = scale == 1.0f ? table(i, row) : table(i, row) * scale;
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(d, k.lanes);
  k.outDims = {d};
}

/// The rotary frequencies of pairs 0 .. rot/2 - 1, after context-extension
/// scaling, and the factor on cos and sin.
static std::vector<double> ropeFrequencies(const RopeKernel &r,
                                           double &mscale) {
  int64_t rot = r.rotaryDim;
  RopeScaling scaling = r.scaling;
  double orig = double(r.originalMaxSeqLen);
  double theta = r.theta, factor = r.factor;
  double low = r.lowFreqFactor, high = r.highFreqFactor;
  double betaFast = r.betaFast, betaSlow = r.betaSlow;
  if (scaling == RopeScaling::ntk) // a larger base
    theta *= std::pow(factor, double(rot) / double(rot - 2));
  std::vector<double> freq;
  for (int64_t p = 0; p < rot / 2; ++p)
    freq.push_back(std::pow(theta, -2.0 * double(p) / double(rot)));
  mscale = 1.0;
  switch (scaling) {
  case RopeScaling::linear: // positions / factor
    for (double &f : freq)
      f /= factor;
    break;
  case RopeScaling::yarn: {
    // The pair index whose wavelength fits `turns` rotations in `orig`.
    auto dimFor = [&](double turns) {
      return double(rot) * std::log(orig / (turns * 2 * M_PI)) /
             (2 * std::log(theta));
    };
    double lo = std::max(0.0, std::floor(dimFor(betaFast)));
    double hi = std::min(double(rot - 1), std::ceil(dimFor(betaSlow)));
    if (lo == hi)
      hi += 0.001;
    for (size_t p = 0; p < freq.size(); ++p) {
      double ramp = std::clamp((double(p) - lo) / (hi - lo), 0.0, 1.0);
      double extrapolate = 1.0 - ramp;
      freq[p] = freq[p] / factor * (1 - extrapolate) + freq[p] * extrapolate;
    }
    // YaRN's factor m(1) by default; DeepSeek's m(mscale) / m(all_dim).
    auto m = [&](double x) {
      return factor > 1 && x > 0 ? 0.1 * x * std::log(factor) + 1.0 : 1.0;
    };
    mscale = m(r.mscale) / m(r.mscaleAllDim);
    break;
  }
  case RopeScaling::longrope: // a factor per pair (checked: one each)
    for (size_t p = 0; p < freq.size(); ++p)
      freq[p] /= r.factors[p];
    mscale = r.attentionFactor;
    break;
  case RopeScaling::llama3: { // Llama 3.1
    double lowWavelen = orig / low, highWavelen = orig / high;
    for (double &f : freq) {
      double wavelen = 2 * M_PI / f;
      if (wavelen > lowWavelen) {
        f /= factor;
      } else if (wavelen >= highWavelen) {
        double smooth = (orig / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
    break;
  }
  default:
    break;
  }
  return freq;
}

/// cos(a) and sin(a) of a double `a`, as vector arithmetic: Halide 14's
/// cos and sin are a scalar libm call per lane. a - q pi/2 for the nearest
/// integer q (the product and difference in double are within 2^-52 |a| of
/// exact: under an f32 unit of the result for |a| < 2^29, growing past
/// it), then Taylor polynomials on [-pi/4, pi/4] to degree 13 / 12
/// (truncation under 1e-12) and the quadrant q mod 4.
static std::pair<Expr, Expr> cosSin(Expr a) {
  Expr q = round(a * Expr(2 / M_PI));
  Expr r = a - q * Expr(M_PI / 2), r2 = r * r;
  // The sum over n = top, top - 2, .., 3 or 2 of (-1)^(n / 2) r2^(n / 2)
  // / n!, halves rounded down (Horner in r2; n! exact in double): sin is
  // r + r times that over odd n, cos 1 plus that over even n.
  auto series = [&](int top) {
    Expr sum(0.0);
    for (int n = top; n >= 2; n -= 2) {
      double fact = 1.0;
      for (int m = 2; m <= n; ++m)
        fact *= m;
      sum = (sum + Expr((n / 2 % 2 ? -1.0 : 1.0) / fact)) * r2;
    }
    return sum;
  };
  Expr s = r + series(13) * r, c = Expr(1.0) + series(12);
  // q mod 4 in double (exact): an integer cast would overflow from
  // |a| = 2^31 pi / 2, which a scaled frequency above 1 can reach.
  Expr quadrant = q - Expr(4.0) * floor(q * Expr(0.25));
  Expr cosA = select(quadrant == Expr(0.0), c, quadrant == Expr(1.0), -s,
                     quadrant == Expr(2.0), -c, s);
  Expr sinA = select(quadrant == Expr(0.0), s, quadrant == Expr(1.0), c,
                     quadrant == Expr(2.0), -s, -c);
  return {cosA, sinA};
}

/// RoPE's cos and sin of each rotated pair p of row t (at position pos +
/// t), as Funcs (p, t) of `k`'s: `freq` (the pairs' frequencies), `cos`
/// and `sin`, under `prefix`.
static void ropeTables(KernelFuncs &k, const RopeKernel &r, Var p, Var t,
                       const std::string &prefix) {
  int half = int(r.rotaryDim / 2);
  double mscale;
  std::vector<double> freqs = ropeFrequencies(r, mscale);
  Buffer<double> table(half, "inv_freq_table");
  for (int i = 0; i < half; ++i)
    table(i) = freqs[size_t(i)];
  Func freq("inv_freq");
  freq(p) = table(p);
  Func angle("angle");
  angle(p, t) = cast<double>(k.pos + t) * freq(p);
  auto [cosA, sinA] = cosSin(angle(p, t));
  Func cosv("cos_table"), sinv("sin_table");
  cosv(p, t) = cast<float>(Expr(mscale) * cosA);
  sinv(p, t) = cast<float>(Expr(mscale) * sinA);
  k.funcs[prefix + "freq"] = freq;
  k.funcs[prefix + "cos"] = cosv;
  k.funcs[prefix + "sin"] = sinv;
}

/// Element j of a head, `x(j)` its elements, rotated by the tables of
/// ropeTables (under `prefix`) at row t (where `rotates`, if given).
static Expr rotated(KernelFuncs &k, const RopeKernel &r,
                    const std::function<Expr(Expr)> &x, Var j, Var t,
                    const std::string &prefix, Expr rotates = Expr()) {
  int hd = int(r.headDim), half = int(r.rotaryDim / 2);
  // Pair index, partner element and the sign of its term for element j.
  Expr pair, partner, sign;
  if (r.style == RopeStyle::interleaved) {
    Expr even = j % 2 == 0;
    pair = j / 2;
    partner = select(even, x(min(j + 1, hd - 1)), x(max(j - 1, 0)));
    sign = select(even, -1.0f, 1.0f);
  } else {
    Expr first = j < half;
    pair = select(first, j, j - half);
    partner = select(first, x(min(j + half, hd - 1)), x(max(j - half, 0)));
    sign = select(first, -1.0f, 1.0f);
  }
  pair = clamp(pair, 0, half - 1);
  Func cosv = k.funcs.at(prefix + "cos"), sinv = k.funcs.at(prefix + "sin");
  Expr turned = x(j) * cosv(pair, t) + sign * partner * sinv(pair, t);
  Expr rotary = j < int(r.rotaryDim);
  if (rotates.defined())
    rotary = rotary && rotates;
  return select(rotary, turned, x(j));
}

/// Rotates pairs of dimensions of each head by (pos + t) * freq(p), the
/// angle in double (an f32 angle is off by up to half its unit: 0.004 rad
/// at position 10^5 of the fastest pair).
static void lowerRope(KernelFuncs &k, const RopeKernel &r) {
  int64_t heads = r.heads, hd = r.headDim;
  ImageParam x = rows(k, "x", {hd, heads});
  Var j("j"), h("h"), t("t"), p("p");
  ropeTables(k, r, p, t, "");
  Func out("rope");
  out(j, h, t) = rotated(
      k, r, [&](Expr e) { return x(e, h, t); }, j, t, "");
  k.out = out;
  k.vars = {{"j", j}, {"h", h}, {"t", t}, {"p", p}};
  k.lanes = vectorWidthFor(hd, k.lanes);
  k.outDims = {hd, heads};
  // (Its rows may be a view's: the first heads of an epilogue rope's
  // result that its linear did not take, LowerToKernels.)
  k.denseOutputRows = false;
}

/// A rope epilogue (k.epilogue, the kernel's output [T, N / head_dim,
/// head_dim]): heads below d.rope.heads of k.out rotated (lowerRope's
/// arithmetic), the others as k.out has them.
static void ropeEpilogue(KernelFuncs &k, const LinearKernel &d) {
  const RopeKernel &r = d.rope;
  int hd = int(r.headDim);
  Var j("rj"), h("rh"), p("rp"), t = k.vars["t"];
  ropeTables(k, r, p, t, "rope_");
  // (Element e of head h is within the head: promised, so that a task's
  // columns of k.out are its heads' alone, not what the selects' bounds
  // would widen them to. Its tasks are whole heads and panels, N whole
  // panels: LowerToKernels.)
  auto x = [&](Expr e) {
    Expr first = h * hd;
    return k.out(unsafe_promise_clamped(first + e, first, first + hd - 1), t);
  };
  Func rope("rope");
  rope(j, h, t) = rotated(k, r, x, j, t, "rope_", h < int(r.heads));
  k.epilogue = rope;
  k.vars["rj"] = j, k.vars["rh"] = h, k.vars["rp"] = p;
  k.outDims = {hd, d.N / hd};
}

/// ALiBi slopes (Press et al. 2022): a geometric sequence from 2^(-8/n)
/// for n a power of two; otherwise the slopes of the nearest lower power of
/// two, then every other slope of the next one up.
static std::vector<double> alibiSlopes(int n) {
  auto pow2 = [](int m) {
    std::vector<double> s;
    double start = std::pow(2.0, -8.0 / m);
    for (int i = 0; i < m; ++i)
      s.push_back(std::pow(start, i + 1));
    return s;
  };
  int m = 1;
  while (m * 2 <= n)
    m *= 2;
  std::vector<double> s = pow2(m);
  std::vector<double> extra = pow2(2 * m);
  for (int i = 0; int(s.size()) < n; i += 2)
    s.push_back(extra[size_t(i)]);
  return s;
}

/// Causal T5 buckets (Raffel et al. 2020) of distances 0 .. max_distance:
/// half the buckets hold distances exactly, the rest grow logarithmically
/// up to max_distance.
static std::vector<int> t5Buckets(int64_t buckets, int64_t maxDistance) {
  std::vector<int> out;
  int64_t exact = buckets / 2;
  for (int64_t n = 0; n <= maxDistance; ++n) {
    if (n < exact) {
      out.push_back(int(n));
      continue;
    }
    double large = double(exact) + std::log(double(n) / double(exact)) /
                                       std::log(double(maxDistance) /
                                                double(exact)) *
                                       double(buckets - exact);
    out.push_back(int(std::min<int64_t>(int64_t(large), buckets - 1)));
  }
  return out;
}

/// A score no visible key has: exp(masked - max) is 0 for every row that
/// sees a key, and finite (no NaN) in a block or chunk that sees none.
constexpr float kMasked = -1e30f;

/// What every attention kernel reads, and what it does to a query-key dot
/// product: query head h (key/value head h / group) at position `qpos`
/// against key position `key`.
struct AttentionTerms {
  const AttentionKernel &a;
  int group;
  int64_t vd; ///< the values' head dim
  ImageParam q, k, v, relBias, relKey, relValue;
  Buffer<float> slope;      ///< ALiBi's per-head slopes
  Buffer<int32_t> bucketOf; ///< T5's bucket of each distance
  bool f16c; ///< an f16 cache read by the archu_f16_f32 ukernels (toF32)

  AttentionTerms(KernelFuncs &kf, const AttentionKernel &a)
      : a(a), group(int(a.heads / a.kvHeads)), vd(a.vHeadDim),
        f16c(kf.f16c && a.kv == StoreType::f16) {
    kf.ukernels |= f16c;
    int64_t hd = a.headDim;
    q = rows(kf, "q", {hd, a.heads});
    k = context(kf, "k", int(hd));
    v = context(kf, "v", int(vd));
    end = kf.pos + q.dim(2).extent();
    first = end - k.dim(2).extent();
    if (int64_t buckets = a.t5Buckets) {
      relBias = kf.in("rel_bias");
      relBias.dim(0).set_bounds(0, int(a.heads)).set_stride(1);
      relBias.dim(1).set_bounds(0, int(buckets)).set_stride(int(a.heads));
      // T5's bucket of each query-key distance up to max_distance (beyond
      // it the last bucket), computed once at compile time.
      std::vector<int> table = t5Buckets(buckets, a.t5MaxDistance);
      bucketOf = Buffer<int32_t>(int(table.size()), "t5_bucket");
      for (size_t i = 0; i < table.size(); ++i)
        bucketOf(int(i)) = table[i];
    }
    if (int64_t clip = a.shawClip) {
      relKey = kf.in("rel_key"), relValue = kf.in("rel_value");
      for (ImageParam *rel : {&relKey, &relValue}) {
        rel->dim(0).set_bounds(0, int(hd)).set_stride(1);
        rel->dim(1).set_bounds(0, int(2 * clip + 1)).set_stride(int(hd));
      }
    }
    if (a.randomBlocks) {
      Var qv("qb"), mv("m");
      drawnBlock = Func("drawn_block");
      drawnBlock(qv, mv) = hashDraw(uint32_t(a.randomSeed), qv, mv);
    }
    if (a.alibi) {
      std::vector<double> slopes = alibiSlopes(int(a.heads));
      slope = Buffer<float>(int(a.heads), "alibi_slope");
      for (int i = 0; i < int(a.heads); ++i)
        slope(i) = float(slopes[size_t(i)]);
    }
  }

  /// A cache's context (head_dim, kv_heads, positions): head-major (a
  /// head's positions consecutive, heads the sequence's stride apart) or
  /// position-major (a position's heads consecutive, as a ring keeps them).
  /// The positions' stride is free: MLA's values are the first columns of
  /// the rows that hold its keys.
  ImageParam context(KernelFuncs &kf, const char *name, int hd) const {
    ImageParam p = kf.in(name);
    p.dim(0).set_bounds(0, hd).set_stride(1);
    p.dim(1).set_bounds(0, int(a.kvHeads));
    p.dim(2).set_min(0);
    if (a.kvByHead)
      p.dim(2).set_stride(hd);
    else if (a.kvHeads > 1)
      p.dim(1).set_stride(hd);
    return p;
  }

  /// The context's rows hold positions first ..< end = pos + T: all of
  /// them from 0 for a tokens cache, the last ones a ring keeps.
  Expr end, first;

  /// Element d of key/value head `kv` at position j, in f32 (the caches
  /// may store f16 or bf16). Positions outside the context read its
  /// nearest row: a block or chunk may start before the first position a
  /// ring keeps, or end past pos + T; the mask hides those keys.
  Expr key(Expr d, Expr kv, Expr j) const {
    return toF32(k(d, kv, clamp(j, first, end - 1) - first));
  }
  Expr value(Expr d, Expr kv, Expr j) const {
    return toF32(v(d, kv, clamp(j, first, end - 1) - first));
  }
  Expr toF32(Expr e) const { return f16c ? f16Call(e) : cast<float>(e); }

  /// Shaw: the table row of key position `key` for query position `qpos`.
  Expr shawRow(Expr qpos, Expr key) const {
    int clip = int(a.shawClip);
    return clamp(key - qpos, -clip, clip) + clip;
  }
  /// `score` where `visible`, else kMasked. Not a select around the
  /// score: Halide would shrink the region of the dot products under it
  /// to the visible keys, and the diagonal block's symbolic extents keep
  /// its register tile in memory. kMasked + score rounds to kMasked for
  /// any |score| < 1e22, so the sum is exact.
  static Expr masked(Expr visible, Expr score) {
    return select(visible, 0.0f, kMasked) + score;
  }
  /// How far back a windowed query reaches: window * dilation.
  int span() const { return int(a.window * a.dilation); }
  /// Whether `p` is a global position.
  Expr isGlobal(Expr p) const {
    Expr any = Halide::Internal::const_false();
    for (int64_t g : a.globals)
      any = any || p == int(g);
    return any;
  }
  /// Block-random keys: drawn(Q, m) is the m-th key block drawn for query
  /// block Q >= 1, in [0, Q): a 32-bit mix (wrapping multiplies) of (seed,
  /// Q, m), modulo Q (test/reference/archref.py draws the same). A Func
  /// of its own, computed once per call over the query blocks the call
  /// meets: inlined, its hash made the key-block predicates too large for
  /// Halide's bounds solver.
  Func drawnBlock;
  Expr drawn(Expr Q, Expr m) const { return drawnBlock(Q, m); }
  static Expr hashDraw(uint32_t seed, Expr Q, Expr m) {
    auto u32 = [](uint32_t v) {
      return Halide::Internal::make_const(UInt(32), uint64_t(v));
    };
    Expr x = u32(seed * 0x9E3779B1u) + cast<uint32_t>(m) * u32(0xC2B2AE3Du) +
             cast<uint32_t>(Q) * u32(0x85EBCA77u);
    x = x ^ (x >> 16);
    x = x * u32(0x7FEB352Du);
    x = x ^ (x >> 15);
    x = x * u32(0x846CA68Bu);
    x = x ^ (x >> 16);
    return cast<int32_t>(x % cast<uint32_t>(max(Q, 1)));
  }
  /// Whether key block `kblock` is drawn for query block `qblock`.
  Expr isDrawn(Expr qblock, Expr kblock) const {
    Expr any = Halide::Internal::const_false();
    for (int m = 0; m < int(a.randomBlocks); ++m)
      any = any || kblock == drawn(qblock, m);
    return qblock >= 1 && any;
  }
  /// Whether key position `key` <= qpos is in the window of query position
  /// `qpos` (every key without a window): within the span, on the
  /// dilation's stride, either of them a global position, or in a key
  /// block drawn for the query's block.
  Expr inWindow(Expr qpos, Expr key) const {
    if (!a.window)
      return Halide::Internal::const_true();
    Expr in = key > qpos - span();
    if (a.dilation > 1)
      in = in && (qpos - key) % int(a.dilation) == 0;
    if (!a.globals.empty())
      in = in || isGlobal(key) || isGlobal(qpos);
    if (a.randomBlocks) {
      int bs = int(a.blockSize);
      in = in || isDrawn(qpos / bs, key / bs);
    }
    return in;
  }
  /// Whether any position is attended from further back than the span.
  bool reachesAnywhere() const {
    return !a.globals.empty() || a.randomBlocks > 0;
  }
  /// Whether `key` is attended from `qpos`: causal, within the window.
  Expr visible(Expr qpos, Expr key) const {
    return key <= qpos && inWindow(qpos, key);
  }
  /// The score of a dot product (Shaw's key term included): scaled,
  /// soft-capped, with ALiBi's or T5's bias.
  Expr score(Expr dot, Expr h, Expr qpos, Expr key) const {
    Expr sc = dot * float(a.scale);
    float cap = float(a.softcap);
    if (cap > 0)
      sc = cap * tanh(sc / cap);
    if (a.alibi)
      sc -= slope(h) * cast<float>(qpos - key);
    if (a.t5Buckets) {
      Expr dist = clamp(qpos - key, 0, int(a.t5MaxDistance));
      sc += relBias(h, clamp(bucketOf(dist), 0, int(a.t5Buckets) - 1));
    }
    return sc;
  }
};

/// Causal attention of query rows t over cache positions 0 .. pos + t, with
/// query head h reading KV head h / (n_heads / n_kv_heads): one task per
/// (head, row), its scores over the whole context.
static void lowerRowAttention(KernelFuncs &k, const AttentionTerms &in) {
  const AttentionKernel &a = in.a;
  int64_t heads = a.heads, hd = a.headDim;
  int group = in.group;
  ImageParam q = in.q;
  auto kc = [&](Expr d, Expr kv, Expr j) { return in.key(d, kv, j); };
  auto vc = [&](Expr d, Expr kv, Expr j) { return in.value(d, kv, j); };
  Param<int32_t> pos = k.pos;

  Var j("j"), h("h"), t("t"), dd("dd");
  RDom rd(0, int(hd), "rd");
  Func score("score");
  score(j, h, t) = 0.0f;
  Expr key = kc(rd, h / group, j);
  if (a.shawClip)
    key += in.relKey(rd, in.shawRow(pos + t, j));
  score(j, h, t) += q(rd, h, t) * key;
  Func scaled("scaled_score");
  scaled(j, h, t) = in.score(score(j, h, t), h, pos + t, j);

  RDom past(in.first, in.end - in.first, "past");
  past.where(past <= pos + t);
  if (a.window) // the window's positions only
    past.where(in.inWindow(pos + t, past));
  Func rowMax("row_max");
  rowMax(h, t) = Float(32).min();
  rowMax(h, t) = max(rowMax(h, t), scaled(past, h, t));
  Func prob("prob");
  prob(j, h, t) = exp(scaled(j, h, t) - rowMax(h, t));
  Func rowSum("row_sum");
  rowSum(h, t) = 0.0f;
  rowSum(h, t) += prob(past, h, t);
  Func pv("pv");
  pv(dd, h, t) = 0.0f;
  Expr value = vc(dd, h / group, past);
  if (a.shawClip)
    value += in.relValue(dd, in.shawRow(pos + t, past));
  pv(dd, h, t) += prob(past, h, t) * value;
  Func out("attention");
  out(dd, h, t) = cast(elementType(a.store), pv(dd, h, t) / rowSum(h, t));
  k.out = out;
  k.funcs = {{"score", score}, {"row_max", rowMax}, {"prob", prob},
             {"row_sum", rowSum}, {"pv", pv}};
  k.vars = {{"j", j}, {"h", h}, {"t", t}, {"dd", dd}};
  k.rdoms = {{"rd", rd}};
  k.lanes = vectorWidthFor(in.vd, k.lanes);
  k.outDims = {in.vd, heads};
}

/// A softmax over a chunk of keys (decode's): per row, the maximum of the
/// scores, their exponentials less it, and their sum (named WHAT_max,
/// WHAT_prob, WHAT_sum). `score` takes the key index `j` (reduced over
/// `keys`) at argument `keyAt` among the row coordinates `rows`.
struct SoftmaxPart {
  Func max, prob, sum;
};
static SoftmaxPart softmaxPart(const std::string &what, Func score, Var j,
                               RDom keys, const std::vector<Var> &rows,
                               size_t keyAt) {
  auto at = [&](Expr key) {
    std::vector<Expr> args(rows.begin(), rows.end());
    args.insert(args.begin() + keyAt, key);
    return args;
  };
  std::vector<Var> probArgs = rows;
  probArgs.insert(probArgs.begin() + keyAt, j);
  std::vector<Expr> row(rows.begin(), rows.end());
  SoftmaxPart p{Func(what + "_max"), Func(what + "_prob"), Func(what + "_sum")};
  p.max(rows) = kMasked;
  p.max(row) = max(p.max(row), score(at(keys)));
  p.prob(probArgs) = exp(score(at(j)) - p.max(row));
  p.sum(rows) = 0.0f;
  p.sum(row) += p.prob(at(keys));
  return p;
}

/// Tiled attention with an online softmax (arch.flash_attention). Two
/// algorithms behind one select, each with its own schedule (a
/// specialization on the row count):
///
/// - tiles, for T >= block_q: a tile's rows r are block_q positions of the
///   `group` query heads of key/value head kvh (r = g * block_q + i). Per
///   block b of block_kv keys: the tile's scores, their row maximum, the
///   exponentials, their sum and their product with the values; `running`
///   merges each block into (max, sum, accumulators) per row and group
///   of value columns, rescaling by exp(old max - new max); `tile_out`
///   divides each row's accumulators by its sum, for the output to read.
///   Blocks past a tile's last visible key, or before its first row's
///   window, are not visited.
/// - chunks, for fewer rows (decode): the context is cut into chunks of
///   split_kv keys; each (key/value head, chunk) computes the partial max,
///   sum and accumulator of all its query heads and rows, in parallel; the
///   partials are merged. Chunks before every row's window are not made.
///
/// Neither holds more than a block's or a chunk's scores.
static void lowerTiledAttention(KernelFuncs &k, const AttentionTerms &in) {
  const AttentionKernel &a = in.a;
  int hd = int(a.headDim), group = in.group;
  int bq = int(a.blockQ), bk = int(a.blockKV), ck = int(a.splitKV);
  ImageParam q = in.q;
  auto kc = [&](Expr d, Expr kv, Expr j) { return in.key(d, kv, j); };
  auto vc = [&](Expr d, Expr kv, Expr j) { return in.value(d, kv, j); };
  Param<int32_t> pos = k.pos;
  Expr first = in.first, end = in.end, T = q.dim(2).extent();
  Var dd("dd"), h("h"), t("t"), j("j");
  RDom rd(0, hd, "rd");

  // Tiles.
  Var r("r"), qb("qb"), kvh("kvh"), b("b");
  auto tokenOf = [&](Expr row, Expr tile) { return tile * bq + row % bq; };
  auto headOf = [&](Expr row, Expr kv) { return kv * group + row / bq; };
  Func qt("q_tile");
  qt(r, dd, qb, kvh) = q(dd, headOf(r, kvh), min(tokenOf(r, qb), T - 1));
  // A 16-bit cache's key and value block in f32, converted once per tile
  // and block (the products below read each element once per row vector
  // group: converted there, each read cost a scalar load, conversion and
  // broadcast where an f32 cache's is the FMA's own broadcast operand).
  // An f32 cache's blocks are read in place.
  bool staged = a.kv != StoreType::f32 && !a.pairs;
  Func kblock("key_block"), vblock("value_block");
  kblock(dd, j, kvh, b) = kc(dd, kvh, b * bk + j);
  vblock(dd, j, kvh, b) = vc(dd, kvh, b * bk + j);
  Func dot("block_dot");
  // With `pairs` (--attention-input=bf16) both products of a tile are bf16
  // dot products, reductions by 2 of bf16 products that Halide 14 emits as
  // vdpbf16ps (with avx512_sapphirerapids: kernelTarget), as the bf16
  // GEMM's: the tile's queries in pairs along head_dim (q_pairs: a vector
  // holds 16 rows' pairs) against a broadcast pair of one key's elements
  // (key_pairs, the block rounded once), and the block's exponentials in
  // pairs of keys (prob_pairs) against a broadcast pair of two keys'
  // values (value_pairs). Sums and the softmax stay f32.
  bool pairs = a.pairs;
  Func qpairs("q_pairs"), kpairs("key_pairs");
  RDom rp(0, 2, 0, hd / 2, "rp");
  dot(r, j, qb, kvh, b) = 0.0f;
  if (pairs) {
    Var e("e"), d2("d2");
    qpairs(e, r, d2, qb, kvh) =
        cast(BFloat(16), qt(r, 2 * d2 + e, qb, kvh));
    kpairs(dd, j, kvh, b) = cast(BFloat(16), kc(dd, kvh, b * bk + j));
    dot(r, j, qb, kvh, b) +=
        cast<float>(qpairs(rp.x, r, rp.y, qb, kvh)) *
        cast<float>(kpairs(2 * rp.y + rp.x, j, kvh, b));
  } else {
    dot(r, j, qb, kvh, b) +=
        qt(r, rd, qb, kvh) *
        (staged ? kblock(rd, j, kvh, b) : kc(rd, kvh, b * bk + j));
  }
  Expr qpos = pos + tokenOf(r, qb);
  // A block's keys in groups of kq (rj.x a key of group rj.y): groups
  // wholly past the tile's last query are not computed (a tile's last
  // block reaches past its queries: at 128 tokens a quarter of the
  // pairs), masked scores whose probabilities, 0, the sums would only
  // add. So the scores and probabilities are updates over the groups
  // computed, of an undefined pure definition: nothing reads the rest
  // (but the bf16 pairs' value products, below: there 0).
  // (The count of a block's keys up to the tile's last query is a Func,
  // so that Halide's loop trimming solves the predicate for rj.y alone:
  // written out, it would also bound the tile and block coordinates by
  // it, and the tile's buffers, one tile each, by those bounds.)
  int kq = divisorUpTo(bk, kAttentionTileColumns);
  Func blockKeys("block_keys");
  blockKeys(qb, b) = pos + qb * bq + bq - b * bk;
  RDom rj(0, kq, 0, bk / kq, "rj");
  rj.where(rj.y * kq < blockKeys(qb, b));
  Expr rkey = rj.y * kq + rj.x, bkey = b * bk + rkey;
  Func score("block_score");
  score(r, j, qb, kvh, b) = undef<float>();
  Expr raw = dot(r, rkey, qb, kvh, b);
  Func qrel("q_rel"); // Shaw: each row's dot with each key-table row
  if (a.shawClip) {
    Var i("i");
    qrel(r, i, qb, kvh) = 0.0f;
    qrel(r, i, qb, kvh) += qt(r, rd, qb, kvh) * in.relKey(rd, i);
    raw += qrel(r, in.shawRow(qpos, bkey), qb, kvh);
  }
  score(r, rkey, qb, kvh, b) = in.masked(
      in.visible(qpos, bkey), in.score(raw, headOf(r, kvh), qpos, bkey));
  Func bmax("block_max"), prob("block_prob"), bsum("block_sum");
  bmax(r, qb, kvh, b) = kMasked;
  bmax(r, qb, kvh, b) = max(bmax(r, qb, kvh, b), score(r, rkey, qb, kvh, b));
  if (pairs)
    prob(r, j, qb, kvh, b) = 0.0f;
  else
    prob(r, j, qb, kvh, b) = undef<float>();
  prob(r, rkey, qb, kvh, b) =
      exp(score(r, rkey, qb, kvh, b) - bmax(r, qb, kvh, b));
  bsum(r, qb, kvh, b) = 0.0f;
  bsum(r, qb, kvh, b) += prob(r, rkey, qb, kvh, b);
  Func bpv("block_pv");
  Expr value = staged ? vblock(dd, rkey, kvh, b) : vc(dd, kvh, bkey);
  if (a.shawClip)
    value += in.relValue(dd, in.shawRow(qpos, bkey));
  bpv(r, dd, qb, kvh, b) = 0.0f;
  Func ppairs("prob_pairs"), vpairs("value_pairs");
  // The pairs' value products go over all bk keys of a block (rpv.x: the
  // key in the pair, rpv.y: the pair), not only the groups computed as
  // rj's: keys past the tile's last query have probability 0 (prob's pure
  // definition). Only a tile's last block has such keys.
  RDom rpv(0, 2, 0, bk / 2, "rpv");
  if (pairs) {
    Var e("e"), k2("k2");
    ppairs(e, r, k2, qb, kvh, b) =
        cast(BFloat(16), prob(r, 2 * k2 + e, qb, kvh, b));
    vpairs(e, dd, k2, kvh, b) =
        cast(BFloat(16), vc(dd, kvh, b * bk + 2 * k2 + e));
    bpv(r, dd, qb, kvh, b) +=
        cast<float>(ppairs(rpv.x, r, rpv.y, qb, kvh, b)) *
        cast<float>(vpairs(rpv.x, dd, rpv.y, kvh, b));
  } else {
    bpv(r, dd, qb, kvh, b) += prob(r, rkey, qb, kvh, b) * value;
  }

  RDom kb(first / bk, (end + bk - 1) / bk - first / bk, "kb");
  Func tileDraws("tile_draws");
  // The blocks up to the tile's last query, as a Func of the tile: the
  // predicate stays linear in kb, so Halide trims kb's loop to the blocks
  // reached, and bounds inference cannot solve it for the tile
  // coordinate. (Written out, it bounded the tile coordinate: with bf16
  // pairs, block_pv's store index then carried that bound, a max()
  // Halide cannot prove equal to its load's, so it scalarized the atomic
  // update instead of making it a vector reduction; and the bound, tagged
  // likely, made Halide's loop partitioning copy the whole tile body
  // for the tiles before its steady state.)
  Func tileBlocks("tile_blocks");
  Var qbv("qbv");
  Expr fq = pos + qbv * bq; // tile qbv's first query position
  tileBlocks(qbv) = (fq + bq - 1) / bk + 1;
  kb.where(kb < tileBlocks(qb));
  Func tileFirst("tile_first_block"), tileGlobal("tile_global");
  if (a.window) {
    // Blocks that reach into the tile's span (from its first block on,
    // again a Func of the tile), hold a global key, or meet a global
    // query of the tile (a Func of the tile too).
    tileFirst(qbv) = (fq - in.span() + 1) / bk;
    Expr reached = kb >= tileFirst(qb);
    if (!a.globals.empty()) {
      Expr any = Halide::Internal::const_false();
      for (int64_t g : a.globals)
        any = any || (fq <= int(g) && int(g) < fq + bq);
      tileGlobal(qbv) = any;
      reached = reached || tileGlobal(qb);
    }
    for (int64_t g : a.globals)
      reached = reached || (kb * bk <= int(g) && int(g) < kb * bk + bk);
    if (a.randomBlocks) {
      // Or overlap a block drawn for one of the tile's query blocks (at
      // most (bq - 1) / bs + 2 of them): a Func per (key block, tile),
      // made per tile, which keeps the predicate small for Halide.
      int bs = int(a.blockSize);
      Var kbv("kbv");
      Expr qa = fq / bs, qz = (fq + bq - 1) / bs;
      Expr any = Halide::Internal::const_false();
      for (int i = 0; i < (bq - 1) / bs + 2; ++i) {
        Expr Q = min(qa + i, qz);
        for (int m = 0; m < int(a.randomBlocks); ++m) {
          Expr rb = in.drawn(Q, m);
          any = any || (Q >= 1 && kbv * bk < (rb + 1) * bs &&
                        rb * bs < kbv * bk + bk);
        }
      }
      tileDraws(kbv, qbv) = any;
      reached = reached || tileDraws(kb, qb);
    }
    kb.where(reached);
  }
  // The running (max, sum, accumulators) of row r for value columns
  // dc * cols ..< (dc + 1) * cols: the rescaling factors
  // exp(old max - new max) and exp(block max - new max) are computed once
  // per row and group of columns, not once per column.
  int vd = int(in.vd);
  int cols = divisorUpTo(vd, kAttentionTileColumns);
  Var dc("dc");
  Func run("running");
  std::vector<Expr> start(size_t(2 + cols), Expr(0.0f));
  start[0] = kMasked;
  run(r, dc, qb, kvh) = Tuple(start);
  Tuple was = run(r, dc, qb, kvh);
  Expr oldMax = was[0], blockMax = bmax(r, qb, kvh, kb);
  // exp(old max - new max) and exp(block max - new max): one of them is
  // exp(0) = 1, the other exp(-|old max - block max|), one exp for both.
  Expr newMax = max(oldMax, blockMax), grew = blockMax > oldMax;
  Expr ratio = exp(-abs(oldMax - blockMax));
  Expr keep = select(grew, ratio, 1.0f), add = select(grew, 1.0f, ratio);
  std::vector<Expr> next{newMax, was[1] * keep + bsum(r, qb, kvh, kb) * add};
  for (int i = 0; i < cols; ++i)
    next.push_back(was[2 + i] * keep +
                   bpv(r, dc * cols + i, qb, kvh, kb) * add);
  run(r, dc, qb, kvh) = Tuple(next);
  Tuple done = run(r, dd / cols, qb, kvh);
  Expr column = done[2 + cols - 1];
  for (int i = cols - 2; i >= 0; --i)
    column = select(dd % cols == i, done[2 + i], column);
  Func tileOut("tile_out");
  tileOut(r, dd, qb, kvh) = column / done[1];
  Expr tiled =
      tileOut((h % group) * bq + t % bq, dd, t / bq, h / group);

  // Chunks.
  Var g("g"), c("c"), l("l");
  // Chunks wholly before every row's span are not made. Global positions
  // before the first chunk made get one chunk more, of their keys (unless
  // a row is itself global, or the globals outnumber a chunk's keys: then
  // every chunk is made); with random blocks every chunk is made.
  bool globalChunk = a.window && !a.globals.empty() && !a.randomBlocks &&
                     int64_t(a.globals.size()) <= ck;
  Expr windowStart = max(first, pos + 1 - in.span()), chunkStart = first;
  if (a.window && !in.reachesAnywhere()) {
    chunkStart = windowStart;
  } else if (globalChunk) {
    Expr globalRow = Halide::Internal::const_false();
    for (int64_t gp : a.globals)
      globalRow = globalRow || (pos <= int(gp) && int(gp) < end);
    chunkStart = select(globalRow, first, windowStart);
  }
  Expr c0 = chunkStart / ck;
  Expr chunks = (end + ck - 1) / ck - c0;
  // Key j of chunk c: a position of the context, or in the global chunk
  // (c = chunks), global position j.
  auto chunkKey = [&](Expr cc, Expr jj) {
    Expr key = (c0 + cc) * ck + jj;
    if (!globalChunk)
      return key;
    Expr gkey = int(a.globals[0]);
    for (size_t i = 1; i < a.globals.size(); ++i)
      gkey = select(jj == int(i), int(a.globals[i]), gkey);
    return select(cc == chunks, gkey, key);
  };
  Expr ckey = chunkKey(c, j), cqpos = pos + t;
  // The global chunk holds the globals the regular chunks do not.
  Expr inChunk = Halide::Internal::const_true();
  if (globalChunk)
    inChunk = c < chunks ||
              (j < int(a.globals.size()) && ckey < c0 * ck);
  int lanes = vectorWidthFor(hd, k.lanes);
  RDom rv(0, hd / lanes, "rv");
  Expr d = rv * lanes + l;
  Expr keyCol = kc(d, kvh, ckey);
  if (a.shawClip)
    keyCol += in.relKey(d, in.shawRow(cqpos, ckey));
  Func cdotLanes("chunk_dot_lanes"); // lane l's share of each dot product
  cdotLanes(l, j, g, t, kvh, c) = 0.0f;
  cdotLanes(l, j, g, t, kvh, c) += q(d, kvh * group + g, t) * keyCol;
  RDom rl(0, lanes, "rl");
  Func cdot("chunk_dot");
  cdot(j, g, t, kvh, c) = 0.0f;
  cdot(j, g, t, kvh, c) += cdotLanes(rl, j, g, t, kvh, c);
  Func cscore("chunk_score");
  cscore(j, g, t, kvh, c) = in.masked(
      in.visible(cqpos, ckey) && inChunk,
      in.score(cdot(j, g, t, kvh, c), kvh * group + g, cqpos, ckey));
  // A chunk's keys stop at the context's end: while the context is
  // shorter than a chunk (most of a decode) its one chunk scores and sums
  // the keys up to the end, not a whole chunk's, the rest masked (at
  // 1024-key chunks, 80 us a layer of a short decode on the Xeon: docs/
  // performance.md "Decode attention over the keys there are"); with
  // more, the last chunk's loops stop at the end. (A chunk still starts
  // at a multiple of split_kv. With a global chunk, every chunk keeps
  // split_kv keys, those past the end masked as before.)
  // (In whole vectors of the sums' lanes, so that the sums add what they
  // did, masked zeros dropped: the same bits.)
  int sumLanes = chunkKeyLanes(k, a);
  auto wholeVectors = [&](Expr keys) {
    return (keys + sumLanes - 1) / sumLanes * sumLanes;
  };
  RDom cj(0, globalChunk ? Expr(ck) : min(ck, wholeVectors(end - c0 * ck)),
          "cj");
  if (!globalChunk)
    cj.where(cj < wholeVectors(end - (c0 + c) * ck));
  SoftmaxPart chk = softmaxPart("chunk", cscore, j, cj, {g, t, kvh, c}, 0);
  Func cmax = chk.max, cprob = chk.prob, csum = chk.sum;
  Expr cvkey = chunkKey(c, cj);
  Expr cvalue = vc(dd, kvh, cvkey);
  if (a.shawClip)
    cvalue += in.relValue(dd, in.shawRow(cqpos, cvkey));
  Func cpv("chunk_pv");
  cpv(dd, g, t, kvh, c) = 0.0f;
  cpv(dd, g, t, kvh, c) += cprob(cj, g, t, kvh, c) * cvalue;
  Func part("chunk_partial");
  part(dd, g, t, kvh, c) =
      Tuple(cpv(dd, g, t, kvh, c), csum(g, t, kvh, c), cmax(g, t, kvh, c));
  RDom rc(0, chunks + (globalChunk ? 1 : 0), "rc");
  Func tmax("total_max");
  tmax(g, t, kvh) = kMasked;
  tmax(g, t, kvh) = max(tmax(g, t, kvh), part(0, g, t, kvh, rc)[2]);
  Func tsum("total_sum");
  tsum(g, t, kvh) = 0.0f;
  tsum(g, t, kvh) += part(0, g, t, kvh, rc)[1] *
                     exp(part(0, g, t, kvh, rc)[2] - tmax(g, t, kvh));
  Func tpv("total_pv");
  tpv(dd, g, t, kvh) = 0.0f;
  tpv(dd, g, t, kvh) += part(dd, g, t, kvh, rc)[0] *
                        exp(part(dd, g, t, kvh, rc)[2] - tmax(g, t, kvh));
  Expr chunked =
      tpv(dd, h % group, t, h / group) / tsum(h % group, t, h / group);

  Func out("attention");
  out(dd, h, t) = cast(elementType(a.store), select(takesTiles(k, a), tiled,
                                                    chunked));
  k.out = out;
  k.funcs = {{"q_tile", qt},
             {"block_dot", dot},
             {"block_score", score},
             {"block_max", bmax},
             {"block_prob", prob},
             {"block_sum", bsum},
             {"block_pv", bpv},
             {"running", run},
             {"tile_out", tileOut},
             {"block_keys", blockKeys},
             {"tile_blocks", tileBlocks},
             {"chunk_dot_lanes", cdotLanes},
             {"chunk_dot", cdot},
             {"chunk_score", cscore},
             {"chunk_max", cmax},
             {"chunk_prob", cprob},
             {"chunk_sum", csum},
             {"chunk_pv", cpv},
             {"chunk_partial", part},
             {"total_max", tmax},
             {"total_sum", tsum},
             {"total_pv", tpv}};
  if (a.shawClip)
    k.funcs["q_rel"] = qrel;
  if (a.randomBlocks)
    k.funcs["tile_draws"] = tileDraws;
  if (a.window)
    k.funcs["tile_first_block"] = tileFirst;
  if (a.window && !a.globals.empty())
    k.funcs["tile_global"] = tileGlobal;
  if (staged) {
    k.funcs["key_block"] = kblock;
    k.funcs["value_block"] = vblock;
  }
  if (pairs) {
    k.funcs["q_pairs"] = qpairs;
    k.funcs["key_pairs"] = kpairs;
    k.funcs["prob_pairs"] = ppairs;
    k.funcs["value_pairs"] = vpairs;
  }
  k.vars = {{"dd", dd}, {"h", h},   {"t", t}, {"j", j},
            {"r", r},   {"qb", qb}, {"kvh", kvh},
            {"g", g},   {"c", c},   {"l", l},     {"dc", dc}};
  k.rdoms = {{"rd", rd}, {"rj", rj}, {"kb", kb}, {"cj", cj},
             {"rv", rv}, {"rl", rl}, {"rp", rp}, {"rpv", rpv}};
  k.outDims = {in.vd, a.heads};
}

Expr takesTiles(const KernelFuncs &k, const AttentionKernel &a) {
  return k.in("q").dim(2).extent() >= int(std::max<int64_t>(a.blockQ, 2));
}

static void lowerAttention(KernelFuncs &k, const AttentionKernel &a) {
  AttentionTerms in(k, a);
  if (a.blockQ)
    lowerTiledAttention(k, in);
  else
    lowerRowAttention(k, in);
  if (a.randomBlocks)
    k.funcs["drawn_block"] = in.drawnBlock;
}

static Expr activate(Expr x, Activation act) {
  switch (act) {
  case Activation::silu: return x / (1.0f + exp(-x));
  case Activation::gelu: return 0.5f * x * (1.0f + erf(x * float(M_SQRT1_2)));
  case Activation::gelu_tanh: {
    Expr inner = float(std::sqrt(2.0 / M_PI)) * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanh(inner));
  }
  case Activation::gelu_sigmoid: return x / (1.0f + exp(-1.702f * x));
  case Activation::relu: return max(x, 0.0f);
  case Activation::squared_relu: {
    Expr r = max(x, 0.0f);
    return r * r;
  }
  case Activation::sigmoid: return 1.0f / (1.0f + exp(-x));
  case Activation::identity: return x;
  }
  return x;
}

/// add: a + b; glu: act(a) * b; activation: act(a); copy: a.
static void lowerElementwise(KernelFuncs &k, const ElementwiseKernel &e) {
  int64_t d = e.width;
  ImageParam a = rows(k, "a", {d});
  Var i("i"), t("t");
  Func out(k.spec.kindName());
  float factor = float(e.factor);
  switch (e.op) {
  case ElementwiseKernel::Copy:
    out(i, t) = cast(elementType(e.store), a(i, t));
    break;
  case ElementwiseKernel::Activate:
    out(i, t) = cast(elementType(e.store), activate(a(i, t), e.activation));
    break;
  case ElementwiseKernel::Scale: out(i, t) = a(i, t) * factor; break;
  case ElementwiseKernel::Softcap:
    out(i, t) = factor * tanh(a(i, t) / factor);
    break;
  case ElementwiseKernel::Add: out(i, t) = a(i, t) + rows(k, "b", {d})(i, t); break;
  case ElementwiseKernel::Glu:
    out(i, t) = cast(elementType(e.store), activate(a(i, t), e.activation) *
                                               rows(k, "b", {d})(i, t));
    break;
  }
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(d, k.lanes);
  k.outDims = {d};
  // A copy writes into a view: some columns of a wider array.
  k.denseOutputRows = e.op != ElementwiseKernel::Copy;
}

/// Rows (head_dim, heads, T) into a head-major cache's window, given as
/// (head_dim, heads, T) with the sequence's head stride and rows of
/// head_dim; converted to the cache's type.
static void lowerAppend(KernelFuncs &k, const AppendKernel &a) {
  int hd = int(a.headDim), heads = int(a.heads);
  ImageParam in = rows(k, "rows", {a.headDim, a.heads});
  Var i("i"), hh("h"), t("t");
  Func out("append");
  out(i, hh, t) = cast(elementType(a.store), in(i, hh, t));
  OutputImageParam o = out.output_buffer();
  o.dim(0).set_bounds(0, hd).set_stride(1);
  o.dim(1).set_bounds(0, heads);
  o.dim(2).set_min(0).set_stride(hd);
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(a.headDim, k.lanes);
}

/// x plus the embedding of position pos + t: a table row (learned) or
/// sin / cos of (pos + t) / 10000^(2i/d) in dimensions 2i / 2i + 1.
static void lowerPosEmbed(KernelFuncs &k, const PosEmbedKernel &pe) {
  int64_t d = pe.dModel, rows_ = pe.rows;
  bool learned = pe.kind == PosEmbedKind::learned;
  int offset = int(pe.offset);
  ImageParam x = rows(k, "x", {d});
  ImageParam table;
  if (learned) {
    table = k.in("table");
    table.dim(0).set_bounds(0, int(d)).set_stride(1);
    table.dim(1).set_bounds(0, int(rows_)).set_stride(int(d));
  }
  Param<int32_t> pos = k.pos;
  Var i("i"), t("t");
  Expr p = pos + t;
  Expr e;
  if (learned) {
    // The runtime keeps positions below max_seq_len; the clamp keeps
    // reads in bounds all the same.
    e = table(i, clamp(p + offset, 0, int(rows_) - 1));
  } else {
    // The angle in double, its cos and sin vector arithmetic (cosSin).
    Buffer<double> inv(int(d), "pos_embed_freq");
    for (int64_t j = 0; j < d; ++j)
      inv(int(j)) = std::pow(10000.0, -double(j / 2 * 2) / double(d));
    auto [cosA, sinA] = cosSin(cast<double>(p) * inv(i));
    e = cast<float>(select(i % 2 == 0, sinA, cosA));
  }
  Func out("pos_embed");
  out(i, t) = x(i, t) + e;
  k.out = out;
  k.vars = {{"i", i}, {"t", t}};
  k.lanes = vectorWidthFor(d, k.lanes);
  k.outDims = {d};
}

/// out(c, h, t) = x(c, shared ? 0 : h, t), c < width: heads into (a view
/// of) heads. Both are strided: views of some columns of wider heads.
static void lowerHeadsCopy(KernelFuncs &k, const HeadsCopyKernel &c) {
  int w = int(c.width), heads = int(c.heads);
  ImageParam x = k.in("x");
  x.dim(0).set_bounds(0, w).set_stride(1);
  x.dim(1).set_bounds(0, c.shared ? 1 : heads);
  x.dim(2).set_min(0);
  Var i("i"), h("h"), t("t");
  Func out("heads_copy");
  out(i, h, t) = x(i, c.shared ? Expr(0) : Expr(h), t);
  OutputImageParam o = out.output_buffer();
  o.dim(0).set_bounds(0, w).set_stride(1);
  o.dim(1).set_bounds(0, heads);
  o.dim(2).set_min(0);
  k.out = out;
  k.vars = {{"i", i}, {"h", h}, {"t", t}};
  k.lanes = vectorWidthFor(w, k.lanes);
}

/// Per head h: x (K, h, T) times weight block h, [N, K] rows h N .. as
/// weight (K, h N + n), or K-major [K, N] rows h K .. as (n, h K + k). Over
/// [N, K] blocks the reduction runs along contiguous K in `lanes`-wide
/// partial sums (as a linear's); over [K, N] blocks each step of K is a
/// vector FMA along a contiguous weight row.
static void lowerHeadLinear(KernelFuncs &k, const HeadLinearKernel &d) {
  int K = int(d.K), N = int(d.N), H = int(d.heads);
  ImageParam x = rows(k, "x", {d.K, d.heads});
  ImageParam w = k.in("weight");
  int inner = d.kMajor ? N : K;
  w.dim(0).set_bounds(0, inner).set_stride(1);
  w.dim(1).set_bounds(0, H * (d.kMajor ? K : N)).set_stride(inner);
  Var kk("kk"), n("n"), h("h"), t("t");
  Func acc("acc"), out("head_linear");
  if (d.kMajor) {
    RDom r(0, K, "r");
    acc(n, h, t) = 0.0f;
    acc(n, h, t) += x(r, h, t) * w(n, h * K + r);
    out(n, h, t) = acc(n, h, t);
    k.rdoms["r"] = r;
    k.lanes = vectorWidthFor(N, k.lanes);
  } else {
    int vl = vectorWidthFor(K, k.lanes);
    RDom r(0, K / vl, "r");
    acc(kk, n, h, t) = 0.0f;
    acc(kk, n, h, t) += x(r * vl + kk, h, t) * w(r * vl + kk, h * N + n);
    RDom lane(0, vl, "lane");
    out(n, h, t) = sum(acc(lane, n, h, t), "lane_sum");
    k.rdoms["r"] = r;
    k.lanes = vl;
  }
  k.out = out;
  k.funcs["acc"] = acc;
  k.vars = {{"kk", kk}, {"n", n}, {"h", h}, {"t", t}};
  k.outDims = {d.N, d.heads};
}

KernelFuncs lowerKernel(const KernelSpec &spec, const Target &t,
                        int64_t l2Bytes, bool amx) {
  KernelFuncs k(spec);
  k.lanes = t.natural_vector_size<float>();
  k.l2Bytes = l2Bytes;
  k.tileRows = gemmTileRows(t);
  k.amx = amx;
  k.f16c = ukernelTarget(t) && t.has_feature(Target::F16C);
  // The inputs, in the order spec.args() declares them.
  for (const KernelArg &a : spec.args()) {
    if (a.kind == KernelArg::Output)
      continue;
    if (a.kind == KernelArg::Position) {
      k.args.push_back(k.pos);
      continue;
    }
    ImageParam p(a.kind == KernelArg::Tokens ? Int(32) : elementType(a.elem),
                 a.rank, a.name);
    k.inputs[a.name] = p;
    k.args.push_back(p);
  }
  std::visit(
      [&](const auto &d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, LinearKernel>) lowerLinear(k, d);
        else if constexpr (std::is_same_v<T, PackKernel>) lowerPack(k, d);
        else if constexpr (std::is_same_v<T, NormKernel>) lowerNorm(k, d);
        else if constexpr (std::is_same_v<T, PosEmbedKernel>) lowerPosEmbed(k, d);
        else if constexpr (std::is_same_v<T, EmbedKernel>) lowerEmbed(k, d);
        else if constexpr (std::is_same_v<T, RopeKernel>) lowerRope(k, d);
        else if constexpr (std::is_same_v<T, AttentionKernel>) lowerAttention(k, d);
        else if constexpr (std::is_same_v<T, AppendKernel>) lowerAppend(k, d);
        else if constexpr (std::is_same_v<T, RouteKernel>) lowerRoute(k, d);
        else if constexpr (std::is_same_v<T, RouteWeightsKernel>) lowerRouteWeights(k, d);
        else if constexpr (std::is_same_v<T, GatherKernel>) lowerGather(k, d);
        else if constexpr (std::is_same_v<T, CombineKernel>) lowerCombine(k, d);
        else if constexpr (std::is_same_v<T, HeadsCopyKernel>) lowerHeadsCopy(k, d);
        else if constexpr (std::is_same_v<T, HeadLinearKernel>) lowerHeadLinear(k, d);
        else if constexpr (std::is_same_v<T, DifferentialKernel>) lowerDifferential(k, d);
        else if constexpr (std::is_same_v<T, LinearAttentionKernel>) lowerLinearAttention(k, d);
        else if constexpr (std::is_same_v<T, LinearStateKernel>) lowerLinearState(k, d);
        else lowerElementwise(k, d);
      },
      spec.description());
  // Every other output is token-major with static feature extents.
  if (!spec.get<AppendKernel>() && !spec.get<HeadsCopyKernel>() &&
      !spec.get<LinearStateKernel>()) // (its output is the state)
    constrain(k.output().output_buffer(), k.outDims, k.denseOutputRows);
  return k;
}

} // namespace arch
