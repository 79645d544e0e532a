/*===- hf_tokenizer.c - Hugging Face tokenizer.json -----------------------===*
 *
 * Encoding follows Hugging Face tokenizers (the Rust library) step by step:
 *   1. the UTF-8 input becomes code points (invalid sequences U+FFFD, as
 *      TextDecoder does);
 *   2. added tokens that are not normalized are cut out first (leftmost,
 *      then longest, over a trie of code points);
 *   3. each remaining segment is normalized, then cut at the normalized
 *      added tokens;
 *   4. the pre-tokenizers split it into pieces (and ByteLevel maps each
 *      piece's bytes to its printable code points);
 *   5. BPE merges each piece's symbols by rank: a heap of candidate pairs
 *      over a linked list, O(n log n) in the piece's length (SentencePiece-
 *      style tokenizers have no pre-tokenizer: the piece is the segment);
 *   6. the post-processor's special tokens go around the result.
 * Decoding maps one token at a time (the decoders are applied to it, and
 * the whole-text ones, Strip after Fuse and Metaspace's prefix, to the
 * first token of a text), so that a caller streams bytes.
 *
 *===---------------------------------------------------------------------===*/
#include "hf_tokenizer.h"
#include "internal.h"
#include "json.h"
#include "regex.h"
#include "unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ---- Small containers --------------------------------------------------*/

typedef struct u32vec {
  uint32_t *v;
  size_t n, cap;
} u32vec;

static int u32_reserve(u32vec *a, size_t extra) {
  if (a->n + extra <= a->cap)
    return 1;
  size_t cap = a->cap ? a->cap : 64;
  while (cap < a->n + extra)
    cap *= 2;
  uint32_t *v = realloc(a->v, cap * sizeof *v);
  if (!v)
    return 0;
  a->v = v, a->cap = cap;
  return 1;
}

static int u32_push(u32vec *a, uint32_t x) {
  if (!u32_reserve(a, 1))
    return 0;
  a->v[a->n++] = x;
  return 1;
}

/* The hashes take a seed drawn at load: a file cannot choose names or ids
 * that collide (linear probing would turn that into quadratic time). */
