/*===- unicode.c - Code points, categories and NFC for tokenizer.json -----===*/
#include "unicode.h"

#include <stdlib.h>
#include <string.h>

extern const archrt_uc_range archrt_uc_ranges[], archrt_uc_ccc[];
extern const int archrt_uc_n_ranges, archrt_uc_n_ccc;
extern const archrt_uc_triple archrt_uc_decomp[], archrt_uc_compose[];
extern const int archrt_uc_n_decomp, archrt_uc_n_compose;

/* The run of `table` that holds c, or NULL. */
static const archrt_uc_range *find_range(const archrt_uc_range *table, int n,
                                         uint32_t c) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (c < table[mid].first)
      hi = mid - 1;
    else if (c > table[mid].last)
      lo = mid + 1;
    else
      return &table[mid];
  }
  return NULL;
}

unsigned archrt_uc_category(uint32_t c) {
  if (c < 0x80) { /* ASCII without the search */
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
      return ARCHRT_UC_L;
    if (c >= '0' && c <= '9')
      return ARCHRT_UC_N;
  }
  const archrt_uc_range *r =
      find_range(archrt_uc_ranges, archrt_uc_n_ranges, c);
  return r ? 1u << r->value : ARCHRT_UC_C;
}

int archrt_uc_is_space(uint32_t c) {
  switch (c) {
  case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
  case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
  case 0x205F: case 0x3000: case 0xFEFF:
    return 1;
  default:
    return c >= 0x2000 && c <= 0x200A;
  }
}

size_t archrt_utf8_decode(const char *text, size_t n, uint32_t *out,
                          uint32_t *offsets) {
  const unsigned char *s = (const unsigned char *)text;
  size_t count = 0, i = 0;
  while (i < n) {
    size_t start = i;
    unsigned b = s[i++];
    uint32_t c = 0xFFFD;
    int need = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (b < 0x80) {
      c = b;
    } else if (b >= 0xC2 && b <= 0xDF) {
      need = 1, c = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2, c = b & 0x0F;
      lo = b == 0xE0 ? 0xA0 : 0x80;
      hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3, c = b & 0x07;
      lo = b == 0xF0 ? 0x90 : 0x80;
      hi = b == 0xF4 ? 0x8F : 0xBF;
    }
    /* Continuation bytes; the first may have a narrower range. A byte that
     * does not fit ends the sequence (one U+FFFD) and is read again. */
    for (; need > 0; --need) {
      if (i >= n || s[i] < lo || s[i] > hi) {
        c = 0xFFFD;
        break;
      }
      c = (c << 6) | (s[i++] & 0x3F);
      lo = 0x80, hi = 0xBF;
    }
    if (offsets)
      offsets[count] = (uint32_t)start;
    out[count++] = c;
  }
  return count;
}

int archrt_utf8_put(uint32_t c, char *o) {
  if (c < 0x80) {
    o[0] = (char)c;
    return 1;
  }
  if (c < 0x800) {
    o[0] = (char)(0xC0 | (c >> 6));
    o[1] = (char)(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    o[0] = (char)(0xE0 | (c >> 12));
    o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (char)(0x80 | (c & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (c >> 18));
  o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
  o[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

/* ---- NFC ---------------------------------------------------------------*/

enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7,
       LCOUNT = 19, VCOUNT = 21, TCOUNT = 28, SCOUNT = 11172 };

static unsigned ccc_of(uint32_t c) {
  if (c < 0x300)
    return 0;
  const archrt_uc_range *r = find_range(archrt_uc_ccc, archrt_uc_n_ccc, c);
  return r ? r->value : 0;
}

static const archrt_uc_triple *find_decomp(uint32_t c) {
  int lo = 0, hi = archrt_uc_n_decomp - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (archrt_uc_decomp[mid].a == c)
      return &archrt_uc_decomp[mid];
    if (archrt_uc_decomp[mid].a < c)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}

/* Appends the full canonical decomposition of c to out; returns the new
 * length. (Decompositions nest at most 4 deep.) */
static size_t decompose(uint32_t c, uint32_t *out, size_t n) {
  if (c >= SBASE && c < SBASE + SCOUNT) {
    uint32_t s = c - SBASE;
    out[n++] = LBASE + s / (VCOUNT * TCOUNT);
    out[n++] = VBASE + (s % (VCOUNT * TCOUNT)) / TCOUNT;
    if (s % TCOUNT)
      out[n++] = TBASE + s % TCOUNT;
    return n;
  }
  const archrt_uc_triple *d = c < 0xC0 ? NULL : find_decomp(c);
  if (!d) {
    out[n++] = c;
    return n;
  }
  n = decompose(d->b, out, n);
  return d->c ? decompose(d->c, out, n) : n;
}

static uint32_t compose_pair(uint32_t a, uint32_t b) {
  if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
    return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
  if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 &&
      b > TBASE && b < TBASE + TCOUNT)
    return a + (b - TBASE);
  int lo = 0, hi = archrt_uc_n_compose - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    const archrt_uc_triple *t = &archrt_uc_compose[mid];
    if (t->a == a && t->b == b)
      return t->c;
    if (t->a < a || (t->a == a && t->b < b))
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return 0;
}

size_t archrt_uc_nfc_room(size_t n) { return 4 * n + 4; }

size_t archrt_uc_nfc(const uint32_t *s, size_t n, uint32_t *d) {
  /* Text below U+0300 (all of Latin-1, and ASCII) is already NFC. */
  size_t i = 0;
  while (i < n && s[i] < 0x300)
    ++i;
  if (i == n) {
    memcpy(d, s, n * sizeof *s);
    return n;
  }
  /* Decompose, then order each run of non-starters by combining class,
   * stably: insertion sort for short runs, counting sort for long ones
   * (hostile text can make a run as long as the text). */
  size_t m = 0;
  for (i = 0; i < n; ++i)
    m = decompose(s[i], d, m);
  for (size_t k = 0; k < m;) {
    if (!ccc_of(d[k])) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < m && ccc_of(d[end]))
      ++end;
    if (end - k <= 16) {
      for (size_t a = k + 1; a < end; ++a) {
        uint32_t x = d[a];
        unsigned c = ccc_of(x);
        size_t j = a;
        while (j > k && ccc_of(d[j - 1]) > c) {
          d[j] = d[j - 1];
          --j;
        }
        d[j] = x;
      }
    } else {
      uint32_t *run = malloc((end - k) * sizeof *run);
      if (!run)
        return (size_t)-1;
      {
        size_t count[257] = {0};
        for (size_t a = k; a < end; ++a)
          count[ccc_of(d[a]) + 1]++;
        for (int c = 1; c < 257; ++c)
          count[c] += count[c - 1];
        for (size_t a = k; a < end; ++a)
          run[count[ccc_of(d[a])]++] = d[a];
        memcpy(d + k, run, (end - k) * sizeof *run);
        free(run);
      }
    }
    k = end;
  }
  /* Compose each character with the last starter unless something
   * between blocks it (a starter, or a class not below its own); in
   * place, the output never passing the input. */
  size_t out = 0;
  long starter = -1;
  unsigned last = 0;
  for (size_t k = 0; k < m; ++k) {
    uint32_t c = d[k];
    unsigned cc = ccc_of(c);
    if (starter >= 0 &&
        ((long)out - 1 == starter || (last != 0 && last < cc))) {
      uint32_t p = compose_pair(d[starter], c);
      if (p) {
        d[starter] = p;
        continue;
      }
    }
    if (cc == 0)
      starter = (long)out;
    last = cc;
    d[out++] = c;
  }
  return out;
}
