/*===- ukernels_amx.c - The bf16 GEMM of a packed panel on AMX tiles ------===*
 *
 * archu_amx_bf16_panels, a Halide extern stage: the GEMM of one 64-column
 * panel of a bf16 weight packed in pairs (the bf16 dot product's layout,
 * [panels, K / 2, 64, 2]) over token rows of x rounded to bf16, on the AMX
 * tiles of a Sapphire Rapids (or later) Xeon. Halide 14 can emit
 * tdpbf16ps, but only one pair of K deep per instruction (bench/amx.sh);
 * a tile here takes 32 of K at once.
 *
 * Compiled by clang-14 into LLVM 14 bitcode at build time (the LLVM that
 * Halide 14 links) and linked into the Halide modules of the kernels that
 * call it (KernelFuncs::callsAmx): weak, so each kernel's object may
 * carry it (and LLVM never inlines it: a weak definition may be replaced
 * at link time); hidden, so no library exports it. Its own function
 * attributes carry AMX-TILE and AMX-BF16, whatever the kernel's target.
 *
 * The tiles: C0..C3 the sums of 16 (or fewer: a ragged last token tile
 * gets its own configuration) token rows x the panel's 4 column groups of
 * 16; A (tile 4) 16 rows x 32 of K of x; B (tiles 5, 6, alternating) 16
 * pairs of K x 16 columns, a row of the panel's pairs being 64 columns x
 * 2 bf16 x 2 bytes = 256 bytes, so the B tile of column group c is the 64
 * bytes at 64 c of each. Per step of 32 of K: one A load, four B loads,
 * four tdpbf16ps.
 * Over K above 2048 every token tile runs one block of K before the next
 * block (its sums stored and loaded back), so that the block's slice of
 * the panel is read from memory once and from the L2 by the other tiles.
 *
 * Linux grants a process the tiles' state only when asked
 * (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); the first call
 * asks. Errors are Halide's extern-stage failures (non-zero returns).
 *
 *===---------------------------------------------------------------------===*/
#include <HalideRuntime.h>
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
  kPanel = 64,        /* columns of a panel */
  kRowsPerTile = 16,  /* token rows of a tile */
  kStepK = 32,        /* K of one tdpbf16ps */
  kBlockK = 1024,     /* K of a block where K is above kUnblockedK */
  kUnblockedK = 2048,
  kArchReqXcompPerm = 0x1023,
  kXfeatureXtiledata = 18,
};

/* Errors (an extern stage's non-zero return fails the call). */
enum {
  kNoTiles = -1,  /* the kernel refused the tiles' state */
  kBadShape = -2, /* buffers not as the schedule makes them */
};

/* The tile configuration (palette 1): per tile its rows and bytes a row. */
struct TileConfig {
  uint8_t palette, startRow, reserved[14];
  uint16_t bytesPerRow[16];
  uint8_t rows[16];
};

/* C0..C3 and A `rows` rows, B 16 (pairs of K). */
static void configure(int rows) {
  struct TileConfig c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  for (int i = 0; i < 7; ++i) {
    c.rows[i] = (uint8_t)(i < 5 ? rows : kRowsPerTile);
    c.bytesPerRow[i] = 64;
  }
  _tile_loadconfig(&c);
}

static int tilesGranted;

static int grantTiles(void) {
  if (__atomic_load_n(&tilesGranted, __ATOMIC_RELAXED))
    return 1;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0)
    return 0;
  __atomic_store_n(&tilesGranted, 1, __ATOMIC_RELAXED);
  return 1;
}

static int isQuery(const halide_buffer_t *b) {
  return b->host == NULL && b->device == 0;
}

/* One token tile's sums over K [k0, k1) into C0..C3, which start at zero
 * (`first`) or at `sums` (a row stride of `sumStride` floats). */
static void tokenTile(const uint16_t *x, int64_t xStride, const uint16_t *w,
                      int64_t wStride, int64_t k0, int64_t k1, float *sums,
                      int64_t sumStride, int first) {
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, sums + 0, sumStride * 4);
    _tile_loadd(1, sums + 16, sumStride * 4);
    _tile_loadd(2, sums + 32, sumStride * 4);
    _tile_loadd(3, sums + 48, sumStride * 4);
  }
  for (int64_t k = k0; k < k1; k += kStepK) {
    const uint16_t *b = w + k / 2 * wStride;
    _tile_loadd(4, x + k, xStride * 2);
    _tile_loadd(5, b + 0, wStride * 2);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(6, b + 32, wStride * 2);
    _tile_dpbf16ps(1, 4, 6);
    _tile_loadd(5, b + 64, wStride * 2);
    _tile_dpbf16ps(2, 4, 5);
    _tile_loadd(6, b + 96, wStride * 2);
    _tile_dpbf16ps(3, 4, 6);
  }
  _tile_stored(0, sums + 0, sumStride * 4);
  _tile_stored(1, sums + 16, sumStride * 4);
  _tile_stored(2, sums + 32, sumStride * 4);
  _tile_stored(3, sums + 48, sumStride * 4);
}

