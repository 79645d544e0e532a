/*===- gemv-shape.c - The decode GEMV's loop shape against the bandwidth --===*
 *
 * Why a bf16 GEMV reads below the read-bandwidth probe (bench/ceilings.c)
 * where an f32 one reaches it: the loop of archc's GEMV over packed panels
 * written out in C with intrinsics (the instructions its kernel runs: one
 * broadcast of x per row, 4 panels read together, each panel row 4
 * vectors, 16 accumulators in registers), over 1 GiB of panels on 2 MiB
 * pages, once per arithmetic:
 *   sum   vaddps of each vector: the loads alone (the probe's work);
 *   f32   vfmadd231ps: an f32 weight's GEMV;
 *   bf16  vdpbf16ps: the bf16 dot product's GEMV (x rounded to bf16);
 *   wide  a bf16 weight widened in registers (shift, mask, 2 FMAs);
 *   bf16+pf  vdpbf16ps, each step prefetching every line it loads 1 KiB
 *            further on (prefetcht0), as archc's GEMV does on AMX
 *            targets (prefetchGemvRows, lowering/PanelPrefetch.cpp).
 * Panels of 64 columns: K rows of 256 bytes (f32, K = 512) or K / 2 rows
 * of pairs (bf16, K = 1024), 128 KiB either way, as bench-156m's 1024-row
 * linears. Prints GB/s (median of 7 passes) per arithmetic, alternating
 * them round by round (this VM's bandwidth drifts within a minute).
 *   cc -O2 -march=native bench/gemv-shape.c -o gemv-shape
 *   ./gemv-shape [ROUNDS]
 * Needs AVX512-BF16. One thread.
 *
 *===---------------------------------------------------------------------===*/
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "timing.h"

enum {
  kRowBytes = 256,
  kPanelBytes = 128 << 10,
  kStreams = 4,
  kPasses = 7,
  kAhead = 1024,
};
#define kBytes ((size_t)1 << 30)

typedef enum { SUM, F32, BF16, WIDE, BF16_PF, KINDS } Kind;
static const char *const kNames[] = {"sum", "f32", "bf16", "wide", "bf16+pf"};

/* One vector of a panel row into an accumulator. */
static inline __attribute__((always_inline)) __m512
step(Kind kind, __m512 acc, const char *p, __m512 x) {
  __m512 v = _mm512_loadu_ps(p);
  switch (kind) {
  case SUM:
    return _mm512_add_ps(acc, v);
  case F32:
    return _mm512_fmadd_ps(v, x, acc);
  case WIDE: {
    __m512i w = _mm512_castps_si512(v);
    __m512 lo = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    __m512 hi = _mm512_castsi512_ps(
        _mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
    return _mm512_fmadd_ps(hi, x, _mm512_fmadd_ps(lo, x, acc));
  }
  default:
    return _mm512_dpbf16_ps(acc, (__m512bh)v, (__m512bh)x);
  }
}

/* The GEMV over all panels, 4 at a time; `x` a row of broadcast values.
 * Inlined into gemv for each constant `kind`: a loop of its own each. */
static inline __attribute__((always_inline)) void
gemvOf(Kind kind, const char *w, const float *x, float *out) {
  size_t rows = kPanelBytes / kRowBytes;
  for (size_t p = 0; p + kStreams * kPanelBytes <= kBytes;
       p += kStreams * kPanelBytes) {
    __m512 acc[kStreams * 4];
#pragma GCC unroll 16
    for (int i = 0; i < kStreams * 4; ++i)
      acc[i] = _mm512_setzero_ps();
    for (size_t r = 0; r < rows; ++r) {
      __m512 xr = _mm512_set1_ps(x[r]);
      const char *row = w + p + r * kRowBytes;
      if (kind == BF16_PF)
#pragma GCC unroll 4
        for (int s = 0; s < kStreams; ++s)
#pragma GCC unroll 4
          for (int v = 0; v < 4; ++v)
            _mm_prefetch(row + s * kPanelBytes + kAhead + 64 * v,
                         _MM_HINT_T0);
      /* Unrolled: the accumulators in registers. */
#pragma GCC unroll 4
      for (int s = 0; s < kStreams; ++s)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v)
          acc[s * 4 + v] =
              step(kind, acc[s * 4 + v], row + s * kPanelBytes + 64 * v, xr);
    }
#pragma GCC unroll 16
    for (int i = 0; i < kStreams * 4; ++i)
      _mm512_storeu_ps(out + (p / kPanelBytes) * 64 + 16 * i, acc[i]);
  }
}

static void gemv(Kind kind, const char *w, const float *x, float *out) {
  switch (kind) {
  case SUM: gemvOf(SUM, w, x, out); break;
  case F32: gemvOf(F32, w, x, out); break;
  case BF16: gemvOf(BF16, w, x, out); break;
  case WIDE: gemvOf(WIDE, w, x, out); break;
  default: gemvOf(BF16_PF, w, x, out); break;
  }
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 3;
  char *w = bench_alloc(kBytes, "gemv-shape");
  memset(w, 0x3f, kBytes); /* bf16 pairs and f32s near 0.75 */
  static float x[kPanelBytes / kRowBytes], out[kBytes / kPanelBytes * 64];
  for (size_t i = 0; i < sizeof x / sizeof *x; ++i)
    x[i] = 1.0f;
  for (int r = 0; r < rounds; ++r) {
    printf("round %d:", r + 1);
    for (int k = 0; k < KINDS; ++k) {
      double t[kPasses];
      for (int i = 0; i < kPasses; ++i) {
        double t0 = now();
        gemv((Kind)k, w, x, out);
        t[i] = now() - t0;
      }
      printf(" %s=%.2f", kNames[k], (double)kBytes / median(t, kPasses) / 1e9);
    }
    printf(" GB/s\n");
  }
  return out[0] == 12345.0f; /* keep the sums */
}
