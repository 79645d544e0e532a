//===- fuzz_grammar.cpp - Grammars, their token masks, JSON schemas -------===//
//
// Any bytes as a GBNF grammar (or, after a first byte 'S', a JSON schema
// whose grammar must then parse; after a 'P', a string schema's pattern,
// likewise; after a 'T', a request's tools, whose
// required calls' grammar in each format must parse), a vocabulary of
// token texts and a text:
// the grammar parses or is refused with an error; where it parses, the
// mask over the vocabulary's trie must allow exactly the tokens whose
// text a copy of the matcher accepts, at the start and after each byte of
// the text the matcher takes. Never a crash, undefined behaviour or a
// hang.
//
//===----------------------------------------------------------------------===//
#include "compiler/tools/archc/Grammar.h"
#include "compiler/tools/archc/ServeProtocol.h"
#include "compiler/tools/archc/ToolCalls.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

using namespace arch::serve;

namespace {

/// `text` split at `sep` (empty parts kept).
std::vector<std::string> split(llvm::StringRef text, char sep) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  text.split(parts, sep, -1, true);
  return std::vector<std::string>(parts.begin(), parts.end());
}

/// `text`'s JSON value where it is JSON within the server's bounds (as
/// the server reads a body before it takes its schema or tools).
std::optional<llvm::json::Value> boundedJson(const std::string &text) {
  std::string error;
  if (!jsonWithinBounds(text, error))
    return std::nullopt;
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return std::nullopt;
  }
  return std::move(*parsed);
}

/// The mask of `m` (whose walks' states stay, and are compacted, from
/// mask to mask) against each token's text accepted by a copy of it, and
/// by the check that leaves it as it was (accepts: the token sampled
/// before any mask is made).
void checkMask(GrammarMatcher &m, const TokenTrie &trie,
               const std::vector<std::string> &vocab) {
  std::vector<uint8_t> allowed;
  std::string error;
  GrammarMatcher before = m;
  if (!m.mask(trie, allowed, error)) {
    if (error.empty())
      abort();
    return;
  }
  for (size_t id = 0; id < vocab.size(); ++id) {
    GrammarMatcher one = before;
    bool takes = !vocab[id].empty() && one.accept(vocab[id]);
    if (takes != bool(allowed[id]) ||
        (!vocab[id].empty() && before.accepts(vocab[id]) != takes))
      abort();
  }
}

/// A reply held to `g` over `vocab` and a stop token: at each token,
/// allows() as masked() leaves the logits, before the mask and after it;
/// then the token `picks` names, where allowed, taken.
void checkReply(std::shared_ptr<const Grammar> g,
                const std::vector<std::string> &vocab,
                const std::string &picks) {
  std::vector<std::string> texts = vocab;
  texts.push_back("");
  std::vector<uint8_t> ending(texts.size(), 0);
  ending.back() = 1;
  GrammarVocabulary v(texts, ending);
  ConstrainedReply r(v, std::move(g), false);
  std::vector<float> zeros(texts.size(), 0.0f);
  for (size_t k = 0; k <= picks.size() && k < 8; ++k) {
    std::vector<uint8_t> before(texts.size());
    for (size_t id = 0; id < texts.size(); ++id)
      before[id] = r.allows(int32_t(id));
    const float *l = r.masked(zeros.data());
    if (!l)
      return;
    for (size_t id = 0; id < texts.size(); ++id)
      if (bool(before[id]) != (l[id] == 0.0f) ||
          r.allows(int32_t(id)) != bool(before[id]))
        abort();
    if (k == picks.size())
      return;
    size_t id = uint8_t(picks[k]) % texts.size();
    if (!before[id] || ending[id])
      return;
    if (!r.take(int32_t(id)))
      abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  // grammar \0 token \1 token ... \0 text
  std::vector<std::string> parts = split(input, '\0');
  std::string text = parts[0], error;
  if (!text.empty() && text[0] == 'T') {
    std::string tools = text.substr(1), gbnf;
    std::optional<llvm::json::Value> parsed = boundedJson(tools);
    if (!parsed || !parsed->getAsArray())
      return 0;
    // (The calls' grammar, where there is one, always parses.)
    for (ToolFormat f : {ToolFormat::Hermes, ToolFormat::Llama3,
                         ToolFormat::Mistral, ToolFormat::MistralArgs,
                         ToolFormat::DeepSeek, ToolFormat::DeepSeekV31})
      for (bool parallel : {false, true})
        for (ThoughtBefore thought : {ThoughtBefore::None,
                                      ThoughtBefore::Opened,
                                      ThoughtBefore::Own}) {
          if (toolCallGrammar(f, tools, parallel ? "" : "a", parallel,
                              thought, gbnf, error)) {
            if (!Grammar::parse(gbnf, error))
              abort();
          } else if (error.empty()) {
            abort();
          }
        }
    return 0;
  }
  if (!text.empty() && text[0] == 'P') {
    // (A pattern is a JSON string's: UTF-8.)
    std::string pattern = text.substr(1);
    if (!llvm::json::isUTF8(pattern))
      return 0;
    std::string schema;
    llvm::raw_string_ostream os(schema);
    os << llvm::json::Value(llvm::json::Object{{"type", "string"},
                                               {"pattern", pattern}});
    text = "S" + schema;
  }
  if (!text.empty() && text[0] == 'S') {
    std::string schema = text.substr(1), gbnf;
    if (!boundedJson(schema))
      return 0;
    if (!schemaGrammar(schema, gbnf, error)) {
      if (error.empty())
        abort();
      return 0;
    }
    text = gbnf;
    // (The schema writer's grammar always parses.)
    if (!Grammar::parse(text, error))
      abort();
  }
  std::shared_ptr<const Grammar> g = Grammar::parse(text, error);
  if (!g) {
    if (error.empty())
      abort();
    return 0;
  }
  std::vector<std::string> vocab =
      parts.size() > 1 ? split(parts[1], '\x01') : std::vector<std::string>();
  if (vocab.size() > 64)
    vocab.resize(64);
  TokenTrie trie(vocab);
  GrammarMatcher m(g);
  checkMask(m, trie, vocab);
  std::string reply = parts.size() > 2 ? parts[2] : "";
  checkReply(g, vocab, reply);
  for (size_t k = 0; k < reply.size() && k < 16; ++k) {
    if (!m.accept(reply.substr(k, 1)))
      break;
    checkMask(m, trie, vocab);
  }
  return 0;
}
