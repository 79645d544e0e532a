/*===- fuzz_tokenizer.c - tokenizer.bin and tokenizer.json ----------------===*
 * Input: 2 bytes of vocab_size (mod 600, + 1), 1 byte of flags (BOS, EOS,
 * room), 1 byte of text length L, L bytes of text, then the tokenizer file
 * (either format: the runtime tells them apart; the seeds hold both, a
 * tokenizer.json with regex splitting, NFC, byte-level and Metaspace
 * pre-tokenizers). A tokenizer that loads encodes the text and decodes
 * every id it gives. */
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_make_dir();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4 || size < 4u + data[3])
    return 0;
  int32_t vocab = (int32_t)((data[0] | data[1] << 8) % 600) + 1;
  int bos = data[2] & 1, eos = data[2] >> 1 & 1;
  int32_t room = data[2] >> 2; /* 0..63 */
  size_t len = data[3];
  char text[256];
  memcpy(text, data + 4, len);
  text[len] = 0;
  const char *path = fuzz_write("tok.bin", data + 4 + len, size - 4 - len);
  archrt_tokenizer *tok;
  archrt_status st = archrt_tokenizer_load(path, vocab, &tok);
  fuzz_expect_message(st);
  if (st)
    return 0;
  int32_t ids[64], n = -1;
  st = archrt_tokenizer_encode(tok, text, bos, eos, ids, room, &n);
  fuzz_expect_message(st);
  if (st == ARCHRT_OK) {
    if (n < 0 || n > room)
      abort();
    for (int32_t i = 0; i < n; ++i) {
      if (ids[i] < 0 || ids[i] >= vocab)
        abort();
      const char *piece =
          archrt_tokenizer_decode(tok, i ? ids[i - 1] : 1, ids[i]);
      /* A token decodes to at most 1 MiB (hf_tokenizer.c's MAX_PIECE; a
       * tokenizer.bin piece to at most its max_token_length). */
      if (!piece || strlen(piece) > (1u << 20))
        abort();
      (void)archrt_tokenizer_is_stop(tok, ids[i]);
    }
  }
  archrt_tokenizer_free(tok);
  return 0;
}
