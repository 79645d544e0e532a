/*===- archrt_gen.h - Contract between the runtime and generated glue ----===*
 *
 * `archc` emits one C file per model that defines archrt_gen_model (the
 * model's parameter table and sizes) and archrt_gen_forward (the call
 * order of its kernels). The runtime in runtime/src is generic over them.
 * This header is internal to a model library: hosts use archrt.h.
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_GEN_H
#define ARCHRT_GEN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "HalideRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parameter, and where a checkpoint keeps it (arch.weight's `from`): a
 * NULL source is the tensor `name` of this shape. Otherwise the tensor
 * `source` of source_shape, transposed first if `transpose`; rows[0] > 0
 * takes rows g * rows[1] + rows[2] ..< + rows[3] for g < rows[0]. */
typedef struct archrt_gen_param {
  const char *name;
  int32_t ndim;
  int64_t shape[4];
  const char *source;
  int32_t source_ndim;
  int64_t source_shape[4];
  int32_t transpose;
  int64_t rows[4];
  /* Read only by archrt_gen_prepare, which releases it once read. */
  int32_t prepare_only;
  /* prepare_only, and acquired before archrt_gen_prepare first reads it
   * (archrt_gen_acquire): a loader may convert it only then. */
  int32_t deferrable;
  /* Bytes per element of a prepared weight: 2 (f16, bf16: a 16-bit
   * weight type) or 4 (0 reads as 4). Loaded weights are f32. */
  int32_t elem_bytes;
} archrt_gen_param;

/* A cache (arch.cache) the runtime allocates per sequence, zeroed: one
 * row of row_elems elements of elem_bytes per position it keeps. */
enum {
  ARCHRT_GEN_CACHE_TOKENS = 0, /* positions 0 ..< capacity */
  ARCHRT_GEN_CACHE_RING = 1,   /* the last capacity positions */
  ARCHRT_GEN_CACHE_STATE = 2,  /* one row, however many positions */
};
typedef struct archrt_gen_cache {
  const char *name;
  int32_t layout;   /* ARCHRT_GEN_CACHE_* */
  int32_t capacity; /* positions (tokens, ring); 0 for a state */
  int64_t row_elems;
  int32_t elem_bytes;
} archrt_gen_cache;

/* A kernel call of archrt_gen_forward (its site, in call order): the
 * kernel's symbol and what it computes, as the glue's comment names it
 * ("linear layers.0 (spec.toml:15:1)"), and the FLOPs of each of the rows
 * ARCHRT_CALL counts: a matmul's (a linear, a head linear) 2 K N a token
 * row, an attention's 2 (head_dim + v_head_dim) per query head a
 * query-key pair (its dot products); 0 for other kernels (their work not
 * counted). */
typedef struct archrt_gen_site {
  const char *kernel;
  const char *op;
  int64_t flops_per_row;
} archrt_gen_site;

/* archrt_gen_model's rope_styles bits. */
enum {
  ARCHRT_GEN_ROPE_HALF_SPLIT = 1,  /* pairs (i, i + rotary_dim / 2) */
  ARCHRT_GEN_ROPE_INTERLEAVED = 2, /* pairs (2i, 2i + 1) */
};

