/*===- tokenizer.c - llama2.c tokenizer.bin (SentencePiece-style BPE) -----===*
 *
 * Encoding follows llama2.c: optional BOS, a dummy-prefix space, one token
 * per UTF-8 code point (byte fallback <0xXX> = id byte + 3 otherwise), then
 * repeatedly merge the adjacent pair whose merged string has the highest
 * score (the leftmost of equals). A heap of candidate pairs over a linked
 * list of symbols makes that O(n log n) in the text's length; llama2.c's
 * rescan after every merge is O(n^2).
 *
 *===---------------------------------------------------------------------===*/
#include "hf_tokenizer.h"
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vocab_entry {
  const char *str;
  int32_t id;
} vocab_entry;

struct archrt_tokenizer {
  hf_tokenizer *hf; /* a tokenizer.json; otherwise tokenizer.bin's: */
  int32_t vocab_size;
  char **vocab;
  float *scores;
  vocab_entry *sorted; /* by text; byte tokens left out */
  int32_t n_sorted;
  uint8_t byte_token[259]; /* ids 3 to 258 that are byte tokens */
  char *scratch; /* 2 * max_token_length + 3 bytes */
  char byte_piece[2];
};

void archrt_tokenizer_free(archrt_tokenizer *t) {
  if (!t)
    return;
  hf_tokenizer_free(t->hf);
  if (t->vocab)
    for (int32_t i = 0; i < t->vocab_size; ++i)
      free(t->vocab[i]);
  free(t->vocab);
  free(t->scores);
  free(t->sorted);
  free(t->scratch);
  free(t);
}

/* Whether token `id` is llama2.c's byte token for byte id - 3: the byte
 * as a character (U+0000 to U+00FF in UTF-8) or spelled <0xXX>. */
static int is_byte_token(const char *s, int32_t id) {
  unsigned b = (unsigned)id - 3;
  if (id < 3 || id >= 259)
    return 0;
  char spelled[8];
  snprintf(spelled, sizeof spelled, "<0x%02X>", b);
  if (!strcmp(s, spelled))
    return 1;
  if (b < 0x80)
    return b ? s[0] == (char)b && !s[1] : !s[0];
  return (unsigned char)s[0] == (0xC0 | (b >> 6)) &&
         (unsigned char)s[1] == (0x80 | (b & 0x3F)) && !s[2];
}

static int compare_entries(const void *a, const void *b) {
  return strcmp(((const vocab_entry *)a)->str, ((const vocab_entry *)b)->str);
}

/* A tokenizer.json: read whole (its strings are used where they stand). */
static archrt_status load_json(const char *path, int fd, size_t size,
                               int32_t vocab_size, archrt_tokenizer **out) {
  enum { MAX_JSON = 1 << 30 };
  if (size > MAX_JSON) {
    close(fd);
    return archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: %zu bytes is more than a tokenizer.json can be "
                       "(1 GiB)",
                       path, size);
  }
  char *text = malloc(size + 1);
  size_t done = 0;
  while (text && done < size) {
    ssize_t r = pread(fd, text + done, size - done, (off_t)done);
    if (r <= 0)
      break;
    done += (size_t)r;
  }
  close(fd);
  if (!text)
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  if (done < size) {
    free(text);
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot read: %s", path,
                       strerror(errno));
  }
  text[size] = 0;
  return archrt_tokenizer_from_json(text, size, path, vocab_size, out);
}

