/*===- halide_memory_check.c - The runtime's kept Halide blocks ----------===*
 *
 * Calls runtime/src/halide_memory.c's halide_malloc / halide_free as a
 * kernel does: a 1 MiB block freed and asked for again comes back (kept
 * for reuse, its pages resident); a 96 MiB block, past the 64 MiB kept at
 * most, goes back to the system when freed (the process's resident memory
 * falls by most of it); of two kept blocks that fit, a thread gets back
 * the one it freed itself, not the one the other thread freed before it
 * (whose lines are in the other core's caches); a child forked while
 * another thread takes and frees kept blocks can take one itself (the
 * lock is not left held in it). Prints "ok ..." or "FAIL ..." per check.
 *
 *===---------------------------------------------------------------------===*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *halide_malloc(void *user_context, size_t size);
void halide_free(void *user_context, void *block);

enum { MIB = 1 << 20 };

/* This process's resident memory, KiB: smaps_rollup's Rss (summed from
 * the page tables, where status's VmRSS may lag by per-CPU counters). */
static long resident_kib(void) {
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Rss:", 4) == 0)
      kib = strtol(line + 4, NULL, 10);
  if (f)
    fclose(f);
  return kib;
}

static pthread_barrier_t step;

/* The second thread: a block of its own, freed after main's, then asked
 * for again; returns whether it came back. */
static void *other_thread(void *arg) {
  (void)arg;
  void *own = halide_malloc(NULL, MIB);
  memset(own, 2, MIB);
  pthread_barrier_wait(&step); /* main frees its block */
  pthread_barrier_wait(&step);
  halide_free(NULL, own);
  void *again = halide_malloc(NULL, MIB);
  halide_free(NULL, again);
  return (void *)(intptr_t)(again == own);
}

static atomic_int churning;

/* Takes and frees a kept block until told to stop. */
static void *churn(void *arg) {
  (void)arg;
  while (atomic_load(&churning))
    halide_free(NULL, halide_malloc(NULL, MIB));
  return NULL;
}

/* Forks up to `n` children while another thread churns kept blocks; each
 * child takes and frees one and exits, or dies of its alarm after 2 s
 * where it hangs on a lock the fork left held. Returns how many did not
 * exit 0: 0, or 1 at the first that did not (without the fork handlers,
 * about half of them hang). */
static int fork_while_churning(int n) {
  pthread_t thread;
  atomic_store(&churning, 1);
  if (pthread_create(&thread, NULL, churn, NULL) != 0)
    return n;
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    pid_t child = fork();
    if (child == 0) {
      alarm(2);
      halide_free(NULL, halide_malloc(NULL, MIB));
      _exit(0);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      bad = 1;
      break;
    }
  }
  atomic_store(&churning, 0);
  pthread_join(thread, NULL);
  return bad;
}

int main(void) {
  int failed = 0;
  size_t big = (size_t)96 * MIB;
  void *a = halide_malloc(NULL, MIB);
  memset(a, 1, MIB);
  halide_free(NULL, a);
  void *b = halide_malloc(NULL, MIB);
  printf("%s a 1 MiB block kept for the next request\n",
         b == a ? "ok" : (failed++, "FAIL"));
  halide_free(NULL, b);

  void *c = halide_malloc(NULL, big);
  memset(c, 1, big);
  long with = resident_kib();
  halide_free(NULL, c);
  long without = resident_kib();
  int given = with > 0 && without > 0 && with - without > (80 << 10);
  printf("%s a 96 MiB block given back when freed (resident %ld -> %ld "
         "KiB)\n", given ? "ok" : (failed++, "FAIL"), with, without);

  /* main's block is kept first, the other thread's after it. */
  pthread_t other;
  void *mine = halide_malloc(NULL, MIB), *same = NULL;
  memset(mine, 3, MIB);
  pthread_barrier_init(&step, NULL, 2);
  int started = pthread_create(&other, NULL, other_thread, NULL) == 0;
  if (started) {
    pthread_barrier_wait(&step);
    halide_free(NULL, mine);
    pthread_barrier_wait(&step);
    pthread_join(other, &same);
  }
  pthread_barrier_destroy(&step);
  /* (Only `same` tells: main's block, kept first, is main's first fit
   * with or without the preference.) */
  printf("%s a thread gets back the kept block it freed, not the other "
         "thread's\n", started && same ? "ok" : (failed++, "FAIL"));
  halide_free(NULL, halide_malloc(NULL, MIB));

  int bad = fork_while_churning(200);
  printf("%s 200 children forked while a thread takes kept blocks take "
         "one (%d did not)\n", bad == 0 ? "ok" : (failed++, "FAIL"), bad);
  printf("%d failed\n", failed);
  return failed != 0;
}
