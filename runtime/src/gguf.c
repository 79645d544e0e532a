/*===- gguf.c - GGUF checkpoints (llama.cpp's format, version 3) ----------===*
 *
 * The header, metadata and tensor table are read first (gguf_header.c,
 * every length bounded; the llama, qwen2, qwen2moe, qwen3, qwen3moe,
 * gemma2, gemma3 and phi3 architectures); the metadata the model's shape
 * depends on is checked against the model, every mismatch named; then
 * every parameter is found under llama.cpp's name for it (token_embd,
 * blk.N.attn_q, ...; a routed expert as a slice of its layer's stacked
 * tensor), its dims checked (GGUF lists the innermost first), converted
 * to f32 from F32, F16, BF16, the first quants Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0 (blocks of 32) or the k-quants Q4_K, Q5_K, Q6_K (super-blocks of
 * 256), and the q/k rows llama.cpp's converter permuted for its RoPE put
 * back in Hugging Face's order. Only then are the model's weights
 * replaced: a failed load leaves them as they were.
 *
 *===---------------------------------------------------------------------===*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gguf.h"

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

static float f16_at(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return f16_to_f32(h);
}

/* llama.cpp's first quants, a block of 32 values each: an f16 scale d
 * (Q4_1, Q5_1: and an f16 offset m), for Q5_0/Q5_1 32 fifth bits (a
 * little-endian word), then 16 bytes of 4-bit values, value j < 16 in
 * the low nibble of byte j and value j + 16 in its high one; Q4_0 and
 * Q5_0 centre the values (q - 8, q - 16), Q4_1 and Q5_1 add m. */
static void legacy_quant(uint32_t type, const uint8_t *blk, float *y) {
  int offset = type == GGML_Q4_1 || type == GGML_Q5_1;
  int five = type == GGML_Q5_0 || type == GGML_Q5_1;
  float d = f16_at(blk), m = offset ? f16_at(blk + 2) : 0.0f;
  uint32_t qh = 0;
  if (five)
    memcpy(&qh, blk + 2 + 2 * offset, 4);
  const uint8_t *qs = blk + 2 + 2 * offset + 4 * five;
  int centre = offset ? 0 : five ? 16 : 8;
  for (int j = 0; j < 16; ++j) {
    int lo = qs[j] & 15, hi = qs[j] >> 4;
    if (five) {
      lo |= (int)(qh >> j & 1) << 4;
      hi |= (int)(qh >> (j + 16) & 1) << 4;
    }
    y[j] = (float)(lo - centre) * d;
    y[j + 16] = (float)(hi - centre) * d;
    if (offset) {
      y[j] += m;
      y[j + 16] += m;
    }
  }
}

/* The k-quants (llama.cpp's ggml-quants.c), a super-block of 256 values
 * each. Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of eight 6-bit scales
 * and eight 6-bit mins, 128 bytes of 4-bit values; value i of sub-block
 * s (32 values) is d * scale[s] * q - dmin * min[s]. Q5_K (176 bytes)
 * adds a fifth bit per value from 32 bytes between the scales and the
 * 4-bit values. The 4-bit values of sub-blocks 2c and 2c + 1 share the
 * 32 bytes of chunk c (low and high nibbles), their fifth bits bits 2c
 * and 2c + 1 of the same 32 bytes. */
static void k_quant_45(int five, const uint8_t *blk, float *y) {
  float d = f16_at(blk), dmin = f16_at(blk + 2);
  const uint8_t *sc = blk + 4, *qh = blk + 16, *qs = blk + (five ? 48 : 16);
  for (int s = 0; s < 8; ++s) {
    /* Scales and mins 0-3: the low 6 bits of bytes 0-3 and 4-7; 4-7: a
     * nibble of bytes 8-11 and the top 2 bits of bytes 0-3 and 4-7. */
    int scale = s < 4 ? sc[s] & 63 : (sc[s + 4] & 15) | (sc[s - 4] >> 6) << 4;
    int min = s < 4 ? sc[s + 4] & 63 : (sc[s + 4] >> 4) | (sc[s] >> 6) << 4;
    float a = d * (float)scale, m = dmin * (float)min;
    const uint8_t *q = qs + 32 * (s / 2);
    for (int l = 0; l < 32; ++l) {
      int v = s % 2 ? q[l] >> 4 : q[l] & 15;
      if (five && qh[l] >> s & 1)
        v += 16;
      y[32 * s + l] = a * (float)v - m;
    }
  }
}

