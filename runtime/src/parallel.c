/*===- parallel.c - Parallel loops: a contiguous range a thread ----------===*
 *
 * Every parallel loop of the kernels calls halide_do_par_for (the Halide
 * runtime's weak definition is replaced by this one; a loop nested in
 * another's task would call halide_do_parallel_tasks, which no schedule
 * makes). Halide's thread pool hands a loop's iterations out one at a
 * time, so on two threads each thread runs every other one: a GEMM task's
 * weight panel is then never the one after the panel its thread has just
 * read, and the next-panel prefetch (lowering/PanelPrefetch.cpp: task +
 * 1) fetches the other thread's. Here the iterations are split into one
 * contiguous range per thread; a thread runs its range in order, then
 * takes what is left of the others' from their backs, so that a thread the
 * VM delays does not hold the loop up and what each owner runs stays one
 * stream. No more threads take part than the count set:
 * archrt_set_num_threads's (a host that calls halide_set_num_threads
 * itself gets ranges for the default count: every iteration still runs
 * once); halide_set_custom_do_par_for no longer has an effect.
 *
 * The threads are the runtime's own: the caller and count - 1 workers,
 * which spin for the next loop a while before they sleep. Halide's pool
 * (which yields 40 times, then sleeps on a condition variable, and whose
 * caller sleeps until the last task ends) woke a sleeping thread at many
 * of a forward pass's loops. Halide's pool still runs the ranges of a
 * loop that a second host thread starts while the workers are busy, and
 * of one nested in a task (no kernel's: a host's own task that calls
 * halide_do_par_for).
 * (docs/design.md "Parallel loops: a contiguous range a thread".)
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <HalideRuntime.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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
  void *user_context;
  uint8_t *closure;
  int min, n;
  range *ranges;
  atomic_int failed; /* set by a failed task: the others take no more */
  atomic_int status; /* the first failed task's status, on a worker */
} loop;

/* Participant `first`: range `first` from its front, then what is left of
 * the others from their backs, until a task fails. (Also Halide's task,
 * where its pool runs the loop.) */
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

/* The workers: participants 1 .. n-1 of a loop, its caller (the owner)
 * being participant 0. The owner publishes a loop by bumping `gen`; a
 * worker spins on gen for up to SPIN_NS after its last loop, then sleeps
 * on it (a futex). `entry` counts the workers inside the published loop;
 * the owner closes it (CLOSED, with no worker inside) before it returns,
 * so that no worker reads a loop that is gone and one that comes late
 * takes no part. (A late worker may enter the next loop instead: its
 * ranges are taken atomically, so any participant may run them.) Workers
 * numbered above `keep` end at their next wake: the surplus when the
 * count drops, all of them when the library is unloaded. */
enum { CLOSED = 1u << 31 };
/* How long a worker spins for the next loop: more than the gaps between a
 * forward pass's kernels (a few microseconds), so that it does not sleep
 * inside one. No spinning where the threads outnumber the CPUs. */
static const long SPIN_NS = 200000;

static struct {
  pthread_mutex_t owner; /* held by the loop that uses the workers */
  int n_workers;         /* started: numbers 1 .. n_workers (under owner) */
  int stopped;           /* unloaded: no more workers (under owner) */
  pthread_t workers[ARCHRT_MAX_THREADS];
  unsigned created_at[ARCHRT_MAX_THREADS]; /* gen when started */
  loop *_Atomic job;
  atomic_int spinners; /* workers numbered below it spin; 0: none */
  atomic_int keep, sleepers;
  _Alignas(64) atomic_uint gen;
  _Alignas(64) atomic_uint entry;
} pool = {.owner = PTHREAD_MUTEX_INITIALIZER,
          .keep = ARCHRT_MAX_THREADS,
          .entry = CLOSED};

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Waits until gen is no longer `seen`, and returns it: spinning first
 * where worker `index` takes part in the loops run now. */
