/*===- gguf.c - GGUF checkpoints (llama.cpp's format, version 3) ----------===*
 *
 * The header, metadata and tensor table are read through a bounded cursor
 * (every length checked against the file before it is used, counts and
 * dimensions capped, nested arrays refused past one level); the metadata
 * the model's shape depends on is checked against it, every mismatch
 * named; then every parameter is found under llama.cpp's name for it
 * (token_embd, blk.N.attn_q, ...), its dims checked (GGUF lists the
 * innermost first), converted to f32 from F32, F16, BF16 or Q8_0 (blocks
 * of 32 int8 with an f16 scale), and the q/k rows llama.cpp's converter
 * permuted for its RoPE put back in Hugging Face's order. Only then are
 * the model's weights replaced: a failed load leaves them as they were.
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gguf_read.h"

typedef struct gguf_tensor {
  char name[GGUF_MAX_NAME];
  uint32_t n_dims, type;
  uint64_t dims[4];
  uint64_t offset;   /* from the data section's start */
  int64_t numel;
  size_t bytes;
  int used;
} gguf_tensor;

/* The metadata the model's shape is checked against. */
enum { M_EMBED, M_BLOCKS, M_HEADS, M_KV_HEADS, M_FFN, M_COUNT };
static const char *const meta_suffix[M_COUNT] = {
    ".embedding_length", ".block_count", ".attention.head_count",
    ".attention.head_count_kv", ".feed_forward_length"};

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f,
           man = h & 0x3ff, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: normalize */
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | (uint32_t)(112 - e) << 23 | (man & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 112) << 23 | man << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const gguf_tensor *)a)->name, ((const gguf_tensor *)b)->name);
}

static size_t tensor_bytes(uint32_t type, int64_t numel, uint64_t row) {
  switch (type) {
  case GGML_F32: return (size_t)numel * 4;
  case GGML_F16: case GGML_BF16: return (size_t)numel * 2;
  case GGML_Q8_0: return row % 32 ? 0 : (size_t)numel / 32 * 34;
  default: return 0;
  }
}

/* Tensor `t`'s element i (row-major over its reversed dims) as f32. */
static void dequantize(const gguf_tensor *t, const uint8_t *src, float *dst) {
  int64_t n = t->numel;
  switch (t->type) {
  case GGML_F32:
    memcpy(dst, src, (size_t)n * 4);
    break;
  case GGML_F16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      memcpy(&h, src + 2 * i, 2);
      dst[i] = f16_to_f32(h);
    }
    break;
  case GGML_BF16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      memcpy(&h, src + 2 * i, 2);
      uint32_t bits = (uint32_t)h << 16;
      memcpy(&dst[i], &bits, 4);
    }
    break;
  default: /* Q8_0: per 32 values, an f16 scale then 32 int8 */
    for (int64_t b = 0; b < n / 32; ++b) {
      const uint8_t *blk = src + b * 34;
      uint16_t h;
      memcpy(&h, blk, 2);
      float d = f16_to_f32(h);
      for (int j = 0; j < 32; ++j)
        dst[b * 32 + j] = d * (float)(int8_t)blk[2 + j];
    }
  }
}

/* llama.cpp's name for parameter `name` (Hugging Face Llama names), or 0. */
static int gguf_name(const char *name, char *out, size_t cap, int *layer,
                     int *permute) {
  static const struct { const char *hf, *gg; int permute; } top[] = {
      {"model.embed_tokens.weight", "token_embd.weight", 0},
      {"model.norm.weight", "output_norm.weight", 0},
      {"lm_head.weight", "output.weight", 0}};
  static const struct { const char *hf, *gg; int permute; } per[] = {
      {"input_layernorm.weight", "attn_norm.weight", 0},
      {"self_attn.q_proj.weight", "attn_q.weight", 1},
      {"self_attn.k_proj.weight", "attn_k.weight", 2},
      {"self_attn.v_proj.weight", "attn_v.weight", 0},
      {"self_attn.o_proj.weight", "attn_output.weight", 0},
      {"post_attention_layernorm.weight", "ffn_norm.weight", 0},
      {"mlp.gate_proj.weight", "ffn_gate.weight", 0},
      {"mlp.up_proj.weight", "ffn_up.weight", 0},
      {"mlp.down_proj.weight", "ffn_down.weight", 0}};
  *layer = -1;
  *permute = 0;
  for (size_t i = 0; i < sizeof top / sizeof *top; ++i)
    if (!strcmp(name, top[i].hf)) {
      snprintf(out, cap, "%s", top[i].gg);
      return 1;
    }
  int n = 0, len = 0;
  if (sscanf(name, "model.layers.%d.%n", &n, &len) != 1 || len == 0 || n < 0)
    return 0;
  for (size_t i = 0; i < sizeof per / sizeof *per; ++i)
    if (!strcmp(name + len, per[i].hf)) {
      snprintf(out, cap, "blk.%d.%s", n, per[i].gg);
      *layer = n;
      *permute = per[i].permute;
      return 1;
    }
  return 0;
}

