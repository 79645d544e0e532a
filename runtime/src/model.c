/*===- model.c - Models, sequences, prefill and decode ---------------------===*
 *
 * Generic over the generated model: archrt_gen_model_desc says how big
 * everything is, archrt_gen_forward runs the kernels in order.
 *
 *===---------------------------------------------------------------------===*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int archrt_abi_version(void) { return ARCHRT_ABI_VERSION; }

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

static void release(float **params, float *prepared, archrt_mapping *maps,
                    int n_maps, void *owned) {
  free(params);
  free(prepared);
  for (int i = 0; i < n_maps; ++i)
    munmap(maps[i].data, maps[i].size);
  free(maps);
  free(owned);
}

static void release_weights(archrt_model *m) {
  release(m->params, m->prepared, m->maps, m->n_maps, m->owned);
  m->params = NULL;
  m->prepared = NULL;
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

/* Gives the pages wholly inside a weight that only archrt_gen_prepare
 * reads back to the system once it has read it, so that its prepared form
 * replaces it instead of doubling resident memory, at any time during
 * preparation. Mapped checkpoint pages are dropped (clean, re-readable);
 * converted or generated ones freed (they would read back as zeros: the
 * runtime forgets the pointer). Pages shared with another tensor stay. */
void archrt_gen_release(const float *p, int64_t n) {
  archrt_drop_pages(p, (size_t)n * sizeof *p);
}

void archrt_drop_pages(const void *p, size_t bytes) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t begin = ((uintptr_t)p + page - 1) & ~(page - 1);
  uintptr_t end = ((uintptr_t)p + bytes) & ~(page - 1);
  if (end > begin)
    madvise((void *)begin, end - begin, MADV_DONTNEED);
}

/* An expert index clamped into [0, n): the route kernel's are in range. */
static int32_t expert_of(int32_t e, int32_t n) {
  return e < 0 ? 0 : e >= n ? n - 1 : e;
}

void archrt_gen_moe_dispatch(const int32_t *experts, int32_t tokens,
                             int32_t k, int32_t n_experts, int32_t *offsets,
                             int32_t *rows, int32_t *slots) {
  int32_t pairs = tokens * k;
  for (int32_t e = 0; e <= n_experts; ++e)
    offsets[e] = 0;
  for (int32_t i = 0; i < pairs; ++i)
    ++offsets[expert_of(experts[i], n_experts) + 1];
  for (int32_t e = 0; e < n_experts; ++e)
    offsets[e + 1] += offsets[e];
  /* offsets[e] counts up as expert e's rows are placed, then is restored. */
  for (int32_t i = 0; i < pairs; ++i) {
    int32_t r = offsets[expert_of(experts[i], n_experts)]++;
    rows[r] = i / k;
    slots[i] = r;
  }
  for (int32_t e = n_experts; e > 0; --e)
    offsets[e] = offsets[e - 1];
  offsets[0] = 0;
}

/* Reads every page of `p`. On the VMs measured (docs/performance.md) the
 * first read of memory just written runs at about a third of the read
 * bandwidth; paying it at load keeps the first forward call as fast as the
 * next ones. */
static void read_once(const float *p, int64_t n) {
  volatile float sink = 0;
  for (int64_t i = 0; i < n; i += 1024)
    sink += p[i];
  (void)sink;
}

