/*===- json.h - A small JSON reader for tokenizer.json --------------------===*
 *
 * Parses a whole document into a tree whose strings point into the
 * (writable, modified in place) text: each string is unescaped where it
 * stood, which never makes it longer, and NUL-terminated there (its length
 * is kept too: "\u0000" is a valid character). Nesting is bounded; errors
 * name the line and column.
 *
 *===---------------------------------------------------------------------===*/
#ifndef ARCHRT_JSON_H
#define ARCHRT_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum archrt_json_kind {
  ARCHRT_JSON_NULL,
  ARCHRT_JSON_BOOL,
  ARCHRT_JSON_NUMBER,
  ARCHRT_JSON_STRING,
  ARCHRT_JSON_ARRAY,
  ARCHRT_JSON_OBJECT,
} archrt_json_kind;

typedef struct archrt_json archrt_json;
struct archrt_json {
  archrt_json_kind kind;
  uint32_t n; /* a string's bytes, an array's items, an object's members */
  union {
    int boolean;
    double number;
    const char *str;
    archrt_json *items; /* an object's: key, value, key, value, ... */
  } u;
};

typedef struct archrt_json_doc archrt_json_doc;

/* Parses text[0 .. size) (which it modifies and must outlive the
 * document). On failure returns NULL and writes a message (line, column,
 * problem) into err. */
archrt_json_doc *archrt_json_parse(char *text, size_t size, char *err,
                                   size_t err_size);
const archrt_json *archrt_json_root(const archrt_json_doc *doc);
void archrt_json_free(archrt_json_doc *doc);

/* Member `key` of an object, or NULL (also when v is not an object). */
const archrt_json *archrt_json_get(const archrt_json *v, const char *key);
/* Whether v is a string equal to s. */
int archrt_json_is(const archrt_json *v, const char *s);

#endif /* ARCHRT_JSON_H */
