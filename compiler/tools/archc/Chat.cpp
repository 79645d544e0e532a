//===- Chat.cpp - archc run --chat and archc chat-template ----------------===//
#include "Chat.h"
#include "Grammar.h"

#include "ModelLib.h"
#include "Tool.h"
#include "compiler/chat/ChatTemplate.h"
#include "compiler/import/GGUFConfig.h"
#include "compiler/spec/ArchSpec.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <unistd.h>

namespace arch {

ChatFormat::ChatFormat() = default;
ChatFormat::~ChatFormat() = default;

namespace {

namespace fs = std::filesystem;
namespace cl = llvm::cl;
namespace json = llvm::json;

/// Templates, configs and message files are read whole; past this they are
/// refused (a template's own output has the same bound).
constexpr size_t kMaxChatFileBytes = size_t(64) << 20;

/// A regular file's text (a FIFO or device refused without blocking).
bool readText(const std::string &path, std::string &text, std::string &error) {
  if (readRegularFile(path, kMaxChatFileBytes, text, error))
    return true;
  error = path + ": " + error;
  return false;
}

/// The special tokens Hugging Face passes a template (its
/// special_tokens_map), where tokenizer_config.json has them.
const char *const kSpecialKeys[] = {"bos_token", "eos_token", "unk_token",
                                    "sep_token", "pad_token", "cls_token",
                                    "mask_token"};

using Strings = std::vector<std::pair<std::string, std::string>>;

/// A tokenizer_config.json or chat_template.json: its chat_template (a
/// string, or named templates of which "default") into `tmpl` when not
/// null, its special tokens into `specials` when not null. `hasTemplate`
/// says whether it had a chat_template; false with `error` on a malformed
/// file or template.
bool readConfigJSON(const std::string &path, std::string *tmpl,
                    Strings *specials, bool &hasTemplate,
                    std::string &error) {
  hasTemplate = false;
  std::string text;
  if (!readText(path, text, error))
    return false;
  auto parsed = json::parse(text);
  if (!parsed) {
    error = path + ": " + llvm::toString(parsed.takeError());
    return false;
  }
  const json::Object *root = parsed->getAsObject();
  if (!root) {
    error = path + ": not a JSON object";
    return false;
  }
  if (specials)
    for (const char *key : kSpecialKeys) {
      const json::Value *v = root->get(key);
      std::optional<llvm::StringRef> s;
      if (v && v->getAsString())
        s = v->getAsString();
      else if (v && v->getAsObject()) // an AddedToken: {"content": ...}
        s = v->getAsObject()->getString("content");
      if (s)
        specials->emplace_back(key, s->str());
    }
  const json::Value *t = tmpl ? root->get("chat_template") : nullptr;
  if (!t)
    return true;
  hasTemplate = true;
  if (auto s = t->getAsString()) {
    *tmpl = s->str();
    return true;
  }
  // transformers' named templates: [{"name": ..., "template": ...}].
  std::string names;
  if (const json::Array *list = t->getAsArray())
    for (const json::Value &e : *list) {
      const json::Object *o = e.getAsObject();
      auto name = o ? o->getString("name") : std::nullopt;
      auto body = o ? o->getString("template") : std::nullopt;
      if (name && body && *name == "default") {
        *tmpl = body->str();
        return true;
      }
      if (name)
        names += (names.empty() ? "" : ", ") + name->str();
    }
  error = path + ": chat_template is neither a string nor a list holding "
                 "one named \"default\"" +
          (names.empty() ? "" : " (it names " + names + ")");
  return false;
}

/// What one place holds, each file read once: its template, where `tmpl`
/// is not null (`hasTemplate` and `source` say whether and where), and
/// its special tokens, where `specials` is not null (`hasSpecials`: a
/// directory's tokenizer_config.json, a GGUF file's BOS and EOS). A
/// directory: chat_template.jinja, else chat_template.json, else
/// tokenizer_config.json's chat_template; a GGUF file: its
/// tokenizer.chat_template (an error where it has none); another file: a
/// config's chat_template (.json) or the template's text.
bool readPlace(const std::string &place, std::string *tmpl,
               std::string &source, bool &hasTemplate, Strings *specials,
               bool &hasSpecials, std::string &error) {
  std::error_code ec;
  hasTemplate = hasSpecials = false;
  if (fs::is_directory(place, ec)) {
    fs::path dir(place);
    fs::path jinja = dir / "chat_template.jinja",
             chatJSON = dir / "chat_template.json",
             config = dir / "tokenizer_config.json";
    if (tmpl && fs::exists(jinja, ec)) {
      source = jinja.string();
      if (!readText(source, *tmpl, error))
        return false;
      hasTemplate = true;
    }
    if (tmpl && !hasTemplate && fs::exists(chatJSON, ec)) {
      if (!readConfigJSON(chatJSON.string(), tmpl, nullptr, hasTemplate,
                          error))
        return false;
      if (hasTemplate)
        source = chatJSON.string() + " (chat_template)";
    }
    std::string *configTemplate = tmpl && !hasTemplate ? tmpl : nullptr;
    if ((configTemplate || specials) && fs::exists(config, ec)) {
      bool has;
      if (!readConfigJSON(config.string(), configTemplate, specials, has,
                          error))
        return false;
      hasSpecials = specials != nullptr;
      if (has) {
        hasTemplate = true;
        source = config.string() + " (chat_template)";
      }
    }
    return true;
  }
  if (isGGUFFile(place)) {
    std::string text, bos, eos, err;
    bool ok = ggufChatTemplate(place, text, bos, eos, err);
    if (specials) {
      // (A file without a template still names its special tokens.)
      if (!bos.empty())
        specials->emplace_back("bos_token", bos);
      if (!eos.empty())
        specials->emplace_back("eos_token", eos);
      hasSpecials = true;
    }
    if (tmpl) {
      if (!ok) {
        error = err;
        return false;
      }
      *tmpl = std::move(text);
      hasTemplate = true;
      source = place + " (tokenizer.chat_template)";
    }
    return true;
  }
  if (!tmpl)
    return true;
  source = place;
  if (llvm::StringRef(place).ends_with(".json")) {
    source = place + " (chat_template)";
    if (!readConfigJSON(place, tmpl, nullptr, hasTemplate, error))
      return false;
    if (!hasTemplate)
      error = place + " has no chat_template";
    return hasTemplate;
  }
  hasTemplate = true;
  return readText(place, *tmpl, error);
}

} // namespace

bool loadChatFormat(const std::vector<std::string> &places,
                    const std::string &override, ChatFormat &format,
                    std::string &error) {
  std::string tmpl;
  bool found = false, hasSpecials = false;
  if (!override.empty()) {
    bool none;
    if (!readPlace(override, &tmpl, format.source, found, nullptr, none,
                   error))
      return false;
    if (!found) {
      error = override + ": the directory has no chat_template.jinja, "
              "chat_template.json or tokenizer_config.json with a "
              "chat_template";
      return false;
    }
  }
  // The template from the first place with one; the special tokens from
  // the first tokenizer_config.json or GGUF file.
  for (size_t i = 0; (!found || !hasSpecials) && i < places.size(); ++i) {
    bool placeTemplate, placeSpecials;
    if (!readPlace(places[i], found ? nullptr : &tmpl, format.source,
                   placeTemplate, hasSpecials ? nullptr : &format.specials,
                   placeSpecials, error))
      return false;
    found |= placeTemplate;
    hasSpecials |= placeSpecials;
  }
  if (!found) {
    std::string where;
    for (const std::string &p : places)
      where += (where.empty() ? "" : ", ") + p;
    error = "no chat template: " +
            (where.empty() ? std::string("no model directory or GGUF file")
                           : where + " holds no chat_template.jinja, "
                                     "chat_template.json or "
                                     "tokenizer_config.json with a "
                                     "chat_template") +
            "; give one with --chat-template FILE";
    return false;
  }
  format.tmpl = ChatTemplate::parse(tmpl, format.source, error);
  format.text = std::move(tmpl);
  return format.tmpl != nullptr;
}

namespace {

using Clock = std::chrono::steady_clock;

/// The next user message: the first prompt, then a line of standard input
/// (lines ending in '\' joined, the '\' made a newline). False at the end.
bool nextMessage(const ChatOptions &opts, int turn, std::string &msg) {
  if (turn == 0 && !opts.firstPrompt.empty()) {
    msg = opts.firstPrompt;
    return true;
  }
  bool tty = isatty(0);
  msg.clear();
  std::string line;
  for (;;) {
    if (tty) {
      llvm::errs() << (msg.empty() ? "> " : ". ");
      llvm::errs().flush();
    }
    if (!std::getline(std::cin, line))
      return !msg.empty();
    if (!line.empty() && line.back() == '\r') // (CRLF input)
      line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      line.back() = '\n';
      msg += line;
      continue;
    }
    msg += line;
    return true;
  }
}

/// Messages of a role and a string content, as a JSON array's text.
std::string messagesJSON(
    const std::vector<std::pair<std::string, std::string>> &messages) {
  std::string out = "[";
  for (size_t i = 0; i < messages.size(); ++i)
    out += std::string(i ? ", " : "") + "{\"role\": " +
           jsonString(messages[i].first) +
           ", \"content\": " + jsonString(messages[i].second) + "}";
  return out + "]";
}

} // namespace

