//===- Serve.h - archc serve: an OpenAI-style HTTP server -------*- C++ -*-===//
//
// A model served over HTTP as llama.cpp's llama-server and MLC-LLM's
// `mlc_llm serve` serve one: POST /v1/chat/completions (the model's chat
// template), /v1/completions, streamed as server-sent events or whole;
// GET /v1/models and /health; POST /tokenize and /detokenize. One sequence
// serves the requests one at a time and keeps the prefix each shares with
// the one before (docs/design.md "Serving").
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_TOOLS_SERVE_H
#define ARCHC_TOOLS_SERVE_H

#include "ToolCalls.h"
#include "archrt.h"

#include <cstdint>
#include <string>

namespace arch {

struct ChatFormat;
struct ModelLib;

struct ServeOptions {
  std::string host = "127.0.0.1"; ///< as printed
  std::string alias; ///< the model's id in responses ("": its name)
  /// A request's defaults where it gives none.
  double temperature = 1.0, topP = 1.0;
  int64_t maxTokens = -1; ///< -1: until the context is full
  /// The chat template's other variables for every request, a JSON
  /// object's text or "" (a request's chat_template_kwargs go after them).
  std::string templateKwargs;
  int timeoutSeconds = 30; ///< to read a request; to write each send
  bool verbosePrompt = false, quiet = false;
};

/// What is served: an opened model with its tokenizer, and its chat
/// format where one was found (else chat requests are refused with
/// `noChat`).
struct ServedModel {
  ModelLib &lib;
  archrt_model *model;
  archrt_tokenizer *tok;
  const archrt_model_info &info;
  const ChatFormat *format;
  std::string noChat;
  /// How the chat template writes tool calls (a request with tools gets
  /// them parsed into tool_calls).
  serve::ToolFormat tools = serve::ToolFormat::None;
  /// Whether a chat reply's <think> thought goes to reasoning_content
  /// (--reasoning-format), and whether the chat template writes thoughts
  /// (a request's reasoning_format "auto" asks that).
  bool thoughts = false, templateThinks = false;
};

/// A socket listening on host:port (port 0: any free one), before the
/// model is loaded, so that a port taken is said at once; `bound` gets the
/// port. -1 with `error`.
int listenOn(const std::string &host, int port, int &bound,
             std::string &error);

/// Serves on `listener` (from listenOn, bound to `port`; closed here)
/// until SIGINT or SIGTERM. Returns the exit status (0 after a signal).
int runServer(int listener, int port, const ServedModel &m,
              const ServeOptions &opts);

} // namespace arch

#endif // ARCHC_TOOLS_SERVE_H
