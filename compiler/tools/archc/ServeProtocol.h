//===- ServeProtocol.h - archc serve's requests, read and answered -*- C++ -*-===//
//
// What archc serve reads from a client and writes back, apart from the
// sockets and the model (Serve.cpp): an HTTP/1.1 request's head, an
// OpenAI-style completion request's body, the error and response bodies,
// and the text a generation releases where stop strings and UTF-8
// characters may still be incomplete. Each reader bounds what it takes and
// answers an HTTP status with a message naming the field (fuzz_serve).
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_TOOLS_SERVEPROTOCOL_H
#define ARCHC_TOOLS_SERVEPROTOCOL_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace arch::serve {

class Grammar;

/// A request's head (the request line and the headers) is read to at most
/// this many bytes; its body to at most kMaxBodyBytes.
constexpr size_t kMaxHeadBytes = size_t(16) << 10;
constexpr size_t kMaxBodyBytes = size_t(16) << 20;
/// Arrays and objects a body may nest (llvm::json recurses a level), and
/// the token ids a prompt may hold.
constexpr size_t kMaxBodyDepth = 128;
constexpr size_t kMaxPromptIds = size_t(1) << 20;
/// Values (counted by their separators and openers) a body may hold.
constexpr size_t kMaxBodyValues = size_t(1) << 21;
/// The most likely tokens a request may ask the log-probabilities of, a
/// token (vLLM's bound; OpenAI's chat allows 20).
constexpr int64_t kMaxTopLogprobs = 20;
/// Tokens a request's logit_bias may name.
constexpr size_t kMaxLogitBias = size_t(1) << 16;
/// Stop strings a request, and their bytes each.
constexpr size_t kMaxStops = 16;
constexpr size_t kMaxStopBytes = 256;

/// An HTTP/1.1 request's head as the server needs it.
struct HttpHead {
  std::string method;
  std::string path; ///< the target without its query
  size_t contentLength = 0;
  bool expectContinue = false; ///< "Expect: 100-continue"
};

/// Parses a request's head: the text before the blank line, lines ended
/// by CRLF (or LF). 0, or the HTTP status to answer (400, 413, 501, 505)
/// with `error`.
int parseHead(const std::string &head, HttpHead &out, std::string &error);

/// A completion request (POST /v1/chat/completions or /v1/completions).
struct Request {
  bool chat = false;
  /// Chat: the messages array's JSON text as sent (its members' order is
  /// the template's), and the chat template's other variables as a JSON
  /// object's text ("tools" and chat_template_kwargs' members; or "").
  std::string messages, templateVars;
  /// Chat: the messages with "" for an assistant message's null content,
  /// where one has it (else ""): rendered where the template refuses
  /// null (Qwen 3's), as llama-server's polyfill does.
  std::string messagesNonNull;
  /// Completions: the prompt's text, or its token ids (promptIsIds).
  std::string prompt;
  std::vector<int64_t> promptIds;
  bool promptIsIds = false;
  int64_t maxTokens = -1; ///< -1: the server's default
  double temperature = -1, topP = -1; ///< -1: the server's default
  uint64_t seed = 0;
  bool hasSeed = false;
  std::vector<std::string> stop;
  bool stream = false, includeUsage = false;
  bool ignoreEos = false; ///< vLLM's ignore_eos: stop tokens go on
  /// The logits' shaping before sampling (OpenAI's penalties and
  /// logit_bias; vLLM's repetition_penalty, llama-server's repeat_penalty,
  /// their top_k and min_p): neutral values shape nothing.
  double presencePenalty = 0, frequencyPenalty = 0, repetitionPenalty = 1;
  double minP = 0;
  int64_t topK = 0; ///< 0 or -1: all tokens
  std::vector<std::pair<int64_t, double>> logitBias; ///< token id, bias
  /// Each generated token's log-probability and this many of the most
  /// likely tokens' (chat's logprobs and top_logprobs, completions'
  /// logprobs); -1: none.
  int64_t logprobs = -1;
  /// Chat: `tools` given and tool_choice not "none" (the reply's calls are
  /// parsed); parallel_tool_calls false keeps the first call only (and
  /// asks a required call's grammar for one).
  bool toolCalls = false, parallelToolCalls = true;
  /// The grammar the reply must keep to (`grammar`, `json_schema`, or
  /// response_format json_object or json_schema); null: none.
  std::shared_ptr<const Grammar> grammar;
  /// Chat: the tools array's text as sent (or ""); tool_choice "required"
  /// (`toolRequired`) or naming a function (`toolNamed`): the reply must
  /// be calls (of that function), whose grammar the model's format gives.
  std::string tools, toolNamed;
  bool toolRequired = false;
  /// Chat: where the reply's <think> thought goes (reasoning_format, as
  /// --reasoning-format: "auto", "none", "deepseek"); "": the server's.
  std::string reasoningFormat;
};

