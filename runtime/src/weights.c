/*===- weights.c - Safetensors and llama2.c checkpoints -------------------===*
 *
 * Both loaders map the file, check every tensor against the model's
 * parameter table, and only then replace the model's weights: a failed
 * load leaves the model as it was. F32 tensors are used in place when
 * aligned; F16/BF16 (and misaligned F32) are converted into owned memory.
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n > k && !strcmp(s + n - k, suffix);
}

static int is_directory(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- A JSON reader for safetensors headers and index files --------------
 * Bounded by [p, end) everywhere (the header is not NUL-terminated), nested
 * at most JSON_MAX_DEPTH deep, with strings decoded exactly (every escape,
 * \u with surrogate pairs to UTF-8) and rejected when they hold raw control
 * bytes or, where they name something, NUL. */

enum { JSON_MAX_DEPTH = 64 };

typedef struct json {
  const char *p, *end;
  const char *err;
  int depth;
} json;

static int json_fail(json *j, const char *msg) {
  if (!j->err)
    j->err = msg;
  return 0;
}

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
  return json_fail(j, j->p < j->end ? "malformed JSON" : "truncated JSON");
}

static int hex4(json *j, uint32_t *v) {
  if (j->end - j->p < 4)
    return json_fail(j, "truncated \\u escape");
  *v = 0;
  for (int i = 0; i < 4; ++i) {
    char c = *j->p++;
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return json_fail(j, "bad hex digit in \\u escape");
    *v = *v << 4 | (uint32_t)d;
  }
  return 1;
}

/* Appends code point `cp` as UTF-8 to buf (when buf is not NULL). */
static int put_utf8(json *j, char *buf, size_t cap, size_t *n, uint32_t cp) {
  char u[4];
  size_t k;
  if (cp < 0x80)
    u[0] = (char)cp, k = 1;
  else if (cp < 0x800)
    u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), k = 2;
  else if (cp < 0x10000)
    u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
    u[2] = (char)(0x80 | (cp & 0x3F)), k = 3;
  else
    u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)),
    k = 4;
  if (!buf)
    return 1;
  if (*n + k >= cap)
    return json_fail(j, "string too long");
  memcpy(buf + *n, u, k);
  *n += k;
  return 1;
}

/* Reads a JSON string, decoded, into buf (cap bytes with its NUL); with buf
 * NULL the string is only checked and skipped. A name (buf set) may not
 * hold NUL. */
static int read_string(json *j, char *buf, size_t cap) {
  if (!expect(j, '"'))
    return 0;
  size_t n = 0;
  for (;;) {
    if (j->p >= j->end)
      return json_fail(j, "unterminated string");
    unsigned char c = (unsigned char)*j->p++;
    if (c == '"')
      break;
    if (c < 0x20)
      return json_fail(j, "control character in string");
    uint32_t cp = c;
    if (c == '\\') {
      if (j->p >= j->end)
        return json_fail(j, "unterminated string");
      char e = *j->p++;
      switch (e) {
      case '"': case '\\': case '/': cp = (uint32_t)e; break;
      case 'b': cp = '\b'; break;
      case 'f': cp = '\f'; break;
      case 'n': cp = '\n'; break;
      case 'r': cp = '\r'; break;
      case 't': cp = '\t'; break;
      case 'u': {
        if (!hex4(j, &cp))
          return 0;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return json_fail(j, "lone low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
            return json_fail(j, "high surrogate without its low half");
          j->p += 2;
          if (!hex4(j, &lo))
            return 0;
          if (lo < 0xDC00 || lo > 0xDFFF)
            return json_fail(j, "high surrogate without its low half");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0 && buf)
          return json_fail(j, "NUL in a name");
        break;
      }
      default:
        return json_fail(j, "bad escape in string");
      }
      if (!put_utf8(j, buf, cap, &n, cp))
        return 0;
      continue;
    }
    if (buf) {
      if (n + 1 >= cap)
        return json_fail(j, "string too long");
      buf[n++] = (char)c;
    }
  }
  if (buf)
    buf[n] = 0;
  return 1;
}

