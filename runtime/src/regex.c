/*===- regex.c - The regular expressions of tokenizer.json pre-tokenizers -===*
 *
 * The pattern compiles to a small program (instructions with relative jump
 * targets, so spans can be moved and copied) that a backtracking machine
 * runs: SPLIT tries its first branch and keeps the second on a stack.
 *
 *===---------------------------------------------------------------------===*/
#include "regex.h"
#include "unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_CHAR, OP_CLASS, OP_ANY, OP_SPLIT, OP_JMP, OP_LOOK, OP_MATCH };
enum { MAX_DEPTH = 32, MAX_REPEAT = 1000, MAX_PROGRAM = 1 << 16,
       MAX_RANGES = 4096 };

typedef struct inst {
  uint8_t op;
  uint8_t fold;   /* OP_CHAR, OP_CLASS: ASCII case-insensitive */
  uint8_t negate; /* OP_LOOK: (?! ) */
  int32_t x, y;   /* relative targets: SPLIT's first and second; JMP's and
                     LOOK's continuation is x, the body starts at +1 */
  uint32_t c;     /* OP_CHAR's code point, OP_CLASS's index */
} inst;

typedef struct cls {
  uint32_t *ranges; /* first, last pairs */
  int n;
  unsigned cats, not_cats; /* \p{..} and \P{..} */
  uint8_t space, not_space, negate;
} cls;

typedef struct frame {
  int32_t pc;
  size_t pos;
} frame;

struct archrt_regex {
  inst *code;
  size_t len, cap;
  cls *classes;
  int n_classes;
};

typedef struct parser {
  archrt_regex *re;
  const uint32_t *p;
  size_t n, i;
  int fold;
  char *err;
  size_t err_size;
  int failed;
} parser;

static int fail(parser *ps, const char *what) {
  if (!ps->failed)
    snprintf(ps->err, ps->err_size, "at character %zu: %s", ps->i, what);
  ps->failed = 1;
  return 0;
}

static int reserve(parser *ps, size_t extra) {
  archrt_regex *re = ps->re;
  if (re->len + extra > MAX_PROGRAM)
    return fail(ps, "pattern too large");
  if (re->len + extra <= re->cap)
    return 1;
  size_t cap = re->cap ? re->cap : 64;
  while (cap < re->len + extra)
    cap *= 2;
  inst *c = realloc(re->code, cap * sizeof *c);
  if (!c)
    return fail(ps, "out of memory");
  re->code = c, re->cap = cap;
  return 1;
}

static int emit(parser *ps, inst in) {
  if (!reserve(ps, 1))
    return 0;
  ps->re->code[ps->re->len++] = in;
  return 1;
}

/* Inserts `in` at `at`, moving what follows (relative targets stay
 * right inside the moved span; nothing jumps into it from before). */
static int insert(parser *ps, size_t at, inst in) {
  if (!reserve(ps, 1))
    return 0;
  archrt_regex *re = ps->re;
  memmove(re->code + at + 1, re->code + at, (re->len - at) * sizeof *re->code);
  re->code[at] = in;
  re->len++;
  return 1;
}

/* Appends a copy of code[from .. to). */
static int copy_span(parser *ps, size_t from, size_t to) {
  if (!reserve(ps, to - from))
    return 0;
  archrt_regex *re = ps->re;
  memcpy(re->code + re->len, re->code + from, (to - from) * sizeof *re->code);
  re->len += to - from;
  return 1;
}

static int peek(parser *ps) { return ps->i < ps->n ? (int)ps->p[ps->i] : -1; }

static int new_class(parser *ps, cls **out) {
  archrt_regex *re = ps->re;
  cls *c = realloc(re->classes, (size_t)(re->n_classes + 1) * sizeof *c);
  if (!c)
    return fail(ps, "out of memory");
  re->classes = c;
  *out = &c[re->n_classes];
  memset(*out, 0, sizeof **out);
  re->n_classes++;
  return 1;
}

