/*===- error.c - Per-thread error messages --------------------------------===*/
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[4096];
static char kernel_error[1024];
static pthread_mutex_t kernel_error_lock = PTHREAD_MUTEX_INITIALIZER;

const char *archrt_last_error(void) { return last_error; }

void archrt_clear_error(void) { last_error[0] = 0; }

archrt_status archrt_fail(archrt_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

void archrt_problem(archrt_problems *p, const char *fmt, ...) {
  p->count++;
  if (p->len + 8 >= sizeof p->buf)
    return;
  if (p->count > 1)
    p->len += (size_t)snprintf(p->buf + p->len, sizeof p->buf - p->len, "; ");
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(p->buf + p->len, sizeof p->buf - p->len, fmt, ap);
  va_end(ap);
  if (n > 0)
    p->len += (size_t)n;
  if (p->len >= sizeof p->buf)
    p->len = sizeof p->buf - 1;
}

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
