/*===- model.c - Models, sequences, prefill and decode ---------------------===*
 *
 * Generic over the generated model: archrt_gen_model_desc says how big
 * everything is, archrt_gen_forward runs the kernels in order.
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int archrt_abi_version(void) { return ARCHRT_ABI_VERSION; }

/* Halide aborts on a negative count: clamp instead (the call has no
 * status to return). */
void archrt_set_num_threads(int n) {
  halide_set_num_threads(n < 0 ? 0 : n > 256 ? 256 : n);
}

int64_t archrt_param_numel(const archrt_gen_param *p) {
  int64_t n = 1;
  for (int i = 0; i < p->ndim; ++i)
    n *= p->shape[i];
  return n;
}

archrt_status archrt_model_create(archrt_model **out) {
  if (!out)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_model_create: out is NULL");
  archrt_install_error_handler();
  archrt_model *m = calloc(1, sizeof *m);
  if (!m)
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "archrt_model_create: out of memory");
  m->desc = &archrt_gen_model_desc;
  atomic_init(&m->refs, 1);
  *out = m;
  return ARCHRT_OK;
}

static void release_weights(archrt_model *m) {
  free(m->params);
  for (int i = 0; i < m->n_maps; ++i)
    munmap(m->maps[i].data, m->maps[i].size);
  free(m->maps);
  free(m->owned);
  m->params = NULL;
  m->maps = NULL;
  m->n_maps = 0;
  m->owned = NULL;
}

static void model_unref(archrt_model *m) {
  if (atomic_fetch_sub(&m->refs, 1) != 1)
    return;
  release_weights(m);
  free(m);
}

void archrt_model_free(archrt_model *m) {
  if (m)
    model_unref(m);
}

void archrt_model_set_weights(archrt_model *m, float **params,
                              archrt_mapping *maps, int n_maps, void *owned) {
  release_weights(m);
  m->params = params;
  m->maps = maps;
  m->n_maps = n_maps;
  m->owned = owned;
}

archrt_status archrt_model_info_get(const archrt_model *m,
                                    archrt_model_info *out) {
  if (!m || !out)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_model_info_get: NULL argument");
  const archrt_gen_model *d = m->desc;
  memset(out, 0, sizeof *out);
  out->name = d->name;
  out->spec_toml = d->spec_toml;
  out->vocab_size = d->vocab_size;
  out->d_model = d->d_model;
  out->n_layers = d->n_layers;
  out->n_heads = d->n_heads;
  out->n_kv_heads = d->n_kv_heads;
  out->head_dim = d->head_dim;
  out->d_ff = d->d_ff;
  out->max_seq_len = d->max_seq_len;
  out->n_tensors = d->n_params;
  for (int i = 0; i < d->n_params; ++i)
    out->n_params += archrt_param_numel(&d->params[i]);
  return ARCHRT_OK;
}

archrt_status archrt_param_info_get(const archrt_model *m, int32_t index,
                                    archrt_param_info *out) {
  if (!m || !out)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_param_info_get: NULL argument");
  if (index < 0 || index >= m->desc->n_params)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_param_info_get: index %d out of range [0, %d)",
                       index, m->desc->n_params);
  const archrt_gen_param *p = &m->desc->params[index];
  memset(out, 0, sizeof *out);
  out->name = p->name;
  out->source = p->source ? p->source : p->name;
  out->dtype = "F32";
  out->ndim = p->ndim;
  for (int i = 0; i < p->ndim; ++i)
    out->shape[i] = p->shape[i];
  return ARCHRT_OK;
}

archrt_status archrt_init_random(archrt_model *m, uint64_t seed) {
  if (!m)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT, "archrt_init_random: model is NULL");
  const archrt_gen_model *d = m->desc;
  int64_t total = 0;
  for (int i = 0; i < d->n_params; ++i)
    total += archrt_param_numel(&d->params[i]);
  size_t n_params = d->n_params > 0 ? (size_t)d->n_params : 1;
  float **params = calloc(n_params, sizeof *params);
  float *block = malloc((size_t)(total > 0 ? total : 1) * sizeof(float));
  if (!params || !block) {
    free(params);
    free(block);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                       "archrt_init_random: cannot allocate %lld floats",
                       (long long)total);
  }
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  float *p = block;
  for (int i = 0; i < d->n_params; ++i) {
    int64_t n = archrt_param_numel(&d->params[i]);
    params[i] = p;
    /* Norm weights (1-D) near 1, matrices uniform in +-0.5/sqrt(fan_in). */
    float amp = d->params[i].ndim == 1 ? 0.1f : 0.5f / (float)d->d_model;
    for (int64_t j = 0; j < n; ++j) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      float u = (float)((s * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
      p[j] = (d->params[i].ndim == 1 ? 1.0f : 0.0f) + amp * (2 * u - 1);
    }
    p += n;
  }
  archrt_model_set_weights(m, params, NULL, 0, block);
  return ARCHRT_OK;
}