static int add_range(parser *ps, cls *c, uint32_t a, uint32_t b) {
  if (c->n >= MAX_RANGES)
    return fail(ps, "class with too many ranges");
  uint32_t *r = realloc(c->ranges, (size_t)(c->n + 1) * 2 * sizeof *r);
  if (!r)
    return fail(ps, "out of memory");
  c->ranges = r;
  r[2 * c->n] = a, r[2 * c->n + 1] = b;
  c->n++;
  return 1;
}

/* \p{NAME}'s category bits (after the "\p"); 0 on error. */
static unsigned category(parser *ps) {
  static const struct {
    const char *name;
    unsigned bits;
  } names[] = {
      {"L", ARCHRT_UC_L}, {"Letter", ARCHRT_UC_L},
      {"M", ARCHRT_UC_M}, {"Mark", ARCHRT_UC_M},
      {"N", ARCHRT_UC_N}, {"Number", ARCHRT_UC_N},
      {"P", ARCHRT_UC_P}, {"Punctuation", ARCHRT_UC_P},
      {"S", ARCHRT_UC_S}, {"Symbol", ARCHRT_UC_S},
      {"Z", ARCHRT_UC_Z}, {"Separator", ARCHRT_UC_Z},
      {"C", ARCHRT_UC_C}, {"Other", ARCHRT_UC_C},
  };
  char name[32];
  size_t k = 0;
  if (peek(ps) != '{')
    return fail(ps, "expected { after \\p"), 0;
  ps->i++;
  while (peek(ps) >= 0 && peek(ps) != '}' && k + 1 < sizeof name)
    name[k++] = (char)ps->p[ps->i++];
  name[k] = 0;
  if (peek(ps) != '}')
    return fail(ps, "unterminated \\p{...}"), 0;
  ps->i++;
  for (size_t j = 0; j < sizeof names / sizeof names[0]; ++j)
    if (!strcmp(names[j].name, name))
      return names[j].bits;
  char what[80];
  snprintf(what, sizeof what,
           "unsupported property \\p{%s} (major categories only)", name);
  return fail(ps, what), 0;
}

static int hex_digits(parser *ps, int count, uint32_t *out) {
  uint32_t v = 0;
  int k = 0;
  for (; k < count || count < 0; ++k) {
    int c = peek(ps);
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      break;
    v = v * 16 + (uint32_t)d;
    if (v > 0x10FFFF)
      return fail(ps, "escape beyond U+10FFFF");
    ps->i++;
  }
  if ((count > 0 && k != count) || k == 0)
    return fail(ps, "bad hexadecimal escape");
  *out = v;
  return 1;
}

/* An escape after its backslash. Either a single code point (*cp) or a
 * class item (added to `c`, which it creates when NULL and `made` says
 * so). Returns 1 for a code point, 2 for a class item, 0 on error. */
static int escape(parser *ps, uint32_t *cp, cls **c) {
  int e = peek(ps);
  if (e < 0)
    return fail(ps, "trailing backslash");
  ps->i++;
  switch (e) {
  case 'n': *cp = '\n'; return 1;
  case 'r': *cp = '\r'; return 1;
  case 't': *cp = '\t'; return 1;
  case 'f': *cp = '\f'; return 1;
  case 'v': *cp = '\v'; return 1;
  case '0': *cp = 0; return 1;
  case 'x': return hex_digits(ps, 2, cp) ? 1 : 0;
  case 'u':
    if (peek(ps) == '{') {
      ps->i++;
      if (!hex_digits(ps, -1, cp))
        return 0;
      if (peek(ps) != '}')
        return fail(ps, "unterminated \\u{...}");
      ps->i++;
      return 1;
    }
    return hex_digits(ps, 4, cp) ? 1 : 0;
  case 'p': case 'P': {
    unsigned bits = category(ps);
    if (!bits || (!*c && !new_class(ps, c)))
      return 0;
    if (e == 'p')
      (*c)->cats |= bits;
    else
      (*c)->not_cats |= bits;
    return 2;
  }
  case 's': case 'S':
    if (!*c && !new_class(ps, c))
      return 0;
    if (e == 's')
      (*c)->space = 1;
    else
      (*c)->not_space = 1;
    return 2;
  case 'd': case 'D': case 'w': case 'W': {
    /* \D and \W only as a class of their own (negated): inside [...]
     * their complement would take the other items with it. */
    if ((e == 'D' || e == 'W') && *c)
      return fail(ps, "\\D and \\W inside a class are not supported");
    if (!*c && !new_class(ps, c))
      return 0;
    cls *target = *c;
    if (e == 'D' || e == 'W')
      target->negate = 1;
    if (!add_range(ps, target, '0', '9'))
      return 0;
    if ((e == 'w' || e == 'W') &&
        (!add_range(ps, target, 'a', 'z') || !add_range(ps, target, 'A', 'Z') ||
         !add_range(ps, target, '_', '_')))
      return 0;
    return 2;
  }
  case 'b': case 'B': case 'A': case 'z': case 'Z': case 'G':
    return fail(ps, "anchors are not supported");
  default:
    if (e >= '1' && e <= '9')
      return fail(ps, "back-references are not supported");
    *cp = (uint32_t)e; /* an escaped literal: \. \- \[ \\ ... */
    return 1;
  }
}

