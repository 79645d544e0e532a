//===- Tool.cpp - What the archc command's sources share ------------------===//
#include "Tool.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>

int arch::fail(const std::string &msg) {
  llvm::errs() << "archc: error: " << msg << "\n";
  return 1;
}

std::string arch::jsonString(const std::string &text) {
  std::string s = "\"";
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      s += '\\';
      s += ch;
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      s += buf;
    } else {
      s += ch;
    }
  }
  return s + "\"";
}

double arch::since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

std::string arch::idList(const std::vector<int32_t> &ids) {
  std::string s;
  for (int32_t id : ids)
    s += " " + std::to_string(id);
  return s;
}
