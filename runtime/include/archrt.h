/*===- archrt.h - The C ABI of an archc-compiled model library -----------===*
 *
 * Every library that `archc compile` produces exports these functions. All
 * calls that can fail return an archrt_status; on failure,
 * archrt_last_error() returns a message naming the problem (per thread,
 * valid until the next failing call on that thread). Nothing here aborts
 * the host process on bad input.
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_H
#define ARCHRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARCHRT_ABI_VERSION 6

typedef enum archrt_status {
  ARCHRT_OK = 0,
  ARCHRT_ERR_INVALID_ARGUMENT = 1, /* null pointer, bad token, bad size */
  ARCHRT_ERR_IO = 2,               /* cannot open / map / read a file */
  ARCHRT_ERR_FORMAT = 3,           /* malformed weights or tokenizer file */
  ARCHRT_ERR_MISMATCH = 4,         /* weights do not match the model */
  ARCHRT_ERR_OUT_OF_MEMORY = 5,
  ARCHRT_ERR_STATE = 6,            /* e.g. prefill before weights loaded */
  ARCHRT_ERR_KERNEL = 7            /* a compiled kernel reported an error */
} archrt_status;

typedef struct archrt_model archrt_model;
typedef struct archrt_seq archrt_seq;
typedef struct archrt_tokenizer archrt_tokenizer;
typedef struct archrt_sampler archrt_sampler;

/* The message of the last failed call on this thread ("" if none). */
const char *archrt_last_error(void);
int archrt_abi_version(void);

/* ---- What the library was compiled from --------------------------------*/
typedef struct archrt_model_info {
  const char *name;
  const char *spec_toml; /* the spec text it was compiled from ("": IR) */
  int32_t vocab_size, d_model, n_layers, n_heads, n_kv_heads, head_dim;
  int32_t d_ff, max_seq_len;
  int64_t n_params;    /* scalar parameters in all tensors */
  int32_t n_tensors;   /* entries of the parameter table */
  /* Bytes a sequence's caches take per position it holds (the KV caches,
   * at their element type: archc compile --kv-type), and fixed (ring and
   * state caches). */
  int64_t cache_bytes_per_token, fixed_cache_bytes;
} archrt_model_info;

typedef struct archrt_param_info {
  const char *name;  /* archc's name, e.g. "model.norm.weight" */
  const char *dtype; /* "F32" */
  int32_t ndim;
  int64_t shape[4];
  /* The checkpoint tensor that holds it under the spec's naming scheme
   * (e.g. "transformer.ln_f.weight"); may be fused or transposed. */
  const char *source;
} archrt_param_info;

archrt_status archrt_model_create(archrt_model **out);
void archrt_model_free(archrt_model *model);
archrt_status archrt_model_info_get(const archrt_model *model,
                                    archrt_model_info *out);
archrt_status archrt_param_info_get(const archrt_model *model, int32_t index,
                                    archrt_param_info *out);

/* ---- Weights ------------------------------------------------------------
 * Safetensors (memory-mapped; F32 used in place, F16 and BF16 converted)
 * and llama2.c legacy checkpoints. Every tensor is checked against the
 * parameter table: a missing, unexpected or misshapen tensor is named.
 * Tensor names follow the spec's naming scheme ([weights] naming): fused
 * q/k/v or gate/up tensors are split and Conv1D weights transposed at load.
 * archrt_load_safetensors takes one .safetensors file, a sharded
 * checkpoint's model.safetensors.index.json, or a directory holding either
 * (the index first, else model.safetensors).
 * F32 safetensors and llama2.c files are used in place, mapped from the
 * file for as long as the model holds them: the file must not be rewritten
 * or truncated meanwhile (the model would read the new bytes, or fault on
 * pages past the new end).
 * A load replaces the model's weights only when it succeeds, and must not
 * run while another thread prefills or decodes a sequence of the model;
 * the sequences' caches keep the rows the old weights computed (reset
 * them). */