/* [...] after its '['. */
static int parse_class(parser *ps) {
  cls *c;
  if (!new_class(ps, &c))
    return 0;
  int index = ps->re->n_classes - 1;
  if (peek(ps) == '^') {
    c->negate = 1;
    ps->i++;
  }
  for (;;) {
    int ch = peek(ps);
    if (ch < 0)
      return fail(ps, "unterminated class");
    if (ch == ']') {
      ps->i++;
      break;
    }
    uint32_t lo;
    ps->i++;
    if (ch == '\\') {
      cls *cur = &ps->re->classes[index];
      int k = escape(ps, &lo, &cur);
      if (!k)
        return 0;
      if (k == 2)
        continue;
    } else if (ch == '[') {
      return fail(ps, "nested classes are not supported");
    } else {
      lo = (uint32_t)ch;
    }
    uint32_t hi = lo;
    if (peek(ps) == '-' && ps->i + 1 < ps->n && ps->p[ps->i + 1] != ']') {
      ps->i++;
      int h = peek(ps);
      ps->i++;
      if (h == '\\') {
        cls *none = NULL;
        int k = escape(ps, &hi, &none);
        if (k != 1)
          return k ? fail(ps, "a range must end in a character") : 0;
      } else {
        hi = (uint32_t)h;
      }
      if (hi < lo)
        return fail(ps, "range out of order");
    }
    if (!add_range(ps, &ps->re->classes[index], lo, hi))
      return 0;
  }
  return emit(ps, (inst){OP_CLASS, (uint8_t)ps->fold, 0, 0, 0,
                         (uint32_t)index});
}

static int parse_alt(parser *ps, int depth, int *nullable);

/* One atom; *nullable says whether it can match nothing. */
static int parse_atom(parser *ps, int depth, int *nullable) {
  int ch = peek(ps);
  *nullable = 0;
  ps->i++;
  if (ch == '(') {
    if (depth >= MAX_DEPTH)
      return fail(ps, "nested too deeply");
    int look = 0, negate = 0, saved = ps->fold;
    if (peek(ps) == '?') {
      ps->i++;
      int k = peek(ps);
      ps->i++;
      if (k == ':') {
      } else if (k == '!' || k == '=') {
        look = 1, negate = k == '!';
      } else if (k == 'i' && peek(ps) == ':') {
        ps->i++;
        ps->fold = 1;
      } else {
        return fail(ps, "unsupported group kind");
      }
    }
    size_t at = ps->re->len;
    if (look && !emit(ps, (inst){OP_LOOK, 0, (uint8_t)negate, 0, 0, 0}))
      return 0;
    int inner;
    if (!parse_alt(ps, depth + 1, &inner))
      return 0;
    ps->fold = saved;
    if (peek(ps) != ')')
      return fail(ps, "missing )");
    ps->i++;
    if (look) {
      if (!emit(ps, (inst){OP_MATCH, 0, 0, 0, 0, 0}))
        return 0;
      ps->re->code[at].x = (int32_t)(ps->re->len - at);
      *nullable = 1;
    } else {
      *nullable = inner;
    }
    return 1;
  }
  if (ch == '[')
    return parse_class(ps);
  if (ch == '.')
    return emit(ps, (inst){OP_ANY, 0, 0, 0, 0, 0});
  if (ch == '^' || ch == '$')
    return fail(ps, "anchors are not supported");
  if (ch == ')' || ch == '*' || ch == '+' || ch == '?' || ch == '{')
    return fail(ps, "unexpected metacharacter");
  uint32_t cp = (uint32_t)ch;
  if (ch == '\\') {
    cls *c = NULL;
    int k = escape(ps, &cp, &c);
    if (!k)
      return 0;
    if (k == 2)
      return emit(ps, (inst){OP_CLASS, 0, 0, 0, 0,
                             (uint32_t)(ps->re->n_classes - 1)});
  }
  return emit(ps, (inst){OP_CHAR, (uint8_t)ps->fold, 0, 0, 0, cp});
}

