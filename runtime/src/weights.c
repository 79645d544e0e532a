/*===- weights.c - Safetensors and llama2.c checkpoints -------------------===*
 *
 * Both loaders map the file, check every tensor against the model's
 * parameter table, and only then replace the model's weights: a failed
 * load leaves the model as it was. F32 tensors are used in place when
 * aligned; F16/BF16 (and misaligned F32) are converted into owned memory.
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static archrt_status map_file(const char *path, archrt_mapping *out) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return archrt_fail(ARCHRT_ERR_IO, "%s: not a regular file", path);
  }
  out->size = (size_t)st.st_size;
  if (out->size == 0) {
    close(fd);
    return archrt_fail(ARCHRT_ERR_FORMAT, "%s: file is empty", path);
  }
  out->data = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (out->data == MAP_FAILED)
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot map: %s", path,
                       strerror(errno));
  return ARCHRT_OK;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

static int is_directory(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- A JSON reader for the safetensors header --------------------------*/

typedef struct json {
  const char *p, *end;
  const char *err;
} json;

static void skip_ws(json *j) {
  while (j->p < j->end &&
         (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
    j->p++;
}

static int expect(json *j, char c) {
  skip_ws(j);
  if (j->p < j->end && *j->p == c) {
    j->p++;
    return 1;
  }
  if (!j->err)
    j->err = "malformed JSON header";
  return 0;
}

/* Reads a string into buf (escapes kept verbatim except \" and \\). */
static int read_string(json *j, char *buf, size_t cap) {
  if (!expect(j, '"'))
    return 0;
  size_t n = 0;
  while (j->p < j->end && *j->p != '"') {
    char c = *j->p++;
    if (c == '\\' && j->p < j->end)
      c = *j->p++;
    if (n + 1 < cap)
      buf[n++] = c;
  }
  buf[n] = 0;
  if (j->p >= j->end) {
    j->err = "unterminated string in JSON header";
    return 0;
  }
  j->p++;
  return 1;
}

static int read_int(json *j, int64_t *v) {
  skip_ws(j);
  char *e;
  errno = 0;
  long long x = strtoll(j->p, &e, 10);
  if (e == j->p || e > j->end || errno || x < 0) {
    j->err = "expected a non-negative integer in JSON header";
    return 0;
  }
  j->p = e;
  *v = x;
  return 1;
}

/* Skips any JSON value (used for __metadata__). */
static int skip_value(json *j) {
  skip_ws(j);
  if (j->p >= j->end)
    return j->err = "truncated JSON header", 0;
  char c = *j->p;
  if (c == '"') {
    char tmp[8];
    return read_string(j, tmp, sizeof tmp);
  }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    j->p++;
    skip_ws(j);
    if (j->p < j->end && *j->p == close)
      return j->p++, 1;
    for (;;) {
      if (c == '{') {
        char tmp[8];
        if (!read_string(j, tmp, sizeof tmp) || !expect(j, ':'))
          return 0;
      }
      if (!skip_value(j))
        return 0;
      skip_ws(j);
      if (j->p < j->end && *j->p == ',') {
        j->p++;
        continue;
      }
      return expect(j, close);
    }
  }
  while (j->p < j->end && *j->p != ',' && *j->p != '}' && *j->p != ']')
    j->p++;
  return 1;
}

/* Steps through the members of a JSON object: start with *first = 1.
 * Returns 1 with the next member's key read (and its ':' consumed), 0 after
 * the closing '}' or on malformed input (then j->err is set). */
static int next_member(json *j, int *first, char *key, size_t cap) {
  skip_ws(j);
  if (*first) {
    *first = 0;
    if (!expect(j, '{'))
      return 0;
    skip_ws(j);
    if (j->p < j->end && *j->p == '}')
      return j->p++, 0;
  } else if (j->p < j->end && *j->p == ',') {
    j->p++;
  } else {
    expect(j, '}');
    return 0;
  }
  return read_string(j, key, cap) && expect(j, ':');
}

typedef struct st_tensor {
  char name[256];
  char dtype[16];
  int ndim;
  int64_t shape[8];
  int64_t begin, end;
  int file; /* which file of its st_set */
  int matched;
} st_tensor;

static int read_tensor(json *j, st_tensor *t) {
  if (!expect(j, '{'))
    return 0;
  t->ndim = -1;
  t->begin = t->end = -1;
  t->dtype[0] = 0;
  for (;;) {
    char key[32];
    if (!read_string(j, key, sizeof key) || !expect(j, ':'))
      return 0;
    if (!strcmp(key, "dtype")) {
      if (!read_string(j, t->dtype, sizeof t->dtype))
        return 0;
    } else if (!strcmp(key, "shape")) {
      if (!expect(j, '['))
        return 0;
      t->ndim = 0;
      skip_ws(j);
      if (j->p < j->end && *j->p == ']')
        j->p++;
      else
        for (;;) {
          int64_t v;
          if (!read_int(j, &v))
            return 0;
          if (t->ndim < 8)
            t->shape[t->ndim] = v;
          t->ndim++;
          skip_ws(j);
          if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
          }
          if (!expect(j, ']'))
            return 0;
          break;
        }
    } else if (!strcmp(key, "data_offsets")) {
      if (!expect(j, '[') || !read_int(j, &t->begin) || !expect(j, ',') ||
          !read_int(j, &t->end) || !expect(j, ']'))
        return 0;
    } else if (!skip_value(j)) {
      return 0;
    }
    skip_ws(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      continue;
    }
    return expect(j, '}');
  }
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f,
           man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0)
      bits = sign;
    else { /* subnormal */
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) {
        man <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31)
    bits = sign | 0x7f800000 | (man << 13);
  else
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static int dtype_size(const char *dt) {
  if (!strcmp(dt, "F32"))
    return 4;
  if (!strcmp(dt, "F16") || !strcmp(dt, "BF16"))
    return 2;
  return 0;
}

