/*===- timing.h - Clock and median for the bench kernel harnesses ---------===*/
#ifndef ARCHC_BENCH_TIMING_H
#define ARCHC_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of `n` timings (sorts them). */
static inline double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return t[n / 2];
}

#endif