archrt_status archrt_load_safetensors(archrt_model *model, const char *path);
archrt_status archrt_load_llama2c(archrt_model *model, const char *path);
/* GGUF version 3 (llama.cpp): F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q4_K, Q5_K and Q6_K tensors converted to f32 at load, found under
 * llama.cpp's names (token_embd, blk.N.attn_q, ...) for its llama, qwen2,
 * qwen2moe, qwen3, qwen3moe, gemma2, gemma3 and phi3 architectures, the
 * q/k rows llama.cpp's converter permutes (its llama architecture's) put
 * back where the model rotates half-split; the metadata's shape keys
 * checked against the model. */
archrt_status archrt_load_gguf(archrt_model *model, const char *path);
/* Picks the loader from the path and the file's contents (a directory or
 * .json: safetensors; else the file's first bytes). */
archrt_status archrt_load_weights(archrt_model *model, const char *path);
/* Fills every parameter with seeded uniform noise (benchmarks). */
archrt_status archrt_init_random(archrt_model *model, uint64_t seed);

/* The threads the kernels' parallel loops run on: the caller and n - 1
 * workers of the runtime's, started at the first loop that needs them,
 * which spin up to 200 us for the next loop and then sleep (no spinning
 * where n exceeds the CPUs); 0 = one per core (negative counts are taken
 * as 0, counts above 256 as 256). Lowering the count ends the surplus
 * workers. */
void archrt_set_num_threads(int n);

/* ---- Sequences ----------------------------------------------------------
 * A sequence owns its KV cache for up to max_tokens positions (0 = the
 * model's max_seq_len). Prefill appends a prompt, decode appends one token;
 * both leave the logits of the last appended token in archrt_logits().
 * A sequence keeps its model alive: archrt_model_free may come before
 * archrt_seq_free, and the model is released with its last sequence.
 * The ring caches of sliding-window layers are shared memory mappings: a
 * process forked from the one that created a sequence must not use it
 * (parent and child would write the same pages).
 * A prefill or decode that fails in a kernel appends none of its tokens:
 * the sequence keeps its length and has no logits. A linear-attention
 * layer keeps a recurrent state, not positions, which such a call may have
 * updated, as a prompt run in several forward calls (longer than the
 * library's chunk) may have overwritten a sliding-window layer's ring past
 * the rows the sequence still needs:
 * the sequence then refuses calls (ARCHRT_ERR_STATE) until
 * archrt_seq_reset, which zeroes every state. */
archrt_status archrt_seq_create(archrt_model *model, int32_t max_tokens,
                                archrt_seq **out);
void archrt_seq_free(archrt_seq *seq);
archrt_status archrt_seq_reset(archrt_seq *seq);
/* Keeps a sequence's first n_tokens positions (0 <= n_tokens <= its
 * length): the next prefill or decode goes on from there, as if the later
 * ones had never been appended (a chat whose next prompt shares only a
 * prefix with what the sequence holds). It has no logits after it, unless
 * n_tokens is its length (nothing changes). A linear-attention layer's
 * state cannot go back, nor can a sliding-window layer's ring further
 * than the library's prefill chunk (max_chunk positions, the ring's slack)
 * from the furthest position written since the last reset: those refuse
 * with ARCHRT_ERR_STATE and leave the sequence as it was (reset it and
 * prefill again). n_tokens 0 is a reset. */
archrt_status archrt_seq_truncate(archrt_seq *seq, int32_t n_tokens);
int32_t archrt_seq_length(const archrt_seq *seq);
archrt_status archrt_prefill(archrt_seq *seq, const int32_t *tokens,
                             int32_t n_tokens);
archrt_status archrt_decode(archrt_seq *seq, int32_t token);
const float *archrt_logits(const archrt_seq *seq); /* vocab_size floats */

/* ---- Profile ------------------------------------------------------------
 * Where a sequence's prefill and decode calls spend their time, per kernel
 * call site of the model's forward function (in the order of its text; a
 * site in a loop, a mixture's experts, counts each call). While profiling
 * is on, every call of a site adds its wall time (the join of its
 * parallel loop included) and 1 to that site's figures. Turning it on
 * zeroes them; turning it off keeps them to read. Off by default: then a
 * kernel call costs two branches more. A matmul's site (a linear, a head
 * linear) also counts the work its calls did: token rows, FLOPs (2 K N a
 * row) and the bytes of weights read (once a call: a decode's GEMV
 * streams them); an attention's (causal, full or sliding-window; not a
 * sparse pattern's) its query-key pairs as rows, their dot products'
 * FLOPs (2 (head_dim + v_head_dim) a pair per query head) and the cache
 * rows its queries see, each once; so that GFLOP/s and GB/s follow.
 * Other kernels' are 0 (not counted); FLOPs saturate at INT64_MAX. */
