/*===- fuzz_gguf.c - GGUF checkpoints -------------------------------------===*
 * The input is a GGUF file for the tiny model (the seeds: its header and
 * tensor table); every load either succeeds or fails with a message. */
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init_loader();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write("w.gguf", data, size);
  archrt_status st = archrt_load_gguf(fuzz_model, path);
  fuzz_expect_message(st);
  return 0;
}