/* The weight's panel that column panel v reads: v, or with a glu
 * epilogue's halves (halfPanels > 0: the gate's, then the up's panels)
 * gate panel v / 2 (v even) or up panel v / 2 (odd). */
static int32_t weightPanel(int32_t v, int32_t halfPanels) {
  return halfPanels ? v / 2 + (v % 2) * halfPanels : v;
}

/* out (columns n, tokens t) = the panel of columns [n.min, n.min + 64) of
 * w (2 * 64, K / 2, panels) . x (K, tokens), x and w bf16, out f32; the
 * panel weightPanel(n.min / 64, halfPanels) of w. */
__attribute__((weak, visibility("hidden"))) int
archu_amx_bf16_panels(halide_buffer_t *x, halide_buffer_t *w, int32_t K,
                      int32_t halfPanels, halide_buffer_t *out) {
  const halide_dimension_t *on = &out->dim[0], *ot = &out->dim[1];
  if (isQuery(x) || isQuery(w)) {
    if (isQuery(x)) {
      x->dim[0].min = 0, x->dim[0].extent = K;
      x->dim[1].min = ot->min, x->dim[1].extent = ot->extent;
    }
    if (isQuery(w)) {
      int32_t first = weightPanel(on->min / kPanel, halfPanels), last = first;
      for (int32_t v = on->min / kPanel;
           v <= (on->min + on->extent - 1) / kPanel; ++v) {
        int32_t p = weightPanel(v, halfPanels);
        first = p < first ? p : first, last = p > last ? p : last;
      }
      w->dim[0].min = 0, w->dim[0].extent = 2 * kPanel;
      w->dim[1].min = 0, w->dim[1].extent = K / 2;
      w->dim[2].min = first, w->dim[2].extent = last - first + 1;
    }
    return 0;
  }
  if (isQuery(out))
    return 0;
  int32_t cols = on->extent, rows = ot->extent,
          panel = weightPanel(on->min / kPanel, halfPanels);
  const halide_dimension_t *wd = w->dim;
  if (K % kStepK || on->min % kPanel || cols < 1 || cols > kPanel ||
      halfPanels < 0 ||
      x->dimensions != 2 || w->dimensions != 3 || out->dimensions != 2 ||
      x->type.bits != 16 || w->type.bits != 16 ||
      out->type.code != halide_type_float || out->type.bits != 32 ||
      x->dim[0].stride != 1 || on->stride != 1 || x->dim[0].min > 0 ||
      x->dim[0].min + x->dim[0].extent < K || x->dim[1].min > ot->min ||
      x->dim[1].min + x->dim[1].extent < ot->min + rows ||
      wd[0].stride != 1 || wd[0].min != 0 || wd[0].extent != 2 * kPanel ||
      wd[1].stride != 2 * kPanel || wd[1].min != 0 ||
      wd[1].extent < K / 2 || panel < wd[2].min ||
      panel >= wd[2].min + wd[2].extent)
    return kBadShape;
  if (rows < 1)
    return 0;
  if (!grantTiles())
    return kNoTiles;
  int64_t xStride = x->dim[1].stride, wStride = w->dim[1].stride;
  const uint16_t *xs = (const uint16_t *)x->host - x->dim[0].min +
                       (int64_t)(ot->min - x->dim[1].min) * xStride;
  const uint16_t *ws = (const uint16_t *)w->host +
                       (int64_t)(panel - wd[2].min) * wd[2].stride;
  float *o = (float *)out->host;
  int64_t oStride = ot->stride;
  int full = rows / kRowsPerTile, ragged = rows % kRowsPerTile;
  if (cols == kPanel) {
    // Blocks of K, and in each every token tile, its sums in out.
    int64_t block = K > kUnblockedK ? kBlockK : K;
    for (int64_t k0 = 0; k0 < K; k0 += block) {
      int64_t k1 = k0 + block < K ? k0 + block : K;
      if (full)
        configure(kRowsPerTile);
      for (int i = 0; i < full; ++i)
        tokenTile(xs + i * kRowsPerTile * xStride, xStride, ws, wStride, k0,
                  k1, o + i * kRowsPerTile * oStride, oStride, k0 == 0);
      if (ragged) {
        configure(ragged);
        tokenTile(xs + full * kRowsPerTile * xStride, xStride, ws, wStride,
                  k0, k1, o + full * kRowsPerTile * oStride, oStride,
                  k0 == 0);
      }
    }
  } else {
    // A last panel past N (Halide asks for the columns before N only):
    // each token tile's sums over all of K in `sums`, its first `cols`
    // columns copied out.
    float sums[kRowsPerTile * kPanel];
    for (int i = 0; i * kRowsPerTile < rows; ++i) {
      int n = rows - i * kRowsPerTile < kRowsPerTile ? ragged : kRowsPerTile;
      configure(n);
      tokenTile(xs + i * kRowsPerTile * xStride, xStride, ws, wStride, 0, K,
                sums, kPanel, 1);
      for (int r = 0; r < n; ++r)
        memcpy(o + (i * kRowsPerTile + r) * oStride, sums + r * kPanel,
               (size_t)cols * sizeof(float));
    }
  }
  _tile_release();
  return 0;
}