static int read_count(parser *ps, long *out) {
  long v = 0;
  int digits = 0;
  while (peek(ps) >= '0' && peek(ps) <= '9') {
    v = v * 10 + (peek(ps) - '0');
    if (v > MAX_REPEAT)
      return fail(ps, "repetition count too large");
    ps->i++, digits++;
  }
  *out = v;
  return digits > 0;
}

/* The atom at code[start .. len) repeated per the quantifier that follows,
 * if any. */
static int quantify(parser *ps, size_t start, int *nullable) {
  int q = peek(ps);
  long lo, hi;
  if (q == '*')
    lo = 0, hi = -1;
  else if (q == '+')
    lo = 1, hi = -1;
  else if (q == '?')
    lo = 0, hi = 1;
  else if (q == '{') {
    ps->i++;
    if (!read_count(ps, &lo))
      return fail(ps, "bad {m,n}");
    hi = lo;
    if (peek(ps) == ',') {
      ps->i++;
      hi = -1;
      if (peek(ps) != '}' && !read_count(ps, &hi))
        return fail(ps, "bad {m,n}");
    }
    if (peek(ps) != '}')
      return fail(ps, "bad {m,n}");
    if (hi >= 0 && hi < lo)
      return fail(ps, "{m,n} with n < m");
  } else {
    return 1;
  }
  ps->i++;
  int lazy = peek(ps) == '?';
  if (lazy)
    ps->i++;
  if (hi < 0 && *nullable)
    return fail(ps, "a repetition of what can match nothing");
  size_t atom = ps->re->len - start;
  archrt_regex *re = ps->re;
  if (hi == 0) {
    re->len = start; /* e{0} matches nothing */
  } else if (hi < 0 && lo == 0) {
    /* L: SPLIT(body, out); body; JMP L */
    if (!insert(ps, start, lazy ? (inst){OP_SPLIT, 0, 0, (int32_t)atom + 2, 1, 0}
                                : (inst){OP_SPLIT, 0, 0, 1, (int32_t)atom + 2, 0}) ||
        !emit(ps, (inst){OP_JMP, 0, 0, -(int32_t)(atom + 1), 0, 0}))
      return 0;
  } else {
    /* lo copies (the atom is the first), then either a SPLIT back into
     * the last one (no upper bound) or hi - lo optional copies, nested:
     * each "SPLIT(copy, end) copy", so that declining one declines the
     * rest and e{0,n} does not try 2^n ways to match nothing. */
    size_t src = start;
    if (lo == 0) {
      if (!insert(ps, start, (inst){OP_SPLIT, 0, 0, 0, 0, 0}))
        return 0;
      src = start + 1;
    }
    for (long k = 1; k < lo; ++k)
      if (!copy_span(ps, src, src + atom))
        return 0;
    if (hi < 0) {
      int32_t back = -(int32_t)atom;
      if (!emit(ps, lazy ? (inst){OP_SPLIT, 0, 0, 1, back, 0}
                         : (inst){OP_SPLIT, 0, 0, back, 1, 0}))
        return 0;
    } else {
      long optional = hi - lo;
      size_t first = lo == 0 ? start : re->len;
      for (long k = lo == 0 ? 1 : 0; k < optional; ++k)
        if (!emit(ps, (inst){OP_SPLIT, 0, 0, 0, 0, 0}) ||
            !copy_span(ps, src, src + atom))
          return 0;
      size_t end = re->len;
      for (size_t at = first; at < end; at += atom + 1) {
        int32_t out = (int32_t)(end - at);
        re->code[at].x = lazy ? out : 1;
        re->code[at].y = lazy ? 1 : out;
      }
    }
  }
  if (lo == 0)
    *nullable = 1;
  return 1;
}