static void format_shape(char *buf, size_t cap, int ndim, const int64_t *s) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < ndim && n < cap; ++i)
    n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld",
                          (long long)s[i]);
  if (n < cap)
    snprintf(buf + n, cap - n, "]");
}

/* The tensors of one safetensors file or of every shard of a sharded
 * checkpoint. */
typedef struct st_set {
  archrt_mapping *files;
  int n_files;
  st_tensor *tensors;
  int n_tensors, cap;
} st_set;

static void st_set_free(st_set *s) {
  for (int i = 0; i < s->n_files; ++i)
    munmap(s->files[i].data, s->files[i].size);
  free(s->files);
  free(s->tensors);
  memset(s, 0, sizeof *s);
}

static const uint8_t *st_data(const st_set *s, const st_tensor *t) {
  const uint8_t *base = (const uint8_t *)s->files[t->file].data;
  uint64_t hlen;
  memcpy(&hlen, base, 8);
  return base + 8 + hlen + t->begin;
}

/* Maps `path` and appends its tensors to `s` (the mapping is s's even on
 * failure). A malformed file is an ARCHRT_ERR_FORMAT naming it. */
static archrt_status st_add_file(st_set *s, const char *path) {
  archrt_mapping f;
  archrt_status st = map_file(path, &f);
  if (st)
    return st;
  archrt_mapping *nf = realloc(s->files, (size_t)(s->n_files + 1) * sizeof *nf);
  if (!nf) {
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  s->files = nf;
  s->files[s->n_files++] = f;
  int file = s->n_files - 1, first = s->n_tensors;

  uint64_t hlen = 0;
  if (f.size < 8)
    return archrt_fail(ARCHRT_ERR_FORMAT, "%s: too short for a safetensors file",
                       path);
  memcpy(&hlen, f.data, 8);
  if (hlen < 2 || hlen > f.size - 8 || hlen > (100u << 20))
    return archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: header length %llu does not fit a file of %zu "
                       "bytes (not a safetensors file?)",
                       path, (unsigned long long)hlen, f.size);
  size_t data_size = f.size - 8 - hlen;
  json j = {(const char *)f.data + 8, (const char *)f.data + 8 + hlen, NULL};
  char name[256];
  int start = 1;
  while (next_member(&j, &start, name, sizeof name)) {
    if (!strcmp(name, "__metadata__")) {
      if (!skip_value(&j))
        goto bad_json;
      continue;
    }
    if (s->n_tensors == s->cap) {
      int cap = s->cap ? 2 * s->cap : 64;
      st_tensor *nt = realloc(s->tensors, (size_t)cap * sizeof *nt);
      if (!nt)
        return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
      s->tensors = nt;
      s->cap = cap;
    }
    st_tensor *t = &s->tensors[s->n_tensors++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->file = file;
    if (!read_tensor(&j, t))
      goto bad_json;
  }
  if (j.err)
    goto bad_json;
  for (int i = first; i < s->n_tensors; ++i) {
    st_tensor *t = &s->tensors[i];
    int es = dtype_size(t->dtype);
    int64_t numel = 1;
    for (int k = 0; k < t->ndim && k < 8; ++k)
      numel = t->shape[k] && numel > INT64_MAX / 8 / t->shape[k]
                  ? INT64_MAX / 8 /* cannot fit any file: fails below */
                  : numel * t->shape[k];
    if (t->ndim < 0 || t->ndim > 8 || t->begin < 0 || !t->dtype[0])
      return archrt_fail(ARCHRT_ERR_FORMAT,
                         "%s: tensor '%s' lacks dtype, shape or data_offsets",
                         path, t->name);
    /* Unsupported dtypes fail only if a parameter needs the tensor. */
    if (t->end < t->begin || (uint64_t)t->end > data_size ||
        (es && t->end - t->begin != numel * es))
      return archrt_fail(ARCHRT_ERR_FORMAT,
                         "%s: tensor '%s' has data_offsets [%lld, %lld] that "
                         "do not hold %lld %s values within the %zu data bytes",
                         path, t->name, (long long)t->begin, (long long)t->end,
                         (long long)numel, t->dtype, data_size);
  }
  return ARCHRT_OK;

bad_json:
  return archrt_fail(ARCHRT_ERR_FORMAT, "%s: safetensors header: %s at byte %ld",
                     path, j.err ? j.err : "malformed JSON",
                     (long)(j.p - (const char *)f.data));
}

static st_tensor *st_find(st_set *s, const char *name) {
  for (int k = 0; k < s->n_tensors; ++k)
    if (!strcmp(s->tensors[k].name, name))
      return &s->tensors[k];
  return NULL;
}

/* Tensors that Hugging Face checkpoints carry besides parameters: causal
 * masks and rotary tables saved as buffers, and a tied classifier. */
static int ignorable(const archrt_gen_model *d, const char *name) {
  static const char *buffers[] = {".attn.bias", ".attn.masked_bias",
                                  ".attention.bias", ".attention.masked_bias",
                                  ".rotary_emb.inv_freq"};
  for (size_t i = 0; i < sizeof buffers / sizeof *buffers; ++i)
    if (ends_with(name, buffers[i]))
      return 1;
  if (strcmp(name, "lm_head.weight"))
    return 0;
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    if (!strcmp(p->source ? p->source : p->name, "lm_head.weight"))
      return 0;
  }
  return 1; /* the model ties its classifier to the embedding */
}

