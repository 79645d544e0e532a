/*===- internal.h - Runtime internals shared across runtime/src ----------===*/
#ifndef ARCHRT_INTERNAL_H
#define ARCHRT_INTERNAL_H

#include "archrt.h"
#include "archrt_gen.h"

#include <stdatomic.h>
#include <stddef.h>

/* A memory-mapped file. */
typedef struct archrt_mapping {
  void *data;
  size_t size;
} archrt_mapping;

struct archrt_model {
  const archrt_gen_model *desc;
  /* The host's handle and each live sequence hold one reference: freeing
   * the model before its sequences is safe (the last one releases it). */
  atomic_int refs;
  /* n_params loaded, then n_prepared prepared pointers; NULL until weights
   * are loaded. */
  float **params;
  float *prepared; /* the prepared weights' storage */
  /* What the current weights live in (released on reload and free). */
  archrt_mapping *maps; /* n_maps files (shards), malloc'd */
  int n_maps;
  void *owned; /* converted / assembled / generated tensors */
};

/* Opens a regular file for reading (anything else is an error, without
 * blocking) and gives its size. */
archrt_status archrt_open_file(const char *path, int *fd, size_t *size);
/* Maps a non-empty regular file read-only. */
archrt_status archrt_map_file(const char *path, archrt_mapping *out);

/* Records a formatted message as this thread's last error; returns status. */
archrt_status archrt_fail(archrt_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void archrt_clear_error(void);
/* The message a Halide kernel reported last, if any. */
const char *archrt_kernel_error(void);
void archrt_install_error_handler(void);

/* Replaces the model's weights with `params` (n_params pointers, malloc'd)
 * once the prepared weights are computed from them, taking ownership of
 * `params`, `maps` (each munmap'd later, the array free'd) and `owned`
 * (free'd later). On failure it releases them and keeps the old weights. */
archrt_status archrt_model_set_weights(archrt_model *m, float **params,
                                       archrt_mapping *maps, int n_maps,
                                       void *owned);

/* Gives back the pages wholly inside [p, p + bytes) (madvise DONTNEED: a
 * private file mapping's read back from the file, anonymous ones as
 * zeros). */
void archrt_drop_pages(const void *p, size_t bytes);

/* A loaded tensor whose conversion to f32 waits for preparation's first
 * read of it (archrt_gen_acquire): `fill` writes the parameter's floats to
 * `dst` from what `ctx` holds, which stays valid through
 * archrt_model_set_weights_deferred. */
typedef struct archrt_deferred {
  float *dst;
  void (*fill)(const void *ctx, float *dst);
  const void *ctx;
  int done;
} archrt_deferred;

/* archrt_model_set_weights, where the `n_deferred` params[i] that are
 * `deferred` destinations (deferrable parameters, in `owned`; none empty)
 * are filled only when preparation first reads them, each released after
 * its last read: so the converted f32 of one tensor at a time, not of the
 * whole checkpoint, is resident beside the prepared weights. `deferred`
 * stays the caller's. */
archrt_status archrt_model_set_weights_deferred(
    archrt_model *m, float **params, archrt_mapping *maps, int n_maps,
    void *owned, archrt_deferred *deferred, int n_deferred);

/* Tokenizers made by other loaders (they own the text, the pieces, the
 * scores and the layout's arrays from the call on, on failure too): the
 * text of a tokenizer.json, or SentencePiece pieces (space for U+2581) and
 * scores in a layout. */
archrt_status archrt_tokenizer_from_json(char *text, size_t size,
                                         const char *path, int32_t vocab_size,
                                         archrt_tokenizer **out);
/* A SentencePiece vocabulary's layout (llama.cpp's GGUF metadata). */
typedef struct archrt_spm_layout {
  int32_t bos, eos;     /* ids, -1 for none */
  int32_t eot, eom;     /* end of turn, of message: -1 for none */
  int add_bos;          /* encode's `bos` adds BOS (tokenizer.ggml.add_bos_token) */
  int add_space;        /* a space before each text run (add_space_prefix) */
  int rstrip;           /* special tokens take the white space after them
                           (llama.cpp's rule for models named Phi-3) */
  uint8_t *types;       /* each piece's token type: 1 normal, 2 unknown,
                           3 control, 4 user-defined, 5 unused, 6 byte */
  char **special_text;  /* the file's own text of each type 2, 3 and 4
                           piece (U+2581 kept), NULL elsewhere: text is
                           split at them first */
} archrt_spm_layout;
archrt_status archrt_tokenizer_from_pieces(const char *path, char **pieces,
                                           float *scores, int32_t n,
                                           archrt_spm_layout *layout,
                                           archrt_tokenizer **out);
/* The tokenizer in a GGUF file's metadata (gguf.c). */
archrt_status archrt_gguf_tokenizer(const char *path, int32_t vocab_size,
                                    archrt_tokenizer **out);

/* Product of a parameter's dims. */
int64_t archrt_param_numel(const archrt_gen_param *p);

/* Whether a loader defers converting parameter `p` (deferrable, and not
 * empty: deferred destinations are told apart by address). */
static inline int deferred_param(const archrt_gen_param *p) {
  return p->deferrable && archrt_param_numel(p) > 0;
}

/* Gives each parameter without storage yet (params[i] NULL) its floats in
 * `block`: those a loader converts now first, then the deferred ones, so
 * that writing the first touches only their pages (`block` may be in huge
 * pages: norms written among the matrices would fault in the matrices'). */
void archrt_place_params(const archrt_gen_model *d, float **params,
                         float *block);

/* n floats (free() them), 64-byte aligned; from 2 MiB up, 2 MiB aligned
 * and advised onto transparent huge pages (MADV_HUGEPAGE): streamed
 * weights and caches on 4 KiB pages read at about half the bandwidth on
 * the machines measured, their TLB misses the limit (docs/performance.md). */
float *archrt_alloc_floats(size_t n);

/* A growable message listing several problems. */
typedef struct archrt_problems {
  char buf[2048];
  size_t len;
  int count;
} archrt_problems;
void archrt_problem(archrt_problems *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* ARCHRT_INTERNAL_H */