static uint64_t hash_bytes(uint64_t seed, const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t seed, uint64_t x) {
  x ^= seed;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static uint32_t table_size(size_t n) {
  uint32_t s = 16;
  while (s < 2 * n + 1)
    s *= 2;
  return s;
}

/* ---- The tokenizer -----------------------------------------------------*/

typedef struct added_token {
  const char *content;
  uint32_t len;
  int32_t id;
  uint8_t special, normalized, lstrip, rstrip, single_word;
} added_token;

/* Added tokens by code points: node 0 is the root; a node's token is the
 * index of the added token that ends there, or -1. */
typedef struct trie {
  int32_t *token;
  size_t n_nodes;
  uint64_t *keys; /* (node << 21 | code point) + 1; 0 empty */
  int32_t *child;
  uint32_t mask;
  uint64_t seed;
} trie;

enum { N_NFC, N_PREPEND, N_REPLACE, N_STRIP };
typedef struct nstep {
  int kind;
  uint32_t *a, *b; /* Prepend's text; Replace's pattern and content */
  size_t na, nb;
  archrt_regex *re; /* Replace with a Regex pattern */
  int left, right;
} nstep;

enum { P_SPLIT, P_BYTELEVEL, P_METASPACE, P_DIGITS, P_WSPLIT };
enum { B_ISOLATED, B_REMOVED, B_PREVIOUS, B_NEXT, B_CONTIGUOUS };
enum { PREPEND_NEVER, PREPEND_ALWAYS, PREPEND_FIRST };
typedef struct pstep {
  int kind;
  archrt_regex *re; /* Split's regex (or ByteLevel's GPT-2 one) */
  uint32_t *lit;    /* Split's String pattern */
  size_t nlit;
  int behavior, prefix_space, use_regex, prepend, split, individual;
  uint32_t replacement;
} pstep;

enum { D_BYTELEVEL, D_REPLACE, D_BYTEFALLBACK, D_FUSE, D_STRIP, D_METASPACE };
typedef struct dstep {
  int kind;
  const char *a, *b; /* Replace's pattern and content (UTF-8) */
  size_t na, nb;
  uint32_t content; /* Strip's character */
  int start, stop, whole, prepend;
  char rep[4]; /* Metaspace's replacement as UTF-8 */
  int nrep;
} dstep;

/* Hash slots: a vocabulary slot keeps its string's hash, so that a probe
 * compares strings only when the hashes agree; a merge slot holds all it
 * needs in one cache line. */
typedef struct vslot {
  int32_t id; /* -1 empty */
  uint32_t hash;
} vslot;
typedef struct mslot {
  uint64_t key; /* 0 empty */
  uint32_t rank;
  int32_t id;
} mslot;

enum { CHAR_IDS = 0x3000 };

struct hf_tokenizer {
  char *text; /* the file's text: every string points into it */
  uint64_t seed; /* of the hashes */
  const char *path;
  int32_t n_ids;
  const char **str; /* by id: the vocabulary's string or NULL */
  uint32_t *len;
  int32_t *added_of; /* by id: index into added, or -1 */
  vslot *vmap; /* vocabulary string -> id (open addressing) */
  uint32_t vmask;
  mslot *merges; /* (left << 32 | right) + 1 -> rank, merged id */
  uint32_t mmask;
  int32_t *char_id; /* the token of each code point below CHAR_IDS */
  int32_t unk, byte_id[256];
  int byte_fallback, fuse_unk, ignore_merges;
  added_token *added;
  int32_t n_added;
  trie raw, norm; /* added tokens not normalized, and normalized */
  nstep *nsteps;
  int n_nsteps;
  pstep *psteps;
  int n_psteps;
  dstep *dsteps;
  int n_dsteps;
  int32_t *before, *after; /* the post-processor's tokens */
  int n_before, n_after;
  uint32_t byte_cp[256];   /* ByteLevel: byte -> code point */
  int16_t cp_byte[324];    /* and back (-1: none) */
  char *dec;               /* decode's buffer */
  size_t dec_cap;
};

/* The slot of string s in the vocabulary's table: its entry, or the empty
 * slot where it would go. */
static vslot *vocab_slot(const hf_tokenizer *t, const char *s, size_t n) {
  uint32_t h = (uint32_t)hash_bytes(t->seed, s, n);
  for (uint32_t i = h & t->vmask;; i = (i + 1) & t->vmask) {
    vslot *v = &t->vmap[i];
    if (v->id < 0 || (v->hash == h && t->len[v->id] == n &&
                      memcmp(t->str[v->id], s, n) == 0))
      return v;
  }
}

static int32_t vocab_find(const hf_tokenizer *t, const char *s, size_t n) {
  return vocab_slot(t, s, n)->id;
}

/* The token of one code point (its UTF-8 bytes c[0 .. len)). */
static int32_t char_find(const hf_tokenizer *t, uint32_t cp, const char *c,
                         int len) {
  return cp < CHAR_IDS ? t->char_id[cp] : vocab_find(t, c, (size_t)len);
}

static int merge_find(const hf_tokenizer *t, int32_t a, int32_t b,
                      uint32_t *rank, int32_t *id) {
  uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
  for (uint32_t i = (uint32_t)hash_u64(t->seed, key) & t->mmask;;
       i = (i + 1) & t->mmask) {
    const mslot *m = &t->merges[i];
    if (m->key == 0)
      return 0;
    if (m->key == key) {
      *rank = m->rank;
      *id = m->id;
      return 1;
    }
  }
}

static int32_t trie_child(const trie *tr, int32_t node, uint32_t c) {
  if (!tr->mask)
    return -1;
  uint64_t key = ((uint64_t)node << 21 | c) + 1;
  for (uint32_t i = (uint32_t)hash_u64(tr->seed, key) & tr->mask;;
       i = (i + 1) & tr->mask) {
    if (tr->keys[i] == 0)
      return -1;
    if (tr->keys[i] == key)
      return tr->child[i];
  }
}

static void trie_free(trie *tr) {
  free(tr->token);
  free(tr->keys);
  free(tr->child);
}

void hf_tokenizer_free(hf_tokenizer *t) {
  if (!t)
    return;
  free(t->text);
  free(t->str);
  free(t->len);
  free(t->added_of);
  free(t->vmap);
  free(t->merges);
  free(t->char_id);
  free(t->added);
  trie_free(&t->raw);
  trie_free(&t->norm);
  for (int k = 0; k < t->n_nsteps; ++k) {
    free(t->nsteps[k].a);
    free(t->nsteps[k].b);
    archrt_regex_free(t->nsteps[k].re);
  }
  free(t->nsteps);
  for (int k = 0; k < t->n_psteps; ++k) {
    archrt_regex_free(t->psteps[k].re);
    free(t->psteps[k].lit);
  }
  free(t->psteps);
  free(t->dsteps);
  free(t->before);
  free(t->after);
  free(t->dec);
  free(t);
}

/* ---- Loading -----------------------------------------------------------*/

/* At most this many normalizers, pre-tokenizers, decoders (Sequences
 * flattened), and post-processor tokens on either side: each runs over
 * every segment, and a file could list millions. */
enum { MAX_STEPS = 64 };
/* Bytes of a String pattern (Replace, Split): each is tried at every
 * position of a text, a test of up to its length each time. Real files'
 * are a character or two. */
enum { MAX_LITERAL = 256 };

typedef struct loader {
  hf_tokenizer *t;
  int32_t vocab_size;
  archrt_status st;
} loader;

#define LOAD_FAIL(ld, status, ...)                                             \
  ((ld)->st = archrt_fail((status), __VA_ARGS__), 0)

static int bad(loader *ld, const char *what) {
  return LOAD_FAIL(ld, ARCHRT_ERR_FORMAT, "%s: %s", ld->t->path, what);
}

static int oom(loader *ld) {
  return LOAD_FAIL(ld, ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory",
                   ld->t->path);
}

static int unsupported(loader *ld, const char *part, const archrt_json *type) {
  char name[64] = "?";
  if (type && type->kind == ARCHRT_JSON_STRING)
    snprintf(name, sizeof name, "%.*s", (int)(type->n < 60 ? type->n : 60),
             type->u.str);
  return LOAD_FAIL(ld, ARCHRT_ERR_FORMAT,
                   "%s: %s type '%s' is not supported (docs/design.md lists "
                   "what is)",
                   ld->t->path, part, name);
}

static int get_bool(const archrt_json *obj, const char *key, int dflt) {
  const archrt_json *v = archrt_json_get(obj, key);
  return v && v->kind == ARCHRT_JSON_BOOL ? v->u.boolean : dflt;
}

/* An id: a whole number in [0, vocab_size). Messages name it as `what`,
 * followed by `index` when that is not negative (formatted only on
 * failure: the vocabulary has hundreds of thousands of ids). */
static int read_id(loader *ld, const archrt_json *v, const char *what,
                   long index, int32_t *out) {
  char name[96];
  /* (Range first: a cast of 1e300 to an integer is undefined.) */
  int whole = v && v->kind == ARCHRT_JSON_NUMBER && v->u.number >= 0 &&
              !(v->u.number < 2147483648.0 &&
                v->u.number != (double)(int32_t)v->u.number);
  if (whole && v->u.number < ld->vocab_size) {
    *out = (int32_t)v->u.number;
    return 1;
  }
  if (index >= 0)
    snprintf(name, sizeof name, "%s %ld", what, index);
  else
    snprintf(name, sizeof name, "%s", what);
  if (!whole)
    return LOAD_FAIL(ld, ARCHRT_ERR_FORMAT, "%s: %s is not a token id",
                     ld->t->path, name);
  return LOAD_FAIL(ld, ARCHRT_ERR_FORMAT,
                   "%s: %s has id %.0f, outside the model's vocabulary of "
                   "%d (a tokenizer of another model?)",
                   ld->t->path, name, v->u.number, ld->vocab_size);
}

static uint32_t *to_cps(const archrt_json *s, size_t *n) {
  uint32_t *c = malloc((s->n + 1) * sizeof *c);
  if (c)
    *n = archrt_utf8_decode(s->u.str, s->n, c, NULL);
  return c;
}

/* The single code point of a string (Metaspace's replacement, Strip's
 * content). */
static int one_char(loader *ld, const archrt_json *s, const char *what,
                    uint32_t *out) {
  uint32_t c[8];
  if (!s || s->kind != ARCHRT_JSON_STRING || s->n == 0 || s->n > 4 ||
      archrt_utf8_decode(s->u.str, s->n, c, NULL) != 1) {
    char msg[96];
    snprintf(msg, sizeof msg, "%s must be one character", what);
    return bad(ld, msg);
  }
  *out = c[0];
  return 1;
}

static int load_model(loader *ld, const archrt_json *model) {
  hf_tokenizer *t = ld->t;
  const archrt_json *type = archrt_json_get(model, "type");
  if (!model || model->kind != ARCHRT_JSON_OBJECT)
    return bad(ld, "no \"model\" object");
  if (type && !archrt_json_is(type, "BPE"))
    return unsupported(ld, "model", type);
  const archrt_json *vocab = archrt_json_get(model, "vocab");
  const archrt_json *merges = archrt_json_get(model, "merges");
  if (!vocab || vocab->kind != ARCHRT_JSON_OBJECT)
    return bad(ld, "model.vocab is not an object");
  if (!merges || merges->kind != ARCHRT_JSON_ARRAY)
    return bad(ld, "model.merges is not an array");
  const archrt_json *dropout = archrt_json_get(model, "dropout");
  if (dropout && dropout->kind != ARCHRT_JSON_NULL &&
      !(dropout->kind == ARCHRT_JSON_NUMBER && dropout->u.number == 0))
    return bad(ld, "model.dropout is not supported (encoding would not be "
                   "deterministic)");
  const char *affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
  for (int k = 0; k < 2; ++k) {
    const archrt_json *v = archrt_json_get(model, affixes[k]);
    if (v && v->kind != ARCHRT_JSON_NULL &&
        !(v->kind == ARCHRT_JSON_STRING && v->n == 0)) {
      char msg[96];
      snprintf(msg, sizeof msg, "model.%s is not supported", affixes[k]);
      return bad(ld, msg);
    }
  }
  /* Ids: the vocabulary's and the added tokens' (read in load()). */
  int32_t max_id = -1;
  for (uint32_t k = 0; k < vocab->n; ++k) {
    int32_t id;
    if (!read_id(ld, &vocab->u.items[2 * k + 1], "vocabulary entry", k, &id))
      return 0;
    if (id > max_id)
      max_id = id;
  }
  t->n_ids = max_id + 1;
  t->str = calloc((size_t)t->n_ids + 1, sizeof *t->str);
  t->len = calloc((size_t)t->n_ids + 1, sizeof *t->len);
  uint32_t vsize = table_size(vocab->n);
  t->vmap = malloc(vsize * sizeof *t->vmap);
  if (!t->str || !t->len || !t->vmap)
    return oom(ld);
  t->vmask = vsize - 1;
  for (uint32_t i = 0; i < vsize; ++i)
    t->vmap[i].id = -1;
  for (uint32_t k = 0; k < vocab->n; ++k) {
    const archrt_json *name = &vocab->u.items[2 * k];
    int32_t id = (int32_t)vocab->u.items[2 * k + 1].u.number;
    if (t->str[id]) {
      char msg[96];
      snprintf(msg, sizeof msg, "id %d names two vocabulary entries", id);
      return bad(ld, msg);
    }
    t->str[id] = name->u.str;
    t->len[id] = name->n;
    /* A repeated name takes its last id, as the Rust library's map. */
    vslot *v = vocab_slot(t, name->u.str, name->n);
    v->id = id;
    v->hash = (uint32_t)hash_bytes(t->seed, name->u.str, name->n);
  }
  /* Merges: "left right" or ["left", "right"]; rank = position. */
  uint32_t msize = table_size(merges->n);
  t->merges = calloc(msize, sizeof *t->merges);
  size_t cap = 256;
  char *joined = malloc(cap);
  if (!t->merges || !joined) {
    free(joined);
    return oom(ld);
  }
  t->mmask = msize - 1;
  for (uint32_t k = 0; k < merges->n; ++k) {
    const archrt_json *m = &merges->u.items[k];
    const char *a, *b;
    size_t na, nb;
    if (m->kind == ARCHRT_JSON_STRING) {
      const char *space = memchr(m->u.str, ' ', m->n);
      if (!space || memchr(space + 1, ' ', m->n - (size_t)(space - m->u.str) - 1)) {
        free(joined);
        char msg[96];
        snprintf(msg, sizeof msg, "merge %u is not two tokens", k);
        return bad(ld, msg);
      }
      a = m->u.str, na = (size_t)(space - m->u.str);
      b = space + 1, nb = m->n - na - 1;
    } else if (m->kind == ARCHRT_JSON_ARRAY && m->n == 2 &&
               m->u.items[0].kind == ARCHRT_JSON_STRING &&
               m->u.items[1].kind == ARCHRT_JSON_STRING) {
      a = m->u.items[0].u.str, na = m->u.items[0].n;
      b = m->u.items[1].u.str, nb = m->u.items[1].n;
    } else {
      free(joined);
      char msg[96];
      snprintf(msg, sizeof msg, "merge %u is not two tokens", k);
      return bad(ld, msg);
    }
    if (na + nb > cap) {
      cap = 2 * (na + nb);
      char *j = realloc(joined, cap);
      if (!j) {
        free(joined);
        return oom(ld);
      }
      joined = j;
    }
    memcpy(joined, a, na);
    memcpy(joined + na, b, nb);
    int32_t ia = vocab_find(t, a, na), ib = vocab_find(t, b, nb),
            inew = vocab_find(t, joined, na + nb);
    if (ia < 0 || ib < 0 || inew < 0) {
      free(joined);
      char msg[160];
      snprintf(msg, sizeof msg,
               "merge %u (\"%.*s\" + \"%.*s\"): %s is not in the vocabulary",
               k, (int)(na < 40 ? na : 40), a, (int)(nb < 40 ? nb : 40), b,
               ia < 0 ? "its left token" : ib < 0 ? "its right token"
                                                  : "the merged token");
      return bad(ld, msg);
    }
    uint64_t key = ((uint64_t)(uint32_t)ia << 32 | (uint32_t)ib) + 1;
    uint32_t i = (uint32_t)hash_u64(t->seed, key) & t->mmask;
    while (t->merges[i].key && t->merges[i].key != key)
      i = (i + 1) & t->mmask;
    /* A repeated pair takes its last rank, as the Rust library's map. */
    t->merges[i] = (mslot){key, k, inew};
  }
  free(joined);
  /* The unknown token, byte fallback, fusing unknowns. */
  const archrt_json *unk = archrt_json_get(model, "unk_token");
  t->unk = -1;
  if (unk && unk->kind == ARCHRT_JSON_STRING) {
    t->unk = vocab_find(t, unk->u.str, unk->n);
    if (t->unk < 0)
      return bad(ld, "model.unk_token is not in the vocabulary");
  }
  t->byte_fallback = get_bool(model, "byte_fallback", 0);
  t->fuse_unk = get_bool(model, "fuse_unk", 0);
  t->ignore_merges = get_bool(model, "ignore_merges", 0);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    t->byte_id[b] = vocab_find(t, name, 6);
  }
  /* Single characters are looked up most: the common ones by table. */
  if (!(t->char_id = malloc(CHAR_IDS * sizeof *t->char_id)))
    return oom(ld);
  for (uint32_t c = 0; c < CHAR_IDS; ++c) {
    char u[4];
    int len = archrt_utf8_put(c, u);
    t->char_id[c] = c >= 0xD800 ? -1 : vocab_find(t, u, (size_t)len);
  }
  return 1;
}

