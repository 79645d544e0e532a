/*===- attention_counts.c - The profile's attention counts, brute force ---===*
 *
 * archrt_gen_pairs and archrt_gen_keys (runtime/include/archrt_gen.h) in
 * closed form against counting, for every pos < 64, row count n < 64 and
 * window < 80 (0: none): the query-key pairs causal attention scores for
 * rows at positions pos .. pos + n - 1, each over its last `window`
 * positions, and the positions they see together. Prints the first
 * mismatches and "mismatches N"; exit status 1 on any.
 *
 *===---------------------------------------------------------------------===*/
#include "archrt_gen.h"

#include <stdio.h>

int main(void) {
  long bad = 0;
  for (int64_t pos = 0; pos < 64; ++pos)
    for (int64_t n = 1; n < 64; ++n)
      for (int64_t window = 0; window < 80; ++window) {
        int64_t pairs = 0, first = pos;
        for (int64_t p = pos; p < pos + n; ++p) {
          int64_t from = window && p + 1 > window ? p + 1 - window : 0;
          pairs += p + 1 - from;
          first = from < first ? from : first;
        }
        int64_t keys = pos + n - first;
        int64_t gotPairs = archrt_gen_pairs(pos, n, window);
        int64_t gotKeys = archrt_gen_keys(pos, n, window);
        if ((gotPairs != pairs || gotKeys != keys) && bad++ < 5)
          printf("pos %lld n %lld window %lld: pairs %lld (want %lld), keys "
                 "%lld (want %lld)\n",
                 (long long)pos, (long long)n, (long long)window,
                 (long long)gotPairs, (long long)pairs, (long long)gotKeys,
                 (long long)keys);
      }
  printf("mismatches %ld\n", bad);
  return bad != 0;
}