std::string chatContext(const std::string &messages,
                        std::initializer_list<std::string> kwargs) {
  std::string out = "{";
  for (const std::string &object : kwargs) {
    size_t open = object.find('{'), close = object.rfind('}');
    if (open == std::string::npos || close == std::string::npos)
      continue;
    std::string inner = object.substr(open + 1, close - open - 1);
    if (inner.find_first_not_of(" \t\r\n") != std::string::npos)
      out += inner + ", ";
  }
  return out + "\"messages\": " + messages +
         ", \"add_generation_prompt\": true}";
}

bool HeldSequence::prefill(const std::vector<int32_t> &ids, Prefill &out,
                           std::string &error) {
  // (Room for every position, so that recording one never allocates: a
  // failed allocation after the runtime took a token would leave `held`
  // behind the sequence.)
  held.reserve(size_t(maxSeqLen) + 1);
  size_t common = 0;
  while (common < held.size() && common + 1 < ids.size() &&
         held[common] == ids[common])
    ++common;
  out.reset = false;
  if (common < held.size() &&
      lib.archrt_seq_truncate(seq, int32_t(common)) != ARCHRT_OK) {
    // (A linear-attention state or a ring past its slack.)
    if (lib.archrt_seq_reset(seq) != ARCHRT_OK) {
      error = lib.archrt_last_error();
      return false;
    }
    common = 0;
    out.reset = true;
  }
  held.resize(common);
  out.kept = common;
  out.prompt.assign(ids.begin() + long(common), ids.end());
  auto t0 = Clock::now();
  if (lib.archrt_prefill(seq, out.prompt.data(), int32_t(out.prompt.size())) !=
      ARCHRT_OK) {
    // (What the positions hold after a failed prefill is not known.)
    error = lib.archrt_last_error();
    held.clear();
    lib.archrt_seq_reset(seq);
    return false;
  }
  out.seconds = since(t0);
  held.insert(held.end(), out.prompt.begin(), out.prompt.end());
  return true;
}

