/*===- archrt-tokenize.c - Encode and decode with a tokenizer file --------===*
 *
 *   archrt-tokenize TOKENIZER [options]
 *     --text TEXT        encode TEXT, print its ids
 *     --records FILE     encode each record of FILE (records end in a NUL
 *                        byte), print one line of ids per record
 *     --ids 1,2,3        decode the ids, print the text
 *     --stops N          print the ids below N at which generation ends
 *     --special          add the post-processor's special tokens (BOS)
 *     --decode           with --records: decode each record's encoding token
 *                        by token (as a caller streams it); print the bytes
 *                        in hexadecimal, one line per record
 *     --bench            with --records: encode them all 5 times after a
 *                        warm-up; print the median MB/s of UTF-8 input
 *     --vocab-size N     the model's vocabulary (ids must be below it;
 *                        tokenizer.bin needs it)
 *
 * The runtime's tokenizer as a model library has it (archrt.h), for tests,
 * benchmarks and a look at how a text tokenizes.
 *
 *===---------------------------------------------------------------------===*/
#include "archrt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int usage(void) {
  fprintf(stderr, "usage: archrt-tokenize TOKENIZER [--text TEXT | --records "
                  "FILE [--decode | --bench] | --ids 1,2,3 | --stops N] [--special] "
                  "[--vocab-size N]\n");
  return 2;
}

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += r;
    if (n == cap) {
      char *b = realloc(buf, 2 * cap + 1);
      if (!b) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = b, cap *= 2;
    }
  }
  fclose(f);
  if (buf)
    buf[n] = 0;
  *size = n;
  return buf;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  const char *path = argv[1], *text = NULL, *records = NULL, *ids = NULL,
             *stops = NULL;
  int special = 0, decode = 0, bench = 0;
  long vocab = INT32_MAX;
  for (int i = 2; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "--special"))
      special = 1;
    else if (!strcmp(a, "--decode"))
      decode = 1;
    else if (!strcmp(a, "--bench"))
      bench = 1;
    else if (i + 1 < argc && !strcmp(a, "--text"))
      text = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--records"))
      records = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--ids"))
      ids = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--stops"))
      stops = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--vocab-size"))
      vocab = strtol(argv[++i], NULL, 10);
    else
      return usage();
  }
  if (!!text + !!records + !!ids + !!stops != 1 ||
      ((decode || bench) && !records))
    return usage();
  archrt_tokenizer *tok;
  if (archrt_tokenizer_load(path, (int32_t)vocab, &tok) != ARCHRT_OK) {
    fprintf(stderr, "archrt-tokenize: %s\n", archrt_last_error());
    return 1;
  }
  int rc = 0;
  if (stops) {
    long below = strtol(stops, NULL, 10);
    for (long id = 0, first = 1; id < below && id <= INT32_MAX; ++id)
      if (archrt_tokenizer_is_stop(tok, (int32_t)id)) {
        printf(first ? "%ld" : " %ld", id);
        first = 0;
      }
    putchar('\n');
    archrt_tokenizer_free(tok);
    return 0;
  }
  if (ids) {
    int32_t prev = -1;
    for (const char *p = ids; *p;) {
      char *end;
      long id = strtol(p, &end, 10);
      if (end == p) {
        fprintf(stderr, "archrt-tokenize: --ids: not a number at '%s'\n", p);
        rc = 1;
        break;
      }
      fputs(archrt_tokenizer_decode(tok, prev, (int32_t)id), stdout);
      prev = (int32_t)id;
      p = *end == ',' ? end + 1 : end;
    }
    archrt_tokenizer_free(tok);
    return rc;
  }
  size_t size = text ? strlen(text) : 0;
  char *data = text ? strdup(text) : read_file(records, &size);
  if (!data) {
    fprintf(stderr, "archrt-tokenize: cannot read %s\n",
            records ? records : "--text");
    archrt_tokenizer_free(tok);
    return 1;
  }
  /* Room for any encoding: a token per byte, a space before each run of
   * text (SentencePiece), BOS and EOS. */
  int32_t cap = (int32_t)(size < (size_t)INT32_MAX / 4 ? 2 * size + 64
                                                       : INT32_MAX);
  int32_t *out = malloc((size_t)cap * sizeof *out);
  size_t n_records = 0;
  double times[5];
  for (int pass = 0; pass < (bench ? 6 : 1) && !rc; ++pass) {
    double t0 = now();
    for (size_t at = 0; at < size || (text && at == 0 && !size);) {
      size_t len = text ? size : strnlen(data + at, size - at);
      int32_t n;
      if (archrt_tokenizer_encode(tok, data + at, special, 0, out, cap, &n)) {
        fprintf(stderr, "archrt-tokenize: record %zu: %s\n", n_records,
                archrt_last_error());
        rc = 1;
        break;
      }
      if (!bench && !decode) {
        for (int32_t k = 0; k < n; ++k)
          printf(k ? " %d" : "%d", out[k]);
        putchar('\n');
      }
      if (decode) {
        for (int32_t k = 0, prev = -1; k < n; prev = out[k++])
          for (const unsigned char *p = (const unsigned char *)
                   archrt_tokenizer_decode(tok, prev, out[k]);
               *p; ++p)
            printf("%02x", *p);
        putchar('\n');
      }
      if (pass == 0)
        n_records++;
      at += len + 1;
      if (text)
        break;
    }
    if (pass > 0)
      times[pass - 1] = now() - t0;
  }
  if (!rc && bench) {
    qsort(times, 5, sizeof *times, cmp_double);
    printf("encode: %.2f MB/s (%zu bytes, %zu records, median of 5)\n",
           (double)size / times[2] / 1e6, size, n_records);
  }
  free(out);
  free(data);
  archrt_tokenizer_free(tok);
  return rc;
}
