/*===- parallel.c - Parallel loops: a contiguous range a thread ----------===*
 *
 * Every parallel loop of the kernels calls halide_do_par_for (the Halide
 * runtime's weak definition is replaced by this one; a loop nested in
 * another's task would call halide_do_parallel_tasks, which no schedule
 * makes). Halide's thread pool hands a loop's iterations out one at a
 * time, so on two threads each thread runs every other one: a GEMM task's
 * weight panel is then never the one after the panel its thread has just
 * read, and the next-panel prefetch (lowering/PanelPrefetch.cpp: task +
 * 1) fetches the other thread's. Here the iterations are split into one contiguous range per
 * thread of the pool; a thread runs its range in order, then takes what is
 * left of the others' from their backs, so that a thread the VM delays
 * does not hold the loop up and what each owner runs stays one stream.
 * The ranges are Halide's tasks: the pool still wakes and joins its
 * threads, and no more of them take part than the count set. That count
 * is archrt_set_num_threads's (a host that calls halide_set_num_threads
 * itself gets ranges for the default count: every iteration still runs
 * once), and halide_set_custom_do_par_for no longer has an effect.
 * (docs/design.md "Parallel loops: a contiguous range a thread".)
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <HalideRuntime.h>
#include <stdint.h>
#include <stdlib.h>

/* Halide's runtime defines it (weak) without declaring it. */
extern int halide_host_cpu_count(void);

/* Halide's maximum pool size. */
enum { ARCHRT_MAX_THREADS = 256 };

/* The pool's size as last set (0: Halide's default), and that default
 * once read. */
static atomic_int pool_threads, default_threads;

void archrt_set_num_threads(int n) {
  /* Halide aborts on a negative count: clamp instead (the call has no
   * status to return). */
  n = n < 0 ? 0 : n > ARCHRT_MAX_THREADS ? ARCHRT_MAX_THREADS : n;
  halide_set_num_threads(n);
  atomic_store(&pool_threads, n);
}

/* The pool's size: as set, else Halide's default (HL_NUM_THREADS, else
 * one per core). */
static int threads(void) {
  int n = atomic_load_explicit(&pool_threads, memory_order_relaxed);
  if (n > 0)
    return n;
  n = atomic_load_explicit(&default_threads, memory_order_relaxed);
  if (n > 0)
    return n;
  const char *env = getenv("HL_NUM_THREADS");
  if (!env)
    env = getenv("HL_NUMTHREADS");
  n = env ? atoi(env) : halide_host_cpu_count();
  n = n < 1 ? 1 : n > ARCHRT_MAX_THREADS ? ARCHRT_MAX_THREADS : n;
  atomic_store_explicit(&default_threads, n, memory_order_relaxed);
  return n;
}

/* One thread's range [next, end) of a loop's iterations (next in the low
 * half, end in the high), on its own cache line: its owner takes from the
 * front, the other threads from the back, so that what the owner runs
 * stays one contiguous stream. */
typedef struct {
  _Alignas(64) _Atomic uint64_t span;
} range;

/* The iteration taken from the front (the owner's) or the back of `r`;
 * -1 when none is left. */
static int take(range *r, int front) {
  uint64_t span = atomic_load_explicit(&r->span, memory_order_relaxed);
  for (;;) {
    uint32_t next = (uint32_t)span, end = (uint32_t)(span >> 32);
    if (next >= end)
      return -1;
    uint64_t rest = front ? span + 1 : span - ((uint64_t)1 << 32);
    if (atomic_compare_exchange_weak_explicit(&r->span, &span, rest,
                                              memory_order_relaxed,
                                              memory_order_relaxed))
      return (int)(front ? next : end - 1);
  }
}

typedef struct {
  halide_task_t task;
  uint8_t *closure;
  int min, n;
  range *ranges;
  atomic_int failed; /* set by a failed task: the others take no more */
} loop;

/* Halide task `first`: range `first` from its front, then what is left of
 * the others from their backs, until a task fails. */
static int run_ranges(void *user_context, int first, uint8_t *closure) {
  loop *l = (loop *)closure;
  for (int k = 0; k < l->n; ++k) {
    range *r = &l->ranges[(first + k) % l->n];
    for (int i; !atomic_load_explicit(&l->failed, memory_order_relaxed) &&
                (i = take(r, k == 0)) >= 0;) {
      int status = l->task(user_context, l->min + i, l->closure);
      if (status) {
        atomic_store_explicit(&l->failed, 1, memory_order_relaxed);
        return status;
      }
    }
  }
  return 0;
}

int halide_do_par_for(void *user_context, halide_task_t task, int min,
                      int extent, uint8_t *closure) {
  int n = threads();
  if (n > extent)
    n = extent;
  if (n <= 1) {
    for (int i = 0; i < extent; ++i) {
      int status = task(user_context, min + i, closure);
      if (status)
        return status;
    }
    return 0;
  }
  range ranges[n];
  for (int c = 0; c < n; ++c) {
    uint64_t next = (uint64_t)((int64_t)extent * c / n);
    uint64_t end = (uint64_t)((int64_t)extent * (c + 1) / n);
    atomic_init(&ranges[c].span, next | end << 32);
  }
  loop l = {task, closure, min, n, ranges, 0};
  return halide_default_do_par_for(user_context, run_ranges, 0, n,
                                   (uint8_t *)&l);
}
