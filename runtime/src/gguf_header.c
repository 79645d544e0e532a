/*===- gguf_header.c - A GGUF file's header, metadata and tensor table ---===*
 *
 * Read through a bounded cursor (gguf_read.h): every length checked
 * against the file before it is used, counts and dimensions capped, nested
 * arrays refused past one level, each tensor's data inside the file.
 *
 *===---------------------------------------------------------------------===*/
#include "gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t tensor_bytes(uint32_t type, int64_t numel, uint64_t row) {
  switch (type) {
  case GGML_F32: return (size_t)numel * 4;
  case GGML_F16: case GGML_BF16: return (size_t)numel * 2;
  case GGML_Q4_0: return row % 32 ? 0 : (size_t)numel / 32 * 18;
  case GGML_Q4_1: return row % 32 ? 0 : (size_t)numel / 32 * 20;
  case GGML_Q5_0: return row % 32 ? 0 : (size_t)numel / 32 * 22;
  case GGML_Q5_1: return row % 32 ? 0 : (size_t)numel / 32 * 24;
  case GGML_Q8_0: return row % 32 ? 0 : (size_t)numel / 32 * 34;
  case GGML_Q4_K: return row % 256 ? 0 : (size_t)numel / 256 * 144;
  case GGML_Q5_K: return row % 256 ? 0 : (size_t)numel / 256 * 176;
  case GGML_Q6_K: return row % 256 ? 0 : (size_t)numel / 256 * 210;
  default: return 0;
  }
}

const char *const archrt_gguf_meta_suffix[M_COUNT] = {
    ".embedding_length", ".block_count", ".attention.head_count",
    ".attention.head_count_kv", ".feed_forward_length"};

const char *const archrt_gguf_archs[] = {
    "llama", "qwen2", "qwen2moe", "qwen3", "qwen3moe", "gemma2", "gemma3",
    "phi3", NULL};

/* Orders pointers to tensors by their data's offset (qsort). */
static int by_offset(const void *a, const void *b) {
  uint64_t x = (*(const gguf_tensor *const *)a)->offset,
           y = (*(const gguf_tensor *const *)b)->offset;
  return (x > y) - (x < y);
}