float *archrt_alloc_floats(size_t n) {
  const size_t huge = (size_t)2 << 20;
  size_t bytes = n * sizeof(float);
  size_t align = bytes >= huge ? huge : 64;
  bytes = bytes ? (bytes + align - 1) / align * align : 64;
  float *p = aligned_alloc(align, bytes);
  if (p && align == huge)
    madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

/* The floats prepared weight `p` takes: its bytes rounded up to 64. */
static int64_t prepared_floats(const archrt_gen_param *p) {
  int64_t bytes = archrt_param_numel(p) * (p->elem_bytes ? p->elem_bytes : 4);
  return (bytes + 63) / 64 * 16;
}

void archrt_place_params(const archrt_gen_model *d, float **params,
                         float *block) {
  for (int later = 0; later < 2; ++later)
    for (int i = 0; i < d->n_params; ++i)
      if (!params[i] && !deferred_param(&d->params[i]) == !later) {
        params[i] = block;
        block += archrt_param_numel(&d->params[i]);
      }
}

/* The deferred conversions of the preparation this thread runs. */
static _Thread_local struct {
  archrt_deferred *at;
  int n;
} pending;

static int by_dst(const void *a, const void *b) {
  const float *x = ((const archrt_deferred *)a)->dst,
              *y = ((const archrt_deferred *)b)->dst;
  return x < y ? -1 : x > y;
}

void archrt_gen_acquire(const float *p, int64_t n) {
  (void)n;
  archrt_deferred key = {(float *)(uintptr_t)p, NULL, NULL, 0};
  archrt_deferred *e =
      pending.n ? bsearch(&key, pending.at, (size_t)pending.n, sizeof key,
                          by_dst)
                : NULL;
  if (e && !e->done) {
    e->fill(e->ctx, e->dst);
    e->done = 1;
  }
}

archrt_status archrt_model_set_weights(archrt_model *m, float **params,
                                       archrt_mapping *maps, int n_maps,
                                       void *owned) {
  return archrt_model_set_weights_deferred(m, params, maps, n_maps, owned,
                                           NULL, 0);
}

archrt_status archrt_model_set_weights_deferred(
    archrt_model *m, float **params, archrt_mapping *maps, int n_maps,
    void *owned, archrt_deferred *deferred, int n_deferred) {
  const archrt_gen_model *d = m->desc;
  float *prepared = NULL;
  if (d->n_prepared > 0) {
    /* Each prepared weight starts on a cache line: 16 floats. */
    int64_t total = 0;
    for (int i = 0; i < d->n_prepared; ++i)
      total += prepared_floats(&d->prepared[i]);
    float **all = realloc(params, (size_t)(d->n_params + d->n_prepared) *
                                      sizeof *all);
    if (all)
      params = all;
    /* Not zeroed: archrt_gen_prepare writes every element, and pages are
     * only taken as it writes them while it releases the sources. */
    prepared = all ? archrt_alloc_floats((size_t)total) : NULL;
    if (!prepared) {
      release(params, NULL, maps, n_maps, owned);
      return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                         "cannot allocate %lld floats for prepared weights",
                         (long long)total);
    }
    float *next = prepared;
    for (int i = 0; i < d->n_prepared; ++i) {
      params[d->n_params + i] = next;
      next += prepared_floats(&d->prepared[i]);
    }
    if (n_deferred)
      qsort(deferred, (size_t)n_deferred, sizeof *deferred, by_dst);
    pending.at = deferred;
    pending.n = n_deferred;
    int rc = archrt_gen_prepare(params);
    pending.at = NULL;
    pending.n = 0;
    if (rc != 0) {
      release(params, prepared, maps, n_maps, owned);
      if (rc == ARCHRT_GEN_NO_MEMORY)
        return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                           "preparing weights: out of memory");
      return archrt_fail(ARCHRT_ERR_KERNEL,
                         "preparing weights: kernel error %d: %s", rc,
                         archrt_kernel_error());
    }
    read_once(prepared, total);
    for (int i = 0; i < d->n_params; ++i)
      if (d->params[i].prepare_only)
        params[i] = NULL; /* released during preparation */
  }
  release_weights(m);
  m->params = params;
  m->prepared = prepared;
  m->maps = maps;
  m->n_maps = n_maps;
  m->owned = owned;
  return ARCHRT_OK;
}

/* Bytes of cache `c` for a sequence of `positions` (a tokens cache's
 * rows; a ring keeps its capacity, a state one row). */
