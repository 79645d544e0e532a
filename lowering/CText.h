//===- CText.h - User text made safe for generated C ----------*- C++ -*-===//
//
// Every byte of user text (spec text, model and tensor names, file paths)
// that reaches generated C goes through one of these two functions.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_CTEXT_H
#define ARCHC_LOWERING_CTEXT_H

#include <string>

namespace arch {

/// A C string literal that denotes exactly the bytes of `text`, whatever
/// they are: quotes, backslashes, '?' (no trigraph can form), control and
/// non-ASCII bytes are escaped (octal, never the greedy hex form). Newlines
/// also split the literal across lines for readability.
std::string cStringLiteral(const std::string &text);

/// A whole C block comment `/* text */` that shows `text` with every byte
/// that could end the comment or splice lines ('*', '?', '\', control and
/// non-ASCII bytes) replaced by '_'.
std::string cComment(const std::string &text);

} // namespace arch

#endif // ARCHC_LOWERING_CTEXT_H