static int load_added(loader *ld, const archrt_json *list) {
  hf_tokenizer *t = ld->t;
  if (list && list->kind != ARCHRT_JSON_NULL &&
      list->kind != ARCHRT_JSON_ARRAY)
    return bad(ld, "added_tokens is not an array");
  uint32_t count = list && list->kind == ARCHRT_JSON_ARRAY ? list->n : 0;
  t->added = calloc(count + 1, sizeof *t->added);
  if (!t->added)
    return oom(ld);
  int32_t max_id = t->n_ids - 1;
  for (uint32_t k = 0; k < count; ++k) {
    const archrt_json *a = &list->u.items[k];
    const archrt_json *content = archrt_json_get(a, "content");
    added_token *at = &t->added[t->n_added];
    if (!content || content->kind != ARCHRT_JSON_STRING) {
      char msg[96];
      snprintf(msg, sizeof msg, "added token %u has no content", k);
      return bad(ld, msg);
    }
    if (!read_id(ld, archrt_json_get(a, "id"), "added token", k, &at->id))
      return 0;
    at->content = content->u.str;
    at->len = content->n;
    at->special = (uint8_t)get_bool(a, "special", 0);
    at->normalized = (uint8_t)get_bool(a, "normalized", !at->special);
    at->lstrip = (uint8_t)get_bool(a, "lstrip", 0);
    at->rstrip = (uint8_t)get_bool(a, "rstrip", 0);
    at->single_word = (uint8_t)get_bool(a, "single_word", 0);
    if (at->id > max_id)
      max_id = at->id;
    t->n_added++;
  }
  if (max_id >= t->n_ids) { /* ids past the vocabulary */
    const char **s = realloc(t->str, ((size_t)max_id + 2) * sizeof *s);
    if (s)
      t->str = s;
    uint32_t *l = realloc(t->len, ((size_t)max_id + 2) * sizeof *l);
    if (l)
      t->len = l;
    if (!s || !l)
      return oom(ld);
    for (int32_t i = t->n_ids; i <= max_id; ++i)
      t->str[i] = NULL, t->len[i] = 0;
    t->n_ids = max_id + 1;
  }
  t->added_of = malloc((size_t)t->n_ids * sizeof *t->added_of);
  if (!t->added_of)
    return oom(ld);
  memset(t->added_of, 0xff, (size_t)t->n_ids * sizeof *t->added_of);
  for (int32_t k = 0; k < t->n_added; ++k)
    if (t->added_of[t->added[k].id] < 0)
      t->added_of[t->added[k].id] = k;
  return 1; /* (the tries come once the normalizer is read: build_tries) */
}

/* Sequence members are flattened into the step list. */
static int load_normalizer(loader *ld, const archrt_json *n) {
  hf_tokenizer *t = ld->t;
  if (!n || n->kind == ARCHRT_JSON_NULL)
    return 1;
  const archrt_json *type = archrt_json_get(n, "type");
  if (archrt_json_is(type, "Sequence")) {
    const archrt_json *list = archrt_json_get(n, "normalizers");
    if (!list || list->kind != ARCHRT_JSON_ARRAY)
      return bad(ld, "normalizer Sequence without a normalizers list");
    for (uint32_t k = 0; k < list->n; ++k)
      if (!load_normalizer(ld, &list->u.items[k]))
        return 0;
    return 1;
  }
  nstep s = {0};
  if (archrt_json_is(type, "NFC")) {
    s.kind = N_NFC;
  } else if (archrt_json_is(type, "Prepend")) {
    const archrt_json *p = archrt_json_get(n, "prepend");
    if (!p || p->kind != ARCHRT_JSON_STRING)
      return bad(ld, "normalizer Prepend without a prepend string");
    s.kind = N_PREPEND;
    if (!(s.a = to_cps(p, &s.na)))
      return oom(ld);
  } else if (archrt_json_is(type, "Replace")) {
    const archrt_json *pat = archrt_json_get(n, "pattern");
    const archrt_json *str = archrt_json_get(pat, "String");
    const archrt_json *rx = archrt_json_get(pat, "Regex");
    const archrt_json *content = archrt_json_get(n, "content");
    if (!content || content->kind != ARCHRT_JSON_STRING ||
        !((str && str->kind == ARCHRT_JSON_STRING && str->n) ||
          (rx && rx->kind == ARCHRT_JSON_STRING)))
      return bad(ld, "normalizer Replace needs a pattern and content");
    if (str && str->kind == ARCHRT_JSON_STRING && str->n > MAX_LITERAL)
      return bad(ld, "normalizer Replace: a String pattern longer than 256 "
                     "bytes");
    s.kind = N_REPLACE;
    if (!(s.b = to_cps(content, &s.nb)))
      return oom(ld);
    if (str && str->kind == ARCHRT_JSON_STRING && str->n) {
      if (!(s.a = to_cps(str, &s.na))) {
        free(s.b);
        return oom(ld);
      }
    } else {
      char err[160];
      s.re = archrt_regex_compile(rx->u.str, rx->n, err, sizeof err);
      if (!s.re) {
        free(s.b);
        char msg[256];
        snprintf(msg, sizeof msg, "normalizer Replace's regex: %s", err);
        return bad(ld, msg);
      }
    }
  } else if (archrt_json_is(type, "Strip")) {
    s.kind = N_STRIP;
    s.left = get_bool(n, "strip_left", 1);
    s.right = get_bool(n, "strip_right", 1);
  } else {
    return unsupported(ld, "normalizer", type);
  }
  nstep *list = t->n_nsteps < MAX_STEPS
                    ? realloc(t->nsteps, (size_t)(t->n_nsteps + 1) * sizeof *list)
                    : NULL;
  if (t->n_nsteps >= MAX_STEPS) {
    free(s.a), free(s.b), archrt_regex_free(s.re);
    return bad(ld, "more than 64 normalizers");
  }
  if (!list) {
    free(s.a), free(s.b), archrt_regex_free(s.re);
    return oom(ld);
  }
  t->nsteps = list;
  t->nsteps[t->n_nsteps++] = s;
  return 1;
}

/* GPT-2's split, which ByteLevel applies with use_regex. */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

static int prepend_scheme(loader *ld, const archrt_json *n, int *out) {
  const archrt_json *scheme = archrt_json_get(n, "prepend_scheme");
  if (scheme) {
    if (archrt_json_is(scheme, "always"))
      *out = PREPEND_ALWAYS;
    else if (archrt_json_is(scheme, "first"))
      *out = PREPEND_FIRST;
    else if (archrt_json_is(scheme, "never"))
      *out = PREPEND_NEVER;
    else
      return bad(ld, "Metaspace prepend_scheme must be always, first or "
                     "never");
  } else {
    *out = get_bool(n, "add_prefix_space", 1) ? PREPEND_ALWAYS
                                               : PREPEND_NEVER;
  }
  return 1;
}