static size_t cache_bytes_of(const archrt_gen_cache *c, int32_t positions) {
  size_t rows = c->layout == ARCHRT_GEN_CACHE_STATE    ? 1
                : c->layout == ARCHRT_GEN_CACHE_TOKENS ? (size_t)positions
                                                       : (size_t)c->capacity;
  return rows * (size_t)c->row_elems * (size_t)c->elem_bytes;
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
  for (int i = 0; i < d->n_caches; ++i) {
    const archrt_gen_cache *c = &d->caches[i];
    if (c->layout == ARCHRT_GEN_CACHE_TOKENS)
      out->cache_bytes_per_token += (int64_t)cache_bytes_of(c, 1);
    else
      out->fixed_cache_bytes += (int64_t)cache_bytes_of(c, 0);
  }
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
  float *block = archrt_alloc_floats((size_t)total);
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
    /* Norm weights (1-D) near 1 (+-0.1), matrices uniform in +-0.5/d_model. */
    float amp = d->params[i].ndim == 1 ? 0.1f : 0.5f / (float)d->d_model;
    for (int64_t j = 0; j < n; ++j) {
      s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
      float u = (float)((s * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
      p[j] = (d->params[i].ndim == 1 ? 1.0f : 0.0f) + amp * (2 * u - 1);
    }
    p += n;
  }
  return archrt_model_set_weights(m, params, NULL, 0, block);
}

/* ---- Sequences ----------------------------------------------------------*/

struct archrt_seq {
  archrt_model *model;
  int32_t capacity, length;
  /* The furthest position any call has written since the last reset (a
   * truncation does not lower it): a ring holds the rows before it. */
  int32_t written;
  int has_logits;
  /* A call failed after it had updated a state cache (linear attention):
   * the sequence is unusable until archrt_seq_reset. */
  int broken;
  float *logits, *scratch;
  float **slots, **caches;
  /* ARCHRT_GEN_PROFILE_FIELDS per kernel call site (nanoseconds, calls,
   * rows, bytes): allocated when profiling is first turned on;
   * ARCHRT_CALL adds to it while `profiling`. */
  int64_t *profile;
  int profiling;
};

/* n floats (archrt_alloc_floats: huge pages from 2 MiB up); zeroed
 * when `zero`. */
static void *alloc_floats_as(size_t n, int zero) {
  float *p = archrt_alloc_floats(n);
  if (p && zero)
    memset(p, 0, n * sizeof(float));
  return p;
}

static void *alloc_floats(size_t n) { return alloc_floats_as(n, 1); }

/* A ring cache's `bytes` mapped twice in a row, so that row r + capacity
 * is row r and any capacity consecutive positions are consecutive rows
 * (archk.cache); zeroed. archc makes a ring whole 4 KiB pages (x86-64's).
 * NULL on failure, with the status and reason in `rc` and `why`.
 * The pages are shared memory: after fork() a child must not use a
 * sequence it inherited (archrt.h). */
static void *ring_map(size_t bytes, archrt_status *rc, const char **why) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (bytes == 0 || bytes % page) {
    *rc = ARCHRT_ERR_STATE;
    *why = "is not a whole number of this system's pages (the library "
           "was compiled for 4 KiB pages)";
    return NULL;
  }
  *rc = ARCHRT_ERR_OUT_OF_MEMORY;
  *why = "cannot be mapped twice";
  int fd = memfd_create("archrt-ring", MFD_CLOEXEC);
  if (fd < 0)
    return NULL;
  void *base = MAP_FAILED;
  if (ftruncate(fd, (off_t)bytes) == 0)
    base = mmap(NULL, 2 * bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                0);
  if (base != MAP_FAILED) {
    int prot = PROT_READ | PROT_WRITE, flags = MAP_SHARED | MAP_FIXED;
    if (mmap(base, bytes, prot, flags, fd, 0) == MAP_FAILED ||
        mmap((char *)base + bytes, bytes, prot, flags, fd, 0) == MAP_FAILED) {
      munmap(base, 2 * bytes);
      base = MAP_FAILED;
    }
  }
  close(fd);
  return base == MAP_FAILED ? NULL : base;
}

/* Whether a sequence of `positions` maps cache `c` twice: a ring its
 * positions can wrap around. A sequence that never holds more positions
 * than the ring's rows never wraps: plain memory of its positions' rows
 * does (the glue's pos mod capacity is pos). */
static int mirrored(const archrt_gen_cache *c, int32_t positions) {
  return c->layout == ARCHRT_GEN_CACHE_RING && positions > c->capacity;
}

