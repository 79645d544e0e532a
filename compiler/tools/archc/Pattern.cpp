//===- Pattern.cpp - A JSON schema's pattern as a grammar -----------------===//
//
// A string schema's `pattern`, a regular expression of ECMA-262 (JSON
// Schema's dialect), as the GBNF expression of the JSON strings whose
// characters it matches: searched, as JSON Schema says, unless `^` and
// `$` anchor it. The pattern speaks of the string's characters, the
// grammar of the JSON text that writes them: each character is written as
// JSON writes it (`"` as \", a newline as \n, ...). What the pattern may
// hold, and what it may not: docs/design.md "Constrained replies".
//
//===----------------------------------------------------------------------===//
#include "Grammar.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr uint32_t kLastCodePoint = 0x10FFFF;
/// The most a pattern's repetition counts (`{m,n}`) or groups nest.
constexpr uint64_t kMaxPatternCount = 1000;
constexpr unsigned kMaxPatternDepth = 64;

/// `r` sorted and merged.
Ranges normal(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (auto [a, b] : r) {
    if (!out.empty() && a <= out.back().second + 1)
      out.back().second = std::max(out.back().second, b);
    else
      out.push_back({a, b});
  }
  return out;
}

/// `r` less the surrogates, which are no characters a text holds.
Ranges withoutSurrogates(const Ranges &r) {
  Ranges out;
  for (auto [a, b] : r) {
    if (a < 0xD800)
      out.push_back({a, std::min(b, 0xD7FFu)});
    if (b > 0xDFFF)
      out.push_back({std::max(a, 0xE000u), b});
  }
  return out;
}

/// The code points `r` leaves out.
Ranges complement(const Ranges &r) {
  Ranges out;
  uint32_t next = 0;
  for (auto [a, b] : normal(r)) {
    if (a > next)
      out.push_back({next, a - 1});
    next = b + 1;
  }
  if (next <= kLastCodePoint)
    out.push_back({next, kLastCodePoint});
  return withoutSurrogates(out);
}

const Ranges kDigits = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
/// ECMA-262's WhiteSpace and LineTerminator.
const Ranges kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},
                       {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029},
                       {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
                       {0xFEFF, 0xFEFF}};
/// `.`: all but the line terminators.
const Ranges kDot = complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});

/// The code points of `text` (valid UTF-8: a JSON string's).
std::vector<uint32_t> codePoints(llvm::StringRef text) {
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < text.size();) {
    unsigned char b = uint8_t(text[i]);
    size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = n == 1 ? b : b & (0xFF >> (n + 1));
    for (size_t j = 1; j < n && i + j < text.size(); ++j)
      c = c << 6 | (uint8_t(text[i + j]) & 0x3F);
    cps.push_back(c);
    i += n;
  }
  return cps;
}