static int load_pretokenizer(loader *ld, const archrt_json *n) {
  hf_tokenizer *t = ld->t;
  if (!n || n->kind == ARCHRT_JSON_NULL)
    return 1;
  const archrt_json *type = archrt_json_get(n, "type");
  if (archrt_json_is(type, "Sequence")) {
    const archrt_json *list = archrt_json_get(n, "pretokenizers");
    if (!list || list->kind != ARCHRT_JSON_ARRAY)
      return bad(ld, "pre_tokenizer Sequence without a pretokenizers list");
    for (uint32_t k = 0; k < list->n; ++k)
      if (!load_pretokenizer(ld, &list->u.items[k]))
        return 0;
    return 1;
  }
  pstep s = {0};
  char err[160], msg[256];
  if (archrt_json_is(type, "Split")) {
    const archrt_json *pat = archrt_json_get(n, "pattern");
    const archrt_json *str = archrt_json_get(pat, "String");
    const archrt_json *rx = archrt_json_get(pat, "Regex");
    const archrt_json *behavior = archrt_json_get(n, "behavior");
    static const char *behaviors[] = {"Isolated", "Removed",
                                      "MergedWithPrevious", "MergedWithNext",
                                      "Contiguous"};
    s.kind = P_SPLIT;
    s.behavior = -1;
    for (int k = 0; k < 5; ++k)
      if (archrt_json_is(behavior, behaviors[k]))
        s.behavior = k;
    if (s.behavior < 0)
      return bad(ld, "pre_tokenizer Split: unknown behavior");
    if (get_bool(n, "invert", 0))
      return bad(ld, "pre_tokenizer Split with invert is not supported");
    if (str && str->kind == ARCHRT_JSON_STRING && str->n) {
      if (str->n > MAX_LITERAL)
        return bad(ld, "pre_tokenizer Split: a String pattern longer than "
                       "256 bytes");
      if (!(s.lit = to_cps(str, &s.nlit)))
        return oom(ld);
    } else if (rx && rx->kind == ARCHRT_JSON_STRING) {
      s.re = archrt_regex_compile(rx->u.str, rx->n, err, sizeof err);
      if (!s.re) {
        snprintf(msg, sizeof msg, "pre_tokenizer Split's regex: %s", err);
        return bad(ld, msg);
      }
    } else {
      return bad(ld, "pre_tokenizer Split needs a String or Regex pattern");
    }
  } else if (archrt_json_is(type, "ByteLevel")) {
    s.kind = P_BYTELEVEL;
    s.prefix_space = get_bool(n, "add_prefix_space", 1);
    s.use_regex = get_bool(n, "use_regex", 1);
    if (s.use_regex) {
      s.re = archrt_regex_compile(gpt2_pattern, sizeof gpt2_pattern - 1, err,
                                  sizeof err);
      if (!s.re)
        return oom(ld);
    }
  } else if (archrt_json_is(type, "Metaspace")) {
    s.kind = P_METASPACE;
    if (!one_char(ld, archrt_json_get(n, "replacement"),
                  "Metaspace replacement", &s.replacement) ||
        !prepend_scheme(ld, n, &s.prepend))
      return 0;
    s.split = get_bool(n, "split", 1);
  } else if (archrt_json_is(type, "Digits")) {
    s.kind = P_DIGITS;
    s.individual = get_bool(n, "individual_digits", 0);
  } else if (archrt_json_is(type, "WhitespaceSplit")) {
    s.kind = P_WSPLIT;
  } else {
    return unsupported(ld, "pre_tokenizer", type);
  }
  pstep *list = t->n_psteps < MAX_STEPS
                    ? realloc(t->psteps, (size_t)(t->n_psteps + 1) * sizeof *list)
                    : NULL;
  if (t->n_psteps >= MAX_STEPS) {
    archrt_regex_free(s.re), free(s.lit);
    return bad(ld, "more than 64 pre-tokenizers");
  }
  if (!list) {
    archrt_regex_free(s.re), free(s.lit);
    return oom(ld);
  }
  t->psteps = list;
  t->psteps[t->n_psteps++] = s;
  return 1;
}

static int push_id(loader *ld, int32_t **list, int *n, int32_t id) {
  if (*n >= MAX_STEPS)
    return bad(ld, "post_processor: more than 64 special tokens around the "
                   "text");
  int32_t *l = realloc(*list, (size_t)(*n + 1) * sizeof *l);
  if (!l)
    return oom(ld);
  *list = l;
  l[(*n)++] = id;
  return 1;
}

/* A [name, id] pair of BertProcessing and RobertaProcessing. */
static int pair_id(loader *ld, const archrt_json *pair, const char *what,
                   int32_t *id) {
  if (!pair || pair->kind != ARCHRT_JSON_ARRAY || pair->n != 2)
    return bad(ld, "post_processor: cls and sep must be [token, id]");
  return read_id(ld, &pair->u.items[1], what, -1, id);
}

static int load_post(loader *ld, const archrt_json *n) {
  hf_tokenizer *t = ld->t;
  if (!n || n->kind == ARCHRT_JSON_NULL)
    return 1;
  const archrt_json *type = archrt_json_get(n, "type");
  if (archrt_json_is(type, "Sequence")) {
    const archrt_json *list = archrt_json_get(n, "processors");
    if (!list || list->kind != ARCHRT_JSON_ARRAY)
      return bad(ld, "post_processor Sequence without a processors list");
    for (uint32_t k = 0; k < list->n; ++k)
      if (!load_post(ld, &list->u.items[k]))
        return 0;
    return 1;
  }
  if (archrt_json_is(type, "ByteLevel"))
    return 1; /* offsets only */
  if (archrt_json_is(type, "BertProcessing") ||
      archrt_json_is(type, "RobertaProcessing")) {
    int32_t cls, sep;
    return pair_id(ld, archrt_json_get(n, "cls"), "post_processor cls",
                   &cls) &&
           pair_id(ld, archrt_json_get(n, "sep"), "post_processor sep",
                   &sep) &&
           push_id(ld, &t->before, &t->n_before, cls) &&
           push_id(ld, &t->after, &t->n_after, sep);
  }
  if (!archrt_json_is(type, "TemplateProcessing"))
    return unsupported(ld, "post_processor", type);
  const archrt_json *single = archrt_json_get(n, "single");
  const archrt_json *specials = archrt_json_get(n, "special_tokens");
  if (!single || single->kind != ARCHRT_JSON_ARRAY)
    return bad(ld, "post_processor TemplateProcessing without a single "
                   "template");
  /* (Each item looks its name up among the special tokens: a template
   * of items whose ids are empty would add nothing and cost items x
   * tokens comparisons.) */
  if (single->n > 2 * MAX_STEPS + 1)
    return bad(ld, "post_processor: the single template has more than 129 "
                   "items");
  int seen_sequence = 0;
  for (uint32_t k = 0; k < single->n; ++k) {
    const archrt_json *item = &single->u.items[k];
    if (archrt_json_get(item, "Sequence")) {
      if (seen_sequence)
        return bad(ld, "post_processor: the single template names the "
                       "sequence twice");
      seen_sequence = 1;
      continue;
    }
    const archrt_json *sp = archrt_json_get(item, "SpecialToken");
    const archrt_json *name = archrt_json_get(sp, "id");
    if (!name || name->kind != ARCHRT_JSON_STRING)
      return bad(ld, "post_processor: a template item is neither Sequence "
                     "nor SpecialToken");
    const archrt_json *entry = NULL;
    for (uint32_t j = 0; specials && specials->kind == ARCHRT_JSON_OBJECT &&
                         j < specials->n; ++j) {
      const archrt_json *key = &specials->u.items[2 * j];
      if (key->n == name->n && !memcmp(key->u.str, name->u.str, name->n))
        entry = &specials->u.items[2 * j + 1];
    }
    const archrt_json *ids = archrt_json_get(entry, "ids");
    if (!ids || ids->kind != ARCHRT_JSON_ARRAY) {
      char msg[128];
      snprintf(msg, sizeof msg,
               "post_processor: special token '%.*s' has no ids",
               (int)(name->n < 60 ? name->n : 60), name->u.str);
      return bad(ld, msg);
    }
    for (uint32_t j = 0; j < ids->n; ++j) {
      int32_t id;
      if (!read_id(ld, &ids->u.items[j], "a post_processor special token", -1,
                   &id) ||
          !(seen_sequence ? push_id(ld, &t->after, &t->n_after, id)
                          : push_id(ld, &t->before, &t->n_before, id)))
        return 0;
    }
  }
  return 1;
}

