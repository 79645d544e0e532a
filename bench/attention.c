/*===- attention.c - One attention kernel of a compiled model, timed -----===*
 *
 * Calls the attention kernel a model library exports (archk_attention_*,
 * found with nm) on seeded random q/k/v: T query rows at positions
 * pos .. pos + T - 1 over a context of pos + T keys, as prefill (pos 0)
 * or decode (T 1) calls it. Prints the median time of RUNS calls after a
 * warm-up and the achieved GFLOP/s of its QK^T and PV products, counting
 * the causal (or windowed) pairs only: 4 * head_dim flops per visible
 * (query head, query, key) triple, and the GB/s of reading K and V once.
 * Successive decode calls (T = 1) read different copies of K and V (512
 * MiB in all, at most 64 copies), so that each streams its context from
 * memory as in a model, whose layers' caches together exceed the CPU's
 * caches; prefill calls read K and V where they are, as the layer that
 * just wrote them does. K, V and their copies are on huge pages from 2
 * MiB up, as the runtime allocates a cache (bench/alloc.h). K and V are
 * head-major, as archc keeps a tokens cache (each head's positions
 * consecutive), or with LAYOUT "positions" position-major, as it keeps a
 * ring.
 *   attention LIB SYMBOL HEADS KV_HEADS HEAD_DIM WINDOW T POS THREADS RUNS
 *             [heads|positions]
 *     -> ms=... gflops=... gbs=...
 *
 *===---------------------------------------------------------------------===*/
#include <HalideRuntime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "timing.h"

typedef int (*kernel_fn)(halide_buffer_t *, halide_buffer_t *,
                         halide_buffer_t *, int32_t, halide_buffer_t *);

/* A [rows, heads, head_dim] f32 buffer (Halide: innermost first), stored
 * row-major or, `by_head`, as [heads, rows, head_dim]. */
static void buffer(halide_buffer_t *b, halide_dimension_t *d, float *data,
                   int head_dim, int heads, int rows, int by_head) {
  memset(b, 0, sizeof *b);
  d[0] = (halide_dimension_t){0, head_dim, 1, 0};
  d[1] = (halide_dimension_t){0, heads, by_head ? head_dim * rows : head_dim, 0};
  d[2] = (halide_dimension_t){0, rows, by_head ? head_dim : head_dim * heads, 0};
  b->host = (uint8_t *)data;
  b->type = (struct halide_type_t){halide_type_float, 32, 1};
  b->dimensions = 3;
  b->dim = d;
}

static float *randoms(size_t n, uint64_t *state) {
  float *p = bench_alloc(n * sizeof *p, "attention");
  for (size_t i = 0; i < n; ++i) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((*state >> 40) & 0xffff) / 32768.0f - 1.0f;
  }
  return p;
}

int main(int argc, char **argv) {
  if (argc != 11 && argc != 12) {
    fprintf(stderr, "usage: attention LIB SYMBOL HEADS KV_HEADS HEAD_DIM "
                    "WINDOW T POS THREADS RUNS [heads|positions]\n");
    return 2;
  }
  int by_head = argc == 11 || strcmp(argv[11], "heads") == 0;
  if (argc == 12 && !by_head && strcmp(argv[11], "positions") != 0) {
    fprintf(stderr, "attention: layout is heads or positions\n");
    return 2;
  }
  int heads = atoi(argv[3]), kvh = atoi(argv[4]), hd = atoi(argv[5]);
  long window = atol(argv[6]);
  int T = atoi(argv[7]), pos = atoi(argv[8]), threads = atoi(argv[9]);
  int runs = atoi(argv[10]);
  if (heads <= 0 || kvh <= 0 || hd <= 0 || T <= 0 || pos < 0 || runs <= 0) {
    fprintf(stderr, "attention: bad sizes\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "attention: %s\n", dlerror());
    return 1;
  }
  kernel_fn kernel = (kernel_fn)dlsym(lib, argv[2]);
  /* The runtime's, which its parallel loops read (runtime/src/parallel.c). */
  void (*set_threads)(int) =
      (void (*)(int))dlsym(lib, "archrt_set_num_threads");
  if (!kernel || !set_threads) {
    fprintf(stderr, "attention: %s has no %s\n", argv[1], argv[2]);
    return 1;
  }
  set_threads(threads);
  int len = pos + T;
  uint64_t seed = 42;
  float *q = randoms((size_t)T * heads * hd, &seed);
  double bytes = 2.0 * len * kvh * hd * sizeof(float);
  int copies = T > 1 ? 1 : (int)(512.0 * (1 << 20) / bytes);
  copies = copies < 1 ? 1 : copies > 64 ? 64 : copies;
  float *o = randoms((size_t)T * heads * hd, &seed);
  halide_buffer_t bq, bk[64], bv[64], bo;
  halide_dimension_t dq[3], dk[64][3], dv[64][3], dout[3];
  buffer(&bq, dq, q, hd, heads, T, 0);
  for (int c = 0; c < copies; ++c) {
    buffer(&bk[c], dk[c], randoms((size_t)len * kvh * hd, &seed), hd, kvh, len,
           by_head);
    buffer(&bv[c], dv[c], randoms((size_t)len * kvh * hd, &seed), hd, kvh, len,
           by_head);
  }
  buffer(&bo, dout, o, hd, heads, T, 0);
  double *ms = malloc(sizeof(double) * (size_t)runs);
  for (int r = -1; r < runs; ++r) {
    int c = (r + 1) % copies;
    double t0 = now();
    int err = kernel(&bq, &bk[c], &bv[c], pos, &bo);
    if (err) {
      fprintf(stderr, "attention: the kernel failed (%d)\n", err);
      return 1;
    }
    if (r >= 0)
      ms[r] = (now() - t0) * 1e3;
  }
  double pairs = 0;
  for (int t = 0; t < T; ++t) {
    long visible = pos + t + 1;
    if (window > 0 && visible > window)
      visible = window;
    pairs += (double)visible;
  }
  double flops = 4.0 * hd * heads * pairs;
  double mid = median(ms, runs);
  printf("ms=%.4f gflops=%.2f gbs=%.2f\n", mid, flops / mid / 1e6,
         bytes / mid / 1e6);
  return 0;
}
