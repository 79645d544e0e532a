//===- fuzz_serve.cpp - archc serve's request readers ----------------------===//
//
// Any bytes as what a client sends archc serve: a request's head, a
// completion request's body (chat or not), a /tokenize or /detokenize
// body, each answered with 0 or an HTTP status and a message; and any
// token texts and stop strings through the StopScanner, whose released
// text must be valid UTF-8, hold no stop string, and be, in pieces, the
// text it holds whole; and any reply through ReplyParts (each tool-call
// format, with and without thoughts), streamed and whole: a stream's
// reasoning and content deltas must make the whole response's reasoning
// and content (so no call's text is released as content), valid UTF-8;
// each call must have a name and a JSON object for arguments. Never a
// crash or undefined behaviour.
//
//===----------------------------------------------------------------------===//
#include "compiler/tools/archc/ServeProtocol.h"
#include "compiler/tools/archc/ToolCalls.h"

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace arch::serve;

namespace {

void check(int status, const std::string &error,
           std::initializer_list<int> allowed) {
  if (status == 0)
    return;
  bool ok = false;
  for (int s : allowed)
    ok |= s == status;
  if (!ok || error.empty())
    abort();
}

/// Splits `text` at `sep`.
std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

/// Stop strings before a 0x00 in `data` (split at 0x02; valid UTF-8, as
/// JSON gives them); the rest, after it, in `rest`.
std::vector<std::string> stopsOf(const std::string &data, std::string &rest) {
  size_t cut = data.find('\0');
  std::vector<std::string> stops;
  if (cut != std::string::npos)
    for (std::string &s : split(data.substr(0, cut), '\x02'))
      if (!s.empty() && s.size() <= kMaxStopBytes && stops.size() < kMaxStops)
        stops.push_back(validUtf8(s));
  rest = cut == std::string::npos ? data : data.substr(cut + 1);
  return stops;
}

void scan(const std::string &data) {
  // Stops before a 0x00, then pieces split at 0x01; bit 0 of the first
  // byte: whether the pieces are taken one by one (a stream) or once at
  // the end.
  std::string rest;
  std::vector<std::string> stops = stopsOf(data, rest);
  bool stream = !data.empty() && (data[0] & 1);
  StopScanner scanner(stops);
  std::string released;
  for (const std::string &piece : split(rest, '\x01')) {
    if (scanner.add(piece.c_str()))
      break;
    if (stream)
      released += scanner.take(false);
  }
  released += scanner.take(true);
  if (released != validUtf8(scanner.text()) || validUtf8(released) != released)
    abort();
  for (const std::string &s : stops)
    if (scanner.text().find(s) != std::string::npos)
      abort();
}

/// A reply in pieces (split at 0x01, after stop strings) through
/// ReplyParts, as archc serve streams it and answers it whole. The first
/// byte: the calls' format (% 7), 0x10 thoughts are reasoning, 0x20 the
/// prompt opened one, 0x40 the reply was cut short, 0x80 one call only.
void reply(const std::string &data) {
  static const ToolFormat kFormats[] = {ToolFormat::None, ToolFormat::Hermes,
                                        ToolFormat::Llama3,
                                        ToolFormat::Mistral,
                                        ToolFormat::MistralArgs,
                                        ToolFormat::DeepSeek,
                                        ToolFormat::DeepSeekV31};
  uint8_t how = uint8_t(data[0]);
  ReplyParts parts(kFormats[how % 7], how & 0x10, how & 0x20);
  std::string rest;
  StopScanner scanner(stopsOf(data.substr(1), rest));
  std::string reasoning, content;
  for (const std::string &piece : split(rest, '\x01')) {
    if (scanner.add(piece.c_str()))
      break;
    ReplyParts::Delta d = parts.step(scanner);
    reasoning += d.reasoning;
    content += d.content;
  }
  ReplyParts::Delta d =
      parts.finish(scanner, scanner.hit() || !(how & 0x40), !(how & 0x80));
  reasoning += d.reasoning;
  content += d.content;
  if (content != parts.content || reasoning != parts.reasoning ||
      (!parts.thought && !reasoning.empty()) ||
      validUtf8(content) != content || validUtf8(reasoning) != reasoning)
    abort();
  for (const ToolCall &call : parts.calls) {
    std::string error;
    if (call.name.empty() || !jsonWithinBounds(call.arguments, error))
      abort();
    auto v = llvm::json::parse(call.arguments);
    if (!v || !v->getAsObject())
      abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string text(reinterpret_cast<const char *>(data) + 1, size - 1);
  std::string error;
  switch (data[0] % 7) {
  case 0: {
    HttpHead head;
    check(parseHead(text, head, error), error, {400, 413, 501, 505});
    break;
  }
  case 1:
  case 2: {
    Request r;
    check(parseRequest(text, data[0] % 7 == 1, r, error), error, {400});
    break;
  }
  case 3: {
    std::string content;
    bool special;
    check(parseTokenize(text, content, special, error), error, {400});
    break;
  }
  case 4: {
    std::vector<int64_t> ids;
    check(parseDetokenize(text, ids, error), error, {400});
    break;
  }
  case 5:
    scan(std::string(reinterpret_cast<const char *>(data), size));
    break;
  default:
    reply(text.empty() ? std::string(1, '\0') : text);
  }
  return 0;
}
