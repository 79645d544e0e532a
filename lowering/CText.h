//===- CText.h - User text made safe for generated C ----------*- C++ -*-===//
//
// Every byte of user text (spec text, model and tensor names, file paths)
// that reaches generated C goes through one of the first two functions;
// the third shortens generated statements.
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

/// Straight-line C statements with runs of repeats rolled into loops: a
/// statement group (a `/* ... */` line and the lines after it, none opening
/// or closing a block) repeated at least kMinRun times with the same text
/// but for integer literals that each step by a constant becomes one
/// `for` over the run, each such literal written base + step * rep (a
/// model's hundreds of thousands of per-expert weight copies compile as a
/// handful of loops). Other text is returned as it is.
std::string rollRepeats(const std::string &statements);

} // namespace arch

#endif // ARCHC_LOWERING_CTEXT_H