/* The checkpoint tensor parameter `p` comes from: its source name, or that
 * name without the base-model prefix (checkpoints saved from the bare
 * model). */
static st_tensor *source_tensor(st_set *s, const archrt_gen_model *d,
                                const archrt_gen_param *p) {
  const char *want = p->source ? p->source : p->name;
  st_tensor *t = st_find(s, want);
  const char *prefix = d->checkpoint_prefix;
  size_t n = prefix ? strlen(prefix) : 0;
  if (!t && n && !strncmp(want, prefix, n))
    t = st_find(s, want + n);
  return t;
}

static float read_value(int dtype_bytes, int bf16, const uint8_t *src) {
  if (dtype_bytes == 4) {
    float f;
    memcpy(&f, src, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, src, 2);
  if (!bf16)
    return half_to_float(h);
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* The first source row of parameter `p`'s row r (rows of the transposed
 * tensor when p->transpose). */
static int64_t source_row(const archrt_gen_param *p, int64_t r) {
  if (!p->source || p->rows[0] <= 0)
    return r;
  return (r / p->rows[3]) * p->rows[1] + p->rows[2] + r % p->rows[3];
}

/* Whether parameter `p` is a contiguous run of f32 tensor `t` that can be
 * used in place. */
static int in_place(const st_set *s, const st_tensor *t,
                    const archrt_gen_param *p) {
  if (strcmp(t->dtype, "F32") || ((uintptr_t)st_data(s, t) & 3))
    return 0;
  return !p->source || (!p->transpose && p->rows[0] <= 1);
}

/* Copies (converting, transposing, gathering rows) parameter `p` out of `t`. */
static void assemble(const st_set *s, const st_tensor *t,
                     const archrt_gen_param *p, float *out) {
  const uint8_t *src = st_data(s, t);
  int es = dtype_size(t->dtype), bf16 = !strcmp(t->dtype, "BF16");
  int64_t rows = p->shape[0], cols = p->ndim == 2 ? p->shape[1] : 1;
  /* Rows of the stored tensor; a transposed one is stored [cols, rows]. */
  int64_t stored_rows = p->source ? p->source_shape[p->transpose ? 1 : 0]
                                  : rows;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t sr = source_row(p, r);
    float *o = out + r * cols;
    if (p->source && p->transpose)
      for (int64_t c = 0; c < cols; ++c)
        o[c] = read_value(es, bf16, src + (c * stored_rows + sr) * es);
    else
      for (int64_t c = 0; c < cols; ++c)
        o[c] = read_value(es, bf16, src + (sr * cols + c) * es);
  }
}