void archrt_seq_free(archrt_seq *s) {
  if (!s)
    return;
  const archrt_gen_model *d = s->model->desc;
  if (s->slots)
    for (int i = 0; i < d->n_slots; ++i)
      free(s->slots[i]);
  free(s->slots);
  if (s->caches)
    for (int i = 0; i < d->n_caches; ++i) {
      if (!mirrored(&d->caches[i], s->capacity))
        free(s->caches[i]);
      else if (s->caches[i])
        munmap(s->caches[i], 2 * cache_bytes_of(&d->caches[i], 0));
    }
  free(s->caches);
  free(s->logits);
  free(s->scratch);
  free(s->profile);
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
  s->logits = alloc_floats((size_t)d->vocab_size);
  s->slots = calloc((size_t)d->n_slots + 1, sizeof *s->slots);
  s->caches = calloc((size_t)d->n_caches + 1, sizeof *s->caches);
  s->scratch = d->scratch_floats ? alloc_floats((size_t)d->scratch_floats)
                                 : NULL;
  int ok = s->logits && s->slots && s->caches &&
           (s->scratch || !d->scratch_floats);
  for (int i = 0; ok && i < d->n_slots; ++i) {
    /* A context slot (naive MLA's per-position keys and values) holds the
     * sequence's positions; every row is written before it is read, so it
     * is not zeroed, and its pages are committed as positions fill. */
    int context = d->slot_context && d->slot_context[i];
    size_t n = (size_t)d->slot_width[i] *
               (size_t)(context ? s->capacity : d->max_chunk);
    ok = (s->slots[i] = alloc_floats_as(n, !context)) != NULL;
  }
  /* A token cache holds the sequence's positions (archc makes its
   * capacity max_seq_len), a ring its capacity, a state one row. */
  size_t cache_bytes = 0;
  for (int i = 0; ok && i < d->n_caches; ++i) {
    const archrt_gen_cache *c = &d->caches[i];
    if (c->layout == ARCHRT_GEN_CACHE_TOKENS && c->capacity < s->capacity) {
      int32_t asked = s->capacity;
      archrt_seq_free(s);
      return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                         "archrt_seq_create: cache %s holds %d positions, "
                         "fewer than the %d asked for",
                         c->name, c->capacity, asked);
    }
    size_t bytes = cache_bytes_of(c, s->capacity);
    if (!mirrored(c, s->capacity)) {
      if (c->layout == ARCHRT_GEN_CACHE_RING) /* one row per position */
        bytes = (size_t)s->capacity * (size_t)c->row_elems *
                (size_t)c->elem_bytes;
      cache_bytes += bytes;
      ok = (s->caches[i] = alloc_floats((bytes + 3) / 4)) != NULL;
      continue;
    }
    cache_bytes += bytes;
    const char *why;
    archrt_status rc;
    if (!(s->caches[i] = ring_map(bytes, &rc, &why))) {
      archrt_seq_free(s); /* the name is the library's, not the seq's */
      return archrt_fail(rc, "archrt_seq_create: ring cache %s of %zu "
                             "bytes %s",
                         c->name, bytes, why);
    }
  }
  if (!ok) {
    archrt_seq_free(s);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                       "archrt_seq_create: cannot allocate the caches and "
                       "buffers of a sequence of %d tokens (%zu bytes of "
                       "cache so far)",
                       s->capacity, cache_bytes);
  }
  *out = s;
  return ARCHRT_OK;
}

archrt_status archrt_seq_reset(archrt_seq *s) {
  if (!s)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT, "archrt_seq_reset: seq is NULL");
  s->length = 0;
  s->written = 0;
  s->has_logits = 0;
  s->broken = 0;
  /* Token and ring caches are written before they are read; a state
   * (linear attention's) is read first, so it starts from zero again. */
  const archrt_gen_model *d = s->model->desc;
  for (int i = 0; i < d->n_caches; ++i)
    if (d->caches[i].layout == ARCHRT_GEN_CACHE_STATE)
      memset(s->caches[i], 0, cache_bytes_of(&d->caches[i], 0));
  return ARCHRT_OK;
}

