/*===- gguf_tokenizer.c - The tokenizer a GGUF file carries --------------===*/
#include "gguf_read.h"
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- The tokenizer a GGUF file carries -----------------------------------
 * llama.cpp's converter keeps the tokenizer in the metadata:
 * tokenizer.ggml.model "gpt2" (byte-level BPE: tokens, merges, token_type,
 * and `pre` naming the split regex) or "llama" (SentencePiece: tokens with
 * U+2581 for the space, their scores). A "gpt2" one becomes the
 * tokenizer.json Hugging Face's would be (so it tokenizes with the same
 * code); a "llama" one becomes llama2.c's tokenizer (scores, highest-score
 * merges: llama.cpp's own SentencePiece encoder). */

typedef struct text_buf {
  char *p;
  size_t n, cap;
  int oom;
} text_buf;

static void put(text_buf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p, b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void put_s(text_buf *b, const char *s) { put(b, s, strlen(s)); }

/* s[0 .. n) as a JSON string. */
static void put_json(text_buf *b, const uint8_t *s, uint64_t n) {
  put_s(b, "\"");
  for (uint64_t i = 0; i < n; ++i) {
    char esc[8];
    if (s[i] == '"' || s[i] == '\\') {
      esc[0] = '\\', esc[1] = (char)s[i];
      put(b, esc, 2);
    } else if (s[i] < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", s[i]);
      put(b, esc, 6);
    } else {
      put(b, (const char *)s + i, 1);
    }
  }
  put_s(b, "\"");
}

/* The split regexes of llama.cpp's `pre` names (those archc knows). */
static const struct {
  const char *pre;
  const char *split; /* a JSON array of Split pre-tokenizers */
} gguf_pre[] = {
    {"default",
     "[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"'s|'t|'re|'ve|'m|'ll|'d| "
     "?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|"
     "\\\\s+\"},\"behavior\":\"Isolated\"}]"},
    {"gpt-2",
     "[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"'s|'t|'re|'ve|'m|'ll|'d| "
     "?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|\\\\s+(?!\\\\S)|"
     "\\\\s+\"},\"behavior\":\"Isolated\"}]"},
    {"llama-bpe",
     "[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|"
     "'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s"
     "\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|"
     "\\\\s+\"},\"behavior\":\"Isolated\"}]"},
    {"qwen2",
     "[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|"
     "'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}"
     "\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
     "\"behavior\":\"Isolated\"}]"},
};

/* A metadata array's element type and count, its elements following. */
static int array_head(cursor *c, uint32_t type, uint32_t want, uint64_t *n) {
  uint32_t et;
  if (type != GV_ARRAY || !u32(c, &et) || !u64(c, n) || et != want) {
    c->err = c->err ? c->err : "not an array of the expected type";
    return 0;
  }
  return 1;
}

archrt_status archrt_gguf_tokenizer(const char *path, int32_t vocab_size,
                                    archrt_tokenizer **out) {
  archrt_mapping f;
  archrt_status st = archrt_map_file(path, &f);
  if (st)
    return st;
  cursor c = {f.data, (const uint8_t *)f.data + f.size, NULL};
  uint32_t magic = 0, version = 0;
  uint64_t n_tensors, n_kv;
  char why[200] = "";
  /* Where each value of interest starts (its type after the key). */
  enum { K_MODEL, K_PRE, K_TOKENS, K_SCORES, K_TYPES, K_MERGES, K_BOS,
         K_ADD_BOS, K_EOS, K_SPACE, K_EOT, K_EOM, K_NAME, K_COUNT };
  static const char *const keys[K_COUNT] = {
      "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
      "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
      "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id",
      "tokenizer.ggml.add_bos_token", "tokenizer.ggml.eos_token_id",
      "tokenizer.ggml.add_space_prefix", "tokenizer.ggml.eot_token_id",
      "tokenizer.ggml.eom_token_id", "general.name"};
  const uint8_t *at[K_COUNT] = {0};
  uint32_t types[K_COUNT] = {0};
  text_buf b = {0};
  char **pieces = NULL;
  float *scores = NULL;
  uint64_t n_tokens = 0;
  if (!u32(&c, &magic) || memcmp(&magic, "GGUF", 4) || !u32(&c, &version) ||
      version != 3 || !u64(&c, &n_tensors) || !u64(&c, &n_kv) ||
      n_kv > GGUF_MAX_KV) {
    snprintf(why, sizeof why, "not a GGUF file of version 3");
    goto fail;
  }
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint8_t *key;
    uint64_t klen;
    uint32_t type;
    if (!str(&c, &key, &klen) || !u32(&c, &type))
      break;
    for (int k = 0; k < K_COUNT; ++k)
      if (klen == strlen(keys[k]) && !memcmp(key, keys[k], klen))
        at[k] = c.p, types[k] = type;
    if (!skip_value(&c, type, 0))
      break;
  }
  if (c.err) {
    snprintf(why, sizeof why, "metadata: %s", c.err);
    goto fail;
  }
  if (!at[K_MODEL] || types[K_MODEL] != GV_STRING || !at[K_TOKENS]) {
    snprintf(why, sizeof why, "no tokenizer in the metadata "
                              "(tokenizer.ggml.model and .tokens)");
    goto fail;
  }
  const uint8_t *model = NULL, *pre = (const uint8_t *)"default";
  uint64_t model_n = 0, pre_n = 7;
  c.p = at[K_MODEL];
  str(&c, &model, &model_n);
  if (at[K_PRE] && types[K_PRE] == GV_STRING) {
    c.p = at[K_PRE];
    str(&c, &pre, &pre_n);
  }
  c.p = at[K_TOKENS];
  if (!array_head(&c, types[K_TOKENS], GV_STRING, &n_tokens) ||
      n_tokens == 0 || n_tokens > (uint64_t)vocab_size) {
    snprintf(why, sizeof why, "tokenizer.ggml.tokens: %s",
             c.err ? c.err : "empty, or more tokens than the model's "
                             "vocabulary");
    goto fail;
  }
  if (model_n == 5 && !memcmp(model, "llama", 5)) {
    /* SentencePiece: pieces with U+2581 as the space, and their scores. */
    if (!at[K_SCORES]) {
      snprintf(why, sizeof why, "a \"llama\" tokenizer without "
                                "tokenizer.ggml.scores");
      goto fail;
    }
    pieces = calloc(n_tokens, sizeof *pieces);
    scores = malloc(n_tokens * sizeof *scores);
    if (!pieces || !scores) {
      st = ARCHRT_ERR_OUT_OF_MEMORY;
      snprintf(why, sizeof why, "out of memory");
      goto fail;
    }
    for (uint64_t i = 0; i < n_tokens; ++i) {
      const uint8_t *s;
      uint64_t n;
      if (!str(&c, &s, &n) || n > 4096)
        break;
      char *p = malloc(n + 1);
      if (!(pieces[i] = p))
        break;
      size_t w = 0;
      for (uint64_t k = 0; k < n; ++k) {
        if (k + 2 < n && s[k] == 0xE2 && s[k + 1] == 0x96 && s[k + 2] == 0x81)
          p[w++] = ' ', k += 2;
        else
          p[w++] = (char)s[k];
      }
      p[w] = 0;
    }
    uint64_t n_scores = 0;
    c.p = at[K_SCORES];
    if (c.err || !pieces[n_tokens - 1] ||
        !array_head(&c, types[K_SCORES], GV_F32, &n_scores) ||
        n_scores != n_tokens || !take(&c, scores, n_tokens * 4)) {
      snprintf(why, sizeof why, "tokenizer.ggml.tokens and .scores: %s",
               c.err ? c.err : "a token longer than 4096 bytes, or counts "
                               "that differ");
      goto fail;
    }
    /* The layout (llama.cpp's defaults where a key is missing: BOS 1, EOS
     * 2, no end-of-turn or end-of-message token, BOS added, a space before
     * the text) and the token types. */
    archrt_spm_layout layout = {n_tokens > 1 ? 1 : -1, n_tokens > 2 ? 2 : -1,
                                -1, -1, 1, 1, 0, NULL, NULL};
    const int id_keys[4] = {K_BOS, K_EOS, K_EOT, K_EOM};
    int32_t *ids[4] = {&layout.bos, &layout.eos, &layout.eot, &layout.eom};
    for (int k = 0; k < 4; ++k) {
      double id;
      if (!at[id_keys[k]])
        continue;
      c.p = at[id_keys[k]];
      if (!number(&c, types[id_keys[k]], &id) ||
          !(id >= 0 && id < (double)n_tokens) ||
          id != (double)(int32_t)id) {
        snprintf(why, sizeof why, "%s is not one of its %llu tokens",
                 keys[id_keys[k]], (unsigned long long)n_tokens);
        goto fail;
      }
      *ids[k] = (int32_t)id;
    }
    if (at[K_ADD_BOS] && types[K_ADD_BOS] == GV_BOOL)
      layout.add_bos = *at[K_ADD_BOS] != 0;
    if (at[K_SPACE] && types[K_SPACE] == GV_BOOL)
      layout.add_space = *at[K_SPACE] != 0;
    /* llama.cpp knows Phi-3 by its name alone: its special tokens (but
     * <unk>, <s> and <|endoftext|>) take the white space after them. */
    if (at[K_NAME] && types[K_NAME] == GV_STRING) {
      const uint8_t *name;
      uint64_t name_n;
      c.p = at[K_NAME];
      if (str(&c, &name, &name_n))
        for (uint64_t k = 0; k + 4 <= name_n && !layout.rstrip; ++k) {
          char w[5];
          for (int j = 0; j < 5; ++j)
            w[j] = k + j < name_n ? (char)tolower(name[k + j]) : 0;
          layout.rstrip = !memcmp(w, "phi3", 4) || !memcmp(w, "phi-3", 5);
        }
    }
    /* Unknown (2) and control (3) tokens are never made by merges; they
     * and user-defined ones (4) are matched in text first, as the file
     * spells them (U+2581 kept). */
    uint64_t n_types = 0;
    c.p = at[K_TYPES];
    c.err = NULL;
    if (at[K_TYPES] && (!array_head(&c, types[K_TYPES], GV_I32, &n_types) ||
                        n_types != n_tokens)) {
      snprintf(why, sizeof why, "tokenizer.ggml.token_type: %s",
               c.err ? c.err : "not one per token");
      goto fail;
    }
    if (at[K_TYPES]) {
      layout.types = malloc(n_tokens);
      layout.special_text = calloc(n_tokens, sizeof *layout.special_text);
      if (!layout.types || !layout.special_text) {
        free(layout.types), free(layout.special_text);
        st = ARCHRT_ERR_OUT_OF_MEMORY;
        snprintf(why, sizeof why, "out of memory");
        goto fail;
      }
      cursor tc = {at[K_TOKENS], c.end, NULL};
      uint64_t again;
      array_head(&tc, types[K_TOKENS], GV_STRING, &again);
      int oom = 0;
      for (uint64_t i = 0; i < n_tokens && !oom; ++i) {
        int32_t kind;
        const uint8_t *s;
        uint64_t n;
        if (!take(&c, &kind, 4) || !str(&tc, &s, &n))
          break;
        layout.types[i] = kind >= 1 && kind <= 6 ? (uint8_t)kind : 1;
        if (kind >= 2 && kind <= 4 && n) {
          char *text = malloc(n + 1);
          if (!(layout.special_text[i] = text)) {
            oom = 1;
            break;
          }
          memcpy(text, s, n);
          text[n] = 0;
        }
      }
      if (oom || c.err || tc.err) {
        for (uint64_t i = 0; i < n_tokens; ++i)
          free(layout.special_text[i]);
        free(layout.types), free(layout.special_text);
        st = oom ? ARCHRT_ERR_OUT_OF_MEMORY : ARCHRT_OK;
        snprintf(why, sizeof why, "tokenizer.ggml.token_type: %s",
                 oom ? "out of memory" : c.err ? c.err : tc.err);
        goto fail;
      }
    }
    munmap(f.data, f.size);
    /* (from_pieces takes the pieces, the scores and the layout's arrays,
     * on failure too) */
    return archrt_tokenizer_from_pieces(path, pieces, scores,
                                        (int32_t)n_tokens, &layout, out);
  }
  if (!(model_n == 4 && !memcmp(model, "gpt2", 4))) {
    snprintf(why, sizeof why, "tokenizer model \"%.*s\" is not supported "
                              "(\"gpt2\" and \"llama\" are)",
             (int)(model_n < 40 ? model_n : 40), model);
    goto fail;
  }
  const char *split = NULL;
  for (size_t k = 0; k < sizeof gguf_pre / sizeof gguf_pre[0]; ++k)
    if (pre_n == strlen(gguf_pre[k].pre) && !memcmp(pre, gguf_pre[k].pre, pre_n))
      split = gguf_pre[k].split;
  if (!split) {
    snprintf(why, sizeof why, "tokenizer.ggml.pre \"%.*s\" is not one archc "
                              "knows (default, gpt-2, llama-bpe, qwen2)",
             (int)(pre_n < 40 ? pre_n : 40), pre);
    goto fail;
  }
  /* The tokenizer.json of it: vocabulary, merges, control (3) and
   * user-defined (4) tokens as added ones, the split, byte level. */
  put_s(&b, "{\"model\":{\"type\":\"BPE\",\"ignore_merges\":");
  put_s(&b, pre_n == 9 && !memcmp(pre, "llama-bpe", 9) ? "true" : "false");
  put_s(&b, ",\"vocab\":{");
  const uint8_t *tok0 = c.p;
  for (uint64_t i = 0; i < n_tokens; ++i) {
    const uint8_t *s;
    uint64_t n;
    if (!str(&c, &s, &n))
      break;
    char id[24];
    put_s(&b, i ? "," : "");
    put_json(&b, s, n);
    snprintf(id, sizeof id, ":%llu", (unsigned long long)i);
    put_s(&b, id);
  }
  put_s(&b, "},\"merges\":[");
  if (at[K_MERGES]) {
    uint64_t n_merges;
    c.p = at[K_MERGES];
    if (!array_head(&c, types[K_MERGES], GV_STRING, &n_merges)) {
      snprintf(why, sizeof why, "tokenizer.ggml.merges: %s", c.err);
      goto fail;
    }
    for (uint64_t i = 0; i < n_merges; ++i) {
      const uint8_t *s;
      uint64_t n;
      if (!str(&c, &s, &n))
        break;
      put_s(&b, i ? "," : "");
      put_json(&b, s, n);
    }
  }
  put_s(&b, "]},\"added_tokens\":[");
  if (at[K_TYPES]) {
    uint64_t n_types;
    c.p = at[K_TYPES];
    if (!array_head(&c, types[K_TYPES], GV_I32, &n_types) ||
        n_types != n_tokens) {
      snprintf(why, sizeof why, "tokenizer.ggml.token_type: %s",
               c.err ? c.err : "not one per token");
      goto fail;
    }
    const uint8_t *types_at = c.p;
    cursor tc = {tok0, c.end, NULL};
    int first = 1;
    for (uint64_t i = 0; i < n_tokens; ++i) {
      int32_t kind;
      const uint8_t *s;
      uint64_t n;
      cursor kc = {types_at + 4 * i, c.end, NULL};
      if (!take(&kc, &kind, 4) || !str(&tc, &s, &n))
        break;
      if (kind != 3 && kind != 4)
        continue;
      char head[64];
      snprintf(head, sizeof head, "%s{\"id\":%llu,\"content\":",
               first ? "" : ",", (unsigned long long)i);
      put_s(&b, head);
      put_json(&b, s, n);
      put_s(&b, kind == 3 ? ",\"special\":true,\"normalized\":false}"
                          : ",\"special\":false,\"normalized\":false}");
      first = 0;
    }
  }
  put_s(&b, "],\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":");
  /* The split list with ByteLevel appended inside its brackets. */
  put(&b, split, strlen(split) - 1);
  put_s(&b, ",{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
            "\"use_regex\":false}]},\"decoder\":{\"type\":\"ByteLevel\"}");
  /* BOS where the file asks for it. */
  int add_bos = 0;
  double bos = -1;
  if (at[K_ADD_BOS] && types[K_ADD_BOS] == GV_BOOL)
    add_bos = *at[K_ADD_BOS] != 0;
  if (add_bos && at[K_BOS]) {
    c.p = at[K_BOS];
    if (!number(&c, types[K_BOS], &bos) || bos < 0 || bos >= (double)n_tokens) {
      snprintf(why, sizeof why, "tokenizer.ggml.bos_token_id is not a token");
      goto fail;
    }
    char tpl[200];
    snprintf(tpl, sizeof tpl,
             ",\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":"
             "[{\"SpecialToken\":{\"id\":\"bos\"}},{\"Sequence\":{\"id\":\"A\"}}"
             "],\"special_tokens\":{\"bos\":{\"ids\":[%.0f]}}}",
             bos);
    put_s(&b, tpl);
  }
  put_s(&b, "}");
  if (c.err || b.oom) {
    snprintf(why, sizeof why, "%s", b.oom ? "out of memory" : c.err);
    goto fail;
  }
  munmap(f.data, f.size);
  /* The tokenizer owns the text from here. */
  return archrt_tokenizer_from_json(b.p, b.n, path, vocab_size, out);
fail:
  munmap(f.data, f.size);
  free(b.p);
  if (pieces)
    for (uint64_t i = 0; i < n_tokens; ++i)
      free(pieces[i]);
  free(pieces);
  free(scores);
  return archrt_fail(st ? st : ARCHRT_ERR_FORMAT, "%s: %s", path, why);
}
