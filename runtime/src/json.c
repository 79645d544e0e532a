/*===- json.c - A small JSON reader for tokenizer.json --------------------===*/
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 64 };

/* Values live in blocks; an array's or object's items are contiguous. */
typedef struct block {
  struct block *next;
  size_t used, cap;
  archrt_json items[];
} block;

struct archrt_json_doc {
  block *blocks;
  archrt_json root;
};

typedef struct parser {
  char *s;
  size_t n, i;
  archrt_json_doc *doc;
  /* Items of the arrays and objects being read, innermost last. */
  archrt_json *stack;
  size_t depth_items, stack_cap;
  char *err;
  size_t err_size;
  int failed;
} parser;

static void fail(parser *p, const char *what) {
  if (p->failed)
    return;
  p->failed = 1;
  size_t line = 1, col = 1;
  for (size_t k = 0; k < p->i && k < p->n; ++k) {
    if (p->s[k] == '\n')
      line++, col = 1;
    else
      col++;
  }
  snprintf(p->err, p->err_size, "line %zu, column %zu: %s", line, col, what);
}

static archrt_json *alloc_items(parser *p, size_t n) {
  block *b = p->doc->blocks;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    b = malloc(sizeof *b + cap * sizeof(archrt_json));
    if (!b) {
      fail(p, "out of memory");
      return NULL;
    }
    b->used = 0, b->cap = cap, b->next = p->doc->blocks;
    p->doc->blocks = b;
  }
  archrt_json *r = b->items + b->used;
  b->used += n;
  return r;
}

static int push(parser *p, const archrt_json *v) {
  if (p->depth_items == p->stack_cap) {
    size_t cap = p->stack_cap ? 2 * p->stack_cap : 1024;
    archrt_json *s = realloc(p->stack, cap * sizeof *s);
    if (!s) {
      fail(p, "out of memory");
      return 0;
    }
    p->stack = s, p->stack_cap = cap;
  }
  p->stack[p->depth_items++] = *v;
  return 1;
}

static void skip_space(parser *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
                         p->s[p->i] == '\n' || p->s[p->i] == '\r'))
    p->i++;
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int k = 0; k < 4; ++k) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (unsigned)(c - 'A' + 10);
    else
      return 0;
  }
  *out = v;
  return 1;
}

