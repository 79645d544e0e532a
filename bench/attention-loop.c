/*===- attention-loop.c - Decode attention's two passes, by hand ---------===*
 *
 * The loop archc's decode attention kernel is measured against (issue 11,
 * docs/performance.md "Decode attention against a loop by hand"): the same
 * work written directly in AVX-512 intrinsics, with none of a generated
 * kernel's bounds, clamps or buffers. bench-156m's shape: a key/value head
 * serves a group of 4 query heads, head_dim 64, f32 caches kept head-major
 * (a head's positions consecutive) in two buffers, K and V, as
 * bench/attention.c lays them out. For each chunk of 1024 keys (archc's
 * split_kv at length): the scores (per key, 4 dot products, each a
 * multiply, 3 FMAs and a horizontal sum), the chunk's softmax (exp
 * vectorized by libmvec), then the value sums (per key, 16 FMAs);
 * successive chunks stream on through 256 MiB of K and as much of V, so
 * every row comes from memory, as a decode's cache does (on huge pages,
 * as the runtime allocates a cache: bench/alloc.h). Rows are
 * prefetched DIST bytes ahead, a line at a time (0: none; archc
 * prefetches 2 KiB ahead). With STREAMS (default 1) each pass over a
 * chunk reads it as that many streams at once: the chunk's keys in
 * STREAMS equal parts, a key of each part in turn (archc's kernel reads
 * 4: kChunkStreams). Five passes over the buffers, timed per 32
 * chunks: the work of one bench-156m decode call at 8192 positions (4
 * key/value heads of 8192 keys), as bench/attention.c times the kernel.
 * Prints the median and the best of those calls as GB/s of K and V read,
 * as bench/attention.c prints the kernel's.
 *   cc -O3 -ffast-math -march=native -Ibench bench/attention-loop.c -lm \
 *     -o attention-loop
 *   attention-loop DIST [STREAMS] -> dist=... streams=... gbs=...
 *                                    best_gbs=...
 *
 *===---------------------------------------------------------------------===*/
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "timing.h"

enum { GROUP = 4, HEAD_DIM = 64, CHUNK = 1024, CALL = 32, PASSES = 5 };

/* Row `row`'s four vectors, after prefetching the four lines of the row
 * DIST bytes after it (none with DIST 0). */
static inline void load_row(const float *row, long dist, __m512 out[4]) {
  if (dist) {
    const char *p = (const char *)row + dist;
    for (int l = 0; l < 4; ++l)
      _mm_prefetch(p + 64 * l, _MM_HINT_T0);
  }
  for (int i = 0; i < 4; ++i)
    out[i] = _mm512_load_ps(row + 16 * i);
}

int main(int argc, char **argv) {
  char *end = NULL;
  long streams = argc == 3 ? strtol(argv[2], &end, 10) : 1;
  int shift = 0;
  if ((argc != 2 && argc != 3) || (end && *end) || streams < 1 ||
      streams > CHUNK || (streams & (streams - 1))) {
    fprintf(stderr, "usage: attention-loop DIST [STREAMS: a power of two "
                    "up to %d]\n", CHUNK);
    return 2;
  }
  while ((1L << shift) < streams)
    ++shift;
  long dist = atol(argv[1]);
  int part = (int)(CHUNK / streams); /* key k of a pass: part k % streams */
  size_t half = (size_t)256 << 20, rows = half / (HEAD_DIM * 4);
  float *k = bench_alloc(half, "attention-loop");
  float *v = bench_alloc(half, "attention-loop");
  for (size_t i = 0; i < half / 4; ++i) {
    k[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    v[i] = (float)((i * 40503u) % 1000) * 1e-3f - 0.5f;
  }
  float q[GROUP][HEAD_DIM];
  for (int h = 0; h < GROUP; ++h)
    for (int d = 0; d < HEAD_DIM; ++d)
      q[h][d] = 0.01f * (float)(h + d % 7);
  static float s[GROUP][CHUNK];
  size_t calls = rows / CHUNK / CALL, n = 0;
  double *t = malloc(sizeof(double) * calls * PASSES), sink = 0;
  if (!t)
    return 1;
  for (int pass = 0; pass < PASSES; ++pass) {
    double t0 = now();
    for (size_t c0 = 0; c0 + CHUNK <= rows; c0 += CHUNK) {
      const float *kc = k + c0 * HEAD_DIM, *vc = v + c0 * HEAD_DIM;
      __m512 qv[GROUP][4];
      for (int h = 0; h < GROUP; ++h)
        for (int i = 0; i < 4; ++i)
          qv[h][i] = _mm512_loadu_ps(&q[h][16 * i]);
      for (int key = 0; key < CHUNK; ++key) {
        int j = (int)(key & (streams - 1)) * part + (key >> shift);
        __m512 r[4];
        load_row(kc + j * HEAD_DIM, dist, r);
        for (int h = 0; h < GROUP; ++h) {
          __m512 x = _mm512_mul_ps(r[0], qv[h][0]);
          for (int i = 1; i < 4; ++i)
            x = _mm512_fmadd_ps(r[i], qv[h][i], x);
          s[h][j] = _mm512_reduce_add_ps(x);
        }
      }
      for (int h = 0; h < GROUP; ++h) {
        float m = s[h][0], l = 0;
        for (int j = 1; j < CHUNK; ++j)
          m = fmaxf(m, s[h][j]);
        for (int j = 0; j < CHUNK; ++j) {
          s[h][j] = expf(s[h][j] - m);
          l += s[h][j];
        }
        sink += l;
      }
      __m512 acc[GROUP][4];
      for (int h = 0; h < GROUP; ++h)
        for (int i = 0; i < 4; ++i)
          acc[h][i] = _mm512_setzero_ps();
      for (int key = 0; key < CHUNK; ++key) {
        int j = (int)(key & (streams - 1)) * part + (key >> shift);
        __m512 r[4];
        load_row(vc + j * HEAD_DIM, dist, r);
        for (int h = 0; h < GROUP; ++h) {
          __m512 p = _mm512_set1_ps(s[h][j]);
          for (int i = 0; i < 4; ++i)
            acc[h][i] = _mm512_fmadd_ps(p, r[i], acc[h][i]);
        }
      }
      for (int h = 0; h < GROUP; ++h)
        for (int i = 0; i < 4; ++i)
          sink += _mm512_reduce_add_ps(acc[h][i]);
      if ((c0 / CHUNK + 1) % CALL == 0) {
        double t1 = now();
        t[n++] = t1 - t0;
        t0 = t1;
      }
    }
  }
  double bytes = 2.0 * CALL * CHUNK * HEAD_DIM * sizeof(float);
  double mid = median(t, (int)n); /* sorts: t[0] is the best */
  printf("dist=%ld streams=%ld gbs=%.2f best_gbs=%.2f (checksum %g)\n",
         dist, streams, bytes / mid / 1e9, bytes / t[0] / 1e9, sink);
  free(t);
  free(k);
  free(v);
  return 0;
}
