/*===- hf_tokenizer.h - Hugging Face tokenizer.json -----------------------===*
 *
 * The BPE tokenizers of Hugging Face's tokenizer.json: byte-level ones
 * (GPT-2, Llama 3, Qwen, DeepSeek: split regex, byte-to-unicode table,
 * merges by rank) and SentencePiece-style ones (Llama 2, Gemma: metaspace,
 * byte fallback <0xXX>), with their normalizers, added and special tokens
 * (matched before anything else), post-processor and decoders. tokenizer.c
 * picks this or llama2.c's tokenizer.bin from the file's first byte.
 * docs/design.md ("tokenizer.json") lists what is supported and how the
 * results were checked.
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_HF_TOKENIZER_H
#define ARCHRT_HF_TOKENIZER_H

#include "archrt.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hf_tokenizer hf_tokenizer;

/* Parses tokenizer.json text (text[0 .. size), modified); every id must be
 * below vocab_size. `path` names the file in messages. */
archrt_status hf_tokenizer_load(char *text, size_t size, const char *path,
                                int32_t vocab_size, hf_tokenizer **out);
void hf_tokenizer_free(hf_tokenizer *t);
/* `special`: add the post-processor's tokens (Hugging Face's
 * add_special_tokens). */
archrt_status hf_tokenizer_encode(const hf_tokenizer *t, const char *text,
                                  size_t len, int special, int32_t *tokens,
                                  int32_t max_tokens, int32_t *n_tokens);
/* Whether `token` is a special added token. */
int hf_tokenizer_is_special(const hf_tokenizer *t, int32_t token);
/* The bytes of `token` after `prev` (-1 at the start of the text): the
 * decoders applied, NUL-terminated in the tokenizer's buffer. */
const char *hf_tokenizer_decode(hf_tokenizer *t, int32_t prev, int32_t token);

#endif /* ARCHRT_HF_TOKENIZER_H */
