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

#include "llvm/ADT/STLFunctionalExtras.h"

#include <initializer_list>
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
namespace serve {
class ConstrainedReply;
class Grammar;
struct GrammarVocabulary;
} // namespace serve

/// A model's chat template and the special tokens' texts it is rendered
/// with (bos_token, eos_token, ...).
struct ChatFormat {
  std::unique_ptr<ChatTemplate> tmpl;
  std::string source; // where the template came from
  std::string text;   // the template's text
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

/// The vocabulary as grammars see it (Grammar.h): each token's text
/// decoded after itself (so within a text), and the stop tokens but
/// `goOn` as the tokens that end a reply.
std::unique_ptr<serve::GrammarVocabulary>
grammarVocabulary(ModelLib &lib, archrt_tokenizer *tok, int32_t vocab,
                  const std::vector<int32_t> &goOn = {});

/// How sampleToken ended.
enum class Sampled {
  Token,  ///< a token in `next`
  End,    ///< the grammar ends the reply here (held->error(): why, where
          ///< it cannot go on; "": the text is whole, nothing may follow)
  Failed, ///< the sampler failed, or the grammar refused a token its mask
          ///< allowed (archc's fault): `error`
};
/// The next token, sampled by `sampler` from `logits` (the model's,
/// shaped), held to `held` where given: masked first where
/// held->maskFirst (unless the caller's shaping masked them); else the
/// token sampled first stands where the grammar takes it, and a token
/// refused is sampled again under the mask (Grammar.h ConstrainedReply).
Sampled sampleToken(ModelLib &lib, archrt_sampler *sampler,
                    const float *logits, serve::ConstrainedReply *held,
                    int32_t &next, std::string &error);

struct ChatOptions {
  std::string system;      // a system message first, if not empty
  std::string firstPrompt; // the first user message, if not empty
  int maxReply = 64;       // tokens a reply, at most
  /// The template's other variables, a JSON object's text (checked), or
  /// "" (llama.cpp's --chat-template-kwargs: {"enable_thinking": false}).
  std::string templateKwargs;
  bool verbosePrompt = false;
  bool quiet = false;
  /// Each reply held to it (--grammar, --json-schema), where set, its
  /// logits masked before the first sample where `maskFirst`
  /// (ConstrainedReply).
  std::shared_ptr<const serve::Grammar> grammar;
  bool maskFirst = false;
};

/// Chat::render's context: the members of each of `kwargs` (JSON objects'
/// texts, or ""), in order, then `messages`, which is a JSON array's text,
/// and add_generation_prompt true; a kwarg named messages or
/// add_generation_prompt does not replace them (the later key wins).
std::string chatContext(const std::string &messagesJSON,
                        std::initializer_list<std::string> kwargs);

/// A sequence whose positions hold known tokens, so that the next prompt
/// (a chat's turn, a server's request) prefills only what they do not
/// share with it: the conversation's text tokenized whole each time, as
/// apply_chat_template tokenizes it (docs/design.md "Chat").
struct HeldSequence {
  ModelLib &lib;
  archrt_seq *seq;
  int32_t maxSeqLen;
  std::vector<int32_t> held; ///< the tokens the positions hold

  /// What a prefill kept and made.
  struct Prefill {
    size_t kept = 0;   ///< positions kept from before
    bool reset = false; ///< the cache could not go back: started over
    std::vector<int32_t> prompt; ///< the tokens prefilled
    double seconds = 0;
  };
  /// Keeps the longest prefix `held` shares with `ids` (less the last
  /// token where they share all of it: a prefill makes the logits),
  /// truncating the sequence, or resetting it where it cannot go back (a
  /// linear-attention state, a ring past its slack), and prefills the
  /// rest. `ids` is not empty and fits maxSeqLen. False with `error`.
  bool prefill(const std::vector<int32_t> &ids, Prefill &out,
               std::string &error);

  /// Why a generation ended.
  enum class End { Stop, Length, Caller };
  /// Samples after a prefill, up to `maxTokens` tokens (fewer where the
  /// cache fills), until a stop token (not given to `piece`), or until
  /// `piece` returns false. Each token's text goes to `piece(text, id)`;
  /// each token but the last is decoded into the cache (the next prompt
  /// holds the last). `ids` gets the tokens given to `piece`. False with
  /// `error` on the runtime's failure.
  /// (`ignoreStop`: stop tokens do not end it, and are given to `piece`
  /// as any other, as vLLM's ignore_eos: benchmarks. `goOn`: tokens that
  /// do not end it though the tokenizer holds them special, a tool-call
  /// format's marks. `shape`: the logits each token is sampled from, made
  /// from the model's: penalties, biases, cuts. `held`: the grammar each
  /// token is sampled under (sampleToken) and taken into; where it ends
  /// the reply, the generation ends as at a stop token, and where it
  /// refuses a token it allowed, the generation fails.)
  bool generate(
      archrt_tokenizer *tok, archrt_sampler *sampler, int maxTokens,
      llvm::function_ref<bool(const char *, int32_t)> piece,
      std::vector<int32_t> &ids, End &end, std::string &error,
      bool ignoreStop = false, const std::vector<int32_t> &goOn = {},
      llvm::function_ref<const float *(const float *)> shape = nullptr,
      serve::ConstrainedReply *held = nullptr);
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
