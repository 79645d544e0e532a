/* A C host of a model library, using only archrt.h: loads weights, prefills,
 * decodes greedily, exercises error paths, frees everything. Run under
 * valgrind by host.test to show no leaks and no invalid accesses. */
#include "archrt.h"

#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    if ((call) != ARCHRT_OK) {                                                 \
      fprintf(stderr, "%s failed: %s\n", #call, archrt_last_error());         \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    fprintf(stderr, "usage: host WEIGHTS [BAD-WEIGHTS]\n");
    return 2;
  }
  archrt_model *model;
  archrt_model_info info;
  CHECK(archrt_model_create(&model));
  CHECK(archrt_model_info_get(model, &info));
  printf("model %s: %d layers, %lld parameters in %d tensors\n", info.name,
         info.n_layers, (long long)info.n_params, info.n_tensors);
  const char *nl = strchr(info.spec_toml, '\n');
  printf("spec: %.*s\n", nl ? (int)(nl - info.spec_toml) : 0, info.spec_toml);
  archrt_param_info p;
  CHECK(archrt_param_info_get(model, 0, &p));
  printf("param 0: %s %s [%lld, %lld] from %s\n", p.name, p.dtype,
         (long long)p.shape[0], (long long)p.shape[1], p.source);
  if (archrt_param_info_get(model, info.n_tensors, &p) == ARCHRT_OK)
    return 1;
  printf("error: %s\n", archrt_last_error());
  if (archrt_load_weights(model, "/nonexistent.safetensors") == ARCHRT_OK)
    return 1;
  printf("error: %s\n", archrt_last_error());
  if (argc == 3) { /* a checkpoint that must fail after being mapped */
    if (archrt_load_weights(model, argv[2]) == ARCHRT_OK)
      return 1;
    printf("error: %s\n", archrt_last_error());
  }
  /* Loading twice replaces the first weights (and releases them). */
  CHECK(archrt_load_weights(model, argv[1]));
  CHECK(archrt_load_weights(model, argv[1]));

  archrt_seq *seq;
  archrt_sampler *sampler;
  CHECK(archrt_seq_create(model, 0, &seq));
  CHECK(archrt_sampler_create(info.vocab_size, 0.0f, 1.0f, 1, &sampler));
  int32_t prompt[6] = {1, 5, 9, 2, 7, 3}, token;
  CHECK(archrt_prefill(seq, prompt, 6));
  printf("generated:");
  for (int i = 0; i < 8; ++i) {
    CHECK(archrt_sample(sampler, archrt_logits(seq), &token));
    printf(" %d", token);
    CHECK(archrt_decode(seq, token));
  }
  printf("\nlength %d\n", archrt_seq_length(seq));
  if (archrt_seq_truncate(seq, 100) != ARCHRT_OK)
    printf("error: %s\n", archrt_last_error());
  CHECK(archrt_seq_truncate(seq, 3));
  printf("truncated: length %d, logits %s\n", archrt_seq_length(seq),
         archrt_logits(seq) ? "kept" : "none");
  CHECK(archrt_decode(seq, prompt[0]));
  CHECK(archrt_seq_reset(seq));
  CHECK(archrt_prefill(seq, prompt, 2));
  archrt_sampler_free(sampler);
  archrt_seq_free(seq);
  archrt_model_free(model);
  archrt_model_free(NULL);
  archrt_seq_free(NULL);
  return 0;
}
