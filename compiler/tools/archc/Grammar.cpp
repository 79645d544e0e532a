//===- Grammar.cpp - Grammars that constrain a reply's tokens -------------===//
//
// The GBNF parser, the matcher that walks a grammar's parses a byte at a
// time, the token mask over the vocabulary's trie, and JSON schemas as
// GBNF (docs/design.md "Constrained replies").
//
//===----------------------------------------------------------------------===//
#include "Grammar.h"
#include "ServeProtocol.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

using namespace arch::serve;
namespace json = llvm::json;

//===----------------------------------------------------------------------===//
// Parsing GBNF
//===----------------------------------------------------------------------===//

namespace {

/// The largest count a repetition `{m,n}` may give.
constexpr uint64_t kMaxRepeat = 10000;
/// The deepest groups nest (the parser recurses into each).
constexpr unsigned kMaxGroupDepth = 256;
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

/// A rule name's characters.
bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_';
}

using Sequence = std::vector<Grammar::Element>;
using Alternatives = std::vector<Sequence>;

/// A GBNF text read into rules (alternatives of element sequences), whose
/// ranges go straight into the grammar's.
class Parser {
public:
  Parser(llvm::StringRef text, Grammar &g, std::string &error)
      : text(text), g(g), error(error) {}

  bool parse();

private:
  bool fail(size_t at, const std::string &what) {
    if (!error.empty())
      return false;
    size_t line = 1, column = 1;
    for (size_t k = 0; k < at && k < text.size(); ++k)
      text[k] == '\n' ? (++line, column = 1) : ++column;
    error = "line " + std::to_string(line) + ", column " +
            std::to_string(column) + ": " + what;
    return false;
  }
  char peek(size_t ahead = 0) const {
    return pos + ahead < text.size() ? text[pos + ahead] : '\0';
  }
  bool atEnd() const { return pos >= text.size(); }
  /// Spaces, tabs and comments; newlines too where `newlines`.
  void skipSpace(bool newlines) {
    while (!atEnd()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos;
      } else if (c == '#') {
        while (!atEnd() && peek() != '\n')
          ++pos;
      } else {
        return;
      }
    }
  }
  uint32_t rule(const std::string &name, size_t at) {
    auto [it, added] = ids.try_emplace(name, uint32_t(bodies.size()));
    if (added) {
      bodies.emplace_back();
      defined.push_back(false);
      firstUse.push_back(at);
      definedAt.push_back(at);
      g.names.push_back(name);
    }
    return it->second;
  }
  /// A new rule for a group or a repetition inside rule `parent`: named
  /// `parent/N`, which no rule of the text can be named (so no name the
  /// text writes, before or after, is taken).
  uint32_t anonymous(uint32_t parent) {
    std::string base = g.names[parent];
    base = base.substr(0, base.find('/'));
    std::string name = base + "/" + std::to_string(++anonymousCount);
    uint32_t id = rule(name, pos);
    defined[id] = true;
    definedAt[id] = pos;
    return id;
  }
  bool grow(size_t n) {
    total += n;
    return total <= Grammar::kMaxElements ||
           fail(pos, "the grammar is larger than " +
                         std::to_string(Grammar::kMaxElements) +
                         " elements once its repetitions are expanded");
  }
  /// One code point of a literal or a class at pos (escapes decoded).
  bool codePoint(uint32_t &c);
  bool literal(Sequence &out);
  bool charClass(Sequence &out);
  bool alternatives(uint32_t owner, bool nested, Alternatives &out);
  bool sequence(uint32_t owner, bool nested, Sequence &out);
  /// `out`'s elements from `from` on (the last symbol) repeated from `min`
  /// to `max` (kMaxRepeat + 1: no bound) times.
  bool repeat(uint32_t owner, Sequence &out, size_t from, uint64_t min,
              uint64_t max);
  bool checkLeftRecursion();

  llvm::StringRef text;
  Grammar &g;
  std::string &error;
  size_t pos = 0, total = 0;
  unsigned anonymousCount = 0, groupDepth = 0;
  llvm::StringMap<uint32_t> ids;
  std::vector<Alternatives> bodies;
  std::vector<bool> defined;
  std::vector<size_t> firstUse, definedAt;
};

bool Parser::codePoint(uint32_t &c) {
  unsigned char b = uint8_t(peek());
  if (b == '\\') {
    char e = peek(1);
    pos += 2;
    switch (e) {
    case 'n': c = '\n'; return true;
    case 'r': c = '\r'; return true;
    case 't': c = '\t'; return true;
    case '\\': case '"': case '[': case ']': case '-': case '/': case '^':
      c = uint8_t(e);
      return true;
    case 'x': case 'u': case 'U': {
      int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      c = 0;
      for (int i = 0; i < digits; ++i, ++pos) {
        char h = peek();
        int v = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (v < 0)
          return fail(pos, "\\" + std::string(1, e) + " needs " +
                               std::to_string(digits) + " hex digits");
        c = c << 4 | uint32_t(v);
      }
      if (c > kMaxCodePoint)
        return fail(pos, "a code point past U+10FFFF");
      if (c >= 0xD800 && c < 0xE000)
        return fail(pos, "a surrogate code point, which no text holds");
      return true;
    }
    default:
      return fail(pos - 2, "unknown escape '\\" + std::string(1, e) + "'");
    }
  }
  // (UTF-8, as the text is.)
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3
                                          : (b >> 3) == 30 ? 4 : 0;
  if (!n || pos + n > text.size())
    return fail(pos, "the text is not UTF-8");
  c = n == 1 ? b : b & (0xFF >> (n + 1));
  for (size_t j = 1; j < n; ++j) {
    unsigned char d = uint8_t(text[pos + j]);
    if ((d & 0xC0) != 0x80)
      return fail(pos, "the text is not UTF-8");
    c = c << 6 | (d & 0x3F);
  }
  pos += n;
  return true;
}

bool Parser::literal(Sequence &out) {
  size_t start = pos++;
  while (peek() != '"') {
    if (atEnd() || peek() == '\n')
      return fail(start, "a string literal that does not close");
    uint32_t c;
    if (!codePoint(c) || !grow(1))
      return false;
    Grammar::Element e;
    e.kind = Grammar::Kind::Chars;
    e.a = uint32_t(g.ranges.size());
    g.ranges.emplace_back(c, c);
    e.b = e.a + 1;
    out.push_back(e);
  }
  ++pos;
  return true;
}

bool Parser::charClass(Sequence &out) {
  size_t start = pos++;
  Grammar::Element e;
  e.kind = Grammar::Kind::Chars;
  if (peek() == '^') {
    e.negated = true;
    ++pos;
  }
  std::vector<std::pair<uint32_t, uint32_t>> set;
  while (peek() != ']') {
    if (atEnd() || peek() == '\n')
      return fail(start, "a character class that does not close");
    uint32_t lo, hi;
    if (!codePoint(lo))
      return false;
    hi = lo;
    if (peek() == '-' && peek(1) != ']' && peek(1) != '\0' &&
        peek(1) != '\n') {
      ++pos;
      size_t at = pos;
      if (!codePoint(hi))
        return false;
      if (hi < lo)
        return fail(at, "a range whose end comes before its start");
    }
    set.emplace_back(lo, hi);
  }
  ++pos;
  std::sort(set.begin(), set.end());
  e.a = uint32_t(g.ranges.size());
  for (auto r : set) {
    if (g.ranges.size() > e.a && r.first <= g.ranges.back().second + 1)
      g.ranges.back().second = std::max(g.ranges.back().second, r.second);
    else
      g.ranges.push_back(r);
  }
  e.b = uint32_t(g.ranges.size());
  out.push_back(e);
  return grow(1);
}

bool Parser::repeat(uint32_t owner, Sequence &out, size_t from, uint64_t min,
                    uint64_t max) {
  Sequence symbol(out.begin() + long(from), out.end());
  out.resize(from);
  bool unbounded = max > kMaxRepeat;
  uint64_t optional = unbounded ? 1 : max - min;
  if (!grow(symbol.size() * (min + optional) + 2 * optional))
    return false;
  for (uint64_t i = 0; i < min; ++i)
    out.insert(out.end(), symbol.begin(), symbol.end());
  Grammar::Element ref;
  ref.kind = Grammar::Kind::Ref;
  if (unbounded) {
    // x* => R ::= x R | ""
    uint32_t r = anonymous(owner);
    Sequence more = symbol;
    ref.a = r;
    more.push_back(ref);
    bodies[r] = {more, {}};
    out.push_back(ref);
    return true;
  }
  // x{0,k} => R_k ::= x R_{k-1} | "", R_1 ::= x | ""
  int64_t below = -1;
  for (uint64_t i = min; i < max; ++i) {
    uint32_t r = anonymous(owner);
    Sequence more = symbol;
    if (below >= 0) {
      ref.a = uint32_t(below);
      more.push_back(ref);
    }
    bodies[r] = {more, {}};
    below = r;
  }
  if (below >= 0) {
    ref.a = uint32_t(below);
    out.push_back(ref);
  }
  return true;
}

