/*===- kernel_error.c - Messages of the Halide kernels -------------------===*
 *
 * The Halide runtime reports a kernel's failure through its error handler;
 * the runtime keeps the last message for archrt_last_error. Apart from
 * error.c so that the runtime's Halide-free parts (the tokenizers, for
 * archrt-tokenize) link without the Halide runtime.
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <pthread.h>
#include <stdio.h>

static char kernel_error[1024];
static pthread_mutex_t kernel_error_lock = PTHREAD_MUTEX_INITIALIZER;

/* Halide may report from a worker thread: keep the message globally. */
static void on_halide_error(void *user_context, const char *msg) {
  (void)user_context;
  pthread_mutex_lock(&kernel_error_lock);
  snprintf(kernel_error, sizeof kernel_error, "%s", msg);
  pthread_mutex_unlock(&kernel_error_lock);
}

const char *archrt_kernel_error(void) { return kernel_error; }

void archrt_install_error_handler(void) {
  halide_set_error_handler(on_halide_error);
}