typedef struct archrt_gen_model {
  const char *name;
  const char *spec_toml;
  int32_t vocab_size, d_model, n_layers, n_heads, n_kv_heads, head_dim;
  int32_t d_ff, max_seq_len;
  int32_t max_chunk; /* most tokens one forward call takes */
  /* The rotations the forward pass runs (its RoPE kernels' styles): a
   * loader whose checkpoint format permuted q/k rows for one of them (a
   * GGUF llama file's) needs to know which, whatever the source (a spec
   * or IR). */
  int32_t rope_styles; /* ARCHRT_GEN_ROPE_* bits; 0: no RoPE */
  int32_t n_params; /* loaded from checkpoints */
  const archrt_gen_param *params;
  /* Weights archrt_gen_prepare computes from the loaded ones (fused,
   * re-laid out); only name, ndim and shape are set. */
  int32_t n_prepared;
  const archrt_gen_param *prepared;
  /* Hugging Face's base-model prefix ("transformer."): checkpoints saved
   * from the bare model leave it out of their names. NULL: hf-llama. */
  const char *checkpoint_prefix;
  int32_t n_slots;           /* activation buffers */
  const int64_t *slot_width; /* floats per token in each */
  /* 1 where a slot holds a context's rows (naive MLA's keys and values):
   * as many rows as the sequence's positions, not max_chunk. */
  const uint8_t *slot_context;
  /* Floats of per-call scratch for weight-only work left in the forward
   * function (when arch-hoist-param-prep is disabled). */
  int64_t scratch_floats;
  int32_t n_caches;
  const archrt_gen_cache *caches;
  int32_t n_sites; /* kernel calls in archrt_gen_forward's text */
  const archrt_gen_site *sites;
} archrt_gen_model;

/* State of one forward call over tokens[0, n_tokens) at positions
 * pos .. pos + n_tokens - 1; caches[i] is the sequence's cache i. */
typedef struct archrt_gen_call {
  float *const *params; /* n_params loaded, then n_prepared prepared */
  float *const *slots;
  float *scratch;       /* scratch_floats */
  float *const *caches;
  const int32_t *tokens;
  int32_t n_tokens, pos;
  float *logits;
  /* Positions each tokens cache holds: a head-major cache's head stride
   * is capacity x head_dim elements. */
  int32_t capacity;
  /* NULL, or ARCHRT_GEN_PROFILE_FIELDS per site: the nanoseconds its
   * calls took, their count, their rows and their bytes, which
   * ARCHRT_CALL adds to (archrt_seq_set_profiling). */
  int64_t *profile;
} archrt_gen_call;

extern const archrt_gen_model archrt_gen_model_desc;
int archrt_gen_forward(const archrt_gen_call *call);
/* Fills params[n_params ..] from params[0 .. n_params): 0, a kernel's
 * error code, or ARCHRT_GEN_NO_MEMORY for its temporaries. */
int archrt_gen_prepare(float *const *params);
#define ARCHRT_GEN_NO_MEMORY (-1000)
/* Called by archrt_gen_prepare before it first reads a weight marked
 * deferrable: a tensor whose conversion the loader deferred is converted
 * now (runtime/src/internal.h, archrt_model_set_weights_deferred). */
void archrt_gen_acquire(const float *p, int64_t n);
/* Called by archrt_gen_prepare once it has read the last of a weight
 * marked prepare_only: its memory may go (the runtime's, not the glue's). */
void archrt_gen_release(const float *p, int64_t n);
/* A mixture of experts' routed pairs sorted by expert (archk.dispatch):
 * from experts[t * k + j] (each in [0, n_experts); others are clamped),
 * offsets[e] ..< offsets[e + 1] are expert e's rows of the sorted order,
 * rows[r] the token of sorted row r, and slots[t * k + j] the sorted row
 * of pair (t, j). A counting sort: linear time, stable (an expert's rows in
 * token order). */
void archrt_gen_moe_dispatch(const int32_t *experts, int32_t tokens,
                             int32_t k, int32_t n_experts, int32_t *offsets,
                             int32_t *rows, int32_t *slots);

/* Describes an array of up to 3 dims (innermost first; a 0 extent ends
 * the list) in `b` and returns it. Strides of 0 make it dense; a view (some
 * columns of a wider token-major array, a window of a cache) gives all. */
static inline halide_buffer_t *archrt_buf(halide_buffer_t *b,
                                          halide_dimension_t *d, void *host,
                                          uint8_t code, uint8_t bits,
                                          int32_t e0, int32_t s0, int32_t e1,
                                          int32_t s1, int32_t e2, int32_t s2) {
  int32_t ext[3] = {e0, e1, e2}, str[3] = {s0, s1, s2}, stride = 1, n = 0;
  for (; n < 3 && ext[n] > 0; ++n) {
    d[n].min = 0;
    d[n].extent = ext[n];
    d[n].stride = str[n] ? str[n] : stride;
    d[n].flags = 0;
    stride *= ext[n];
  }
  b->device = 0;
  b->device_interface = 0;
  b->host = (uint8_t *)host;
  b->flags = 0;
  b->type.code = code;
  b->type.bits = bits;
  b->type.lanes = 1;
  b->dimensions = n;
  b->dim = d;
  b->padding = 0;
  return b;
}