bool HeldSequence::generate(
    archrt_tokenizer *tok, archrt_sampler *sampler, int maxTokens,
    llvm::function_ref<bool(const char *, int32_t)> piece,
    std::vector<int32_t> &ids, End &end, std::string &error,
    bool ignoreStop, const std::vector<int32_t> &goOn,
    llvm::function_ref<const float *(const float *)> shape,
    serve::ConstrainedReply *grammar) {
  ids.clear();
  end = End::Length;
  int32_t prev = held.empty() ? 0 : held.back();
  for (int i = 0; i < maxTokens; ++i) {
    int32_t next;
    const float *logits = lib.archrt_logits(seq);
    if (shape && !(logits = shape(logits))) {
      end = End::Stop;
      return true;
    }
    switch (sampleToken(lib, sampler, logits, grammar, next, error)) {
    case Sampled::Token:
      break;
    case Sampled::End:
      end = End::Stop;
      return true;
    case Sampled::Failed:
      return false;
    }
    if (!ignoreStop && lib.archrt_tokenizer_is_stop(tok, next) &&
        std::find(goOn.begin(), goOn.end(), next) == goOn.end()) {
      end = End::Stop;
      return true;
    }
    if (grammar && !grammar->take(next)) {
      error = serve::ConstrainedReply::faultText(next);
      return false;
    }
    ids.push_back(next);
    if (!piece(lib.archrt_tokenizer_decode(tok, prev, next), next)) {
      end = End::Caller;
      return true;
    }
    prev = next;
    // A generation's last token (at maxTokens, or where the cache is full)
    // is not decoded: the next prompt holds it.
    if (i + 1 == maxTokens || lib.archrt_seq_length(seq) >= maxSeqLen)
      return true;
    if (lib.archrt_decode(seq, next) != ARCHRT_OK) {
      error = lib.archrt_last_error();
      held.clear();
      lib.archrt_seq_reset(seq);
      return false;
    }
    held.push_back(next);
  }
  return true;
}

