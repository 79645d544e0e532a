//===- ChatTemplate.cpp - A model's chat template, rendered ---------------===//
//
// Four parts, in order: the values (Python's, as jinja2 shows them), the
// lexer (jinja2's, with trim_blocks and lstrip_blocks), the parser (tags to
// a tree of nodes and expressions) and the interpreter. A fault anywhere is
// a TemplateError thrown to parse() or render(), which turn it into the
// message; nothing throws past this file.
//
//===----------------------------------------------------------------------===//
#include "ChatTemplate.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <vector>

namespace arch {
namespace {

struct TemplateError {
  int line, col;
  std::string message;
};

[[noreturn]] void fail(int line, int col, std::string message) {
  throw TemplateError{line, col, std::move(message)};
}

/// Output, a string's repetition and range() stop here: a template is a
/// prompt's format, not a program.
constexpr size_t kMaxOutput = size_t(64) << 20;
/// jinja2's sandbox refuses a range() longer (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;
/// Nesting of blocks and of the render context's JSON (the parsers
/// recurse), and of an expression's parse (about ten levels a pair of
/// parentheses, one a step of a chain such as a + b + c: the evaluator and
/// the destructor recurse as deep as its tree); and of values (lists and
/// dicts in lists and dicts: the printers and the comparison recurse).
constexpr int kMaxDepth = 200;
constexpr int kMaxExprDepth = 1000;
constexpr uint32_t kMaxValueDepth = 256;
/// Items of a list made at once (a split, a string's characters, a sum).
constexpr size_t kMaxItems = size_t(1) << 20;
/// Element comparisons one == may make (a list that holds the same list
/// twice, nested 40 times, has 2^40 leaves).
constexpr int64_t kMaxCompares = 10000000;

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

struct Value;
using List = std::vector<Value>;
using Fields = std::vector<std::pair<std::string, Value>>;

/// A Python value as a template sees it. Lists, tuples and dicts are
/// immutable here (the sandbox's rule) and shared; a namespace's fields
/// change in place, seen by every copy of it, and hold no namespace (so no
/// value holds itself). A container knows its nesting (`depth`) and
/// whether a namespace is in it.
struct Value {
  enum Kind : uint8_t {
    Undefined, // s: the jinja2 message its use raises
    None,
    Bool,
    Int,
    Float,
    Str,
    ListV,     // items
    TupleV,    // items
    DictV,     // fields
    Namespace, // fields
    Function,  // s: a global's name
    Method,    // s: the method's name, items[0]: the object
    Macro,     // s: its name, macro: its definition
  };
  Kind kind = Undefined;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::shared_ptr<List> items;
  std::shared_ptr<Fields> fields;
  uint32_t depth = 0;
  bool holdsNamespace = false;
  const ChatTemplate::Node *macro = nullptr;

  static Value undefined(std::string why) {
    Value v;
    v.s = std::move(why);
    return v;
  }
  static Value none() { return make(None); }
  static Value boolean(bool x) {
    Value v = make(Bool);
    v.b = x;
    return v;
  }
  static Value integer(int64_t x) {
    Value v = make(Int);
    v.i = x;
    return v;
  }
  static Value number(double x) {
    Value v = make(Float);
    v.f = x;
    return v;
  }
  static Value str(std::string x) {
    Value v = make(Str);
    v.s = std::move(x);
    return v;
  }
  /// (Past kMaxItems or kMaxValueDepth: an error the interpreter places at
  /// the expression that made it.)
  static Value list(List x, Kind k = ListV) {
    Value v = make(k);
    if (x.size() > kMaxItems)
      fail(0, 0, "a list of more than 2^20 items");
    for (const Value &e : x)
      v.contain(e);
    v.items = std::make_shared<List>(std::move(x));
    return v;
  }
  static Value dict(Fields x, Kind k = DictV) {
    Value v = make(k);
    v.holdsNamespace = k == Namespace;
    for (const auto &f : x)
      v.contain(f.second);
    v.fields = std::make_shared<Fields>(std::move(x));
    return v;
  }
  void contain(const Value &e) {
    depth = std::max(depth, e.depth + 1);
    holdsNamespace |= e.holdsNamespace;
    if (depth > kMaxValueDepth)
      fail(0, 0, "lists and dicts nested more than 256 deep");
  }
  static Value make(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }

  bool isSeq() const { return kind == ListV || kind == TupleV; }
  bool isMap() const { return kind == DictV || kind == Namespace; }
  bool isNumber() const { return kind == Int || kind == Float || kind == Bool; }
  double asDouble() const {
    return kind == Float ? f : kind == Bool ? double(b) : double(i);
  }
  const Value *field(const std::string &key) const {
    for (const auto &[k, v] : *fields)
      if (k == key)
        return &v;
    return nullptr;
  }
};

const char *typeName(const Value &v) {
  switch (v.kind) {
  case Value::Undefined:
    return "Undefined";
  case Value::None:
    return "NoneType";
  case Value::Bool:
    return "bool";
  case Value::Int:
    return "int";
  case Value::Float:
    return "float";
  case Value::Str:
    return "str";
  case Value::ListV:
    return "list";
  case Value::TupleV:
    return "tuple";
  case Value::DictV:
    return "dict";
  case Value::Namespace:
    return "Namespace";
  case Value::Function:
  case Value::Method:
    return "function";
  case Value::Macro:
    return "Macro";
  }
  return "value";
}

bool truthy(const Value &v) {
  switch (v.kind) {
  case Value::Undefined:
  case Value::None:
    return false;
  case Value::Bool:
    return v.b;
  case Value::Int:
    return v.i != 0;
  case Value::Float:
    return v.f != 0;
  case Value::Str:
    return !v.s.empty();
  case Value::ListV:
  case Value::TupleV:
    return !v.items->empty();
  case Value::DictV:
    return !v.fields->empty();
  default:
    return true;
  }
}

/// Python's repr of a float: the shortest digits that read back the same,
/// with ".0" on an integral value and an exponent from 1e16 and below 1e-4.
std::string floatRepr(double x) {
  if (std::isnan(x))
    return "nan";
  if (std::isinf(x))
    return x < 0 ? "-inf" : "inf";
  char buf[40];
  int digits = 1;
  for (; digits < 17; ++digits) {
    snprintf(buf, sizeof buf, "%.*e", digits - 1, x);
    if (strtod(buf, nullptr) == x)
      break;
  }
  snprintf(buf, sizeof buf, "%.*e", digits - 1, x);
  // buf: [-]d.ddde[+-]XX; rebuild as Python does.
  std::string s(buf);
  bool neg = s[0] == '-';
  if (neg)
    s.erase(0, 1);
  size_t e = s.find('e');
  int exp = atoi(s.c_str() + e + 1);
  std::string mant = s.substr(0, e);
  mant.erase(std::remove(mant.begin(), mant.end(), '.'), mant.end());
  std::string out;
  if (exp >= 16 || exp < -4) {
    out = mant.substr(0, 1);
    if (mant.size() > 1)
      out += "." + mant.substr(1);
    char eb[16];
    snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(size_t(-exp - 1), '0') + mant;
  } else {
    if (mant.size() <= size_t(exp) + 1)
      out = mant + std::string(size_t(exp) + 1 - mant.size(), '0') + ".0";
    else
      out = mant.substr(0, size_t(exp) + 1) + "." + mant.substr(size_t(exp) + 1);
  }
  return (neg ? "-" : "") + out;
}

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

/// The code point of the UTF-8 sequence at s[k] and its length; 0 where
/// the bytes there are not one.
size_t decodeUtf8(const std::string &s, size_t k, uint32_t &cp) {
  unsigned char c = uint8_t(s[k]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                                           : (c >> 3) == 30 ? 4 : 0;
  if (!n || k + n > s.size())
    return 0;
  cp = n == 1 ? c : c & (0xFF >> (n + 1));
  for (size_t j = 1; j < n; ++j) {
    unsigned char d = uint8_t(s[k + j]);
    if ((d & 0xC0) != 0x80)
      return 0;
    cp = cp << 6 | (d & 0x3F);
  }
  static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
    return 0;
  return n;
}

/// Whether code point `cp` is whitespace to Python (str.isspace: what
/// strip(), split() and the template's own whitespace control take).
bool isPySpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) ||
         cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/// The length of the whitespace code point at s[k] (0 where none).
size_t spaceAt(const std::string &s, size_t k) {
  uint32_t cp;
  size_t n = decodeUtf8(s, k, cp);
  return n && isPySpace(cp) ? n : 0;
}

/// The length of the whitespace code point that ends at s[end] (0 where
/// none).
size_t spaceBefore(const std::string &s, size_t end) {
  size_t k = end;
  for (size_t n = 1; n <= 4 && k > 0; ++n) {
    --k;
    if ((uint8_t(s[k]) & 0xC0) != 0x80)
      return spaceAt(s, k) == n ? n : 0;
  }
  return 0;
}

/// Byte offsets of a UTF-8 string's code points, and its length last
/// (Python indexes and slices strings by code point).
std::vector<size_t> codePoints(const std::string &s) {
  std::vector<size_t> at;
  at.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i)
    if ((uint8_t(s[i]) & 0xC0) != 0x80)
      at.push_back(i);
  at.push_back(s.size());
  return at;
}

std::string strRepr(const std::string &s) {
  bool single = s.find('\'') == std::string::npos ||
                s.find('"') != std::string::npos;
  char q = single ? '\'' : '"';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\')
      out += '\\', out += char(c);
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char b[8];
      snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else
      out += char(c);
  }
  return out + q;
}

void appendStr(std::string &out, const Value &v);

/// Python's repr of `v`, appended to `out` (64 MiB at most: a value can
/// share one list many times over).
void appendRepr(std::string &out, const Value &v) {
  if (out.size() > kMaxOutput)
    fail(0, 0, "a value printed past 64 MiB");
  switch (v.kind) {
  case Value::Str:
    out += strRepr(v.s);
    return;
  case Value::Undefined:
    out += "Undefined";
    return;
  case Value::ListV:
  case Value::TupleV:
    out += v.kind == Value::ListV ? "[" : "(";
    for (size_t k = 0; k < v.items->size(); ++k) {
      if (k)
        out += ", ";
      appendRepr(out, (*v.items)[k]);
    }
    if (v.kind == Value::TupleV && v.items->size() == 1)
      out += ",";
    out += v.kind == Value::ListV ? "]" : ")";
    return;
  case Value::DictV:
  case Value::Namespace:
    out += v.kind == Value::DictV ? "{" : "<Namespace {";
    for (size_t k = 0; k < v.fields->size(); ++k) {
      if (k)
        out += ", ";
      out += strRepr((*v.fields)[k].first) + ": ";
      appendRepr(out, (*v.fields)[k].second);
    }
    out += v.kind == Value::DictV ? "}" : "}>";
    return;
  default:
    appendStr(out, v);
  }
}

/// str(): what {{ }} prints.
void appendStr(std::string &out, const Value &v) {
  switch (v.kind) {
  case Value::Undefined:
    return;
  case Value::None:
    out += "None";
    return;
  case Value::Bool:
    out += v.b ? "True" : "False";
    return;
  case Value::Int:
    out += std::to_string(v.i);
    return;
  case Value::Float:
    out += floatRepr(v.f);
    return;
  case Value::Str:
    out += v.s;
    return;
  case Value::Function:
  case Value::Method:
    out += "<function " + v.s + ">";
    return;
  case Value::Macro:
    out += "<Macro " + strRepr(v.s) + ">";
    return;
  default:
    appendRepr(out, v);
  }
}

std::string toStr(const Value &v) {
  if (v.kind == Value::Str)
    return v.s;
  std::string out;
  appendStr(out, v);
  return out;
}

bool equalWithin(const Value &a, const Value &b, int64_t &budget) {
  if (--budget < 0)
    fail(0, 0, "a comparison of more than 10^7 elements");
  if (a.isNumber() && b.isNumber()) {
    if (a.kind == Value::Float || b.kind == Value::Float)
      return a.asDouble() == b.asDouble();
    return (a.kind == Value::Bool ? int64_t(a.b) : a.i) ==
           (b.kind == Value::Bool ? int64_t(b.b) : b.i);
  }
  if (a.isSeq() && b.isSeq()) {
    if (a.items == b.items && a.kind == b.kind)
      return true;
    if (a.kind != b.kind || a.items->size() != b.items->size())
      return false;
    for (size_t k = 0; k < a.items->size(); ++k)
      if (!equalWithin((*a.items)[k], (*b.items)[k], budget))
        return false;
    return true;
  }
  if (a.kind != b.kind)
    return false;
  switch (a.kind) {
  case Value::Undefined:
  case Value::None:
    return true;
  case Value::Str:
  case Value::Function:
    return a.s == b.s;
  case Value::Macro:
    return a.macro == b.macro;
  case Value::DictV: {
    if (a.fields->size() != b.fields->size())
      return false;
    for (const auto &[k, v] : *a.fields) {
      const Value *w = b.field(k);
      if (!w || !equalWithin(v, *w, budget))
        return false;
    }
    return true;
  }
  default:
    return a.fields == b.fields && a.items == b.items;
  }
}

bool equal(const Value &a, const Value &b) {
  int64_t budget = kMaxCompares;
  return equalWithin(a, b, budget);
}

std::string repr(const Value &v) {
  std::string out;
  appendRepr(out, v);
  return out;
}

/// How tojson writes: transformers' json.dumps(x, ensure_ascii, indent,
/// separators, sort_keys).
struct JSONStyle {
  bool ascii = false;
  int indent = -1; // none
  std::string itemSep = ", ", keySep = ": ";
  bool sortKeys = false;
};