typedef struct archrt_profile_site {
  const char *kernel; /* the kernel's symbol, e.g. archk_linear_... */
  const char *op;     /* what it computes and where the spec declares it */
  int64_t calls;
  double seconds;
  int64_t rows;  /* token rows (matmuls), query-key pairs (attention) */
  int64_t flops; /* floating-point operations */
  int64_t bytes; /* weights and biases (matmuls), cache rows (attention) */
} archrt_profile_site;
archrt_status archrt_seq_set_profiling(archrt_seq *seq, int on);
/* Sets *n_sites to the model's number of sites and fills the first
 * min(n, *n_sites) of `sites` (which may be NULL when n is 0). */
archrt_status archrt_seq_profile(const archrt_seq *seq,
                                 archrt_profile_site *sites, int32_t n,
                                 int32_t *n_sites);

/* ---- Sampling -----------------------------------------------------------
 * temperature 0 is greedy (argmax); otherwise softmax(logits / T), then
 * nucleus filtering when 0 < top_p < 1. Seeded: same seed, same tokens.
 * archrt_sample reads the sampler's vocab_size floats from `logits`; NaN or
 * +inf logits, or all -inf, are an error (no token is made up). */
archrt_status archrt_sampler_create(int32_t vocab_size, float temperature,
                                    float top_p, uint64_t seed,
                                    archrt_sampler **out);
void archrt_sampler_free(archrt_sampler *sampler);
archrt_status archrt_sample(archrt_sampler *sampler, const float *logits,
                            int32_t *token);

/* ---- Tokenizer: Hugging Face tokenizer.json or llama2.c tokenizer.bin ---*
 * The format is told from the file. For a tokenizer.json, `bos` adds the
 * post-processor's special tokens (Hugging Face's add_special_tokens),
 * `eos` is refused and ids must be below vocab_size. When max_tokens is
 * too small the error leaves the count needed in *n_tokens. A GGUF file's
 * SentencePiece tokenizer splits its unknown, control and user-defined
 * tokens out of the text first, as llama.cpp tokenizes a prompt
 * (parse_special): text that spells "</s>" is that token. Decoding
 * applies the decoders to one token; the whole-text ones (Strip after
 * Fuse, Metaspace's prefix) at the start: prev < 0 or the BOS the
 * post-processor adds. A GGUF file's SentencePiece tokenizer adds BOS for
 * `bos` where its add_bos_token is true (the default). A tokenizer serves
 * one call at a time. */
archrt_status archrt_tokenizer_load(const char *path, int32_t vocab_size,
                                    archrt_tokenizer **out);
void archrt_tokenizer_free(archrt_tokenizer *tok);
/* Encodes UTF-8 text; writes at most max_tokens ids and the count. */
archrt_status archrt_tokenizer_encode(const archrt_tokenizer *tok,
                                      const char *text, int bos, int eos,
                                      int32_t *tokens, int32_t max_tokens,
                                      int32_t *n_tokens);
/* Whether generation ends at `token`: tokenizer.bin's BOS and EOS (ids 1
 * and 2, as llama2.c); a GGUF SentencePiece tokenizer's BOS, EOS, end of
 * turn and end of message, and its special tokens that llama.cpp ends at
 * by name (<end_of_turn>, <|im_end|>, <|eot_id|>, ...); or a
 * tokenizer.json's special tokens (its end-of-text, end-of-turn, BOS, ...:
 * Llama 3's ids 1 and 2 are '"' and '#'). 0 for NULL or an id outside the
 * tokenizer. */
int archrt_tokenizer_is_stop(const archrt_tokenizer *tok, int32_t token);
/* The text of `token` following `prev` (strips the space after BOS where
 * the tokenizer put one before the text, turns <0xXX> byte tokens into
 * bytes). Valid until the next call. */
const char *archrt_tokenizer_decode(archrt_tokenizer *tok, int32_t prev,
                                    int32_t token);

#ifdef __cplusplus
}
#endif

#endif /* ARCHRT_H */