Sampled sampleToken(ModelLib &lib, archrt_sampler *sampler,
                    const float *logits, serve::ConstrainedReply *held,
                    int32_t &next, std::string &error) {
  bool first = held && held->maskFirst && !held->maskedHere();
  if (first && !(logits = held->masked(logits)))
    return Sampled::End;
  for (;;) {
    if (lib.archrt_sample(sampler, logits, &next) != ARCHRT_OK) {
      error = lib.archrt_last_error();
      return Sampled::Failed;
    }
    if (!held || held->allows(next))
      return Sampled::Token;
    if (held->maskedHere()) {
      error = serve::ConstrainedReply::faultText(next);
      return Sampled::Failed;
    }
    // (Refused: sampled again from the same logits under the mask. A token
    // the grammar allows is then sampled with probability p / Z, as from
    // the masked logits alone: p at once, plus (1 - Z) p / Z again.)
    if (!(logits = held->masked(logits)))
      return Sampled::End;
  }
}

std::unique_ptr<serve::GrammarVocabulary>
grammarVocabulary(ModelLib &lib, archrt_tokenizer *tok, int32_t vocab,
                  const std::vector<int32_t> &goOn) {
  std::vector<std::string> texts{size_t(vocab)};
  std::vector<uint8_t> ending(size_t(vocab), 0);
  for (int32_t id = 0; id < vocab; ++id) {
    if (lib.archrt_tokenizer_is_stop(tok, id) &&
        std::find(goOn.begin(), goOn.end(), id) == goOn.end())
      ending[size_t(id)] = 1;
    else
      // (After itself: a token's text within a reply, not at a text's
      // start, where a tokenizer may drop its leading space.)
      texts[size_t(id)] = lib.archrt_tokenizer_decode(tok, id, id);
  }
  return std::make_unique<serve::GrammarVocabulary>(std::move(texts),
                                                    std::move(ending));
}

int runChat(ModelLib &lib, archrt_seq *seq, archrt_tokenizer *tok,
            archrt_sampler *sampler, const archrt_model_info &info,
            const ChatFormat &format, const ChatOptions &opts) {
  std::vector<std::pair<std::string, std::string>> messages;
  if (!opts.system.empty())
    messages.emplace_back("system", opts.system);
  HeldSequence cache{lib, seq, info.max_seq_len, {}};
  std::unique_ptr<serve::GrammarVocabulary> vocabulary;
  std::vector<int32_t> ids(size_t(info.max_seq_len));
  std::string msg;
  for (int turn = 1; nextMessage(opts, turn - 1, msg); ++turn) {
    std::string at = "turn " + std::to_string(turn) + ": ";
    messages.emplace_back("user", msg);
    std::string rendered, error;
    if (!format.tmpl->render(
            chatContext(messagesJSON(messages), {opts.templateKwargs}),
            format.specials, rendered, error))
      return fail(error);
    // The whole conversation's tokens, as apply_chat_template gives them
    // (the template writes the special tokens; the tokenizer adds none).
    int32_t n = 0;
    ids.resize(size_t(info.max_seq_len));
    if (lib.archrt_tokenizer_encode(tok, rendered.c_str(), 0, 0, ids.data(),
                                    int32_t(ids.size()), &n) != ARCHRT_OK) {
      if (n <= int32_t(ids.size()))
        return fail(lib.archrt_last_error());
    }
    if (n > info.max_seq_len)
      return fail(at + "the conversation is " + std::to_string(n) +
                  " tokens, more than the library's max_seq_len (" +
                  std::to_string(info.max_seq_len) + ")");
    if (n == 0)
      return fail(at + "the template renders no text");
    ids.resize(size_t(n));
    HeldSequence::Prefill pre;
    if (!cache.prefill(ids, pre, error))
      return fail(error);
    if (opts.verbosePrompt)
      llvm::errs() << "[archc] " << at << "prompt " << jsonString(rendered)
                   << "\n[archc] " << at << "prefill " << pre.prompt.size()
                   << " tokens after " << pre.kept
                   << (pre.reset ? " (reset)" : "") << ":"
                   << idList(pre.prompt) << "\n";
    auto t0 = Clock::now();
    std::string reply;
    std::vector<int32_t> replyIds;
    HeldSequence::End end;
    // (A reply held to --grammar.)
    std::optional<serve::ConstrainedReply> held;
    if (opts.grammar) {
      if (!vocabulary)
        vocabulary = grammarVocabulary(lib, tok, info.vocab_size);
      held.emplace(*vocabulary, opts.grammar, opts.maskFirst);
    }
    if (!cache.generate(
            tok, sampler, opts.maxReply,
            [&](const char *piece, int32_t) {
              reply += piece;
              llvm::outs() << piece;
              llvm::outs().flush();
              return true;
            },
            replyIds, end, error, false, {}, nullptr,
            held ? &*held : nullptr))
      return fail(error);
    if (held && !held->error().empty())
      return fail(at + held->error());
    llvm::outs() << "\n";
    llvm::outs().flush();
    double decodeS = since(t0);
    if (opts.verbosePrompt) {
      llvm::errs() << "[archc] " << at << "reply " << jsonString(reply)
                   << "\n[archc] " << at << "reply " << replyIds.size()
                   << " tokens:" << idList(replyIds) << "\n";
      if (held)
        llvm::errs() << "[archc] " << at << "grammar: the mask made at "
                     << held->masks() << " of " << held->sampled()
                     << " tokens\n";
    }
    if (!opts.quiet)
      fprintf(stderr,
              "[archc] turn %d: %zu tokens prefilled at %.1f tok/s (%zu "
              "kept in the cache%s); %zu generated at %.1f tok/s\n",
              turn, pre.prompt.size(),
              double(pre.prompt.size()) / std::max(pre.seconds, 1e-9),
              pre.kept, pre.reset ? ", which could not go back: reset" : "",
              replyIds.size(),
              double(replyIds.size()) / std::max(decodeS, 1e-9));
    messages.emplace_back("assistant", reply);
  }
  return 0;
}

