/*===- unicode.h - Code points, categories and NFC for tokenizer.json -----===*
 *
 * What Hugging Face tokenizers need of Unicode: UTF-8 decoding with the
 * WHATWG replacement of invalid sequences (what a browser's or node's
 * TextDecoder does, so that bytes that are not UTF-8 tokenize as the text a
 * JavaScript or Python caller would have), the major general categories of
 * \p{L}, \p{N}, ... and canonical composition (the NFC normalizer). The
 * tables come from Python's unicodedata at build time
 * (runtime/gen/unicode_tables.py).
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_UNICODE_H
#define ARCHRT_UNICODE_H

#include <stddef.h>
#include <stdint.h>

typedef struct archrt_uc_range {
  uint32_t first, last;
  uint8_t value;
} archrt_uc_range;
typedef struct archrt_uc_triple {
  uint32_t a, b, c;
} archrt_uc_triple;

/* The major general categories, as bits (a class may name several). */
enum {
  ARCHRT_UC_L = 1 << 0,
  ARCHRT_UC_M = 1 << 1,
  ARCHRT_UC_N = 1 << 2,
  ARCHRT_UC_P = 1 << 3,
  ARCHRT_UC_S = 1 << 4,
  ARCHRT_UC_Z = 1 << 5,
  ARCHRT_UC_C = 1 << 6,
};

extern const char archrt_uc_version[];

/* The category bit of code point c (ARCHRT_UC_C for unassigned). */
unsigned archrt_uc_category(uint32_t c);
/* JavaScript's \s (WhiteSpace and LineTerminator): what the reference
 * tokenizers' regular expressions mean by it. */
int archrt_uc_is_space(uint32_t c);

/* Decodes the UTF-8 of s[0 .. n) into code points: out[i] with the byte
 * offset it starts at in offsets[i] (offsets may be NULL); each maximal
 * invalid subsequence becomes one U+FFFD (WHATWG). out needs room for n
 * code points. Returns the count. */
size_t archrt_utf8_decode(const char *s, size_t n, uint32_t *out,
                          uint32_t *offsets);
/* Writes code point c as UTF-8 (1 to 4 bytes); returns the length. */
int archrt_utf8_put(uint32_t c, char *out);
/* The NFC form of s[0 .. n) into out (room for archrt_uc_nfc_room(n) code
 * points: decomposition expands); returns its length, or (size_t)-1 when
 * out of memory. */
size_t archrt_uc_nfc(const uint32_t *s, size_t n, uint32_t *out);
size_t archrt_uc_nfc_room(size_t n);

#endif /* ARCHRT_UNICODE_H */
