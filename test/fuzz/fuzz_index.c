/*===- fuzz_index.c - Sharded checkpoints: the index file -----------------===*
 * Two valid shards of the tiny model sit beside the index (a.safetensors:
 * parameters at even positions of the table, b.safetensors: odd); the input
 * is model.safetensors.index.json. */
#include "fuzz_common.h"

static archrt_model *model;

static void write_shard(const char *name, int parity) {
  archrt_model_info info;
  archrt_model_info_get(model, &info);
  char *header = malloc(1 << 20);
  size_t n = 0, offset = 0;
  n += (size_t)snprintf(header + n, (1 << 20) - n, "{");
  for (int i = parity; i < info.n_tensors; i += 2) {
    archrt_param_info p;
    archrt_param_info_get(model, i, &p);
    size_t bytes = 4;
    n += (size_t)snprintf(header + n, (1 << 20) - n,
                          "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
                          i > 1 ? "," : "", p.source);
    for (int d = 0; d < p.ndim; ++d) {
      bytes *= (size_t)p.shape[d];
      n += (size_t)snprintf(header + n, (1 << 20) - n, "%s%lld", d ? "," : "",
                            (long long)p.shape[d]);
    }
    n += (size_t)snprintf(header + n, (1 << 20) - n,
                          "],\"data_offsets\":[%zu,%zu]}", offset,
                          offset + bytes);
    offset += bytes;
  }
  n += (size_t)snprintf(header + n, (1 << 20) - n, "}");
  uint8_t *file = calloc(1, 8 + n + offset);
  uint64_t hlen = n;
  memcpy(file, &hlen, 8);
  memcpy(file + 8, header, n);
  fuzz_write(name, file, 8 + n + offset);
  free(file);
  free(header);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_make_dir();
  if (archrt_model_create(&model))
    abort();
  write_shard("a.safetensors", 0);
  write_shard("b.safetensors", 1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write("model.safetensors.index.json", data, size);
  archrt_status st = archrt_load_safetensors(model, path);
  fuzz_expect_message(st);
  return 0;
}