/* Q6_K (210 bytes): 128 bytes of the low 4 bits, 64 of the high 2, 16
 * int8 scales (one per 16 values), an f16 d; value = d * scale * (q -
 * 32). In each half of 128 values, value l (< 32) takes the low nibble
 * of low byte l, l + 32 that of byte l + 32, l + 64 and l + 96 their
 * high nibbles, and the 2-bit pairs of high byte l in that order. */
static void k_quant_6(const uint8_t *blk, float *y) {
  float d = f16_at(blk + 208);
  const int8_t *sc = (const int8_t *)(blk + 192);
  for (int half = 0; half < 2; ++half) {
    const uint8_t *ql = blk + 64 * half, *qh = blk + 128 + 32 * half;
    for (int l = 0; l < 32; ++l)
      for (int k = 0; k < 4; ++k) {
        int lo = (k % 2 ? ql[l + 32] : ql[l]) >> (k / 2 * 4) & 15;
        int q = (lo | (qh[l] >> (2 * k) & 3) << 4) - 32;
        int i = 32 * k + l;
        y[128 * half + i] = d * (float)sc[8 * half + i / 16] * (float)q;
      }
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
  case GGML_Q4_0:
  case GGML_Q4_1:
  case GGML_Q5_0:
  case GGML_Q5_1:
    for (int64_t b = 0, size = t->type == GGML_Q4_0   ? 18
                               : t->type == GGML_Q4_1 ? 20
                               : t->type == GGML_Q5_0 ? 22
                                                      : 24;
         b < n / 32; ++b)
      legacy_quant(t->type, src + b * size, dst + b * 32);
    break;
  case GGML_Q8_0: /* per 32 values, an f16 scale then 32 int8 */
    for (int64_t b = 0; b < n / 32; ++b) {
      const uint8_t *blk = src + b * 34;
      float d = f16_at(blk);
      for (int j = 0; j < 32; ++j)
        dst[b * 32 + j] = d * (float)(int8_t)blk[2 + j];
    }
    break;
  case GGML_Q4_K:
  case GGML_Q5_K:
    for (int64_t b = 0, size = t->type == GGML_Q5_K ? 176 : 144; b < n / 256;
         ++b)
      k_quant_45(t->type == GGML_Q5_K, src + b * size, dst + b * 256);
    break;
  case GGML_Q6_K:
    for (int64_t b = 0; b < n / 256; ++b)
      k_quant_6(src + b * 210, dst + b * 256);
    break;
  default: /* (tensor_bytes admits no other type) */
    memset(dst, 0, (size_t)n * sizeof *dst);
  }
}

/* llama.cpp's name for parameter `name` (Hugging Face Llama names), or 0;
 * `permute` says whether llama.cpp permuted its rows (q: 1, k: 2), which
 * it does for its llama architecture only (Qwen 2 and 3, Gemma 2 and 3
 * rotate as Hugging Face does). Gemma's sandwich norms take their own
 * names there (its post_attention_layernorm is not Llama's ffn_norm). */
