//===- ToolCalls.h - A chat reply's thought and tool calls ------*- C++ -*-===//
//
// A thinking model (DeepSeek R1, Qwen 3, QwQ) writes its reasoning inside
// <think>...</think> before its answer; archc serve returns it as the
// message's reasoning_content, as llama-server's --reasoning-format
// deepseek and vLLM's reasoning parsers do.
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

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <string>
#include <vector>

namespace arch::serve {

/// The tool-call formats: Mistral's and DeepSeek's in two layouts each,
/// which their parsers both read but a required call's grammar writes as
/// the model's template does: Mistral v0.3's JSON array after
/// [TOOL_CALLS] or Small 3.2's / Magistral's name[ARGS]{...} after each
/// (MistralArgs); DeepSeek V3's and R1's function<sep>name and a json
/// fence or V3.1's name<sep>{...} (DeepSeekV31).
enum class ToolFormat {
  None,
  Hermes,
  Llama3,
  Mistral,
  MistralArgs,
  DeepSeek,
  DeepSeekV31
};

/// The format a chat template writes tool calls in, from its text (the
/// marks it writes for an assistant's calls, and the layout around
/// them); None where it shows none.
ToolFormat detectToolFormat(const std::string &templateText);
/// --tool-call-parser's names (none, hermes, llama3-json, mistral,
/// mistral-args, deepseek, deepseek-v3.1); false for another.
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

/// The texts a format marks calls with, and a thought's (`thinks`): a
/// tokenizer that holds them as special tokens must not take them for the
/// end of a reply.
std::vector<std::string> replyMarks(ToolFormat f, bool thinks);

/// The thought a required call's reply may start with: none, the rest of
/// one the prompt opened (its text, then `</think>` and a blank line), or
/// one the model may open itself (`<think>`, its text, `</think>` and a
/// blank line; or none).
enum class ThoughtBefore { None, Opened, Own };

/// A grammar (GBNF text) of replies that are calls in format `f` of the
/// tools in `tools` (a request's tools array's text), their arguments of
/// each tool's parameters schema: tool_choice "required", or one named
/// (`only`: that tool's calls only); one call, or (`parallel`) one or
/// more; after a thought as `thought` says (its text any text in which
/// `</think>` does not appear: the first ends it). False with `error` (a
/// format that writes no calls, a name not among the tools, a schema the
/// grammar cannot hold).
bool toolCallGrammar(ToolFormat f, const std::string &tools,
                     const std::string &only, bool parallel,
                     ThoughtBefore thought, std::string &gbnf,
                     std::string &error);

/// Where calls may start in a reply so far (a format's mark, or its first
/// bytes at the end, with the space before them; the space at the end): a
/// stream holds the text from there until the reply is whole. npos where
/// none can start yet. Never past where parseToolCalls finds the calls
/// begin in a reply this one starts; `from`: no call starts before it
/// (what a stream has released), so that each token's look is short.
size_t toolCallsBegin(ToolFormat f, llvm::StringRef text, size_t from = 0);

/// Where a reply's thought lies, in the reply so far.
struct Thought {
  /// The reasoning [begin, end), less the space at its ends; end is npos
  /// while the thought is open. begin is npos where there is no thought.
  size_t begin = std::string::npos, end = std::string::npos;
  /// Where the content starts (past the thought and the space after it);
  /// npos while the thought is open, or while one may yet start.
  size_t content = 0;
  /// A stream may release the reply up to here: the text past it may still
  /// change its part (a mark's first bytes, space that may end a thought).
  size_t hold = std::string::npos;
};

/// The thought of a reply (`text`): one that starts with <think>, or that
/// the prompt opened (`open`; a <think> the reply starts with all the same
/// is left out). `whole`: the reply is complete, so a
/// thought still open is all reasoning, and no content.
Thought findThought(const std::string &text, bool open, bool whole);
/// Whether a chat template writes thoughts (it names <think>), whether a
/// prompt opens one (it ends in <think>: R1's, QwQ's), and whether it
/// closes one (it ends in </think>: Qwen 3's with enable_thinking false,
/// DeepSeek V3.1's without thinking).
bool templateThinks(const std::string &templateText);
bool opensThought(const std::string &prompt);
bool closesThought(const std::string &prompt);

class StopScanner;

/// A chat reply's parts: its thought (reasoning_content), its content and
/// its tool calls, whole and as a stream releases them (the text from
/// where a call may start held back until the reply is whole), so that a
/// stream's deltas make the whole response's parts.
class ReplyParts {
public:
  /// `tools`: the calls' format (None: no calls looked for); `thinks`:
  /// thoughts are reasoning; `opened`: the prompt opened one.
  ReplyParts(ToolFormat tools, bool thinks, bool opened)
      : tools(tools), thinks(thinks), opened(opened) {}

  struct Delta {
    std::string reasoning, content;
  };
  /// What a stream sends after a token was added to `text`.
  Delta step(StopScanner &text);
  /// The reply whole: fills the parts below (its calls looked for where it
  /// ended as the model ended it, `modelEnded`: EOS or a stop string; the
  /// first only without `parallel`), and returns the stream's last deltas.
  Delta finish(StopScanner &text, bool modelEnded, bool parallel);

  bool thought = false; ///< the reply has a thought (its reasoning may be "")
  std::string reasoning, content;
  std::vector<ToolCall> calls;

private:
  ToolFormat tools;
  bool thinks, opened;
  /// Where the reasoning and the content sent so far end in the reply.
  size_t sentReasoning = 0, sentContent = 0;
  /// What of the reply's released bytes (to `to`) is not sent yet, as
  /// deltas by `th`'s parts (the content's to `contentEnd`).
  Delta split(const std::string &text, size_t to, const Thought &th,
              size_t contentEnd);
};

} // namespace arch::serve

#endif // ARCHC_TOOLS_TOOLCALLS_H