archrt_status archrt_tokenizer_from_json(char *text, size_t size,
                                         const char *path, int32_t vocab_size,
                                         archrt_tokenizer **out) {
  archrt_tokenizer *t = calloc(1, sizeof *t);
  if (!t) {
    free(text);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  t->vocab_size = vocab_size;
  /* The tokenizer owns `text` from here, on failure too. */
  archrt_status st = hf_tokenizer_load(text, size, path, vocab_size, &t->hf);
  if (st) {
    free(t);
    return st;
  }
  *out = t;
  return ARCHRT_OK;
}

archrt_status archrt_tokenizer_from_pieces(const char *path, char **pieces,
                                           float *scores, int32_t n,
                                           const uint8_t *control,
                                           archrt_tokenizer **out) {
  archrt_tokenizer *t = calloc(1, sizeof *t);
  archrt_status st = ARCHRT_OK;
  int32_t max_len = 1;
  if (!t || !(t->sorted = malloc((size_t)n * sizeof *t->sorted))) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    for (int32_t i = 0; i < n; ++i)
      free(pieces[i]);
    free(pieces), free(scores), free(t);
    return st;
  }
  /* Ids past the tokenizer's (a model's padded vocabulary) are empty. */
  t->vocab_size = n;
  t->vocab = pieces;
  t->scores = scores;
  for (int32_t i = 0; i < n; ++i) {
    int32_t len = (int32_t)strlen(pieces[i]);
    if (len > max_len)
      max_len = len;
    if (is_byte_token(pieces[i], i))
      t->byte_token[i] = 1;
    else if (!(control && control[i]))
      t->sorted[t->n_sorted++] = (vocab_entry){pieces[i], i};
  }
  qsort(t->sorted, (size_t)t->n_sorted, sizeof *t->sorted, compare_entries);
  if (!(t->scratch = malloc((size_t)max_len * 2 + 3))) {
    archrt_tokenizer_free(t);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  *out = t;
  return ARCHRT_OK;
}

archrt_status archrt_tokenizer_load(const char *path, int32_t vocab_size,
                                    archrt_tokenizer **out) {
  if (!path || !out)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_load: NULL argument");
  if (vocab_size <= 0)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_load: vocab_size must be positive");
  int fd;
  size_t size;
  archrt_status st = archrt_open_file(path, &fd, &size);
  if (st)
    return st;
  /* A tokenizer.json is JSON text: no NUL byte, '{' first (after any white
   * space; '[' is JSON too, refused as not an object). A tokenizer.bin
   * starts with its max_token_length, at most 4096: bytes 2 and 3 are 0. */
  char head[64];
  ssize_t got = pread(fd, head, sizeof head, 0);
  ssize_t lead = 0;
  while (lead < got && (head[lead] == ' ' || head[lead] == '\n' ||
                        head[lead] == '\r' || head[lead] == '\t'))
    lead++;
  if (lead < got && (head[lead] == '{' || head[lead] == '[') &&
      !memchr(head, 0, (size_t)got))
    return load_json(path, fd, size, vocab_size, out);
  if (got >= 4 && !memcmp(head, "GGUF", 4)) { /* llama.cpp's metadata */
    close(fd);
    return archrt_gguf_tokenizer(path, vocab_size, out);
  }
  /* Each token takes at least 8 bytes: refuse a file that cannot hold
   * vocab_size of them before allocating for them. */
  if (size < 4 || (size - 4) / 8 < (size_t)vocab_size) {
    close(fd);
    return archrt_fail(ARCHRT_ERR_FORMAT,
                       "%s: %zu bytes cannot hold %d tokens (vocab_size "
                       "mismatch?)",
                       path, size, vocab_size);
  }
  FILE *fp = fdopen(fd, "rb");
  if (!fp) {
    close(fd);
    return archrt_fail(ARCHRT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(errno));
  }
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
    /* Byte tokens are for fallback only: matched by text they would take
     * the place of real pieces (Llama 2's <0x20> is stored as " ", which
     * is also "▁", id 29871). SentencePiece never matches them. */
    if (is_byte_token(t->vocab[i], i))
      t->byte_token[i] = 1;
    else
      t->sorted[t->n_sorted++] = (vocab_entry){t->vocab[i], i};
  }
  if (fgetc(fp) != EOF) {
    st = archrt_fail(ARCHRT_ERR_FORMAT,
                     "%s: data after %d tokens (vocab_size mismatch?)", path,
                     vocab_size);
    goto done;
  }
  qsort(t->sorted, (size_t)t->n_sorted, sizeof *t->sorted, compare_entries);
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
  vocab_entry *e = bsearch(&key, t->sorted, (size_t)t->n_sorted,
                           sizeof *t->sorted, compare_entries);
  return e ? e->id : -1;
}