static int parse_seq(parser *ps, int depth, int *nullable) {
  *nullable = 1;
  while (peek(ps) >= 0 && peek(ps) != '|' && peek(ps) != ')') {
    size_t start = ps->re->len;
    int n;
    if (!parse_atom(ps, depth, &n) || !quantify(ps, start, &n))
      return 0;
    *nullable &= n;
  }
  return 1;
}

static int parse_alt(parser *ps, int depth, int *nullable) {
  size_t start = ps->re->len;
  size_t *jumps = NULL, n_jumps = 0;
  int ok = parse_seq(ps, depth, nullable);
  while (ok && peek(ps) == '|') {
    ps->i++;
    size_t len = ps->re->len - start;
    size_t *j = realloc(jumps, (n_jumps + 1) * sizeof *j);
    if (!j) {
      ok = fail(ps, "out of memory");
      break;
    }
    jumps = j;
    ok = insert(ps, start, (inst){OP_SPLIT, 0, 0, 1, (int32_t)len + 2, 0});
    if (!ok)
      break;
    jumps[n_jumps++] = ps->re->len;
    ok = emit(ps, (inst){OP_JMP, 0, 0, 0, 0, 0});
    start = ps->re->len;
    int n = 0;
    if (ok)
      ok = parse_seq(ps, depth, &n);
    *nullable |= n;
  }
  for (size_t k = 0; ok && k < n_jumps; ++k)
    ps->re->code[jumps[k]].x = (int32_t)(ps->re->len - jumps[k]);
  free(jumps);
  return ok;
}

void archrt_regex_free(archrt_regex *re) {
  if (!re)
    return;
  for (int k = 0; k < re->n_classes; ++k)
    free(re->classes[k].ranges);
  free(re->classes);
  free(re->code);
  free(re);
}

/* Orders ranges a, b by their start (qsort). */
static int by_start(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* A class's ranges sorted by their start and merged where they overlap or
 * touch, for class_has's bisection. */
static void sort_ranges(cls *c) {
  if (c->n < 2)
    return;
  qsort(c->ranges, (size_t)c->n, 2 * sizeof *c->ranges, by_start);
  int m = 0;
  for (int k = 1; k < c->n; ++k) {
    uint32_t a = c->ranges[2 * k], b = c->ranges[2 * k + 1];
    if (a <= c->ranges[2 * m + 1] + 1 || c->ranges[2 * m + 1] == UINT32_MAX) {
      if (b > c->ranges[2 * m + 1])
        c->ranges[2 * m + 1] = b;
    } else {
      ++m;
      c->ranges[2 * m] = a, c->ranges[2 * m + 1] = b;
    }
  }
  c->n = m + 1;
}

archrt_regex *archrt_regex_compile(const char *p, size_t n, char *err,
                                   size_t err_size) {
  archrt_regex *re = calloc(1, sizeof *re);
  uint32_t *cps = malloc((n + 1) * sizeof *cps);
  if (!re || !cps) {
    free(re), free(cps);
    snprintf(err, err_size, "out of memory");
    return NULL;
  }
  size_t m = archrt_utf8_decode(p, n, cps, NULL);
  parser ps = {re, cps, m, 0, 0, err, err_size, 0};
  int nullable;
  int ok = parse_alt(&ps, 0, &nullable);
  if (ok && ps.i < m)
    ok = fail(&ps, "unbalanced )");
  if (ok)
    ok = emit(&ps, (inst){OP_MATCH, 0, 0, 0, 0, 0});
  for (int k = 0; ok && k < re->n_classes; ++k)
    sort_ranges(&re->classes[k]);
  free(cps);
  if (!ok) {
    archrt_regex_free(re);
    return NULL;
  }
  return re;
}

/* ---- Matching ----------------------------------------------------------*/

/* Backtracking frames live at once, at most (16 bytes each: 128 MiB). A
 * greedy loop leaves one a character: a piece of 8M characters. */
enum { MAX_FRAMES = 1 << 23 };

/* Whether ch is among class c's members, its negation aside. */
static int class_has(const cls *c, uint32_t ch) {
  /* The last range starting at or below ch (sorted and disjoint:
   * sort_ranges), by bisection: a class of MAX_RANGES ranges costs a
   * dozen comparisons a character, not thousands. */
  int lo = 0, hi = c->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (c->ranges[2 * mid] <= ch)
      lo = mid + 1;
    else
      hi = mid;
  }
  int in = lo > 0 && ch <= c->ranges[2 * (lo - 1) + 1];
  if (!in && (c->cats || c->not_cats)) {
    unsigned cat = archrt_uc_category(ch);
    in = (c->cats & cat) || (c->not_cats & ~cat & 0x7F);
  }
  if (!in && (c->space || c->not_space)) {
    int sp = archrt_uc_is_space(ch);
    in = (c->space && sp) || (c->not_space && !sp);
  }
  return in;
}