static unsigned next_gen(unsigned seen, int index) {
  unsigned g;
  if (index < atomic_load_explicit(&pool.spinners, memory_order_relaxed))
    for (long k = 0, start = now_ns();; ++k) {
      g = atomic_load_explicit(&pool.gen, memory_order_acquire);
      if (g != seen)
        return g;
      relax();
      if ((k & 255) == 255 && now_ns() - start > SPIN_NS)
        break;
    }
  for (;;) {
    /* (sleepers before gen's check, gen before sleepers' in the owner:
     * one of the two sees the other) */
    atomic_fetch_add(&pool.sleepers, 1);
    if (atomic_load(&pool.gen) == seen)
      syscall(SYS_futex, &pool.gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
    atomic_fetch_sub(&pool.sleepers, 1);
    g = atomic_load_explicit(&pool.gen, memory_order_acquire);
    if (g != seen)
      return g;
  }
}

static void *worker(void *arg) {
  int index = (int)(intptr_t)arg;
  for (unsigned seen = pool.created_at[index];;) {
    seen = next_gen(seen, index);
    if (index > atomic_load(&pool.keep))
      return NULL;
    unsigned e = atomic_load(&pool.entry);
    while (!(e & CLOSED) &&
           !atomic_compare_exchange_weak(&pool.entry, &e, e + 1))
      ;
    if (e & CLOSED)
      continue; /* that loop is over */
    /* (the loop published before entry was opened for it) */
    loop *l = atomic_load_explicit(&pool.job, memory_order_acquire);
    if (index < l->n) {
      int status = run_ranges(l->user_context, index, (uint8_t *)l), none = 0;
      if (status)
        atomic_compare_exchange_strong(&l->status, &none, status);
    }
    atomic_fetch_sub_explicit(&pool.entry, 1, memory_order_release);
  }
}

static void wake_workers(void) {
  syscall(SYS_futex, &pool.gen, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Ends the workers numbered above `keep` (under the owner's lock, no loop
 * published: entry is closed, so the others only wake and wait again). */
static void retire_workers(int keep) {
  atomic_store(&pool.entry, CLOSED);
  atomic_store(&pool.keep, keep);
  atomic_fetch_add(&pool.gen, 1);
  wake_workers();
  for (int i = keep + 1; i <= pool.n_workers; ++i)
    pthread_join(pool.workers[i], NULL);
  pool.n_workers = keep;
  atomic_store(&pool.keep, ARCHRT_MAX_THREADS);
}

/* At exit or dlclose: the workers run this library's code. (Unloading the
 * library while a host thread is inside one of its calls is the host's
 * error; a loop that runs then, or after, runs on its caller alone.) */
__attribute__((destructor)) static void stop_workers(void) {
  if (pthread_mutex_trylock(&pool.owner))
    return;
  retire_workers(0);
  pool.stopped = 1;
  pthread_mutex_unlock(&pool.owner);
}

/* A forked child has none of the parent's workers (nor any inside a loop:
 * a fork from a task returns to a loop the child's caller can close). */
static void forget_workers(void) {
  pthread_mutex_init(&pool.owner, NULL);
  pool.n_workers = 0;
  atomic_store(&pool.sleepers, 0);
  atomic_store(&pool.entry, 0);
}

__attribute__((constructor)) static void on_fork(void) {
  pthread_atfork(NULL, NULL, forget_workers);
}

/* Starts worker `index`; nonzero where it could not. */
static int start_worker(int index) {
  pool.created_at[index] = atomic_load(&pool.gen);
  return pthread_create(&pool.workers[index], NULL, worker,
                        (void *)(intptr_t)index);
}

/* Runs `l` on `count` threads (the workers and the calling thread, whose
 * lock on the pool it releases). */
static int run_on_workers(loop *l, int count) {
  static int cpus;
  if (!cpus)
    cpus = halide_host_cpu_count(); /* (under the owner's lock) */
  int spin = count <= cpus;
  atomic_store_explicit(&pool.spinners, spin ? count : 0,
                        memory_order_relaxed);
  if (pool.n_workers > count - 1)
    retire_workers(count - 1);
  while (!pool.stopped && pool.n_workers + 1 < l->n &&
         !start_worker(pool.n_workers + 1))
    ++pool.n_workers; /* (where one fails, the threads there take its range) */
  atomic_store_explicit(&pool.job, l, memory_order_relaxed);
  atomic_store_explicit(&pool.entry, 0, memory_order_release);
  atomic_fetch_add(&pool.gen, 1);
  if (atomic_load(&pool.sleepers))
    wake_workers();
  int status = run_ranges(l->user_context, 0, (uint8_t *)l);
  /* Every iteration is taken (or a task failed): wait for the workers
   * still running one, yielding (at once where the threads outnumber the
   * CPUs) to a thread that shares a CPU. */
  for (unsigned k = 0, none = 0;
       !atomic_compare_exchange_weak(&pool.entry, &none, CLOSED); none = 0)
    if (spin && ++k < 1u << 16)
      relax();
    else
      sched_yield();
  pthread_mutex_unlock(&pool.owner);
  return status ? status : atomic_load(&l->status);
}

int halide_do_par_for(void *user_context, halide_task_t task, int min,
                      int extent, uint8_t *closure) {
  int count = threads(), n = count < extent ? count : extent;
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
  loop l = {task, user_context, closure, min, n, ranges, 0, 0};
  /* A loop inside a task, or one that another host thread starts while
   * the workers run a loop: Halide's pool runs it. */
  if (pthread_mutex_trylock(&pool.owner))
    return halide_default_do_par_for(user_context, run_ranges, 0, n,
                                     (uint8_t *)&l);
  return run_on_workers(&l, count);
}
