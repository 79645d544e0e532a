//===- Chat.h - archc run --chat and archc chat-template --------*- C++ -*-===//
//
// A chat model's conversation, in its own prompt format: the checkpoint's
// chat template (compiler/chat/ChatTemplate.h) found beside its tokenizer
// or in its GGUF file, rendered with the special tokens' texts as Hugging
// Face's apply_chat_template renders it; each turn prefills only the text
// the sequence's cache does not hold yet (docs/design.md "Chat").
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_TOOLS_CHAT_H
#define ARCHC_TOOLS_CHAT_H

#include "archrt.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace llvm::cl {
class OptionCategory;
} // namespace llvm::cl

namespace arch {

class ChatTemplate;
struct ModelLib;

/// A model's chat template and the special tokens' texts it is rendered
/// with (bos_token, eos_token, ...).
struct ChatFormat {
  std::unique_ptr<ChatTemplate> tmpl;
  std::string source; // where the template came from
  std::vector<std::pair<std::string, std::string>> specials;
  ChatFormat();
  ~ChatFormat();
};

/// Finds and parses the chat template of a model whose files are in
/// `places` (model directories, or a tokenizer's, in order; GGUF files):
/// a directory's chat_template.jinja, chat_template.json or
/// tokenizer_config.json, a GGUF file's tokenizer.chat_template. `override`
/// (a .jinja file, one of those JSON files, a directory or a GGUF file)
/// replaces the template, not the special tokens. False with `error`.
bool loadChatFormat(const std::vector<std::string> &places,
                    const std::string &override, ChatFormat &format,
                    std::string &error);

struct ChatOptions {
  std::string system;      // a system message first, if not empty
  std::string firstPrompt; // the first user message, if not empty
  int maxReply = 64;       // tokens a reply, at most
  /// The template's other variables, a JSON object's text (checked), or
  /// "" (llama.cpp's --chat-template-kwargs: {"enable_thinking": false}).
  std::string templateKwargs;
  bool verbosePrompt = false;
  bool quiet = false;
};

/// archc run --chat: user messages from firstPrompt, then standard input's
/// lines (a line ending in '\' goes on), each answered in turn, streamed
/// to standard output. Returns the exit status.
int runChat(ModelLib &lib, archrt_seq *seq, archrt_tokenizer *tok,
            archrt_sampler *sampler, const archrt_model_info &info,
            const ChatFormat &format, const ChatOptions &opts);

/// archc chat-template SOURCE: a conversation rendered.
int cmdChatTemplate(int argc, char **argv, llvm::cl::OptionCategory &cat);

} // namespace arch

#endif // ARCHC_TOOLS_CHAT_H
