/*===- fuzz_common.h - Shared pieces of the runtime's fuzz harnesses -------===*
 *
 * The runtime harnesses link the archrt sources and the glue of a tiny
 * model (its kernels stubbed out: only loaders, the tokenizer and the
 * sampler run), all built with -fsanitize=fuzzer,address,undefined by
 * scripts/fuzz.sh. Inputs reach the loaders as files, as a user's would.
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHC_FUZZ_COMMON_H
#define ARCHC_FUZZ_COMMON_H

#include "archrt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A private directory for this process's input files (tmpfs when there). */
static char fuzz_dir[256];

static void fuzz_make_dir(void) {
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/archc-fuzz-XXXXXX", base);
  if (!mkdtemp(fuzz_dir))
    abort();
}

/* Writes `size` bytes to fuzz_dir/name; returns the path (static buffer). */
static const char *fuzz_write(const char *name, const uint8_t *data,
                              size_t size) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", fuzz_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
    abort();
  return path;
}

/* The tiny model the loader harnesses load into, and their start-up: a
 * private directory for the input files and the model. */
static archrt_model *fuzz_model;

static void fuzz_init_loader(void) {
  fuzz_make_dir();
  if (archrt_model_create(&fuzz_model))
    abort();
}

/* Every failure must leave a message. */
static void fuzz_expect_message(archrt_status st) {
  if (st != ARCHRT_OK && archrt_last_error()[0] == 0)
    abort();
}

#endif /* ARCHC_FUZZ_COMMON_H */
