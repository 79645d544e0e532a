/*===- ceilings.c - This machine's FP32 FMA peak and read bandwidth ------===*
 *
 * The figures the benchmarks divide by, measured in the same run: the peak
 * as independent AVX-512 (or AVX2) FMA chains on registers, the bandwidth
 * as a vector sum over an array far larger than the caches (the best of
 * 1, 4 and 8 concurrent streams per thread: a GEMV over packed panels
 * keeps several misses in flight, which one stream's prefetch may not);
 * where the
 * CPU has AVX512-BF16, the bf16 dot-product peak (vdpbf16ps chains: 2
 * products and 2 sums per f32 lane) too, else bf16_gflops=0; where it has
 * AMX-BF16 (and Linux grants the tiles), the AMX tiles' bf16 peak
 * (tdpbf16ps of 16 x 16 x 32 on 4 independent accumulator tiles, operands
 * in tiles: no loads), else amx_gflops=0. One result per thread count, the
 * best of several repetitions. With 2 threads or more, a cache line's
 * round trip between the first two CPUs the process may run on (a thread
 * pinned to each, taking turns to write it), the median of 5 runs of
 * 100 000: on a VM it tells how far apart the hypervisor has put them now
 * (on the Zen 5 VM 127 ns in minutes when two-thread runs that share data
 * across the cores ran fast, 406-553 ns in those when they ran slow:
 * docs/performance.md "The row-wise passes' slow minutes"); else
 * round_trip_ns=0.
 *   ceilings THREADS
 *     ->   peak_gflops=... read_gbs=... bf16_gflops=... amx_gflops=...
 *          round_trip_ns=...
 *
 *===---------------------------------------------------------------------===*/
#define _GNU_SOURCE /* CPU_SET, pthread_setaffinity_np */
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "timing.h"

#ifdef __AVX512F__
typedef __m512 vec;
#define LANES 16
#define FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define SET1(x) _mm512_set1_ps(x)
#define LOAD(p) _mm512_loadu_ps(p)
#define ADD(a, b) _mm512_add_ps(a, b)
#define SUM(v) _mm512_reduce_add_ps(v)
#else
typedef __m256 vec;
#define LANES 8
#define FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define SET1(x) _mm256_set1_ps(x)
#define LOAD(p) _mm256_loadu_ps(p)
#define ADD(a, b) _mm256_add_ps(a, b)
static float SUM(vec v) {
  float f[8];
  _mm256_storeu_ps(f, v);
  return f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
}
#endif

/* 12 FMA chains cover 2 pipes x 4-6 cycles; the bf16 dot product's take
 * 16: with 12 the Zen 5's probe read 417-423 GFLOP/s a thread where 16
 * and 24 read 451-459 (its GEMM then measured at 103-105% of the
 * probe). */
enum { CHAINS = 12, BF16_CHAINS = 16, FMA_ITERS = 20000000 };
static const size_t kFloats = (size_t)1 << 28; /* 1 GiB */

typedef struct job {
  const float *data;
  size_t n;
  int streams; /* read_job: the slice in this many parts, read together */
  float out;
} job;

/* 12 independent chains cover 2 FMA pipes x 4-6 cycles of latency. */
static void *fma_job(void *arg) {
  job *j = arg;
  vec acc[CHAINS], x = SET1(0.999999f), y = SET1(1e-7f);
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = SET1((float)c);
  for (long i = 0; i < FMA_ITERS; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = FMA(acc[c], x, y);
  }
  vec s = acc[0];
  for (int c = 1; c < CHAINS; ++c)
    s = ADD(s, acc[c]);
  j->out = SUM(s);
  return NULL;
}

#ifdef __AVX512BF16__
static void *bf16_job(void *arg) {
  job *j = arg;
  __m512 acc[BF16_CHAINS];
  __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80); /* 1.0 */
  __m512bh y = (__m512bh)_mm512_set1_epi16(0x3380); /* ~6e-8 */
  for (int c = 0; c < BF16_CHAINS; ++c)
    acc[c] = _mm512_set1_ps((float)c);
  for (long i = 0; i < FMA_ITERS; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < BF16_CHAINS; ++c)
      acc[c] = _mm512_dpbf16_ps(acc[c], x, y);
  }
  __m512 s = acc[0];
  for (int c = 1; c < BF16_CHAINS; ++c)
    s = _mm512_add_ps(s, acc[c]);
  j->out = _mm512_reduce_add_ps(s);
  return NULL;
}
#endif

#ifdef __AMX_BF16__
enum { AMX_ITERS = 4000000 };

/* 4 accumulator tiles (16 x 16 f32), 2 A and 2 B tiles (16 x 64 bytes of
 * bf16 zeros), each step 4 independent tdpbf16ps: 4 x 16 x 16 x 32 x 2
 * flops. */
static void *amx_job(void *arg) {
  job *j = arg;
  struct {
    uint8_t palette, start, reserved[14];
    uint16_t bytes[16];
    uint8_t rows[16];
  } cfg;
  static const uint16_t zeros[16 * 32] __attribute__((aligned(64)));
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int i = 0; i < 8; ++i)
    cfg.rows[i] = 16, cfg.bytes[i] = 64;
  _tile_loadconfig(&cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, zeros, 64);
  _tile_loadd(5, zeros, 64);
  _tile_loadd(6, zeros, 64);
  _tile_loadd(7, zeros, 64);
  for (long i = 0; i < AMX_ITERS; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float c[16 * 16];
  _tile_stored(0, c, 64);
  _tile_release();
  j->out = c[0];
  return NULL;
}