/* Binds every parameter of `m` to the tensors of `s` and installs them; on
 * success the mappings move into the model. */
static archrt_status bind_params(archrt_model *m, st_set *s, const char *path) {
  const archrt_gen_model *d = m->desc;
  archrt_problems probs = {{0}, 0, 0};
  st_tensor **which = calloc((size_t)d->n_params + 1, sizeof *which);
  if (!which)
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  size_t convert_floats = 0;
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    const char *want = p->source ? p->source : p->name;
    st_tensor *t = which[i] = source_tensor(s, d, p);
    if (!t) {
      if (p->source && strcmp(p->source, p->name))
        archrt_problem(&probs, "missing tensor '%s' (holds %s)", want, p->name);
      else
        archrt_problem(&probs, "missing tensor '%s'", want);
      continue;
    }
    t->matched = 1;
    int ndim = p->source ? p->source_ndim : p->ndim;
    const int64_t *shape = p->source ? p->source_shape : p->shape;
    int same = t->ndim == ndim;
    for (int k = 0; same && k < ndim; ++k)
      same = t->shape[k] == shape[k];
    if (!dtype_size(t->dtype))
      archrt_problem(&probs, "tensor '%s' has dtype %s (supported: F32, F16, "
                             "BF16)", t->name, t->dtype);
    if (!same) {
      char got[96], wanted[96];
      format_shape(got, sizeof got, t->ndim, t->shape);
      format_shape(wanted, sizeof wanted, ndim, shape);
      archrt_problem(&probs, "tensor '%s' has shape %s, the model expects %s",
                     t->name, got, wanted);
    }
    if (!same || !dtype_size(t->dtype)) {
      which[i] = NULL;
    } else if (!in_place(s, t, p)) {
      convert_floats += (size_t)archrt_param_numel(p);
    }
  }
  for (int k = 0; k < s->n_tensors; ++k)
    if (!s->tensors[k].matched && !ignorable(d, s->tensors[k].name))
      archrt_problem(&probs, "unexpected tensor '%s' (not a parameter of %s)",
                     s->tensors[k].name, d->name);
  if (probs.count) {
    free(which);
    return archrt_fail(ARCHRT_ERR_MISMATCH, "%s: %d problem%s: %s", path,
                       probs.count, probs.count > 1 ? "s" : "", probs.buf);
  }
  float **params = calloc((size_t)d->n_params + 1, sizeof *params);
  float *owned = convert_floats ? malloc(convert_floats * sizeof(float)) : NULL;
  if (!params || (convert_floats && !owned)) {
    free(which);
    free(params);
    free(owned);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                       "%s: cannot allocate %zu floats for converted tensors",
                       path, convert_floats);
  }
  float *next = owned;
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    const st_tensor *t = which[i];
    if (in_place(s, t, p)) {
      /* The mapping is private and read-only. */
      int64_t skip = p->source ? p->rows[2] * (p->ndim == 2 ? p->shape[1] : 1)
                               : 0;
      params[i] = (float *)(uintptr_t)st_data(s, t) + skip;
      continue;
    }
    params[i] = next;
    assemble(s, t, p, next);
    next += archrt_param_numel(p);
  }
  free(which);
  archrt_model_set_weights(m, params, s->files, s->n_files, owned);
  s->files = NULL;
  s->n_files = 0;
  return ARCHRT_OK;
}