static int load_decoder(loader *ld, const archrt_json *n, int *fused) {
  hf_tokenizer *t = ld->t;
  if (!n || n->kind == ARCHRT_JSON_NULL)
    return 1;
  const archrt_json *type = archrt_json_get(n, "type");
  if (archrt_json_is(type, "Sequence")) {
    const archrt_json *list = archrt_json_get(n, "decoders");
    if (!list || list->kind != ARCHRT_JSON_ARRAY)
      return bad(ld, "decoder Sequence without a decoders list");
    for (uint32_t k = 0; k < list->n; ++k)
      if (!load_decoder(ld, &list->u.items[k], fused))
        return 0;
    return 1;
  }
  dstep s = {0};
  if (archrt_json_is(type, "ByteLevel")) {
    s.kind = D_BYTELEVEL;
  } else if (archrt_json_is(type, "Replace")) {
    const archrt_json *str = archrt_json_get(archrt_json_get(n, "pattern"),
                                             "String");
    const archrt_json *content = archrt_json_get(n, "content");
    if (!str || str->kind != ARCHRT_JSON_STRING || !str->n || !content ||
        content->kind != ARCHRT_JSON_STRING)
      return bad(ld, "decoder Replace needs a String pattern and content "
                     "(Regex patterns are not supported)");
    if (str->n > MAX_LITERAL)
      return bad(ld, "decoder Replace: a String pattern longer than 256 "
                     "bytes");
    s.kind = D_REPLACE;
    s.a = str->u.str, s.na = str->n;
    s.b = content->u.str, s.nb = content->n;
  } else if (archrt_json_is(type, "ByteFallback")) {
    s.kind = D_BYTEFALLBACK;
  } else if (archrt_json_is(type, "Fuse")) {
    s.kind = D_FUSE;
    *fused = 1;
  } else if (archrt_json_is(type, "Strip")) {
    const archrt_json *start = archrt_json_get(n, "start");
    const archrt_json *stop = archrt_json_get(n, "stop");
    s.kind = D_STRIP;
    if (!one_char(ld, archrt_json_get(n, "content"), "decoder Strip content",
                  &s.content))
      return 0;
    double a = start && start->kind == ARCHRT_JSON_NUMBER ? start->u.number
                                                          : 0,
           b = stop && stop->kind == ARCHRT_JSON_NUMBER ? stop->u.number : 0;
    if (!(a >= 0 && a <= 64 && b >= 0 && b <= 64))
      return bad(ld, "decoder Strip: start and stop must be in [0, 64]");
    s.start = (int)a, s.stop = (int)b;
    /* After Fuse, the text is one string: its start is the first token's
     * (its end is not known while streaming, so stop is refused there). */
    s.whole = *fused;
    if (s.whole && s.stop)
      return bad(ld, "decoder Strip with stop after Fuse is not supported "
                     "(decoding streams token by token)");
  } else if (archrt_json_is(type, "Metaspace")) {
    uint32_t rep;
    s.kind = D_METASPACE;
    if (!one_char(ld, archrt_json_get(n, "replacement"),
                  "Metaspace replacement", &rep) ||
        !prepend_scheme(ld, n, &s.prepend))
      return 0;
    s.nrep = archrt_utf8_put(rep, s.rep);
  } else {
    return unsupported(ld, "decoder", type);
  }
  if (t->n_dsteps >= MAX_STEPS)
    return bad(ld, "more than 64 decoders");
  dstep *list = realloc(t->dsteps, (size_t)(t->n_dsteps + 1) * sizeof *list);
  if (!list)
    return oom(ld);
  t->dsteps = list;
  t->dsteps[t->n_dsteps++] = s;
  return 1;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 maps to itself, the other
 * bytes to U+0100 onwards in order. */
static void byte_table(hf_tokenizer *t) {
  uint32_t next = 256;
  for (int i = 0; i < 324; ++i)
    t->cp_byte[i] = -1;
  for (int b = 0; b < 256; ++b) {
    int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                    (b >= 0xAE && b <= 0xFF);
    t->byte_cp[b] = printable ? (uint32_t)b : next++;
    t->cp_byte[t->byte_cp[b]] = (int16_t)b;
  }
}

static int build_tries(loader *ld);

archrt_status hf_tokenizer_load(char *text, size_t size, const char *path,
                                int32_t vocab_size, hf_tokenizer **out) {
  hf_tokenizer *t = calloc(1, sizeof *t);
  if (!t) {
    free(text);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  t->text = text;
  t->path = path;
  if (getrandom(&t->seed, sizeof t->seed, GRND_NONBLOCK) != sizeof t->seed)
    t->seed = (uint64_t)(uintptr_t)t ^ (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
  byte_table(t);
  loader ld = {t, vocab_size, ARCHRT_OK};
  char err[200];
  archrt_json_doc *doc = archrt_json_parse(text, size, err, sizeof err);
  if (!doc) {
    ld.st = archrt_fail(ARCHRT_ERR_FORMAT, "%s: not valid JSON: %s", path,
                        err);
  } else {
    const archrt_json *root = archrt_json_root(doc);
    int fused = 0;
    if (root->kind != ARCHRT_JSON_OBJECT)
      bad(&ld, "the document is not an object");
    else /* each part in turn; the first failure sets ld.st */
      (void)(load_model(&ld, archrt_json_get(root, "model")) &&
             load_added(&ld, archrt_json_get(root, "added_tokens")) &&
             load_normalizer(&ld, archrt_json_get(root, "normalizer")) &&
             load_pretokenizer(&ld, archrt_json_get(root, "pre_tokenizer")) &&
             load_post(&ld, archrt_json_get(root, "post_processor")) &&
             load_decoder(&ld, archrt_json_get(root, "decoder"), &fused) &&
             build_tries(&ld));
    archrt_json_free(doc);
  }
  if (ld.st) {
    t->path = NULL;
    hf_tokenizer_free(t);
    return ld.st;
  }
  t->path = NULL; /* the caller's string; not kept */
  *out = t;
  return ARCHRT_OK;
}

/* ---- Encoding ----------------------------------------------------------*/

/* Pieces of text as code points: spans of one buffer. */
typedef struct pieces {
  u32vec buf;
  u32vec span; /* offset, length pairs */
} pieces;

typedef struct work {
  const hf_tokenizer *t;
  u32vec ids;
  u32vec norm, tmp;
  pieces a, b; /* pre-tokenization ping-pongs between them */
  /* BPE */
  int32_t *sym, *prev, *next;
  uint32_t *heap_rank, *heap_pos;
  int32_t *heap_id;
  size_t sym_cap;
  char *bytes;
  size_t bytes_cap;
  archrt_regex_scratch rx; /* the regexes' stack and step budget */
  size_t max_norm;         /* the longest normalized text allowed */
  int oom;                 /* out of memory, or (with `why`) refused */
  const char *why;
  /* Recent merge lookups (direct-mapped): long pieces repeat their pairs,
   * and the merge table is far larger than the caches. */
  mslot seen[1024];
} work;

static int merge_cached(work *w, int32_t a, int32_t b, uint32_t *rank,
                        int32_t *id) {
  uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
  mslot *c = &w->seen[hash_u64(0, key) & 1023];
  if (c->key != key) {
    c->key = key;
    if (!merge_find(w->t, a, b, &c->rank, &c->id))
      c->id = -1;
  }
  *rank = c->rank;
  *id = c->id;
  return c->id >= 0;
}

static void work_free(work *w) {
  archrt_regex_scratch_free(&w->rx);
  free(w->ids.v), free(w->norm.v), free(w->tmp.v);
  free(w->a.buf.v), free(w->a.span.v), free(w->b.buf.v), free(w->b.span.v);
  free(w->sym), free(w->prev), free(w->next);
  free(w->heap_rank), free(w->heap_pos), free(w->heap_id);
  free(w->bytes);
}

static int add_piece(pieces *p, const uint32_t *s, size_t n) {
  if (!n)
    return 1;
  if (!u32_reserve(&p->buf, n) || !u32_reserve(&p->span, 2))
    return 0;
  p->span.v[p->span.n++] = (uint32_t)p->buf.n;
  p->span.v[p->span.n++] = (uint32_t)n;
  memcpy(p->buf.v + p->buf.n, s, n * sizeof *s);
  p->buf.n += n;
  return 1;
}

/* The UTF-8 of s[0 .. n) into w->bytes (NUL-terminated); its length. */
static size_t to_bytes(work *w, const uint32_t *s, size_t n) {
  if (4 * n + 1 > w->bytes_cap) {
    char *b = realloc(w->bytes, 4 * n + 1);
    if (!b) {
      w->oom = 1;
      return 0;
    }
    w->bytes = b, w->bytes_cap = 4 * n + 1;
  }
  size_t len = 0;
  for (size_t i = 0; i < n; ++i)
    len += (size_t)archrt_utf8_put(s[i], w->bytes + len);
  w->bytes[len] = 0;
  return len;
}

/* A regex that ran out of memory or of its step budget. */
static void regex_failed(work *w, long code) {
  w->oom = 1;
  if (code == ARCHRT_REGEX_OVER_BUDGET)
    w->why = "a regular expression of the tokenizer takes too many steps "
             "or backtracking frames on this text (a pattern that "
             "backtracks exponentially?)";
}

/* Whether s[i .. i + m) equals lit. */
static int starts_with(const uint32_t *s, size_t n, size_t i,
                       const uint32_t *lit, size_t m) {
  return m && i + m <= n && !memcmp(s + i, lit, m * sizeof *s);
}

static void normalize(work *w, const uint32_t *s, size_t n) {
  const hf_tokenizer *t = w->t;
  w->norm.n = 0;
  if (!u32_reserve(&w->norm, n)) {
    w->oom = 1;
    return;
  }
  memcpy(w->norm.v, s, n * sizeof *s);
  w->norm.n = n;
  for (int k = 0; k < t->n_nsteps && !w->oom; ++k) {
    const nstep *st = &t->nsteps[k];
    u32vec *in = &w->norm, *out = &w->tmp;
    out->n = 0;
    switch (st->kind) {
    case N_NFC:
      if (!u32_reserve(out, archrt_uc_nfc_room(in->n))) {
        w->oom = 1;
        break;
      }
      out->n = archrt_uc_nfc(in->v, in->n, out->v);
      if (out->n == (size_t)-1) {
        out->n = 0;
        w->oom = 1;
      }
      break;
    case N_PREPEND:
      if (!in->n)
        continue; /* only before something */
      if (!u32_reserve(out, in->n + st->na)) {
        w->oom = 1;
        break;
      }
      memcpy(out->v, st->a, st->na * sizeof *st->a);
      memcpy(out->v + st->na, in->v, in->n * sizeof *in->v);
      out->n = in->n + st->na;
      break;
    case N_REPLACE:
      for (size_t i = 0; i < in->n;) {
        size_t end = 0;
        if (st->re) {
          long m = archrt_regex_match(st->re, in->v, in->n, i, &w->rx);
          if (m < -1) {
            regex_failed(w, m);
            return;
          }
          end = m > (long)i ? (size_t)m : 0;
        } else if (starts_with(in->v, in->n, i, st->a, st->na)) {
          end = i + st->na;
        }
        /* Replacements may lengthen the text; a chain of them must not
         * grow it without bound. */
        if (out->n + (end ? st->nb : 1) > w->max_norm) {
          w->oom = 1;
          w->why = "the normalizers make the text more than 16 times longer";
          break;
        }
        if (end) {
          if (!u32_reserve(out, st->nb)) {
            w->oom = 1;
            break;
          }
          memcpy(out->v + out->n, st->b, st->nb * sizeof *st->b);
          out->n += st->nb;
          i = end;
        } else {
          if (!u32_push(out, in->v[i])) {
            w->oom = 1;
            break;
          }
          i++;
        }
      }
      break;
    case N_STRIP: {
      size_t a = 0, b = in->n;
      while (st->left && a < b && archrt_uc_is_space(in->v[a]))
        a++;
      while (st->right && b > a && archrt_uc_is_space(in->v[b - 1]))
        b--;
      if (!u32_reserve(out, b - a)) {
        w->oom = 1;
        break;
      }
      if (b > a) /* (an empty text's vector may be NULL: no memcpy) */
        memcpy(out->v, in->v + a, (b - a) * sizeof *in->v);
      out->n = b - a;
      break;
    }
    }
    if (w->oom)
      return;
    /* Swap: the step's output is the text now. */
    u32vec x = w->norm;
    w->norm = w->tmp;
    w->tmp = x;
  }
}

enum { MAX_ADDED = 512 }; /* characters of an added token */

/* The trie of the added tokens whose `normalized` is `normalized`; those
 * are matched in normalized text, so their content is normalized too (as
 * the Rust library's refresh_added_tokens does). */
static int trie_build(loader *ld, work *w, trie *tr, int normalized) {
  hf_tokenizer *t = ld->t;
  uint32_t cps[4 * MAX_ADDED + 1]; /* the content's code points */
  size_t total = 1;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      tr->seed = t->seed;
      tr->token = malloc(total * sizeof *tr->token);
      tr->mask = table_size(total) - 1;
      tr->keys = calloc((size_t)tr->mask + 1, sizeof *tr->keys);
      tr->child = malloc(((size_t)tr->mask + 1) * sizeof *tr->child);
      if (!tr->token || !tr->keys || !tr->child)
        return oom(ld);
      tr->token[0] = -1;
      tr->n_nodes = 1;
    }
    for (int32_t k = 0; k < t->n_added; ++k) {
      const added_token *a = &t->added[k];
      if (a->normalized != normalized || a->len == 0)
        continue;
      if (a->len > 4 * MAX_ADDED) {
        char msg[96];
        snprintf(msg, sizeof msg,
                 "added token %d is longer than %d characters", k, MAX_ADDED);
        return bad(ld, msg);
      }
      const uint32_t *c = cps;
      size_t m = archrt_utf8_decode(a->content, a->len, cps, NULL);
      if (normalized) {
        normalize(w, cps, m);
        if (w->oom) {
          if (!w->why)
            return oom(ld);
          char msg[192];
          snprintf(msg, sizeof msg, "added token %d: %s", k, w->why);
          return bad(ld, msg);
        }
        c = w->norm.v, m = w->norm.n;
      }
      if (m > MAX_ADDED) {
        char msg[96];
        snprintf(msg, sizeof msg,
                 "added token %d is longer than %d characters", k, MAX_ADDED);
        return bad(ld, msg);
      }
      if (pass == 0) {
        total += m;
        continue;
      }
      int32_t node = 0;
      for (size_t j = 0; j < m; ++j) {
        int32_t next = trie_child(tr, node, c[j]);
        if (next < 0) {
          next = (int32_t)tr->n_nodes++;
          tr->token[next] = -1;
          uint64_t key = ((uint64_t)node << 21 | c[j]) + 1;
          uint32_t i = (uint32_t)hash_u64(tr->seed, key) & tr->mask;
          while (tr->keys[i])
            i = (i + 1) & tr->mask;
          tr->keys[i] = key;
          tr->child[i] = next;
        }
        node = next;
      }
      if (node > 0 && tr->token[node] < 0) /* the first of equal ones */
        tr->token[node] = k;
    }
  }
  return 1;
}

static int build_tries(loader *ld) {
  work w = {0};
  w.t = ld->t;
  w.max_norm = 64 * MAX_ADDED;
  /* The normalizers' regex steps over every normalized added token, in
   * both of trie_build's passes, bounded as an encoded text's are: by
   * their bytes (the file's size bounds them), not a fixed count. */
  long bytes = 0;
  for (int32_t k = 0; k < ld->t->n_added; ++k)
    if (ld->t->added[k].normalized)
      bytes += (long)ld->t->added[k].len;
  w.rx.budget = 2 * (4096 * bytes + (1L << 20));
  int ok = trie_build(ld, &w, &ld->t->raw, 0) &&
           trie_build(ld, &w, &ld->t->norm, 1);
  work_free(&w);
  return ok;
}

/* The pieces of one split: the list of (start, end, is_match) in order,
 * combined per the behavior. */
typedef struct part {
  size_t a, b;
  int match;
} part;

static int emit_parts(pieces *out, const uint32_t *s, const part *parts,
                      size_t n, int behavior) {
  size_t i = 0;
  while (i < n) {
    size_t a = parts[i].a, b = parts[i].b;
    int is_match = parts[i].match;
    size_t j = i + 1;
    switch (behavior) {
    case B_REMOVED:
      if (is_match) {
        i = j;
        continue;
      }
      break;
    case B_PREVIOUS: /* a gap takes the match right after it */
      if (!is_match && j < n && parts[j].match)
        b = parts[j++].b;
      break;
    case B_NEXT: /* a match takes the gap right after it */
      if (is_match && j < n && !parts[j].match)
        b = parts[j++].b;
      break;
    case B_CONTIGUOUS:
      while (j < n && parts[j].match == is_match)
        b = parts[j++].b;
      break;
    }
    if (!add_piece(out, s + a, b - a))
      return 0;
    i = j;
  }
  return 1;
}

/* Splits s[0 .. n) at the matches of a regex or a literal. */
static int split_piece(work *w, pieces *out, const uint32_t *s, size_t n,
                       const archrt_regex *re, const uint32_t *lit, size_t nlit,
                       int behavior) {
  part stack_parts[64], *parts = stack_parts;
  size_t n_parts = 0, cap = 64, prev = 0;
  int ok = 1;
  for (size_t i = 0; i < n && ok;) {
    size_t end = 0;
    if (re) {
      long m = archrt_regex_match(re, s, n, i, &w->rx);
      if (m < -1) {
        regex_failed(w, m);
        ok = 0;
        break;
      }
      end = m > (long)i ? (size_t)m : 0;
    } else if (starts_with(s, n, i, lit, nlit)) {
      end = i + nlit;
    }
    if (!end) {
      i++;
      continue;
    }
    if (n_parts + 2 > cap) {
      cap *= 2;
      part *p = parts == stack_parts ? malloc(cap * sizeof *p)
                                     : realloc(parts, cap * sizeof *p);
      if (!p) {
        ok = 0;
        break;
      }
      if (parts == stack_parts)
        memcpy(p, stack_parts, n_parts * sizeof *p);
      parts = p;
    }
    if (prev < i)
      parts[n_parts++] = (part){prev, i, 0};
    parts[n_parts++] = (part){i, end, 1};
    prev = i = end;
  }
  if (ok && prev < n) {
    if (n_parts + 1 > cap) {
      cap *= 2;
      part *p = parts == stack_parts ? malloc(cap * sizeof *p)
                                     : realloc(parts, cap * sizeof *p);
      if (!p)
        ok = 0;
      else {
        if (parts == stack_parts)
          memcpy(p, stack_parts, n_parts * sizeof *p);
        parts = p;
      }
    }
    if (ok)
      parts[n_parts++] = (part){prev, n, 0};
  }
  if (ok)
    ok = emit_parts(out, s, parts, n_parts, behavior);
  if (parts != stack_parts)
    free(parts);
  if (!ok)
    w->oom = 1;
  return ok;
}

/* One pre-tokenizer over every piece of `in` into `out`. `first`: the
 * segment starts the text (Metaspace's "first" scheme). */
static void pretokenize_step(work *w, const pstep *st, pieces *in,
                             pieces *out, int first) {
  const hf_tokenizer *t = w->t;
  out->buf.n = out->span.n = 0;
  u32vec *tmp = &w->tmp;
  for (size_t k = 0; k < in->span.n && !w->oom; k += 2) {
    const uint32_t *s = in->buf.v + in->span.v[k];
    size_t n = in->span.v[k + 1];
    switch (st->kind) {
    case P_SPLIT:
      split_piece(w, out, s, n, st->re, st->lit, st->nlit, st->behavior);
      break;
    case P_BYTELEVEL: {
      /* Prefix space, GPT-2's split, then each byte's code point. */
      tmp->n = 0;
      if (!u32_reserve(tmp, n + 1)) {
        w->oom = 1;
        break;
      }
      if (st->prefix_space && (n == 0 || s[0] != ' '))
        tmp->v[tmp->n++] = ' ';
      memcpy(tmp->v + tmp->n, s, n * sizeof *s);
      tmp->n += n;
      pieces split = {{0}, {0}};
      pieces *src = &split;
      if (st->use_regex)
        split_piece(w, &split, tmp->v, tmp->n, st->re, NULL, 0, B_ISOLATED);
      else if (!add_piece(&split, tmp->v, tmp->n))
        w->oom = 1;
      for (size_t j = 0; j < src->span.n && !w->oom; j += 2) {
        size_t len = to_bytes(w, src->buf.v + src->span.v[j],
                              src->span.v[j + 1]);
        if (w->oom || !u32_reserve(&out->buf, len) ||
            !u32_reserve(&out->span, 2)) {
          w->oom = 1;
          break;
        }
        out->span.v[out->span.n++] = (uint32_t)out->buf.n;
        out->span.v[out->span.n++] = (uint32_t)len;
        for (size_t b = 0; b < len; ++b)
          out->buf.v[out->buf.n++] = t->byte_cp[(unsigned char)w->bytes[b]];
      }
      free(split.buf.v);
      free(split.span.v);
      break;
    }
    case P_METASPACE: {
      tmp->n = 0;
      if (!u32_reserve(tmp, n + 1)) {
        w->oom = 1;
        break;
      }
      int prepend = st->prepend == PREPEND_ALWAYS ||
                    (st->prepend == PREPEND_FIRST && first && k == 0);
      /* (Spaces become the replacement first: a leading one is it.) */
      if (prepend && !(n && (s[0] == st->replacement || s[0] == ' ')))
        tmp->v[tmp->n++] = st->replacement;
      for (size_t i = 0; i < n; ++i)
        tmp->v[tmp->n++] = s[i] == ' ' ? st->replacement : s[i];
      if (st->split)
        split_piece(w, out, tmp->v, tmp->n, NULL, &st->replacement, 1,
                    B_NEXT);
      else if (!add_piece(out, tmp->v, tmp->n))
        w->oom = 1;
      break;
    }
    case P_DIGITS:
    case P_WSPLIT: {
      /* Runs of digits (or each digit) isolated; or whitespace removed. */
      size_t i = 0;
      while (i < n && !w->oom) {
        size_t j = i + 1;
        if (st->kind == P_DIGITS) {
          int digit = s[i] >= '0' && s[i] <= '9';
          while (j < n && !(digit && st->individual) &&
                 (s[j] >= '0' && s[j] <= '9') == digit)
            j++;
          if (!add_piece(out, s + i, j - i))
            w->oom = 1;
        } else {
          int space = archrt_uc_is_space(s[i]);
          while (j < n && archrt_uc_is_space(s[j]) == space)
            j++;
          if (!space && !add_piece(out, s + i, j - i))
            w->oom = 1;
        }
        i = j;
      }
      break;
    }
    }
  }
}

static int grow_symbols(work *w, size_t n) {
  if (n <= w->sym_cap)
    return 1;
  size_t cap = w->sym_cap ? w->sym_cap : 256;
  while (cap < n)
    cap *= 2;
  int32_t *a = realloc(w->sym, cap * sizeof *a);
  if (a)
    w->sym = a;
  int32_t *b = realloc(w->prev, cap * sizeof *b);
  if (b)
    w->prev = b;
  int32_t *c = realloc(w->next, cap * sizeof *c);
  if (c)
    w->next = c;
  /* Each merge pushes at most two pairs: 3n entries bound the heap. */
  uint32_t *d = realloc(w->heap_rank, 3 * cap * sizeof *d);
  if (d)
    w->heap_rank = d;
  uint32_t *e = realloc(w->heap_pos, 3 * cap * sizeof *e);
  if (e)
    w->heap_pos = e;
  int32_t *f = realloc(w->heap_id, 3 * cap * sizeof *f);
  if (f)
    w->heap_id = f;
  if (!a || !b || !c || !d || !e || !f)
    return 0;
  w->sym_cap = cap;
  return 1;
}

/* Min-heap of candidate merges by (rank, position), as Hugging Face's. */
static int heap_less(const work *w, size_t i, size_t j) {
  return w->heap_rank[i] < w->heap_rank[j] ||
         (w->heap_rank[i] == w->heap_rank[j] &&
          w->heap_pos[i] < w->heap_pos[j]);
}

static void heap_swap(work *w, size_t i, size_t j) {
  uint32_t r = w->heap_rank[i], p = w->heap_pos[i];
  int32_t d = w->heap_id[i];
  w->heap_rank[i] = w->heap_rank[j], w->heap_pos[i] = w->heap_pos[j],
  w->heap_id[i] = w->heap_id[j];
  w->heap_rank[j] = r, w->heap_pos[j] = p, w->heap_id[j] = d;
}

static void heap_push(work *w, size_t *n, uint32_t rank, uint32_t pos,
                      int32_t id) {
  size_t i = (*n)++;
  w->heap_rank[i] = rank, w->heap_pos[i] = pos, w->heap_id[i] = id;
  while (i > 0 && heap_less(w, i, (i - 1) / 2)) {
    heap_swap(w, i, (i - 1) / 2);
    i = (i - 1) / 2;
  }
}

static void heap_pop(work *w, size_t *n) {
  heap_swap(w, 0, --*n);
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n)
      break;
    if (c + 1 < *n && heap_less(w, c + 1, c))
      c++;
    if (!heap_less(w, c, i))
      break;
    heap_swap(w, i, c);
    i = c;
  }
}

