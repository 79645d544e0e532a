//===- Tool.h - What the archc command's sources share ----------*- C++ -*-===//
#ifndef ARCHC_TOOLS_TOOL_H
#define ARCHC_TOOLS_TOOL_H

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace arch {

/// Prints "archc: error: MSG" and returns 1.
int fail(const std::string &msg);

/// `text` as a JSON string literal: '"', '\' and control bytes escaped,
/// every other byte as it is (text that is not UTF-8 comes back byte for
/// byte).
std::string jsonString(const std::string &text);

/// Seconds on the steady clock since `t0`.
double since(std::chrono::steady_clock::time_point t0);

/// Token ids as " 1 2 3" (the --verbose-prompt logs' lists).
std::string idList(const std::vector<int32_t> &ids);

} // namespace arch

#endif // ARCHC_TOOLS_TOOL_H
