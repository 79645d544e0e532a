//===- CText.cpp - User text made safe for generated C --------------------===//
#include "lowering/CText.h"

#include <cstdio>

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

} // namespace arch