/* A non-negative integer that fits int64. */
static int read_int(json *j, int64_t *v) {
  skip_ws(j);
  if (j->p >= j->end || *j->p < '0' || *j->p > '9')
    return json_fail(j, "expected a non-negative integer");
  int64_t x = 0;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
    int d = *j->p++ - '0';
    if (x > (INT64_MAX - d) / 10)
      return json_fail(j, "integer out of range");
    x = x * 10 + d;
  }
  if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
    return json_fail(j, "expected an integer");
  *v = x;
  return 1;
}

/* Skips any JSON value (used for __metadata__ and unknown keys). */
static int skip_value(json *j) {
  skip_ws(j);
  if (j->p >= j->end)
    return json_fail(j, "truncated JSON");
  char c = *j->p;
  if (c == '"')
    return read_string(j, NULL, 0);
  if (c == '{' || c == '[') {
    if (++j->depth > JSON_MAX_DEPTH)
      return json_fail(j, "JSON nested more than 64 levels deep");
    char close = c == '{' ? '}' : ']';
    j->p++;
    skip_ws(j);
    if (j->p < j->end && *j->p == close) {
      j->p++;
      j->depth--;
      return 1;
    }
    for (;;) {
      if (c == '{' && (!read_string(j, NULL, 0) || !expect(j, ':')))
        return 0;
      if (!skip_value(j))
        return 0;
      skip_ws(j);
      if (j->p < j->end && *j->p == ',') {
        j->p++;
        continue;
      }
      if (!expect(j, close))
        return 0;
      j->depth--;
      return 1;
    }
  }
  /* A number or true / false / null. */
  const char *start = j->p;
  while (j->p < j->end && (isalnum((unsigned char)*j->p) || *j->p == '-' ||
                           *j->p == '+' || *j->p == '.'))
    j->p++;
  return j->p > start ? 1 : json_fail(j, "malformed JSON");
}

/* After the top-level value only whitespace may follow (safetensors pads its
 * header with spaces). */
static int expect_end(json *j) {
  skip_ws(j);
  return j->p == j->end ? 1 : json_fail(j, "data after the JSON value");
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
    char key[64];
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
          if (t->ndim == 8)
            return json_fail(j, "shape of more than 8 dimensions");
          t->shape[t->ndim++] = v;
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

/* ---- Name tables ------------------------------------------------------
 * An open-addressing hash table (FNV-1a, linear probing, at most half full)
 * of indices into a caller's array, each item found by its name: lookups
 * and duplicate checks in expected O(1), so a checkpoint of 10^5 tensors
 * loads in time linear in their number. */
typedef const char *(*name_of_fn)(const void *items, int32_t i);

typedef struct name_table {
  int32_t *slot; /* item index + 1; 0 = empty */
  size_t mask;
} name_table;

static int nt_init(name_table *t, size_t n) {
  size_t c = 16;
  while (c < 2 * n)
    c *= 2;
  t->slot = calloc(c, sizeof *t->slot);
  t->mask = c - 1;
  return t->slot != NULL;
}

/* The index of the item named `name`, or -1 when there is none; then, if
 * `add` >= 0, item `add` is recorded under the name. */
static int32_t nt_get(name_table *t, const char *name, int32_t add,
                      name_of_fn name_of, const void *items) {
  uint64_t h = 1469598103934665603u;
  for (const unsigned char *c = (const unsigned char *)name; *c; ++c)
    h = (h ^ *c) * 1099511628211u;
  for (size_t i = (size_t)h & t->mask;; i = (i + 1) & t->mask) {
    int32_t v = t->slot[i];
    if (!v) {
      if (add >= 0)
        t->slot[i] = add + 1;
      return -1;
    }
    if (!strcmp(name_of(items, v - 1), name))
      return v - 1;
  }
}

/* The tensors of one safetensors file or of every shard of a sharded
 * checkpoint. */
typedef struct st_set {
  archrt_mapping *files;
  int n_files;
  st_tensor *tensors;
  int n_tensors, cap;
  /* The tensors by name (st_index). */
  name_table names;
} st_set;

static void st_set_free(st_set *s) {
  for (int i = 0; i < s->n_files; ++i)
    munmap(s->files[i].data, s->files[i].size);
  free(s->files);
  free(s->tensors);
  free(s->names.slot);
  memset(s, 0, sizeof *s);
}

static const uint8_t *st_data(const st_set *s, const st_tensor *t) {
  const uint8_t *base = (const uint8_t *)s->files[t->file].data;
  uint64_t hlen;
  memcpy(&hlen, base, 8);
  return base + 8 + hlen + t->begin;
}

static int by_begin(const void *a, const void *b) {
  const st_tensor *x = *(st_tensor *const *)a, *y = *(st_tensor *const *)b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

/* The safetensors rule that makes a file unambiguous: the tensors' byte
 * ranges tile the data section exactly, no overlap (two tensors aliasing
 * the same bytes), no gap and nothing after the last one. */
static archrt_status st_check_tiling(st_set *s, int first, size_t data_size,
                                     const char *path) {
  int n = s->n_tensors - first;
  if (n == 0)
    return data_size == 0
               ? ARCHRT_OK
               : archrt_fail(ARCHRT_ERR_FORMAT,
                             "%s: %zu data bytes but no tensor", path,
                             data_size);
  st_tensor **order = malloc((size_t)n * sizeof *order);
  if (!order)
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (int i = 0; i < n; ++i)
    order[i] = &s->tensors[first + i];
  qsort(order, (size_t)n, sizeof *order, by_begin);
  archrt_status st = ARCHRT_OK;
  int64_t at = 0;
  for (int i = 0; i < n && !st; ++i) {
    const st_tensor *t = order[i];
    if (t->begin < at)
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: tensor '%s' data_offsets [%lld, %lld] overlap "
                       "tensor '%s' [%lld, %lld]",
                       path, t->name, (long long)t->begin, (long long)t->end,
                       order[i - 1]->name, (long long)order[i - 1]->begin,
                       (long long)order[i - 1]->end);
    else if (t->begin > at)
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: data bytes [%lld, %lld) belong to no tensor", path,
                       (long long)at, (long long)t->begin);
    at = t->end;
  }
  if (!st && (uint64_t)at != data_size)
    st = archrt_fail(ARCHRT_ERR_FORMAT,
                     "%s: %llu bytes after the last tensor's data", path,
                     (unsigned long long)(data_size - (uint64_t)at));
  free(order);
  return st;
}