/// Reads a completion request's JSON body. 0, or 400 with `error` naming
/// the field and what it should be. Parameters archc does not implement
/// (n > 1, tool_choice required, a schema's keywords the grammar cannot
/// hold, ...) are refused by name rather than ignored. A grammar, a JSON
/// schema or a response_format is parsed here, into `out.grammar`.
int parseRequest(const std::string &body, bool chat, Request &out,
                 std::string &error);

/// Reads a /tokenize body ({"content": TEXT, "add_special": BOOL}) or a
/// /detokenize body ({"tokens": [IDS]}). 0 or 400 with `error`.
int parseTokenize(const std::string &body, std::string &content,
                  bool &addSpecial, std::string &error);
int parseDetokenize(const std::string &body, std::vector<int64_t> &tokens,
                    std::string &error);

/// Whether JSON text nests at most kMaxBodyDepth arrays and objects and
/// holds at most kMaxBodyValues values, counted before llvm::json's
/// recursive parser is given it; false with `error` otherwise.
bool jsonWithinBounds(const std::string &text, std::string &error);
/// The position of the '"' that closes the JSON string whose opening '"'
/// is text[k] (the text's size where none does).
size_t stringClose(llvm::StringRef text, size_t k);
/// The end of the JSON value that starts at text[k]: past its closing
/// bracket or quote, strings' brackets skipped (the text's size where it
/// does not close).
size_t jsonValueEnd(const std::string &text, size_t k);
/// The text of the top-level member `key`'s value in a JSON object's valid
/// text, as it was written (the last one where a key repeats, as llvm::json
/// keeps it); "" where there is none.
std::string rawMember(const std::string &text, const std::string &key);
/// The members of a JSON object's valid text (the first object in it), in
/// the order written: each key decoded, each value's text as written.
std::vector<std::pair<std::string, std::string>>
rawMembers(const std::string &text);
/// The elements of a JSON array's valid text, each as written.
std::vector<std::string> rawElements(const std::string &text);

/// Where `text` ends in `mark`'s first bytes (a proper prefix of it, the
/// longest, starting at or after `from`): a stream holds the text from
/// there back, as it may yet be the mark. npos where it does not.
size_t partialMark(llvm::StringRef text, llvm::StringRef mark,
                   size_t from = 0);

/// `text` with each byte sequence that is not UTF-8 replaced by U+FFFD,
/// so that it can go into a JSON string.
std::string validUtf8(const std::string &text);

/// An error's body, as OpenAI's API and llama.cpp's server write it.
std::string errorBody(int status, const std::string &message);
/// The reason phrase of an HTTP status.
const char *statusText(int status);

/// The text of a generation, released as far as it cannot be the start of
/// a stop string and ends on a whole UTF-8 character: what a stream sends
/// and what the whole response holds are the same text, cut before the
/// first stop string.
class StopScanner {
public:
  explicit StopScanner(std::vector<std::string> stops);
  /// Adds a token's text; true where it completes a stop string (the text
  /// is then cut where that string starts).
  bool add(const char *piece);
  /// The text that is safe to release since the last call (all of it at
  /// `end`), made valid UTF-8; never the text from `upTo` on (where a
  /// tool call may start).
  std::string take(bool end, size_t upTo = std::string::npos);
  /// All the text, cut at a stop string (not yet made valid).
  const std::string &text() const { return all; }
  /// Whether a stop string ended it.
  bool hit() const { return stopped; }
  /// The bytes of text() released so far.
  size_t releasedBytes() const { return released; }

private:
  std::vector<std::string> stops;
  std::string all;
  size_t released = 0, longest = 0;
  bool stopped = false;
};

} // namespace arch::serve

#endif // ARCHC_TOOLS_SERVEPROTOCOL_H