/* Reads model.safetensors.index.json at `path`: maps every shard its
 * weight_map names (relative to the index's directory) into `s`, and checks
 * that each listed tensor is in its shard. */
static archrt_status st_add_index(st_set *s, const char *path) {
  archrt_mapping f;
  archrt_status st = map_file(path, &f);
  if (st)
    return st;
  char dir[4096];
  const char *slash = strrchr(path, '/');
  int dlen = slash ? (int)(slash - path + 1) : 0;
  if (dlen >= (int)sizeof dir - 256) {
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_IO, "%s: path too long", path);
  }
  memcpy(dir, path, (size_t)dlen);
  /* weight_map entries, (tensor, shard) pairs, kept to check afterwards. */
  typedef struct entry { char tensor[256], shard[256]; } entry;
  entry *entries = NULL;
  int *shard_of = NULL;
  int n_entries = 0, cap = 0, seen_map = 0;
  json j = {(const char *)f.data, (const char *)f.data + f.size, NULL};
  char key[256];
  int start = 1;
  while (next_member(&j, &start, key, sizeof key)) {
    if (strcmp(key, "weight_map")) {
      if (!skip_value(&j))
        goto bad_json;
      continue;
    }
    seen_map = 1;
    int map_start = 1;
    while (next_member(&j, &map_start, key, sizeof key)) {
      if (n_entries == cap) {
        cap = cap ? 2 * cap : 256;
        entry *ne = realloc(entries, (size_t)cap * sizeof *ne);
        if (!ne) {
          st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
          goto done;
        }
        entries = ne;
      }
      entry *e = &entries[n_entries++];
      snprintf(e->tensor, sizeof e->tensor, "%s", key);
      if (!read_string(&j, e->shard, sizeof e->shard))
        goto bad_json;
    }
    if (j.err)
      goto bad_json;
  }
  if (j.err)
    goto bad_json;
  if (!seen_map || n_entries == 0) {
    st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: index has no weight_map entries",
                     path);
    goto done;
  }
  /* Each distinct shard once, in order of first mention: entry i's shard
   * is file shard_of[i] of s. */
  shard_of = malloc((size_t)n_entries * sizeof *shard_of);
  if (!shard_of) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  for (int i = 0; i < n_entries; ++i) {
    const char *shard = entries[i].shard;
    shard_of[i] = -1;
    for (int k = 0; k < i && shard_of[i] < 0; ++k)
      if (!strcmp(entries[k].shard, shard))
        shard_of[i] = shard_of[k];
    if (shard_of[i] >= 0)
      continue;
    if (!shard[0] || strchr(shard, '/')) {
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: shard '%s' is not a file name beside the index",
                       path, shard);
      goto done;
    }
    snprintf(dir + dlen, sizeof dir - (size_t)dlen, "%s", shard);
    if ((st = st_add_file(s, dir)))
      goto done;
    shard_of[i] = s->n_files - 1;
  }
  for (int k = 0; k < s->n_tensors; ++k)
    for (int i = k + 1; i < s->n_tensors; ++i)
      if (!strcmp(s->tensors[k].name, s->tensors[i].name)) {
        st = archrt_fail(ARCHRT_ERR_FORMAT,
                         "%s: tensor '%s' is in more than one shard", path,
                         s->tensors[k].name);
        goto done;
      }
  for (int i = 0; i < n_entries; ++i) {
    st_tensor *t = st_find(s, entries[i].tensor);
    if (!t || t->file != shard_of[i]) {
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: weight_map puts tensor '%s' in '%s', which does "
                       "not hold it",
                       path, entries[i].tensor, entries[i].shard);
      goto done;
    }
  }
  st = ARCHRT_OK;
  goto done;

bad_json:
  st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: index JSON: %s at byte %ld", path,
                   j.err ? j.err : "malformed JSON",
                   (long)(j.p - (const char *)f.data));