/* Maps `path` and appends its tensors to `s` (the mapping is s's even on
 * failure). A malformed file is an ARCHRT_ERR_FORMAT naming it. */
static archrt_status st_add_file(st_set *s, const char *path) {
  archrt_mapping f;
  archrt_status st = archrt_map_file(path, &f);
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
  json j = {(const char *)f.data + 8, (const char *)f.data + 8 + hlen, NULL, 0};
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
    memcpy(t->name, name, sizeof t->name);
    t->file = file;
    if (!read_tensor(&j, t))
      goto bad_json;
  }
  if (j.err || !expect_end(&j))
    goto bad_json;
  for (int i = first; i < s->n_tensors; ++i) {
    st_tensor *t = &s->tensors[i];
    int es = dtype_size(t->dtype);
    int64_t numel = 1;
    for (int k = 0; k < t->ndim; ++k)
      numel = t->shape[k] && numel > INT64_MAX / 8 / t->shape[k]
                  ? INT64_MAX / 8 /* cannot fit any file: fails below */
                  : numel * t->shape[k];
    if (t->ndim < 0 || t->begin < 0 || !t->dtype[0])
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
  return st_check_tiling(s, first, data_size, path);

bad_json:
  return archrt_fail(ARCHRT_ERR_FORMAT, "%s: safetensors header: %s at byte %ld",
                     path, j.err ? j.err : "malformed JSON",
                     (long)(j.p - (const char *)f.data));
}

static const char *tensor_name(const void *tensors, int32_t i) {
  return ((const st_tensor *)tensors)[i].name;
}

/* Tables the tensors of every file by name; a name twice (in one header or
 * in two shards) is an error. */
static archrt_status st_index(st_set *s, const char *path) {
  free(s->names.slot);
  if (!nt_init(&s->names, (size_t)s->n_tensors))
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  for (int i = 0; i < s->n_tensors; ++i) {
    int32_t j = nt_get(&s->names, s->tensors[i].name, i, tensor_name, s->tensors);
    if (j < 0)
      continue;
    const st_tensor *a = &s->tensors[j];
    if (a->file == s->tensors[i].file)
      return archrt_fail(ARCHRT_ERR_FORMAT,
                         "%s: tensor '%s' appears twice in one header", path,
                         a->name);
    return archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: tensor '%s' is in more than one shard", path,
                       a->name);
  }
  return ARCHRT_OK;
}

