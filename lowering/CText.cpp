//===- CText.cpp - User text made safe for generated C --------------------===//
#include "lowering/CText.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace arch {

std::string cStringLiteral(const std::string &text) {
  std::string s = "\"";
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '\\': s += "\\\\"; break;
    case '"': s += "\\\""; break;
    case '?': s += "\\?"; break;
    case '\n': s += "\\n\"\n    \""; break;
    case '\t': s += "\\t"; break;
    default:
      if (c < 0x20 || c >= 0x7f) {
        char buf[8];
        snprintf(buf, sizeof buf, "\\%03o", c);
        s += buf;
      } else {
        s += ch;
      }
    }
  }
  return s + "\"";
}

std::string cComment(const std::string &text) {
  std::string s = "/* ";
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    bool unsafe = c < 0x20 || c >= 0x7f || c == '*' || c == '?' || c == '\\';
    s += unsafe ? '_' : ch;
  }
  return s + " */";
}

namespace {

/// Where a cut-out literal was in a group's skeleton.
constexpr char kLiteral = '\x01';

/// A statement group: its comment line and its code, the code's integer
/// literals cut out (`skeleton` has kLiteral for each) and kept in `values`.
struct Group {
  std::string comment, code, skeleton;
  std::vector<int64_t> values;
  bool rollable = true;
};

bool identChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

void cutLiterals(Group &g) {
  const std::string &s = g.code;
  for (size_t i = 0; i < s.size();) {
    bool start = std::isdigit(static_cast<unsigned char>(s[i])) &&
                 (i == 0 || !identChar(s[i - 1]));
    if (!start) {
      if (s[i] == '{' || s[i] == '}' || s[i] == '"' || s[i] == '\'' ||
          s[i] == '#' || s[i] == kLiteral)
        g.rollable = false; // blocks, literals and directives stay as they are
      g.skeleton += s[i++];
      continue;
    }
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
      ++j;
    // A float (1.5, 1e-05), an octal (017) or an over-long literal is not
    // a counter.
    if ((j < s.size() && identChar(s[j])) || j - i > 15 ||
        (s[i] == '0' && j - i > 1) ||
        (i >= 2 && (s[i - 1] == '-' || s[i - 1] == '+') &&
         (s[i - 2] == 'e' || s[i - 2] == 'E'))) {
      g.rollable = false;
      g.skeleton.append(s, i, j - i);
    } else {
      g.values.push_back(std::stoll(s.substr(i, j - i)));
      g.skeleton += kLiteral;
    }
    i = j;
  }
}

} // namespace

std::string rollRepeats(const std::string &statements) {
  constexpr size_t kMinRun = 4;
  // Lines into groups: each comment line opens one.
  std::vector<Group> groups;
  size_t at = 0;
  while (at < statements.size()) {
    size_t end = statements.find('\n', at);
    end = end == std::string::npos ? statements.size() : end + 1;
    std::string line = statements.substr(at, end - at);
    at = end;
    size_t text = line.find_first_not_of(' ');
    bool comment = text != std::string::npos &&
                   line.compare(text, 2, "/*") == 0 &&
                   line.find("*/") == line.size() - 3;
    if (comment || groups.empty())
      groups.emplace_back();
    (comment ? groups.back().comment : groups.back().code) += line;
  }
  for (Group &g : groups)
    cutLiterals(g);
  std::string out;
  for (size_t i = 0; i < groups.size();) {
    const Group &g = groups[i];
    size_t n = 1;
    std::vector<int64_t> step;
    if (g.rollable && !g.values.empty() && i + 1 < groups.size() &&
        groups[i + 1].rollable && groups[i + 1].skeleton == g.skeleton) {
      for (size_t v = 0; v < g.values.size(); ++v)
        step.push_back(groups[i + 1].values[v] - g.values[v]);
      n = 2;
      while (i + n < groups.size()) {
        const Group &h = groups[i + n];
        bool same = h.rollable && h.skeleton == g.skeleton;
        for (size_t v = 0; same && v < step.size(); ++v)
          same = h.values[v] == g.values[v] + step[v] * int64_t(n);
        if (!same)
          break;
        ++n;
      }
    }
    if (n < kMinRun) {
      out += g.comment + g.code;
      ++i;
      continue;
    }
    // for (rep < n): the code with each stepping literal base + step * rep.
    size_t indent = g.code.find_first_not_of(' ');
    std::string pad = g.code.substr(0, indent);
    out += g.comment + pad + "for (int64_t rep = 0; rep < " +
           std::to_string(n) + "; ++rep) { /* " + std::to_string(n) +
           " alike */\n";
    size_t v = 0;
    for (size_t c = 0; c < g.skeleton.size(); ++c) {
      char ch = g.skeleton[c];
      if (ch == '\n' && c + 1 < g.skeleton.size()) {
        out += "\n  ";
        continue;
      }
      if (ch != kLiteral) {
        out += c == 0 ? "  " + std::string(1, ch) : std::string(1, ch);
        continue;
      }
      int64_t base = g.values[v], d = step[v];
      ++v;
      out += d == 0 ? std::to_string(base)
                    : "(" + std::to_string(base) + " + " + std::to_string(d) +
                          " * rep)";
    }
    out += pad + "}\n";
    i += n;
  }
  return out;
}

} // namespace arch