bool Parser::sequence(uint32_t owner, bool nested, Sequence &out) {
  size_t last = SIZE_MAX; // where the last symbol starts in `out`
  for (;;) {
    skipSpace(nested);
    char c = peek();
    size_t start = out.size();
    if (c == '"') {
      if (!literal(out))
        return false;
      last = start;
    } else if (c == '[') {
      if (!charClass(out))
        return false;
      last = start;
    } else if (c == '.') {
      ++pos;
      Grammar::Element any;
      any.kind = Grammar::Kind::Chars;
      any.negated = true;
      any.a = any.b = uint32_t(g.ranges.size());
      out.push_back(any);
      last = start;
      if (!grow(1))
        return false;
    } else if (isNameChar(c)) {
      size_t at = pos;
      while (isNameChar(peek()))
        ++pos;
      std::string name = text.substr(at, pos - at).str();
      size_t after = pos;
      skipSpace(false);
      if (text.substr(pos).starts_with("::="))
        return fail(at, "rule '" + name +
                            "' starts inside another rule's definition "
                            "(a rule starts on a line of its own)");
      pos = after;
      Grammar::Element ref;
      ref.kind = Grammar::Kind::Ref;
      ref.a = rule(name, at);
      out.push_back(ref);
      last = start;
      if (!grow(1))
        return false;
    } else if (c == '(') {
      size_t at = pos++;
      if (++groupDepth > kMaxGroupDepth)
        return fail(at, "groups nested more than " +
                            std::to_string(kMaxGroupDepth) + " deep");
      uint32_t group = anonymous(owner);
      Alternatives alts;
      if (!alternatives(group, true, alts))
        return false;
      skipSpace(true);
      if (peek() != ')')
        return fail(at, "a group that does not close");
      ++pos;
      --groupDepth;
      bodies[group] = std::move(alts);
      Grammar::Element ref;
      ref.kind = Grammar::Kind::Ref;
      ref.a = group;
      out.push_back(ref);
      last = start;
      if (!grow(1))
        return false;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (last == SIZE_MAX)
        return fail(pos, std::string("'") + c + "' repeats nothing");
      uint64_t min = 0, max = kMaxRepeat + 1;
      if (c == '{') {
        size_t at = pos++;
        auto number = [&](uint64_t &v) {
          size_t digits = 0;
          for (v = 0; peek() >= '0' && peek() <= '9'; ++pos, ++digits)
            v = std::min<uint64_t>(v * 10 + uint64_t(peek() - '0'),
                                   kMaxRepeat + 1);
          return digits > 0;
        };
        skipSpace(false);
        bool hasMin = number(min);
        skipSpace(false);
        if (peek() == ',') {
          ++pos;
          skipSpace(false);
          if (!number(max))
            max = kMaxRepeat + 1;
          else if (max > kMaxRepeat)
            return fail(at, "a repetition of more than " +
                                std::to_string(kMaxRepeat));
        } else if (hasMin) {
          max = min;
        } else {
          return fail(at, "a repetition '{' without a count");
        }
        skipSpace(false);
        if (peek() != '}')
          return fail(at, "a repetition '{' that does not close");
        if (min > kMaxRepeat)
          return fail(at, "a repetition of more than " +
                              std::to_string(kMaxRepeat));
        if (max < min)
          return fail(at, "a repetition whose most is below its least");
      } else {
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : kMaxRepeat + 1;
      }
      ++pos;
      if (!repeat(owner, out, last, min, max))
        return false;
      last = SIZE_MAX;
    } else {
      return true;
    }
  }
}

bool Parser::alternatives(uint32_t owner, bool nested, Alternatives &out) {
  out.emplace_back();
  if (!sequence(owner, nested, out.back()))
    return false;
  while (peek() == '|') {
    ++pos;
    skipSpace(true);
    out.emplace_back();
    if (!sequence(owner, nested, out.back()))
      return false;
  }
  return true;
}

bool Parser::parse() {
  skipSpace(true);
  while (!atEnd()) {
    size_t at = pos;
    while (isNameChar(peek()))
      ++pos;
    if (pos == at)
      return fail(at, std::string("expected a rule's name, not '") + peek() +
                          "'");
    std::string name = text.substr(at, pos - at).str();
    skipSpace(false);
    if (!text.substr(pos).starts_with("::="))
      return fail(pos, "expected '::=' after rule '" + name + "'");
    pos += 3;
    uint32_t id = rule(name, at);
    if (defined[id])
      return fail(at, "rule '" + name + "' is defined twice");
    defined[id] = true;
    definedAt[id] = at;
    skipSpace(true);
    Alternatives alts;
    if (!alternatives(id, false, alts))
      return false;
    bodies[id] = std::move(alts);
    skipSpace(false);
    if (!atEnd() && peek() != '\n')
      return fail(pos, std::string("unexpected '") + peek() + "'");
    skipSpace(true);
  }
  for (size_t r = 0; r < bodies.size(); ++r)
    if (!defined[r])
      return fail(firstUse[r], "rule '" + g.names[r] + "' is not defined");
  auto root = ids.find("root");
  if (root == ids.end())
    return fail(text.size(), "the grammar has no rule 'root'");
  g.root = root->second;
  // The rules' alternatives as runs of elements, each ended by End.
  g.rules.resize(bodies.size());
  for (size_t r = 0; r < bodies.size(); ++r)
    for (Sequence &alt : bodies[r]) {
      g.rules[r].push_back(uint32_t(g.elements.size()));
      g.elements.insert(g.elements.end(), alt.begin(), alt.end());
      g.elements.emplace_back();
    }
  return checkLeftRecursion();
}

/// A rule that can reach itself before any code point (through rules that
/// may match nothing) would send the matcher round for ever: refused.
bool Parser::checkLeftRecursion() {
  size_t n = g.rules.size();
  // The rules that may match nothing, by a worklist: an alternative of
  // only rule references waits for as many of them as it holds, and each
  // rule found empty releases its places.
  std::vector<bool> empty(n, false);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> usedIn(n);
  std::vector<uint32_t> waiting, found;
  for (uint32_t r = 0; r < n; ++r)
    for (uint32_t at : g.rules[r]) {
      uint32_t k = 0;
      bool refsOnly = true;
      for (uint32_t e = at; g.elements[e].kind != Grammar::Kind::End; ++e, ++k)
        refsOnly &= g.elements[e].kind == Grammar::Kind::Ref;
      if (!refsOnly)
        continue;
      uint32_t alt = uint32_t(waiting.size());
      waiting.push_back(k);
      for (uint32_t e = at; e < at + k; ++e)
        usedIn[g.elements[e].a].push_back({alt, r});
      if (k == 0 && !empty[r]) {
        empty[r] = true;
        found.push_back(r);
      }
    }
  while (!found.empty()) {
    uint32_t r = found.back();
    found.pop_back();
    for (auto [alt, owner] : usedIn[r])
      if (--waiting[alt] == 0 && !empty[owner]) {
        empty[owner] = true;
        found.push_back(owner);
      }
  }
  // Each rule's rules at its left edge; then a search for a cycle.
  std::vector<std::vector<uint32_t>> left(n);
  for (size_t r = 0; r < n; ++r)
    for (uint32_t at : g.rules[r])
      for (const Grammar::Element *e = &g.elements[at];
           e->kind == Grammar::Kind::Ref; ++e) {
        left[r].push_back(e->a);
        if (!empty[e->a])
          break;
      }
  std::vector<uint8_t> color(n, 0); // 0 new, 1 on the path, 2 done
  std::vector<std::pair<uint32_t, size_t>> path;
  for (uint32_t start = 0; start < n; ++start) {
    if (color[start])
      continue;
    path.push_back({start, 0});
    color[start] = 1;
    while (!path.empty()) {
      auto &[r, next] = path.back();
      if (next == left[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      uint32_t to = left[r][next++];
      if (color[to] == 1)
        return fail(definedAt[to], "rule '" + g.names[to] +
                                      "' is left-recursive: it can reach "
                                      "itself before matching a character");
      if (color[to] == 0) {
        color[to] = 1;
        path.push_back({to, 0});
      }
    }
  }
  return true;
}

} // namespace

std::unique_ptr<Grammar> Grammar::parse(llvm::StringRef text,
                                        std::string &error) {
  auto g = std::make_unique<Grammar>();
  error.clear();
  Parser p(text, *g, error);
  if (!p.parse())
    return nullptr;
  return g;
}

bool Grammar::matches(const Element &e, uint32_t c) const {
  auto begin = ranges.begin() + e.a, end = ranges.begin() + e.b;
  // The first range whose last is at or past c.
  auto it = std::lower_bound(begin, end, c, [](const auto &r, uint32_t v) {
    return r.second < v;
  });
  bool in = it != end && it->first <= c;
  return in != e.negated;
}

bool Grammar::matchesSome(const Element &e, uint32_t lo, uint32_t hi) const {
  auto begin = ranges.begin() + e.a, end = ranges.begin() + e.b;
  auto it = std::lower_bound(begin, end, lo, [](const auto &r, uint32_t v) {
    return r.second < v;
  });
  if (!e.negated)
    return it != end && it->first <= hi;
  // (Negated: some code point of [lo, hi] outside every range; the ranges
  // are merged, so one range covers it all or none does.)
  return !(it != end && it->first <= lo && it->second >= hi);
}

//===----------------------------------------------------------------------===//
// The vocabulary's trie
//===----------------------------------------------------------------------===//

TokenTrie::TokenTrie(const std::vector<std::string> &texts) {
  vocab = texts.size();
  std::vector<int32_t> order;
  for (size_t i = 0; i < texts.size(); ++i)
    if (!texts[i].empty())
      order.push_back(int32_t(i));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return texts[size_t(a)] < texts[size_t(b)];
  });
  ids = order;
  nodes.emplace_back();
  // Node `n` over ids [lo, hi), which share their first `depth` bytes:
  // those exactly that long end there (they sort first); the rest go to a
  // child a byte.
  struct Item {
    uint32_t node, lo, hi, depth;
  };
  std::vector<Item> todo{{0, 0, uint32_t(ids.size()), 0}};
  while (!todo.empty()) {
    Item it = todo.back();
    todo.pop_back();
    maxDepth = std::max<size_t>(maxDepth, it.depth);
    uint32_t k = it.lo;
    nodes[it.node].firstToken = k;
    while (k < it.hi && texts[size_t(ids[k])].size() == it.depth)
      ++k;
    nodes[it.node].tokens = k - it.lo;
    nodes[it.node].firstChild = uint32_t(edges.size());
    std::vector<Item> children;
    while (k < it.hi) {
      uint8_t b = uint8_t(texts[size_t(ids[k])][it.depth]);
      uint32_t end = k;
      while (end < it.hi && uint8_t(texts[size_t(ids[end])][it.depth]) == b)
        ++end;
      uint32_t child = uint32_t(nodes.size());
      nodes.emplace_back();
      edges.push_back({b, child});
      children.push_back({child, k, end, it.depth + 1});
      k = end;
    }
    nodes[it.node].children = uint32_t(children.size());
    todo.insert(todo.end(), children.begin(), children.end());
  }
}

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : g(std::move(grammar)) {
  newStep();
  for (uint32_t at : g->rules[g->root])
    expand(next(at, -1), now.stacks);
  std::sort(now.stacks.begin(), now.stacks.end());
  // (A start cut short by the limits stays failed: its parses are not
  // all there.)
  broken = overflow;
}

