/*===- fuzz_safetensors.c - One .safetensors file, or any file sniffed -----===*
 * The first byte picks the entry point: archrt_load_safetensors or
 * archrt_load_weights (which sniffs safetensors vs llama2.c). */
#include "fuzz_common.h"

static archrt_model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_make_dir();
  if (archrt_model_create(&model))
    abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *path = fuzz_write("w.safetensors", data + 1, size - 1);
  archrt_status st = data[0] & 1 ? archrt_load_weights(model, path)
                                 : archrt_load_safetensors(model, path);
  fuzz_expect_message(st);
  return 0;
}
