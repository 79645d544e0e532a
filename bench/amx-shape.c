/*===- amx-shape.c - The AMX ukernel's loop shape against the tiles' peak --===*
 *
 * Why the bf16 GEMM on AMX tiles (lowering/ukernels_amx.c) runs at about
 * half the tiles' own peak: its loop written out again in C over the same
 * layouts (x: M rows of K bf16; the weight: panels of 64 columns, K / 2
 * rows of 64 pairs; each panel's sums into a 64-column buffer, as the
 * extern stage's), and variants of it that each change one thing:
 *   ukernel   archc's loop (up to K = 2048; above, see kb1024): C0..C3
 *             hold 16 rows x 64 columns; per 32 of K
 *             one A load and four B loads (B straight from the L2: a
 *             panel is K x 128 bytes) for four tdpbf16ps;
 *   no-loads  the same tdpbf16ps with A and B loaded once (the tiles'
 *             peak for this chain; wrong sums);
 *   B-in-L1   B loaded as often, but always from the panel's first 4 KiB
 *             (L1-resident; wrong sums): what the B loads from the L2 cost;
 *   2x2       C0..C3 hold 32 rows x 32 columns: two A and two B loads per
 *             four tdpbf16ps, each B tile used twice;
 *   kb256     the ukernel's loop over blocks of 256 of K, each token tile's
 *             sums stored and loaded back per block, so that the panel's
 *             block (32 KiB) is reused from the L1 by the other tiles;
 *   kb1024    the same over blocks of 1024 (archc's above K = 2048,
 *             where this, not `ukernel`, is the loop archc runs);
 *   tiled     the ukernel's loop over a weight laid out so that each B
 *             tile is one contiguous KiB (16 pair rows x 16 columns)
 *             rather than 64 bytes of 16 rows 256 bytes apart.
 * Prints GFLOP/s (median of ROUNDS) and each variant's median ratio to
 * the ukernel, the variants alternating round by round (this VM's AMX
 * throughput flips between two rates, about 2x apart, within seconds);
 * the exact variants' sums are checked against the ukernel's.
 *   cc -O2 -march=native bench/amx-shape.c -o amx-shape
 *   ./amx-shape [M K N ROUNDS]      (default 128 1024 1024 21)
 * Needs AMX-BF16 (and Linux's grant of the tiles' state). One thread.
 *
 *===---------------------------------------------------------------------===*/
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "timing.h"

enum { kPanel = 64, kRows = 16, kStepK = 32, kMaxRounds = 101 };

typedef enum { UKERNEL, NO_LOADS, B_IN_L1, TWO_BY_TWO, KB256, KB1024, TILED, KINDS } Kind;
static const char *const kNames[] = {"ukernel", "no-loads", "B-in-L1",
                                     "2x2",     "kb256",    "kb1024",
                                     "tiled"};
static const int kExact[] = {1, 0, 0, 1, 1, 1, 1};

static int M, K, N;
static uint16_t *x, *w, *wt; /* wt: each B tile a contiguous KiB */
static float *sums; /* one panel's: M rows of 64 */

struct TileConfig {
  uint8_t palette, startRow, reserved[14];
  uint16_t bytesPerRow[16];
  uint8_t rows[16];
};

static void configure(void) {
  struct TileConfig c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int i = 0; i < 8; ++i)
    c.rows[i] = kRows, c.bytesPerRow[i] = 64;
  _tile_loadconfig(&c);
}

/* C0..C3 from zero (`first`) or loaded back from the sums at o. */
static inline __attribute__((always_inline)) void startC(const float *o,
                                                          int first) {
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, o, 256);
    _tile_loadd(1, o + 16, 256);
    _tile_loadd(2, o + 32, 256);
    _tile_loadd(3, o + 48, 256);
  }
}

/* C0..C3 into the sums at o (rows of 64 floats). */
static inline __attribute__((always_inline)) void storeC(float *o) {
  _tile_stored(0, o, 256);
  _tile_stored(1, o + 16, 256);
  _tile_stored(2, o + 32, 256);
  _tile_stored(3, o + 48, 256);
}

