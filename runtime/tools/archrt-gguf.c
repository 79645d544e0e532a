/*===- archrt-gguf.c - What archc reads of a GGUF file's header -----------===*
 *
 *   archrt-gguf FILE.gguf
 *
 * Prints the GGUF header as the runtime's weights loader reads it
 * (gguf.h): the version, general.architecture, general.alignment, where
 * the tensor data starts, the architecture's shape keys present (those
 * the loader checks), and each tensor (by name: its type id, its
 * dims innermost first, its offset in the data section), one per line.
 * test/e2e/gguf-metadata.test compares it with @huggingface/gguf's reading
 * of the same files. A file the loader refuses gets its error and status 1.
 *
 *===---------------------------------------------------------------------===*/
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: archrt-gguf FILE.gguf\n");
    return 2;
  }
  archrt_mapping f;
  if (archrt_map_file(argv[1], &f)) {
    fprintf(stderr, "archrt-gguf: %s\n", archrt_last_error());
    return 1;
  }
  gguf_header h;
  char why[256];
  if (archrt_gguf_read_header(&f, &h, NULL, why, sizeof why)) {
    fprintf(stderr, "archrt-gguf: %s: %s\n", argv[1], why);
    munmap(f.data, f.size);
    return 1;
  }
  printf("version %u\n", h.version);
  printf("general.architecture %s\n", h.arch);
  printf("general.alignment %llu\n", (unsigned long long)h.alignment);
  printf("data %llu\n", (unsigned long long)h.data);
  for (int k = 0; k < M_COUNT; ++k)
    if (h.have[k])
      printf("%s%s %.17g\n", h.arch, archrt_gguf_meta_suffix[k], h.meta[k]);
  for (uint64_t i = 0; i < h.n_tensors; ++i) {
    const gguf_tensor *t = &h.tensors[i];
    printf("tensor %s type %u dims ", t->name, t->type);
    for (uint32_t k = 0; k < t->n_dims; ++k)
      printf("%s%llu", k ? "," : "", (unsigned long long)t->dims[k]);
    printf(" offset %llu\n", (unsigned long long)t->offset);
  }
  free(h.tensors);
  munmap(f.data, f.size);
  return 0;
}
