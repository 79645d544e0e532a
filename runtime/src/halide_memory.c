/*===- halide_memory.c - Halide's heap allocations, kept for reuse -------===*
 *
 * The kernels' buffers that are not on the stack come from halide_malloc
 * (the Halide runtime's weak definition is replaced by this one). glibc
 * serves blocks of 128 KiB and more with mmap and unmaps them on free, so a
 * kernel that takes such a block on every call — decode attention's
 * per-chunk partials from 8K positions of context on — would fault in
 * fresh zero pages each time: measured 10.0 GB/s against 18.8 with the
 * block kept (bench/attention.c, bench-156m at 8192 positions, 2 threads,
 * AMD EPYC Zen 5). Freed blocks of 64 KiB to 64 MiB wait here, at most
 * 16, for a request of at most their size and more than half of it; the
 * rest go back to malloc. (A larger block, such as a K-blocked GEMM's
 * copy of x in a prefill of thousands of tokens, would stay resident for
 * good after one long prompt; its fresh pages' faults are estimated at
 * 1-3% of the work that fills such a block, not measured.) A request
 * takes a block its own thread freed where one fits: a block another
 * thread freed has its lines in that thread's core's caches, and a task
 * that writes it (a 16-bit weight's panel widened to f32, 256-704 KiB a
 * task on bench-156m) takes each line over from there. Blocks are
 * 64-byte aligned, their size kept just before them. A fork holds the
 * lock across itself, so that a child never starts with it held.
 *
 *===---------------------------------------------------------------------===*/
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#define ARCHRT_ALIGN 64
#define ARCHRT_KEEP 16
#define ARCHRT_MIN_KEPT ((size_t)64 << 10)
#define ARCHRT_MAX_KEPT ((size_t)64 << 20)

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  void *block;
  size_t size;
  const void *by; /* the freeing thread's `self` */
} kept[ARCHRT_KEEP];
static int n_kept;

/* A mark whose address names the calling thread. (A thread started after
 * another ended may get the same address, and with it that thread's kept
 * blocks first: a preference, not a matter of correctness.) */
static _Thread_local char self;

/* A fork while another thread holds kept_lock would leave it held in the
 * child: held across the fork instead, released on both sides. */
static void lock_kept(void) { pthread_mutex_lock(&kept_lock); }
static void unlock_kept(void) { pthread_mutex_unlock(&kept_lock); }

__attribute__((constructor)) static void on_fork(void) {
  pthread_atfork(lock_kept, unlock_kept, unlock_kept);
}

/* Whether blocks of `size` bytes are kept for reuse (both ways: the
 * requests that look among the kept, the frees that keep). */
static int keeps_size(size_t size) {
  return size >= ARCHRT_MIN_KEPT && size <= ARCHRT_MAX_KEPT;
}

/* The usable size of a block halide_malloc returned. */
static size_t *size_of(void *block) {
  return (size_t *)((char *)block - ARCHRT_ALIGN);
}

void *halide_malloc(void *user_context, size_t size) {
  (void)user_context;
  if (keeps_size(size)) {
    void *found = NULL;
    /* (Taken before the lock: a thread's first access to its TLS in a
     * dlopen'd library may allocate.) */
    const void *me = &self;
    pthread_mutex_lock(&kept_lock);
    /* The first fit this thread freed, else the first fit. */
    int pick = -1;
    for (int i = 0; i < n_kept; ++i)
      if (kept[i].size >= size && kept[i].size / 2 < size &&
          (pick < 0 || kept[i].by == me)) {
        pick = i;
        if (kept[i].by == me)
          break;
      }
    if (pick >= 0) {
      found = kept[pick].block;
      kept[pick] = kept[--n_kept];
    }
    pthread_mutex_unlock(&kept_lock);
    if (found)
      return found;
  }
  void *base = NULL;
  if (size > (size_t)-1 - ARCHRT_ALIGN ||
      posix_memalign(&base, ARCHRT_ALIGN, size + ARCHRT_ALIGN) != 0)
    return NULL;
  void *block = (char *)base + ARCHRT_ALIGN;
  *size_of(block) = size;
  return block;
}

void halide_free(void *user_context, void *block) {
  (void)user_context;
  if (!block)
    return;
  size_t size = *size_of(block);
  if (keeps_size(size)) {
    const void *me = &self;
    pthread_mutex_lock(&kept_lock);
    int kept_it = n_kept < ARCHRT_KEEP;
    if (kept_it) {
      kept[n_kept].block = block;
      kept[n_kept].size = size;
      kept[n_kept++].by = me;
    }
    pthread_mutex_unlock(&kept_lock);
    if (kept_it)
      return;
  }
  free((char *)block - ARCHRT_ALIGN);
}