static void push_pair(work *w, size_t *n_heap, int32_t i) {
  int32_t j = w->next[i];
  uint32_t rank;
  int32_t id;
  if (j >= 0 && merge_cached(w, w->sym[i], w->sym[j], &rank, &id))
    heap_push(w, n_heap, rank, (uint32_t)i, id);
}

/* BPE over one piece's code points; appends its ids. */
static void bpe(work *w, const uint32_t *s, size_t n) {
  const hf_tokenizer *t = w->t;
  if (t->ignore_merges) {
    size_t len = to_bytes(w, s, n);
    int32_t id = w->oom ? -1 : vocab_find(t, w->bytes, len);
    if (id >= 0) {
      if (!u32_push(&w->ids, (uint32_t)id))
        w->oom = 1;
      return;
    }
  }
  if (!grow_symbols(w, 4 * n + 1)) {
    w->oom = 1;
    return;
  }
  /* Symbols: each character's token, its bytes' tokens (byte fallback) or
   * the unknown token (runs of unknowns fused where fuse_unk). */
  int32_t m = 0;
  int last_unk = 0;
  for (size_t i = 0; i < n; ++i) {
    char c[4];
    int len = archrt_utf8_put(s[i], c);
    int32_t id = char_find(t, s[i], c, len);
    if (id >= 0) {
      w->sym[m++] = id;
      last_unk = 0;
      continue;
    }
    if (t->byte_fallback) {
      int all = 1;
      for (int b = 0; b < len; ++b)
        all &= t->byte_id[(unsigned char)c[b]] >= 0;
      if (all) {
        for (int b = 0; b < len; ++b)
          w->sym[m++] = t->byte_id[(unsigned char)c[b]];
        last_unk = 0;
        continue;
      }
    }
    if (t->unk < 0)
      continue; /* no unknown token: the character is dropped */
    if (!(t->fuse_unk && last_unk))
      w->sym[m++] = t->unk;
    last_unk = 1;
  }
  for (int32_t i = 0; i < m; ++i) {
    w->prev[i] = i - 1;
    w->next[i] = i + 1 < m ? i + 1 : -1;
  }
  size_t n_heap = 0;
  for (int32_t i = 0; i + 1 < m; ++i)
    push_pair(w, &n_heap, i);
  while (n_heap > 0) {
    uint32_t pos = w->heap_pos[0];
    int32_t id = w->heap_id[0];
    heap_pop(w, &n_heap);
    int32_t i = (int32_t)pos, j = w->next[i];
    /* Stale when the symbol left, lost its neighbour, or the pair now
     * merges into something else. */
    uint32_t rank;
    int32_t now;
    if (w->sym[i] < 0 || j < 0 ||
        !merge_cached(w, w->sym[i], w->sym[j], &rank, &now) || now != id)
      continue;
    w->sym[i] = id;
    w->sym[j] = -1;
    w->next[i] = w->next[j];
    if (w->next[j] >= 0)
      w->prev[w->next[j]] = i;
    if (w->prev[i] >= 0)
      push_pair(w, &n_heap, w->prev[i]);
    push_pair(w, &n_heap, i);
  }
  if (!u32_reserve(&w->ids, (size_t)m)) {
    w->oom = 1;
    return;
  }
  for (int32_t i = m ? 0 : -1; i >= 0; i = w->next[i])
    w->ids.v[w->ids.n++] = (uint32_t)w->sym[i];
}