/// `v` as json.dumps writes it, appended to `out` (64 MiB at most).
void toJSON(const Value &v, const JSONStyle &style, int depth,
            std::string &out) {
  if (out.size() > kMaxOutput)
    fail(0, 0, "tojson: the text passes 64 MiB");
  auto newline = [&](int d) {
    if (style.indent >= 0) {
      out += '\n';
      out.append(size_t(style.indent) * size_t(d), ' ');
    }
  };
  switch (v.kind) {
  case Value::None:
    out += "null";
    return;
  case Value::Bool:
    out += v.b ? "true" : "false";
    return;
  case Value::Int:
    out += std::to_string(v.i);
    return;
  case Value::Float:
    out += std::isnan(v.f)   ? "NaN"
           : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity")
                             : floatRepr(v.f);
    return;
  case Value::Str: {
    out += '"';
    auto hex4 = [&](uint32_t u) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", u);
      out += b;
    };
    for (size_t k = 0; k < v.s.size(); ++k) {
      unsigned char c = uint8_t(v.s[k]);
      switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          hex4(c);
        } else if (c < 0x80 || !style.ascii) {
          out += char(c);
        } else {
          // ensure_ascii: a code point as \uXXXX, past U+FFFF as a
          // surrogate pair (a byte that is not UTF-8 as itself).
          uint32_t cp;
          size_t n = decodeUtf8(v.s, k, cp);
          if (!n) {
            hex4(c);
            continue;
          }
          k += n - 1;
          if (cp >= 0x10000) {
            cp -= 0x10000;
            hex4(0xD800 + (cp >> 10));
            hex4(0xDC00 + (cp & 0x3FF));
          } else {
            hex4(cp);
          }
        }
      }
    }
    out += '"';
    return;
  }
  case Value::ListV:
  case Value::TupleV:
    if (v.items->empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t k = 0; k < v.items->size(); ++k) {
      if (k)
        out += style.itemSep;
      newline(depth + 1);
      toJSON((*v.items)[k], style, depth + 1, out);
    }
    newline(depth);
    out += ']';
    return;
  case Value::DictV:
  case Value::Namespace: {
    if (v.fields->empty()) {
      out += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value> *> order;
    for (const auto &f : *v.fields)
      order.push_back(&f);
    if (style.sortKeys) // (UTF-8's byte order is code point order)
      std::stable_sort(order.begin(), order.end(), [](auto *x, auto *y) {
        return x->first < y->first;
      });
    out += '{';
    for (size_t k = 0; k < order.size(); ++k) {
      if (k)
        out += style.itemSep;
      newline(depth + 1);
      toJSON(Value::str(order[k]->first), style, depth + 1, out);
      out += style.keySep;
      toJSON(order[k]->second, style, depth + 1, out);
    }
    newline(depth);
    out += '}';
    return;
  }
  default:
    fail(0, 0,
         std::string("Object of type ") + typeName(v) +
             " is not JSON serializable");
  }
}

/// The render context: JSON text to values, objects keeping their keys'
/// order (Python's json.loads into dicts).
class JSONReader {
public:
  JSONReader(const std::string &text, const std::string &what)
      : t(text), what(what) {}

  Value document() {
    Value v = value(0);
    space();
    if (k != t.size())
      bad("text after the JSON value");
    return v;
  }

private:
  const std::string &t;
  const std::string &what;
  size_t k = 0;

  [[noreturn]] void bad(const std::string &why) {
    fail(0, int(k), what + ": byte " + std::to_string(k) + ": " + why);
  }
  void space() {
    while (k < t.size() && (t[k] == ' ' || t[k] == '\t' || t[k] == '\n' ||
                            t[k] == '\r'))
      ++k;
  }
  bool literal(const char *word) {
    size_t n = strlen(word);
    if (t.compare(k, n, word) != 0)
      return false;
    k += n;
    return true;
  }
  uint32_t hex4() {
    uint32_t cp = 0;
    for (int j = 0; j < 4; ++j, ++k) {
      if (k >= t.size() || !isxdigit((unsigned char)t[k]))
        bad("a \\u escape needs four hex digits");
      char h = t[k];
      cp = cp * 16 + uint32_t(isdigit((unsigned char)h) ? h - '0'
                                                         : (h | 32) - 'a' + 10);
    }
    return cp;
  }
  std::string string() {
    ++k; // "
    std::string s;
    for (;;) {
      if (k >= t.size())
        bad("unterminated string");
      unsigned char c = uint8_t(t[k++]);
      if (c == '"')
        return s;
      if (c < 0x20)
        bad("a control character in a string");
      if (c != '\\') {
        s += char(c);
        continue;
      }
      if (k >= t.size())
        bad("unterminated string");
      char e = t[k++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        s += e;
        break;
      case 'b':
        s += '\b';
        break;
      case 'f':
        s += '\f';
        break;
      case 'n':
        s += '\n';
        break;
      case 'r':
        s += '\r';
        break;
      case 't':
        s += '\t';
        break;
      case 'u': {
        uint32_t cp = hex4();
        if (cp >= 0xD800 && cp < 0xDC00 && t.compare(k, 2, "\\u") == 0) {
          size_t save = k;
          k += 2;
          uint32_t lo = hex4();
          if (lo >= 0xDC00 && lo < 0xE000)
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          else
            k = save;
        }
        appendUtf8(s, cp);
        break;
      }
      default:
        bad(std::string("unknown escape '\\") + e + "'");
      }
    }
  }
  Value value(int depth) {
    if (depth > kMaxDepth)
      bad("nested too deeply");
    space();
    if (k >= t.size())
      bad("unexpected end");
    char c = t[k];
    if (c == '{') {
      ++k;
      Fields fields;
      space();
      if (k < t.size() && t[k] == '}') {
        ++k;
        return Value::dict(std::move(fields));
      }
      for (;;) {
        space();
        if (k >= t.size() || t[k] != '"')
          bad("expected a key");
        std::string key = string();
        space();
        if (k >= t.size() || t[k] != ':')
          bad("expected ':'");
        ++k;
        Value v = value(depth + 1);
        auto it = std::find_if(fields.begin(), fields.end(),
                               [&](const auto &f) { return f.first == key; });
        if (it != fields.end())
          it->second = std::move(v); // the last one wins, as in Python
        else
          fields.emplace_back(std::move(key), std::move(v));
        space();
        if (k < t.size() && t[k] == ',') {
          ++k;
          continue;
        }
        if (k < t.size() && t[k] == '}') {
          ++k;
          return Value::dict(std::move(fields));
        }
        bad("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++k;
      List items;
      space();
      if (k < t.size() && t[k] == ']') {
        ++k;
        return Value::list(std::move(items));
      }
      for (;;) {
        items.push_back(value(depth + 1));
        space();
        if (k < t.size() && t[k] == ',') {
          ++k;
          continue;
        }
        if (k < t.size() && t[k] == ']') {
          ++k;
          return Value::list(std::move(items));
        }
        bad("expected ',' or ']'");
      }
    }
    if (c == '"')
      return Value::str(string());
    if (literal("true"))
      return Value::boolean(true);
    if (literal("false"))
      return Value::boolean(false);
    if (literal("null"))
      return Value::none();
    size_t start = k;
    if (k < t.size() && t[k] == '-')
      ++k;
    bool isFloat = false;
    auto digits = [&]() {
      size_t d = k;
      while (k < t.size() && isdigit((unsigned char)t[k]))
        ++k;
      return k > d;
    };
    if (!digits())
      bad("unexpected character");
    if (k < t.size() && t[k] == '.') {
      ++k;
      isFloat = true;
      if (!digits())
        bad("a digit must follow '.'");
    }
    if (k < t.size() && (t[k] == 'e' || t[k] == 'E')) {
      ++k;
      isFloat = true;
      if (k < t.size() && (t[k] == '+' || t[k] == '-'))
        ++k;
      if (!digits())
        bad("a digit must follow the exponent");
    }
    std::string num = t.substr(start, k - start);
    if (!isFloat) {
      errno = 0;
      long long v = strtoll(num.c_str(), nullptr, 10);
      if (errno != ERANGE)
        return Value::integer(v);
    }
    return Value::number(strtod(num.c_str(), nullptr));
  }
};

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

struct Token {
  enum Kind : uint8_t { Name, Int, Float, Str, Op, End } kind;
  std::string text; // Str: the unescaped value
  int line, col;
};

/// A stretch of the template: text, or a tag's tokens (ending in End).
struct Segment {
  enum Kind : uint8_t { Text, Print, Block } kind;
  std::string text;
  std::vector<Token> tokens;
  int line, col;
};

struct Lexer {
  const std::string &src;
  size_t pos = 0;
  int line = 1;
  size_t lineStart = 0;

  explicit Lexer(const std::string &src) : src(src) {}

  int col() const { return int(pos - lineStart) + 1; }
  void advance(size_t n) {
    for (size_t k = 0; k < n && pos < src.size(); ++k, ++pos)
      if (src[pos] == '\n') {
        ++line;
        lineStart = pos + 1;
      }
  }

  std::vector<Segment> run() {
    std::vector<Segment> out;
    bool lineStarting = true;
    while (pos < src.size()) {
      size_t open = pos;
      while ((open = src.find('{', open)) != std::string::npos &&
             open + 1 < src.size() && src[open + 1] != '{' &&
             src[open + 1] != '%' && src[open + 1] != '#')
        ++open;
      if (open == std::string::npos || open + 1 >= src.size()) {
        out.push_back({Segment::Text, src.substr(pos), {}, line, col()});
        break;
      }
      char kind = src[open + 1];
      std::string text = src.substr(pos, open - pos);
      char mod = open + 2 < src.size() ? src[open + 2] : 0;
      if (mod == '+' && kind == '{')
        mod = 0; // ({{+ is a unary plus: only {% and {# keep spaces)
      if (mod == '-') {
        // (Python's rstrip: any whitespace.)
        size_t end = text.size();
        while (size_t n = spaceBefore(text, end))
          end -= n;
        text.resize(end);
      } else if (kind != '{' && mod != '+') {
        // lstrip_blocks: whitespace between a line's start and a block or
        // comment tag goes.
        size_t l = text.rfind('\n');
        l = l == std::string::npos ? 0 : l + 1;
        size_t k = l;
        while (size_t n = spaceAt(text, k))
          k += n;
        if ((l > 0 || lineStarting) && l < text.size() && k == text.size())
          text.resize(l);
      }
      if (!text.empty())
        out.push_back({Segment::Text, text, {}, line, col()});
      advance(open - pos);
      int tagLine = line, tagCol = col();
      advance(2 + (mod == '-' || mod == '+'));
      if (kind == '#') {
        size_t close = src.find("#}", pos);
        if (close == std::string::npos)
          fail(tagLine, tagCol, "unclosed comment: no '#}'");
        // (A '-' or '+' before the '#}', not the opener's own.)
        bool strip = close > pos && src[close - 1] == '-';
        bool keep = close > pos && src[close - 1] == '+';
        advance(close + 2 - pos);
        lineStarting = endTag(strip, keep);
        continue;
      }
      Segment seg{kind == '{' ? Segment::Print : Segment::Block, "", {},
                  tagLine, tagCol};
      const char *closer = kind == '{' ? "}}" : "%}";
      bool strip = false, keep = false;
      int brackets = 0; // a closer inside brackets is a dict's braces
      int endLine = line, endCol = col();
      for (;;) {
        // (Inside a tag jinja2 skips any Unicode whitespace, as \s.)
        while (size_t n = spaceAt(src, pos))
          advance(n);
        if (pos >= src.size())
          fail(tagLine, tagCol,
               std::string("unclosed tag: no '") + closer + "'");
        endLine = line;
        endCol = col();
        // ('+%}' keeps the newline after a block; '}}' has no '+'.)
        if (brackets == 0 &&
            (src[pos] == '-' || (src[pos] == '+' && kind == '%')) &&
            src.compare(pos + 1, 2, closer) == 0) {
          strip = src[pos] == '-';
          keep = src[pos] == '+';
          advance(3);
          break;
        }
        if (brackets == 0 && src.compare(pos, 2, closer) == 0) {
          advance(2);
          break;
        }
        seg.tokens.push_back(token());
        const Token &t = seg.tokens.back();
        if (t.kind == Token::Op && t.text.size() == 1 &&
            strchr("([{", t.text[0]))
          ++brackets;
        else if (t.kind == Token::Op && t.text.size() == 1 &&
                 strchr(")]}", t.text[0]) && brackets > 0)
          --brackets;
      }
      seg.tokens.push_back({Token::End, "", endLine, endCol});
      out.push_back(std::move(seg));
      lineStarting = kind == '{' ? (strip ? skipSpace() : false)
                                 : endTag(strip, keep);
    }
    return out;
  }

  /// After a block or comment tag: '-' eats the whitespace that follows,
  /// trim_blocks one newline ('+' keeps it). Whether a line starts.
  bool endTag(bool strip, bool keep) {
    if (strip)
      return skipSpace();
    if (!keep && pos < src.size() && src[pos] == '\n') {
      advance(1);
      return true;
    }
    return false;
  }
  bool skipSpace() {
    size_t start = pos;
    while (size_t n = spaceAt(src, pos))
      advance(n);
    return pos > start && src[pos - 1] == '\n';
  }

  Token token() {
    int l = line, c = col();
    char ch = src[pos];
    if (isalpha((unsigned char)ch) || ch == '_') {
      size_t e = pos;
      while (e < src.size() && (isalnum((unsigned char)src[e]) || src[e] == '_'))
        ++e;
      Token t{Token::Name, src.substr(pos, e - pos), l, c};
      advance(e - pos);
      return t;
    }
    if (isdigit((unsigned char)ch)) {
      size_t e = pos;
      bool isFloat = false;
      while (e < src.size() && (isdigit((unsigned char)src[e]) || src[e] == '_'))
        ++e;
      if (e + 1 < src.size() && src[e] == '.' &&
          isdigit((unsigned char)src[e + 1])) {
        isFloat = true;
        for (++e; e < src.size() && isdigit((unsigned char)src[e]); ++e) {
        }
      }
      if (e < src.size() && (src[e] == 'e' || src[e] == 'E')) {
        size_t x = e + 1;
        if (x < src.size() && (src[x] == '+' || src[x] == '-'))
          ++x;
        if (x < src.size() && isdigit((unsigned char)src[x])) {
          isFloat = true;
          for (e = x; e < src.size() && isdigit((unsigned char)src[e]); ++e) {
          }
        }
      }
      std::string text = src.substr(pos, e - pos);
      text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
      advance(e - pos);
      return {isFloat ? Token::Float : Token::Int, text, l, c};
    }
    if (ch == '\'' || ch == '"')
      return stringToken(l, c);
    static const char *ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-",
                                "*",  "/",  "%",  "~",  "<",  ">",  "=", "|",
                                ".",  ",",  ":",  "(",  ")",  "[",  "]", "{",
                                "}"};
    for (const char *op : ops)
      if (src.compare(pos, strlen(op), op) == 0) {
        advance(strlen(op));
        return {Token::Op, op, l, c};
      }
    fail(l, c, std::string("unexpected character '") + ch + "' in a tag");
  }

  /// A string literal, unescaped as Python's unicode-escape codec does.
  Token stringToken(int l, int c) {
    char q = src[pos];
    advance(1);
    std::string v;
    for (;;) {
      if (pos >= src.size())
        fail(l, c, "unterminated string literal");
      char ch = src[pos];
      if (ch == q) {
        advance(1);
        break;
      }
      if (ch != '\\' || pos + 1 >= src.size()) {
        v += ch;
        advance(1);
        continue;
      }
      char e = src[pos + 1];
      advance(2);
      auto hex = [&](int n) {
        uint32_t cp = 0;
        for (int k = 0; k < n; ++k, advance(1)) {
          if (pos >= src.size() || !isxdigit((unsigned char)src[pos]))
            fail(l, c, "truncated \\x, \\u or \\U escape in a string");
          char h = src[pos];
          cp = cp * 16 + uint32_t(isdigit((unsigned char)h) ? h - '0'
                                                             : (h | 32) - 'a' + 10);
        }
        if (cp > 0x10FFFF)
          fail(l, c, "a \\U escape past U+10FFFF");
        appendUtf8(v, cp);
      };
      switch (e) {
      case 'n':
        v += '\n';
        break;
      case 't':
        v += '\t';
        break;
      case 'r':
        v += '\r';
        break;
      case 'a':
        v += '\a';
        break;
      case 'b':
        v += '\b';
        break;
      case 'f':
        v += '\f';
        break;
      case 'v':
        v += '\v';
        break;
      case '\\':
      case '\'':
      case '"':
        v += e;
        break;
      case '\n':
        break;
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = uint32_t(e - '0');
          for (int k = 0; k < 2 && pos < src.size() && src[pos] >= '0' &&
                          src[pos] <= '7';
               ++k, advance(1))
            cp = cp * 8 + uint32_t(src[pos] - '0');
          appendUtf8(v, cp);
        } else {
          v += '\\';
          v += e;
        }
      }
    }
    return {Token::Str, v, l, c};
  }
};

