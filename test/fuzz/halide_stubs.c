/*===- halide_stubs.c - The Halide runtime calls the archrt sources make ---===*
 * The fuzzed code never runs a kernel; these stand in for the Halide
 * runtime a model library carries. */
#include "HalideRuntime.h"

int halide_set_num_threads(int n) { return n; }

halide_error_handler_t halide_set_error_handler(halide_error_handler_t h) {
  (void)h;
  return 0;
}