void GrammarMatcher::newStep() {
  worked = 0;
  if (++stamp == 0) {
    // (Wrapped: no mark may read as this step's.)
    std::fill(seen.begin(), seen.end(), 0);
    stamp = 1;
  }
}

int32_t GrammarMatcher::next(uint32_t at, int32_t below) {
  // (An alternative's end is what is below it: a stack never holds one,
  // so that a repetition's stack stays as deep as its first round's.)
  return g->elements[at].kind == Grammar::Kind::End ? below : node(at, below);
}

int32_t GrammarMatcher::node(uint32_t at, int32_t below) {
  uint64_t key = uint64_t(at) << 32 | uint32_t(below + 1);
  auto [it, added] = interned.try_emplace(key, int32_t(nodes.size()));
  if (added) {
    nodes.push_back({at, below});
    seen.push_back(0);
  }
  return it->second;
}

void GrammarMatcher::expand(int32_t n, std::vector<int32_t> &out) {
  work.assign(1, n);
  while (!work.empty()) {
    int32_t s = work.back();
    work.pop_back();
    if (s < 0) {
      if (std::find(out.begin(), out.end(), -1) == out.end())
        out.push_back(-1);
      continue;
    }
    if (seen[size_t(s)] == stamp)
      continue;
    seen[size_t(s)] = stamp;
    if (++worked > kMaxWork || ++walked > kMaxWalk) {
      overflow = true;
      work.clear();
      break;
    }
    Node nd = nodes[size_t(s)];
    const Grammar::Element &e = g->elements[nd.at];
    switch (e.kind) {
    case Grammar::Kind::End:
      // The alternative matched: what was below it goes on.
      work.push_back(nd.below);
      break;
    case Grammar::Kind::Ref: {
      int32_t after = next(nd.at + 1, nd.below);
      for (uint32_t at : g->rules[e.a])
        work.push_back(next(at, after));
      break;
    }
    case Grammar::Kind::Chars:
      out.push_back(s);
      if (out.size() > kMaxParses) {
        overflow = true;
        work.clear();
      }
      break;
    }
  }
}

bool GrammarMatcher::stepCodePoint(const State &from, uint32_t c, State &to) {
  to.stacks.clear();
  to.partial = 0;
  to.remain = to.length = 0;
  newStep();
  for (int32_t s : from.stacks) {
    if (s < 0)
      continue;
    Node nd = nodes[size_t(s)];
    if (g->matches(g->elements[nd.at], c))
      expand(next(nd.at + 1, nd.below), to.stacks);
    if (overflow)
      return false;
  }
  std::sort(to.stacks.begin(), to.stacks.end());
  to.stacks.erase(std::unique(to.stacks.begin(), to.stacks.end()),
                  to.stacks.end());
  return !to.stacks.empty();
}

bool GrammarMatcher::step(const State &from, uint8_t b, State &to) {
  uint32_t partial;
  uint8_t remain, length;
  if (from.remain == 0) {
    if (b < 0x80)
      return stepCodePoint(from, b, to);
    length = b >= 0xC2 && b < 0xE0 ? 2 : b >= 0xE0 && b < 0xF0 ? 3
             : b >= 0xF0 && b < 0xF5                         ? 4
                                                             : 0;
    if (!length)
      return false;
    partial = b & (0xFF >> (length + 1));
    remain = length - 1;
  } else {
    if ((b & 0xC0) != 0x80)
      return false;
    partial = from.partial << 6 | (b & 0x3F);
    remain = from.remain - 1;
    length = from.length;
    if (remain == 0) {
      bool valid = !(length == 3 && (partial < 0x800 ||
                                     (partial >= 0xD800 && partial < 0xE000))) &&
                   !(length == 4 && (partial < 0x10000 || partial > kMaxCodePoint));
      return valid && stepCodePoint(from, partial, to);
    }
  }
  // A code point begun: the parses stay as they are while some element on
  // top may still take a code point that starts with these bytes.
  uint32_t lo = partial << (6 * remain), hi = lo | ((1u << (6 * remain)) - 1);
  lo = std::max(lo, length == 2 ? 0x80u : length == 3 ? 0x800u : 0x10000u);
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi)
    return false;
  // (Some element on top takes a code point of [a, b]; the surrogates
  // between are no code points a text holds.)
  auto some = [&](uint32_t a, uint32_t b) {
    if (a > b)
      return false;
    for (int32_t s : from.stacks)
      if (s >= 0 && g->matchesSome(g->elements[nodes[size_t(s)].at], a, b))
        return true;
    return false;
  };
  if (!some(lo, std::min(hi, 0xD7FFu)) && !some(std::max(lo, 0xE000u), hi))
    return false;
  to.stacks = from.stacks;
  to.partial = partial;
  to.remain = remain;
  to.length = length;
  return true;
}

std::string GrammarMatcher::startLimits() {
  return "its start opens more than " + std::to_string(kMaxParses) +
         " parses, or takes more than " + std::to_string(kMaxWork) + " steps";
}

bool GrammarMatcher::follow(llvm::StringRef text, State &out) {
  if (broken)
    return false;
  // (Limits are per text followed: a check that ran past them does not
  // fail the next one.)
  overflow = false;
  walked = 0;
  State cur = now, next;
  for (char c : text) {
    if (!step(cur, uint8_t(c), next))
      return false;
    std::swap(cur, next);
  }
  out = std::move(cur);
  return true;
}

bool GrammarMatcher::accept(llvm::StringRef text) {
  trim();
  State after;
  if (!follow(text, after))
    return false;
  now = std::move(after);
  return true;
}

bool GrammarMatcher::accepts(llvm::StringRef text) {
  State after;
  return follow(text, after);
}

bool GrammarMatcher::complete() const {
  return now.remain == 0 && !now.stacks.empty() && now.stacks.front() < 0;
}

bool GrammarMatcher::finished() const {
  return complete() && now.stacks.size() == 1;
}

int32_t GrammarMatcher::intern(State &&state) {
  std::string key(reinterpret_cast<const char *>(state.stacks.data()),
                  state.stacks.size() * sizeof(int32_t));
  key += char(state.remain);
  key += char(state.length);
  key.append(reinterpret_cast<const char *>(&state.partial),
             sizeof state.partial);
  auto [it, added] = stateIds.try_emplace(key, int32_t(states.size()));
  if (added)
    states.push_back(std::move(state));
  return it->second;
}

void GrammarMatcher::compact() {
  // Only `now`'s stacks stay: each chain interned again, bottom first, into
  // a fresh arena; the walks' states and steps go.
  std::vector<Node> old = std::move(nodes);
  nodes.clear();
  interned.clear();
  seen.clear();
  llvm::DenseMap<int32_t, int32_t> moved;
  std::vector<int32_t> chain;
  for (int32_t &top : now.stacks) {
    if (top < 0)
      continue;
    chain.clear();
    for (int32_t n = top; n >= 0 && !moved.count(n); n = old[size_t(n)].below)
      chain.push_back(n);
    for (size_t k = chain.size(); k-- > 0;) {
      int32_t below = old[size_t(chain[k])].below;
      moved[chain[k]] = node(old[size_t(chain[k])].at,
                             below < 0 ? -1 : moved[below]);
    }
    top = moved[top];
  }
  std::sort(now.stacks.begin(), now.stacks.end());
  states.clear();
  stateIds.clear();
  steps.clear();
}

void GrammarMatcher::trim() {
  if (nodes.size() > kMaxKeptNodes || states.size() > kMaxKeptStates)
    compact();
}

void GrammarMatcher::walk(const TokenTrie &trie, uint32_t at, int32_t state,
                          std::vector<uint8_t> &allowed) {
  const TokenTrie::Node &tn = trie.nodes[at];
  for (uint32_t i = 0; i < tn.tokens; ++i)
    allowed[size_t(trie.ids[tn.firstToken + i])] = 1;
  for (uint32_t i = 0; i < tn.children && !overflow; ++i) {
    const TokenTrie::Edge &e = trie.edges[tn.firstChild + i];
    uint64_t key = uint64_t(state) << 8 | e.byte;
    auto known = steps.find(key);
    int32_t next;
    if (known != steps.end()) {
      next = known->second;
    } else {
      State to;
      bool ok = step(states[size_t(state)], e.byte, to);
      if (overflow)
        return;
      next = ok ? intern(std::move(to)) : -1;
      steps[key] = next;
    }
    if (next >= 0)
      walk(trie, e.node, next, allowed);
  }
}