static void put_utf8(unsigned c, char *o, size_t *w) {
  if (c < 0x80) {
    o[(*w)++] = (char)c;
  } else if (c < 0x800) {
    o[(*w)++] = (char)(0xC0 | (c >> 6));
    o[(*w)++] = (char)(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    o[(*w)++] = (char)(0xE0 | (c >> 12));
    o[(*w)++] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[(*w)++] = (char)(0x80 | (c & 0x3F));
  } else {
    o[(*w)++] = (char)(0xF0 | (c >> 18));
    o[(*w)++] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[(*w)++] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[(*w)++] = (char)(0x80 | (c & 0x3F));
  }
}

/* A string at p->i (its opening quote), unescaped in place. A lone
 * surrogate escape becomes U+FFFD (as JavaScript's TextEncoder would). */
static int read_string(parser *p, archrt_json *v) {
  char *out = p->s + p->i + 1;
  size_t w = 0;
  p->i++;
  for (;;) {
    if (p->i >= p->n) {
      fail(p, "unterminated string");
      return 0;
    }
    unsigned char c = (unsigned char)p->s[p->i];
    if (c == '"')
      break;
    if (c < 0x20) {
      fail(p, "control character in a string");
      return 0;
    }
    if (c != '\\') {
      out[w++] = (char)c;
      p->i++;
      continue;
    }
    if (p->i + 1 >= p->n) {
      fail(p, "unterminated string");
      return 0;
    }
    char e = p->s[p->i + 1];
    p->i += 2;
    switch (e) {
    case '"': out[w++] = '"'; break;
    case '\\': out[w++] = '\\'; break;
    case '/': out[w++] = '/'; break;
    case 'b': out[w++] = '\b'; break;
    case 'f': out[w++] = '\f'; break;
    case 'n': out[w++] = '\n'; break;
    case 'r': out[w++] = '\r'; break;
    case 't': out[w++] = '\t'; break;
    case 'u': {
      unsigned u, lo;
      if (p->i + 4 > p->n || !hex4(p->s + p->i, &u)) {
        fail(p, "bad \\u escape");
        return 0;
      }
      p->i += 4;
      if (u >= 0xD800 && u < 0xDC00 && p->i + 6 <= p->n &&
          p->s[p->i] == '\\' && p->s[p->i + 1] == 'u' &&
          hex4(p->s + p->i + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        p->i += 6;
      } else if (u >= 0xD800 && u < 0xE000) {
        u = 0xFFFD;
      }
      /* Never longer than its escape (6 or 12 bytes for at most 4). */
      put_utf8(u, out, &w);
      break;
    }
    default:
      p->i -= 1;
      fail(p, "bad escape in a string");
      return 0;
    }
  }
  out[w] = 0; /* over the closing quote at the latest */
  p->i++;
  v->kind = ARCHRT_JSON_STRING;
  v->n = (uint32_t)w;
  v->u.str = out;
  if (w > UINT32_MAX - 1) {
    fail(p, "string too long");
    return 0;
  }
  return 1;
}

static int read_number(parser *p, archrt_json *v) {
  size_t start = p->i;
  const char *ok = "+-0123456789.eE";
  while (p->i < p->n && strchr(ok, p->s[p->i]) && p->s[p->i])
    p->i++;
  char buf[64];
  size_t len = p->i - start;
  if (len == 0 || len >= sizeof buf) {
    p->i = start;
    fail(p, len ? "number too long" : "unexpected character");
    return 0;
  }
  memcpy(buf, p->s + start, len);
  buf[len] = 0;
  char *end;
  double d = strtod(buf, &end);
  if (*end || !isfinite(d)) {
    p->i = start;
    fail(p, "bad number");
    return 0;
  }
  v->kind = ARCHRT_JSON_NUMBER;
  v->n = 0;
  v->u.number = d;
  return 1;
}

static int read_word(parser *p, const char *w, archrt_json_kind kind,
                     int value, archrt_json *v) {
  size_t len = strlen(w);
  if (p->n - p->i < len || memcmp(p->s + p->i, w, len) != 0) {
    fail(p, "unexpected character");
    return 0;
  }
  p->i += len;
  v->kind = kind;
  v->n = 0;
  v->u.boolean = value;
  return 1;
}

static int read_value(parser *p, archrt_json *v, int depth);

/* An array or object: items gathered on the stack, then moved into one
 * block. */
static int read_container(parser *p, archrt_json *v, int depth, int object) {
  if (depth >= MAX_DEPTH) {
    fail(p, "nested too deeply");
    return 0;
  }
  char close = object ? '}' : ']';
  size_t base = p->depth_items;
  p->i++;
  skip_space(p);
  if (p->i < p->n && p->s[p->i] == close) {
    p->i++;
  } else {
    for (;;) {
      archrt_json item = {0};
      skip_space(p);
      if (object) {
        if (p->i >= p->n || p->s[p->i] != '"') {
          fail(p, "expected a member name");
          return 0;
        }
        if (!read_string(p, &item) || !push(p, &item))
          return 0;
        skip_space(p);
        if (p->i >= p->n || p->s[p->i] != ':') {
          fail(p, "expected ':'");
          return 0;
        }
        p->i++;
      }
      if (!read_value(p, &item, depth + 1) || !push(p, &item))
        return 0;
      skip_space(p);
      if (p->i < p->n && p->s[p->i] == ',') {
        p->i++;
        continue;
      }
      if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        break;
      }
      fail(p, p->i >= p->n ? "unexpected end of the document"
              : object     ? "expected ',' or '}'"
                           : "expected ',' or ']'");
      return 0;
    }
  }
  size_t count = p->depth_items - base;
  if (count / (object ? 2 : 1) > UINT32_MAX) {
    fail(p, "too many items");
    return 0;
  }
  archrt_json *items = count ? alloc_items(p, count) : NULL;
  if (count && !items)
    return 0;
  if (count)
    memcpy(items, p->stack + base, count * sizeof *items);
  p->depth_items = base;
  v->kind = object ? ARCHRT_JSON_OBJECT : ARCHRT_JSON_ARRAY;
  v->n = (uint32_t)(count / (object ? 2 : 1));
  v->u.items = items;
  return 1;
}

static int read_value(parser *p, archrt_json *v, int depth) {
  skip_space(p);
  if (p->i >= p->n) {
    fail(p, "unexpected end of the document");
    return 0;
  }
  switch (p->s[p->i]) {
  case '{': return read_container(p, v, depth, 1);
  case '[': return read_container(p, v, depth, 0);
  case '"': return read_string(p, v);
  case 't': return read_word(p, "true", ARCHRT_JSON_BOOL, 1, v);
  case 'f': return read_word(p, "false", ARCHRT_JSON_BOOL, 0, v);
  case 'n': return read_word(p, "null", ARCHRT_JSON_NULL, 0, v);
  default: return read_number(p, v);
  }
}

void archrt_json_free(archrt_json_doc *doc) {
  if (!doc)
    return;
  for (block *b = doc->blocks; b;) {
    block *next = b->next;
    free(b);
    b = next;
  }
  free(doc);
}

archrt_json_doc *archrt_json_parse(char *text, size_t size, char *err,
                                   size_t err_size) {
  parser p = {text, size, 0, calloc(1, sizeof(archrt_json_doc)), NULL, 0, 0,
              err, err_size, 0};
  if (!p.doc) {
    snprintf(err, err_size, "out of memory");
    return NULL;
  }
  int ok = read_value(&p, &p.doc->root, 0);
  if (ok) {
    skip_space(&p);
    if (p.i != p.n) {
      fail(&p, "data after the document");
      ok = 0;
    }
  }
  free(p.stack);
  if (!ok) {
    archrt_json_free(p.doc);
    return NULL;
  }
  return p.doc;
}

const archrt_json *archrt_json_root(const archrt_json_doc *doc) {
  return &doc->root;
}

const archrt_json *archrt_json_get(const archrt_json *v, const char *key) {
  if (!v || v->kind != ARCHRT_JSON_OBJECT)
    return NULL;
  size_t len = strlen(key);
  for (uint32_t k = 0; k < v->n; ++k) {
    const archrt_json *name = &v->u.items[2 * k];
    if (name->n == len && memcmp(name->u.str, key, len) == 0)
      return &v->u.items[2 * k + 1];
  }
  return NULL;
}

int archrt_json_is(const archrt_json *v, const char *s) {
  return v && v->kind == ARCHRT_JSON_STRING && strlen(s) == v->n &&
         memcmp(v->u.str, s, v->n) == 0;
}