int cmdChatTemplate(int argc, char **argv, cl::OptionCategory &cat) {
  cl::SubCommand sub("chat-template", "render a conversation");
  cl::opt<std::string> input(
      cl::Positional, cl::Required,
      cl::desc("<model directory | model.gguf | tokenizer_config.json | "
               "template.jinja>"),
      cl::cat(cat), cl::sub(sub));
  cl::opt<std::string> messagesPath(
      "messages",
      cl::desc("a JSON array of messages ({\"role\", \"content\"}), or an "
               "object of the template's variables (\"-\": standard input)"),
      cl::init("-"), cl::cat(cat), cl::sub(sub));
  cl::opt<std::string> chatTemplate(
      "chat-template",
      cl::desc("the template (a .jinja file, tokenizer_config.json, model "
               "directory or GGUF file) in place of the model's; the "
               "special tokens stay the model's"),
      cl::cat(cat), cl::sub(sub));
  cl::opt<bool> addGeneration(
      "add-generation-prompt",
      cl::desc("end with the assistant's turn opened (where the messages "
               "are an array)"),
      cl::cat(cat), cl::sub(sub));
  cl::HideUnrelatedOptions(cat, sub);
  cl::ParseCommandLineOptions(argc, argv,
                              "archc chat-template: a conversation in a "
                              "model's prompt format, as Hugging Face's "
                              "apply_chat_template renders it\n");
  ChatFormat format;
  std::string error;
  std::error_code ec;
  // The special tokens are a directory's or a GGUF file's, or those of
  // the directory a template or config file is in.
  std::vector<std::string> places = {input};
  std::string override = chatTemplate;
  if (!fs::is_directory(std::string(input), ec) && !isGGUFFile(input)) {
    places = {fs::path(std::string(input)).parent_path().string()};
    if (override.empty())
      override = input;
  }
  if (places[0].empty())
    places[0] = ".";
  if (!loadChatFormat(places, override, format, error))
    return fail(error);
  std::string text;
  if (messagesPath == "-") {
    char buf[65536];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
      text.append(buf, size_t(std::cin.gcount()));
      if (text.size() > kMaxChatFileBytes)
        return fail("--messages -: more than " +
                    std::to_string(kMaxChatFileBytes) + " bytes on stdin");
    }
  } else if (!readText(messagesPath, text, error)) {
    return fail("--messages " + error);
  }
  if (!ChatTemplate::checkJSON(text, "--messages " + messagesPath, error))
    return fail(error);
  // An array is the messages; an object the whole context.
  size_t first = text.find_first_not_of(" \t\r\n");
  std::string context = text;
  if (first != std::string::npos && text[first] == '[')
    context = "{\"messages\": " + text + ", \"add_generation_prompt\": " +
              (addGeneration ? "true" : "false") + "}";
  else if (first == std::string::npos || text[first] != '{')
    return fail("--messages: expected a JSON array of messages or an "
                "object");
  std::string out;
  if (!format.tmpl->render(context, format.specials, out, error))
    return fail(error);
  llvm::outs() << out;
  return 0;
}

} // namespace arch