bool GrammarMatcher::mask(const TokenTrie &trie, std::vector<uint8_t> &allowed,
                          std::string &error) {
  allowed.assign(trie.vocab, 0);
  // (The states and steps of the walks stay from token to token, a
  // reply's states recurring — inside a JSON string, every character
  // leads back to the same one — until they grow past their bound.)
  trim();
  overflow = false;
  walked = 0;
  if (!broken)
    walk(trie, 0, intern(State(now)), allowed);
  if (overflow || broken) {
    overflow = false;
    error = "the grammar holds more than " + std::to_string(kMaxParses) +
            " parses at once, or takes more than " + std::to_string(kMaxWork) +
            " steps to follow a character or " + std::to_string(kMaxWalk) +
            " to find the tokens that may follow: it is too ambiguous";
    return false;
  }
  return true;
}

GrammarVocabulary::GrammarVocabulary(std::vector<std::string> texts,
                                     std::vector<uint8_t> ending)
    : texts(std::move(texts)), ending(std::move(ending)), trie(this->texts) {}

ConstrainedReply::ConstrainedReply(const GrammarVocabulary &vocabulary,
                                   std::shared_ptr<const Grammar> grammar,
                                   bool maskFirst)
    : maskFirst(maskFirst), vocabulary(vocabulary),
      matcher(std::move(grammar)) {}

bool ConstrainedReply::allows(int32_t id) {
  touch();
  if (vocabulary.ending[size_t(id)])
    return matcher.complete();
  if (maskedNow)
    return allowed[size_t(id)];
  // (An empty text is no token of the trie: the mask never allows it.)
  const std::string &text = vocabulary.texts[size_t(id)];
  return !text.empty() && matcher.accepts(text);
}

bool ConstrainedReply::mask(float *logits) {
  failure.clear();
  touch();
  maskCount += !maskedNow;
  maskedNow = true;
  if (!matcher.mask(vocabulary.trie, allowed, failure))
    return false;
  bool whole = matcher.complete(), any = false;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i] || (whole && vocabulary.ending[i]))
      any = true;
    else
      logits[i] = -INFINITY;
  }
  // (Nothing allowed: a whole sentence ends the reply here, as a stop
  // token would; else the grammar cannot go on in this vocabulary.)
  if (!any && !whole)
    failure = "the grammar allows no token of the vocabulary after the "
              "reply's " + std::to_string(bytes) + " bytes";
  return any;
}

const float *ConstrainedReply::masked(const float *logits) {
  copy.assign(logits, logits + vocabulary.texts.size());
  return mask(copy.data()) ? copy.data() : nullptr;
}

bool ConstrainedReply::take(int32_t id) {
  failure.clear();
  touched = maskedNow = false;
  if (vocabulary.ending[size_t(id)])
    return true;
  const std::string &text = vocabulary.texts[size_t(id)];
  if (!matcher.accept(text))
    return false;
  bytes += text.size();
  return true;
}

std::string ConstrainedReply::faultText(int32_t id) {
  return "the grammar refused token " + std::to_string(id) +
         ", which it had allowed";
}

//===----------------------------------------------------------------------===//
// JSON schemas as GBNF
//===----------------------------------------------------------------------===//

namespace {

/// GBNF's JSON values: whitespace of at most 8 characters between tokens
/// (a model cannot pad a reply without end), strings of JSON's escapes,
/// numbers of at most 16 digits a part.
constexpr const char *kJsonRules = R"(ws ::= [ \t\n]{0,8}
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1F\x7F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,16} )?
boolean ::= "true" | "false"
null ::= "null"
)";

/// `text` as a GBNF string literal.
std::string literal(llvm::StringRef text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char hex[8];
      snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

/// A JSON value's compact text (llvm::json's).
std::string compact(const json::Value &v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << v;
  return out;
}

} // namespace

namespace arch::serve {

/// JSON schemas as GBNF rules (SchemaGrammar's).
class SchemaWriter {
public:
  /// The GBNF expression of the schema `text` at `path` (its $refs
  /// pointing into `rootText`), defining rules named from `name`; "" with
  /// `error` set.
  std::string visit(const std::string &text, const std::string &path,
                    const std::string &name);
  std::string rules;
  std::string rootText, error;
  std::map<std::string, std::string> refs; ///< a $ref's rule (rootText's)

private:
  friend class SchemaGrammar; // (its callers' own rules: rule, define)
  bool fail(const std::string &path, const std::string &what) {
    if (error.empty())
      error = "at " + (path.empty() ? std::string("the schema's root") : path) +
              ": " + what;
    return false;
  }
  /// A rule name from `hint` not yet taken.
  std::string fresh(const std::string &hint) {
    std::string base;
    for (char c : hint)
      base += isNameChar(c) && c != '_' ? c : '-';
    if (base.empty())
      base = "x";
    std::string name = base;
    for (unsigned k = 1; !taken.insert(name).second; ++k)
      name = base + "-" + std::to_string(k);
    return name;
  }
  void define(const std::string &name, const std::string &body) {
    rules += name + " ::= " + body + "\n";
  }
  std::string object(const json::Object &o, const std::string &text,
                     const std::string &path, const std::string &name);
  std::string array(const json::Object &o, const std::string &text,
                    const std::string &path, const std::string &name);
  std::string typed(llvm::StringRef type, const json::Object &o,
                    const std::string &text, const std::string &path,
                    const std::string &name);
  bool count(const json::Object &o, const char *key, const std::string &path,
             int64_t &out);
  /// The integers `minimum` .. `maximum` (or exclusive) allow, within the
  /// grammar's 16 digits; false with `error` where none.
  bool integerBounds(const json::Object &o, const std::string &text,
                     const std::string &path, int64_t &lo, int64_t &hi);
  /// A number's bounds (read from the schema's digits, exponents too) as
  /// the numbers of the grammar (16 digits each side of the point, no
  /// exponent) that lie within them; "" with `error` where none.
  std::string numberRange(const json::Object &o, const std::string &text,
                          const std::string &path);

  std::set<std::string> taken{"root",   "ws",      "value",  "object",
                              "member", "array",   "string", "char",
                              "integer", "number", "boolean", "null"};
  unsigned depth = 0;
};

} // namespace arch::serve

/// Keywords of JSON Schema that would constrain the value in ways the
/// grammar does not: refused by name rather than ignored. (Annotations
/// such as title, description, default, examples and format do not
/// constrain, and keywords JSON Schema does not know are ignored, as it
/// says.)
static const char *const kUnsupported[] = {
    "multipleOf",
    "minProperties",    "maxProperties",    "patternProperties",
    "propertyNames",    "dependentRequired", "dependentSchemas",
    "dependencies",     "if",               "then",
    "else",             "not",              "uniqueItems",
    "contains",         "minContains",      "maxContains",
    "unevaluatedProperties", "unevaluatedItems", "additionalItems"};

/// The most nested schemas visited (a $ref's rule is visited once).
static constexpr unsigned kMaxSchemaDepth = 64;
/// The largest minItems, maxItems, minLength or maxLength taken.
static constexpr int64_t kMaxSchemaCount = 1000;

/// The bounds JSON Schema puts on a number (`minimum`, `maximum`,
/// `exclusiveMinimum`, `exclusiveMaximum`): the keys given.
static const char *const kBounds[] = {"minimum", "maximum", "exclusiveMinimum",
                                      "exclusiveMaximum"};

/// The keywords read only where the type is (typed()), each with the
/// type it needs: beside a keyword that answers first ($ref, anyOf,
/// oneOf, allOf), or with no type, they would be passed over (refused);
/// beside const or enum they keep the values that meet them (ValueKeep).
static const std::pair<const char *, const char *> kTypeOnly[] = {
    {"pattern", "\"string\""},
    {"minLength", "\"string\""},
    {"maxLength", "\"string\""},
    {"minItems", "\"array\""},
    {"maxItems", "\"array\""},
    {"minimum", "\"integer\" or \"number\""},
    {"maximum", "\"integer\" or \"number\""},
    {"exclusiveMinimum", "\"integer\" or \"number\""},
    {"exclusiveMaximum", "\"integer\" or \"number\""}};

/// Where a pattern's grammar is too ambiguous to follow a const's or an
/// enum's string.
static const char *const kAmbiguous =
    "'pattern' is too ambiguous to check the values of 'const' or 'enum' "
    "against";

/// The largest magnitude of the grammar's integers (16 digits: kJsonRules'
/// `integer`).
static constexpr int64_t kMaxIntegerText = 9999999999999999;