/* Where a panel's B tiles are: those of K [k, k + 32) from w + 64 k
 * (fixed: always from w), column group c's `tile` elements after group
 * 0's, its 16 rows `rowBytes` apart. */
struct BLayout {
  int tile, rowBytes, fixed;
};
static const struct BLayout kPairs = {32, 256, 0}, kPairsInL1 = {32, 256, 1},
                            kTiled = {512, 64, 0};

/* C0..C3 (16 rows x 64 columns) over K [k0, k1): A rows at xs, the
 * panel's B tiles at ws as `b` lays them out, sums at o. */
static inline __attribute__((always_inline)) void
tile16x64(const uint16_t *xs, const uint16_t *ws, struct BLayout b, float *o,
          int k0, int k1, int first) {
  startC(o, first);
  for (int k = k0; k < k1; k += kStepK) {
    const uint16_t *t = b.fixed ? ws : ws + (size_t)k * kPanel;
    _tile_loadd(4, xs + k, K * 2);
    _tile_loadd(5, t, b.rowBytes);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(6, t + b.tile, b.rowBytes);
    _tile_dpbf16ps(1, 4, 6);
    _tile_loadd(5, t + 2 * b.tile, b.rowBytes);
    _tile_dpbf16ps(2, 4, 5);
    _tile_loadd(6, t + 3 * b.tile, b.rowBytes);
    _tile_dpbf16ps(3, 4, 6);
  }
  storeC(o);
}

static void panel(Kind kind, const uint16_t *ws) {
  switch (kind) {
  case UKERNEL:
  case B_IN_L1:
  case TILED:
    for (int i = 0; i < M / kRows; ++i)
      tile16x64(x + (size_t)i * kRows * K,
                kind == TILED ? wt + (ws - w) : ws,
                kind == UKERNEL ? kPairs
                : kind == TILED ? kTiled
                                : kPairsInL1,
                sums + i * kRows * kPanel, 0, K, 1);
    break;
  case KB256:
  case KB1024: {
    int block = kind == KB256 ? 256 : 1024;
    for (int k0 = 0; k0 < K; k0 += block)
      for (int i = 0; i < M / kRows; ++i)
        tile16x64(x + (size_t)i * kRows * K, ws, kPairs,
                  sums + i * kRows * kPanel, k0,
                  k0 + block < K ? k0 + block : K, k0 == 0);
    break;
  }
  case NO_LOADS:
    for (int i = 0; i < M / kRows; ++i) {
      float *o = sums + i * kRows * kPanel;
      startC(o, 1);
      _tile_loadd(4, x + (size_t)i * kRows * K, K * 2);
      _tile_loadd(5, ws, 256);
      _tile_loadd(6, ws + 32, 256);
      for (int k = 0; k < K; k += kStepK) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 6);
        _tile_dpbf16ps(2, 4, 5);
        _tile_dpbf16ps(3, 4, 6);
      }
      storeC(o);
    }
    break;
  case TWO_BY_TWO:
    for (int i = 0; i < M / (2 * kRows); ++i)
      for (int h = 0; h < 2; ++h) {
        const uint16_t *xs = x + (size_t)i * 2 * kRows * K;
        float *o = sums + i * 2 * kRows * kPanel + h * 32;
        startC(o, 1);
        for (int k = 0; k < K; k += kStepK) {
          const uint16_t *b = ws + (size_t)k * kPanel + h * 64;
          _tile_loadd(4, xs + k, K * 2);
          _tile_loadd(6, b, 256);
          _tile_dpbf16ps(0, 4, 6);
          _tile_loadd(7, b + 32, 256);
          _tile_dpbf16ps(1, 4, 7);
          _tile_loadd(5, xs + kRows * K + k, K * 2);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
        }
        _tile_stored(0, o, 256);
        _tile_stored(1, o + 16, 256);
        _tile_stored(2, o + kRows * kPanel, 256);
        _tile_stored(3, o + kRows * kPanel + 16, 256);
      }
    break;
  default:
    break;
  }
}

/* The whole GEMM (every panel into the one sums buffer); its time. */
static double gemm(Kind kind) {
  double t0 = now();
  for (int p = 0; p < N / kPanel; ++p)
    panel(kind, w + (size_t)p * K * kPanel);
  return now() - t0;
}

