/*===- gemm.c - One linear kernel of a compiled model vs OpenBLAS ---------===*
 *
 * Packs a seeded random [N, K] f32 weight with the library's pack kernel
 * (archk_pack_*: panels of 64 columns, in the weight type the symbol
 * names), then times its linear kernel (archk_linear_*) over M token rows
 * against OpenBLAS's cblas_sgemm of the same product on the unpacked f32
 * weight (y = x W^T, row-major), each the median of RUNS calls after a
 * warm-up, and prints both as GFLOP/s (2 M N K per call) with the largest
 * difference of their outputs relative to the output's largest magnitude.
 * OpenBLAS is Debian's libopenblas0-pthread, loaded with dlopen; without it
 * openblas_gflops=0.
 * WEIGHT_BITS 16p: bf16 weights in pairs of K (the bf16 dot product's
 * layout, [panels, K / 2, 2 * 64]; the kernel rounds x to bf16, or, a
 * kernel that takes x as bf16 (a name ending x11x2: in a model its
 * producer rounds it, archk-bf16-inputs), is given x rounded to bf16
 * (nearest even) here, before the calls).
 * COPIES (default 1): packed copies of the weight, called in turn (past
 * the last-level cache: each call reads its weight from memory); 0: as
 * many as make 512 MiB (at most 256).
 *   gemm LIB PACK_SYMBOL LINEAR_SYMBOL K N M THREADS RUNS WEIGHT_BITS [COPIES]
 *     -> archc_gflops=... openblas_gflops=... max_rel_diff=...
 *
 *===---------------------------------------------------------------------===*/
#include <HalideRuntime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "timing.h"

typedef int (*pack_fn)(halide_buffer_t *, halide_buffer_t *);
typedef int (*linear_fn)(halide_buffer_t *, halide_buffer_t *,
                         halide_buffer_t *);
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *,
                         int, const float *, int, float, float *, int);

enum { PANEL = 64 };

static float *randoms(size_t n, uint64_t *state) {
  float *p = bench_alloc(n * sizeof *p, "gemm");
  for (size_t i = 0; i < n; ++i) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = ((float)((*state >> 40) & 0xffff) / 32768.0f - 1.0f) * 0.05f;
  }
  return p;
}

/* A dense buffer of `dims` extents, innermost first. */
static void buffer(halide_buffer_t *b, halide_dimension_t *d, void *data,
                   int bits, int code, int dims, const int *extent) {
  memset(b, 0, sizeof *b);
  int stride = 1;
  for (int i = 0; i < dims; ++i) {
    d[i] = (halide_dimension_t){0, extent[i], stride, 0};
    stride *= extent[i];
  }
  b->host = data;
  b->type = (struct halide_type_t){code, bits, 1};
  b->dimensions = dims;
  b->dim = d;
}