static int gguf_name(const char *name, const char *arch, char *out, size_t cap,
                     int *layer, int *permute, int *expert) {
  static const struct { const char *hf, *gg; } gemma[] = {
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"}};
  static const struct { const char *hf, *gg; int permute; } top[] = {
      {"model.embed_tokens.weight", "token_embd.weight", 0},
      {"model.norm.weight", "output_norm.weight", 0},
      {"lm_head.weight", "output.weight", 0}};
  static const struct { const char *hf, *gg; int permute; } per[] = {
      {"input_layernorm.weight", "attn_norm.weight", 0},
      {"self_attn.q_proj.weight", "attn_q.weight", 1},
      {"self_attn.k_proj.weight", "attn_k.weight", 2},
      {"self_attn.v_proj.weight", "attn_v.weight", 0},
      {"self_attn.q_proj.bias", "attn_q.bias", 1},
      {"self_attn.k_proj.bias", "attn_k.bias", 2},
      {"self_attn.v_proj.bias", "attn_v.bias", 0},
      {"self_attn.q_norm.weight", "attn_q_norm.weight", 0},
      {"self_attn.k_norm.weight", "attn_k_norm.weight", 0},
      {"self_attn.o_proj.weight", "attn_output.weight", 0},
      {"post_attention_layernorm.weight", "ffn_norm.weight", 0},
      {"mlp.gate_proj.weight", "ffn_gate.weight", 0},
      {"mlp.up_proj.weight", "ffn_up.weight", 0},
      {"mlp.down_proj.weight", "ffn_down.weight", 0},
      {"self_attn.qkv_proj.weight", "attn_qkv.weight", 0},
      {"mlp.gate_up_proj.weight", "ffn_up.weight", 0},
      {"mlp.gate.weight", "ffn_gate_inp.weight", 0},
      {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight", 0},
      {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight", 0},
      {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight", 0},
      {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", 0}};
  /* A routed expert's matrices are slices of one tensor per layer, the
   * experts stacked outermost ([experts, rows, columns]). */
  static const struct { const char *hf, *gg; } experts[] = {
      {"gate_proj.weight", "ffn_gate_exps.weight"},
      {"up_proj.weight", "ffn_up_exps.weight"},
      {"down_proj.weight", "ffn_down_exps.weight"}};
  *layer = -1;
  *expert = -1;
  *permute = 0;
  for (size_t i = 0; i < sizeof top / sizeof *top; ++i)
    if (!strcmp(name, top[i].hf)) {
      snprintf(out, cap, "%s", top[i].gg);
      return 1;
    }
  int n = 0, len = 0;
  if (sscanf(name, "model.layers.%d.%n", &n, &len) != 1 || len == 0 || n < 0)
    return 0;
  int e = 0, elen = 0;
  if (sscanf(name + len, "mlp.experts.%d.%n", &e, &elen) == 1 && elen > 0 &&
      e >= 0)
    for (size_t i = 0; i < sizeof experts / sizeof *experts; ++i)
      if (!strcmp(name + len + elen, experts[i].hf)) {
        snprintf(out, cap, "blk.%d.%s", n, experts[i].gg);
        *layer = n;
        *expert = e;
        return 1;
      }
  if (!strcmp(arch, "gemma2") || !strcmp(arch, "gemma3"))
    for (size_t i = 0; i < sizeof gemma / sizeof *gemma; ++i)
      if (!strcmp(name + len, gemma[i].hf)) {
        snprintf(out, cap, "blk.%d.%s", n, gemma[i].gg);
        *layer = n;
        return 1;
      }
  for (size_t i = 0; i < sizeof per / sizeof *per; ++i)
    if (!strcmp(name + len, per[i].hf)) {
      snprintf(out, cap, "blk.%d.%s", n, per[i].gg);
      *layer = n;
      *permute = strcmp(arch, "llama") ? 0 : per[i].permute;
      return 1;
    }
  return 0;
}

/* How one parameter's floats are made from the file (archrt_deferred's
 * ctx): the tensor's bytes dequantized (a gathered parameter's rows of a
 * fused tensor; a stacked tensor's slice), a Gemma norm's 1 taken off,
 * permuted q/k rows put back. */
typedef struct {
  gguf_tensor src;      /* what is read: the tensor, a slice or a row */
  const uint8_t *bytes; /* its first byte in the mapping */
  const archrt_gen_param *p;
  int gathered;         /* rows of a fused tensor: src is one row */
  int gemma_norm;
  int64_t heads;        /* permuted rows: the heads; else 0 */
  float *tmp;           /* one head's rows (shared: fills run one by one) */
} gguf_fill;

/* Row r of gathered parameter `p` is its fused tensor's row g * rows[1] +
 * rows[2] + r' (r = g * rows[3] + r'), each row whole blocks. */
static int64_t fused_row(const archrt_gen_param *p, int64_t r) {
  return r / p->rows[3] * p->rows[1] + p->rows[2] + r % p->rows[3];
}

static void fill_param(const void *ctx, float *dst) {
  const gguf_fill *g = ctx;
  const archrt_gen_param *p = g->p;
  if (g->gathered) {
    int64_t cols = p->shape[1];
    for (int64_t r = 0; r < p->shape[0]; ++r)
      dequantize(&g->src,
                 g->bytes + (uint64_t)fused_row(p, r) * g->src.bytes,
                 dst + r * cols);
    return;
  }
  dequantize(&g->src, g->bytes, dst);
  if (g->gemma_norm)
    for (int64_t k = 0; k < g->src.numel; ++k)
      dst[k] -= 1.0f;
  if (g->heads) {
    /* llama.cpp stored rows h*hd + 2i + j of head h for Hugging Face's
     * rows h*hd + j*hd/2 + i: put them back. */
    int64_t rows = p->shape[0], cols = p->ndim > 1 ? p->shape[1] : 1,
            hd = rows / g->heads;
    for (int64_t h = 0; h < g->heads; ++h) {
      float *head = dst + h * hd * cols;
      memcpy(g->tmp, head, (size_t)(hd * cols) * sizeof *g->tmp);
      for (int64_t r = 0; r < hd / 2; ++r)
        for (int64_t j = 0; j < 2; ++j)
          memcpy(head + (j * hd / 2 + r) * cols, g->tmp + (2 * r + j) * cols,
                 (size_t)cols * sizeof *g->tmp);
    }
  }
}

/* fill_param, then the pages it read given back (the file stays mapped
 * until preparation ends; nothing reads it in place). */
static void fill_and_drop(const void *ctx, float *dst) {
  const gguf_fill *g = ctx;
  fill_param(ctx, dst);
  if (g->gathered)
    return; /* (rows scattered over a tensor other parameters read) */
  archrt_drop_pages(g->bytes, g->src.bytes);
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
  gguf_header h;
  float **params = NULL;
  float *block = NULL, *tmp = NULL;
  gguf_fill *fills = NULL;
  archrt_deferred *deferred = NULL;
  int64_t tmp_floats = 0;
  archrt_problems probs = {{0}, 0, 0};
  char why[256] = "";
  archrt_status rc =
      archrt_gguf_read_header(&f, &h, archrt_gguf_archs, why, sizeof why);
  if (rc) {
    munmap(f.data, f.size);
    return archrt_fail(rc, "%s: %s", path, why);
  }
  gguf_tensor *tensors = h.tensors;
  const uint64_t n_tensors = h.n_tensors, data = h.data;
  const char *arch = h.arch;
  const int gemma = !strcmp(arch, "gemma2") || !strcmp(arch, "gemma3");
  /* llama.cpp's llama files hold q/k rows permuted for its interleaved
   * rotation: a model that rotates half-split (Hugging Face's Llama) takes
   * them back, one that rotates interleaved (Meta's own, llama2.c) takes
   * them as they are. (The styles are the forward pass's RoPE kernels',
   * from the glue: a library compiled from IR has no spec text.) */
  const int interleaved = d->rope_styles == ARCHRT_GEN_ROPE_INTERLEAVED;
  const int both_styles =
      d->rope_styles ==
      (ARCHRT_GEN_ROPE_HALF_SPLIT | ARCHRT_GEN_ROPE_INTERLEAVED);

  /* The model's shape against the metadata. */
  rc = ARCHRT_ERR_MISMATCH;
  const int64_t want[M_COUNT] = {d->d_model, d->n_layers, d->n_heads,
                                 d->n_kv_heads, d->d_ff};
  /* (A mixture's feed_forward_length is its dense FFN's, which the
   * model's d_ff, an expert's width, is not: checked by the tensors.) */
  int moe = 0;
  for (int i = 0; i < d->n_params; ++i)
    moe |= strstr(d->params[i].name, ".mlp.experts.") != NULL;
  for (int k = 0; k < M_COUNT; ++k)
    if (h.have[k] && h.meta[k] != (double)want[k] && !(moe && k == M_FFN))
      archrt_problem(&probs, "%s%s is %g, the model has %lld", arch,
                     archrt_gguf_meta_suffix[k], h.meta[k], (long long)want[k]);
  /* Every parameter under its GGUF name, with the shape it should have. */
  params = calloc((size_t)d->n_params + 1, sizeof *params);
  fills = calloc((size_t)d->n_params + 1, sizeof *fills);
  deferred = calloc((size_t)d->n_params + 1, sizeof *deferred);
  size_t total = 0;
  for (int i = 0; i < d->n_params; ++i)
    total += (size_t)archrt_param_numel(&d->params[i]);
  block = params ? archrt_alloc_floats(total ? total : 1) : NULL;
  if (!params || !block || !fills || !deferred) {
    rc = ARCHRT_ERR_OUT_OF_MEMORY;
    snprintf(why, sizeof why, "out of memory for %zu floats", total);
    goto fail;
  }
  for (int i = 0; i < d->n_params; ++i) {
    const archrt_gen_param *p = &d->params[i];
    char gname[GGUF_MAX_NAME];
    int layer, permute, expert;
    /* A parameter its naming scheme gathers from rows of a fused tensor
     * (Phi-3's qkv_proj, gate_up_proj) is read from llama.cpp's fused
     * tensor of the same rows; transposed ones have no counterpart. */
    const int gathered = p->source && p->rows[0] > 0;
    if (p->transpose ||
        !gguf_name(gathered ? p->source : p->name, arch, gname, sizeof gname,
                   &layer, &permute, &expert)) {
      archrt_problem(&probs, "parameter '%s' has no GGUF name (GGUF loading "
                             "takes the Llama family's tensors)",
                     p->name);
      continue;
    }
    gguf_tensor key;
    snprintf(key.name, sizeof key.name, "%s", gname);
    gguf_tensor *t = bsearch(&key, tensors, (size_t)n_tensors,
                             sizeof *tensors, gguf_by_name);
    if (!t) {
      archrt_problem(&probs, "tensor '%s' (parameter '%s') is missing",
                     gname, p->name);
      continue;
    }
    /* The tensor's dims reversed are the parameter's; an expert's are
     * those of one slice of the stacked tensor; Qwen-MoE's one-row shared
     * expert gate [1, d] is a vector [d] in llama.cpp's files. */
    const gguf_tensor *src = t;
    gguf_tensor slice;
    uint64_t skip = 0;
    int same;
    if (expert >= 0) {
      same = t->n_dims == 3 && p->ndim == 2 &&
             t->dims[0] == (uint64_t)p->shape[1] &&
             t->dims[1] == (uint64_t)p->shape[0] &&
             (uint64_t)expert < t->dims[2];
      if (same) {
        slice = *t;
        slice.n_dims = 2;
        slice.numel = p->shape[0] * p->shape[1];
        slice.bytes = t->bytes / t->dims[2];
        skip = (uint64_t)expert * slice.bytes;
        src = &slice;
      }
    } else if (gathered) {
      same = t->n_dims == 2 && p->ndim == 2 && p->source_ndim == 2 &&
             p->rows[3] > 0 &&
             t->dims[0] == (uint64_t)p->source_shape[1] &&
             t->dims[1] == (uint64_t)p->source_shape[0] &&
             p->shape[1] == p->source_shape[1];
    } else if (t->n_dims == 1 && p->ndim == 2 && p->shape[0] == 1) {
      same = t->dims[0] == (uint64_t)p->shape[1];
    } else {
      same = (int)t->n_dims == p->ndim;
      for (int k = 0; same && k < p->ndim; ++k)
        same = t->dims[p->ndim - 1 - k] == (uint64_t)p->shape[k];
    }
    t->named = 1;
    if (same)
      ++t->used;
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
    gguf_fill *g = &fills[i];
    *g = (gguf_fill){*src, (const uint8_t *)f.data + data + t->offset + skip,
                     p, 0, 0, 0, NULL};
    if (gathered) {
      /* (each row whole blocks: src is one row of the fused tensor) */
      int64_t cols = p->shape[1], r = 0;
      g->src.numel = cols;
      g->src.bytes = t->bytes / t->dims[1];
      g->gathered = 1;
      while (r < p->shape[0] && fused_row(p, r) >= 0 &&
             (uint64_t)fused_row(p, r) < t->dims[1])
        ++r;
      if (r < p->shape[0])
        archrt_problem(&probs, "parameter '%s' gathers rows past tensor "
                               "'%s'", p->name, gname);
      continue;
    }
    /* llama.cpp's Gemma converters store a norm's 1 + w (its RMSNorm
     * scales by the weight alone); archc's Gemma specs scale by 1 + w. */
    size_t nl = strlen(gname);
    g->gemma_norm = gemma && nl >= 11 && !strcmp(gname + nl - 11, "norm.weight");
    if (permute && both_styles) {
      archrt_problem(&probs, "tensor '%s': llama.cpp permuted its rows for "
                             "one RoPE style, and the model rotates in both "
                             "(half-split and interleaved layers)",
                     gname);
      continue;
    }
    if (permute && !interleaved) {
      int64_t heads = permute == 1 ? d->n_heads : d->n_kv_heads;
      int64_t rows = p->shape[0], cols = p->ndim > 1 ? p->shape[1] : 1,
              hd = rows / heads;
      if (hd % 2 || hd * heads != rows) {
        archrt_problem(&probs, "tensor '%s': %lld rows do not split into "
                               "%lld heads of an even width",
                       gname, (long long)rows, (long long)heads);
        continue;
      }
      g->heads = heads;
      if (hd * cols > tmp_floats)
        tmp_floats = hd * cols;
    }
  }
  /* Tensors no parameter reads (llama.cpp's rope_freqs, Llama 3.1's
   * scaling, and rope_factors_long/short, LongRoPE's, are tables the
   * spec's RoPE holds: archc import-hf FILE.gguf reads them into it). */
  for (uint64_t j = 0; j < n_tensors; ++j) {
    const gguf_tensor *t = &tensors[j];
    if (!t->named && strcmp(t->name, "rope_freqs.weight") &&
        strcmp(t->name, "rope_factors_long.weight") &&
        strcmp(t->name, "rope_factors_short.weight"))
      archrt_problem(&probs, "tensor '%s' is not a parameter of the model",
                     t->name);
    else if (t->used && t->n_dims == 3 && (uint64_t)t->used != t->dims[2])
      archrt_problem(&probs, "tensor '%s' stacks %llu experts; the model "
                             "reads %d",
                     t->name, (unsigned long long)t->dims[2], t->used);
  }
  if (probs.count) {
    snprintf(why, sizeof why, "%d problem%s", probs.count,
             probs.count > 1 ? "s" : "");
    goto fail;
  }
  /* The parameters only preparation reads are made when it first reads
   * them (archrt_model_set_weights_deferred), the others now. */
  tmp = malloc((size_t)(tmp_floats ? tmp_floats : 1) * sizeof *tmp);
  if (!tmp) {
    rc = ARCHRT_ERR_OUT_OF_MEMORY;
    snprintf(why, sizeof why, "out of memory for %lld floats",
             (long long)tmp_floats);
    goto fail;
  }
  archrt_place_params(d, params, block);
  int n_deferred = 0;
  for (int i = 0; i < d->n_params; ++i) {
    fills[i].tmp = tmp;
    if (deferred_param(&d->params[i]))
      deferred[n_deferred++] =
          (archrt_deferred){params[i], fill_and_drop, &fills[i], 0};
    else
      fill_and_drop(&fills[i], params[i]);
  }
  st = archrt_model_set_weights_deferred(m, params, NULL, 0, block, deferred,
                                         n_deferred);
  free(tensors);
  free(fills);
  free(deferred);
  free(tmp);
  munmap(f.data, f.size);
  return st;

fail:
  free(tensors);
  free(params);
  free(block);
  free(fills);
  free(deferred);
  free(tmp);
  munmap(f.data, f.size);
  if (probs.count)
    return archrt_fail(rc, "%s: %s: %s", path, why, probs.buf);
  return archrt_fail(rc, "%s: %s", path, why);
}