namespace {

/// Alternatives (each ending in a space, as the range writers' below do)
/// as one GBNF item: the one alone, or "( a | b ... ) ".
std::string alternatives(const std::vector<std::string> &alts) {
  std::string body;
  for (size_t k = 0; k < alts.size(); ++k)
    body += (k ? "| " : "") + alts[k];
  return alts.size() > 1 ? "( " + body + ") " : body;
}

/// The digits `a`..`b` as one GBNF item: the digit itself, or a class.
std::string digitClass(char a, char b) {
  return a == b ? std::string("\"") + a + "\" "
                : std::string("[") + a + "-" + b + "] ";
}

/// The decimal numbers of `lo`..`hi` (digit strings of one length, leading
/// zeros kept: a number's last digits) as a GBNF expression.
std::string digitRange(const std::string &lo, const std::string &hi) {
  size_t n = lo.size(), i = 0;
  std::string prefix;
  while (i < n && lo[i] == hi[i])
    prefix += lo[i++];
  auto quoted = [](const std::string &digits) {
    return digits.empty() ? std::string() : "\"" + digits + "\" ";
  };
  if (i == n)
    return quoted(prefix);
  size_t rest = n - i - 1;
  auto any = [&] {
    return rest == 0 ? std::string()
           : rest == 1 ? std::string("[0-9] ")
                       : "[0-9]{" + std::to_string(rest) + "} ";
  };
  std::string loRest = lo.substr(i + 1), hiRest = hi.substr(i + 1);
  bool loZeros = loRest.find_first_not_of('0') == std::string::npos;
  bool hiNines = hiRest.find_first_not_of('9') == std::string::npos;
  // lo[i] with the rest from loRest up, the digits between with any rest,
  // hi[i] with the rest up to hiRest (the first and last taken into the
  // middle where their rest runs the whole way).
  std::vector<std::string> alts;
  char first = loZeros ? lo[i] : char(lo[i] + 1);
  char last = hiNines ? hi[i] : char(hi[i] - 1);
  if (!loZeros)
    alts.push_back(digitClass(lo[i], lo[i]) +
                   digitRange(loRest, std::string(rest, '9')));
  if (first <= last)
    alts.push_back(digitClass(first, last) + any());
  if (!hiNines)
    alts.push_back(digitClass(hi[i], hi[i]) +
                   digitRange(std::string(rest, '0'), hiRest));
  return quoted(prefix) + alternatives(alts);
}

/// The integers `lo`..`hi` (0 <= lo <= hi) as JSON writes them, a GBNF
/// expression: a run of digitRange for each count of digits.
std::string naturalRange(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  int64_t top = 9;
  for (int digits = 1; lo <= hi; ++digits, top = top * 10 + 9) {
    if (lo > top)
      continue;
    int64_t end = std::min(hi, top);
    std::string a = std::to_string(lo), b = std::to_string(end);
    alts.push_back(digitRange(a, b));
    lo = end + 1;
  }
  return alternatives(alts);
}

/// A bound of a number as its text writes it: the side of zero, the
/// integer part, 16 fraction digits (the grammar's; a bound's digits past
/// them are folded into `inclusive`, see numberRange), whether it is
/// itself allowed.
struct NumberBound {
  bool negative;
  int64_t whole;
  std::string fraction;
  bool inclusive;
};

/// The grammar's digits a part (kJsonRules' integer's and fraction's).
constexpr int kDigits = 16;

/// kDigits of `c`: a fraction of none (zeros), or the last (nines).
std::string allDigits(char c) { return std::string(kDigits, c); }

/// -1, 0 or 1 as a's value lies below, at or above b's.
int compare(const NumberBound &a, const NumberBound &b) {
  if (a.negative != b.negative)
    return a.negative ? -1 : 1;
  auto x = std::tie(a.whole, a.fraction), y = std::tie(b.whole, b.fraction);
  int m = x < y ? -1 : x == y ? 0 : 1;
  return a.negative ? -m : m;
}

/// Digit strings as numbers of their length: the next, the one before
/// (false where they wrap round: all nines, all zeros).
bool increment(std::string &digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9')
      return ++digits[i], true;
    digits[i] = '0';
  }
  return false;
}
bool decrement(std::string &digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '0')
      return --digits[i], true;
    digits[i] = '9';
  }
  return false;
}

/// The digits of a fraction from position `i` on, its earlier ones those
/// of `a` (where `low`) and of `b` (where `high`): those whose 16 digits,
/// padded with zeros, lie between a's and b's. The split of digitRange
/// at the first digit where they differ, but a fraction may end early
/// (where the rest of a is zeros), so each step's rest is optional then.
std::string fractionDigits(const std::string &a, const std::string &b,
                           size_t i, bool low, bool high) {
  if (i == a.size())
    return "";
  auto zeros = [&](size_t from) {
    return !low || a.find_first_not_of('0', from) == std::string::npos;
  };
  auto nines = [&](size_t from) {
    return !high || b.find_first_not_of('9', from) == std::string::npos;
  };
  auto any = [&](size_t n) {
    return n == 0 ? std::string() : "[0-9]{0," + std::to_string(n) + "} ";
  };
  if (zeros(i) && nines(i))
    return any(a.size() - i);
  // (Down to b's rest where it is zeros: zeros only, or none.)
  if (zeros(i) && b.find_first_not_of('0', i) == std::string::npos)
    return "\"0\"{0," + std::to_string(a.size() - i) + "} ";
  char lo = low ? a[i] : '0', hi = high ? b[i] : '9';
  std::string body;
  if (low && high && lo == hi) {
    body = digitClass(lo, lo) + fractionDigits(a, b, i + 1, true, true);
  } else {
    // lo with the rest from a's up, the digits between with any rest, hi
    // with the rest up to b's (each taken into the middle where its rest
    // runs the whole way).
    std::vector<std::string> alts;
    char first = zeros(i + 1) ? lo : char(lo + 1);
    char last = nines(i + 1) ? hi : char(hi - 1);
    if (!zeros(i + 1))
      alts.push_back(digitClass(lo, lo) +
                     fractionDigits(a, b, i + 1, true, false));
    if (first <= last)
      alts.push_back(digitClass(first, last) + any(a.size() - i - 1));
    if (!nines(i + 1))
      alts.push_back(digitClass(hi, hi) +
                     fractionDigits(a, b, i + 1, false, true));
    body = alternatives(alts);
  }
  // (Ending here: its padding is a's where a's rest is zeros.)
  return i > 0 && zeros(i) ? "( " + body + ")? " : body;
}

/// The fractions from `a` to `b` (16 digits each, a <= b) as a JSON
/// number writes them after its integer part: none (where a is zero), or
/// a point and 1 to 16 digits, trailing zeros included.
std::string fractionRange(const std::string &a, const std::string &b) {
  const std::string zeros = allDigits('0'), nines = allDigits('9');
  if (a == zeros && b == nines)
    return "( \".\" [0-9]{1,16} )? ";
  if (b == zeros)
    return "( \".\" \"0\"{1,16} )? ";
  std::string digits = fractionDigits(a, b, 0, true, true);
  return a == zeros ? "( \".\" " + digits + ")? " : "\".\" " + digits;
}

/// The magnitudes (a JSON number's text less its sign) from `lo` up to
/// `hi` (none: the grammar's largest), as a GBNF expression; "" where
/// none lies between them. Exclusive bounds move to the next 16-digit
/// fraction in, so that each side is allowed.
std::string magnitudes(NumberBound lo, std::optional<NumberBound> hi) {
  const std::string zeros = allDigits('0'), nines = allDigits('9');
  if (!lo.inclusive && !increment(lo.fraction))
    ++lo.whole;
  // (Bounds past 16 digits were dropped: numberRange.)
  if (!hi)
    hi = NumberBound{false, kMaxIntegerText, nines, true};
  if (!hi->inclusive && !decrement(hi->fraction)) {
    if (hi->whole == 0)
      return "";
    --hi->whole;
  }
  if (std::tie(lo.whole, lo.fraction) > std::tie(hi->whole, hi->fraction))
    return "";
  if (lo.whole == hi->whole)
    return naturalRange(lo.whole, lo.whole) +
           fractionRange(lo.fraction, hi->fraction);
  // The low integer with its fractions up, those between with any, the
  // high one with its fractions down (each whole one taken into the
  // middle where its fractions run the whole way).
  std::vector<std::string> alts;
  int64_t first = lo.whole, last = hi->whole;
  if (lo.fraction != zeros)
    alts.push_back(naturalRange(first, first) +
                   fractionRange(lo.fraction, nines)),
        ++first;
  bool topWhole = hi->fraction == nines;
  if (first <= (topWhole ? last : last - 1))
    alts.push_back(naturalRange(first, topWhole ? last : last - 1) +
                   fractionRange(zeros, nines));
  if (!topWhole)
    alts.push_back(naturalRange(last, last) +
                   fractionRange(zeros, hi->fraction));
  return alternatives(alts);
}

/// A JSON number's text as an exact decimal (JSON's number: -? digits
/// (. digits)? ([eE] [+-]? digits)?, the exponent moving the point): its
/// digits less leading and trailing zeros (none for zero, minus zero
/// too), and where its point falls among them: `point` digits before it
/// (negative: that many zeros after it first).
struct Decimal {
  bool negative = false;
  std::string digits;
  int64_t point = 0;

  /// Its digit at position `i` of `digits`' scale (10^(point - 1 - i)):
  /// '0' outside them.
  char at(int64_t i) const {
    return i >= 0 && i < int64_t(digits.size()) ? digits[size_t(i)] : '0';
  }
};

Decimal readDecimal(llvm::StringRef text) {
  llvm::StringRef mantissa = text.trim(), exponent;
  Decimal d;
  d.negative = mantissa.consume_front("-");
  size_t e = mantissa.find_first_of("eE");
  if (e != llvm::StringRef::npos)
    exponent = mantissa.substr(e + 1), mantissa = mantissa.take_front(e);
  auto [whole, fraction] = mantissa.split('.');
  std::string all = (whole + fraction).str();
  size_t first = all.find_first_not_of('0');
  if (first == std::string::npos)
    return Decimal{};
  d.digits = all.substr(first, all.find_last_not_of('0') + 1 - first);
  // (An exponent past what an int64_t holds: far past any other digits,
  // as one of a quarter of that range is.)
  constexpr int64_t far = std::numeric_limits<int64_t>::max() / 4;
  int64_t shift = 0;
  exponent.consume_front("+");
  if (!exponent.empty() && exponent.getAsInteger(10, shift))
    shift = exponent.starts_with("-") ? -far : far;
  shift = std::clamp(shift, -far, far);
  d.point = int64_t(whole.size()) - int64_t(first) + shift;
  return d;
}

