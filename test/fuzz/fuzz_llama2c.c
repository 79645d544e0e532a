/*===- fuzz_llama2c.c - llama2.c checkpoints ------------------------------===*
 * The input is a checkpoint for the tiny model; a load that succeeds is
 * followed by a prefill, so bound pointers are used. */
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init_loader();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write("w.bin", data, size);
  archrt_status st = archrt_load_llama2c(fuzz_model, path);
  fuzz_expect_message(st);
  return 0;
}
