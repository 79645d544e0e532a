/*===- tokenizer.c - SentencePiece-style BPE: tokenizer.bin and GGUF ------===*
 *
 * Encoding follows llama2.c and llama.cpp's SentencePiece tokenizer:
 * optional BOS, the text split at its special tokens (a GGUF's control and
 * user-defined ones, leftmost-longest), each run of text between them with
 * a space before it (where the layout adds one) and one token per UTF-8
 * code point (its byte tokens <0xXX> otherwise), then repeatedly merge the
 * adjacent pair whose merged string has the highest score (the leftmost of
 * equals). A heap of candidate pairs over a linked list of symbols makes
 * that O(n log n) in the text's length; llama2.c's rescan after every
 * merge is O(n^2).
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

/* A node of the special tokens' byte trie: its first child, its next
 * sibling, its byte and the token ending here (-1 none). */
typedef struct special_node {
  int32_t child, sibling, token;
  uint8_t byte;
} special_node;

enum { TOKEN_BYTE = 1, TOKEN_STOP = 2, TOKEN_RSTRIP = 4 };
/* The longest special token archc splits text at (bounds the work a text
 * position costs), and the bytes of them all (the trie's size). */
enum { MAX_SPECIAL_LEN = 256, MAX_SPECIAL_BYTES = 8 << 20 };