static uint32_t fold(uint32_t c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* The other case of an ASCII letter, or c. */
static uint32_t other_case(uint32_t c) {
  if (c >= 'A' && c <= 'Z')
    return c + 32;
  if (c >= 'a' && c <= 'z')
    return c - 32;
  return c;
}

void archrt_regex_scratch_free(archrt_regex_scratch *sc) {
  free(sc->stack);
  sc->stack = NULL;
  sc->cap = 0;
}

/* Runs the program from pc at pos; the stack frames from `base` up are
 * this run's. */
static long run(const archrt_regex *re, int32_t pc, const uint32_t *s,
                size_t n, size_t pos, archrt_regex_scratch *sc, size_t base) {
  size_t top = base;
  for (;;) {
    if (--sc->budget < 0)
      return ARCHRT_REGEX_OVER_BUDGET;
    const inst *in = &re->code[pc];
    int ok = 1;
    switch (in->op) {
    case OP_CHAR:
      ok = pos < n && (s[pos] == in->c ||
                       (in->fold && fold(s[pos]) == fold(in->c)));
      pc++, pos++;
      break;
    case OP_CLASS:
      /* (Case-insensitive: either case a member, then negated: (?i:[^a])
       * takes neither a nor A.) */
      ok = pos < n &&
           (class_has(&re->classes[in->c], s[pos]) ||
            (in->fold && other_case(s[pos]) != s[pos] &&
             class_has(&re->classes[in->c], other_case(s[pos])))) !=
               re->classes[in->c].negate;
      pc++, pos++;
      break;
    case OP_ANY:
      ok = pos < n && s[pos] != '\n' && s[pos] != '\r' && s[pos] != 0x2028 &&
           s[pos] != 0x2029;
      pc++, pos++;
      break;
    case OP_JMP:
      pc += in->x;
      break;
    case OP_SPLIT:
      if (top == sc->cap) {
        /* The frames live at once are bounded too (each step may leave
         * one: a budget of billions of steps would be gigabytes). */
        if (sc->cap >= MAX_FRAMES)
          return ARCHRT_REGEX_OVER_BUDGET;
        size_t cap = sc->cap ? 2 * sc->cap : 256;
        frame *f = realloc(sc->stack, cap * sizeof *f);
        if (!f)
          return ARCHRT_REGEX_NO_MEMORY;
        sc->stack = f, sc->cap = cap;
      }
      ((frame *)sc->stack)[top++] = (frame){pc + in->y, pos};
      pc += in->x;
      break;
    case OP_LOOK: {
      long r = run(re, pc + 1, s, n, pos, sc, top);
      if (r < -1)
        return r;
      ok = (r >= 0) != in->negate;
      pc += in->x;
      break;
    }
    case OP_MATCH:
      return (long)pos;
    }
    if (!ok) {
      if (top == base)
        return -1;
      --top;
      pc = ((frame *)sc->stack)[top].pc;
      pos = ((frame *)sc->stack)[top].pos;
    }
  }
}

long archrt_regex_match(const archrt_regex *re, const uint32_t *s, size_t n,
                        size_t pos, archrt_regex_scratch *sc) {
  return run(re, 0, s, n, pos, sc, 0);
}
