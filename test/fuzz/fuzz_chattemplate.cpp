//===- fuzz_chattemplate.cpp - template text -> parse -> render -----------===//
//
// Any bytes as a chat template either fail to parse, or render a fixed
// conversation (a system message, a user turn, a reply with tool calls, a
// tool answer, each content with quotes, newlines and non-ASCII text) to
// text or to an error; every error names the template's file, line and
// column. Never a crash, a hang (nesting, range() and the output are
// bounded) or undefined behaviour.
//
//===----------------------------------------------------------------------===//
#include "compiler/chat/ChatTemplate.h"

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

const char *const kContext = R"({"messages": [
  {"role": "system", "content": "Be brief. \"Quotes\" and \\ too."},
  {"role": "user", "content": "  Hello {{ not a tag }} 日本語 🙂\n"},
  {"role": "assistant", "content": "<think>\nhm\n</think>\n\nHi!",
   "tool_calls": [{"type": "function", "function": {"name": "f",
     "arguments": {"x": 1, "y": [true, null, 2.5e-3]}}}]},
  {"role": "tool", "content": "{\"ok\": 1}"},
  {"role": "user", "content": ""}],
 "tools": [{"type": "function", "function": {"name": "f"}}],
 "add_generation_prompt": true, "enable_thinking": false})";

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(reinterpret_cast<const char *>(data), size);
  std::string error, out;
  auto tmpl = arch::ChatTemplate::parse(source, "fuzz.jinja", error);
  if (!tmpl) {
    if (error.rfind("fuzz.jinja:", 0) != 0)
      abort(); // every failure names the template
    return 0;
  }
  if (!tmpl->render(kContext, {{"bos_token", "<s>"}, {"eos_token", "</s>"}},
                    out, error) &&
      error.rfind("fuzz.jinja:", 0) != 0)
    abort();
  return 0;
}