/// -1, 0 or 1 as a's value lies below, at or above b's.
int compare(const Decimal &a, const Decimal &b) {
  auto sign = [](const Decimal &d) {
    return d.digits.empty() ? 0 : d.negative ? -1 : 1;
  };
  if (sign(a) != sign(b))
    return sign(a) < sign(b) ? -1 : 1;
  // (Same sign: by magnitude, the point first, then the digits, which
  // have no trailing zeros.)
  int m = a.point != b.point ? (a.point < b.point ? -1 : 1)
                             : a.digits.compare(b.digits);
  m = m < 0 ? -1 : m > 0 ? 1 : 0;
  return sign(a) < 0 ? -m : m;
}

/// Bound `k` as `member`, its text in the schema, writes it (a double
/// would round its digits); `far` where its integer part is past the
/// grammar's 16 digits (only its side counts then). Digits past the 16th
/// of the fraction are cut, toward zero: a lower bound above zero and an
/// upper one below it become strict (no number of the grammar lies
/// between), the others inclusive.
NumberBound readBound(llvm::StringRef k, const std::string &member,
                      bool &far) {
  Decimal d = readDecimal(member);
  bool below = k.ends_with("aximum"); // an upper bound
  NumberBound b{d.negative && !d.digits.empty(), 0, allDigits('0'),
                !k.starts_with("exclusive")};
  far = d.point > kDigits;
  if (far)
    return b;
  for (int64_t i = 0; i < d.point; ++i)
    b.whole = b.whole * 10 + (d.at(i) - '0');
  for (int64_t j = 0; j < kDigits; ++j)
    b.fraction[size_t(j)] = d.at(d.point + j);
  if (int64_t(d.digits.size()) > d.point + kDigits)
    b.inclusive = below != b.negative;
  if (b.whole == 0 && b.fraction == allDigits('0'))
    b.negative = false; // (minus zero, or past the 16th digit)
  return b;
}

/// Beside `const` or `enum`, `type` and the keywords read with a type
/// (kTypeOnly) keep the values that meet them, as JSON Schema reads
/// them: a type among those named (an integer: a number without a
/// fraction, 1.0 too), a string's characters and an array's items within
/// the lengths, a number within the bounds (its text and theirs compared
/// exactly), a string the pattern finds (its JSON text, as the reply
/// writes it: jsonStringText, through the pattern's grammar). A keyword
/// speaks only of values of its own kind.
struct ValueKeep {
  int64_t minLength = 0, maxLength = -1, minItems = 0, maxItems = -1;
  std::vector<std::string> types; ///< none: any
  std::vector<std::pair<const char *, Decimal>> bounds;
  std::shared_ptr<const Grammar> pattern;
  std::string named; ///< the keywords given: "'type', 'maximum'"
  /// Whether a string's match ran past the matcher's limits (so it was
  /// not kept, but not for certain outside the pattern).
  mutable bool ambiguous = false;

  /// Reads `o`'s type, bounds and pattern (the lengths: count); false with
  /// `why` where one is not what its keyword takes.
  bool read(const json::Object &o, const std::string &text, std::string &why);
  /// The first keyword `v` (`raw` its text in the schema) does not meet;
  /// null where it meets them all.
  const char *unmet(const json::Value &v, const std::string &raw) const;
};

bool ValueKeep::read(const json::Object &o, const std::string &text,
                     std::string &why) {
  auto name = [&](const char *k) {
    named += (named.empty() ? "'" : ", '") + std::string(k) + "'";
  };
  if (const json::Value *type = o.get("type")) {
    name("type");
    if (std::optional<llvm::StringRef> one = type->getAsString())
      types.push_back(one->str());
    else if (const json::Array *list = type->getAsArray())
      for (const json::Value &t : *list)
        types.push_back(t.getAsString().value_or("").str());
    if (types.empty() || llvm::is_contained(types, ""))
      return why = "'type' must be a type's name or an array of them", false;
    for (const std::string &t : types)
      if (!llvm::is_contained({"string", "number", "integer", "boolean",
                               "null", "array", "object"},
                              t))
        return why = "'type' \"" + t + "\" is not a JSON type", false;
  }
  for (const auto &[k, needs] : kTypeOnly) {
    const json::Value *v = o.get(k);
    if (!v)
      continue;
    name(k);
    if (llvm::is_contained(kBounds, llvm::StringRef(k))) {
      if (!v->getAsNumber())
        return why = std::string("'") + k + "' must be a number", false;
      bounds.emplace_back(k, readDecimal(rawMember(text, k)));
    }
  }
  if (const json::Value *p = o.get("pattern")) {
    std::optional<llvm::StringRef> re = p->getAsString();
    if (!re)
      return why = "'pattern' must be a string", false;
    std::string error, body = patternGrammar(*re, error);
    if (body.empty())
      return why = "'pattern' " + error, false;
    pattern = Grammar::parse("root ::= " + body + "\n" + kJsonRules, error);
    if (!pattern)
      return why = "'pattern' " + error, false;
  }
  return true;
}

const char *ValueKeep::unmet(const json::Value &v,
                             const std::string &raw) const {
  static const char *const kKinds[] = {"null",   "boolean", "number",
                                       "string", "array",   "object"};
  const char *kind = kKinds[int(v.kind())];
  Decimal number;
  if (v.kind() == json::Value::Number)
    number = readDecimal(raw);
  bool integral = int64_t(number.digits.size()) <= number.point;
  if (!types.empty() && !llvm::is_contained(types, kind) &&
      !(integral && v.kind() == json::Value::Number &&
        llvm::is_contained(types, "integer")))
    return "type";
  int64_t n = -1, lo = 0, hi = -1;
  const char *low = nullptr, *high = nullptr;
  if (std::optional<llvm::StringRef> s = v.getAsString())
    n = llvm::count_if(*s, [](char c) { return (uint8_t(c) & 0xC0) != 0x80; }),
    lo = minLength, hi = maxLength, low = "minLength", high = "maxLength";
  else if (const json::Array *a = v.getAsArray())
    n = int64_t(a->size()), lo = minItems, hi = maxItems, low = "minItems",
    high = "maxItems";
  if (n >= 0 && n < lo)
    return low;
  if (n >= 0 && hi >= 0 && n > hi)
    return high;
  if (v.kind() == json::Value::Number)
    for (const auto &[k, bound] : bounds) {
      int c = compare(number, bound);
      llvm::StringRef key(k);
      bool upper = key.ends_with("aximum"), strict = key.starts_with("exclusive");
      if (upper ? (c > 0 || (strict && c == 0)) : (c < 0 || (strict && c == 0)))
        return k;
    }
  if (pattern && v.getAsString()) {
    GrammarMatcher m(pattern);
    if (!m.accept(jsonStringText(*v.getAsString())) || !m.complete()) {
      ambiguous |= m.overflowed();
      return "pattern";
    }
  }
  return nullptr;
}

} // namespace

bool SchemaWriter::integerBounds(const json::Object &o, const std::string &text,
                                 const std::string &path, int64_t &lo,
                                 int64_t &hi) {
  lo = -kMaxIntegerText;
  hi = kMaxIntegerText;
  for (const char *k : kBounds) {
    const json::Value *v = o.get(k);
    if (!v)
      continue;
    if (!v->getAsNumber())
      return fail(path, std::string("'") + k + "' must be a number");
    bool far, below = llvm::StringRef(k).ends_with("aximum");
    NumberBound n = readBound(k, rawMember(text, k), far);
    // The nearest integer inside: a bound with a fraction moves to the
    // integer inward of it, a strict one at an integer one past it.
    // (Far past the grammar's 16 digits, only the side counts.)
    int64_t b = n.negative ? -n.whole : n.whole;
    if (far)
      b = n.negative ? -kMaxIntegerText - 1 : kMaxIntegerText + 1;
    else if (n.fraction != allDigits('0'))
      b += (below ? 0 : 1) - (n.negative ? 1 : 0);
    else if (!n.inclusive)
      b += below ? -1 : 1;
    if (below)
      hi = std::min(hi, b);
    else
      lo = std::max(lo, b);
  }
  if (lo > hi)
    return fail(path, "no integer of at most 16 digits lies within its "
                      "bounds");
  return true;
}

std::string SchemaWriter::numberRange(const json::Object &o,
                                      const std::string &text,
                                      const std::string &path) {
  std::optional<NumberBound> lo, hi;
  bool none = false;
  for (const char *k : kBounds) {
    const json::Value *v = o.get(k);
    if (!v)
      continue;
    if (!v->getAsNumber())
      return fail(path, std::string("'") + k + "' must be a number"), "";
    bool far;
    NumberBound b = readBound(k, rawMember(text, k), far);
    bool below = llvm::StringRef(k).ends_with("aximum"); // an upper bound
    // (Past the grammar's 16 digits: every number of it on one side.)
    if (far) {
      none |= below == b.negative;
      continue;
    }
    // (The tighter on each side; at one value, the strict.)
    std::optional<NumberBound> &side = below ? hi : lo;
    int c = side ? compare(b, *side) : 0;
    if (!side || (c == 0 ? !b.inclusive : below == (c < 0)))
      side = b;
  }
  if (none)
    return fail(path, "no number of at most 16 digits lies within its "
                      "bounds"),
           "";
  std::string body;
  // Without a sign: 0 and above.
  if (!hi || !hi->negative)
    body = magnitudes(lo && !lo->negative
                          ? *lo
                          : NumberBound{false, 0, allDigits('0'), true},
                      hi);
  // After a minus sign: below 0, by the magnitude (no minus zero, as for
  // integers).
  if (!lo || lo->negative) {
    NumberBound from = hi && hi->negative
                           ? *hi
                           : NumberBound{true, 0, allDigits('0'), false};
    std::string negative = magnitudes(from, lo);
    if (!negative.empty())
      body += (body.empty() ? "" : "| ") + std::string("\"-\" ") + negative;
  }
  if (body.empty())
    fail(path, "no number of at most 16 digits lies within its bounds");
  return body;
}

