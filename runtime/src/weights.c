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

typedef struct mapped_file {
  void *data;
  size_t size;
} mapped_file;

static archrt_status map_file(const char *path, mapped_file *out) {
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

typedef struct st_tensor {
  char name[256];
  char dtype[16];
  int ndim;
  int64_t shape[8];
  int64_t begin, end;
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

archrt_status archrt_load_safetensors(archrt_model *m, const char *path) {
  if (!m || !path)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_load_safetensors: NULL argument");
  mapped_file f;
  archrt_status st = map_file(path, &f);
  if (st)
    return st;
  const archrt_gen_model *d = m->desc;
  st_tensor *tensors = NULL;
  float **params = NULL;
  uint8_t *owned = NULL;
  int n_tensors = 0, cap = 0;

  uint64_t hlen = 0;
  if (f.size < 8) {
    st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: too short for a safetensors file",
                     path);
    goto fail;
  }
  memcpy(&hlen, f.data, 8);
  if (hlen < 2 || hlen > f.size - 8 || hlen > (100u << 20)) {
    st = archrt_fail(ARCHRT_ERR_FORMAT,
                     "%s: header length %llu does not fit a file of %zu bytes "
                     "(not a safetensors file?)",
                     path, (unsigned long long)hlen, f.size);
    goto fail;
  }
  const uint8_t *data = (const uint8_t *)f.data + 8 + hlen;
  size_t data_size = f.size - 8 - hlen;
  json j = {(const char *)f.data + 8, (const char *)f.data + 8 + hlen, NULL};
  if (!expect(&j, '{'))
    goto bad_json;
  skip_ws(&j);
  if (j.p < j.end && *j.p == '}')
    j.p++;
  else
    for (;;) {
      char name[256];
      if (!read_string(&j, name, sizeof name) || !expect(&j, ':'))
        goto bad_json;
      if (!strcmp(name, "__metadata__")) {
        if (!skip_value(&j))
          goto bad_json;
      } else {
        if (n_tensors == cap) {
          cap = cap ? 2 * cap : 64;
          st_tensor *nt = realloc(tensors, (size_t)cap * sizeof *nt);
          if (!nt) {
            st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
            goto fail;
          }
          tensors = nt;
        }
        st_tensor *t = &tensors[n_tensors++];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "%s", name);
        if (!read_tensor(&j, t))
          goto bad_json;
      }
      skip_ws(&j);
      if (j.p < j.end && *j.p == ',') {
        j.p++;
        continue;
      }
      if (!expect(&j, '}'))
        goto bad_json;
      break;
    }

  archrt_problems probs = {{0}, 0, 0};
  for (int i = 0; i < n_tensors; ++i) {
    st_tensor *t = &tensors[i];
    int es = dtype_size(t->dtype);
    int64_t numel = 1;
    for (int k = 0; k < t->ndim && k < 8; ++k)
      numel *= t->shape[k];
    if (t->ndim < 0 || t->begin < 0 || !t->dtype[0])
      archrt_problem(&probs, "tensor '%s' lacks dtype, shape or data_offsets",
                     t->name);
    else if (!es)
      archrt_problem(&probs, "tensor '%s' has dtype %s (supported: F32, F16, BF16)",
                     t->name, t->dtype);
    else if (t->end < t->begin || (uint64_t)t->end > data_size ||
             t->end - t->begin != numel * es)
      archrt_problem(&probs,
                     "tensor '%s' has data_offsets [%lld, %lld] that do not "
                     "hold %lld %s values within the %zu data bytes",
                     t->name, (long long)t->begin, (long long)t->end,
                     (long long)numel, t->dtype, data_size);
  }

  params = calloc((size_t)d->n_params, sizeof *params);
  int *which = calloc((size_t)d->n_params, sizeof *which);
  if (!params || !which) {
    free(which);
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto fail;
  }
  size_t convert_floats = 0;
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    which[i] = -1;
    for (int k = 0; k < n_tensors; ++k)
      if (!strcmp(tensors[k].name, p->name)) {
        which[i] = k;
        tensors[k].matched = 1;
        break;
      }
    if (which[i] < 0) {
      archrt_problem(&probs, "missing tensor '%s'", p->name);
      continue;
    }
    st_tensor *t = &tensors[which[i]];
    int same = t->ndim == p->ndim;
    for (int k = 0; same && k < p->ndim; ++k)
      same = t->shape[k] == p->shape[k];
    if (!same) {
      char got[96], want[96];
      format_shape(got, sizeof got, t->ndim < 8 ? t->ndim : 8, t->shape);
      format_shape(want, sizeof want, p->ndim, p->shape);
      archrt_problem(&probs, "tensor '%s' has shape %s, the model expects %s",
                     p->name, got, want);
    }
    if (strcmp(t->dtype, "F32") || ((uintptr_t)(data + t->begin) & 3))
      convert_floats += (size_t)archrt_param_numel(p);
  }
  for (int k = 0; k < n_tensors; ++k)
    if (!tensors[k].matched)
      archrt_problem(&probs, "unexpected tensor '%s' (not a parameter of %s)",
                     tensors[k].name, d->name);
  if (probs.count) {
    free(which);
    st = archrt_fail(ARCHRT_ERR_MISMATCH, "%s: %d problem%s: %s", path,
                     probs.count, probs.count > 1 ? "s" : "", probs.buf);
    goto fail;
  }
  if (convert_floats &&
      !(owned = malloc(convert_floats * sizeof(float)))) {
    free(which);
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto fail;
  }
  float *next = (float *)owned;
  for (int i = 0; i < d->n_params; ++i) {
    st_tensor *t = &tensors[which[i]];
    const uint8_t *src = data + t->begin;
    int64_t n = archrt_param_numel(&d->params[i]);
    if (!strcmp(t->dtype, "F32") && !((uintptr_t)src & 3)) {
      /* In place: the mapping is private and read-only. */
      params[i] = (float *)(uintptr_t)src;
      continue;
    }
    params[i] = next;
    for (int64_t e = 0; e < n; ++e) {
      if (!strcmp(t->dtype, "F32")) {
        memcpy(&next[e], src + 4 * e, 4);
      } else {
        uint16_t h;
        memcpy(&h, src + 2 * e, 2);
        if (!strcmp(t->dtype, "BF16")) {
          uint32_t bits = (uint32_t)h << 16;
          memcpy(&next[e], &bits, 4);
        } else {
          next[e] = half_to_float(h);
        }
      }
    }
    next += n;
  }
  free(which);
  free(tensors);
  archrt_model_set_weights(m, params, f.data, f.size, owned);
  return ARCHRT_OK;

bad_json:
  st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: safetensors header: %s at byte %ld",
                   path, j.err ? j.err : "malformed JSON",
                   (long)(j.p - (const char *)f.data));
fail:
  free(tensors);
  free(params);
  free(owned);
  munmap(f.data, f.size);
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
  mapped_file f;
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
  archrt_model_set_weights(m, params, f.data, f.size, NULL);
  return ARCHRT_OK;
}

archrt_status archrt_load_weights(archrt_model *m, const char *path) {
  if (!m || !path)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_load_weights: NULL argument");
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