/* Pre-tokenizes and encodes a segment without added tokens. */
static void encode_plain(work *w, const uint32_t *s, size_t n, int first) {
  const hf_tokenizer *t = w->t;
  pieces *in = &w->a, *out = &w->b;
  in->buf.n = in->span.n = 0;
  if (!add_piece(in, s, n)) {
    w->oom = 1;
    return;
  }
  for (int k = 0; k < t->n_psteps && !w->oom; ++k) {
    pretokenize_step(w, &t->psteps[k], in, out, first);
    pieces *x = in;
    in = out;
    out = x;
  }
  for (size_t k = 0; k < in->span.n && !w->oom; k += 2)
    bpe(w, in->buf.v + in->span.v[k], in->span.v[k + 1]);
}

static int word_char(uint32_t c) {
  return c == '_' || (archrt_uc_category(c) & (ARCHRT_UC_L | ARCHRT_UC_N));
}

/* Calls `plain` on the text between the added tokens of `tr` in
 * s[0 .. n) and appends the added tokens' ids. Leftmost match first, the
 * longest at a position; lstrip/rstrip take the whitespace beside a token,
 * single_word tokens only match between non-word characters. */
static void split_added(work *w, const trie *tr, const uint32_t *s, size_t n,
                        int first,
                        void (*plain)(work *, const uint32_t *, size_t, int)) {
  const hf_tokenizer *t = w->t;
  size_t start = 0;
  for (size_t i = 0; i < n && !w->oom;) {
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t j = i; j < n; ++j) {
      node = trie_child(tr, node, s[j]);
      if (node < 0)
        break;
      int32_t k = tr->token[node];
      if (k >= 0) {
        const added_token *a = &t->added[k];
        if (a->single_word &&
            ((i > 0 && word_char(s[i - 1])) || (j + 1 < n && word_char(s[j + 1]))))
          continue;
        best = k, best_end = j + 1;
      }
    }
    if (best < 0) {
      i++;
      continue;
    }
    const added_token *a = &t->added[best];
    size_t a0 = i, a1 = best_end;
    if (a->lstrip)
      while (a0 > start && archrt_uc_is_space(s[a0 - 1]))
        a0--;
    if (a->rstrip)
      while (a1 < n && archrt_uc_is_space(s[a1]))
        a1++;
    if (a0 > start)
      plain(w, s + start, a0 - start, first && start == 0);
    if (!u32_push(&w->ids, (uint32_t)a->id))
      w->oom = 1;
    start = i = a1;
  }
  if (start < n && !w->oom)
    plain(w, s + start, n - start, first && start == 0);
}