done:
  free(entries);
  free(shard_of);
  munmap(f.data, f.size);
  return st;
}

archrt_status archrt_load_safetensors(archrt_model *m, const char *path) {
  if (!m || !path)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_load_safetensors: NULL argument");
  st_set s;
  memset(&s, 0, sizeof s);
  archrt_status st;
  if (is_directory(path)) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/model.safetensors.index.json", path);
    if (access(buf, F_OK) == 0) {
      st = st_add_index(&s, buf);
    } else {
      snprintf(buf, sizeof buf, "%s/model.safetensors", path);
      st = access(buf, F_OK) == 0
               ? st_add_file(&s, buf)
               : archrt_fail(ARCHRT_ERR_IO,
                             "%s: directory holds neither "
                             "model.safetensors.index.json nor "
                             "model.safetensors",
                             path);
    }
  } else if (ends_with(path, ".json")) {
    st = st_add_index(&s, path);
  } else {
    st = st_add_file(&s, path);
  }
  if (!st)
    st = bind_params(m, &s, path);
  st_set_free(&s);
  return st;
}

/* ---- llama2.c legacy checkpoints ----------------------------------------
 * Header: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size (< 0:
 * separate classifier), seq_len; then token_embedding, rms_att, wq, wk, wv,
 * wo, rms_ffn, w1, w2, w3, rms_final, two RoPE tables, [wcls]. */

enum { L2C_EMB, L2C_RMS_ATT, L2C_WQ, L2C_WK, L2C_WV, L2C_WO, L2C_RMS_FFN,
       L2C_W1, L2C_W2, L2C_W3, L2C_RMS_FINAL, L2C_FREQ, L2C_WCLS, L2C_COUNT };

/* Which llama2.c array (and layer) holds a Hugging Face Llama name. */
static int l2c_role(const char *name, int *layer) {
  static const struct { const char *suffix; int role; } per_layer[] = {
      {"input_layernorm.weight", L2C_RMS_ATT},
      {"self_attn.q_proj.weight", L2C_WQ},
      {"self_attn.k_proj.weight", L2C_WK},
      {"self_attn.v_proj.weight", L2C_WV},
      {"self_attn.o_proj.weight", L2C_WO},
      {"post_attention_layernorm.weight", L2C_RMS_FFN},
      {"mlp.gate_proj.weight", L2C_W1},
      {"mlp.down_proj.weight", L2C_W2},
      {"mlp.up_proj.weight", L2C_W3},
  };
  *layer = 0;
  if (!strcmp(name, "model.embed_tokens.weight"))
    return L2C_EMB;
  if (!strcmp(name, "model.norm.weight"))
    return L2C_RMS_FINAL;
  if (!strcmp(name, "lm_head.weight"))
    return L2C_WCLS;
  int n = 0;
  if (sscanf(name, "model.layers.%d.%n", layer, &n) == 1 && n > 0)
    for (size_t i = 0; i < sizeof per_layer / sizeof *per_layer; ++i)
      if (!strcmp(name + n, per_layer[i].suffix))
        return per_layer[i].role;
  return -1;
}