archrt_status archrt_seq_truncate(archrt_seq *s, int32_t n) {
  if (!s)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_seq_truncate: seq is NULL");
  if (n < 0 || n > s->length)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_seq_truncate: n_tokens must be in [0, %d] (the "
                       "sequence's length), got %d",
                       s->length, n);
  if (n == s->length)
    return ARCHRT_OK;
  if (n == 0 || s->broken)
    return n == 0 ? archrt_seq_reset(s)
                  : archrt_fail(ARCHRT_ERR_STATE,
                                "archrt_seq_truncate: the sequence is broken "
                                "by a failed call; call archrt_seq_reset");
  /* A token cache's rows past n are rewritten by the next call. A ring
   * of W + max_chunk - 1 rows still holds the W - 1 positions before n
   * while at most max_chunk positions were written after them (counted
   * to the furthest written: truncations in a row, or one after a shorter
   * prefill, go back from there); a recurrent state holds no earlier
   * one. */
  const archrt_gen_model *d = s->model->desc;
  for (int i = 0; i < d->n_caches; ++i) {
    if (d->caches[i].layout == ARCHRT_GEN_CACHE_STATE)
      return archrt_fail(ARCHRT_ERR_STATE,
                         "archrt_seq_truncate: cache '%s' is a recurrent "
                         "state (linear attention), which cannot go back to "
                         "position %d; reset the sequence",
                         d->caches[i].name, n);
    if (d->caches[i].layout == ARCHRT_GEN_CACHE_RING &&
        s->written - n > d->max_chunk)
      return archrt_fail(ARCHRT_ERR_STATE,
                         "archrt_seq_truncate: the ring cache '%s' (a "
                         "sliding window) no longer holds the positions "
                         "before %d: it keeps %d positions back from the "
                         "furthest written, %d; reset the sequence",
                         d->caches[i].name, n, d->max_chunk, s->written);
  }
  s->length = n;
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
  if (s->broken)
    return archrt_fail(ARCHRT_ERR_STATE,
                       "archrt_prefill: an earlier call failed after "
                       "overwriting the sequence's recurrent state or "
                       "sliding-window rows: call "
                       "archrt_seq_reset first");
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
  const int32_t start = s->length;
  for (int32_t done = 0; done < n;) {
    int32_t chunk = n - done < d->max_chunk ? n - done : d->max_chunk;
    archrt_gen_call call = {
        .params = m->params,
        .slots = s->slots,
        .scratch = s->scratch,
        .caches = s->caches,
        .tokens = tokens + done,
        .n_tokens = chunk,
        .pos = s->length,
        .logits = s->logits,
        .capacity = s->capacity,
        .profile = s->profiling ? s->profile : NULL,
    };
    s->has_logits = 0;
    if (s->written < s->length + chunk)
      s->written = s->length + chunk;
    int rc = archrt_gen_forward(&call);
    if (rc != 0) {
      /* None of the call's tokens went in: the sequence keeps its length
       * (a token cache's rows past it are rewritten by the next call). A
       * ring of W + max_chunk - 1 rows keeps the W - 1 before the start
       * through one chunk's writes, not through more; a recurrent state
       * is updated in place. Where those were overwritten the sequence
       * is broken until archrt_seq_reset. */
      s->length = start;
      for (int i = 0; i < d->n_caches; ++i)
        s->broken |= d->caches[i].layout == ARCHRT_GEN_CACHE_STATE ||
                     (d->caches[i].layout == ARCHRT_GEN_CACHE_RING && done);
      return archrt_fail(ARCHRT_ERR_KERNEL, "kernel error %d: %s", rc,
                         archrt_kernel_error());
    }
    s->length += chunk;
    done += chunk;
  }
  s->has_logits = 1;
  return ARCHRT_OK;
}

archrt_status archrt_decode(archrt_seq *s, int32_t token) {
  return archrt_prefill(s, &token, 1);
}

int64_t archrt_gen_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void archrt_gen_profile_add(int64_t *profile, int site, int64_t start_ns,
                            int64_t rows, int64_t bytes) {
  int64_t *p = profile + ARCHRT_GEN_PROFILE_FIELDS * site;
  p[0] += archrt_gen_now_ns() - start_ns;
  p[1] += 1;
  p[2] += rows;
  p[3] += bytes;
}

archrt_status archrt_seq_set_profiling(archrt_seq *s, int on) {
  if (!s)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_seq_set_profiling: seq is NULL");
  int32_t n = s->model->desc->n_sites;
  if (on) {
    size_t fields = ARCHRT_GEN_PROFILE_FIELDS * (size_t)n;
    if (!s->profile && n > 0 &&
        !(s->profile = calloc(fields, sizeof *s->profile)))
      return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                         "archrt_seq_set_profiling: out of memory");
    if (s->profile)
      memset(s->profile, 0, fields * sizeof *s->profile);
  }
  s->profiling = on != 0;
  return ARCHRT_OK;
}

archrt_status archrt_seq_profile(const archrt_seq *s,
                                 archrt_profile_site *sites, int32_t n,
                                 int32_t *n_sites) {
  if (!s || !n_sites || (n > 0 && !sites))
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_seq_profile: NULL argument");
  if (n < 0)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_seq_profile: n must be >= 0, got %d", n);
  const archrt_gen_model *d = s->model->desc;
  *n_sites = d->n_sites;
  for (int32_t i = 0; i < n && i < d->n_sites; ++i) {
    const int64_t *p =
        s->profile ? s->profile + ARCHRT_GEN_PROFILE_FIELDS * (size_t)i : NULL;
    int64_t rows = p ? p[2] : 0, flops;
    /* (Saturated: a 70B classifier's 2e9 FLOPs a row reach 2^63 after
     * 4e9 rows.) */
    if (__builtin_mul_overflow(rows, d->sites[i].flops_per_row, &flops))
      flops = INT64_MAX;
    sites[i] = (archrt_profile_site){
        .kernel = d->sites[i].kernel,
        .op = d->sites[i].op,
        .calls = p ? p[1] : 0,
        .seconds = p ? (double)p[0] * 1e-9 : 0.0,
        .rows = rows,
        .flops = flops,
        .bytes = p ? p[3] : 0,
    };
  }
  return ARCHRT_OK;
}
