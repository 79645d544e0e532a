//===- ToolCalls.cpp - The tool calls in a chat model's reply --------------===//
#include "ToolCalls.h"

#include "Grammar.h"
#include "ServeProtocol.h"
#include "Tool.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <initializer_list>
#include <optional>

namespace arch::serve {

namespace json = llvm::json;

namespace {

// The formats' marks (DeepSeek's are its tokenizer's added tokens: full-
// width bars and U+2581 for the spaces), and a thought's.
constexpr llvm::StringLiteral kHermesOpen = "<tool_call>";
constexpr llvm::StringLiteral kHermesClose = "</tool_call>";
constexpr llvm::StringLiteral kPythonTag = "<|python_tag|>";
constexpr llvm::StringLiteral kMistralCalls = "[TOOL_CALLS]";
constexpr llvm::StringLiteral kMistralArgs = "[ARGS]";
constexpr llvm::StringLiteral kDeepSeekCalls =
    "<\xEF\xBD\x9Ctool\xE2\x96\x81" "calls\xE2\x96\x81" "begin\xEF\xBD\x9C>";
constexpr llvm::StringLiteral kDeepSeekCallsEnd =
    "<\xEF\xBD\x9Ctool\xE2\x96\x81" "calls\xE2\x96\x81" "end\xEF\xBD\x9C>";
constexpr llvm::StringLiteral kDeepSeekCall =
    "<\xEF\xBD\x9Ctool\xE2\x96\x81" "call\xE2\x96\x81" "begin\xEF\xBD\x9C>";
constexpr llvm::StringLiteral kDeepSeekCallEnd =
    "<\xEF\xBD\x9Ctool\xE2\x96\x81" "call\xE2\x96\x81" "end\xEF\xBD\x9C>";
constexpr llvm::StringLiteral kDeepSeekSep =
    "<\xEF\xBD\x9Ctool\xE2\x96\x81" "sep\xEF\xBD\x9C>";
constexpr llvm::StringLiteral kThink = "<think>";
constexpr llvm::StringLiteral kThinkEnd = "</think>";

/// The space a reply's parts are trimmed of (JSON's).
constexpr llvm::StringLiteral kSpace = " \t\r\n";

bool isSpace(char c) { return kSpace.contains(c); }

/// Where calls found at `at` begin: before the space that precedes them.
size_t withSpaceBefore(llvm::StringRef text, size_t at) {
  while (at > 0 && at != std::string::npos && isSpace(text[at - 1]))
    --at;
  return at;
}

/// A JSON number's text as RFC 8259 writes it.
bool strictNumber(llvm::StringRef n) {
  auto digits = [&] {
    if (n.empty() || !isdigit(uint8_t(n[0])))
      return false;
    n = n.drop_while([](char c) { return isdigit(uint8_t(c)); });
    return true;
  };
  n.consume_front("-");
  if (n.consume_front("0")) {
    if (!n.empty() && isdigit(uint8_t(n[0])))
      return false;
  } else if (!digits()) {
    return false;
  }
  if (n.consume_front(".") && !digits())
    return false;
  if (n.consume_front("e") || n.consume_front("E")) {
    if (!n.consume_front("+"))
      n.consume_front("-");
    if (!digits())
      return false;
  }
  return n.empty();
}

/// Whether JSON text that llvm::json has parsed is JSON to a strict parser
/// too (a client's: Python's json.loads): its numbers RFC 8259's
/// (llvm::json takes 01, -01, .5, +1 and 1.).
bool strictJson(llvm::StringRef t) {
  for (size_t k = 0; k < t.size(); ++k) {
    char c = t[k];
    if (c == '"') {
      k = stringClose(t, k);
    } else if (c == '-' || c == '+' || c == '.' || isdigit(uint8_t(c))) {
      size_t e = k;
      while (e < t.size() &&
             (isdigit(uint8_t(t[e])) || llvm::StringRef("+-.eE").contains(t[e])))
        ++e;
      if (!strictNumber(t.slice(k, e)))
        return false;
      k = e - 1;
    }
  }
  return true;
}

/// A position in a reply, read forward.
struct Cursor {
  const std::string &text;
  size_t k = 0;