/* ---- Sequences ----------------------------------------------------------*/

struct archrt_seq {
  archrt_model *model;
  int32_t capacity, length;
  int has_logits;
  float *kcache, *vcache, *logits;
  float **slots;
};

static void *alloc_floats(size_t n) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  void *p = aligned_alloc(64, bytes ? bytes : 64);
  if (p)
    memset(p, 0, bytes);
  return p;
}

void archrt_seq_free(archrt_seq *s) {
  if (!s)
    return;
  if (s->slots)
    for (int i = 0; i < s->model->desc->n_slots; ++i)
      free(s->slots[i]);
  free(s->slots);
  free(s->kcache);
  free(s->vcache);
  free(s->logits);
  archrt_model *m = s->model;
  free(s);
  model_unref(m);
}

archrt_status archrt_seq_create(archrt_model *m, int32_t max_tokens,
                                archrt_seq **out) {
  if (!m || !out)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_seq_create: NULL argument");
  const archrt_gen_model *d = m->desc;
  if (max_tokens < 0 || max_tokens > d->max_seq_len)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_seq_create: max_tokens %d outside [0, %d] "
                       "(the model's max_seq_len)",
                       max_tokens, d->max_seq_len);
  archrt_seq *s = calloc(1, sizeof *s);
  if (!s)
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "archrt_seq_create: out of memory");
  s->model = m;
  atomic_fetch_add(&m->refs, 1);
  s->capacity = max_tokens ? max_tokens : d->max_seq_len;
  size_t cache = (size_t)d->n_layers * (size_t)s->capacity * (size_t)d->kv_dim;
  s->kcache = alloc_floats(cache);
  s->vcache = alloc_floats(cache);
  s->logits = alloc_floats((size_t)d->vocab_size);
  s->slots = calloc((size_t)d->n_slots, sizeof *s->slots);
  int ok = s->kcache && s->vcache && s->logits && s->slots;
  for (int i = 0; ok && i < d->n_slots; ++i)
    ok = (s->slots[i] = alloc_floats((size_t)d->slot_width[i] *
                                     (size_t)d->max_chunk)) != NULL;
  if (!ok) {
    archrt_seq_free(s);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                       "archrt_seq_create: cannot allocate a KV cache of %zu "
                       "floats for %d tokens",
                       2 * cache, max_tokens);
  }
  *out = s;
  return ARCHRT_OK;
}

archrt_status archrt_seq_reset(archrt_seq *s) {
  if (!s)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT, "archrt_seq_reset: seq is NULL");
  s->length = 0;
  s->has_logits = 0;
  return ARCHRT_OK;
}

int32_t archrt_seq_length(const archrt_seq *s) { return s ? s->length : 0; }

const float *archrt_logits(const archrt_seq *s) {
  return s && s->has_logits ? s->logits : NULL;
}

archrt_status archrt_prefill(archrt_seq *s, const int32_t *tokens,
                             int32_t n) {
  if (!s || !tokens)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT, "archrt_prefill: NULL argument");
  archrt_model *m = s->model;
  const archrt_gen_model *d = m->desc;
  if (!m->params)
    return archrt_fail(ARCHRT_ERR_STATE,
                       "archrt_prefill: no weights loaded (call "
                       "archrt_load_weights first)");
  if (n <= 0)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_prefill: n_tokens must be positive, got %d", n);
  if (n > s->capacity - s->length)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_prefill: %d tokens do not fit: the sequence "
                       "holds %d of %d",
                       n, s->length, s->capacity);
  for (int32_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= d->vocab_size)
      return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                         "archrt_prefill: token %d at index %d is outside "
                         "the vocabulary [0, %d)",
                         tokens[i], i, d->vocab_size);
  for (int32_t done = 0; done < n;) {
    int32_t chunk = n - done < d->max_chunk ? n - done : d->max_chunk;
    archrt_gen_call call = {
        .params = m->params,
        .slots = s->slots,
        .kcache = s->kcache,
        .vcache = s->vcache,
        .cache_tokens = s->capacity,
        .tokens = tokens + done,
        .n_tokens = chunk,
        .pos = s->length,
        .logits = s->logits,
    };
    s->has_logits = 0;
    int rc = archrt_gen_forward(&call);
    if (rc != 0)
      return archrt_fail(ARCHRT_ERR_KERNEL, "kernel error %d: %s", rc,
                         archrt_kernel_error());
    s->length += chunk;
    done += chunk;
  }
  s->has_logits = 1;
  return ARCHRT_OK;
}

archrt_status archrt_decode(archrt_seq *s, int32_t token) {
  return archrt_prefill(s, &token, 1);
}
