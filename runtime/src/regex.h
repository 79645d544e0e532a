/*===- regex.h - The regular expressions of tokenizer.json pre-tokenizers -===*
 *
 * A backtracking matcher over code points with the semantics of the
 * JavaScript (and Oniguruma) engines the reference tokenizers use:
 * leftmost-first alternation, greedy or lazy quantifiers ? * + {m,n},
 * groups (?: ) ( ) (?i: ) (ASCII case folding, as the reference's
 * rewrite of (?i:'s|'t|...) has it), lookahead (?= ) (?! ), classes with
 * ranges, \p{L} \p{N} \p{P} \p{S} \p{M} \p{Z} \p{C} (and \P), \s \S \d \D
 * \w \W and ".". A repetition of what can match nothing is refused (it
 * could loop), as are anchors, back-references, and \D or \W inside a
 * class (other than alone).
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_REGEX_H
#define ARCHRT_REGEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct archrt_regex archrt_regex;

/* Compiles the UTF-8 pattern p[0 .. n); NULL with a message in err. */
archrt_regex *archrt_regex_compile(const char *p, size_t n, char *err,
                                   size_t err_size);
void archrt_regex_free(archrt_regex *re);

/* A caller's working memory for matching (the backtracking stack) and its
 * budget of steps: a pattern from a file may backtrack exponentially
 * ((a|a)*b), so the caller bounds the work of a whole text. Zero it to
 * start; free its stack with archrt_regex_scratch_free. */
typedef struct archrt_regex_scratch {
  void *stack;
  size_t cap;
  long budget; /* steps left; the caller sets it */
} archrt_regex_scratch;
void archrt_regex_scratch_free(archrt_regex_scratch *sc);

enum { ARCHRT_REGEX_NO_MEMORY = -2, ARCHRT_REGEX_OVER_BUDGET = -3 };

/* The end of the match of re that starts at s[pos] (anchored), or -1; or
 * ARCHRT_REGEX_NO_MEMORY, or ARCHRT_REGEX_OVER_BUDGET once the scratch's
 * budget is spent or its backtracking frames would pass 2^23 at once. The compiled pattern is not modified: threads may
 * match with it at once, each with its own scratch. */
long archrt_regex_match(const archrt_regex *re, const uint32_t *s, size_t n,
                        size_t pos, archrt_regex_scratch *sc);

#endif /* ARCHRT_REGEX_H */