int main(int argc, char **argv) {
  M = argc > 1 ? atoi(argv[1]) : 128;
  K = argc > 2 ? atoi(argv[2]) : 1024;
  N = argc > 3 ? atoi(argv[3]) : 1024;
  int rounds = argc > 4 ? atoi(argv[4]) : 21;
  if (M < 32 || M % 32 || K < 1024 || K % 1024 || N < kPanel || N % kPanel ||
      rounds < 1 || rounds > kMaxRounds) {
    fprintf(stderr, "amx-shape: M a multiple of 32, K of 1024, N of 64, "
                    "1..%d rounds\n", kMaxRounds);
    return 2;
  }
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
              18 /* XFEATURE_XTILEDATA */) != 0) {
    fprintf(stderr, "amx-shape: no AMX tiles here\n");
    return 1;
  }
  x = aligned_alloc(64, (size_t)M * K * 2);
  w = aligned_alloc(64, (size_t)K * N * 2);
  sums = aligned_alloc(64, (size_t)M * kPanel * 4);
  float *ref = malloc((size_t)M * kPanel * 4);
  if (!x || !w || !sums || !ref)
    return 1;
  srand(1);
  /* bf16 values in [-0.5, 0.5) on a 2^-8 grid: exact products. */
  for (size_t i = 0; i < (size_t)M * K; ++i) {
    float f = (float)(rand() % 256 - 128) / 256;
    uint32_t u;
    memcpy(&u, &f, 4);
    x[i] = (uint16_t)(u >> 16);
  }
  for (size_t i = 0; i < (size_t)K * N; ++i) {
    float f = (float)(rand() % 256 - 128) / 256;
    uint32_t u;
    memcpy(&u, &f, 4);
    w[i] = (uint16_t)(u >> 16);
  }
  /* wt: per panel, per 32 of K, the 4 column groups' B tiles (16 pair rows
   * x 16 columns x 2) one after another. */
  wt = aligned_alloc(64, (size_t)K * N * 2);
  if (!wt)
    return 1;
  for (int p = 0; p < N / kPanel; ++p)
    for (int k2 = 0; k2 < K / 2; ++k2)
      for (int c = 0; c < kPanel; ++c)
        for (int e = 0; e < 2; ++e)
          wt[(size_t)p * K * kPanel + (size_t)(k2 / 16) * 2048 + (c / 16) * 512 +
             (k2 % 16) * 32 + (c % 16) * 2 + e] =
              w[(size_t)p * K * kPanel + (size_t)k2 * 128 + c * 2 + e];
  configure();
  static double t[KINDS][kMaxRounds];
  int wrong[KINDS] = {0};
  for (int r = 0; r < rounds; ++r)
    for (Kind k = 0; k < KINDS; ++k)
      t[k][r] = gemm(k);
  // Untimed: every panel's sums of each exact variant against the
  // ukernel's (the same products in the same order: equal bits).
  for (int p = 0; p < N / kPanel; ++p) {
    panel(UKERNEL, w + (size_t)p * K * kPanel);
    memcpy(ref, sums, (size_t)M * kPanel * 4);
    for (Kind k = 0; k < KINDS; ++k)
      if (kExact[k] && k != UKERNEL) {
        panel(k, w + (size_t)p * K * kPanel);
        wrong[k] |= memcmp(ref, sums, (size_t)M * kPanel * 4) != 0;
      }
  }
  _tile_release();
  double flops = 2.0 * M * K * N;
  printf("AMX bf16 GEMM loop, M %d K %d N %d, one thread, medians of %d "
         "alternated rounds\n", M, K, N, rounds);
  for (Kind k = 0; k < KINDS; ++k) {
    double ratio[kMaxRounds], time[kMaxRounds];
    for (int r = 0; r < rounds; ++r)
      ratio[r] = t[UKERNEL][r] / t[k][r], time[r] = t[k][r];
    printf("%-9s %7.1f GFLOP/s  %.2fx ukernel%s\n", kNames[k],
           flops / median(time, rounds) / 1e9, median(ratio, rounds),
           !kExact[k] ? "  (sums not checked)"
           : wrong[k] ? "  SUMS DIFFER" : "");
  }
  return 0;
}