/// Code point `c` as JSON writes it within a string.
std::string jsonChar(uint32_t c) {
  switch (c) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\n': return "\\n";
  case '\r': return "\\r";
  case '\t': return "\\t";
  case '\b': return "\\b";
  case '\f': return "\\f";
  default: break;
  }
  char buf[8];
  if (c < 0x20 || c == 0x7F) {
    snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
    return buf;
  }
  std::string out;
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | c >> 6);
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | c >> 12);
    out += char(0x80 | (c >> 6 & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | c >> 18);
    out += char(0x80 | (c >> 12 & 0x3F));
    out += char(0x80 | (c >> 6 & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
  return out;
}

/// A code point within a GBNF class: itself where it is a letter or a
/// digit, else an escape.
std::string classChar(uint32_t c) {
  if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
      (c >= 'a' && c <= 'z'))
    return std::string(1, char(c));
  char buf[12];
  if (c <= 0xFF)
    snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
  else if (c <= 0xFFFF)
    snprintf(buf, sizeof buf, "\\u%04X", unsigned(c));
  else
    snprintf(buf, sizeof buf, "\\U%08X", unsigned(c));
  return buf;
}

/// Alternatives as one GBNF item: the one alone, or "( a | b ... )"; ""
/// where there are none.
std::string either(const std::vector<std::string> &alts) {
  if (alts.size() == 1)
    return alts[0];
  std::string out;
  for (size_t k = 0; k < alts.size(); ++k)
    out += (k ? " | " : "") + alts[k];
  return alts.empty() ? "" : "( " + out + " )";
}

/// The JSON texts of a set of characters, a GBNF expression: those JSON
/// writes as themselves in a class, the others (", \, the controls, DEL)
/// each as its escape. (Where the set is `broad` (`.`, a negated class,
/// \D \W \S), the controls JSON writes as \u00XX are left out: its
/// strings are held not to hold them, which keeps the grammar short and
/// every string it allows within the pattern.) "" where the set is
/// empty.
std::string charSet(const Ranges &set, bool broad) {
  Ranges plain;
  std::vector<uint32_t> escaped;
  for (auto [a, b] : normal(set)) {
    // (Plain: from the space on, less " and \ and DEL.)
    for (auto [lo, hi] : {std::pair<uint32_t, uint32_t>{0x20, 0x21},
                          {0x23, 0x5B},
                          {0x5D, 0x7E},
                          {0x80, kLastCodePoint}}) {
      uint32_t x = std::max(a, lo), y = std::min(b, hi);
      if (x <= y)
        plain.push_back({x, y});
    }
    for (uint32_t c = a; c <= std::min(b, 0x1Fu); ++c)
      escaped.push_back(c);
    for (uint32_t c : {uint32_t('"'), uint32_t('\\'), 0x7Fu})
      if (a <= c && c <= b)
        escaped.push_back(c);
  }
  std::vector<std::string> alts;
  if (!plain.empty()) {
    std::string cls = "[";
    for (auto [a, b] : plain)
      cls += a == b ? classChar(a) : classChar(a) + "-" + classChar(b);
    alts.push_back(cls + "]");
  }
  for (uint32_t c : escaped)
    if (!broad || jsonChar(c).size() == 2)
      alts.push_back(arch::serve::gbnfLiteral(jsonChar(c)));
  return either(alts);
}

/// The most copies nested bounded repetitions may make of an atom (`(a{0,
/// 100}){0,100}`: 10 000), which bounds the grammar's size and the parses
/// that follow a character.
constexpr uint64_t kMaxPatternCopies = 10000;

/// What the reader knows of a part of a pattern: whether it may match the
/// empty string, and how many copies of its atoms its repetitions make.
struct PatternShape {
  bool nullable = false;
  uint64_t copies = 1;
};

/// A pattern read by recursive descent into GBNF.
class PatternReader {
public:
  explicit PatternReader(llvm::StringRef pattern)
      : cps(codePoints(pattern)) {}

  /// The whole pattern: its top-level alternatives, each searched unless
  /// `^` starts it or `$` ends it.
  bool read(std::string &out) {
    std::vector<std::string> alts;
    do {
      bool start = eat('^');
      PatternShape shape;
      std::string body;
      if (!sequence(body, 0, shape))
        return false;
      bool end = eat('$');
      if (!at('|') && !done() && end)
        --i; // (at the '$')
      if (!at('|') && !done())
        return fail(end || at('$') ? kDollar : "unbalanced ')'");
      alts.push_back((start ? "" : "char* ") + body + (end ? "" : " char*"));
    } while (eat('|'));
    out = "\"\\\"\" ";
    out += either(alts);
    out += " \"\\\"\"";
    return true;
  }

  std::string error;

private:
  std::vector<uint32_t> cps;
  size_t i = 0;
  static constexpr const char *kDollar =
      "'$' is supported only at the end of the pattern's alternatives";

  bool done() const { return i >= cps.size(); }
  bool at(uint32_t c) const { return !done() && cps[i] == c; }
  bool eat(uint32_t c) {
    if (!at(c))
      return false;
    ++i;
    return true;
  }
  bool fail(const std::string &what) {
    if (error.empty())
      error = "at character " + std::to_string(i + 1) + ": " + what;
    return false;
  }
  /// Alternatives up to a ')' or the end, and their shape.
  bool alternation(std::string &out, unsigned depth, PatternShape &shape) {
    std::vector<std::string> alts;
    shape = {};
    do {
      std::string body;
      PatternShape one;
      if (!sequence(body, depth, one))
        return false;
      shape.nullable |= one.nullable;
      shape.copies = std::max(shape.copies, one.copies);
      alts.push_back(body);
    } while (eat('|'));
    out = either(alts);
    return true;
  }

  /// Quantified atoms up to a '|', a ')', a '$' or the end (an empty
  /// sequence: ""), and their shape.
  bool sequence(std::string &out, unsigned depth, PatternShape &shape) {
    shape = {true, 1};
    std::vector<std::string> items;
    std::string run; // JSON text of literal characters not yet written
    auto flush = [&] {
      if (!run.empty())
        items.push_back(arch::serve::gbnfLiteral(run));
      run.clear();
    };
    while (!done() && !at('|') && !at(')') && !at('$')) {
      std::string atom;
      uint32_t literal = 0;
      bool isLiteral = false;
      PatternShape part;
      if (!readAtom(atom, literal, isLiteral, depth, part))
        return false;
      std::string quantifier;
      uint64_t count = 1;
      bool optional = false;
      size_t quantifierAt = i;
      if (!readQuantifier(quantifier, count, optional))
        return false;
      // (A repetition of what may match nothing: a left-recursive rule
      // without bound, and parses that multiply with one.)
      if (part.nullable && !quantifier.empty() && quantifier != "?") {
        i = quantifierAt;
        return fail("a repetition of a group that may match nothing: write "
                    "the group without its empty alternative");
      }
      part.copies *= count;
      if (part.copies > kMaxPatternCopies) {
        i = quantifierAt;
        return fail("repetitions nested to more than " +
                    std::to_string(kMaxPatternCopies) +
                    " copies are not supported");
      }
      shape.copies = std::max(shape.copies, part.copies);
      shape.nullable &= part.nullable || optional;
      if (isLiteral && quantifier.empty()) {
        run += jsonChar(literal);
        continue;
      }
      if (isLiteral)
        atom = arch::serve::gbnfLiteral(jsonChar(literal));
      flush();
      // (Every atom is one GBNF item: a group, a class or a literal.)
      items.push_back(atom + quantifier);
    }
    flush();
    out.clear();
    for (size_t k = 0; k < items.size(); ++k)
      out += (k ? " " : "") + items[k];
    if (out.empty())
      out = "\"\"";
    return true;
  }

  /// `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` (each may be lazy: the same
  /// strings), or none; `count`: the copies it makes of its atom (n, or m
  /// without bound; 1 for the others); `optional`: whether it allows
  /// none.
  bool readQuantifier(std::string &out, uint64_t &count, bool &optional) {
    out.clear();
    count = 1;
    optional = false;
    if (eat('*'))
      out = "*", optional = true;
    else if (eat('+'))
      out = "+";
    else if (eat('?'))
      out = "?", optional = true;
    else if (at('{')) {
      size_t start = i++;
      uint64_t m = 0, n = 0;
      bool hasM = number(m), comma = eat(','), hasN = comma && number(n);
      if (!hasM || !eat('}')) {
        // (Not a quantifier: a '{' as itself, as ECMA-262's web
        // grammar reads it.)
        i = start;
        return true;
      }
      if (m > kMaxPatternCount || (hasN && n > kMaxPatternCount)) {
        i = start;
        return fail("repetitions past " + std::to_string(kMaxPatternCount) +
                    " are not supported");
      }
      if (hasN && n < m) {
        i = start;
        return fail("'{" + std::to_string(m) + "," + std::to_string(n) +
                    "}' counts down");
      }
      count = std::max<uint64_t>(1, hasN ? n : m);
      optional = m == 0;
      out = "{" + std::to_string(m) + (comma ? "," : "") +
            (hasN ? std::to_string(n) : "") + "}";
    } else {
      return true;
    }
    eat('?');
    if (at('*') || at('+') || at('?') || at('{'))
      return fail("a quantifier of a quantifier");
    return true;
  }

  bool number(uint64_t &v) {
    size_t start = i;
    v = 0;
    while (!done() && cps[i] >= '0' && cps[i] <= '9' && v <= kMaxPatternCount)
      v = v * 10 + (cps[i++] - '0');
    while (!done() && cps[i] >= '0' && cps[i] <= '9')
      ++i;
    return i > start;
  }

  /// A character, a class, `.`, an escape or a group; `literal` and
  /// `isLiteral` where it is one character.
  bool readAtom(std::string &out, uint32_t &literal, bool &isLiteral,
                unsigned depth, PatternShape &shape) {
    shape = {};
    uint32_t c = cps[i];
    if (c == '(') {
      ++i;
      if (depth + 1 > kMaxPatternDepth)
        return fail("groups nested more than " +
                    std::to_string(kMaxPatternDepth) + " deep");
      if (eat('?')) {
        if (eat(':')) {
        } else if (at('=') || at('!') ||
                   (at('<') && i + 1 < cps.size() &&
                    (cps[i + 1] == '=' || cps[i + 1] == '!'))) {
          return fail("lookahead and lookbehind are not supported");
        } else if (eat('<')) {
          // (A named group: a group.)
          while (!done() && !at('>'))
            ++i;
          if (!eat('>'))
            return fail("an unclosed group name");
        } else {
          return fail("'(?' of an unknown kind of group");
        }
      }
      std::string body;
      if (!alternation(body, depth + 1, shape))
        return false;
      if (!eat(')'))
        return fail(at('$') ? kDollar : "an unclosed group");
      out = "( " + body + " )";
      return true;
    }
    if (c == '[') {
      ++i;
      Ranges set;
      bool broad = false;
      if (!readClass(set, broad))
        return false;
      out = charSet(set, broad);
      if (out.empty())
        return fail("a class of no character");
      return true;
    }
    if (c == '.') {
      ++i;
      out = charSet(kDot, true);
      return true;
    }
    if (c == '*' || c == '+' || c == '?')
      return fail("a quantifier of nothing");
    if (c == '{') {
      std::string q;
      uint64_t count;
      bool optional;
      size_t start = i;
      if (!readQuantifier(q, count, optional))
        return false;
      if (!q.empty()) {
        i = start;
        return fail("a quantifier of nothing");
      }
      i = start;
    }
    if (c == ']' || c == '}') {
      ++i;
      literal = c;
      isLiteral = true;
      return true;
    }
    if (c == '^')
      return fail("'^' is supported only at the start of the pattern's "
                  "alternatives");
    Ranges set;
    bool single = false;
    if (c == '\\') {
      ++i;
      bool broad;
      if (!readEscape(set, literal, single, broad, false))
        return false;
      if (single) {
        isLiteral = true;
        return true;
      }
      out = charSet(set, broad);
      return true;
    }
    ++i;
    literal = c;
    isLiteral = true;
    return true;
  }

  /// After '\': a class escape (`\d` ... into `set`; `broad` for the
  /// complements \D \W \S) or one character (`single`, into `c`).
  /// `inClass`: within [...] (where \b is a backspace).
  bool readEscape(Ranges &set, uint32_t &c, bool &single, bool &broad,
                  bool inClass) {
    // (Its errors at the backslash.)
    size_t start = i - 1;
    auto bad = [&](const std::string &what) {
      i = start;
      return fail(what);
    };
    if (done())
      return bad("a '\\' at the end of the pattern");
    uint32_t e = cps[i++];
    single = true;
    broad = false;
    switch (e) {
    case 'd': case 'D': case 'w': case 'W': case 's': case 'S': {
      const Ranges &base = e == 'd' || e == 'D'   ? kDigits
                           : e == 'w' || e == 'W' ? kWord
                                                  : kSpace;
      broad = e < 'a';
      set = broad ? complement(base) : base;
      single = false;
      return true;
    }
    case 'n': c = '\n'; return true;
    case 'r': c = '\r'; return true;
    case 't': c = '\t'; return true;
    case 'f': c = '\f'; return true;
    case 'v': c = '\v'; return true;
    case '0':
      if (!done() && cps[i] >= '0' && cps[i] <= '9')
        return bad("octal escapes are not supported");
      c = 0;
      return true;
    case 'b':
      if (inClass) {
        c = '\b';
        return true;
      }
      return bad("word boundaries ('\\b', '\\B') are not supported");
    case 'B':
      return bad("word boundaries ('\\b', '\\B') are not supported");
    case 'x': case 'u': {
      int digits = e == 'x' ? 2 : 4;
      bool braces = e == 'u' && eat('{');
      c = 0;
      int n = 0;
      while (!done() && (braces ? !at('}') : n < digits)) {
        uint32_t h = cps[i];
        int v = h >= '0' && h <= '9'   ? int(h - '0')
                : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                : h >= 'A' && h <= 'F' ? int(h - 'A' + 10)
                                       : -1;
        if (v < 0 || n >= 6)
          break;
        c = c << 4 | uint32_t(v);
        ++i;
        ++n;
      }
      if ((braces && !eat('}')) || n == 0 || (!braces && n < digits))
        return bad(std::string("'\\") + char(e) + "' needs " +
                    (braces ? "hex digits and '}'"
                            : std::to_string(digits) + " hex digits"));
      if (c > kLastCodePoint)
        return bad("a code point past U+10FFFF");
      if (c >= 0xD800 && c < 0xE000)
        return bad("a surrogate code point, which no text holds");
      return true;
    }
    case 'p': case 'P':
      return bad("Unicode properties ('\\p{...}') are not supported");
    case 'k':
      return bad("backreferences are not supported");
    case 'c':
      return bad("control escapes ('\\cX') are not supported");
    default:
      break;
    }
    if (e >= '1' && e <= '9')
      return bad("backreferences are not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z'))
      return bad(std::string("unknown escape '\\") + char(e) + "'");
    // (A syntax character or any other: itself.)
    c = e;
    return true;
  }

  /// A class's character, or its escape: one character (`single`, in
  /// `c`) or a class escape's set (`part`, `broad` as readEscape's).
  bool classAtom(uint32_t &c, Ranges &part, bool &single, bool &broad) {
    single = true;
    broad = false;
    if (eat('\\'))
      return readEscape(part, c, single, broad, true);
    c = cps[i++];
    return true;
  }

  /// After '[': the class up to its ']'; `broad` where it is negated or
  /// holds \D, \W or \S (charSet).
  bool readClass(Ranges &set, bool &broad) {
    bool negated = eat('^');
    Ranges r;
    // ('[]...' is an empty class in ECMA-262: refused below.)
    while (!done() && !at(']')) {
      uint32_t lo;
      Ranges part;
      bool single, partBroad;
      if (!classAtom(lo, part, single, partBroad))
        return false;
      if (!single) {
        broad |= partBroad;
        r.insert(r.end(), part.begin(), part.end());
        continue;
      }
      // A range, where '-' is followed by a character of its own.
      if (at('-') && i + 1 < cps.size() && cps[i + 1] != ']') {
        ++i;
        uint32_t hi;
        Ranges other;
        bool hiSingle, hiBroad;
        if (!classAtom(hi, other, hiSingle, hiBroad))
          return false;
        if (!hiSingle)
          return fail("a range to a class escape");
        if (hi < lo)
          return fail("a range out of order");
        r.push_back({lo, hi});
        continue;
      }
      r.push_back({lo, lo});
    }
    if (!eat(']'))
      return fail("an unclosed class");
    if (r.empty() && !negated)
      return fail("a class of no character");
    // (complement leaves the surrogates out itself.)
    set = negated ? complement(r) : withoutSurrogates(normal(r));
    broad |= negated;
    return true;
  }
};

} // namespace

std::string arch::serve::patternGrammar(llvm::StringRef pattern,
                                        std::string &error) {
  PatternReader reader(pattern);
  std::string out;
  if (!reader.read(out)) {
    error = reader.error;
    return "";
  }
  return out;
}

std::string arch::serve::jsonStringText(llvm::StringRef text) {
  std::string out = "\"";
  for (uint32_t c : codePoints(text))
    out += jsonChar(c);
  return out + "\"";
}