/// jinja2 reads a template with its newlines made "\n" and one trailing
/// newline dropped (keep_trailing_newline is off).
std::string normalizeNewlines(const std::string &src) {
  std::string out;
  out.reserve(src.size());
  for (size_t k = 0; k < src.size(); ++k) {
    if (src[k] == '\r') {
      out += '\n';
      if (k + 1 < src.size() && src[k + 1] == '\n')
        ++k;
    } else {
      out += src[k];
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

//===----------------------------------------------------------------------===//
// Expressions and nodes
//===----------------------------------------------------------------------===//

struct Expr {
  enum Kind : uint8_t {
    Literal,  // value
    Name,     // name
    Attr,     // kids[0] . name
    Item,     // kids[0] [ kids[1] ]
    Slice,    // kids[0] [ kids[1] : kids[2] : kids[3] ] (null: absent)
    Call,     // kids[0] ( kids[1..] ), keywords named in names
    Filter,   // name, kids[0] | name ( kids[1..] )
    Test,     // kids[0] is [not] name ( kids[1..] ); negate
    Not,      // not kids[0]
    Neg,      // - kids[0]
    Pos,      // + kids[0]
    Binary,   // kids[0] op kids[1]
    And,      // kids[0] and kids[1]
    Or,       // kids[0] or kids[1]
    Compare,  // kids[0] ops[0] kids[1] ops[1] ... (chained)
    Cond,     // kids[1] if kids[0] else kids[2] (null: undefined)
    ListE,    // [kids...]
    TupleE,   // (kids...)
    DictE,    // {kids[0]: kids[1], ...}
  };
  Kind kind;
  int line, col;
  Value value;
  std::string name;
  std::vector<std::string> names; // Call / Filter / Test: keyword names
                                  // ("" positional); Compare: operators
  bool negate = false;
  std::vector<std::unique_ptr<Expr>> kids;
};
using ExprPtr = std::unique_ptr<Expr>;

} // namespace

struct ChatTemplate::Node {
  enum Kind : uint8_t {
    Text,
    Print,
    If,
    For,
    Set,
    SetBlock,
    Break,
    Continue,
    Body,
    Macro
  };
  Kind kind = Body;
  int line = 0, col = 0;
  std::string text;                  // Text; Macro: its name
  std::vector<std::string> targets;  // For: loop names; Set: name or ns,
                                     // field; Macro: its parameters
  ExprPtr expr;                      // Print, Set, For: iterable
  ExprPtr filter;                    // For: its `if`
  std::vector<ExprPtr> conds;        // If: a condition per branch; Macro:
                                     // each parameter's default (or null)
  std::vector<std::unique_ptr<Node>> branches; // If: bodies (else last);
                                               // For: body, else; Macro:
                                               // body
  bool varargs = false, kwargs = false; // Macro: its body names them
  std::vector<std::unique_ptr<Node>> children; // Body
};

namespace {
using Node = ChatTemplate::Node;
using NodePtr = std::unique_ptr<Node>;

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

/// The filters and tests the interpreter has (Interpreter::applyFilter and
/// test): a name outside them fails when the template is parsed, as jinja2
/// fails compiling it.
const char *const kFilters[] = {
    "trim",    "length", "count",  "tojson",  "upper",      "lower",
    "title",   "capitalize", "string", "safe", "default",   "d",
    "first",   "last",   "list",   "reverse", "join",       "int",
    "float",   "abs",    "replace", "items",  "selectattr", "rejectattr",
    "select",  "reject", "map"};
const char *const kTests[] = {
    "defined", "undefined", "none",   "string",  "number", "integer",
    "float",   "boolean",   "true",   "false",   "mapping", "iterable",
    "sequence", "callable", "even",   "odd",     "divisibleby", "eq",
    "equalto", "==",        "ne",     "!=",      "sameas", "lt",
    "gt",      "le",        "ge",     "<",       ">",      "<=",
    ">=",      "in",        "lower",  "upper"};

bool known(const char *const *names, size_t n, const std::string &name) {
  return std::any_of(names, names + n,
                     [&](const char *k) { return name == k; });
}

class ExprParser {
public:
  ExprParser(const std::vector<Token> &toks, size_t at = 0)
      : toks(toks), at(at) {}

  const Token &peek(size_t ahead = 0) const {
    return toks[std::min(at + ahead, toks.size() - 1)];
  }
  bool isOp(const char *op, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Op && peek(ahead).text == op;
  }
  bool isName(const char *n, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Name && peek(ahead).text == n;
  }
  const Token &next() { return toks[std::min(at++, toks.size() - 1)]; }
  bool atEnd() const { return peek().kind == Token::End; }
  void expectOp(const char *op) {
    if (!isOp(op))
      unexpected(std::string("expected '") + op + "'");
    next();
  }
  std::string expectName(const char *what) {
    if (peek().kind != Token::Name)
      unexpected(std::string("expected ") + what);
    return next().text;
  }
  [[noreturn]] void unexpected(const std::string &what) const {
    const Token &t = peek();
    fail(t.line, t.col,
         what + ", got " +
             (t.kind == Token::End ? std::string("the end of the tag")
                                   : "'" + t.text + "'"));
  }

  ExprPtr make(Expr::Kind k, const Token &at) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = at.line;
    e->col = at.col;
    return e;
  }

  /// Counts a level of the tree being built (a nested expression, or a
  /// step of a chain such as a + b + c, whose tree is as deep as it is
  /// long): the evaluator and the destructor recurse as deep.
  struct Depth {
    int &d;
    int levels = 0;
    Depth(int &d, const Token &t) : d(d) { add(t); }
    void add(const Token &t) {
      ++levels;
      if (++d > kMaxExprDepth)
        fail(t.line, t.col, "expressions nested too deeply");
    }
    ~Depth() { d -= levels; }
  };

  /// A whole expression: `a if c else b`, or a tuple without parentheses
  /// where `tuple` (a for loop's iterable, a set's value). A for loop's
  /// iterable takes no `if` (`condexpr` false): its `if` is the loop's
  /// filter.
  ExprPtr expression(bool tuple = false, bool condexpr = true) {
    const Token &start = peek();
    auto one = [&] { return condexpr ? conditional() : orExpr(); };
    ExprPtr first = one();
    if (!tuple || !isOp(","))
      return first;
    ExprPtr t = make(Expr::TupleE, start);
    t->kids.push_back(std::move(first));
    while (isOp(",")) {
      next();
      if (atEnd() || isName("if"))
        break;
      t->kids.push_back(one());
    }
    return t;
  }

  ExprPtr conditional() {
    Depth guard(depth, peek());
    ExprPtr e = orExpr();
    while (isName("if")) {
      const Token &t = next();
      guard.add(t);
      ExprPtr c = make(Expr::Cond, t);
      c->kids.push_back(orExpr());
      c->kids.push_back(std::move(e));
      if (isName("else")) {
        next();
        c->kids.push_back(conditional());
      } else {
        c->kids.push_back(nullptr);
      }
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(Expr::Kind k, const Token &t, ExprPtr a, ExprPtr b,
                 std::string op = "") {
    ExprPtr e = make(k, t);
    e->name = std::move(op);
    e->kids.push_back(std::move(a));
    e->kids.push_back(std::move(b));
    return e;
  }

  /// `operand (word operand)*`, left-associative: `or`, `and`.
  ExprPtr keywordChain(const char *word, Expr::Kind kind,
                       ExprPtr (ExprParser::*operand)()) {
    Depth guard(depth, peek());
    ExprPtr e = (this->*operand)();
    while (isName(word)) {
      const Token &t = next();
      guard.add(t);
      e = binary(kind, t, std::move(e), (this->*operand)());
    }
    return e;
  }
  ExprPtr orExpr() {
    return keywordChain("or", Expr::Or, &ExprParser::andExpr);
  }
  ExprPtr andExpr() {
    return keywordChain("and", Expr::And, &ExprParser::notExpr);
  }
  ExprPtr notExpr() {
    if (isName("not")) {
      Depth guard(depth, peek());
      const Token &t = next();
      ExprPtr e = make(Expr::Not, t);
      e->kids.push_back(notExpr());
      return e;
    }
    return compare();
  }
  ExprPtr compare() {
    const Token &start = peek();
    ExprPtr first = arithmetic();
    ExprPtr e;
    for (;;) {
      std::string op;
      if (peek().kind == Token::Op &&
          (isOp("==") || isOp("!=") || isOp("<") || isOp(">") || isOp("<=") ||
           isOp(">=")))
        op = next().text;
      else if (isName("in"))
        op = next().text;
      else if (isName("not") && isName("in", 1)) {
        next();
        next();
        op = "not in";
      } else
        break;
      if (!e) {
        e = make(Expr::Compare, start);
        e->kids.push_back(std::move(first));
      }
      if (e->kids.size() > size_t(kMaxExprDepth))
        fail(start.line, start.col, "expressions nested too deeply");
      e->names.push_back(op);
      e->kids.push_back(arithmetic());
    }
    return e ? std::move(e) : std::move(first);
  }
  /// The binary operators by precedence, loosest first (jinja2's math1,
  /// concat, math2, pow): a level's operands are the next level's
  /// expressions, the last level's unary() ones; each is left-associative.
  ExprPtr arithmetic(size_t level = 0) {
    static const std::vector<std::vector<const char *>> levels = {
        {"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
    if (level == levels.size())
      return unary();
    Depth guard(depth, peek());
    ExprPtr e = arithmetic(level + 1);
    for (;;) {
      auto op = std::find_if(levels[level].begin(), levels[level].end(),
                             [&](const char *o) { return isOp(o); });
      if (op == levels[level].end())
        return e;
      const Token &t = next();
      guard.add(t);
      e = binary(Expr::Binary, t, std::move(e), arithmetic(level + 1),
                 t.text);
    }
  }
  /// jinja2's parse_unary: a sign's operand takes no filter, so that
  /// `-3|abs` filters -3.
  ExprPtr unary(bool withFilters = true) {
    Depth guard(depth, peek());
    ExprPtr e;
    if (isOp("-") || isOp("+")) {
      const Token &t = next();
      e = make(t.text == "-" ? Expr::Neg : Expr::Pos, t);
      e->kids.push_back(unary(false));
    } else {
      e = postfix(primary());
    }
    return withFilters ? filters(std::move(e)) : std::move(e);
  }

  ExprPtr primary() {
    const Token &t = next();
    switch (t.kind) {
    case Token::Name: {
      if (t.text == "true" || t.text == "True" || t.text == "false" ||
          t.text == "False") {
        ExprPtr e = make(Expr::Literal, t);
        e->value = Value::boolean(t.text[0] == 't' || t.text[0] == 'T');
        return e;
      }
      if (t.text == "none" || t.text == "None") {
        ExprPtr e = make(Expr::Literal, t);
        e->value = Value::none();
        return e;
      }
      ExprPtr e = make(Expr::Name, t);
      e->name = t.text;
      return e;
    }
    case Token::Int: {
      ExprPtr e = make(Expr::Literal, t);
      errno = 0;
      long long v = strtoll(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE)
        fail(t.line, t.col, "integer literal " + t.text + " past 64 bits");
      e->value = Value::integer(v);
      return e;
    }
    case Token::Float: {
      ExprPtr e = make(Expr::Literal, t);
      e->value = Value::number(strtod(t.text.c_str(), nullptr));
      return e;
    }
    case Token::Str: {
      ExprPtr e = make(Expr::Literal, t);
      std::string s = t.text;
      while (peek().kind == Token::Str) // adjacent literals join
        s += next().text;
      e->value = Value::str(std::move(s));
      return e;
    }
    case Token::Op:
      if (t.text == "(") {
        if (isOp(")")) {
          next();
          return make(Expr::TupleE, t);
        }
        ExprPtr first = expression();
        if (isOp(")")) {
          next();
          return first;
        }
        ExprPtr tup = make(Expr::TupleE, t);
        tup->kids.push_back(std::move(first));
        while (isOp(",")) {
          next();
          if (isOp(")"))
            break;
          tup->kids.push_back(expression());
        }
        expectOp(")");
        return tup;
      }
      if (t.text == "[") {
        ExprPtr l = make(Expr::ListE, t);
        while (!isOp("]")) {
          l->kids.push_back(expression());
          if (!isOp(","))
            break;
          next();
        }
        expectOp("]");
        return l;
      }
      if (t.text == "{") {
        ExprPtr d = make(Expr::DictE, t);
        while (!isOp("}")) {
          d->kids.push_back(expression());
          expectOp(":");
          d->kids.push_back(expression());
          if (!isOp(","))
            break;
          next();
        }
        expectOp("}");
        return d;
      }
      break;
    default:
      break;
    }
    --at;
    unexpected("expected an expression");
  }

  /// Arguments after '(' up to ')': positional, then name=value.
  void arguments(Expr &call) {
    while (!isOp(")")) {
      if (peek().kind == Token::Name && isOp("=", 1)) {
        call.names.push_back(next().text);
        next();
      } else {
        call.names.push_back("");
      }
      call.kids.push_back(expression());
      if (!isOp(","))
        break;
      next();
    }
    expectOp(")");
  }

  ExprPtr postfix(ExprPtr e) {
    Depth guard(depth, peek());
    for (;; guard.add(peek())) {
      if (isOp(".")) {
        const Token &t = next();
        ExprPtr a = make(Expr::Attr, t);
        if (peek().kind == Token::Int)
          a->name = next().text; // x.0: an item
        else
          a->name = expectName("an attribute name after '.'");
        a->kids.push_back(std::move(e));
        e = std::move(a);
      } else if (isOp("[")) {
        const Token &t = next();
        ExprPtr parts[3];
        int colons = 0;
        for (;;) {
          if (isOp(":")) {
            if (++colons > 2)
              unexpected("expected ']'");
            next();
            continue;
          }
          if (isOp("]"))
            break;
          if (parts[colons])
            unexpected("expected ':' or ']'");
          parts[colons] = expression();
        }
        next();
        ExprPtr s = make(colons ? Expr::Slice : Expr::Item, t);
        s->kids.push_back(std::move(e));
        if (!colons) {
          if (!parts[0])
            fail(t.line, t.col, "empty subscript");
          s->kids.push_back(std::move(parts[0]));
        } else {
          for (auto &p : parts)
            s->kids.push_back(std::move(p));
        }
        e = std::move(s);
      } else if (isOp("(")) {
        const Token &t = next();
        ExprPtr c = make(Expr::Call, t);
        c->kids.push_back(std::move(e));
        c->names.push_back("");
        arguments(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr filters(ExprPtr e) {
    Depth guard(depth, peek());
    for (;; guard.add(peek())) {
      if (isOp("|")) {
        next();
        const Token &t = peek();
        ExprPtr f = make(Expr::Filter, t);
        f->name = expectName("a filter name after '|'");
        if (!known(kFilters, std::size(kFilters), f->name))
          fail(t.line, t.col, "unknown filter '" + f->name + "'");
        f->kids.push_back(std::move(e));
        f->names.push_back("");
        if (isOp("(")) {
          next();
          arguments(*f);
        }
        e = std::move(f);
      } else if (isName("is")) {
        next();
        const Token &t = peek();
        ExprPtr x = make(Expr::Test, t);
        if (isName("not")) {
          next();
          x->negate = true;
        }
        // `none`, `true`, `false` are tests' names too.
        const Token &nameTok = peek();
        x->name = expectName("a test name after 'is'");
        if (!known(kTests, std::size(kTests), x->name))
          fail(nameTok.line, nameTok.col, "unknown test '" + x->name + "'");
        x->kids.push_back(std::move(e));
        x->names.push_back("");
        if (isOp("(")) {
          next();
          arguments(*x);
        } else if (!atEnd() &&
                   (peek().kind == Token::Str || peek().kind == Token::Int ||
                    peek().kind == Token::Float || isOp("[") || isOp("{") ||
                    (peek().kind == Token::Name && !isName("and") &&
                     !isName("or") && !isName("if") && !isName("else") &&
                     !isName("in") && !isName("not") && !isName("is")))) {
          // `is divisibleby 3`, `is sameas none`, `is in [1, 2]`: one
          // argument.
          x->names.push_back("");
          x->kids.push_back(postfix(primary()));
        }
        e = std::move(x);
      } else {
        return e;
      }
    }
  }

  const std::vector<Token> &toks;
  size_t at;
  int depth = 0;
};

class Parser {
public:
  explicit Parser(std::vector<Segment> segs) : segs(std::move(segs)) {}

  NodePtr parse() {
    std::string stop;
    return block({}, stop, nullptr, "");
  }

private:
  std::vector<Segment> segs;
  size_t at = 0;
  int depth = 0;
  int loops = 0, macros = 0; ///< the for and macro blocks open

  /// Whether `name` is read anywhere in `e` or `n` (a macro's varargs and
  /// kwargs exist where its body names them, as jinja2 finds them).
  static bool names(const Expr *e, const std::string &name) {
    if (!e)
      return false;
    if (e->kind == Expr::Name && e->name == name)
      return true;
    return std::any_of(e->kids.begin(), e->kids.end(),
                       [&](const ExprPtr &k) { return names(k.get(), name); });
  }
  static bool names(const Node &n, const std::string &name) {
    if (names(n.expr.get(), name) || names(n.filter.get(), name))
      return true;
    for (const ExprPtr &c : n.conds)
      if (names(c.get(), name))
        return true;
    for (const auto *list : {&n.branches, &n.children})
      for (const auto &k : *list)
        if (names(*k, name))
          return true;
    return false;
  }

  static NodePtr node(Node::Kind k, int line, int col) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = line;
    n->col = col;
    return n;
  }

  /// Nodes up to a block tag whose first word is in `ends`, left in
  /// `stop` (its segment consumed, stopParser after the word); the
  /// template's end where `ends` is empty. `opener`, the tag `word` that
  /// began the block, is where an unclosed one is reported.
  NodePtr block(std::initializer_list<const char *> ends, std::string &stop,
                const Segment *opener, const std::string &word) {
    int line = opener ? opener->line : 1, col = opener ? opener->col : 1;
    if (++depth > kMaxDepth)
      fail(line, col, "blocks nested too deeply");
    NodePtr body = node(Node::Body, line, col);
    while (at < segs.size()) {
      Segment &s = segs[at++];
      if (s.kind == Segment::Text) {
        NodePtr t = node(Node::Text, s.line, s.col);
        t->text = std::move(s.text);
        body->children.push_back(std::move(t));
        continue;
      }
      ExprParser p(s.tokens);
      if (s.kind == Segment::Print) {
        NodePtr n = node(Node::Print, s.line, s.col);
        n->expr = p.expression(true);
        if (!p.atEnd())
          p.unexpected("expected '}}'");
        body->children.push_back(std::move(n));
        continue;
      }
      std::string word = p.expectName("a statement");
      for (const char *e : ends)
        if (word == e) {
          stop = word;
          stopParser = std::make_unique<ExprParser>(s.tokens, p.at);
          --depth;
          return body;
        }
      if (word == "elif" || word == "else" || word.rfind("end", 0) == 0) {
        std::string names;
        for (const char *e : ends)
          names += std::string(names.empty() ? "" : " or ") + "'" + e + "'";
        fail(s.line, s.col,
             "unexpected '" + word + "'" +
                 (opener ? ": the '" + wordOf(*opener) + "' block at " +
                               std::to_string(line) + ":" +
                               std::to_string(col) + " needs " + names
                         : std::string(" outside a block")));
      }
      body->children.push_back(statement(word, p, s));
    }
    if (ends.size()) {
      std::string names;
      for (const char *e : ends)
        names += std::string(names.empty() ? "" : " or ") + "'" + e + "'";
      fail(line, col,
           "unclosed '" + word + "' block: no " + names + " before the end");
    }
    --depth;
    return body;
  }

  std::unique_ptr<ExprParser> stopParser;

  static std::string wordOf(const Segment &s) { return s.tokens[0].text; }

  void endOfTag(ExprParser &p) {
    if (!p.atEnd())
      p.unexpected("expected '%}'");
  }

  NodePtr statement(const std::string &word, ExprParser &p, Segment &s) {
    std::string stop;
    if (word == "if") {
      NodePtr n = node(Node::If, s.line, s.col);
      n->conds.push_back(p.expression());
      endOfTag(p);
      for (;;) {
        n->branches.push_back(block({"elif", "else", "endif"}, stop, &s, word));
        ExprParser &q = *stopParser;
        if (stop == "elif") {
          n->conds.push_back(q.expression());
          endOfTag(q);
          continue;
        }
        endOfTag(q);
        if (stop == "else") {
          n->branches.push_back(block({"endif"}, stop, &s, word));
          endOfTag(*stopParser);
        }
        return n;
      }
    }
    if (word == "for") {
      NodePtr n = node(Node::For, s.line, s.col);
      n->targets.push_back(p.expectName("a loop variable"));
      while (p.isOp(",")) {
        p.next();
        n->targets.push_back(p.expectName("a loop variable"));
      }
      if (!p.isName("in"))
        p.unexpected("expected 'in'");
      p.next();
      n->expr = p.expression(true, false);
      if (p.isName("if")) {
        p.next();
        n->filter = p.expression();
      }
      if (p.isName("recursive"))
        p.unexpected("recursive loops are not supported");
      endOfTag(p);
      ++loops;
      n->branches.push_back(block({"else", "endfor"}, stop, &s, word));
      endOfTag(*stopParser);
      if (stop == "else") {
        n->branches.push_back(block({"endfor"}, stop, &s, word));
        endOfTag(*stopParser);
      }
      --loops;
      return n;
    }
    if (word == "macro") {
      // {% macro name(a, b=default, ...) %}...{% endmacro %}: its body
      // sees its parameters and the template's top-level names, so one
      // inside a loop or another macro (whose names it would see in
      // jinja2) is refused.
      if (loops || macros)
        fail(s.line, s.col,
             std::string("a macro inside ") + (macros ? "a macro" : "a loop") +
                 " is not supported by archc's template interpreter");
      NodePtr n = node(Node::Macro, s.line, s.col);
      n->text = p.expectName("a macro name");
      p.expectOp("(");
      while (!p.isOp(")")) {
        if (!n->targets.empty())
          p.expectOp(",");
        const Token &param = p.peek();
        n->targets.push_back(p.expectName("a parameter name"));
        ExprPtr def;
        if (p.isOp("=")) {
          p.next();
          def = p.expression();
        } else if (!n->conds.empty() && n->conds.back()) {
          fail(param.line, param.col,
               "non-default argument follows default argument");
        }
        n->conds.push_back(std::move(def));
      }
      p.next();
      endOfTag(p);
      ++macros;
      n->branches.push_back(block({"endmacro"}, stop, &s, word));
      --macros;
      endOfTag(*stopParser);
      n->varargs = names(*n->branches[0], "varargs");
      n->kwargs = names(*n->branches[0], "kwargs");
      return n;
    }
    if (word == "set") {
      std::string target = p.expectName("a variable name");
      NodePtr n = node(Node::Set, s.line, s.col);
      n->targets.push_back(target);
      if (p.isOp(".")) {
        p.next();
        n->targets.push_back(p.expectName("a field name after '.'"));
      }
      if (p.isOp(",")) // set a, b = ...
        p.unexpected("unpacking in a set is not supported");
      if (p.atEnd() && n->targets.size() == 1) {
        // {% set x %}...{% endset %}
        n->kind = Node::SetBlock;
        n->branches.push_back(block({"endset"}, stop, &s, word));
        endOfTag(*stopParser);
        return n;
      }
      p.expectOp("=");
      n->expr = p.expression(true);
      endOfTag(p);
      return n;
    }
    if (word == "break" || word == "continue") {
      endOfTag(p);
      return node(word == "break" ? Node::Break : Node::Continue, s.line,
                  s.col);
    }
    if (word == "generation") {
      // transformers' AssistantTracker: marks the assistant's text for a
      // mask; the text renders as it is.
      endOfTag(p);
      NodePtr b = block({"endgeneration"}, stop, &s, word);
      endOfTag(*stopParser);
      return b;
    }
    static const char *unsupported[] = {"call",    "filter",
                                        "include", "import", "from",
                                        "extends", "block", "raw",
                                        "with",   "autoescape", "do"};
    for (const char *u : unsupported)
      if (word == u)
        fail(s.line, s.col,
             "the '" + word + "' statement is not supported by archc's "
             "template interpreter");
    fail(s.line, s.col, "unknown statement '" + word + "'");
  }
};

//===----------------------------------------------------------------------===//
// Interpreter
//===----------------------------------------------------------------------===//

struct Scope {
  Scope *parent;
  std::map<std::string, Value> vars;
  const Value *find(const std::string &n) const {
    for (const Scope *s = this; s; s = s->parent) {
      auto it = s->vars.find(n);
      if (it != s->vars.end())
        return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { Normal, Break, Continue };

class Interpreter {
public:
  std::string out;
  /// The template's top-level scope: a macro's body sees it (render's).
  Scope *top = nullptr;

  Flow run(const Node &n, Scope &scope) {
    switch (n.kind) {
    case Node::Text:
      emit(n.text, n);
      return Flow::Normal;
    case Node::Print:
      try {
        emit(toStr(eval(*n.expr, scope)), n);
      } catch (TemplateError &err) { // (a value printed past 64 MiB)
        if (!err.line) {
          err.line = n.line;
          err.col = n.col;
        }
        throw;
      }
      return Flow::Normal;
    case Node::Body:
      for (const auto &c : n.children) {
        Flow f = run(*c, scope);
        if (f != Flow::Normal)
          return f;
      }
      return Flow::Normal;
    case Node::If:
      for (size_t k = 0; k < n.branches.size(); ++k)
        if (k >= n.conds.size() || truthy(eval(*n.conds[k], scope)))
          return run(*n.branches[k], scope);
      return Flow::Normal;
    case Node::For:
      return runFor(n, scope);
    case Node::Set: {
      Value v = eval(*n.expr, scope);
      if (n.targets.size() == 1) {
        scope.vars[n.targets[0]] = std::move(v);
        return Flow::Normal;
      }
      const Value *ns = scope.find(n.targets[0]);
      if (!ns || ns->kind != Value::Namespace)
        fail(n.line, n.col,
             "cannot assign attribute on non-namespace object '" +
                 n.targets[0] + "'");
      // (So that no value holds itself: jinja2 allows it, templates do
      // not need it.)
      if (v.holdsNamespace)
        fail(n.line, n.col, "a namespace's field cannot hold a namespace "
                            "in archc's template interpreter");
      for (auto &[k, old] : *ns->fields)
        if (k == n.targets[1]) {
          old = std::move(v);
          return Flow::Normal;
        }
      ns->fields->emplace_back(n.targets[1], std::move(v));
      return Flow::Normal;
    }
    case Node::SetBlock: {
      std::string text;
      Flow f = capture(*n.branches[0], scope, text);
      scope.vars[n.targets[0]] = Value::str(std::move(text));
      return f;
    }
    case Node::Break:
      return Flow::Break;
    case Node::Continue:
      return Flow::Continue;
    case Node::Macro: {
      Value m = Value::make(Value::Macro);
      m.s = n.text;
      m.macro = &n;
      scope.vars[n.text] = std::move(m);
      return Flow::Normal;
    }
    }
    return Flow::Normal;
  }

private:
  /// The text set aside while a block's or a macro's is written (it
  /// counts toward the 64 MiB too).
  size_t aside = 0;

  /// Runs `body` writing into `text` (a block's or a macro's), the output
  /// so far set aside meanwhile.
  Flow capture(const Node &body, Scope &scope, std::string &text) {
    text.swap(out);
    aside += text.size();
    Flow f = run(body, scope);
    text.swap(out);
    aside -= out.size();
    return f;
  }

  void emit(const std::string &s, const Node &n) {
    if (aside + out.size() + s.size() > kMaxOutput)
      fail(n.line, n.col, "the output passes 64 MiB");
    out += s;
  }

  static List iterate(const Value &v, const Expr &e) {
    switch (v.kind) {
    case Value::Undefined:
      return {};
    case Value::ListV:
    case Value::TupleV:
      return *v.items;
    case Value::DictV:
    case Value::Namespace: {
      List keys;
      for (const auto &f : *v.fields)
        keys.push_back(Value::str(f.first));
      return keys;
    }
    case Value::Str: {
      List chars;
      std::vector<size_t> at = codePoints(v.s);
      if (at.size() - 1 > kMaxItems)
        fail(e.line, e.col, "a string of more than 2^20 characters to "
                            "iterate");
      for (size_t k = 0; k + 1 < at.size(); ++k)
        chars.push_back(Value::str(v.s.substr(at[k], at[k + 1] - at[k])));
      return chars;
    }
    default:
      fail(e.line, e.col, std::string("'") + typeName(v) +
                              "' object is not iterable");
    }
  }

  Flow runFor(const Node &n, Scope &scope) {
    List items = iterate(eval(*n.expr, scope), *n.expr);
    auto bind = [&](Scope &s, const Value &item) {
      if (n.targets.size() == 1) {
        s.vars[n.targets[0]] = item;
        return;
      }
      if (!item.isSeq() || item.items->size() != n.targets.size())
        fail(n.line, n.col,
             "cannot unpack " + std::string(typeName(item)) + " into " +
                 std::to_string(n.targets.size()) + " loop variables");
      for (size_t k = 0; k < n.targets.size(); ++k)
        s.vars[n.targets[k]] = (*item.items)[k];
    };
    if (n.filter) {
      List kept;
      for (const Value &item : items) {
        Scope s{&scope, {}};
        bind(s, item);
        if (truthy(eval(*n.filter, s)))
          kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.branches.size() > 1) {
        Scope s{&scope, {}};
        run(*n.branches[1], s);
      }
      return Flow::Normal;
    }
    int64_t len = int64_t(items.size());
    for (int64_t k = 0; k < len; ++k) {
      // Each pass its own scope: a set in the body is gone after it.
      Scope s{&scope, {}};
      bind(s, items[size_t(k)]);
      s.vars["loop"] = Value::dict({
          {"index", Value::integer(k + 1)},
          {"index0", Value::integer(k)},
          {"revindex", Value::integer(len - k)},
          {"revindex0", Value::integer(len - k - 1)},
          {"first", Value::boolean(k == 0)},
          {"last", Value::boolean(k == len - 1)},
          {"length", Value::integer(len)},
          {"depth", Value::integer(1)}, // (no recursive loops)
          {"depth0", Value::integer(0)},
          {"previtem",
           k ? items[size_t(k - 1)] : Value::undefined("there is no previous item")},
          {"nextitem", k + 1 < len ? items[size_t(k + 1)]
                                   : Value::undefined("there is no next item")},
      });
      if (run(*n.branches[0], s) == Flow::Break)
        break;
    }
    return Flow::Normal;
  }

  [[noreturn]] static void undefinedUse(const Value &v, const Expr &e) {
    fail(e.line, e.col, v.s);
  }

  static Value getAttr(const Value &obj, const std::string &name,
                       const Expr &e) {
    if (obj.kind == Value::Undefined)
      undefinedUse(obj, e);
    if (obj.isMap()) {
      // Python's attributes first (jinja2's getattr), then the key.
      if (obj.kind == Value::DictV &&
          (name == "items" || name == "keys" || name == "values" ||
           name == "get"))
        return method(obj, name);
      if (const Value *f = obj.field(name))
        return *f;
      return Value::undefined("'" + std::string(obj.kind == Value::DictV
                                                     ? "dict object"
                                                     : "Namespace") +
                              "' has no attribute '" + name + "'");
    }
    if (obj.kind == Value::Str) {
      static const char *strMethods[] = {
          "strip",   "lstrip",     "rstrip", "split",   "rsplit",
          "startswith", "endswith", "upper", "lower",   "title",
          "capitalize", "replace",  "find",  "count",   "join",
          "splitlines", "isdigit",  "isspace", "isalpha", "isalnum",
          "islower",    "isupper"};
      for (const char *m : strMethods)
        if (name == m)
          return method(obj, name);
    }
    if (obj.isSeq() && !name.empty() && isdigit((unsigned char)name[0]))
      return getItem(obj, Value::integer(atoll(name.c_str())), e);
    return Value::undefined(objectName(obj) + " has no attribute '" + name +
                            "'");
  }

  /// How jinja2 names an object in its messages (object_type_repr).
  static std::string objectName(const Value &v) {
    return v.kind == Value::None ? "'None'"
                                 : "'" + std::string(typeName(v)) + " object'";
  }

  static Value method(const Value &obj, const std::string &name) {
    Value m = Value::make(Value::Method);
    m.s = name;
    m.items = std::make_shared<List>(List{obj});
    return m;
  }

  static int64_t normIndex(int64_t k, int64_t n) { return k < 0 ? k + n : k; }

  static Value getItem(const Value &obj, const Value &key, const Expr &e) {
    if (obj.kind == Value::Undefined)
      undefinedUse(obj, e);
    if (obj.isMap()) {
      if (key.kind == Value::Str) {
        if (const Value *f = obj.field(key.s))
          return *f;
        return Value::undefined("'dict object' has no attribute '" + key.s +
                                "'");
      }
      return Value::undefined("'dict object' has no attribute " + repr(key));
    }
    if ((obj.isSeq() || obj.kind == Value::Str) &&
        (key.kind == Value::Int || key.kind == Value::Bool)) {
      int64_t k = key.kind == Value::Bool ? key.b : key.i;
      if (obj.kind == Value::Str) {
        std::vector<size_t> at = codePoints(obj.s);
        int64_t n = int64_t(at.size()) - 1, j = normIndex(k, n);
        if (j < 0 || j >= n)
          return Value::undefined("string index out of range");
        return Value::str(obj.s.substr(at[size_t(j)],
                                       at[size_t(j) + 1] - at[size_t(j)]));
      }
      int64_t n = int64_t(obj.items->size()), j = normIndex(k, n);
      if (j < 0 || j >= n)
        return Value::undefined(std::string(typeName(obj)) +
                                " object has no element " + std::to_string(k));
      return (*obj.items)[size_t(j)];
    }
    if (key.kind == Value::Str)
      return getAttr(obj, key.s, e);
    return Value::undefined(objectName(obj) + " has no attribute " +
                            repr(key));
  }

  /// Python's slice indices (PySlice_AdjustIndices).
  static std::vector<int64_t> sliceIndices(int64_t n, const Value *lo,
                                           const Value *hi, const Value *st,
                                           const Expr &e) {
    auto asInt = [&](const Value *v, int64_t dflt) -> int64_t {
      if (!v || v->kind == Value::None)
        return dflt;
      if (v->kind != Value::Int && v->kind != Value::Bool)
        fail(e.line, e.col, "slice indices must be integers or None");
      return v->kind == Value::Bool ? v->b : v->i;
    };
    int64_t step = asInt(st, 1);
    if (step == 0)
      fail(e.line, e.col, "slice step cannot be zero");
    int64_t start, stop;
    if (step > 0) {
      start = asInt(lo, 0);
      stop = asInt(hi, n);
      start = start < 0 ? std::max<int64_t>(start + n, 0) : std::min(start, n);
      stop = stop < 0 ? std::max<int64_t>(stop + n, 0) : std::min(stop, n);
    } else {
      start = asInt(lo, n - 1);
      stop = asInt(hi, -n - 1);
      start = start < 0 ? std::max<int64_t>(start + n, -1)
                        : std::min(start, n - 1);
      stop = stop < 0 ? std::max<int64_t>(stop + n, -1) : std::min(stop, n - 1);
    }
    // (Counted first: a step near 2^63 must not overflow the index.)
    std::vector<int64_t> idx;
    uint64_t ustep = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
    uint64_t span = step > 0 ? (stop > start ? uint64_t(stop - start) : 0)
                             : (start > stop ? uint64_t(start - stop) : 0);
    uint64_t count = span ? (span - 1) / ustep + 1 : 0;
    for (uint64_t k = 0; k < count; ++k)
      idx.push_back(step > 0 ? start + int64_t(k * ustep)
                             : start - int64_t(k * ustep));
    return idx;
  }

  Value evalSlice(const Expr &e, Scope &scope) {
    Value obj = eval(*e.kids[0], scope);
    Value parts[3];
    for (int k = 0; k < 3; ++k)
      parts[k] = e.kids[size_t(k) + 1] ? eval(*e.kids[size_t(k) + 1], scope)
                                       : Value::none();
    if (obj.kind == Value::Str) {
      std::vector<size_t> at = codePoints(obj.s);
      std::string r;
      for (int64_t k : sliceIndices(int64_t(at.size()) - 1, &parts[0],
                                    &parts[1], &parts[2], e))
        r += obj.s.substr(at[size_t(k)], at[size_t(k) + 1] - at[size_t(k)]);
      return Value::str(std::move(r));
    }
    if (obj.isSeq()) {
      List r;
      for (int64_t k : sliceIndices(int64_t(obj.items->size()), &parts[0],
                                    &parts[1], &parts[2], e))
        r.push_back((*obj.items)[size_t(k)]);
      return Value::list(std::move(r), obj.kind);
    }
    if (obj.kind == Value::Undefined)
      undefinedUse(obj, e);
    fail(e.line, e.col,
         std::string("'") + typeName(obj) + "' object is not subscriptable");
  }

  /// str.strip(chars): whitespace, or the code points of `chars`.
  static std::string stripChars(const std::string &s, const Value *chars,
                                bool left, bool right) {
    std::vector<uint32_t> set;
    bool spaces = !chars || chars->kind == Value::None;
    if (!spaces)
      for (size_t k = 0; k < chars->s.size();) {
        uint32_t cp = uint8_t(chars->s[k]);
        size_t n = decodeUtf8(chars->s, k, cp);
        set.push_back(n ? cp : uint8_t(chars->s[k]));
        k += n ? n : 1;
      }
    // The length of the code point to strip at s[k] (0: keep it).
    auto stripAt = [&](size_t k) -> size_t {
      uint32_t cp;
      size_t n = decodeUtf8(s, k, cp);
      if (!n)
        return 0;
      return (spaces ? isPySpace(cp)
                     : std::find(set.begin(), set.end(), cp) != set.end())
                 ? n
                 : 0;
    };
    size_t b = 0, e = s.size();
    if (left)
      while (size_t n = b < e ? stripAt(b) : 0)
        b += n;
    if (right)
      while (e > b) {
        size_t k = e - 1; // the last code point's first byte
        while (k > b && (uint8_t(s[k]) & 0xC0) == 0x80)
          --k;
        size_t n = stripAt(k);
        if (!n || k + n != e)
          break;
        e = k;
      }
    return s.substr(b, e - b);
  }

  /// str.split(sep, maxsplit): on runs of whitespace where sep is None,
  /// the remainder after maxsplit parts kept as it is but for its leading
  /// whitespace.
  static List split(const std::string &s, const Value *sep, int64_t max,
                    const Expr &e) {
    List parts;
    auto add = [&](std::string part) {
      if (parts.size() >= kMaxItems)
        fail(e.line, e.col, "split: more than 2^20 parts");
      parts.push_back(Value::str(std::move(part)));
    };
    if (!sep || sep->kind == Value::None) {
      size_t k = 0;
      while (k < s.size()) {
        while (size_t n = spaceAt(s, k))
          k += n;
        if (k >= s.size())
          break;
        if (max >= 0 && int64_t(parts.size()) == max) {
          add(s.substr(k));
          break;
        }
        size_t j = k;
        while (j < s.size() && !spaceAt(s, j))
          ++j;
        add(s.substr(k, j - k));
        k = j;
      }
      return parts;
    }
    if (sep->kind != Value::Str)
      fail(e.line, e.col, "split: the separator must be a string");
    if (sep->s.empty())
      fail(e.line, e.col, "split: empty separator");
    size_t k = 0;
    for (;;) {
      size_t j = s.find(sep->s, k);
      if (j == std::string::npos ||
          (max >= 0 && int64_t(parts.size()) == max)) {
        add(s.substr(k));
        return parts;
      }
      add(s.substr(k, j - k));
      k = j + sep->s.size();
    }
  }

  /// str.islower() (`lower`) or str.isupper(): a cased character, and
  /// none of the other case (ASCII letters).
  static bool cased(const std::string &s, bool lower) {
    bool any = std::any_of(s.begin(), s.end(),
                           [](char c) { return isalpha(uint8_t(c)); });
    return any && caseMap(s, lower ? 1 : 0) == s;
  }

  static std::string caseMap(const std::string &s, int mode) {
    // mode 0 upper, 1 lower, 2 title, 3 capitalize (ASCII letters; the
    // rest as they are).
    std::string r = s;
    bool prevLetter = false;
    for (size_t k = 0; k < r.size(); ++k) {
      unsigned char c = uint8_t(r[k]);
      bool letter = isalpha(c);
      if (mode == 0)
        r[k] = char(toupper(c));
      else if (mode == 1)
        r[k] = char(tolower(c));
      else if (mode == 2)
        r[k] = char(prevLetter ? tolower(c) : toupper(c));
      else
        r[k] = char(k == 0 ? toupper(c) : tolower(c));
      prevLetter = letter || (c >= 0x80);
    }
    return r;
  }

  struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;
    const Value *get(size_t k, const char *name) const {
      if (k < pos.size())
        return &pos[k];
      for (const auto &[n, v] : kw)
        if (n == name)
          return &v;
      return nullptr;
    }
  };

  Args evalArgs(const Expr &e, Scope &scope, size_t first) {
    Args a;
    for (size_t k = first; k < e.kids.size(); ++k) {
      Value v = eval(*e.kids[k], scope);
      if (e.names[k].empty())
        a.pos.push_back(std::move(v));
      else
        a.kw.emplace_back(e.names[k], std::move(v));
    }
    return a;
  }

  static const Value &wantValue(const Value *v, const Expr &e,
                                const std::string &what) {
    if (!v)
      fail(e.line, e.col, what + ": an argument is missing");
    return *v;
  }

  /// Macro calls open at once: a macro that calls itself without end
  /// stops here, as Python's recursion limit stops jinja2's.
  int calls = 0;
  static constexpr int kMaxCalls = 100;

  /// A macro's text for arguments `a`, as jinja2 binds them: positional,
  /// then keyword for the parameters left; the rest a missing one's
  /// default (evaluated in the macro's scope, after the parameters before
  /// it), or undefined; extra positional arguments in `varargs` and the
  /// other keyword ones (a positional parameter's name too) in `kwargs`
  /// where the body names them, else an error.
  Value callMacro(const Value &m, const Args &a, const Expr &e) {
    const Node &def = *m.macro;
    const std::string what = "macro '" + def.text + "'";
    if (++calls > kMaxCalls)
      fail(e.line, e.col, "maximum recursion depth exceeded: " + what +
                              " called more than " +
                              std::to_string(kMaxCalls) + " deep");
    Scope s{top, {}};
    size_t params = def.targets.size();
    if (a.pos.size() > params && !def.varargs)
      fail(e.line, e.col, what + " takes not more than " +
                              std::to_string(params) + " argument(s)");
    std::vector<const Value *> given(params, nullptr);
    for (size_t k = 0; k < std::min(params, a.pos.size()); ++k)
      given[k] = &a.pos[k];
    Fields rest;
    for (const auto &[name, v] : a.kw) {
      auto at = std::find(def.targets.begin(), def.targets.end(), name);
      size_t k = size_t(at - def.targets.begin());
      if (at != def.targets.end() && k >= a.pos.size()) {
        given[k] = &v;
        continue;
      }
      if (!def.kwargs)
        fail(e.line, e.col, what + " takes no keyword argument '" + name +
                                "'");
      rest.emplace_back(name, v);
    }
    for (size_t k = 0; k < params; ++k)
      s.vars[def.targets[k]] =
          given[k]    ? *given[k]
          : def.conds[k] ? eval(*def.conds[k], s)
                      : Value::undefined("parameter '" + def.targets[k] +
                                         "' was not provided");
    if (def.varargs)
      s.vars["varargs"] = Value::list(
          a.pos.size() > params ? List(a.pos.begin() + long(params), a.pos.end())
                                : List(),
          Value::TupleV);
    if (def.kwargs)
      s.vars["kwargs"] = Value::dict(std::move(rest));
    std::string text;
    if (capture(*def.branches[0], s, text) != Flow::Normal)
      fail(def.line, def.col, "'break' or 'continue' outside a loop");
    --calls;
    return Value::str(std::move(text));
  }

  static const Value &wantStr(const Value *v, const Expr &e, const char *what) {
    if (!v || v->kind != Value::Str)
      fail(e.line, e.col, std::string(what) + " must be a string");
    return *v;
  }

  Value callMethod(const Value &m, const Args &a, const Expr &e) {
    const Value &self = (*m.items)[0];
    const std::string &n = m.s;
    if (self.kind == Value::DictV) {
      if (n == "items") {
        List r;
        for (const auto &[k, v] : *self.fields)
          r.push_back(Value::list({Value::str(k), v}, Value::TupleV));
        return Value::list(std::move(r));
      }
      if (n == "keys" || n == "values") {
        List r;
        for (const auto &[k, v] : *self.fields)
          r.push_back(n == "keys" ? Value::str(k) : v);
        return Value::list(std::move(r));
      }
      // get
      const Value *key = a.get(0, "key");
      if (key && key->kind == Value::Str)
        if (const Value *f = self.field(key->s))
          return *f;
      const Value *d = a.get(1, "default");
      return d ? *d : Value::none();
    }
    const std::string &s = self.s;
    if (n == "strip" || n == "lstrip" || n == "rstrip")
      return Value::str(stripChars(s, a.get(0, "chars"), n != "rstrip",
                                   n != "lstrip"));
    if (n == "split" || n == "rsplit") {
      const Value *mx = a.get(1, "maxsplit");
      int64_t max = mx && mx->kind == Value::Int ? mx->i : -1;
      if (n == "rsplit" && max >= 0)
        fail(e.line, e.col, "rsplit with maxsplit is not supported");
      return Value::list(split(s, a.get(0, "sep"), max, e));
    }
    if (n == "startswith" || n == "endswith") {
      const Value *p = a.get(0, "prefix");
      List options;
      if (p && p->isSeq())
        options = *p->items;
      else if (p)
        options.push_back(*p);
      for (const Value &o : options) {
        const std::string &x = wantStr(&o, e, (n + ": the argument").c_str()).s;
        if (x.size() <= s.size() &&
            (n == "startswith" ? s.compare(0, x.size(), x) == 0
                               : s.compare(s.size() - x.size(), x.size(), x) ==
                                     0))
          return Value::boolean(true);
      }
      if (options.empty())
        fail(e.line, e.col, n + " takes one argument");
      return Value::boolean(false);
    }
    if (n == "upper" || n == "lower" || n == "title" || n == "capitalize")
      return Value::str(caseMap(s, n == "upper"   ? 0
                                   : n == "lower" ? 1
                                   : n == "title" ? 2
                                                  : 3));
    if (n == "replace") {
      const std::string &from = wantStr(a.get(0, "old"), e, "replace: old").s;
      const std::string &to = wantStr(a.get(1, "new"), e, "replace: new").s;
      const Value *cnt = a.get(2, "count");
      return Value::str(replace(s, from, to,
                                cnt && cnt->kind == Value::Int ? cnt->i : -1,
                                e));
    }
    if (n == "find") {
      size_t at = s.find(wantStr(a.get(0, "sub"), e, "find: the argument").s);
      if (at == std::string::npos)
        return Value::integer(-1);
      return Value::integer(int64_t(codePoints(s.substr(0, at)).size()) - 1);
    }
    if (n == "count") {
      const std::string &x = wantStr(a.get(0, "sub"), e, "count: the argument").s;
      int64_t c = 0;
      if (x.empty())
        return Value::integer(int64_t(codePoints(s).size()));
      for (size_t at = s.find(x); at != std::string::npos;
           at = s.find(x, at + x.size()))
        ++c;
      return Value::integer(c);
    }
    if (n == "join") {
      const Value *items = a.get(0, "iterable");
      if (!items)
        fail(e.line, e.col, "join takes one argument");
      std::string r;
      List list = iterate(*items, e);
      for (size_t k = 0; k < list.size(); ++k) {
        if (k)
          r += s;
        r += wantStr(&list[k], e, "join: each item").s;
        if (r.size() > kMaxOutput)
          fail(e.line, e.col, "join: the text passes 64 MiB");
      }
      return Value::str(std::move(r));
    }
    if (n == "splitlines") {
      List r;
      size_t k = 0;
      while (k < s.size()) {
        size_t j = s.find_first_of("\r\n", k);
        if (j == std::string::npos) {
          r.push_back(Value::str(s.substr(k)));
          break;
        }
        r.push_back(Value::str(s.substr(k, j - k)));
        k = j + (s[j] == '\r' && j + 1 < s.size() && s[j + 1] == '\n' ? 2 : 1);
      }
      return Value::list(std::move(r));
    }
    // is*: ASCII classes.
    auto all = [&](int (*f)(int)) {
      return Value::boolean(!s.empty() &&
                            std::all_of(s.begin(), s.end(), [&](char c) {
                              return f(uint8_t(c)) != 0;
                            }));
    };
    if (n == "isdigit")
      return all(isdigit);
    if (n == "isspace")
      return all(isspace);
    if (n == "isalpha")
      return all(isalpha);
    if (n == "isalnum")
      return all(isalnum);
    return Value::boolean(cased(s, n == "islower")); // islower, isupper
  }

  static std::string replace(const std::string &s, const std::string &from,
                             const std::string &to, int64_t count,
                             const Expr &e) {
    if (from.empty())
      fail(e.line, e.col, "replace: an empty string to replace");
    std::string r;
    size_t k = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
      size_t j = s.find(from, k);
      if (j == std::string::npos)
        break;
      r += s.substr(k, j - k) + to;
      k = j + from.size();
      if (r.size() > kMaxOutput)
        fail(e.line, e.col, "replace: the result passes 64 MiB");
    }
    return r + s.substr(k);
  }

  Value callFunction(const Value &f, const Args &a, const Expr &e) {
    const std::string &n = f.s;
    if (n == "raise_exception") {
      const Value *msg = a.get(0, "message");
      fail(e.line, e.col,
           "the template raised an error: " + (msg ? toStr(*msg) : ""));
    }
    if (n == "namespace" || n == "dict") {
      Fields fields;
      if (!a.pos.empty())
        fail(e.line, e.col, n + "() takes keyword arguments only here");
      for (const auto &[k, v] : a.kw)
        fields.emplace_back(k, v);
      return Value::dict(std::move(fields),
                         n == "namespace" ? Value::Namespace : Value::DictV);
    }
    if (n == "range") {
      int64_t lo = 0, hi = 0, step = 1;
      for (const Value &v : a.pos)
        if (v.kind != Value::Int)
          fail(e.line, e.col, "range() takes integers");
      if (a.pos.size() == 1)
        hi = a.pos[0].i;
      else if (a.pos.size() >= 2)
        lo = a.pos[0].i, hi = a.pos[1].i;
      if (a.pos.size() == 3)
        step = a.pos[2].i;
      if (a.pos.empty() || a.pos.size() > 3 || step == 0)
        fail(e.line, e.col, "range() takes 1 to 3 integers, step not 0");
      // Its length first (in unsigned arithmetic: no step overflows).
      uint64_t span = step > 0 ? (hi > lo ? uint64_t(hi) - uint64_t(lo) : 0)
                               : (lo > hi ? uint64_t(lo) - uint64_t(hi) : 0);
      uint64_t ustep = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
      uint64_t count = span ? (span - 1) / ustep + 1 : 0;
      if (count > uint64_t(kMaxRange))
        fail(e.line, e.col, "Range too big. The sandbox blocks ranges "
                            "larger than MAX_RANGE (100000).");
      List r;
      for (uint64_t k = 0; k < count; ++k)
        r.push_back(Value::integer(
            int64_t(step > 0 ? uint64_t(lo) + k * ustep
                             : uint64_t(lo) - k * ustep)));
      return Value::list(std::move(r));
    }
    // strftime_now(format): the local time now, as transformers gives it.
    const Value &fmt = wantStr(a.get(0, "format"), e, "strftime_now: format");
    time_t now = time(nullptr);
    struct tm tmv;
    localtime_r(&now, &tmv);
    char buf[256];
    size_t len = strftime(buf, sizeof buf, fmt.s.c_str(), &tmv);
    return Value::str(std::string(buf, len));
  }

  /// jinja2's attribute path ("function.name", "a.0"): each part an item
  /// (a number an index), as its make_attrgetter.
  static Value attrPath(const Value &item, const std::string &path,
                        const Expr &e) {
    Value v = item;
    size_t k = 0;
    for (;;) {
      size_t dot = path.find('.', k);
      std::string part = path.substr(k, dot == std::string::npos
                                            ? std::string::npos
                                            : dot - k);
      bool digits = !part.empty() &&
                    std::all_of(part.begin(), part.end(), [](char c) {
                      return c >= '0' && c <= '9';
                    });
      v = digits && part.size() < 18
              ? getItem(v, Value::integer(atoll(part.c_str())), e)
              : getItem(v, Value::str(part), e);
      if (dot == std::string::npos)
        return v;
      k = dot + 1;
    }
  }

  /// Python's int() and float() of a string: whitespace around, '_'
  /// between digits; false where it is not one.
  static bool parseNumber(const std::string &text, bool integer, double &f,
                          int64_t &i) {
    std::string t = stripChars(text, nullptr, true, true), d;
    for (size_t k = 0; k < t.size(); ++k) {
      if (t[k] != '_') {
        d += t[k];
        continue;
      }
      if (!k || k + 1 >= t.size() || !isdigit(uint8_t(t[k - 1])) ||
          !isdigit(uint8_t(t[k + 1])))
        return false;
    }
    if (d.empty() || d.find_first_of("xXpP") != std::string::npos)
      return false; // (strtod reads hex; Python's int and float do not)
    char *end;
    errno = 0;
    if (integer) {
      long long v = strtoll(d.c_str(), &end, 10);
      i = v;
      return !*end && errno != ERANGE;
    }
    f = strtod(d.c_str(), &end);
    return !*end;
  }

  /// jinja2's title filter: each run after '-', whitespace, '(', '{', '['
  /// or '<' capitalized, the rest lowered (not str.title()).
  static std::string titleFilter(const std::string &s) {
    std::string r = s;
    bool start = true;
    for (size_t k = 0; k < r.size(); ++k) {
      unsigned char c = uint8_t(r[k]);
      bool sep = strchr("-({[<", c) != nullptr || spaceAt(r, k);
      if (sep) {
        start = true;
        continue;
      }
      if ((c & 0xC0) == 0x80)
        continue; // (a character's later bytes)
      r[k] = char(start ? toupper(c) : tolower(c));
      start = false;
    }
    return r;
  }

  Value applyFilter(const Expr &e, Scope &scope) {
    Value v = eval(*e.kids[0], scope);
    return filter(e.name, v, evalArgs(e, scope, 1), e);
  }

  Value filter(const std::string &n, Value v, const Args &a, const Expr &e) {
    // jinja2's soft_str: an undefined value is "".
    auto text = [&]() -> const std::string & {
      if (v.kind != Value::Str)
        v = Value::str(toStr(v));
      return v.s;
    };
    if (n == "trim")
      return Value::str(stripChars(text(), a.get(0, "chars"), true, true));
    if (n == "length" || n == "count") {
      if (v.kind == Value::Str)
        return Value::integer(int64_t(codePoints(v.s).size()) - 1);
      if (v.isSeq())
        return Value::integer(int64_t(v.items->size()));
      if (v.isMap())
        return Value::integer(int64_t(v.fields->size()));
      if (v.kind == Value::Undefined)
        return Value::integer(0);
      fail(e.line, e.col,
           std::string("object of type '") + typeName(v) + "' has no len()");
    }
    if (n == "tojson") {
      // transformers' tojson(x, ensure_ascii, indent, separators,
      // sort_keys).
      JSONStyle style;
      if (const Value *x = a.get(0, "ensure_ascii"))
        style.ascii = truthy(*x);
      if (const Value *x = a.get(1, "indent"); x && x->kind != Value::None) {
        if (x->kind != Value::Int)
          fail(e.line, e.col, "tojson: indent must be an integer here");
        style.indent = int(std::clamp<int64_t>(x->i, 0, 64));
        style.itemSep = ",";
      }
      if (const Value *x = a.get(2, "separators");
          x && x->kind != Value::None) {
        if (!x->isSeq() || x->items->size() != 2 ||
            (*x->items)[0].kind != Value::Str ||
            (*x->items)[1].kind != Value::Str)
          fail(e.line, e.col, "tojson: separators must be two strings");
        style.itemSep = (*x->items)[0].s;
        style.keySep = (*x->items)[1].s;
      }
      if (const Value *x = a.get(3, "sort_keys"))
        style.sortKeys = truthy(*x);
      for (const auto &[k, x] : a.kw)
        if (k != "ensure_ascii" && k != "indent" && k != "separators" &&
            k != "sort_keys")
          fail(e.line, e.col, "tojson: unknown argument '" + k + "'");
      if (v.kind == Value::Undefined)
        fail(e.line, e.col,
             "Object of type Undefined is not JSON serializable");
      std::string r;
      toJSON(v, style, 0, r);
      return Value::str(std::move(r));
    }
    if (n == "upper" || n == "lower" || n == "capitalize")
      return Value::str(caseMap(text(), n == "upper" ? 0 : n == "lower" ? 1
                                                                        : 3));
    if (n == "title")
      return Value::str(titleFilter(text()));
    if (n == "string")
      return Value::str(toStr(v));
    if (n == "safe")
      return v;
    if (n == "default" || n == "d") {
      const Value *dflt = a.get(0, "default_value");
      const Value *boolean = a.get(1, "boolean");
      bool useDefault = v.kind == Value::Undefined ||
                        (boolean && truthy(*boolean) && !truthy(v));
      return useDefault ? (dflt ? *dflt : Value::str("")) : v;
    }
    if (n == "first" || n == "last") {
      List items = iterate(v, e);
      if (items.empty())
        return Value::undefined("No " + n + " item, sequence was empty.");
      return n == "first" ? items.front() : items.back();
    }
    if (n == "list")
      return Value::list(iterate(v, e));
    if (n == "reverse") {
      if (v.kind == Value::Str) {
        std::vector<size_t> at = codePoints(v.s);
        std::string r;
        for (size_t k = at.size() - 1; k > 0; --k)
          r += v.s.substr(at[k - 1], at[k] - at[k - 1]);
        return Value::str(std::move(r));
      }
      List items = iterate(v, e);
      std::reverse(items.begin(), items.end());
      return Value::list(std::move(items));
    }
    if (n == "join") {
      const Value *sep = a.get(0, "d");
      const Value *attr = a.get(1, "attribute");
      std::string r;
      List items = iterate(v, e);
      for (size_t k = 0; k < items.size(); ++k) {
        if (k && sep)
          appendStr(r, *sep);
        appendStr(r, attr ? attrPath(items[k], toStr(*attr), e) : items[k]);
        if (r.size() > kMaxOutput)
          fail(e.line, e.col, "join: the text passes 64 MiB");
      }
      return Value::str(std::move(r));
    }
    if (n == "int" || n == "float") {
      if (v.kind == Value::Undefined)
        undefinedUse(v, e);
      const Value *d = a.get(0, "default");
      Value dflt = d ? *d : n == "int" ? Value::integer(0) : Value::number(0);
      double f = 0;
      int64_t i = 0;
      if (v.kind == Value::Int || v.kind == Value::Bool)
        return n == "int" ? Value::integer(v.kind == Value::Bool ? v.b : v.i)
                          : Value::number(v.asDouble());
      if (v.kind == Value::Float)
        f = v.f;
      else if (v.kind == Value::Str && n == "int" &&
               parseNumber(v.s, true, f, i))
        return Value::integer(i);
      else if (v.kind != Value::Str || !parseNumber(v.s, false, f, i))
        return dflt;
      if (n == "float")
        return Value::number(f);
      if (std::isnan(f))
        return dflt;
      if (!(std::fabs(f) < 9.2e18))
        fail(e.line, e.col, "int: " + floatRepr(f) + " past 64 bits");
      return Value::integer(int64_t(f));
    }
    if (n == "abs") {
      if (v.kind == Value::Int && v.i != INT64_MIN)
        return Value::integer(v.i < 0 ? -v.i : v.i);
      if (v.kind == Value::Int)
        fail(e.line, e.col, "integer overflow");
      if (v.kind == Value::Bool)
        return Value::integer(v.b);
      if (v.kind == Value::Float)
        return Value::number(std::fabs(v.f));
      fail(e.line, e.col, std::string("bad operand type for abs(): '") +
                              typeName(v) + "'");
    }
    if (n == "replace") {
      const std::string &s = text();
      const Value *count = a.get(2, "count");
      return Value::str(replace(s, toStr(wantValue(a.get(0, "old"), e, n)),
                                toStr(wantValue(a.get(1, "new"), e, n)),
                                count && count->kind == Value::Int ? count->i
                                                                   : -1,
                                e));
    }
    if (n == "items") {
      List r;
      if (v.kind == Value::Undefined)
        return Value::list(std::move(r));
      if (!v.isMap())
        fail(e.line, e.col, "items: not a mapping");
      for (const auto &[k, x] : *v.fields)
        r.push_back(Value::list({Value::str(k), x}, Value::TupleV));
      return Value::list(std::move(r));
    }
    if (n == "selectattr" || n == "rejectattr" || n == "select" ||
        n == "reject") {
      // (select/reject test the items themselves, *attr an attribute.)
      bool attr = n.size() > 6;
      size_t first = attr ? 1 : 0;
      if (attr && (a.pos.empty() || a.pos[0].kind != Value::Str))
        fail(e.line, e.col, n + " takes an attribute name");
      if (a.pos.size() > first && a.pos[first].kind != Value::Str)
        fail(e.line, e.col, n + ": the test's name must be a string");
      if (a.pos.size() > first &&
          !known(kTests, std::size(kTests), a.pos[first].s))
        fail(e.line, e.col, "no test named '" + a.pos[first].s + "'");
      List r;
      for (const Value &item : iterate(v, e)) {
        Value x = attr ? attrPath(item, a.pos[0].s, e) : item;
        bool pass = a.pos.size() > first
                        ? test(a.pos[first].s, x,
                               std::vector<Value>(a.pos.begin() + long(first) +
                                                      1,
                                                  a.pos.end()),
                               e)
                        : truthy(x);
        if (pass == (n == "selectattr" || n == "select"))
          r.push_back(item);
      }
      return Value::list(std::move(r));
    }
    if (n == "map") {
      List r;
      if (const Value *attr = a.get(99, "attribute")) {
        const Value *dflt = a.get(99, "default");
        for (const Value &item : iterate(v, e)) {
          Value x = attrPath(item, toStr(*attr), e);
          r.push_back(x.kind == Value::Undefined && dflt ? *dflt : x);
        }
        return Value::list(std::move(r));
      }
      // map('filter', args...): the filter on each item.
      if (a.pos.empty() || a.pos[0].kind != Value::Str)
        fail(e.line, e.col, "map takes attribute= or a filter's name");
      if (!known(kFilters, std::size(kFilters), a.pos[0].s))
        fail(e.line, e.col, "no filter named '" + a.pos[0].s + "'");
      Args rest;
      rest.pos.assign(a.pos.begin() + 1, a.pos.end());
      rest.kw = a.kw;
      for (const Value &item : iterate(v, e))
        r.push_back(filter(a.pos[0].s, item, rest, e));
      return Value::list(std::move(r));
    }
    fail(e.line, e.col, "unknown filter '" + n + "'");
  }

  static bool test(const std::string &n, const Value &v,
                   const std::vector<Value> &args, const Expr &e) {
    auto arg = [&]() -> const Value & {
      if (args.empty())
        fail(e.line, e.col, "the test '" + n + "' takes an argument");
      return args[0];
    };
    if (n == "defined")
      return v.kind != Value::Undefined;
    if (n == "undefined")
      return v.kind == Value::Undefined;
    if (n == "none")
      return v.kind == Value::None;
    if (n == "string")
      return v.kind == Value::Str;
    if (n == "number") // (a bool is a Python number)
      return v.isNumber();
    if (n == "integer")
      return v.kind == Value::Int;
    if (n == "float")
      return v.kind == Value::Float;
    if (n == "boolean")
      return v.kind == Value::Bool;
    if (n == "true")
      return v.kind == Value::Bool && v.b;
    if (n == "false")
      return v.kind == Value::Bool && !v.b;
    if (n == "mapping")
      return v.kind == Value::DictV;
    if (n == "iterable")
      return v.isSeq() || v.isMap() || v.kind == Value::Str ||
             v.kind == Value::Undefined;
    if (n == "sequence")
      return v.isSeq() || v.kind == Value::DictV || v.kind == Value::Str;
    if (n == "callable")
      return v.kind == Value::Function || v.kind == Value::Method ||
             v.kind == Value::Macro;
    if ((n == "even" || n == "odd" || n == "divisibleby") &&
        v.kind == Value::Undefined)
      undefinedUse(v, e);
    if (n == "even" || n == "odd") {
      if (v.kind != Value::Int)
        fail(e.line, e.col, "the test '" + n + "' takes an integer");
      return (v.i % 2 == 0) == (n == "even");
    }
    if (n == "divisibleby") {
      const Value &d = arg();
      if (v.kind != Value::Int || d.kind != Value::Int || d.i == 0)
        fail(e.line, e.col, "divisibleby takes non-zero integers");
      return d.i == -1 || v.i % d.i == 0; // (INT64_MIN % -1 traps)
    }
    if (n == "eq" || n == "equalto" || n == "==")
      return equal(v, arg());
    if (n == "ne" || n == "!=")
      return !equal(v, arg());
    if (n == "sameas")
      return equal(v, arg()) && v.kind == arg().kind;
    if (n == "lt" || n == "gt" || n == "le" || n == "ge" || n == "<" ||
        n == ">" || n == "<=" || n == ">=") {
      static const std::map<std::string, std::string> ops = {
          {"lt", "<"}, {"gt", ">"}, {"le", "<="}, {"ge", ">="}};
      auto it = ops.find(n);
      return compareOp(it == ops.end() ? n : it->second, v, arg(), e);
    }
    if (n == "in")
      return contains(arg(), v, e);
    if (n == "lower" || n == "upper") // str(v).islower(), .isupper()
      return cased(toStr(v), n == "lower");
    fail(e.line, e.col, "unknown test '" + n + "'");
  }

  static bool contains(const Value &hay, const Value &needle, const Expr &e) {
    if (hay.kind == Value::Str) {
      if (needle.kind != Value::Str)
        fail(e.line, e.col,
             "'in <string>' requires string as left operand, not " +
                 std::string(typeName(needle)));
      return hay.s.find(needle.s) != std::string::npos;
    }
    if (hay.isSeq())
      return std::any_of(hay.items->begin(), hay.items->end(),
                         [&](const Value &x) { return equal(x, needle); });
    if (hay.isMap())
      return needle.kind == Value::Str && hay.field(needle.s);
    if (hay.kind == Value::Undefined) // (it iterates as empty)
      return false;
    fail(e.line, e.col, std::string("argument of type '") + typeName(hay) +
                            "' is not iterable");
  }

  static bool compareOp(const std::string &op, const Value &a, const Value &b,
                        const Expr &e) {
    if (op == "==")
      return equal(a, b);
    if (op == "!=")
      return !equal(a, b);
    int c;
    if (a.isNumber() && b.isNumber()) {
      double x = a.asDouble(), y = b.asDouble();
      if (a.kind != Value::Float && b.kind != Value::Float) {
        int64_t p = a.kind == Value::Bool ? a.b : a.i;
        int64_t q = b.kind == Value::Bool ? b.b : b.i;
        c = p < q ? -1 : p > q;
      } else {
        if (std::isnan(x) || std::isnan(y))
          return false;
        c = x < y ? -1 : x > y;
      }
    } else if (a.kind == Value::Str && b.kind == Value::Str) {
      c = a.s.compare(b.s); // UTF-8 byte order is code point order
      c = c < 0 ? -1 : c > 0;
    } else {
      if (a.kind == Value::Undefined)
        undefinedUse(a, e);
      if (b.kind == Value::Undefined)
        undefinedUse(b, e);
      fail(e.line, e.col, "'" + op + "' not supported between instances of '" +
                              typeName(a) + "' and '" + typeName(b) + "'");
    }
    return op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
  }

  static Value arith(const std::string &op, const Value &a, const Value &b,
                     const Expr &e) {
    if (op == "~") {
      std::string r;
      appendStr(r, a);
      appendStr(r, b);
      if (r.size() > kMaxOutput)
        fail(e.line, e.col, "a string past 64 MiB");
      return Value::str(std::move(r));
    }
    if (a.kind == Value::Undefined)
      undefinedUse(a, e);
    if (b.kind == Value::Undefined)
      undefinedUse(b, e);
    auto bad = [&]() {
      fail(e.line, e.col, "unsupported operand type(s) for " + op + ": '" +
                              typeName(a) + "' and '" + typeName(b) + "'");
    };
    if (op == "+") {
      if (a.kind == Value::Str && b.kind == Value::Str) {
        if (a.s.size() + b.s.size() > kMaxOutput)
          fail(e.line, e.col, "a string past 64 MiB");
        return Value::str(a.s + b.s);
      }
      if (a.kind == Value::Str || b.kind == Value::Str) {
        if (a.kind == Value::Str)
          fail(e.line, e.col, std::string("can only concatenate str (not \"") +
                                  typeName(b) + "\") to str");
        bad();
      }
      if (a.isSeq() && b.isSeq() && a.kind == b.kind) {
        List r = *a.items;
        r.insert(r.end(), b.items->begin(), b.items->end());
        return Value::list(std::move(r), a.kind);
      }
    }
    if (op == "*" && ((a.kind == Value::Str && b.kind == Value::Int) ||
                      (a.kind == Value::Int && b.kind == Value::Str))) {
      const Value &s = a.kind == Value::Str ? a : b;
      int64_t n = a.kind == Value::Int ? a.i : b.i;
      if (n <= 0)
        return Value::str("");
      if (s.s.size() * size_t(n) > kMaxOutput || n > int64_t(kMaxOutput))
        fail(e.line, e.col, "a string past 64 MiB");
      std::string r;
      for (int64_t k = 0; k < n; ++k)
        r += s.s;
      return Value::str(std::move(r));
    }
    if (!a.isNumber() || !b.isNumber())
      bad();
    bool ints = a.kind != Value::Float && b.kind != Value::Float;
    int64_t p = a.kind == Value::Bool ? a.b : a.i;
    int64_t q = b.kind == Value::Bool ? b.b : b.i;
    double x = a.asDouble(), y = b.asDouble();
    auto overflow = [&]() { fail(e.line, e.col, "integer overflow"); };
    if (op == "+" || op == "-" || op == "*") {
      if (!ints)
        return Value::number(op == "+" ? x + y : op == "-" ? x - y : x * y);
      int64_t r;
      if (op == "+" ? __builtin_add_overflow(p, q, &r)
          : op == "-" ? __builtin_sub_overflow(p, q, &r)
                      : __builtin_mul_overflow(p, q, &r))
        overflow();
      return Value::integer(r);
    }
    if (op == "/") {
      if (y == 0)
        fail(e.line, e.col, "division by zero");
      return Value::number(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0)
        fail(e.line, e.col, "integer division or modulo by zero");
      if (ints) {
        if (p == INT64_MIN && q == -1) { // (the one quotient past 64 bits)
          if (op == "%")
            return Value::integer(0);
          overflow();
        }
        int64_t d = p / q, m = p % q;
        if (m != 0 && ((m < 0) != (q < 0))) {
          d -= 1;
          m += q;
        }
        return Value::integer(op == "//" ? d : m);
      }
      double d = std::floor(x / y), m = x - d * y;
      return Value::number(op == "//" ? d : m);
    }
    // ** (by squaring: an exponent of 2^40 takes 40 steps)
    if (ints && q >= 0) {
      int64_t r = 1, base = p;
      for (int64_t k = q; k; k >>= 1) {
        if ((k & 1) && __builtin_mul_overflow(r, base, &r))
          overflow();
        // (Once base * base overflows, so does any higher power left.)
        if (k > 1 && __builtin_mul_overflow(base, base, &base))
          overflow();
      }
      return Value::integer(r);
    }
    return Value::number(std::pow(x, y));
  }

public:
  /// An error a value raised without a place (a list too long, a value
  /// nested too deep) is placed at the innermost expression.
  Value eval(const Expr &e, Scope &scope) {
    try {
      return evalHere(e, scope);
    } catch (TemplateError &err) {
      if (!err.line) {
        err.line = e.line;
        err.col = e.col;
      }
      throw;
    }
  }

  Value evalHere(const Expr &e, Scope &scope) {
    switch (e.kind) {
    case Expr::Literal:
      return e.value;
    case Expr::Name: {
      if (const Value *v = scope.find(e.name))
        return *v;
      static const char *functions[] = {"raise_exception", "namespace",
                                        "range", "dict", "strftime_now"};
      for (const char *f : functions)
        if (e.name == f) {
          Value v = Value::make(Value::Function);
          v.s = f;
          return v;
        }
      return Value::undefined("'" + e.name + "' is undefined");
    }
    case Expr::Attr:
      return getAttr(eval(*e.kids[0], scope), e.name, e);
    case Expr::Item:
      return getItem(eval(*e.kids[0], scope), eval(*e.kids[1], scope), e);
    case Expr::Slice:
      return evalSlice(e, scope);
    case Expr::Call: {
      Value f = eval(*e.kids[0], scope);
      Args a = evalArgs(e, scope, 1);
      if (f.kind == Value::Method)
        return callMethod(f, a, e);
      if (f.kind == Value::Function)
        return callFunction(f, a, e);
      if (f.kind == Value::Macro)
        return callMacro(f, a, e);
      if (f.kind == Value::Undefined)
        undefinedUse(f, e);
      fail(e.line, e.col,
           std::string("'") + typeName(f) + "' object is not callable");
    }
    case Expr::Filter:
      return applyFilter(e, scope);
    case Expr::Test: {
      Value v = eval(*e.kids[0], scope);
      Args a = evalArgs(e, scope, 1);
      return Value::boolean(test(e.name, v, a.pos, e) != e.negate);
    }
    case Expr::Not:
      return Value::boolean(!truthy(eval(*e.kids[0], scope)));
    case Expr::Neg:
    case Expr::Pos: {
      Value v = eval(*e.kids[0], scope);
      if (v.kind == Value::Undefined)
        undefinedUse(v, e);
      if (e.kind == Expr::Pos && v.isNumber())
        return v;
      if (v.kind == Value::Int && v.i != INT64_MIN)
        return Value::integer(-v.i);
      if (v.kind == Value::Bool)
        return Value::integer(-int64_t(v.b));
      if (v.kind == Value::Float)
        return Value::number(-v.f);
      fail(e.line, e.col, std::string("bad operand type for unary -: '") +
                              typeName(v) + "'");
    }
    case Expr::Binary:
      return arith(e.name, eval(*e.kids[0], scope), eval(*e.kids[1], scope),
                   e);
    case Expr::And: {
      Value a = eval(*e.kids[0], scope);
      return truthy(a) ? eval(*e.kids[1], scope) : a;
    }
    case Expr::Or: {
      Value a = eval(*e.kids[0], scope);
      return truthy(a) ? a : eval(*e.kids[1], scope);
    }
    case Expr::Compare: {
      Value a = eval(*e.kids[0], scope);
      for (size_t k = 0; k < e.names.size(); ++k) {
        Value b = eval(*e.kids[k + 1], scope);
        const std::string &op = e.names[k];
        bool r = op == "in"       ? contains(b, a, e)
                 : op == "not in" ? !contains(b, a, e)
                                  : compareOp(op, a, b, e);
        if (!r)
          return Value::boolean(false);
        a = std::move(b);
      }
      return Value::boolean(true);
    }
    case Expr::Cond:
      if (truthy(eval(*e.kids[0], scope)))
        return eval(*e.kids[1], scope);
      return e.kids[2] ? eval(*e.kids[2], scope)
                       : Value::undefined("the if expression had no else");
    case Expr::ListE:
    case Expr::TupleE: {
      List items;
      for (const auto &k : e.kids)
        items.push_back(eval(*k, scope));
      return Value::list(std::move(items),
                         e.kind == Expr::ListE ? Value::ListV : Value::TupleV);
    }
    case Expr::DictE: {
      Fields fields;
      for (size_t k = 0; k + 1 < e.kids.size(); k += 2) {
        Value key = eval(*e.kids[k], scope);
        if (key.kind != Value::Str)
          fail(e.line, e.col, "dict keys must be strings here");
        Value v = eval(*e.kids[k + 1], scope);
        auto it = std::find_if(fields.begin(), fields.end(),
                               [&](const auto &f) { return f.first == key.s; });
        if (it != fields.end())
          it->second = std::move(v);
        else
          fields.emplace_back(key.s, std::move(v));
      }
      return Value::dict(std::move(fields));
    }
    }
    return Value::none();
  }
};

std::string located(const std::string &name, const TemplateError &e) {
  return name + ":" + std::to_string(e.line) + ":" + std::to_string(e.col) +
         ": " + e.message;
}

} // namespace

bool ChatTemplate::checkJSON(const std::string &text, const std::string &what,
                             std::string &error) {
  try {
    JSONReader(text, what).document();
  } catch (const TemplateError &e) {
    error = e.message;
    return false;
  }
  return true;
}

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;

std::unique_ptr<ChatTemplate> ChatTemplate::parse(const std::string &source,
                                                  const std::string &name,
                                                  std::string &error) {
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  t->name = name;
  try {
    std::string text = normalizeNewlines(source);
    Lexer lexer(text);
    Parser parser(lexer.run());
    t->root = parser.parse();
  } catch (const TemplateError &e) {
    error = located(name, e);
    return nullptr;
  } catch (const std::exception &e) { // (std::bad_alloc)
    error = name + ": cannot parse the template: " + e.what();
    return nullptr;
  }
  return t;
}

bool ChatTemplate::render(
    const std::string &context,
    const std::vector<std::pair<std::string, std::string>> &defaults,
    std::string &out, std::string &error) const {
  Scope globals{nullptr, {}};
  for (const auto &[k, v] : defaults)
    globals.vars[k] = Value::str(v);
  Scope top{&globals, {}};
  Interpreter interp;
  interp.top = &top;
  try {
    Value vars = JSONReader(context, "the context JSON").document();
    if (vars.kind != Value::DictV)
      throw TemplateError{0, 0, "the context JSON must be an object"};
    for (auto &[k, v] : *vars.fields)
      globals.vars[k] = std::move(v);
    Flow f = interp.run(*root, top);
    if (f != Flow::Normal)
      throw TemplateError{root->line, root->col,
                          "'break' or 'continue' outside a loop"};
  } catch (const TemplateError &e) {
    error = e.line ? located(name, e) : e.message;
    return false;
  } catch (const std::exception &e) { // (std::bad_alloc)
    error = name + ": cannot render the template: " + e.what();
    return false;
  }
  out = std::move(interp.out);
  return true;
}

} // namespace arch