/* A segment between raw added tokens: normalized, then cut at the
 * normalized added tokens. */
static void encode_segment(work *w, const uint32_t *s, size_t n, int first) {
  normalize(w, s, n);
  if (!w->oom) /* (pre-tokenizing and BPE leave w->norm alone) */
    split_added(w, &w->t->norm, w->norm.v, w->norm.n, first, encode_plain);
}

archrt_status hf_tokenizer_encode(const hf_tokenizer *t, const char *text,
                                  size_t len, int special, int32_t *tokens,
                                  int32_t max_tokens, int32_t *n_tokens) {
  /* Symbols, pieces and counts are 32-bit: a text of up to 256 MB. */
  if (len > (size_t)1 << 28)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_tokenizer_encode: text of %zu bytes is too "
                       "long (at most 256 MiB at once)",
                       len);
  work w = {0};
  w.t = t;
  /* Work bounds: regex steps (generous for the real tokenizers' patterns,
   * a few dozen a character) and normalizer growth. */
  w.rx.budget = 4096 * (long)len + (1L << 20);
  w.max_norm = 16 * len + 1024;
  uint32_t *cps = malloc((len + 1) * sizeof *cps);
  archrt_status st = ARCHRT_OK;
  if (!cps) {
    st = archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                     "archrt_tokenizer_encode: out of memory");
    goto done;
  }
  size_t n = archrt_utf8_decode(text, len, cps, NULL);
  if (special)
    for (int k = 0; k < t->n_before && !w.oom; ++k)
      w.oom = !u32_push(&w.ids, (uint32_t)t->before[k]);
  split_added(&w, &t->raw, cps, n, 1, encode_segment);
  if (special)
    for (int k = 0; k < t->n_after && !w.oom; ++k)
      w.oom = !u32_push(&w.ids, (uint32_t)t->after[k]);
  if (w.oom) {
    st = w.why ? archrt_fail(ARCHRT_ERR_FORMAT, "archrt_tokenizer_encode: %s",
                             w.why)
               : archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY,
                             "archrt_tokenizer_encode: out of memory");
    goto done;
  }
  if (w.ids.n > (size_t)max_tokens) {
    /* The count needed, for a caller to retry with room for it. */
    *n_tokens = w.ids.n > INT32_MAX ? INT32_MAX : (int32_t)w.ids.n;
    st = archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                     "archrt_tokenizer_encode: text needs %zu tokens, room "
                     "for %d",
                     w.ids.n, max_tokens);
    goto done;
  }
  for (size_t k = 0; k < w.ids.n; ++k)
    tokens[k] = (int32_t)w.ids.v[k];
  *n_tokens = (int32_t)w.ids.n;
done:
  free(cps);
  work_free(&w);
  return st;
}

/* ---- Decoding ----------------------------------------------------------*/

int hf_tokenizer_is_special(const hf_tokenizer *t, int32_t token) {
  return t && token >= 0 && token < t->n_ids && t->added_of[token] >= 0 &&
         t->added[t->added_of[token]].special;
}

enum { MAX_PIECE = 1 << 20 }; /* the most bytes one token decodes to */

/* Room for n bytes in both halves of the decode buffer (the steps ping-pong
 * between them); the halves are t->dec and t->dec + t->dec_cap / 2. */
static int dec_reserve(hf_tokenizer *t, size_t n) {
  if (2 * (n + 1) <= t->dec_cap)
    return 1;
  size_t cap = 2 * (n + 1);
  char *d = malloc(cap);
  if (!d)
    return 0;
  free(t->dec);
  t->dec = d, t->dec_cap = cap;
  return 1;
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* The decoders in turn over one token's text: each step reads cur[0 .. n)
 * and writes the other half of the buffer (or leaves the text as it is). */
const char *hf_tokenizer_decode(hf_tokenizer *t, int32_t prev, int32_t token) {
  if (!t || token < 0 || token >= t->n_ids)
    return "";
  int32_t k = t->added_of[token];
  const char *s = k >= 0 ? t->added[k].content : t->str[token];
  size_t n = k >= 0 ? t->added[k].len : t->len[token];
  if (!s || n > MAX_PIECE)
    return "";
  /* A text starts at the first token, or after the post-processor's
   * leading tokens (BOS): what Hugging Face's decode does with
   * skip_special_tokens (a BOS typed inside the text is the same id, and
   * takes the following space too). */
  int first = prev < 0 || prev >= t->n_ids;
  for (int b = 0; b < t->n_before && !first; ++b)
    first = prev == t->before[b];
  if (!dec_reserve(t, n))
    return "";
  char *cur = t->dec;
  memcpy(cur, s, n);
  for (int d = 0; d < t->n_dsteps; ++d) {
    const dstep *st = &t->dsteps[d];
    size_t m = 0;
    /* Replace may lengthen the text: count its matches for the exact size
     * (bounded by MAX_PIECE: a chain of Replace steps could grow a token
     * without end). */
    if (st->kind == D_REPLACE || st->kind == D_METASPACE) {
      const char *a = st->kind == D_REPLACE ? st->a : st->rep;
      size_t na = st->kind == D_REPLACE ? st->na : (size_t)st->nrep;
      size_t nb = st->kind == D_REPLACE ? st->nb : 1, hits = 0;
      for (size_t i = 0; i + na <= n;)
        if (!memcmp(cur + i, a, na))
          hits++, i += na;
        else
          i++;
      size_t need = n - hits * na + hits * nb;
      if (need > MAX_PIECE)
        return "";
      size_t half = t->dec_cap / 2;
      if (need + 1 > half) { /* grow, keeping the current text */
        char *keep = malloc(n ? n : 1);
        if (!keep)
          return "";
        memcpy(keep, cur, n);
        int ok = dec_reserve(t, need);
        if (ok)
          memcpy(t->dec, keep, n);
        free(keep);
        if (!ok)
          return "";
        cur = t->dec;
      }
    }
    size_t half = t->dec_cap / 2;
    char *other = cur == t->dec ? t->dec + half : t->dec;
    switch (st->kind) {
    case D_BYTELEVEL: {
      /* Every character back to its byte; text that is not byte-level
       * (an added token) stays as it is. */
      size_t i = 0, c = 0;
      int all = 1;
      while (i < n && all) {
        /* (Invalid bytes decode to one U+FFFD each: up to `len` of them.) */
        uint32_t cp[4];
        unsigned char lead = (unsigned char)cur[i];
        size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        if (i + len > n || archrt_utf8_decode(cur + i, len, cp, NULL) != 1 ||
            cp[0] >= 324 || t->cp_byte[cp[0]] < 0)
          all = 0;
        else
          other[c++] = (char)t->cp_byte[cp[0]];
        i += len;
      }
      if (!all)
        continue;
      m = c;
      break;
    }
    case D_REPLACE:
    case D_METASPACE: {
      const char *a = st->kind == D_REPLACE ? st->a : st->rep;
      size_t na = st->kind == D_REPLACE ? st->na : (size_t)st->nrep;
      const char *b = st->kind == D_REPLACE ? st->b : " ";
      size_t nb = st->kind == D_REPLACE ? st->nb : 1;
      for (size_t i = 0; i < n;) {
        if (i + na <= n && !memcmp(cur + i, a, na)) {
          memcpy(other + m, b, nb);
          m += nb, i += na;
        } else {
          other[m++] = cur[i++];
        }
      }
      if (st->kind == D_METASPACE && st->prepend != PREPEND_NEVER && first &&
          m && other[0] == ' ') {
        memmove(other, other + 1, m - 1);
        m--;
      }
      break;
    }
    case D_BYTEFALLBACK: {
      int hi = n == 6 ? hex_digit(cur[3]) : -1,
          lo = n == 6 ? hex_digit(cur[4]) : -1;
      if (n == 6 && cur[0] == '<' && cur[1] == '0' && cur[2] == 'x' &&
          cur[5] == '>' && hi >= 0 && lo >= 0) {
        other[0] = (char)(hi * 16 + lo);
        m = 1;
        break;
      }
      continue;
    }
    case D_FUSE:
      continue;
    case D_STRIP: {
      char c[4];
      int cl = archrt_utf8_put(st->content, c);
      size_t a = 0, b = n;
      if (!st->whole || first)
        for (int r = 0; r < st->start && a + (size_t)cl <= b &&
                        !memcmp(cur + a, c, (size_t)cl); ++r)
          a += (size_t)cl;
      if (!st->whole)
        for (int r = 0; r < st->stop && b >= a + (size_t)cl &&
                        !memcmp(cur + b - cl, c, (size_t)cl); ++r)
          b -= (size_t)cl;
      m = b - a;
      memmove(other, cur + a, m);
      break;
    }
    }
    cur = other;
    n = m;
  }
  /* The result to the buffer's start, terminated. */
  memmove(t->dec, cur, n);
  t->dec[n] = 0;
  return t->dec;
}