/* Whether Linux grants this process the tiles' state
 * (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)). */
static int amx_granted(void) {
  return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}
#endif

/* The slice as `streams` equal parts, one vector of each per step. */
static void *read_job(void *arg) {
  job *j = arg;
  enum { MAX_STREAMS = 8 };
  size_t part = j->n / (size_t)j->streams / LANES * LANES;
  vec acc[MAX_STREAMS];
  for (int s = 0; s < j->streams; ++s)
    acc[s] = SET1(0);
  for (size_t i = 0; i + 2 * LANES <= part; i += 2 * LANES)
    for (int s = 0; s < j->streams; ++s) {
      const float *p = j->data + (size_t)s * part + i;
      acc[s] = ADD(acc[s], ADD(LOAD(p), LOAD(p + LANES)));
    }
  vec sum = SET1(0);
  for (int s = 0; s < j->streams; ++s)
    sum = ADD(sum, acc[s]);
  j->out = SUM(sum);
  return NULL;
}

/* Best of `reps` timings of `threads` copies of `fn` over equal slices. */
static double best(void *(*fn)(void *), int threads, const float *data,
                   int reps, int streams) {
  double t = 1e30;
  for (int r = 0; r < reps; ++r) {
    pthread_t tid[64];
    job jobs[64];
    double t0 = now();
    for (int i = 0; i < threads; ++i) {
      jobs[i].data = data + kFloats / (size_t)threads * (size_t)i;
      jobs[i].n = kFloats / (size_t)threads;
      jobs[i].streams = streams;
      pthread_create(&tid[i], NULL, fn, &jobs[i]);
    }
    for (int i = 0; i < threads; ++i)
      pthread_join(tid[i], NULL);
    double dt = now() - t0;
    if (dt < t)
      t = dt;
  }
  return t;
}

/* The round trip: the line holds the count of writes so far; thread 0
 * writes the odd ones, thread 1 the even ones, each waiting for the
 * other's. Timed by thread 0 from when both are pinned and ready. */
enum { TRIPS = 100000 };
static _Alignas(64) atomic_long ping;
static atomic_int ready, failed;

typedef struct {
  int cpu, first; /* pinned to `cpu`; `first`: writes 1, 3, 5, ... */
  double ns;      /* thread 0's: the round trips' mean */
} pinger;

static void *ping_job(void *arg) {
  pinger *p = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(p->cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set))
    atomic_store(&failed, 1);
  atomic_fetch_add(&ready, 1);
  while (atomic_load(&ready) < 2)
    _mm_pause();
  if (atomic_load(&failed))
    return NULL;
  double t0 = now();
  for (long i = p->first ? 0 : 1; i < 2 * TRIPS; i += 2) {
    while (atomic_load_explicit(&ping, memory_order_acquire) != i)
      _mm_pause();
    atomic_store_explicit(&ping, i + 1, memory_order_release);
  }
  p->ns = (now() - t0) / TRIPS * 1e9;
  return NULL;
}

/* The round trip in ns between the first two CPUs of the process's
 * affinity mask; 0 where it has fewer than two or they cannot be pinned. */
static double round_trip_ns(void) {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask))
    return 0;
  pinger p[2];
  int found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &mask))
      p[found++].cpu = c;
  if (found < 2)
    return 0;
  p[0].first = 1;
  p[1].first = 0;
  double t[5];
  for (int r = 0; r < 5; ++r) {
    atomic_store(&ping, 0);
    atomic_store(&ready, 0);
    atomic_store(&failed, 0);
    pthread_t tid[2];
    for (int i = 0; i < 2; ++i)
      pthread_create(&tid[i], NULL, ping_job, &p[i]);
    for (int i = 0; i < 2; ++i)
      pthread_join(tid[i], NULL);
    if (atomic_load(&failed))
      return 0;
    t[r] = p[0].ns;
  }
  return median(t, 5);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 64) {
    fprintf(stderr, "ceilings: threads must be in [1, 64]\n");
    return 1;
  }
  /* On 2 MiB pages where the kernel gives them (THP "madvise"): the
   * probe's TLB misses are then not what it measures. */
  float *data = bench_alloc(kFloats * sizeof(float), "ceilings");
  for (size_t i = 0; i < kFloats; ++i)
    data[i] = (float)(i & 7);
  double flops = 2.0 * LANES * CHAINS * (double)FMA_ITERS * threads;
  double tf = best(fma_job, threads, data, 3, 1);
  static const int kStreams[] = {1, 4, 8};
  double tr = 1e30;
  for (int s = 0; s < 3; ++s) {
    double t = best(read_job, threads, data, 3, kStreams[s]);
    if (t < tr)
      tr = t;
  }
  double bf16 = 0;
#ifdef __AVX512BF16__
  bf16 = 4.0 * 16 * BF16_CHAINS * (double)FMA_ITERS * threads /
         best(bf16_job, threads, data, 3, 1) / 1e9;
#endif
  double amx = 0;
#ifdef __AMX_BF16__
  if (amx_granted())
    amx = 4.0 * 16 * 16 * 32 * 2 * (double)AMX_ITERS * threads /
          best(amx_job, threads, data, 3, 1) / 1e9;
#endif
  double trip = threads >= 2 ? round_trip_ns() : 0;
  printf("peak_gflops=%.1f read_gbs=%.1f bf16_gflops=%.1f amx_gflops=%.1f "
         "round_trip_ns=%.0f\n",
         flops / tf / 1e9, (double)kFloats * sizeof(float) / tr / 1e9, bf16,
         amx, trip);
  free(data);
  return 0;
}
