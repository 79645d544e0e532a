/* Preloaded into a host (LD_PRELOAD) in front of a compiled library, whose
 * kernels call halide_malloc through the dynamic linker: the call that
 * archtest_fail_in(n) names (the n-th from then on) returns NULL, as an
 * allocation the system refused, so that the kernel fails. Every other call
 * allocates; archtest_malloc_calls counts them all. */
#include <stdlib.h>

static long calls, fail_at = -1;

long archtest_malloc_calls(void) { return calls; }

void archtest_fail_in(long n) { fail_at = calls + n; }

void *halide_malloc(void *user_context, size_t size) {
  (void)user_context;
  if (++calls == fail_at)
    return NULL;
  void *p = NULL;
  return posix_memalign(&p, 64, size ? size : 1) ? NULL : p;
}

void halide_free(void *user_context, void *p) {
  (void)user_context;
  free(p);
}
