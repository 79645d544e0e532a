/*===- tokenizer.c - llama2.c tokenizer.bin (SentencePiece-style BPE) -----===*
 *
 * Encoding follows llama2.c: optional BOS, a dummy-prefix space, one token
 * per UTF-8 code point (byte fallback <0xXX> = id byte + 3 otherwise), then
 * repeatedly merge the adjacent pair whose merged string has the highest
 * score.
 *
 *===---------------------------------------------------------------------===*/
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vocab_entry {
  const char *str;
  int32_t id;
} vocab_entry;

struct archrt_tokenizer {
  int32_t vocab_size;
  char **vocab;
  float *scores;
  vocab_entry *sorted;
  char *scratch; /* 2 * max_token_length + 3 bytes */
  char byte_piece[2];
};

void archrt_tokenizer_free(archrt_tokenizer *t) {
  if (!t)
    return;
  if (t->vocab)
    for (int32_t i = 0; i < t->vocab_size; ++i)
      free(t->vocab[i]);
  free(t->vocab);
  free(t->scores);
  free(t->sorted);
  free(t->scratch);
  free(t);
}

static int compare_entries(const void *a, const void *b) {
  return strcmp(((const vocab_entry *)a)->str, ((const vocab_entry *)b)->str);
}

archrt_status archrt_tokenizer_load(const char *path, int32_t vocab_size,
                                    archrt_tokenizer **out) {
  if (!path || !out)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_load: NULL argument");
  if (vocab_size <= 0)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_load: vocab_size must be positive");
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
  archrt_status st = ARCHRT_OK;
  archrt_tokenizer *t = calloc(1, sizeof *t);
  int32_t max_len = 0;
  if (!t || !(t->vocab = calloc((size_t)vocab_size, sizeof *t->vocab)) ||
      !(t->scores = malloc((size_t)vocab_size * sizeof *t->scores)) ||
      !(t->sorted = malloc((size_t)vocab_size * sizeof *t->sorted))) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  t->vocab_size = vocab_size;
  if (fread(&max_len, 4, 1, fp) != 1 || max_len <= 0 || max_len > 4096) {
    st = archrt_fail(ARCHRT_ERR_FORMAT,
                     "%s: bad max_token_length header (not a tokenizer.bin?)",
                     path);
    goto done;
  }
  for (int32_t i = 0; i < vocab_size; ++i) {
    int32_t len;
    if (fread(&t->scores[i], 4, 1, fp) != 1 || fread(&len, 4, 1, fp) != 1) {
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: truncated at token %d of %d (vocab_size mismatch?)",
                       path, i, vocab_size);
      goto done;
    }
    if (len < 0 || len > max_len) {
      st = archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: token %d has length %d (max_token_length %d)",
                       path, i, len, max_len);
      goto done;
    }
    if (!(t->vocab[i] = malloc((size_t)len + 1))) {
      st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
      goto done;
    }
    if (len && fread(t->vocab[i], 1, (size_t)len, fp) != (size_t)len) {
      st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: truncated in token %d", path, i);
      goto done;
    }
    t->vocab[i][len] = 0;
    t->sorted[i] = (vocab_entry){t->vocab[i], i};
  }
  if (fgetc(fp) != EOF) {
    st = archrt_fail(ARCHRT_ERR_FORMAT,
                     "%s: data after %d tokens (vocab_size mismatch?)", path,
                     vocab_size);
    goto done;
  }
  qsort(t->sorted, (size_t)vocab_size, sizeof *t->sorted, compare_entries);
  if (!(t->scratch = malloc((size_t)max_len * 2 + 3)))
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
done:
  fclose(fp);
  if (st) {
    archrt_tokenizer_free(t);
    return st;
  }
  *out = t;
  return ARCHRT_OK;
}

static int32_t lookup(const archrt_tokenizer *t, const char *s) {
  vocab_entry key = {s, 0};
  vocab_entry *e = bsearch(&key, t->sorted, (size_t)t->vocab_size,
                           sizeof *t->sorted, compare_entries);
  return e ? e->id : -1;
}

archrt_status archrt_tokenizer_encode(const archrt_tokenizer *t,
                                      const char *text, int bos, int eos,
                                      int32_t *tokens, int32_t max_tokens,
                                      int32_t *n_tokens) {
  if (!t || !text || !tokens || !n_tokens)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: NULL argument");
  size_t len = strlen(text);
  /* Before merging: BOS, prefix, at most one token per byte, EOS. */
  int32_t *work = malloc((len + 3) * sizeof *work);
  char *buf = malloc(len + 8 > 64 ? len + 8 : 64);
  if (!work || !buf) {
    free(work);
    free(buf);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                       "archrt_tokenizer_encode: out of memory");
  }
  int32_t n = 0;
  if (bos)
    work[n++] = 1;
  if (len) {
    int32_t space = lookup(t, " ");
    if (space >= 0)
      work[n++] = space;
  }
  for (size_t i = 0; i < len;) {
    /* One UTF-8 code point: a lead byte and its continuation bytes. */
    size_t j = i + 1;
    while (j < len && j - i < 4 && ((unsigned char)text[j] & 0xC0) == 0x80)
      j++;
    memcpy(buf, text + i, j - i);
    buf[j - i] = 0;
    int32_t id = lookup(t, buf);
    if (id >= 0)
      work[n++] = id;
    else
      for (size_t k = i; k < j; ++k)
        work[n++] = (int32_t)(unsigned char)text[k] + 3;
    i = j;
  }
  for (;;) {
    float best_score = -1e10f;
    int32_t best_id = -1, best_at = -1;
    for (int32_t i = 0; i + 1 < n; ++i) {
      const char *a = t->vocab[work[i]], *b = t->vocab[work[i + 1]];
      size_t la = strlen(a), lb = strlen(b);
      char *merged = t->scratch;
      memcpy(merged, a, la);
      memcpy(merged + la, b, lb + 1);
      int32_t id = lookup(t, merged);
      if (id >= 0 && t->scores[id] > best_score) {
        best_score = t->scores[id];
        best_id = id;
        best_at = i;
      }
    }
    if (best_at < 0)
      break;
    work[best_at] = best_id;
    memmove(&work[best_at + 1], &work[best_at + 2],
            (size_t)(n - best_at - 2) * sizeof *work);
    n--;
  }
  if (eos)
    work[n++] = 2;
  archrt_status st = ARCHRT_OK;
  if (n > max_tokens)
    st = archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                     "archrt_tokenizer_encode: text needs %d tokens, room for %d",
                     n, max_tokens);
  else
    memcpy(tokens, work, (size_t)n * sizeof *work);
  *n_tokens = st ? 0 : n;
  free(work);
  free(buf);
  return st;
}

const char *archrt_tokenizer_decode(archrt_tokenizer *t, int32_t prev,
                                    int32_t token) {
  if (!t || token < 0 || token >= t->vocab_size)
    return "";
  const char *piece = t->vocab[token];
  if (prev == 1 && piece[0] == ' ')
    piece++;
  unsigned char byte;
  if (sscanf(piece, "<0x%02hhX>", &byte) == 1 && strlen(piece) == 6) {
    t->byte_piece[0] = (char)byte;
    t->byte_piece[1] = 0;
    return t->byte_piece;
  }
  return piece;
}