/* Needs st_index. */
static st_tensor *st_find(st_set *s, const char *name) {
  int32_t i = nt_get(&s->names, name, -1, tensor_name, s->tensors);
  return i < 0 ? NULL : &s->tensors[i];
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

/* The elements of a row of parameter `p`: of its dimensions after the
 * first (1 for a vector or a scalar). */
static int64_t row_elems(const archrt_gen_param *p) {
  int64_t n = 1;
  for (int k = 1; k < p->ndim; ++k)
    n *= p->shape[k];
  return n;
}

/* Copies (converting, transposing, gathering rows) parameter `p` out of `t`. */
static void assemble(const st_set *s, const st_tensor *t,
                     const archrt_gen_param *p, float *out) {
  const uint8_t *src = st_data(s, t);
  int es = dtype_size(t->dtype), bf16 = !strcmp(t->dtype, "BF16");
  /* (A scalar is one row of one element; a transposed or gathered
   * parameter is a matrix.) */
  int64_t rows = p->ndim ? p->shape[0] : 1, cols = row_elems(p);
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

/* What a deferred parameter is assembled from (archrt_deferred's ctx). */
typedef struct {
  const st_set *s;
  const st_tensor *t;
  const archrt_gen_param *p;
} assembly;

/* assemble, then a 16-bit source's pages dropped (for any parameter: the
 * converted copy is what is read). */
static void assemble_deferred(const void *ctx, float *out) {
  const assembly *a = ctx;
  assemble(a->s, a->t, a->p, out);
  /* A 16-bit tensor's mapped pages, read: dropped (clean: a parameter
   * that gathers other rows of it reads them back from the file). No F32
   * one: another parameter may use it in place. */
  if (strcmp(a->t->dtype, "F32"))
    archrt_drop_pages(st_data(a->s, a->t), (size_t)(a->t->end - a->t->begin));
}

/* Binds every parameter of `m` to the tensors of `s` and installs them; on
 * success the mappings move into the model. A parameter only preparation
 * reads (deferrable) that is not used in place (converted from F16 or
 * BF16, transposed or gathered) is assembled when preparation first reads
 * it. */
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
  float *owned = convert_floats ? archrt_alloc_floats(convert_floats) : NULL;
  archrt_deferred *deferred = calloc((size_t)d->n_params + 1, sizeof *deferred);
  assembly *from = calloc((size_t)d->n_params + 1, sizeof *from);
  if (!params || (convert_floats && !owned) || !deferred || !from) {
    free(which);
    free(params);
    free(owned);
    free(deferred);
    free(from);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                       "%s: cannot allocate %zu floats for converted tensors",
                       path, convert_floats);
  }
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    const st_tensor *t = which[i];
    if (in_place(s, t, p)) {
      /* The mapping is private and read-only. */
      int64_t skip = p->source ? p->rows[2] * row_elems(p) : 0;
      params[i] = (float *)(uintptr_t)st_data(s, t) + skip;
    }
  }
  archrt_place_params(d, params, owned); /* the others, in `owned` */
  int n_deferred = 0;
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    const st_tensor *t = which[i];
    if (in_place(s, t, p))
      continue;
    if (deferred_param(p)) {
      from[n_deferred] = (assembly){s, t, p};
      deferred[n_deferred] = (archrt_deferred){params[i], assemble_deferred,
                                               &from[n_deferred], 0};
      ++n_deferred;
    } else {
      assemble_deferred(&(assembly){s, t, p}, params[i]);
    }
  }
  free(which);
  /* The files are the model's now, or released if preparation failed
   * (the deferred tensors read them during it). */
  archrt_status st = archrt_model_set_weights_deferred(
      m, params, s->files, s->n_files, owned, deferred, n_deferred);
  s->files = NULL;
  s->n_files = 0;
  free(deferred);
  free(from);
  return st;
}

/* One weight_map entry; names point into the arena of st_add_index. */
typedef struct index_entry {
  union { size_t off; const char *str; } tensor, shard;
  int file; /* which file of the st_set holds the shard */
} index_entry;