  void skipSpace() {
    while (k < text.size() && isSpace(text[k]))
      ++k;
  }
  bool eat(llvm::StringRef mark) {
    if (!llvm::StringRef(text).substr(k).starts_with(mark))
      return false;
    k += mark.size();
    return true;
  }
  bool atEnd() {
    skipSpace();
    return k == text.size();
  }
  /// The JSON object that starts here (after space), bounded and parsed;
  /// nothing where there is none.
  std::optional<json::Value> object(std::string &raw) {
    skipSpace();
    if (k >= text.size() || text[k] != '{')
      return std::nullopt;
    size_t end = jsonValueEnd(text, k);
    raw = text.substr(k, end - k);
    std::string error;
    if (!jsonWithinBounds(raw, error))
      return std::nullopt;
    auto v = json::parse(raw);
    if (!v) {
      llvm::consumeError(v.takeError());
      return std::nullopt;
    }
    if (!v->getAsObject() || !strictJson(raw))
      return std::nullopt;
    k = end;
    return std::move(*v);
  }
  /// A call written as a JSON object here (callOf), added to `calls`;
  /// false where there is none.
  bool call(std::vector<ToolCall> &calls);
};

/// `raw` is a JSON object's text, or a JSON string's that holds one:
/// the object's text. False otherwise.
bool argumentsText(const std::string &raw, const json::Value &value,
                   std::string &out) {
  if (value.getAsObject()) {
    out = raw;
    return true;
  }
  std::optional<llvm::StringRef> s = value.getAsString();
  if (!s)
    return false;
  std::string inner = s->trim(kSpace).str();
  Cursor c{inner};
  std::string object;
  if (!c.object(object) || !c.atEnd())
    return false;
  out = object;
  return true;
}

/// A call written as a JSON object with a string "name" and its arguments
/// under "arguments" (or Llama's "parameters"; none: {}). False where it is
/// not one.
bool callOf(const std::string &raw, const json::Value &value,
            ToolCall &out) {
  const json::Object *o = value.getAsObject();
  std::optional<llvm::StringRef> name = o->getString("name");
  if (!name || name->empty())
    return false;
  out.name = name->str();
  for (const char *key : {"arguments", "parameters"})
    if (const json::Value *args = o->get(key))
      return argumentsText(rawMember(raw, key), *args, out.arguments);
  out.arguments = "{}"; // (a call without arguments)
  return true;
}

bool Cursor::call(std::vector<ToolCall> &calls) {
  std::string raw;
  std::optional<json::Value> v = object(raw);
  ToolCall c;
  if (!v || !callOf(raw, *v, c))
    return false;
  calls.push_back(std::move(c));
  return true;
}

/// A call whose name is written as text (Mistral's name[ARGS]{...},
/// DeepSeek's): a name without space or control characters.
bool plainName(llvm::StringRef name) {
  return !name.empty() && name.size() <= 256 &&
         llvm::all_of(name, [](char c) { return uint8_t(c) > ' '; });
}

/// The reply from `c` on, after the calls: content.
void finishAfter(Cursor &c, ToolReply &out) {
  out.after += c.text.substr(c.k);
}

ToolReply hermes(const std::string &text) {
  ToolReply out;
  size_t at = text.find(kHermesOpen.data());
  if (at == std::string::npos)
    return {};
  out.begin = withSpaceBefore(text, at);
  Cursor c{text, at};
  for (;;) {
    // (Text between calls is content; the space before a call is not.)
    size_t next = text.find(kHermesOpen.data(), c.k);
    if (next == std::string::npos)
      break;
    out.after.append(text, c.k,
                     std::max(c.k, withSpaceBefore(text, next)) - c.k);
    c.k = next + kHermesOpen.size();
    if (!c.call(out.calls))
      return {};
    c.skipSpace();
    // (A reply that ends after the object, without the close tag: the
    // model stopped there.)
    if (!c.eat(kHermesClose) && !c.atEnd())
      return {};
  }
  finishAfter(c, out);
  return out;
}

ToolReply llama3(const std::string &text) {
  ToolReply out;
  Cursor c{text};
  c.skipSpace();
  c.eat(kPythonTag);
  for (;;) {
    if (!c.call(out.calls))
      return {};
    c.skipSpace();
    if (c.k >= text.size() || text[c.k] != ';')
      break;
    ++c.k;
  }
  finishAfter(c, out);
  return out;
}

ToolReply mistral(const std::string &text) {
  ToolReply out;
  size_t at = text.find(kMistralCalls.data());
  if (at == std::string::npos)
    return {};
  out.begin = withSpaceBefore(text, at);
  Cursor c{text, at + kMistralCalls.size()};
  c.skipSpace();
  if (c.k < text.size() && text[c.k] == '[') {
    // Mistral 7B v0.3, Nemo: a JSON array of {"name", "arguments"}.
    ++c.k;
    for (;;) {
      if (!c.call(out.calls))
        return {};
      c.skipSpace();
      if (c.eat(","))
        continue;
      if (!c.eat("]"))
        return {};
      break;
    }
  } else {
    // Mistral Small 3.2, Magistral: name[ARGS]{...}, each after
    // [TOOL_CALLS].
    do {
      size_t args = text.find(kMistralArgs.data(), c.k);
      if (args == std::string::npos)
        return {};
      // (Magistral writes name[CALL_ID]id[ARGS]{...}.)
      ToolCall call;
      call.name = llvm::StringRef(text)
                      .slice(c.k, args)
                      .split("[CALL_ID]")
                      .first.trim()
                      .str();
      c.k = args + kMistralArgs.size();
      std::string raw;
      if (!plainName(call.name) || !c.object(raw))
        return {};
      call.arguments = raw;
      out.calls.push_back(std::move(call));
      c.skipSpace();
    } while (c.eat(kMistralCalls));
  }
  finishAfter(c, out);
  return out;
}

ToolReply deepSeek(const std::string &text) {
  ToolReply out;
  size_t at = std::min(text.find(kDeepSeekCalls.data()),
                       text.find(kDeepSeekCall.data()));
  if (at == std::string::npos)
    return {};
  out.begin = withSpaceBefore(text, at);
  Cursor c{text, at};
  c.eat(kDeepSeekCalls);
  for (;;) {
    c.skipSpace();
    if (!c.eat(kDeepSeekCall))
      break;
    size_t sep = text.find(kDeepSeekSep.data(), c.k);
    size_t end = text.find(kDeepSeekCallEnd.data(), c.k);
    if (sep == std::string::npos || end == std::string::npos || sep > end)
      return {};
    llvm::StringRef head = llvm::StringRef(text).slice(c.k, sep).trim();
    std::string body =
        text.substr(sep + kDeepSeekSep.size(), end - sep - kDeepSeekSep.size());
    ToolCall call;
    std::string args;
    if (head == "function" && !llvm::StringRef(body).ltrim(kSpace).starts_with(
                                  "{")) {
      // V3 and R1: function<sep>NAME\n```json\n{...}\n```
      size_t nl = body.find('\n');
      call.name = llvm::StringRef(body).take_front(nl).trim().str();
      args = nl == std::string::npos ? "" : body.substr(nl + 1);
      llvm::StringRef a = llvm::StringRef(args).trim();
      if (a.consume_front("```")) {
        a.consume_front("json");
        if (!a.consume_back("```"))
          return {};
      }
      args = a.str();
    } else {
      // V3.1: NAME<sep>{...}
      call.name = head.str();
      args = body;
    }
    Cursor a{args};
    std::string raw;
    if (!plainName(call.name) || !a.object(raw) || !a.atEnd())
      return {};
    call.arguments = raw;
    out.calls.push_back(std::move(call));
    c.k = end + kDeepSeekCallEnd.size();
  }
  if (out.calls.empty())
    return {};
  c.skipSpace();
  c.eat(kDeepSeekCallsEnd);
  finishAfter(c, out);
  return out;
}

/// The first place in `text` from `from` where one of `marks` starts, or
/// where the text ends in one's first bytes, or in space; npos where none.
size_t holdFrom(llvm::StringRef t, size_t from,
                std::initializer_list<llvm::StringRef> marks) {
  size_t hold = std::string::npos;
  for (llvm::StringRef mark : marks)
    hold = std::min({hold, t.find(mark, from), partialMark(t, mark, from)});
  if (!t.empty() && isSpace(t.back()))
    hold = std::min(hold, t.size());
  return std::max(withSpaceBefore(t, hold), std::min(from, hold));
}

} // namespace

/// A rule of `g` for a thought's text: any text in which `</think>` does
/// not appear. After each '<', the run of the mark's characters that
/// follows it, left by a character that does not go on with it (a '<'
/// starting the run again); the text may end within a run (the mark that
/// ends the thought follows it). (Exact for a mark whose first character
/// appears in it once; its characters are written into classes as they
/// are: '/', letters, '>'.)
static std::string thoughtText(SchemaGrammar &g) {
  const std::string mark(kThinkEnd);
  size_t n = mark.size();
  // after[k], end[k]: the run holds the mark's first k characters (k >= 1)
  // and goes on, or ends the text.
  std::vector<std::string> after(n), end(n);
  for (size_t k = 1; k < n; ++k) {
    after[k] = g.rule("thought-run");
    end[k] = g.rule("thought-end");
  }
  for (size_t k = 1; k < n; ++k) {
    std::string next = gbnfLiteral(mark.substr(k, 1));
    bool last = k + 1 == n; // (its next character would end the thought)
    g.define(after[k], "[^" + mark.substr(k, 1) + "<] | " +
                           (last ? "" : next + " " + after[k + 1] + " | ") +
                           "\"<\" " + after[1]);
    g.define(end[k], "( " + (last ? "" : next + " " + end[k + 1] + " | ") +
                         "\"<\" " + end[1] + " )?");
  }
  std::string text = g.rule("thought");
  g.define(text, "( [^<] | \"<\" " + after[1] + " )* ( \"<\" " + end[1] +
                     " )?");
  return text;
}

bool toolCallGrammar(ToolFormat f, const std::string &tools,
                     const std::string &only, bool parallel,
                     ThoughtBefore thought, std::string &gbnf,
                     std::string &error) {
  if (f == ToolFormat::None) {
    error = "the chat template shows no tool-call format "
            "(--tool-call-parser names one)";
    return false;
  }
  // Each tool's call: its name, and arguments of its parameters' schema
  // (an empty object where it has none, as OpenAI reads that), in the
  // format's own words.
  SchemaGrammar schemas;
  std::string calls;
  std::vector<std::string> list = rawElements(tools);
  for (size_t i = 0; i < list.size(); ++i) {
    std::string function = rawMember(list[i], "function");
    auto parsed = json::parse(function);
    const json::Object *o = parsed ? parsed->getAsObject() : nullptr;
    if (!parsed)
      llvm::consumeError(parsed.takeError());
    std::optional<llvm::StringRef> name = o ? o->getString("name")
                                            : std::nullopt;
    if (!name || name->empty()) {
      error = "'tools' [" + std::to_string(i) +
              "] must be {\"type\": \"function\", \"function\": "
              "{\"name\": ...}}";
      return false;
    }
    if (!only.empty() && *name != only)
      continue;
    std::string args = "\"{\" ws \"}\"";
    const json::Value *params = o->get("parameters");
    if (params && params->kind() != json::Value::Null) {
      // (Arguments are an object: a call whose arguments are not parses
      // as no call. So the schema's top must say object, or say nothing.)
      const json::Object *p = params->getAsObject();
      bool anything = params->getAsBoolean() == std::optional<bool>(true) ||
                      (p && p->empty());
      bool plain = p && !p->get("$ref") && !p->get("anyOf") &&
                   !p->get("oneOf") && !p->get("allOf") &&
                   !p->get("enum") && !p->get("const");
      bool object =
          plain && (p->getString("type") ==
                        std::optional<llvm::StringRef>("object") ||
                    (!p->get("type") && (p->get("properties") ||
                                         p->get("additionalProperties"))));
      if (anything) {
        args = "object";
      } else if (!object) {
        error = "'tools' [" + std::to_string(i) + "] (" + name->str() +
                ") parameters must describe an object (\"type\": "
                "\"object\")";
        return false;
      } else {
        args = schemas.add(rawMember(function, "parameters"), name->str(),
                           error);
        if (args.empty()) {
          error = "'tools' [" + std::to_string(i) + "] (" + name->str() +
                  ") parameters " + error;
          return false;
        }
      }
    }
    std::string quoted = jsonString(name->str());
    // (Where the name stands bare between marks, the parser takes a plain
    // one only.)
    bool bare = f == ToolFormat::MistralArgs || f == ToolFormat::DeepSeek ||
                f == ToolFormat::DeepSeekV31;
    if (bare && !plainName(*name)) {
      error = "'tools' [" + std::to_string(i) + "]'s name '" + name->str() +
              "' holds space or control characters, or is over 256 "
              "bytes: " + toolFormatName(f) + " calls cannot write it";
      return false;
    }
    // (Nor one holding the format's marks, or, after [TOOL_CALLS], a
    // bracket first: the parser would read a v0.3 array.)
    bool marked = llvm::any_of(replyMarks(f, false), [&](const std::string &m) {
      return name->contains(m);
    });
    if (bare && (marked || (f == ToolFormat::MistralArgs &&
                            name->starts_with("[")))) {
      error = "'tools' [" + std::to_string(i) + "]'s name '" + name->str() +
              "' holds the format's marks: " + toolFormatName(f) +
              " calls cannot write it";
      return false;
    }
    std::string call;
    switch (f) {
    case ToolFormat::Hermes:
      call = gbnfLiteral(std::string(kHermesOpen) + "\n{\"name\": " + quoted +
                         ", \"arguments\": ") +
             " " + args + " " +
             gbnfLiteral("}\n" + std::string(kHermesClose));
      break;
    case ToolFormat::Llama3:
      call = gbnfLiteral("{\"name\": " + quoted + ", \"parameters\": ") +
             " " + args + " " + gbnfLiteral("}");
      break;
    case ToolFormat::Mistral:
      call = gbnfLiteral("{\"name\": " + quoted + ", \"arguments\": ") +
             " " + args + " " + gbnfLiteral("}");
      break;
    case ToolFormat::MistralArgs:
      call = gbnfLiteral(name->str() + std::string(kMistralArgs)) + " " + args;
      break;
    case ToolFormat::DeepSeek:
      call = gbnfLiteral(std::string(kDeepSeekCall) + "function" +
                         std::string(kDeepSeekSep) + name->str() +
                         "\n```json\n") +
             " " + args + " " +
             gbnfLiteral("\n```" + std::string(kDeepSeekCallEnd));
      break;
    case ToolFormat::DeepSeekV31:
      call = gbnfLiteral(std::string(kDeepSeekCall) + name->str() +
                         std::string(kDeepSeekSep)) +
             " " + args + " " + gbnfLiteral(kDeepSeekCallEnd);
      break;
    case ToolFormat::None:
      break;
    }
    calls += (calls.empty() ? "" : " | ") + call;
  }
  if (calls.empty()) {
    error = only.empty() ? "'tools' holds no function"
                         : "'" + only + "' is not among 'tools'";
    return false;
  }
  // One call, or (parallel) one or more, joined as the format joins them.
  std::string call = "( " + calls + " )", root;
  switch (f) {
  case ToolFormat::Hermes:
    root = call + (parallel ? " ( \"\\n\" " + call + " )*" : "");
    break;
  case ToolFormat::Llama3:
    root = call + (parallel ? " ( \"; \" " + call + " )*" : "");
    break;
  case ToolFormat::Mistral:
    // (Mistral v0.3's template writes a space before the array.)
    root = gbnfLiteral(kMistralCalls) + " \" \"? \"[\" " + call +
           (parallel ? " ( \", \" " + call + " )*" : "") + " " +
           gbnfLiteral("]");
    break;
  case ToolFormat::MistralArgs:
    // ([TOOL_CALLS] before each call.)
    root = gbnfLiteral(kMistralCalls) + " " + call +
           (parallel ? " ( " + gbnfLiteral(kMistralCalls) + " " + call + " )*"
                     : "");
    break;
  case ToolFormat::DeepSeek:
  case ToolFormat::DeepSeekV31:
    root = gbnfLiteral(kDeepSeekCalls) + " " + call +
           (parallel ? " " + call + "*" : "") + " " +
           gbnfLiteral(kDeepSeekCallsEnd);
    break;
  case ToolFormat::None:
    break;
  }
  if (thought != ThoughtBefore::None) {
    std::string closed = thoughtText(schemas) + " " +
                         gbnfLiteral(std::string(kThinkEnd) + "\n\n");
    root = (thought == ThoughtBefore::Opened
                ? closed
                : "( " + gbnfLiteral(kThink) + " " + closed + " )?") +
           " " + root;
  }
  gbnf = schemas.text(root);
  return true;
}

ToolFormat detectToolFormat(const std::string &t) {
  auto has = [&](llvm::StringRef s) {
    return t.find(s.data(), 0, s.size()) != std::string::npos;
  };
  // (V3's and R1's templates fence a call's arguments as json; V3.1's
  // write them after the separator. Mistral Small 3.2's and Magistral's
  // write [ARGS] after each call's name.)
  if (has(kDeepSeekCalls))
    return has("```json") ? ToolFormat::DeepSeek : ToolFormat::DeepSeekV31;
  if (has(kMistralCalls))
    return has(kMistralArgs) ? ToolFormat::MistralArgs : ToolFormat::Mistral;
  if (has(kHermesOpen))
    return ToolFormat::Hermes;
  // (Llama 3.1 writes <|python_tag|> before a built-in tool's call; 3.2 and
  // 3.3 answer a tool in an ipython turn.)
  if (has(kPythonTag) || (has("<|start_header_id|>") && has("ipython")))
    return ToolFormat::Llama3;
  return ToolFormat::None;
}

namespace {
const std::pair<ToolFormat, const char *> kNames[] = {
    {ToolFormat::None, "none"},
    {ToolFormat::Hermes, "hermes"},
    {ToolFormat::Llama3, "llama3-json"},
    {ToolFormat::Mistral, "mistral"},
    {ToolFormat::MistralArgs, "mistral-args"},
    {ToolFormat::DeepSeek, "deepseek"},
    {ToolFormat::DeepSeekV31, "deepseek-v3.1"}};
} // namespace

bool toolFormatNamed(const std::string &name, ToolFormat &out) {
  for (auto &[f, n] : kNames)
    if (name == n) {
      out = f;
      return true;
    }
  return false;
}

const char *toolFormatName(ToolFormat f) {
  for (auto &[g, n] : kNames)
    if (f == g)
      return n;
  return "none";
}

ToolReply parseToolCalls(ToolFormat f, const std::string &text) {
  ToolReply out;
  switch (f) {
  case ToolFormat::Hermes:
    out = hermes(text);
    break;
  case ToolFormat::Llama3:
    out = llama3(text);
    break;
  case ToolFormat::Mistral:
  case ToolFormat::MistralArgs:
    out = mistral(text);
    break;
  case ToolFormat::DeepSeek:
  case ToolFormat::DeepSeekV31:
    out = deepSeek(text);
    break;
  case ToolFormat::None:
    break;
  }
  // (The content's ends without space.)
  llvm::StringRef after = llvm::StringRef(out.after).rtrim(kSpace);
  if (out.begin == 0)
    after = after.ltrim(kSpace);
  out.after = after.str();
  return out;
}


Thought findThought(const std::string &text, bool open, bool whole) {
  llvm::StringRef t(text);
  Thought out;
  size_t from = 0;
  size_t first = std::min(t.find_first_not_of(kSpace), t.size());
  llvm::StringRef rest = t.substr(first);
  if (rest.starts_with(kThink)) {
    // (A thought the prompt opened may start with <think> again, as some
    // R1 distills write it: left out, as vLLM's R1 parser leaves it.)
    from = first + kThink.size();
  } else if (!whole && kThink.starts_with(rest) &&
             (!open || !rest.empty())) {
    // (The reply may still be starting one: held. Space that a prompt's
    // thought starts with is no part of it.)
    out.content = std::string::npos;
    out.hold = 0;
    return out;
  } else if (!open) {
    return out; // no thought
  }
  out.begin = std::min(t.find_first_not_of(kSpace, from), t.size());
  size_t close = t.find(kThinkEnd, from);
  if (close == std::string::npos) {
    if (whole) {
      out.end = std::max(out.begin, t.rtrim(kSpace).size());
      out.content = t.size();
      return out;
    }
    // Open: the end may be the close's first bytes, and the space before
    // them the thought's last.
    out.content = std::string::npos;
    size_t hold = std::min(t.size(), partialMark(t, kThinkEnd, from));
    out.hold = std::max(out.begin, t.take_front(hold).rtrim(kSpace).size());
    return out;
  }
  // (begin is at most close: the close is not space.)
  out.end = std::max(out.begin, t.take_front(close).rtrim(kSpace).size());
  out.content = std::min(t.find_first_not_of(kSpace, close + kThinkEnd.size()),
                         t.size());
  return out;
}

bool templateThinks(const std::string &templateText) {
  return templateText.find(kThink.data()) != std::string::npos ||
         templateText.find(kThinkEnd.data()) != std::string::npos;
}

bool opensThought(const std::string &prompt) {
  return llvm::StringRef(prompt).rtrim(kSpace).ends_with(kThink);
}

bool closesThought(const std::string &prompt) {
  return llvm::StringRef(prompt).rtrim(kSpace).ends_with(kThinkEnd);
}

ReplyParts::Delta ReplyParts::split(const std::string &text, size_t to,
                                    const Thought &th, size_t contentEnd) {
  Delta d;
  if (th.begin != std::string::npos) {
    // (Never the space at the end of what is released: a stop string may
    // yet end the thought there, whose reasoning leaves it out.)
    size_t end = std::min(
        th.end, llvm::StringRef(text).take_front(to).rtrim(kSpace).size());
    size_t a = std::max(sentReasoning, th.begin);
    if (a < end) {
      d.reasoning = validUtf8(text.substr(a, end - a));
      sentReasoning = end;
    }
  }
  if (th.content != std::string::npos) {
    size_t a = std::max(sentContent, th.content), b = std::min(to, contentEnd);
    if (a < b) {
      d.content = validUtf8(text.substr(a, b - a));
      sentContent = b;
    }
  }
  return d;
}

ReplyParts::Delta ReplyParts::step(StopScanner &text) {
  Thought th = thinks ? findThought(text.text(), opened, false) : Thought();
  size_t from = text.releasedBytes(), upTo = th.hold;
  if (tools != ToolFormat::None && th.content != std::string::npos) {
    // (Calls are looked for in the content only.)
    size_t at = toolCallsBegin(tools,
                               llvm::StringRef(text.text()).substr(th.content),
                               from > th.content ? from - th.content : 0);
    if (at != std::string::npos)
      upTo = std::min(upTo, th.content + at);
  }
  text.take(false, upTo);
  return split(text.text(), text.releasedBytes(), th, std::string::npos);
}

ReplyParts::Delta ReplyParts::finish(StopScanner &text, bool modelEnded,
                                     bool parallel) {
  const std::string &all = text.text();
  Thought th = thinks ? findThought(all, opened, true) : Thought();
  thought = th.begin != std::string::npos;
  if (thought)
    reasoning = validUtf8(all.substr(th.begin, th.end - th.begin));
  std::string body = all.substr(th.content);
  ToolReply reply =
      parseToolCalls(modelEnded ? tools : ToolFormat::None, body);
  if (!parallel && reply.calls.size() > 1)
    reply.calls.resize(1);
  calls = std::move(reply.calls);
  content = calls.empty()
                ? validUtf8(body)
                : validUtf8(body.substr(0, reply.begin)) + validUtf8(reply.after);
  size_t callsAt =
      calls.empty() ? std::string::npos : th.content + reply.begin;
  text.take(true, callsAt);
  Delta d = split(all, text.releasedBytes(), th, callsAt);
  if (!calls.empty())
    d.content += validUtf8(reply.after);
  return d;
}

std::vector<std::string> replyMarks(ToolFormat f, bool thinks) {
  std::vector<llvm::StringRef> marks;
  switch (f) {
  case ToolFormat::Hermes:
    marks = {kHermesOpen, kHermesClose};
    break;
  case ToolFormat::Llama3:
    marks = {kPythonTag};
    break;
  case ToolFormat::Mistral:
  case ToolFormat::MistralArgs:
    marks = {kMistralCalls, kMistralArgs, "[CALL_ID]"};
    break;
  case ToolFormat::DeepSeek:
  case ToolFormat::DeepSeekV31:
    marks = {kDeepSeekCalls, kDeepSeekCallsEnd, kDeepSeekCall,
             kDeepSeekCallEnd, kDeepSeekSep};
    break;
  case ToolFormat::None:
    break;
  }
  if (thinks)
    marks.insert(marks.end(), {kThink, kThinkEnd});
  return {marks.begin(), marks.end()};
}

size_t toolCallsBegin(ToolFormat f, llvm::StringRef text, size_t from) {
  switch (f) {
  case ToolFormat::Hermes:
    return holdFrom(text, from, {kHermesOpen});
  case ToolFormat::Mistral:
  case ToolFormat::MistralArgs:
    return holdFrom(text, from, {kMistralCalls});
  case ToolFormat::DeepSeek:
  case ToolFormat::DeepSeekV31:
    return holdFrom(text, from, {kDeepSeekCalls, kDeepSeekCall});
  case ToolFormat::Llama3: {
    // A reply that is calls starts with them: held while it may.
    llvm::StringRef t = text.ltrim(kSpace);
    if (t.empty() || t.starts_with("{") || t.starts_with(kPythonTag) ||
        kPythonTag.starts_with(t))
      return 0;
    return std::string::npos;
  }
  case ToolFormat::None:
    break;
  }
  return std::string::npos;
}

} // namespace arch::serve
