/*===- error.c - Per-thread error messages --------------------------------===*/
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[4096];

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