static const char *entry_tensor(const void *entries, int32_t i) {
  return ((const index_entry *)entries)[i].tensor.str;
}

static const char *entry_shard(const void *entries, int32_t i) {
  return ((const index_entry *)entries)[i].shard.str;
}

/* Appends `text` with its NUL to the arena; returns its offset or -1. */
static int64_t arena_add(char **arena, size_t *len, size_t *cap,
                         const char *text) {
  size_t n = strlen(text) + 1;
  if (*len + n > *cap) {
    size_t c = *cap ? *cap : 4096;
    while (c < *len + n)
      c *= 2;
    char *na = realloc(*arena, c);
    if (!na)
      return -1;
    *arena = na;
    *cap = c;
  }
  memcpy(*arena + *len, text, n);
  *len += n;
  return (int64_t)(*len - n);
}

/* Reads model.safetensors.index.json at `path`: maps every shard its
 * weight_map names (relative to the index's directory) into `s`, and checks
 * that each listed tensor is in its shard, in time linear in the number of
 * entries (name tables). */
static archrt_status st_add_index(st_set *s, const char *path) {
  archrt_mapping f;
  archrt_status st = archrt_map_file(path, &f);
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
  index_entry *entries = NULL;
  name_table tensors = {NULL, 0}, shards = {NULL, 0};
  char *arena = NULL;
  size_t arena_len = 0, arena_cap = 0, n_entries = 0, cap = 0;
  int seen_map = 0;
  json j = {(const char *)f.data, (const char *)f.data + f.size, NULL, 0};
  char key[256], shard[256];
  int start = 1;
  while (next_member(&j, &start, key, sizeof key)) {
    if (strcmp(key, "weight_map")) {
      if (!skip_value(&j))
        goto bad_json;
      continue;
    }
    if (seen_map++) {
      j.err = "weight_map given twice";
      goto bad_json;
    }
    int map_start = 1;
    while (next_member(&j, &map_start, key, sizeof key)) {
      if (!read_string(&j, shard, sizeof shard))
        goto bad_json;
      if (n_entries == cap) {
        cap = cap ? 2 * cap : 256;
        index_entry *ne = realloc(entries, cap * sizeof *ne);
        if (!ne) {
          st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
          goto done;
        }
        entries = ne;
      }
      int64_t t = arena_add(&arena, &arena_len, &arena_cap, key);
      int64_t h = t < 0 ? -1 : arena_add(&arena, &arena_len, &arena_cap, shard);
      if (h < 0) {
        st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
        goto done;
      }
      entries[n_entries].tensor.off = (size_t)t;
      entries[n_entries].shard.off = (size_t)h;
      n_entries++;
    }
    if (j.err)
      goto bad_json;
  }
  if (j.err || !expect_end(&j))
    goto bad_json;
  if (!seen_map || n_entries == 0) {
    st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: index has no weight_map entries",
                     path);
    goto done;
  }
  if (n_entries > INT32_MAX / 2) {
    st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: %zu weight_map entries are too many",
                     path, n_entries);
    goto done;
  }
  for (size_t i = 0; i < n_entries; ++i) {
    entries[i].tensor.str = arena + entries[i].tensor.off;
    entries[i].shard.str = arena + entries[i].shard.off;
  }
  if (!nt_init(&tensors, n_entries) || !nt_init(&shards, n_entries)) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  for (size_t i = 0; i < n_entries; ++i)
    if (nt_get(&tensors, entries[i].tensor.str, (int32_t)i, entry_tensor,
               entries) >= 0) {
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: weight_map lists tensor '%s' twice", path,
                       entries[i].tensor.str);
      goto done;
    }
  /* Each distinct shard is mapped once, in the order the index names them. */
  for (size_t i = 0; i < n_entries; ++i) {
    const char *name = entries[i].shard.str;
    int32_t first = nt_get(&shards, name, (int32_t)i, entry_shard, entries);
    if (first >= 0) {
      entries[i].file = entries[first].file;
      continue;
    }
    if (!name[0] || strchr(name, '/')) {
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: shard '%s' is not a file name beside the index",
                       path, name);
      goto done;
    }
    snprintf(dir + dlen, sizeof dir - (size_t)dlen, "%s", name);
    if ((st = st_add_file(s, dir)))
      goto done;
    entries[i].file = s->n_files - 1;
  }
  if ((st = st_index(s, path)))
    goto done;
  for (size_t i = 0; i < n_entries; ++i) {
    st_tensor *t = st_find(s, entries[i].tensor.str);
    if (!t || t->file != entries[i].file) {
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: weight_map puts tensor '%s' in '%s', which does "
                       "not hold it",
                       path, entries[i].tensor.str, entries[i].shard.str);
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
  free(tensors.slot);
  free(shards.slot);
  free(entries);
  free(arena);
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
    /* (A path cut short would name another file: the index's would be the
     * shard's.) */
    if ((size_t)snprintf(buf, sizeof buf, "%s/model.safetensors.index.json",
                         path) >= sizeof buf)
      return archrt_fail(ARCHRT_ERR_IO,
                         "checkpoint directory path too long (%zu bytes): %s",
                         strlen(path), path);
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
    st = st_index(&s, path);
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
  archrt_status st = archrt_map_file(path, &f);
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
  int64_t vocab = h[5] < 0 ? -(int64_t)h[5] : h[5];
  archrt_problems probs = {{0}, 0, 0};
  struct { const char *what; int64_t got, want; } dims[] = {
      {"dim", h[0], d->d_model},       {"hidden_dim", h[1], d->d_ff},
      {"n_layers", h[2], d->n_layers}, {"n_heads", h[3], d->n_heads},
      {"n_kv_heads", h[4], d->n_kv_heads}, {"vocab_size", vocab, d->vocab_size},
  };
  for (size_t i = 0; i < sizeof dims / sizeof *dims; ++i)
    if (dims[i].got != dims[i].want)
      archrt_problem(&probs, "header %s is %lld, the model has %lld",
                     dims[i].what, (long long)dims[i].got,
                     (long long)dims[i].want);
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
  float **params = calloc((size_t)d->n_params + 1, sizeof *params);
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
  return archrt_model_set_weights(m, params, maps, 1, NULL);
}

