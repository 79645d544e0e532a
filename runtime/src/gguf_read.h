/*===- gguf_read.h - Reading GGUF's header and metadata -------------------===*
 *
 * A bounded cursor over a mapped GGUF file (every length checked against
 * the file before it is used), shared by the weights loader (gguf.c) and
 * the tokenizer reader (gguf_tokenizer.c).
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_GGUF_READ_H
#define ARCHRT_GGUF_READ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
  GGUF_MAX_TENSORS = 1 << 20,
  GGUF_MAX_KV = 1 << 20,
  GGUF_MAX_NAME = 256,
  GGML_F32 = 0,
  GGML_F16 = 1,
  GGML_Q4_0 = 2, /* llama.cpp's first quants: blocks of 32 values */
  GGML_Q4_1 = 3,
  GGML_Q5_0 = 6,
  GGML_Q5_1 = 7,
  GGML_Q8_0 = 8,
  GGML_Q4_K = 12, /* the k-quants: super-blocks of 256 values */
  GGML_Q5_K = 13,
  GGML_Q6_K = 14,
  GGML_BF16 = 30,
  /* Metadata value types. */
  GV_U8 = 0, GV_I8, GV_U16, GV_I16, GV_U32, GV_I32, GV_F32, GV_BOOL,
  GV_STRING, GV_ARRAY, GV_U64, GV_I64, GV_F64,
};

typedef struct cursor {
  const uint8_t *p, *end;
  const char *err;
} cursor;

static inline int take(cursor *c, void *out, size_t n) {
  if ((size_t)(c->end - c->p) < n) {
    c->err = "truncated";
    return 0;
  }
  memcpy(out, c->p, n);
  c->p += n;
  return 1;
}

static inline int u32(cursor *c, uint32_t *v) { return take(c, v, 4); }
static inline int u64(cursor *c, uint64_t *v) { return take(c, v, 8); }

/* A GGUF string: u64 length, then the bytes (not NUL-terminated). */
static inline int str(cursor *c, const uint8_t **s, uint64_t *n) {
  if (!u64(c, n))
    return 0;
  if (*n > (uint64_t)(c->end - c->p)) {
    c->err = "a string runs past the end of the file";
    return 0;
  }
  *s = c->p;
  c->p += *n;
  return 1;
}

static inline int scalar_size(uint32_t type) {
  switch (type) {
  case GV_U8: case GV_I8: case GV_BOOL: return 1;
  case GV_U16: case GV_I16: return 2;
  case GV_U32: case GV_I32: case GV_F32: return 4;
  case GV_U64: case GV_I64: case GV_F64: return 8;
  default: return 0;
  }
}

/* Skips a value of `type`; arrays of scalars or strings only. */
static inline int skip_value(cursor *c, uint32_t type, int depth) {
  if (type == GV_STRING) {
    const uint8_t *s;
    uint64_t n;
    return str(c, &s, &n);
  }
  if (type == GV_ARRAY) {
    uint32_t et;
    uint64_t n;
    if (!u32(c, &et) || !u64(c, &n))
      return 0;
    if (depth > 0 || et == GV_ARRAY) {
      c->err = "nested arrays in the metadata";
      return 0;
    }
    int sz = scalar_size(et);
    if (sz) {
      if (n > (uint64_t)(c->end - c->p) / (uint64_t)sz) {
        c->err = "an array runs past the end of the file";
        return 0;
      }
      c->p += n * (uint64_t)sz;
      return 1;
    }
    if (et != GV_STRING) {
      c->err = "an array of an unknown value type";
      return 0;
    }
    for (uint64_t i = 0; i < n; ++i)
      if (!skip_value(c, et, depth + 1))
        return 0;
    return 1;
  }
  int sz = scalar_size(type);
  if (!sz) {
    c->err = "a metadata value of an unknown type";
    return 0;
  }
  if ((size_t)(c->end - c->p) < (size_t)sz) {
    c->err = "truncated";
    return 0;
  }
  c->p += sz;
  return 1;
}

/* A metadata number as a double (integers and floats), or -1 type. */
static inline int number(cursor *c, uint32_t type, double *v) {
  union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32;
          int32_t i32; float f32; uint64_t u64; int64_t i64; double f64; } x;
  int sz = scalar_size(type);
  if (!sz || type == GV_BOOL || !take(c, &x, (size_t)sz))
    return 0;
  switch (type) {
  case GV_U8: *v = x.u8; break;
  case GV_I8: *v = x.i8; break;
  case GV_U16: *v = x.u16; break;
  case GV_I16: *v = x.i16; break;
  case GV_U32: *v = x.u32; break;
  case GV_I32: *v = x.i32; break;
  case GV_F32: *v = x.f32; break;
  case GV_U64: *v = (double)x.u64; break;
  case GV_I64: *v = (double)x.i64; break;
  default: *v = x.f64; break;
  }
  return 1;
}

#endif /* ARCHRT_GGUF_READ_H */
