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
#include <string.h>

static char kernel_error[1024];
static pthread_mutex_t kernel_error_lock = PTHREAD_MUTEX_INITIALIZER;

/* Halide may report from a worker thread, which does not know the host
 * thread whose call it runs: the message is kept globally. (Two host
 * threads whose kernels fail at the same time may each read the later
 * message.) */
static void on_halide_error(void *user_context, const char *msg) {
  (void)user_context;
  pthread_mutex_lock(&kernel_error_lock);
  snprintf(kernel_error, sizeof kernel_error, "%s", msg);
  pthread_mutex_unlock(&kernel_error_lock);
}

/* The last message, copied for the calling thread under the lock (a
 * worker may be writing the next). */
const char *archrt_kernel_error(void) {
  static _Thread_local char copy[sizeof kernel_error];
  pthread_mutex_lock(&kernel_error_lock);
  memcpy(copy, kernel_error, sizeof copy);
  pthread_mutex_unlock(&kernel_error_lock);
  return copy;
}

void archrt_install_error_handler(void) {
  halide_set_error_handler(on_halide_error);
}
