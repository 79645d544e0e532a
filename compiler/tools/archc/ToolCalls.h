//===- ToolCalls.h - The tool calls in a chat model's reply -----*- C++ -*-===//
//
// A chat model asked with `tools` writes its calls as text in its own
// format: Hermes' <tool_call> tags (Qwen 2.5 and 3, Hermes 2 Pro), Llama
// 3.1's bare JSON object, Mistral's [TOOL_CALLS], DeepSeek V3's and R1's
// <｜tool▁calls▁begin｜>. archc serve returns them as an OpenAI response's
// `tool_calls`, as llama-server's and vLLM's tool parsers do; a reply whose
// calls do not parse is content, as the model wrote it (docs/design.md
// "Tool calls").
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_TOOLS_TOOLCALLS_H
#define ARCHC_TOOLS_TOOLCALLS_H

#include <cstddef>
#include <string>
#include <vector>

namespace arch::serve {

enum class ToolFormat { None, Hermes, Llama3, Mistral, DeepSeek };

/// The format a chat template writes tool calls in, from its text (the
/// marks it writes for an assistant's calls); None where it shows none.
ToolFormat detectToolFormat(const std::string &templateText);
/// --tool-call-parser's names (none, hermes, llama3-json, mistral,
/// deepseek); false for another.
bool toolFormatNamed(const std::string &name, ToolFormat &out);
const char *toolFormatName(ToolFormat f);

struct ToolCall {
  std::string name;
  std::string arguments; ///< a JSON object's text, as the model wrote it
};

/// A whole reply: its calls, and the content around them.
struct ToolReply {
  std::vector<ToolCall> calls; ///< none: the reply is all content
  /// Where the calls start (with the space before them): the text before
  /// is content.
  size_t begin = 0;
  /// The rest of the content: the text between and after the calls, less
  /// the space before each call and at the content's ends.
  std::string after;
};

/// Splits a reply into content and calls (none where the reply holds no
/// well-formed call: then it is content whole).
ToolReply parseToolCalls(ToolFormat f, const std::string &text);

/// The texts a format marks calls with: a tokenizer that holds them as
/// special tokens must not take them for the end of a reply.
std::vector<std::string> toolCallMarks(ToolFormat f);

/// Where calls may start in a reply so far (a format's mark, or its first
/// bytes at the end, with the space before them; the space at the end): a
/// stream holds the text from there until the reply is whole. npos where
/// none can start yet. Never past where parseToolCalls finds the calls
/// begin in a reply this one starts; `from`: no call starts before it
/// (what a stream has released), so that each token's look is short.
size_t toolCallsBegin(ToolFormat f, const std::string &text, size_t from = 0);

} // namespace arch::serve

#endif // ARCHC_TOOLS_TOOLCALLS_H