/* A candidate merge of the adjacent symbols at left and right (indices
 * into the symbol array); valid while both still hold the versions seen
 * when it was pushed. */
typedef struct merge {
  float score;
  int32_t left, right, id;
  uint32_t left_version, right_version;
} merge;

/* Whether a comes before b: higher score, then leftmost. */
static int merge_before(const merge *a, const merge *b) {
  return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(merge *heap, int32_t *n, merge m) {
  int32_t i = (*n)++;
  while (i > 0 && merge_before(&m, &heap[(i - 1) / 2])) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = m;
}

static merge heap_pop(merge *heap, int32_t *n) {
  merge top = heap[0], last = heap[--*n];
  int32_t i = 0;
  for (;;) {
    int32_t c = 2 * i + 1;
    if (c >= *n)
      break;
    if (c + 1 < *n && merge_before(&heap[c + 1], &heap[c]))
      c++;
    if (!merge_before(&heap[c], &last))
      break;
    heap[i] = heap[c];
    i = c;
  }
  if (*n > 0)
    heap[i] = last;
  return top;
}

typedef struct symbols {
  int32_t *id, *prev, *next;
  uint32_t *version;
} symbols;

/* Pushes the merge of symbol i with its right neighbour, if the vocabulary
 * has the merged string (llama2.c never merges at scores <= -1e10). */
static void push_pair(const archrt_tokenizer *t, const symbols *sy,
                      merge *heap, int32_t *n_heap, int32_t i) {
  int32_t j = sy->next[i];
  if (j < 0)
    return;
  /* Byte-fallback tokens stand alone, as in SentencePiece (llama2.c would
   * merge " " with the byte token of 0xE2, spelled "â", into " â"). */
  if ((sy->id[i] < 259 && t->byte_token[sy->id[i]]) ||
      (sy->id[j] < 259 && t->byte_token[sy->id[j]]))
    return;
  const char *a = t->vocab[sy->id[i]], *b = t->vocab[sy->id[j]];
  size_t la = strlen(a), lb = strlen(b);
  memcpy(t->scratch, a, la);
  memcpy(t->scratch + la, b, lb + 1);
  int32_t id = lookup(t, t->scratch);
  if (id >= 0 && t->scores[id] > -1e10f)
    heap_push(heap, n_heap,
              (merge){t->scores[id], i, j, id, sy->version[i], sy->version[j]});
}

archrt_status archrt_tokenizer_encode(const archrt_tokenizer *t,
                                      const char *text, int bos, int eos,
                                      int32_t *tokens, int32_t max_tokens,
                                      int32_t *n_tokens) {
  if (!t || !text || !tokens || !n_tokens)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: NULL argument");
  *n_tokens = 0;
  if (max_tokens < 0)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: max_tokens is negative");
  if (t->hf) {
    if (eos)
      return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                         "archrt_tokenizer_encode: a tokenizer.json names no "
                         "end-of-sequence token to append (eos must be 0; "
                         "bos adds its post-processor's special tokens)");
    return hf_tokenizer_encode(t->hf, text, strlen(text), bos, tokens,
                               max_tokens, n_tokens);
  }
  if ((bos || eos) && t->vocab_size < 3)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: BOS (1) and EOS (2) are not "
                       "in a vocabulary of %d",
                       t->vocab_size);
  size_t len = strlen(text);
  if (len > (size_t)INT32_MAX / 4)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: text of %zu bytes is too long",
                       len);
  /* Before merging: BOS, prefix, at most one symbol per byte, EOS. */
  size_t cap = len + 3;
  symbols sy = {malloc(cap * sizeof *sy.id), malloc(cap * sizeof *sy.prev),
                malloc(cap * sizeof *sy.next), calloc(cap, sizeof *sy.version)};
  merge *heap = malloc(3 * cap * sizeof *heap);
  char buf[8];
  archrt_status st = ARCHRT_OK;
  if (!sy.id || !sy.prev || !sy.next || !sy.version || !heap) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                     "archrt_tokenizer_encode: out of memory");
    goto done;
  }
  int32_t n = 0;
  if (bos)
    sy.id[n++] = 1;
  if (len) {
    int32_t space = lookup(t, " ");
    if (space >= 0)
      sy.id[n++] = space;
  }
  for (size_t i = 0; i < len;) {
    /* One UTF-8 code point: a lead byte and its continuation bytes. */
    size_t k = i + 1;
    while (k < len && k - i < 4 && ((unsigned char)text[k] & 0xC0) == 0x80)
      k++;
    memcpy(buf, text + i, k - i);
    buf[k - i] = 0;
    int32_t id = lookup(t, buf);
    if (id >= 0) {
      sy.id[n++] = id;
    } else {
      for (size_t b = i; b < k; ++b) {
        int32_t fallback = (int32_t)(unsigned char)text[b] + 3;
        if (fallback >= t->vocab_size) {
          st = archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                           "archrt_tokenizer_encode: byte 0x%02x at offset "
                           "%zu is not in the vocabulary and its byte token "
                           "%d is outside it (vocab_size %d)",
                           (unsigned char)text[b], b, fallback, t->vocab_size);
          goto done;
        }
        sy.id[n++] = fallback;
      }
    }
    i = k;
  }
  for (int32_t i = 0; i < n; ++i) {
    sy.prev[i] = i - 1;
    sy.next[i] = i + 1 < n ? i + 1 : -1;
  }
  int32_t n_heap = 0, alive = n;
  for (int32_t i = 0; i < n; ++i)
    push_pair(t, &sy, heap, &n_heap, i);
  while (n_heap > 0) {
    merge m = heap_pop(heap, &n_heap);
    if (sy.version[m.left] != m.left_version ||
        sy.version[m.right] != m.right_version || sy.next[m.left] != m.right)
      continue; /* stale: a neighbour merged since */
    /* The left symbol becomes the merged one; the right leaves the list. */
    sy.id[m.left] = m.id;
    sy.version[m.left]++;
    sy.version[m.right]++;
    int32_t after = sy.next[m.right];
    sy.next[m.left] = after;
    if (after >= 0)
      sy.prev[after] = m.left;
    sy.next[m.right] = -1;
    alive--;
    if (sy.prev[m.left] >= 0)
      push_pair(t, &sy, heap, &n_heap, sy.prev[m.left]);
    push_pair(t, &sy, heap, &n_heap, m.left);
  }
  int32_t total = alive + (eos ? 1 : 0);
  if (total > max_tokens) {
    st = archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                     "archrt_tokenizer_encode: text needs %d tokens, room for %d",
                     total, max_tokens);
    goto done;
  }
  int32_t out = 0;
  for (int32_t i = n ? 0 : -1; i >= 0; i = sy.next[i])
    tokens[out++] = sy.id[i];
  if (eos)
    tokens[out++] = 2;
  *n_tokens = out;
done:
  free(sy.id);
  free(sy.prev);
  free(sy.next);
  free(sy.version);
  free(heap);
  return st;
}

int archrt_tokenizer_is_stop(const archrt_tokenizer *t, int32_t token) {
  if (!t)
    return 0;
  if (t->hf)
    return hf_tokenizer_is_special(t->hf, token);
  return (token == 1 || token == 2) && token < t->vocab_size;
}

const char *archrt_tokenizer_decode(archrt_tokenizer *t, int32_t prev,
                                    int32_t token) {
  if (t && t->hf)
    return hf_tokenizer_decode(t->hf, prev, token);
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