archrt_status archrt_gguf_read_header(const archrt_mapping *f, gguf_header *h,
                                      const char *const *archs, char *why,
                                      size_t cap) {
  memset(h, 0, sizeof *h);
  h->alignment = 32;
  cursor c = {f->data, (const uint8_t *)f->data + f->size, NULL};
  gguf_tensor *tensors = NULL;
  archrt_status rc = ARCHRT_ERR_FORMAT;
  uint32_t magic = 0, version = 0;
  uint64_t n_tensors = 0, n_kv = 0;
  if (!u32(&c, &magic) || memcmp(&magic, "GGUF", 4) || !u32(&c, &version) ||
      !u64(&c, &n_tensors) || !u64(&c, &n_kv)) {
    snprintf(why, cap, "not a GGUF file (the magic \"GGUF\", a version, two "
                       "counts)");
    goto fail;
  }
  h->version = version;
  if (version != 3) {
    snprintf(why, cap, "GGUF version %u; archc reads version 3", version);
    goto fail;
  }
  /* (Each entry takes at least 33 bytes of table, 12 of metadata.) */
  size_t left = (size_t)(c.end - c.p);
  if (n_tensors > GGUF_MAX_TENSORS || n_kv > GGUF_MAX_KV ||
      n_tensors > left / 33 || n_kv > left / 12) {
    snprintf(why, cap, "%llu tensors and %llu metadata entries: more than "
                       "the file holds, or than the %d of each read",
             (unsigned long long)n_tensors, (unsigned long long)n_kv,
             GGUF_MAX_TENSORS);
    goto fail;
  }
  /* Metadata, twice: general.architecture first (it may come anywhere),
   * then the alignment and the shape keys under that architecture's name,
   * "<arch>.embedding_length" (another architecture's keys, which may be
   * per-layer arrays, are skipped). */
  const uint8_t *meta = c.p;
  for (int pass = 0; pass < 2 && !c.err; ++pass) {
    c.p = meta;
    for (uint64_t i = 0; i < n_kv; ++i) {
      const uint8_t *key;
      uint64_t klen;
      uint32_t type;
      if (!str(&c, &key, &klen) || !u32(&c, &type))
        break;
      if (pass == 0 && klen == 20 &&
          !memcmp(key, "general.architecture", 20) && type == GV_STRING) {
        const uint8_t *v;
        uint64_t n;
        if (!str(&c, &v, &n))
          break;
        if (n >= sizeof h->arch || memchr(v, 0, n)) {
          snprintf(why, cap, "general.architecture is %llu bytes or holds "
                             "NUL", (unsigned long long)n);
          goto fail;
        }
        memcpy(h->arch, v, n);
        h->arch[n] = 0;
        continue;
      }
      if (pass == 1 && klen == 17 && !memcmp(key, "general.alignment", 17)) {
        double a;
        if (!number(&c, type, &a)) {
          c.err = c.err ? c.err : "general.alignment is not a number";
          break;
        }
        if (!(a >= 1 && a <= 65536) || a != (double)(uint64_t)a ||
            ((uint64_t)a & ((uint64_t)a - 1))) {
          snprintf(why, cap, "general.alignment %g is not a power of two in "
                             "[1, 65536]", a);
          goto fail;
        }
        h->alignment = (uint64_t)a;
        continue;
      }
      int known = -1;
      size_t al = strlen(h->arch);
      for (int k = 0; pass == 1 && al && k < M_COUNT; ++k) {
        size_t sl = strlen(archrt_gguf_meta_suffix[k]);
        if (klen == al + sl && !memcmp(key, h->arch, al) &&
            !memcmp(key + al, archrt_gguf_meta_suffix[k], sl))
          known = k;
      }
      if (known >= 0) {
        if (!number(&c, type, &h->meta[known])) {
          c.err = c.err ? c.err : "a shape key is not a number";
          break;
        }
        h->have[known] = 1;
        continue;
      }
      if (!skip_value(&c, type, 0))
        break;
    }
    if (c.err) {
      snprintf(why, cap, "metadata: %s", c.err);
      goto fail;
    }
    /* Architectures llama.cpp names otherwise differ in ways names do not
     * show (fused tensors, values changed at conversion). */
    if (pass == 0 && archs) {
      const char *const *a = archs;
      while (*a && strcmp(*a, h->arch))
        ++a;
      if (!*a) {
        char list[96] = "";
        for (a = archs; *a; ++a)
          snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                   a == archs ? "" : a[1] ? ", " : " and ", *a);
        snprintf(why, cap, "general.architecture is \"%.40s\"; archc reads "
                           "GGUF files of the %s architectures",
                 h->arch[0] ? h->arch : "(missing)", list);
        goto fail;
      }
    }
  }
  /* The tensor table. */
  tensors = calloc(n_tensors ? n_tensors : 1, sizeof *tensors);
  if (!tensors) {
    rc = ARCHRT_ERR_OUT_OF_MEMORY;
    snprintf(why, cap, "out of memory");
    goto fail;
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    gguf_tensor *t = &tensors[i];
    const uint8_t *name;
    uint64_t nlen;
    if (!str(&c, &name, &nlen) || !u32(&c, &t->n_dims))
      break;
    if (nlen == 0 || nlen >= GGUF_MAX_NAME || memchr(name, 0, nlen)) {
      snprintf(why, cap, "tensor %llu's name is empty, holds NUL or has %llu "
                         "bytes (at most %d)",
               (unsigned long long)i, (unsigned long long)nlen,
               GGUF_MAX_NAME - 1);
      goto fail;
    }
    memcpy(t->name, name, nlen);
    if (t->n_dims < 1 || t->n_dims > 4) {
      snprintf(why, cap, "tensor '%.64s' has %u dims (1 to 4)", t->name,
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
        snprintf(why, cap, "tensor '%.64s': dimension %u is %llu (or the "
                           "product past 2^40)",
                 t->name, k, (unsigned long long)t->dims[k]);
        goto fail;
      }
    }
    if (c.err || !u32(&c, &t->type) || !u64(&c, &t->offset))
      break;
    t->bytes = tensor_bytes(t->type, t->numel, t->dims[0]);
    if (!t->bytes) {
      snprintf(why, cap, "tensor '%.64s': type %u is not F32, F16, BF16, "
                         "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or Q6_K "
                         "(or its rows are not whole blocks: 32 values, 256 "
                         "for the k-quants)",
               t->name, t->type);
      goto fail;
    }
  }
  if (c.err) {
    snprintf(why, cap, "tensor table: %s", c.err);
    goto fail;
  }
  /* Sorted by name: duplicates side by side, lookups by bisection. */
  qsort(tensors, (size_t)n_tensors, sizeof *tensors, gguf_by_name);
  for (uint64_t i = 1; i < n_tensors; ++i)
    if (!strcmp(tensors[i - 1].name, tensors[i].name)) {
      snprintf(why, cap, "tensor '%.64s' is listed twice", tensors[i].name);
      goto fail;
    }
  uint64_t data = ((uint64_t)(c.p - (const uint8_t *)f->data) + h->alignment -
                   1) / h->alignment * h->alignment;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    gguf_tensor *t = &tensors[i];
    if (t->offset % h->alignment || data > f->size ||
        t->offset > f->size - data || t->bytes > f->size - data - t->offset) {
      snprintf(why, cap, "data of tensor '%.64s' (offset %llu, %zu bytes) is "
                         "misaligned or past the end of the file",
               t->name, (unsigned long long)t->offset, t->bytes);
      goto fail;
    }
  }
  /* No two tensors share bytes (a parameter would silently read
   * another's, as safetensors' loader refuses too). */
  const gguf_tensor **by = malloc(((size_t)n_tensors + 1) * sizeof *by);
  if (!by) {
    rc = ARCHRT_ERR_OUT_OF_MEMORY;
    snprintf(why, cap, "out of memory for %llu tensors' offsets",
             (unsigned long long)n_tensors);
    goto fail;
  }
  for (uint64_t i = 0; i < n_tensors; ++i)
    by[i] = &tensors[i];
  qsort(by, (size_t)n_tensors, sizeof *by, by_offset);
  for (uint64_t i = 1; i < n_tensors; ++i)
    if (by[i - 1]->offset + by[i - 1]->bytes > by[i]->offset) {
      snprintf(why, cap, "data of tensors '%.64s' and '%.64s' overlap "
                         "(offsets %llu and %llu, %zu bytes at the first)",
               by[i - 1]->name, by[i]->name,
               (unsigned long long)by[i - 1]->offset,
               (unsigned long long)by[i]->offset, by[i - 1]->bytes);
      free(by);
      goto fail;
    }
  free(by);
  h->tensors = tensors;
  h->n_tensors = n_tensors;
  h->data = data;
  return ARCHRT_OK;

fail:
  free(tensors);
  return rc;
}

