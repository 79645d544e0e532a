/*===- sampler.c - Greedy, temperature and top-p sampling -----------------===*/
#include "internal.h"

#include <math.h>
#include <stdlib.h>

typedef struct prob_index {
  float p;
  int32_t i;
} prob_index;

struct archrt_sampler {
  int32_t vocab;
  float temperature, top_p;
  uint64_t state;
  float *probs;
  prob_index *sorted;
};

archrt_status archrt_sampler_create(int32_t vocab, float temperature,
                                    float top_p, uint64_t seed,
                                    archrt_sampler **out) {
  if (!out)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_sampler_create: out is NULL");
  if (vocab <= 0)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_sampler_create: vocab_size must be positive, got %d",
                       vocab);
  if (!(temperature >= 0) || !isfinite(temperature))
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_sampler_create: temperature must be >= 0, got %g",
                       temperature);
  if (!(top_p > 0 && top_p <= 1))
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_sampler_create: top_p must be in (0, 1], got %g",
                       top_p);
  archrt_sampler *s = calloc(1, sizeof *s);
  if (s) {
    s->probs = malloc((size_t)vocab * sizeof *s->probs);
    s->sorted = malloc((size_t)vocab * sizeof *s->sorted);
  }
  if (!s || !s->probs || !s->sorted) {
    archrt_sampler_free(s);
    return archrt_fail(ARCHRT_ERR_OUT_OF_MEMORY, "archrt_sampler_create: out of memory");
  }
  s->vocab = vocab;
  s->temperature = temperature;
  s->top_p = top_p;
  s->state = seed ? seed : 0x853c49e6748fea9bull;
  *out = s;
  return ARCHRT_OK;
}

void archrt_sampler_free(archrt_sampler *s) {
  if (!s)
    return;
  free(s->probs);
  free(s->sorted);
  free(s);
}

/* xorshift64*: a uniform float in [0, 1). */
static float next_uniform(archrt_sampler *s) {
  s->state ^= s->state >> 12;
  s->state ^= s->state << 25;
  s->state ^= s->state >> 27;
  return (float)((s->state * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0f;
}

static int by_prob_desc(const void *a, const void *b) {
  float pa = ((const prob_index *)a)->p, pb = ((const prob_index *)b)->p;
  return pa < pb ? 1 : pa > pb ? -1 : 0;
}

archrt_status archrt_sample(archrt_sampler *s, const float *logits,
                            int32_t *token) {
  if (!s || !logits || !token)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT, "archrt_sample: NULL argument");
  /* NaN or +inf logits (a diverged model, bad weights) have no
   * distribution to sample; -inf is a token masked out. */
  int32_t best = -1;
  for (int32_t i = 0; i < s->vocab; ++i) {
    if (isnan(logits[i]) || logits[i] == INFINITY)
      return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                         "archrt_sample: logit %d is %s", i,
                         isnan(logits[i]) ? "NaN" : "+inf");
    if (logits[i] > -INFINITY && (best < 0 || logits[i] > logits[best]))
      best = i;
  }
  if (best < 0)
    return archrt_fail(ARCHRT_ERR_INVALID_ARGUMENT,
                       "archrt_sample: every logit is -inf");
  if (s->temperature == 0) {
    *token = best;
    return ARCHRT_OK;
  }
  float max = logits[best], sum = 0;
  for (int32_t i = 0; i < s->vocab; ++i)
    sum += s->probs[i] = expf((logits[i] - max) / s->temperature);
  for (int32_t i = 0; i < s->vocab; ++i)
    s->probs[i] /= sum;
  float r = next_uniform(s);
  if (s->top_p >= 1) {
    /* (The float sum of many probabilities may end below r, near 1: then
     * the last token that has any, never a masked one past it.) */
    float cdf = 0;
    int32_t last = best;
    for (int32_t i = 0; i < s->vocab; ++i) {
      if (s->probs[i] > 0)
        last = i;
      if (r < (cdf += s->probs[i]))
        return *token = i, ARCHRT_OK;
    }
    return *token = last, ARCHRT_OK;
  }
  /* Nucleus: the smallest set of most likely tokens whose mass exceeds
   * top_p. Tokens below (1 - top_p) / (V - 1) can never be in it. */
  float cutoff = s->vocab > 1 ? (1.0f - s->top_p) / (float)(s->vocab - 1) : 0;
  int32_t n = 0;
  for (int32_t i = 0; i < s->vocab; ++i)
    if (s->probs[i] >= cutoff)
      s->sorted[n++] = (prob_index){s->probs[i], i};
  /* With a flat distribution every probability can fall below the cutoff;
   * the most likely token always stays. */
  if (n == 0)
    s->sorted[n++] = (prob_index){s->probs[best], best};
  qsort(s->sorted, (size_t)n, sizeof *s->sorted, by_prob_desc);
  float mass = 0;
  int32_t last = n - 1;
  for (int32_t i = 0; i < n; ++i)
    if ((mass += s->sorted[i].p) > s->top_p) {
      last = i;
      break;
    }
  float target = r * mass, cdf = 0;
  for (int32_t i = 0; i <= last; ++i)
    if (target < (cdf += s->sorted[i].p))
      return *token = s->sorted[i].i, ARCHRT_OK;
  *token = s->sorted[last].i;
  return ARCHRT_OK;
}
