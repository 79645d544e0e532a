//===- Tool.h - What the archc command's sources share ----------*- C++ -*-===//
#ifndef ARCHC_TOOLS_TOOL_H
#define ARCHC_TOOLS_TOOL_H

#include <string>

namespace arch {

/// Prints "archc: error: MSG" and returns 1.
int fail(const std::string &msg);

/// `text` as a JSON string literal: '"', '\' and control bytes escaped,
/// every other byte as it is (text that is not UTF-8 comes back byte for
/// byte).
std::string jsonString(const std::string &text);

} // namespace arch

#endif // ARCHC_TOOLS_TOOL_H