int main(int argc, char **argv) {
  if (argc != 10 && argc != 11) {
    fprintf(stderr, "usage: gemm LIB PACK_SYMBOL LINEAR_SYMBOL K N M THREADS "
                    "RUNS WEIGHT_BITS [COPIES]\n");
    return 2;
  }
  int K = atoi(argv[4]), N = atoi(argv[5]), M = atoi(argv[6]);
  int threads = atoi(argv[7]), runs = atoi(argv[8]), wbits = atoi(argv[9]);
  int pairs = strcmp(argv[9], "16p") == 0;
  int copies = argc == 11 ? atoi(argv[10]) : 1;
  if (K <= 0 || N <= 0 || M <= 0 || threads <= 0 || runs <= 0 || copies < 0 ||
      (wbits != 32 && wbits != 16) || (pairs && K % 2)) {
    fprintf(stderr, "gemm: bad sizes\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "gemm: %s\n", dlerror());
    return 1;
  }
  pack_fn pack = (pack_fn)dlsym(lib, argv[2]);
  linear_fn linear = (linear_fn)dlsym(lib, argv[3]);
  /* The runtime's, which its parallel loops read (runtime/src/parallel.c). */
  void (*set_threads)(int) =
      (void (*)(int))dlsym(lib, "archrt_set_num_threads");
  if (!pack || !linear || !set_threads) {
    fprintf(stderr, "gemm: %s lacks %s or %s\n", argv[1], argv[2], argv[3]);
    return 1;
  }
  set_threads(threads);
  uint64_t seed = 7;
  float *w = randoms((size_t)N * K, &seed), *x = randoms((size_t)M * K, &seed);
  float *y = bench_alloc((size_t)M * N * sizeof(float), "gemm");
  float *ref = bench_alloc((size_t)M * N * sizeof(float), "gemm");
  int panels = (N + PANEL - 1) / PANEL;
  size_t packedBytes = (size_t)panels * K * PANEL * (size_t)(wbits / 8);
  if (copies == 0) {
    size_t cold = (size_t)512 << 20;
    copies = (int)((cold + packedBytes - 1) / packedBytes);
    copies = copies > 256 ? 256 : copies;
  }
  /* COPIES packed copies of the weight, called in turn: with their bytes
   * past the last-level cache, each call reads its panels from memory, as
   * a model's forward pass does. */
  void **packed = bench_alloc(sizeof(void *) * (size_t)copies, "gemm");
  for (int c = 0; c < copies; ++c)
    packed[c] = bench_alloc(packedBytes, "gemm");
  /* The pack kernel's output type: f32, or the 16-bit type of the symbol
   * (…x1: f16, …x2: bf16, as StoreType numbers them; pairs are bf16). */
  size_t sl = strlen(argv[2]);
  int code = wbits == 32 ? halide_type_float
             : pairs || argv[2][sl - 1] == '2' ? halide_type_bfloat
                                                : halide_type_float;
  halide_buffer_t bw, bx, by;
  halide_buffer_t *bp = bench_alloc(sizeof *bp * (size_t)copies, "gemm");
  halide_dimension_t dw[2], dx[2], dy[2];
  halide_dimension_t(*dp)[3] = bench_alloc(sizeof *dp * (size_t)copies, "gemm");
  buffer(&bw, dw, w, 32, halide_type_float, 2, (int[]){K, N});
  for (int c = 0; c < copies; ++c) {
    if (pairs)
      buffer(&bp[c], dp[c], packed[c], wbits, code, 3,
             (int[]){2 * PANEL, K / 2, panels});
    else
      buffer(&bp[c], dp[c], packed[c], wbits, code, 3,
             (int[]){PANEL, K, panels});
    if (pack(&bw, &bp[c])) {
      fprintf(stderr, "gemm: the pack kernel failed\n");
      return 1;
    }
  }
  size_t ll = strlen(argv[3]);
  if (ll > 5 && strcmp(argv[3] + ll - 5, "x11x2") == 0) {
    uint16_t *xb = bench_alloc((size_t)M * K * sizeof *xb, "gemm");
    for (size_t i = 0; i < (size_t)M * K; ++i) {
      uint32_t u;
      memcpy(&u, &x[i], sizeof u);
      xb[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    buffer(&bx, dx, xb, 16, halide_type_bfloat, 2, (int[]){K, M});
  } else {
    buffer(&bx, dx, x, 32, halide_type_float, 2, (int[]){K, M});
  }
  buffer(&by, dy, y, 32, halide_type_float, 2, (int[]){N, M});
  double *ms = bench_alloc(sizeof(double) * (size_t)runs, "gemm");
  for (int r = -1; r < runs; ++r) {
    double t0 = now();
    if (linear(&bx, &bp[(r + copies) % copies], &by)) {
      fprintf(stderr, "gemm: the linear kernel failed\n");
      return 1;
    }
    if (r >= 0)
      ms[r] = (now() - t0) * 1e3;
  }
  double flops = 2.0 * M * (double)N * K;
  double archc = flops / median(ms, runs) / 1e6;

  double blas = 0, diff = 0;
  void *ob = dlopen("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                    RTLD_NOW | RTLD_LOCAL);
  sgemm_fn sgemm = ob ? (sgemm_fn)dlsym(ob, "cblas_sgemm") : NULL;
  void (*blas_threads)(int) =
      ob ? (void (*)(int))dlsym(ob, "openblas_set_num_threads") : NULL;
  if (sgemm && blas_threads) {
    blas_threads(threads);
    for (int r = -1; r < runs; ++r) {
      double t0 = now();
      /* CblasRowMajor, CblasNoTrans, CblasTrans */
      sgemm(101, 111, 112, M, N, K, 1.0f, x, K, w, K, 0.0f, ref, N);
      if (r >= 0)
        ms[r] = (now() - t0) * 1e3;
    }
    blas = flops / median(ms, runs) / 1e6;
    double top = 0;
    for (size_t i = 0; i < (size_t)M * N; ++i) {
      top = fmax(top, fabs(ref[i]));
      diff = fmax(diff, fabs(ref[i] - y[i]));
    }
    diff = top > 0 ? diff / top : diff;
  }
  printf("archc_gflops=%.1f openblas_gflops=%.1f max_rel_diff=%.2e\n", archc,
         blas, diff);
  return 0;
}
