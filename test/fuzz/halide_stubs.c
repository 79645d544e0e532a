/*===- halide_stubs.c - The Halide runtime calls the archrt sources make ---===*
 * The fuzzed code never runs a kernel; these stand in for the Halide
 * runtime a model library carries. */
#include "HalideRuntime.h"

int halide_set_num_threads(int n) { return n; }

halide_error_handler_t halide_set_error_handler(halide_error_handler_t h) {
  (void)h;
  return 0;
}

int halide_host_cpu_count(void) { return 1; }

int halide_default_do_par_for(void *user_context, halide_task_t task, int min,
                              int extent, uint8_t *closure) {
  for (int i = 0; i < extent; ++i) {
    int status = task(user_context, min + i, closure);
    if (status)
      return status;
  }
  return 0;
}