bool SchemaWriter::count(const json::Object &o, const char *key,
                         const std::string &path, int64_t &out) {
  const json::Value *v = o.get(key);
  if (!v)
    return true;
  std::optional<int64_t> n = v->getAsInteger();
  if (!n || *n < 0)
    return fail(path, std::string("'") + key +
                          "' must be a non-negative integer");
  if (*n > kMaxSchemaCount)
    return fail(path, std::string("'") + key + "' above " +
                          std::to_string(kMaxSchemaCount) +
                          " is not supported");
  out = *n;
  return true;
}

std::string SchemaWriter::object(const json::Object &o,
                                 const std::string &text,
                                 const std::string &path,
                                 const std::string &name) {
  // The properties in the schema's order; each required one present,
  // each other one may be left out. The chains a<i> (no member written
  // yet) and b<i> (one written: the next needs a comma):
  //   a<i> ::= kv<i> b<i+1> | a<i+1>      b<i> ::= "," ws kv<i> b<i+1> | b<i+1>
  // (the second alternatives only where property i is not required), and
  // at the end the additional properties' members, where allowed.
  std::vector<std::pair<std::string, std::string>> props;
  if (const json::Value *p = o.get("properties")) {
    if (!p->getAsObject())
      return fail(path, "'properties' must be an object"), "";
    props = rawMembers(rawMember(text, "properties"));
  }
  std::set<std::string> required;
  if (const json::Value *r = o.get("required")) {
    const json::Array *list = r->getAsArray();
    if (!list)
      return fail(path, "'required' must be an array of names"), "";
    for (const json::Value &n : *list) {
      if (!n.getAsString())
        return fail(path, "'required' must be an array of names"), "";
      std::string key = n.getAsString()->str();
      if (std::none_of(props.begin(), props.end(),
                       [&](const auto &p) { return p.first == key; }))
        return fail(path, "'required' names '" + key +
                              "', which 'properties' does not define"),
               "";
      required.insert(key);
    }
  }
  std::string extra;
  const json::Value *more = o.get("additionalProperties");
  if (!more || more->getAsBoolean() == std::optional<bool>(true)) {
    extra = "member";
  } else if (more->getAsBoolean() != std::optional<bool>(false)) {
    std::string sub = visit(rawMember(text, "additionalProperties"),
                            path + "/additionalProperties",
                            name + "-additional");
    if (sub.empty())
      return "";
    extra = fresh(name + "-additional-kv");
    define(extra, "string ws \":\" ws " + sub + " ws");
  }
  size_t n = props.size();
  std::vector<std::string> kv(n);
  for (size_t i = 0; i < n; ++i) {
    auto &[key, raw] = props[i];
    std::string sub = visit(raw, path + "/properties/" + key, name + "-" + key);
    if (sub.empty())
      return "";
    kv[i] = fresh(name + "-" + key + "-kv");
    define(kv[i], literal(compact(json::Value(key))) + " ws \":\" ws " + sub +
                      " ws");
  }
  std::vector<std::string> a(n + 1), b(n + 1);
  // (a<i> is a rule only where every property before i may be left out;
  // b0 only where there are no properties: else nothing comes before the
  // first.)
  size_t lastA = 0;
  for (size_t i = 0; i <= n; ++i) {
    if (i == lastA)
      a[i] = fresh(name + "-a" + std::to_string(i));
    if (i || n == 0)
      b[i] = fresh(name + "-b" + std::to_string(i));
    if (i < n && i == lastA && !required.count(props[i].first))
      lastA = i + 1;
  }
  for (size_t i = 0; i < n; ++i) {
    bool optional = !required.count(props[i].first);
    if (i <= lastA)
      define(a[i], kv[i] + " " + b[i + 1] +
                       (optional ? " | " + a[i + 1] : ""));
    if (i)
      define(b[i], "\",\" ws " + kv[i] + " " + b[i + 1] +
                       (optional ? " | " + b[i + 1] : ""));
  }
  if (lastA == n)
    define(a[n], extra.empty() ? "\"\"" : "( " + extra + " " + b[n] + " )?");
  define(b[n], extra.empty() ? "\"\"" : "( \",\" ws " + extra + " )*");
  std::string rule = fresh(name);
  define(rule, "\"{\" ws " + a[0] + " \"}\"");
  return rule;
}

std::string SchemaWriter::array(const json::Object &o, const std::string &text,
                                const std::string &path,
                                const std::string &name) {
  int64_t min = 0, max = -1;
  if (!count(o, "minItems", path, min) || !count(o, "maxItems", path, max))
    return "";
  if (max >= 0 && max < min)
    return fail(path, "'maxItems' is below 'minItems'"), "";
  std::string rule = fresh(name);
  const json::Value *items = o.get("items");
  if (const json::Value *prefix = o.get("prefixItems")) {
    // A tuple: each prefix item in order, then the items' (any value
    // where 'items' is absent; none where it is false).
    if (!prefix->getAsArray())
      return fail(path, "'prefixItems' must be an array of schemas"), "";
    if (o.get("minItems") || o.get("maxItems"))
      return fail(path, "'minItems' or 'maxItems' with 'prefixItems' is "
                        "not supported"),
             "";
    std::vector<std::string> raw = rawElements(rawMember(text, "prefixItems"));
    std::string body = "\"[\" ws";
    for (size_t i = 0; i < raw.size(); ++i) {
      std::string sub = visit(raw[i], path + "/prefixItems/" +
                                          std::to_string(i),
                              name + "-" + std::to_string(i));
      if (sub.empty())
        return "";
      body += (i ? " \",\" ws " : " ") + sub + " ws";
    }
    std::string rest;
    if (!items) {
      rest = "value";
    } else if (items->getAsBoolean() != std::optional<bool>(false)) {
      rest = visit(rawMember(text, "items"), path + "/items", name + "-item");
      if (rest.empty())
        return "";
    }
    if (!rest.empty())
      body += raw.empty() ? " ( " + rest + " ws ( \",\" ws " + rest +
                                " ws )* )?"
                          : " ( \",\" ws " + rest + " ws )*";
    define(rule, body + " \"]\"");
    return rule;
  }
  std::string item = "value";
  if (items) {
    if (items->getAsBoolean() == std::optional<bool>(false)) {
      if (min > 0)
        return fail(path, "'items' false with 'minItems' above 0 allows "
                          "no value"),
               "";
      define(rule, "\"[\" ws \"]\"");
      return rule;
    }
    item = visit(rawMember(text, "items"), path + "/items", name + "-item");
    if (item.empty())
      return "";
  }
  // [ item ("," item){min-1, max-1} ], or [] where min is 0.
  std::string rest = "( \",\" ws " + item + " ws )";
  auto bounds = [&](int64_t lo, int64_t hi) {
    return "{" + std::to_string(lo) + "," +
           (hi < 0 ? std::string() : std::to_string(hi)) + "}";
  };
  std::string some =
      item + " ws " + rest +
      bounds(std::max<int64_t>(min - 1, 0), max < 0 ? -1 : max - 1);
  if (max == 0)
    define(rule, "\"[\" ws \"]\"");
  else if (min == 0)
    define(rule, "\"[\" ws ( " + some + " )? \"]\"");
  else
    define(rule, "\"[\" ws " + some + " \"]\"");
  return rule;
}

std::string SchemaWriter::typed(llvm::StringRef type, const json::Object &o,
                                const std::string &text,
                                const std::string &path,
                                const std::string &name) {
  if (type == "object")
    return object(o, text, path, name);
  if (type == "array")
    return array(o, text, path, name);
  if (type == "string") {
    int64_t min = 0, max = -1;
    if (!count(o, "minLength", path, min) || !count(o, "maxLength", path, max))
      return "";
    if (const json::Value *p = o.get("pattern")) {
      std::optional<llvm::StringRef> re = p->getAsString();
      if (!re)
        return fail(path, "'pattern' must be a string"), "";
      if (min > 0 || max >= 0)
        return fail(path, "'pattern' with 'minLength' or 'maxLength' is not "
                          "supported"),
               "";
      std::string why, body = patternGrammar(*re, why);
      if (body.empty())
        return fail(path, "'pattern' " + why), "";
      std::string rule = fresh(name);
      define(rule, body);
      return rule;
    }
    if (max >= 0 && max < min)
      return fail(path, "'maxLength' is below 'minLength'"), "";
    if (min == 0 && max < 0)
      return "string";
    std::string rule = fresh(name);
    define(rule, "\"\\\"\" char{" + std::to_string(min) + "," +
                     (max < 0 ? std::string() : std::to_string(max)) +
                     "} \"\\\"\"");
    return rule;
  }
  bool bounded =
      llvm::any_of(kBounds, [&](const char *k) { return o.get(k); });
  if (type == "integer" && bounded) {
    // Each side's integers, as digit ranges: those below zero after a
    // minus sign, by their magnitude.
    int64_t lo, hi;
    if (!integerBounds(o, text, path, lo, hi))
      return "";
    std::string body;
    if (lo < 0) {
      int64_t nearest = std::max<int64_t>(1, -std::min<int64_t>(hi, -1));
      body = "\"-\" " + naturalRange(nearest, -lo);
    }
    if (hi >= 0)
      body += (body.empty() ? "" : "| ") +
              naturalRange(std::max<int64_t>(lo, 0), hi);
    std::string rule = fresh(name);
    define(rule, body);
    return rule;
  }
  if (type == "number" && bounded) {
    std::string body = numberRange(o, text, path);
    if (body.empty())
      return "";
    std::string rule = fresh(name);
    define(rule, body);
    return rule;
  }
  if (type == "integer" || type == "number" || type == "boolean" ||
      type == "null")
    return type.str();
  return fail(path, "'type' \"" + type.str() + "\" is not a JSON type"), "";
}

