/*===- regex.h - The regular expressions of tokenizer.json pre-tokenizers -===*
 *
 * A backtracking matcher over code points with the semantics of the
 * JavaScript (and Oniguruma) engines the reference tokenizers use:
 * leftmost-first alternation, greedy or lazy quantifiers ? * + {m,n},
 * groups (?: ) ( ) (?i: ) (ASCII case folding, as the reference's
 * rewrite of (?i:'s|'t|...) has it), lookahead (?= ) (?! ), classes with
 * ranges, \p{L} \p{N} \p{P} \p{S} \p{M} \p{Z} \p{C} (and \P), \s \S \d \D
 * \w \W and ".". A repetition of what can match nothing is refused (it
 * could loop), as are anchors and back-references.
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

/* The end of the match of re that starts at s[pos] (anchored), or -1.
 * Returns -2 when out of memory. */
long archrt_regex_match(archrt_regex *re, const uint32_t *s, size_t n,
                        size_t pos);

#endif /* ARCHRT_REGEX_H */
