/*===- gguf.h - A GGUF file's header, metadata and tensor table ----------===*
 *
 * What archc reads of a GGUF file before any tensor data: the version,
 * general.architecture and general.alignment, that architecture's shape
 * keys, and the tensor table (names, types, dims innermost first,
 * offsets), every length and offset checked against the file. The weights
 * loader (gguf.c) checks it against a model; archrt-gguf prints it, for
 * comparison with other GGUF readers (test/e2e/gguf-metadata.test).
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_GGUF_H
#define ARCHRT_GGUF_H

#include "internal.h"

#include "gguf_read.h"

typedef struct gguf_tensor {
  char name[GGUF_MAX_NAME];
  uint32_t n_dims, type;
  uint64_t dims[4];
  uint64_t offset;   /* from the data section's start */
  int64_t numel;
  size_t bytes;
  int named; /* some parameter's GGUF name (whatever its shape) */
  int used;  /* parameters read from it (a stack's experts: each) */
} gguf_tensor;

/* Orders tensors by name (qsort, bsearch). */
static inline int gguf_by_name(const void *a, const void *b) {
  return strcmp(((const gguf_tensor *)a)->name, ((const gguf_tensor *)b)->name);
}

/* The metadata the model's shape is checked against: the architecture's
 * name + suffix ("llama.embedding_length"). */
enum { M_EMBED, M_BLOCKS, M_HEADS, M_KV_HEADS, M_FFN, M_COUNT };
extern const char *const archrt_gguf_meta_suffix[M_COUNT];

typedef struct gguf_header {
  uint32_t version;
  char arch[64];              /* general.architecture; "" where absent */
  uint64_t alignment;         /* general.alignment, 32 where absent */
  double meta[M_COUNT];       /* the architecture's shape keys ... */
  int have[M_COUNT];          /* ... where present */
  gguf_tensor *tensors;       /* n_tensors, sorted by name (malloc'd) */
  uint64_t n_tensors;
  uint64_t data;              /* the data section's offset in the file */
} gguf_header;

/* The architectures whose GGUF files the weights loader reads: llama.cpp
 * names their tensors alike (token_embd, blk.N.attn_q, ...). */
extern const char *const archrt_gguf_archs[];

/* Reads `f`'s header into `h` (h->tensors to free) and returns
 * ARCHRT_OK; or returns ARCHRT_ERR_FORMAT / ARCHRT_ERR_OUT_OF_MEMORY
 * with the reason in `why` and nothing to free. With `archs` (a NULL-ended
 * list), a file of another general.architecture is refused as soon as the
 * metadata is read (before its tensor table, whose types that
 * architecture's files may use and archc does not read). */
archrt_status archrt_gguf_read_header(const archrt_mapping *f, gguf_header *h,
                                      const char *const *archs, char *why,
                                      size_t cap);

#endif