std::string SchemaWriter::visit(const std::string &text,
                                const std::string &path,
                                const std::string &name) {
  if (++depth > kMaxSchemaDepth) {
    fail(path, "schemas nested more than " + std::to_string(kMaxSchemaDepth) +
                   " deep are not supported");
    return "";
  }
  struct Leave {
    unsigned &d;
    ~Leave() { --d; }
  } leave{depth};
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return fail(path, "is not JSON"), "";
  }
  if (std::optional<bool> b = parsed->getAsBoolean()) {
    if (!*b)
      return fail(path, "the schema false allows no value"), "";
    return "value";
  }
  const json::Object *o = parsed->getAsObject();
  if (!o)
    return fail(path, "a schema must be an object or a boolean"), "";
  for (const char *k : kUnsupported)
    if (o->get(k))
      return fail(path, std::string("'") + k + "' is not supported"), "";
  // (The keywords read with a type: beside a keyword that answers first
  // they would be passed over; beside const or enum they keep the values
  // that meet them, below.)
  for (const char *k : {"$ref", "anyOf", "oneOf", "allOf"}) {
    if (!o->get(k))
      continue;
    for (const auto &[only, needs] : kTypeOnly)
      if (o->get(only))
        return fail(path, std::string("'") + only + "' beside '" + k +
                              "' is not supported"),
               "";
  }
  if (const json::Value *ref = o->get("$ref")) {
    std::optional<llvm::StringRef> to = ref->getAsString();
    if (!to || !to->starts_with("#"))
      return fail(path, "'$ref' must be a pointer into this schema "
                        "(\"#/$defs/...\")"),
             "";
    auto known = refs.find(to->str());
    if (known != refs.end())
      return known->second;
    // The pointer's members, from the schema's root.
    std::string target = rootText;
    std::string last = "ref";
    llvm::StringRef pointer = to->drop_front();
    if (!pointer.empty() && !pointer.consume_front("/"))
      return fail(path, "'$ref' " + to->str() + " is not a JSON pointer"), "";
    llvm::SmallVector<llvm::StringRef, 4> parts;
    if (!to->drop_front().empty())
      pointer.split(parts, '/');
    for (llvm::StringRef part : parts) {
      // (~1 is '/', ~0 is '~'; an object's member, or an array's element
      // by its index.)
      std::string key;
      for (size_t i = 0; i < part.size(); ++i) {
        if (part[i] != '~') {
          key += part[i];
          continue;
        }
        if (i + 1 == part.size() || (part[i + 1] != '0' && part[i + 1] != '1'))
          return fail(path, "'$ref' " + to->str() + " is not a JSON pointer"),
                 "";
        key += part[++i] == '1' ? '/' : '~';
      }
      size_t open = target.find_first_not_of(" \t\r\n");
      std::string next;
      if (open != std::string::npos && target[open] == '{') {
        next = rawMember(target, key);
      } else if (open != std::string::npos && target[open] == '[') {
        std::vector<std::string> items = rawElements(target);
        size_t index;
        if (!llvm::StringRef(key).getAsInteger(10, index) &&
            index < items.size())
          next = items[index];
      }
      if (next.empty())
        return fail(path, "'$ref' " + to->str() + " points at nothing"), "";
      target = std::move(next);
      last = key;
    }
    // (Named before it is visited: a schema may refer to itself.)
    std::string rule = fresh(last);
    refs[to->str()] = rule;
    std::string body = visit(target, to->str().substr(1), last);
    if (body.empty())
      return "";
    define(rule, body);
    return rule;
  }
  // (A const's or an enum's value as the reply must write it: strings as
  // a pattern's grammar writes their characters (jsonStringText: JSON's
  // short escapes, \u00XX for the other controls and DEL), booleans and
  // null as llvm::json prints them; numbers, arrays and objects as the
  // schema writes them, where printing would change a decimal's digits
  // or an object's order.)
  auto value = [&](const json::Value &v, const std::string &raw) {
    bool asWritten = v.kind() == json::Value::Number ||
                     v.kind() == json::Value::Array ||
                     v.kind() == json::Value::Object;
    if (std::optional<llvm::StringRef> s = v.getAsString())
      return literal(jsonStringText(*s));
    if (!asWritten)
      return literal(compact(v));
    // (Less the space between its tokens: outside its strings.)
    std::string tight;
    for (size_t k = 0; k < raw.size(); ++k) {
      if (raw[k] == '"') {
        size_t end = jsonValueEnd(raw, k);
        tight += raw.substr(k, end - k);
        k = end - 1;
      } else if (!llvm::StringRef(" \t\r\n").contains(raw[k])) {
        tight += raw[k];
      }
    }
    return literal(tight);
  };
  if (o->get("const") || o->get("enum")) {
    ValueKeep keep;
    std::string why;
    if (!count(*o, "minLength", path, keep.minLength) ||
        !count(*o, "maxLength", path, keep.maxLength) ||
        !count(*o, "minItems", path, keep.minItems) ||
        !count(*o, "maxItems", path, keep.maxItems))
      return "";
    if (!keep.read(*o, text, why))
      return fail(path, why), "";
    if (const json::Value *c = o->get("const")) {
      std::string raw = rawMember(text, "const");
      const char *k = keep.unmet(*c, raw);
      if (keep.ambiguous)
        return fail(path, kAmbiguous), "";
      if (k)
        return fail(path, std::string("'const' does not meet its '") + k +
                              "'"),
               "";
      return value(*c, raw);
    }
    const json::Array *list = o->get("enum")->getAsArray();
    if (!list || list->empty())
      return fail(path, "'enum' must be a non-empty array"), "";
    std::vector<std::string> raw = rawElements(rawMember(text, "enum"));
    std::string body;
    for (size_t i = 0; i < list->size() && i < raw.size(); ++i)
      if (!keep.unmet((*list)[i], raw[i]))
        body += (body.empty() ? "" : " | ") + value((*list)[i], raw[i]);
    if (keep.ambiguous)
      return fail(path, kAmbiguous), "";
    if (body.empty())
      return fail(path, "no value of 'enum' meets its " + keep.named), "";
    return "( " + body + " )";
  }
  for (const char *key : {"anyOf", "oneOf"})
    if (const json::Value *any = o->get(key)) {
      if (!any->getAsArray() || any->getAsArray()->empty())
        return fail(path, std::string("'") + key +
                              "' must be a non-empty array of schemas"),
               "";
      std::vector<std::string> raw = rawElements(rawMember(text, key));
      std::string body;
      for (size_t i = 0; i < raw.size(); ++i) {
        std::string sub = visit(raw[i], path + "/" + key + "/" +
                                            std::to_string(i),
                                name + "-" + std::to_string(i));
        if (sub.empty())
          return "";
        body += (i ? " | " : "") + sub;
      }
      return "( " + body + " )";
    }
  if (const json::Value *all = o->get("allOf")) {
    if (!all->getAsArray() || all->getAsArray()->size() != 1)
      return fail(path, "'allOf' of other than one schema is not supported"),
             "";
    return visit(rawElements(rawMember(text, "allOf"))[0], path + "/allOf/0",
                 name);
  }
  const json::Value *type = o->get("type");
  if (!type) {
    // (No type: an object's or an array's keywords say which; else any
    // value.)
    if (o->get("properties") || o->get("additionalProperties"))
      return object(*o, text, path, name);
    if (o->get("items") || o->get("prefixItems"))
      return array(*o, text, path, name);
    for (const auto &[only, needs] : kTypeOnly)
      if (o->get(only))
        return fail(path, std::string("'") + only + "' needs \"type\": " +
                              needs),
               "";
    return "value";
  }
  if (std::optional<llvm::StringRef> one = type->getAsString())
    return typed(*one, *o, text, path, name);
  const json::Array *types = type->getAsArray();
  if (!types || types->empty())
    return fail(path, "'type' must be a type's name or an array of them"),
           "";
  std::string body;
  for (size_t i = 0; i < types->size(); ++i) {
    std::optional<llvm::StringRef> t = (*types)[i].getAsString();
    if (!t)
      return fail(path, "'type' must be a type's name or an array of them"),
             "";
    std::string sub = typed(*t, *o, text, path, name + "-" + t->str());
    if (sub.empty())
      return "";
    body += (i ? " | " : "") + sub;
  }
  return "( " + body + " )";
}

SchemaGrammar::SchemaGrammar() : w(std::make_unique<SchemaWriter>()) {}
SchemaGrammar::~SchemaGrammar() = default;

std::string SchemaGrammar::add(const std::string &schema,
                               const std::string &hint, std::string &error) {
  w->rootText = schema;
  w->error.clear();
  w->refs.clear();
  std::string expr = w->visit(schema, "", hint);
  error = w->error;
  return expr;
}

std::string SchemaGrammar::text(const std::string &root) const {
  return "root ::= " + root + "\n" + w->rules + kJsonRules;
}

std::string SchemaGrammar::rule(const std::string &hint) {
  return w->fresh(hint);
}

void SchemaGrammar::define(const std::string &name, const std::string &body) {
  w->define(name, body);
}

bool arch::serve::schemaGrammar(const std::string &schema, std::string &gbnf,
                                std::string &error) {
  SchemaGrammar g;
  std::string root = g.add(schema, "root-value", error);
  if (root.empty())
    return false;
  // (Nothing after the value: the reply ends where it does.)
  gbnf = g.text(root);
  return true;
}

std::string arch::serve::gbnfLiteral(llvm::StringRef text) {
  return literal(text);
}

std::string arch::serve::jsonObjectGrammar() {
  return std::string("root ::= object\n") + kJsonRules;
}