archrt_status archrt_load_weights(archrt_model *m, const char *path) {
  if (!m || !path)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_load_weights: NULL argument");
  /* A directory or an index is a (sharded) safetensors checkpoint. */
  if (is_directory(path) || ends_with(path, ".json"))
    return archrt_load_safetensors(m, path);
  int fd;
  size_t size;
  archrt_status st = archrt_open_file(path, &fd, &size);
  if (st)
    return st;
  unsigned char head[28] = {0};
  ssize_t n = read(fd, head, sizeof head);
  close(fd);
  /* GGUF first: its byte 8 (a tensor count's) may be '{'. */
  if (n >= 4 && !memcmp(head, "GGUF", 4))
    return archrt_load_gguf(m, path);
  /* llama2.c: seven int32 dimensions, each within the spec's limits in
   * size (vocab_size's sign says whether the classifier is shared). */
  int32_t h[7];
  memcpy(h, head, sizeof h);
  int plausible = n == (ssize_t)sizeof head;
  for (int i = 0; i < 7; ++i) {
    int64_t v = i == 5 && h[i] < 0 ? -(int64_t)h[i] : h[i];
    plausible &= v > 0 && v <= (1 << 24);
  }
  /* Safetensors: 8-byte little-endian header length, then '{'. A llama2.c
   * file's byte 8 is its layer count's low byte, '{' at 123 layers: its
   * first 8 bytes (dim, then hidden_dim in the high half) read as a
   * header length run past the file's end, where a safetensors file's
   * (checked by its loader) would not. */
  uint64_t header_length;
  memcpy(&header_length, head, sizeof header_length);
  if (n >= 9 && head[8] == '{' &&
      !(plausible && header_length > (uint64_t)size - 8))
    return archrt_load_safetensors(m, path);
  if (plausible)
    return archrt_load_llama2c(m, path);
  return archrt_fail(ARCHRT_ERR_FORMAT,
                     "%s: neither a safetensors file (8-byte header length, "
                     "then a JSON object), a GGUF file (\"GGUF\") nor a "
                     "llama2.c checkpoint (7 int32 dimensions in (0, 2^24], "
                     "then floats)",
                     path);
}