archrt_status archrt_load_llama2c(archrt_model *m, const char *path) {
  if (!m || !path)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_load_llama2c: NULL argument");
  archrt_mapping f;
  archrt_status st = map_file(path, &f);
  if (st)
    return st;
  const archrt_gen_model *d = m->desc;
  int32_t h[7];
  if (f.size < sizeof h) {
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_FORMAT, "%s: too short for a llama2.c checkpoint",
                       path);
  }
  memcpy(h, f.data, sizeof h);
  int shared = h[5] > 0;
  int32_t vocab = h[5] < 0 ? -h[5] : h[5];
  archrt_problems probs = {{0}, 0, 0};
  struct { const char *what; int32_t got, want; } dims[] = {
      {"dim", h[0], d->d_model},       {"hidden_dim", h[1], d->d_ff},
      {"n_layers", h[2], d->n_layers}, {"n_heads", h[3], d->n_heads},
      {"n_kv_heads", h[4], d->n_kv_heads}, {"vocab_size", vocab, d->vocab_size},
  };
  for (size_t i = 0; i < sizeof dims / sizeof *dims; ++i)
    if (dims[i].got != dims[i].want)
      archrt_problem(&probs, "header %s is %d, the model has %d", dims[i].what,
                     dims[i].got, dims[i].want);
  if (h[6] <= 0)
    archrt_problem(&probs, "header seq_len is %d", h[6]);
  if (!probs.count && d->head_dim * d->n_heads != d->d_model)
    archrt_problem(&probs, "llama2.c checkpoints need n_heads * head_dim == "
                           "dim, the model has %d * %d",
                   d->n_heads, d->head_dim);
  if (probs.count) {
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_MISMATCH, "%s: %s", path, probs.buf);
  }
  /* Element offsets of each array, in file order. */
  int64_t D = h[0], F = h[1], L = h[2], KV = (int64_t)h[4] * (D / h[3]),
          V = vocab, HD = D / h[3];
  int64_t sizes[L2C_COUNT] = {V * D,  L * D,      L * D * D, L * KV * D,
                              L * KV * D, L * D * D, L * D,  L * F * D,
                              L * D * F, L * F * D,  D,      h[6] * HD,
                              shared ? 0 : V * D};
  int64_t per_layer[L2C_COUNT] = {0,         D,     D * D, KV * D, KV * D,
                                  D * D,     D,     F * D, D * F,  F * D};
  int64_t offset[L2C_COUNT], at = 7;
  for (int r = 0; r < L2C_COUNT; ++r) {
    offset[r] = at;
    at += sizes[r];
  }
  if ((int64_t)f.size != at * 4) {
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: file has %zu bytes, a %s checkpoint of these "
                       "dimensions has %lld",
                       path, f.size, shared ? "shared-classifier" : "separate-classifier",
                       (long long)at * 4);
  }
  float **params = calloc((size_t)d->n_params, sizeof *params);
  if (!params) {
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  float *base = (float *)f.data;
  int classifier_bound = 0;
  for (int i = 0; i < d->n_params; ++i) {
    int layer, role = l2c_role(d->params[i].name, &layer);
    if (role < 0 || layer < 0 || layer >= L) {
      archrt_problem(&probs, "parameter '%s' has no place in a llama2.c checkpoint",
                     d->params[i].name);
      continue;
    }
    if (role == L2C_WCLS) {
      classifier_bound = 1;
      if (shared) {
        archrt_problem(&probs, "the model has a separate lm_head.weight but "
                               "the checkpoint shares the embedding");
        continue;
      }
    }
    int64_t n = archrt_param_numel(&d->params[i]);
    int64_t expect_n = role == L2C_EMB || role == L2C_RMS_FINAL || role == L2C_WCLS
                           ? sizes[role] : per_layer[role];
    if (n != expect_n) {
      archrt_problem(&probs, "parameter '%s' has %lld elements, the checkpoint "
                             "array holds %lld",
                     d->params[i].name, (long long)n, (long long)expect_n);
      continue;
    }
    params[i] = base + offset[role] + (int64_t)layer * per_layer[role];
  }
  if (!shared && !classifier_bound)
    archrt_problem(&probs, "the checkpoint has a separate classifier but the "
                           "model ties it to the embedding");
  if (probs.count) {
    free(params);
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_MISMATCH, "%s: %d problem%s: %s", path,
                       probs.count, probs.count > 1 ? "s" : "", probs.buf);
  }
  archrt_mapping *maps = malloc(sizeof *maps);
  if (!maps) {
    free(params);
    munmap(f.data, f.size);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  *maps = f;
  archrt_model_set_weights(m, params, maps, 1, NULL);
  return ARCHRT_OK;
}

archrt_status archrt_load_weights(archrt_model *m, const char *path) {
  if (!m || !path)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_load_weights: NULL argument");
  /* A directory or an index is a (sharded) safetensors checkpoint. */
  if (is_directory(path) || ends_with(path, ".json"))
    return archrt_load_safetensors(m, path);
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
  unsigned char head[9] = {0};
  size_t n = fread(head, 1, sizeof head, fp);
  fclose(fp);
  /* Safetensors: 8-byte little-endian header length, then '{'. */
  if (n == 9 && head[8] == '{')
    return archrt_load_safetensors(m, path);
  return archrt_load_llama2c(m, path);
}
