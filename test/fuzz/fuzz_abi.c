/*===- fuzz_abi.c - Random sequences of archrt calls -----------------------===*
 * Each input byte is one call (the low 4 bits pick it, later bytes its
 * arguments) on up to 2 models and 4 sequences of test/fuzz/micro.toml, in
 * any order: freeing a model before its sequences, prefill past capacity,
 * tokens out of range, sampling before logits exist. The model's real
 * kernels run (compiled by archc), with the runtime and glue under ASan
 * and UBSan. */
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  archrt_model *models[2] = {0};
  archrt_seq *seqs[4] = {0};
  archrt_sampler *sampler = NULL;
  size_t at = 0;
#define NEXT() (at < size ? data[at++] : 0)
  while (at < size) {
    uint8_t op = NEXT();
    int m = op >> 4 & 1, q = op >> 5 & 3;
    archrt_status st = ARCHRT_OK;
    switch (op & 15) {
    case 0:
      if (!models[m])
        st = archrt_model_create(&models[m]);
      break;
    case 1:
      archrt_model_free(models[m]);
      models[m] = NULL;
      break;
    case 2:
      st = archrt_init_random(models[m], NEXT());
      break;
    case 3:
      if (!seqs[q] && models[m])
        st = archrt_seq_create(models[m], (int8_t)NEXT(), &seqs[q]);
      break;
    case 4:
      archrt_seq_free(seqs[q]);
      seqs[q] = NULL;
      break;
    case 5: {
      int32_t tokens[16], n = (int8_t)NEXT() % 17;
      for (int i = 0; i < 16; ++i)
        tokens[i] = (int8_t)NEXT() * 7;
      if (seqs[q])
        st = archrt_prefill(seqs[q], tokens, n);
      break;
    }
    case 6: {
      int lo = NEXT(), hi = NEXT();
      if (seqs[q])
        st = archrt_decode(seqs[q], (int16_t)(lo | hi << 8));
      break;
    }
    case 7:
      if (seqs[q])
        st = archrt_seq_reset(seqs[q]);
      break;
    case 8: {
      archrt_param_info p;
      if (models[m])
        st = archrt_param_info_get(models[m], (int8_t)NEXT(), &p);
      break;
    }
    case 9: {
      archrt_model_info info;
      st = archrt_model_info_get(models[m], &info);
      break;
    }
    case 10: {
      archrt_sampler_free(sampler);
      sampler = NULL;
      /* At most the model's 16 logits: archrt_sample cannot know how many
       * floats a pointer holds (its documented precondition). */
      int vocab = (int8_t)NEXT() % 17, temp = (int8_t)NEXT(),
          top = (int8_t)NEXT();
      st = archrt_sampler_create(vocab, temp / 16.0f, top / 64.0f, NEXT(),
                                 &sampler);
      break;
    }
    case 11: {
      int32_t token;
      const float *logits = seqs[q] ? archrt_logits(seqs[q]) : NULL;
      if (sampler && logits)
        st = archrt_sample(sampler, logits, &token);
      break;
    }
    case 12:
      archrt_set_num_threads((int8_t)NEXT());
      break;
    case 13:
      if (NEXT() & 1)
        (void)archrt_seq_length(seqs[q]);
      else
        st = archrt_seq_truncate(seqs[q], (int8_t)NEXT());
      break;
    case 14:
      st = archrt_seq_set_profiling(seqs[q], NEXT() & 1);
      break;
    case 15: {
      archrt_profile_site sites[4];
      int32_t n = (int8_t)NEXT() % 6 - 1, count = 0; /* -6 ..< 5 */
      archrt_profile_site *out = NEXT() & 1 ? sites : NULL;
      st = archrt_seq_profile(seqs[q], out, n, &count);
      /* What was filled points at the library's labels. */
      for (int32_t i = 0; st == ARCHRT_OK && i < n && i < count; ++i)
        if (!out[i].kernel[0] || !out[i].op[0] || out[i].calls < 0 ||
            out[i].rows < 0 || out[i].flops < 0 || out[i].bytes < 0)
          __builtin_trap();
      break;
    }
    }
    fuzz_expect_message(st);
  }
#undef NEXT
  for (int i = 0; i < 4; ++i)
    archrt_seq_free(seqs[i]);
  archrt_model_free(models[0]);
  archrt_model_free(models[1]);
  archrt_sampler_free(sampler);
  return 0;
}