#define ARCHRT_F32(i, p, e0, e1, e2)                                           \
  archrt_buf(&B[i], D[i], (p), halide_type_float, 32, e0, 0, e1, 0, e2, 0)
#define ARCHRT_STRIDED(i, p, e0, s0, e1, s1, e2, s2)                           \
  archrt_buf(&B[i], D[i], (p), halide_type_float, 32, e0, s0, e1, s1, e2, s2)
#define ARCHRT_I32(i, p, e0, e1)                                               \
  archrt_buf(&B[i], D[i], (void *)(p), halide_type_int, 32, e0, 0, e1, 0, 0, 0)
/* A 16-bit float buffer (an f16 or bf16 cache): CODE halide_type_float or
 * halide_type_bfloat; strides 0 where dense. */
#define ARCHRT_F16(i, p, code, e0, s0, e1, s1, e2, s2)                         \
  archrt_buf(&B[i], D[i], (p), code, 16, e0, s0, e1, s1, e2, s2)
/* CLOCK_MONOTONIC in nanoseconds (ARCHRT_CALL's clock). */
int64_t archrt_gen_now_ns(void);
/* Query-key pairs a causal attention call scores: query rows at
 * positions pos .. pos + n - 1, each over its last `window` positions
 * (0: all of them), i.e. the sum of min(window, p + 1) over those p. */
static inline int64_t archrt_gen_pairs(int64_t pos, int64_t n,
                                       int64_t window) {
  int64_t a = pos + 1, b = pos + n; /* the rows' p + 1 */
  if (window <= 0 || b <= window)
    return (a + b) * n / 2;
  if (a >= window)
    return n * window;
  return (a + window) * (window - a + 1) / 2 + (b - window) * window;
}
/* Positions such a call's rows see, each counted once. */
static inline int64_t archrt_gen_keys(int64_t pos, int64_t n,
                                      int64_t window) {
  return window > 0 && window - 1 < pos ? window + n - 1 : pos + n;
}
/* Profile counters a site: nanoseconds, calls, rows, bytes. */
#define ARCHRT_GEN_PROFILE_FIELDS 4
/* Adds a kernel call begun at `start_ns` to site `site`'s profile
 * counters: its wall time, one call, `rows` and `bytes`. */
void archrt_gen_profile_add(int64_t *profile, int site, int64_t start_ns,
                            int64_t rows, int64_t bytes);
/* archrt_gen_forward's kernel call at site `site` (a constant) over
 * `rows` rows of its work (a matmul's token rows, an attention's
 * query-key pairs; 0 where its work is not counted) reading `bytes` (a
 * matmul's weights, an attention's cache rows, each once): returns the
 * kernel's error; with call `c`'s profile on, adds the call's wall time
 * (its parallel loop's join included), one call, its rows and its bytes
 * to the site's (rows and bytes evaluated only then). (The call written
 * once, the counting a call: the glue is compiled at -O0, and with the
 * counting written out at every site a 70B spec's glue compiled 18%
 * slower.) */
#define ARCHRT_CALL(site, rows, bytes, call)                                   \
  do {                                                                         \
    int64_t t_ = c->profile ? archrt_gen_now_ns() : 0;                         \
    int rc_ = (call);                                                          \
    if (c->profile)                                                            \
      archrt_gen_profile_add(c->profile, (site), t_, (rows), (bytes));         \
    if (rc_ != 0)                                                              \
      return rc_;                                                              \
  } while (0)
/* archrt_gen_prepare's kernel call: returns the kernel's error. */
#define ARCHRT_CHECK(call)                                                     \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0)                                                              \
      return rc_;                                                              \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif /* ARCHRT_GEN_H */