struct archrt_tokenizer {
  hf_tokenizer *hf; /* a tokenizer.json; otherwise SentencePiece's: */
  int32_t vocab_size;
  char **vocab;
  float *scores;
  vocab_entry *sorted; /* by text; byte, unknown and control tokens left out */
  int32_t n_sorted;
  uint8_t *flags;        /* per id: TOKEN_BYTE, TOKEN_STOP, TOKEN_RSTRIP */
  int32_t byte_id[256];  /* the byte tokens, -1 where there is none */
  int32_t bos, eos;      /* -1: none */
  int add_bos, add_space;
  special_node *special; /* node 0 is the root; NULL: no special tokens */
  int32_t special_root[256]; /* the root's child of each first byte */
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
  free(t->flags);
  free(t->special);
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

/* Adds `token`'s text s[0 .. n) to the special tokens' trie (capacity
 * checked by the caller); the first of equal texts keeps it. */
static void special_add(archrt_tokenizer *t, int32_t *n_nodes,
                        const uint8_t *s, size_t n, int32_t token) {
  int32_t node = 0;
  for (size_t k = 0; k < n; ++k) {
    int32_t c = k ? t->special[node].child : t->special_root[s[0]];
    while (c >= 0 && t->special[c].byte != s[k])
      c = t->special[c].sibling;
    if (c < 0) {
      c = (*n_nodes)++;
      t->special[c] = (special_node){-1, -1, -1, s[k]};
      if (k) {
        t->special[c].sibling = t->special[node].child;
        t->special[node].child = c;
      } else {
        t->special_root[s[0]] = c;
      }
    }
    node = c;
  }
  if (t->special[node].token < 0)
    t->special[node].token = token;
}

/* The special token that starts text s[0 .. n) with the longest text, and
 * that length; -1 for none. */
static int32_t special_match(const archrt_tokenizer *t, const char *s,
                             size_t n, size_t *len) {
  int32_t best = -1;
  int32_t c = t->special_root[(unsigned char)s[0]];
  for (size_t k = 0; c >= 0;) {
    if (t->special[c].token >= 0)
      best = t->special[c].token, *len = k + 1;
    if (++k == n)
      break;
    c = t->special[c].child;
    while (c >= 0 && t->special[c].byte != (unsigned char)s[k])
      c = t->special[c].sibling;
  }
  return best;
}

/* Whether a special token's text is one llama.cpp ends generation at
 * whatever the metadata's ids say (its end-of-generation names). */
static int is_end_of_generation(const char *text) {
  static const char *const names[] = {
      "<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
      "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>"};
  for (size_t k = 0; k < sizeof names / sizeof *names; ++k)
    if (!strcmp(text, names[k]))
      return 1;
  return 0;
}

archrt_status archrt_tokenizer_from_pieces(const char *path, char **pieces,
                                           float *scores, int32_t n,
                                           archrt_spm_layout *layout,
                                           archrt_tokenizer **out) {
  archrt_tokenizer *t = calloc(1, sizeof *t);
  archrt_status st = ARCHRT_OK;
  int32_t max_len = 1;
  uint8_t *types = layout->types;
  char **special = layout->special_text;
  if (t) {
    /* The tokenizer owns the pieces and scores from here. Ids past its
     * own (a model's padded vocabulary) decode to nothing. */
    t->vocab_size = n;
    t->vocab = pieces;
    t->scores = scores;
    pieces = NULL, scores = NULL;
  }
  if (!t || !(t->sorted = malloc((size_t)n * sizeof *t->sorted)) ||
      !(t->flags = calloc((size_t)n, 1))) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  t->bos = layout->bos, t->eos = layout->eos;
  t->add_bos = layout->add_bos, t->add_space = layout->add_space;
  memset(t->byte_id, 0xff, sizeof t->byte_id);
  memset(t->special_root, 0xff, sizeof t->special_root);
  size_t special_bytes = 0;
  for (int32_t i = 0; i < n; ++i) {
    const char *p = t->vocab[i];
    int32_t len = (int32_t)strlen(p);
    if (len > max_len)
      max_len = len;
    unsigned byte;
    char spelled[8];
    /* Byte tokens by their text (llama.cpp's byte_to_token), wherever they
     * stand; the first of equal spellings. */
    if (len == 6 && sscanf(p, "<0x%2X>", &byte) == 1 &&
        (snprintf(spelled, sizeof spelled, "<0x%02X>", byte),
         !strcmp(p, spelled))) {
      t->flags[i] |= TOKEN_BYTE;
      if (t->byte_id[byte] < 0)
        t->byte_id[byte] = i;
    } else if (!(types && (types[i] == 2 || types[i] == 3))) {
      /* Unknown and control tokens are never made by merges. */
      t->sorted[t->n_sorted++] = (vocab_entry){p, i};
    }
    if (i == t->bos || i == t->eos || i == layout->eot || i == layout->eom ||
        (special && special[i] && is_end_of_generation(special[i])))
      t->flags[i] |= TOKEN_STOP;
    if (special && special[i] && layout->rstrip &&
        strcmp(special[i], "<unk>") && strcmp(special[i], "<s>") &&
        strcmp(special[i], "<|endoftext|>"))
      t->flags[i] |= TOKEN_RSTRIP;
    if (special && special[i]) {
      size_t sl = strlen(special[i]);
      if (sl > MAX_SPECIAL_LEN) {
        st = archrt_fail(ARCHRT_ERR_FORMAT,
                         "%s: special token %d is %zu bytes long; archc "
                         "splits text at special (control and user-defined) "
                         "tokens of at most %d bytes",
                         path, i, sl, MAX_SPECIAL_LEN);
        goto done;
      }
      special_bytes += sl;
    }
  }
  if (special_bytes > MAX_SPECIAL_BYTES) {
    st = archrt_fail(ARCHRT_ERR_FORMAT,
                     "%s: the special (control and user-defined) tokens "
                     "take %zu bytes, more than archc's %d MiB",
                     path, special_bytes, MAX_SPECIAL_BYTES >> 20);
    goto done;
  }
  if (special_bytes) {
    int32_t n_nodes = 1;
    if (!(t->special = malloc((special_bytes + 1) * sizeof *t->special))) {
      st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
      goto done;
    }
    t->special[0] = (special_node){-1, -1, -1, 0};
    for (int32_t i = 0; i < n; ++i)
      if (special[i] && special[i][0])
        special_add(t, &n_nodes, (const uint8_t *)special[i],
                    strlen(special[i]), i);
  }
  qsort(t->sorted, (size_t)t->n_sorted, sizeof *t->sorted, compare_entries);
  if (!(t->scratch = malloc((size_t)max_len * 2 + 3)))
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
done:
  if (pieces)
    for (int32_t i = 0; i < n; ++i)
      free(pieces[i]);
  free(pieces);
  free(scores);
  if (special)
    for (int32_t i = 0; i < n; ++i)
      free(special[i]);
  free(special);
  free(types);
  layout->types = NULL, layout->special_text = NULL;
  if (st) {
    archrt_tokenizer_free(t);
    return st;
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
      !(t->sorted = malloc((size_t)vocab_size * sizeof *t->sorted)) ||
      !(t->flags = calloc((size_t)vocab_size, 1))) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    goto done;
  }
  /* llama2.c's layout: BOS 1, EOS 2 (both end generation), a space before
   * the text, the byte of id b + 3 as its fallback; no special tokens. */
  t->vocab_size = vocab_size;
  t->bos = vocab_size > 1 ? 1 : -1;
  t->eos = vocab_size > 2 ? 2 : -1;
  t->add_bos = t->add_space = 1;
  for (int b = 0; b < 256; ++b)
    t->byte_id[b] = b + 3 < vocab_size ? b + 3 : -1;
  memset(t->special_root, 0xff, sizeof t->special_root);
  for (int32_t i = 1; i < 3 && i < vocab_size; ++i)
    t->flags[i] = TOKEN_STOP;
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
      t->flags[i] |= TOKEN_BYTE;
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
  if ((t->flags[sy->id[i]] | t->flags[sy->id[j]]) & TOKEN_BYTE)
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

/* Encodes text[from .. to), a run between special tokens (with the space
 * before it where `prefix`), onto ids[*n_ids ...]: code points, their byte
 * tokens where the vocabulary has no piece, then the merges. The symbol
 * arrays and the heap hold to - from + 1 symbols. */
static archrt_status encode_run(const archrt_tokenizer *t, const char *text,
                                size_t from, size_t to, int prefix,
                                const symbols *sy, merge *heap, int32_t *ids,
                                int32_t *n_ids) {
  char buf[8];
  int32_t n = 0;
  if (prefix) {
    int32_t space = lookup(t, " ");
    if (space >= 0)
      sy->id[n++] = space;
  }
  for (size_t i = from; i < to;) {
    /* One UTF-8 code point: a lead byte and its continuation bytes. */
    size_t k = i + 1;
    while (k < to && k - i < 4 && ((unsigned char)text[k] & 0xC0) == 0x80)
      k++;
    memcpy(buf, text + i, k - i);
    buf[k - i] = 0;
    /* U+2581 is SentencePiece's space: in text it is one too. */
    int32_t id = lookup(t, strcmp(buf, "\xE2\x96\x81") ? buf : " ");
    if (id >= 0) {
      sy->id[n++] = id;
    } else {
      for (size_t b = i; b < k; ++b) {
        int32_t fallback = t->byte_id[(unsigned char)text[b]];
        if (fallback < 0)
          return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                             "archrt_tokenizer_encode: byte 0x%02x at offset "
                             "%zu is not in the vocabulary, which has no "
                             "byte token <0x%02X> for it (vocab_size %d)",
                             (unsigned char)text[b], b,
                             (unsigned char)text[b], t->vocab_size);
        sy->id[n++] = fallback;
      }
    }
    i = k;
  }
  for (int32_t i = 0; i < n; ++i) {
    sy->prev[i] = i - 1;
    sy->next[i] = i + 1 < n ? i + 1 : -1;
    sy->version[i] = 0;
  }
  int32_t n_heap = 0;
  for (int32_t i = 0; i < n; ++i)
    push_pair(t, sy, heap, &n_heap, i);
  while (n_heap > 0) {
    merge m = heap_pop(heap, &n_heap);
    if (sy->version[m.left] != m.left_version ||
        sy->version[m.right] != m.right_version || sy->next[m.left] != m.right)
      continue; /* stale: a neighbour merged since */
    /* The left symbol becomes the merged one; the right leaves the list. */
    sy->id[m.left] = m.id;
    sy->version[m.left]++;
    sy->version[m.right]++;
    int32_t after = sy->next[m.right];
    sy->next[m.left] = after;
    if (after >= 0)
      sy->prev[after] = m.left;
    sy->next[m.right] = -1;
    if (sy->prev[m.left] >= 0)
      push_pair(t, sy, heap, &n_heap, sy->prev[m.left]);
    push_pair(t, sy, heap, &n_heap, m.left);
  }
  for (int32_t i = n ? 0 : -1; i >= 0; i = sy->next[i])
    ids[(*n_ids)++] = sy->id[i];
  return ARCHRT_OK;
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
  bos = bos && t->add_bos;
  if ((bos && t->bos < 0) || (eos && t->eos < 0))
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: the tokenizer has no %s "
                       "token (a vocabulary of %d)",
                       bos && t->bos < 0 ? "BOS" : "EOS", t->vocab_size);
  size_t len = strlen(text);
  if (len > (size_t)INT32_MAX / 4)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: text of %zu bytes is too long",
                       len);
  /* A run's symbols: a space and at most one a byte. The ids: BOS, EOS,
   * and each byte of text at most one id and one space before it. */
  size_t cap = len + 1, id_cap = 2 * len + 2;
  symbols sy = {malloc(cap * sizeof *sy.id), malloc(cap * sizeof *sy.prev),
                malloc(cap * sizeof *sy.next), malloc(cap * sizeof *sy.version)};
  merge *heap = malloc(3 * cap * sizeof *heap);
  int32_t *ids = malloc(id_cap * sizeof *ids);
  archrt_status st = ARCHRT_OK;
  if (!sy.id || !sy.prev || !sy.next || !sy.version || !heap || !ids) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                     "archrt_tokenizer_encode: out of memory");
    goto done;
  }
  int32_t n = 0;
  if (bos)
    ids[n++] = t->bos;
  /* Runs of text between special tokens; a space before each run that
   * starts the text or follows a special token (llama.cpp's rule). */
  int after_special = 1;
  for (size_t run = 0; run < len;) {
    size_t at = run, match = 0;
    int32_t special = -1;
    for (; t->special && at < len; ++at)
      if ((special = special_match(t, text + at, len - at, &match)) >= 0)
        break;
    if (!t->special)
      at = len;
    if (at > run) {
      st = encode_run(t, text, run, at, t->add_space && after_special, &sy,
                      heap, ids, &n);
      if (st)
        goto done;
      after_special = 0;
    }
    if (special < 0)
      break;
    ids[n++] = special;
    after_special = 1;
    run = at + match;
    if (t->flags[special] & TOKEN_RSTRIP)
      while (run < len && (text[run] == ' ' || (text[run] >= '\t' &&
                                                text[run] <= '\r')))
        run++;
  }
  if (eos)
    ids[n++] = t->eos;
  if (n > max_tokens) {
    st = archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                     "archrt_tokenizer_encode: text needs %d tokens, room for %d",
                     n, max_tokens);
    *n_tokens = n; /* the room needed, as a tokenizer.json's encode says */
    goto done;
  }
  memcpy(tokens, ids, (size_t)n * sizeof *ids);
  *n_tokens = n;
done:
  free(sy.id);
  free(sy.prev);
  free(sy.next);
  free(sy.version);
  free(heap);
  free(ids);
  return st;
}

int archrt_tokenizer_is_stop(const archrt_tokenizer *t, int32_t token) {
  if (!t)
    return 0;
  if (t->hf)
    return hf_tokenizer_is_special(t->hf, token);
  return token >= 0 && token < t->vocab_size &&
         (t->flags[token] & TOKEN_STOP);
}

const char *archrt_tokenizer_decode(archrt_tokenizer *t, int32_t prev,
                                    int32_t token) {
  if (t && t->hf)
    return hf_tokenizer_decode(t->hf, prev, token);
  if (!t || token < 0 || token >= t->vocab_size)
    return "";
  const char *piece = t->vocab[token];
  if (prev == t->bos && t->add_space && prev >= 0 && piece[0] == ' ')
    piece++;
  unsigned char byte;
  if (sscanf(piece, "<0x%02hhX>", &byte) == 1 && strlen(piece) == 6) {
    t->byte_piece[0] = (char)byte;
    t->byte_piece[1] = 0;
    return t->byte_piece;
  }
  return piece;
}