archrt_status archrt_load_gguf(archrt_model *m, const char *path) {
  if (!m || !path)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_load_gguf: NULL argument");
  archrt_mapping f;
  archrt_status st = archrt_map_file(path, &f);
  if (st)
    return st;
  const archrt_gen_model *d = m->desc;
  cursor c = {f.data, (const uint8_t *)f.data + f.size, NULL};
  gguf_tensor *tensors = NULL;
  float **params = NULL;
  float *block = NULL;
  archrt_problems probs = {{0}, 0, 0};
  archrt_status rc = ARCHRT_ERR_FORMAT;
  char why[160] = "";
  uint32_t magic = 0, version = 0;
  uint64_t n_tensors = 0, n_kv = 0;
  if (!u32(&c, &magic) || memcmp(&magic, "GGUF", 4) || !u32(&c, &version) ||
      !u64(&c, &n_tensors) || !u64(&c, &n_kv)) {
    snprintf(why, sizeof why, "not a GGUF file (the magic \"GGUF\", a "
                              "version, two counts)");
    goto fail;
  }
  if (version != 3) {
    snprintf(why, sizeof why, "GGUF version %u; archc reads version 3",
             version);
    goto fail;
  }
  /* (Each entry takes at least 33 bytes of table, 12 of metadata.) */
  size_t left = (size_t)(c.end - c.p);
  if (n_tensors > GGUF_MAX_TENSORS || n_kv > GGUF_MAX_KV ||
      n_tensors > left / 33 || n_kv > left / 12) {
    snprintf(why, sizeof why, "%llu tensors and %llu metadata entries: more "
                              "than the file holds, or than the %d of each "
                              "read",
             (unsigned long long)n_tensors, (unsigned long long)n_kv,
             GGUF_MAX_TENSORS);
    goto fail;
  }
  /* Metadata: the architecture, the alignment, and the shape keys. */
  char arch[64] = "";
  double meta[M_COUNT];
  int have[M_COUNT] = {0};
  uint64_t alignment = 32;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint8_t *key;
    uint64_t klen;
    uint32_t type;
    if (!str(&c, &key, &klen) || !u32(&c, &type))
      break;
    int known = -1;
    if (klen == 20 && !memcmp(key, "general.architecture", 20) &&
        type == GV_STRING) {
      const uint8_t *v;
      uint64_t n;
      if (!str(&c, &v, &n))
        break;
      if (n >= sizeof arch || memchr(v, 0, n)) {
        snprintf(why, sizeof why, "general.architecture is %llu bytes or "
                                  "holds NUL", (unsigned long long)n);
        goto fail;
      }
      memcpy(arch, v, n);
      arch[n] = 0;
      continue;
    }
    if (klen == 17 && !memcmp(key, "general.alignment", 17)) {
      double a;
      if (!number(&c, type, &a)) {
        c.err = c.err ? c.err : "general.alignment is not a number";
        break;
      }
      if (!(a >= 1 && a <= 65536) || a != (double)(uint64_t)a ||
          ((uint64_t)a & ((uint64_t)a - 1))) {
        snprintf(why, sizeof why, "general.alignment %g is not a power of "
                                  "two in [1, 65536]", a);
        goto fail;
      }
      alignment = (uint64_t)a;
      continue;
    }
    /* (Only the llama architecture is read: its keys, in any order.) */
    for (int k = 0; k < M_COUNT; ++k) {
      size_t sl = strlen(meta_suffix[k]);
      if (klen == 5 + sl && !memcmp(key, "llama", 5) &&
          !memcmp(key + 5, meta_suffix[k], sl))
        known = k;
    }
    if (known >= 0) {
      if (!number(&c, type, &meta[known])) {
        c.err = c.err ? c.err : "a shape key is not a number";
        break;
      }
      have[known] = 1;
      continue;
    }
    if (!skip_value(&c, type, 0))
      break;
  }
  if (c.err) {
    snprintf(why, sizeof why, "metadata: %s", c.err);
    goto fail;
  }
  /* llama.cpp permutes q/k (and names tensors as read here) for its llama
   * architecture; other architectures differ in ways names do not show. */
  if (strcmp(arch, "llama")) {
    snprintf(why, sizeof why, "general.architecture is \"%.40s\"; archc "
                              "reads GGUF files of the llama architecture",
             arch[0] ? arch : "(missing)");
    goto fail;
  }
  /* The tensor table. */
  tensors = calloc(n_tensors ? n_tensors : 1, sizeof *tensors);
  if (!tensors) {
    rc = ARCHRT_ERR_OUT_OF_MEMORY;
    snprintf(why, sizeof why, "out of memory");
    goto fail;
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    gguf_tensor *t = &tensors[i];
    const uint8_t *name;
    uint64_t nlen;
    if (!str(&c, &name, &nlen) || !u32(&c, &t->n_dims))
      break;
    if (nlen == 0 || nlen >= GGUF_MAX_NAME || memchr(name, 0, nlen)) {
      snprintf(why, sizeof why, "tensor %llu's name is empty, holds NUL or "
                                "has %llu bytes (at most %d)",
               (unsigned long long)i, (unsigned long long)nlen,
               GGUF_MAX_NAME - 1);
      goto fail;
    }
    memcpy(t->name, name, nlen);
    if (t->n_dims < 1 || t->n_dims > 4) {
      snprintf(why, sizeof why, "tensor '%.64s' has %u dims (1 to 4)", t->name,
               t->n_dims);
      goto fail;
    }
    t->numel = 1;
    for (uint32_t k = 0; k < t->n_dims; ++k) {
      if (!u64(&c, &t->dims[k]))
        break;
      if (t->dims[k] == 0 || t->dims[k] > ((uint64_t)1 << 40) ||
          __builtin_mul_overflow(t->numel, (int64_t)t->dims[k], &t->numel) ||
          t->numel > ((int64_t)1 << 40)) {
        snprintf(why, sizeof why, "tensor '%.64s': dimension %u is %llu (or "
                                  "the product past 2^40)",
                 t->name, k, (unsigned long long)t->dims[k]);
        goto fail;
      }
    }
    if (c.err || !u32(&c, &t->type) || !u64(&c, &t->offset))
      break;
    t->bytes = tensor_bytes(t->type, t->numel, t->dims[0]);
    if (!t->bytes) {
      snprintf(why, sizeof why, "tensor '%.64s': type %u is not F32, F16, "
                                "BF16 or Q8_0 (or its rows are not blocks "
                                "of 32)",
               t->name, t->type);
      goto fail;
    }
  }
  if (c.err) {
    snprintf(why, sizeof why, "tensor table: %s", c.err);
    goto fail;
  }
  /* Sorted by name: duplicates side by side, lookups by bisection. */
  qsort(tensors, (size_t)n_tensors, sizeof *tensors, by_name);
  for (uint64_t i = 1; i < n_tensors; ++i)
    if (!strcmp(tensors[i - 1].name, tensors[i].name)) {
      snprintf(why, sizeof why, "tensor '%.64s' is listed twice",
               tensors[i].name);
      goto fail;
    }
  uint64_t data = ((uint64_t)(c.p - (const uint8_t *)f.data) + alignment - 1) /
                  alignment * alignment;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    gguf_tensor *t = &tensors[i];
    if (t->offset % alignment || data > f.size ||
        t->offset > f.size - data || t->bytes > f.size - data - t->offset) {
      snprintf(why, sizeof why, "data of tensor '%.64s' (offset %llu, %zu "
                                "bytes) is misaligned or past the end of "
                                "the file",
               t->name, (unsigned long long)t->offset, t->bytes);
      goto fail;
    }
  }

  /* The model's shape against the metadata. */
  rc = ARCHRT_ERR_MISMATCH;
  const int64_t want[M_COUNT] = {d->d_model, d->n_layers, d->n_heads,
                                 d->n_kv_heads, d->d_ff};
  for (int k = 0; k < M_COUNT; ++k)
    if (have[k] && meta[k] != (double)want[k])
      archrt_problem(&probs, "%s%s is %g, the model has %lld", arch,
                     meta_suffix[k], meta[k], (long long)want[k]);
  /* Every parameter under its GGUF name, with the shape it should have. */
  params = calloc((size_t)d->n_params, sizeof *params);
  size_t total = 0;
  for (int i = 0; i < d->n_params; ++i)
    total += (size_t)archrt_param_numel(&d->params[i]);
  block = params ? archrt_alloc_floats(total ? total : 1) : NULL;
  if (!params || !block) {
    rc = ARCHRT_ERR_OUT_OF_MEMORY;
    snprintf(why, sizeof why, "out of memory for %zu floats", total);
    goto fail;
  }
  size_t at = 0;
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    char gname[GGUF_MAX_NAME];
    int layer, permute;
    if ((p->source && strcmp(p->name, p->source)) || p->transpose ||
        p->rows[0] > 0 ||
        !gguf_name(p->name, gname, sizeof gname, &layer, &permute)) {
      archrt_problem(&probs, "parameter '%s' has no GGUF name (GGUF loading "
                             "takes the Llama family's tensors)",
                     p->name);
      continue;
    }
    gguf_tensor key;
    snprintf(key.name, sizeof key.name, "%s", gname);
    gguf_tensor *t = bsearch(&key, tensors, (size_t)n_tensors,
                             sizeof *tensors, by_name);
    if (!t) {
      archrt_problem(&probs, "tensor '%s' (parameter '%s') is missing",
                     gname, p->name);
      continue;
    }
    t->used = 1;
    int same = (int)t->n_dims == p->ndim;
    for (int k = 0; same && k < p->ndim; ++k)
      same = t->dims[p->ndim - 1 - k] == (uint64_t)p->shape[k];
    if (!same) {
      char got[96] = "", need[96] = "";
      for (uint32_t k = 0; k < t->n_dims; ++k)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu",
                 k ? ", " : "", (unsigned long long)t->dims[t->n_dims - 1 - k]);
      for (int k = 0; k < p->ndim; ++k)
        snprintf(need + strlen(need), sizeof need - strlen(need), "%s%lld",
                 k ? ", " : "", (long long)p->shape[k]);
      archrt_problem(&probs, "tensor '%s' is [%s] (GGUF's dims reversed), "
                             "parameter '%s' is [%s]",
                     gname, got, p->name, need);
      continue;
    }
    float *dst = block + at;
    at += (size_t)t->numel;
    dequantize(t, (const uint8_t *)f.data + data + t->offset, dst);
    if (permute) {
      /* llama.cpp stored rows h*hd + 2i + j of head h for Hugging Face's
       * rows h*hd + j*hd/2 + i: put them back. */
      int64_t heads = permute == 1 ? d->n_heads : d->n_kv_heads;
      int64_t rows = p->shape[0], cols = p->shape[1], hd = rows / heads;
      float *tmp = malloc((size_t)(hd * cols) * sizeof *tmp);
      if (!tmp || hd % 2 || hd * heads != rows) {
        free(tmp);
        archrt_problem(&probs, "tensor '%s': %lld rows do not split into "
                               "%lld heads of an even width",
                       gname, (long long)rows, (long long)heads);
        continue;
      }
      for (int64_t h = 0; h < heads; ++h) {
        float *head = dst + h * hd * cols;
        memcpy(tmp, head, (size_t)(hd * cols) * sizeof *tmp);
        for (int64_t r = 0; r < hd / 2; ++r)
          for (int64_t j = 0; j < 2; ++j)
            memcpy(head + (j * hd / 2 + r) * cols, tmp + (2 * r + j) * cols,
                   (size_t)cols * sizeof *tmp);
      }
      free(tmp);
    }
    params[i] = dst;
  }
  /* Tensors no parameter reads (llama.cpp's rope_freqs is a table archc
   * computes itself). */
  for (uint64_t j = 0; j < n_tensors; ++j)
    if (!tensors[j].used && strcmp(tensors[j].name, "rope_freqs.weight"))
      archrt_problem(&probs, "tensor '%s' is not a parameter of the model",
                     tensors[j].name);
  if (probs.count) {
    snprintf(why, sizeof why, "%d problem%s", probs.count,
             probs.count > 1 ? "s" : "");
    goto fail;
  }
  free(tensors);
  munmap(f.data, f.size);
  return archrt_model_set_weights(m, params, NULL, 0, block);

fail:
  free(tensors);
  free(params);
  free(block);
  munmap(f.data, f.size);
  if (probs.count)
    return archrt_fail(rc, "%s: %s: %s", path, why, probs.buf);
  return archrt_fail(rc, "%s: %s", path, why);
}
