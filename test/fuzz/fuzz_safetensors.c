/*===- fuzz_safetensors.c - One .safetensors file, or any file sniffed -----===*
 * The first byte picks the entry point: archrt_load_safetensors or
 * archrt_load_weights (which sniffs safetensors vs llama2.c). */
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init_loader();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *path = fuzz_write("w.safetensors", data + 1, size - 1);
  archrt_status st = data[0] & 1 ? archrt_load_weights(fuzz_model, path)
                                 : archrt_load_safetensors(fuzz_model, path);
  fuzz_expect_message(st);
  return 0;
}
