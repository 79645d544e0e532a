//===- ServeProtocol.cpp - archc serve's requests, read and answered -------===//
#include "ServeProtocol.h"

#include "Grammar.h"
#include "Tool.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <initializer_list>
#include <optional>

namespace arch::serve {

namespace json = llvm::json;

namespace {

bool isTokenChar(char c) {
  return isalnum(static_cast<unsigned char>(c)) ||
         llvm::StringRef("!#$%&'*+-.^_`|~").contains(c);
}

} // namespace

size_t stringClose(llvm::StringRef text, size_t k) {
  for (++k; k < text.size() && text[k] != '"'; ++k)
    if (text[k] == '\\')
      ++k;
  return std::min(k, text.size());
}

size_t jsonValueEnd(const std::string &text, size_t k) {
  size_t depth = 0;
  for (; k < text.size(); ++k) {
    char c = text[k];
    if (c == '"') {
      k = stringClose(text, k);
      if (depth == 0)
        return std::min(k + 1, text.size());
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (depth == 0)
        return k; // (a scalar's end at its object's close)
      if (--depth == 0)
        return k + 1;
    } else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' ||
                              c == '\n' || c == '\r')) {
      return k;
    }
  }
  return std::min(k, text.size());
}

/// Calls `entry(k)` at each entry of the JSON object or array whose
/// `open` bracket is the first in `text` (k: where the entry starts),
/// which returns where the entry ends (the text's size: no more).
static void eachEntry(const std::string &text, char open,
                      llvm::function_ref<size_t(size_t)> entry) {
  size_t k = text.find(open);
  if (k == std::string::npos)
    return;
  auto skipSpace = [&] {
    while (k < text.size() && llvm::StringRef(" \t\r\n").contains(text[k]))
      ++k;
  };
  for (++k;;) {
    skipSpace();
    if (k >= text.size() || text[k] == (open == '{' ? '}' : ']'))
      return;
    k = entry(k);
    skipSpace();
    if (k >= text.size() || text[k] != ',')
      return;
    ++k;
  }
}

std::vector<std::pair<std::string, std::string>>
rawMembers(const std::string &text) {
  std::vector<std::pair<std::string, std::string>> members;
  eachEntry(text, '{', [&](size_t k) {
    if (text[k] != '"')
      return text.size();
    size_t end = jsonValueEnd(text, k);
    std::string name = text.substr(k + 1, end - k - 2);
    if (name.find('\\') != std::string::npos) {
      // (An escaped key: decoded as the parser decodes it.)
      auto v = json::parse(text.substr(k, end - k));
      name = v && v->getAsString() ? v->getAsString()->str() : "";
    }
    k = text.find(':', end); // (valid JSON: after space)
    if (k == std::string::npos)
      return text.size();
    k = text.find_first_not_of(" \t\r\n", k + 1);
    if (k == std::string::npos)
      return text.size();
    end = jsonValueEnd(text, k);
    members.emplace_back(std::move(name), text.substr(k, end - k));
    return end;
  });
  return members;
}

std::vector<std::string> rawElements(const std::string &text) {
  std::vector<std::string> elements;
  eachEntry(text, '[', [&](size_t k) {
    size_t end = jsonValueEnd(text, k);
    elements.push_back(text.substr(k, end - k));
    return end;
  });
  return elements;
}

std::string rawMember(const std::string &text, const std::string &key) {
  std::string found;
  for (auto &[name, value] : rawMembers(text))
    if (name == key)
      found = std::move(value);
  return found;
}

bool jsonWithinBounds(const std::string &body, std::string &error) {
  size_t depth = 0, values = 0;
  for (size_t k = 0; k < body.size(); ++k) {
    char c = body[k];
    if (c == ',' || c == '[' || c == '{') {
      if (++values > kMaxBodyValues) {
        error = "the body holds more than " + std::to_string(kMaxBodyValues) +
                " values";
        return false;
      }
    }
    if (c == '"') {
      k = stringClose(body, k);
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxBodyDepth) {
        error = "the body nests more than " + std::to_string(kMaxBodyDepth) +
                " arrays and objects";
        return false;
      }
    } else if ((c == ']' || c == '}') && depth) {
      --depth;
    }
  }
  return true;
}

namespace {

/// The JSON object of a body, or an error. (llvm::json's parser and its
/// values' destructor recurse once a level, and a value takes about 40
/// bytes however short its text: the nesting and the values are counted
/// first. An allocation that fails inside libLLVM, which unwinds without
/// destructors, would leak the tree built so far.)
const json::Object *bodyObject(const std::string &body,
                               std::optional<json::Value> &parsed,
                               std::string &error) {
  if (!jsonWithinBounds(body, error))
    return nullptr;
  auto v = json::parse(body);
  if (!v) {
    error = "the body is not JSON: " + llvm::toString(v.takeError());
    return nullptr;
  }
  parsed = std::move(*v);
  const json::Object *o = parsed->getAsObject();
  if (!o)
    error = "the body is not a JSON object";
  return o;
}

/// A number's text for messages: "0", "2", "0.5".
std::string numberText(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s;
}

/// Reads the optional fields of a request object, each named in errors.
struct Fields {
  const json::Object &o;
  std::string &error;

  /// The member `key` where it is present and not null.
  const json::Value *get(llvm::StringRef key) const {
    const json::Value *v = o.get(key);
    return v && v->kind() != json::Value::Null ? v : nullptr;
  }
  bool bad(llvm::StringRef key, const std::string &what) {
    error = "'" + key.str() + "' " + what;
    return false;
  }
  bool integer(llvm::StringRef key, int64_t lo, int64_t hi, int64_t &out) {
    const json::Value *v = get(key);
    if (!v)
      return true;
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i < lo || *i > hi)
      return bad(key, "must be an integer in [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
    out = *i;
    return true;
  }
  bool number(llvm::StringRef key, double lo, double hi, bool openLo,
              double &out) {
    const json::Value *v = get(key);
    if (!v)
      return true;
    std::optional<double> d = v->getAsNumber();
    if (!d || !std::isfinite(*d) || *d > hi || *d < lo || (openLo && *d == lo))
      return bad(key, std::string("must be a number in ") +
                          (openLo ? "(" : "[") + numberText(lo) + ", " +
                          numberText(hi) + "]");
    out = *d;
    return true;
  }
  bool boolean(llvm::StringRef key, bool &out) {
    const json::Value *v = get(key);
    if (!v)
      return true;
    if (!v->getAsBoolean())
      return bad(key, "must be true or false");
    out = *v->getAsBoolean();
    return true;
  }
  /// A parameter archc does not implement: refused unless it has the
  /// value that asks for nothing (`neutral`).
  bool unsupported(llvm::StringRef key,
                   std::initializer_list<json::Value> neutral) {
    const json::Value *v = get(key);
    if (v && llvm::none_of(neutral,
                           [&](const json::Value &n) { return *v == n; }))
      return bad(key, "is not supported by archc serve");
    return true;
  }
  /// A list of token ids (`what` the member should be, for the message).
  bool ids(llvm::StringRef key, const json::Array &list,
           const std::string &what, std::vector<int64_t> &out) {
    if (list.size() > kMaxPromptIds)
      return bad(key, "holds more than " + std::to_string(kMaxPromptIds) +
                          " ids");
    out.clear();
    for (const json::Value &id : list) {
      std::optional<int64_t> i = id.getAsInteger();
      if (!i || *i < 0 || *i > INT32_MAX)
        return bad(key, "must be " + what + " (integers >= 0)");
      out.push_back(*i);
    }
    return true;
  }
};

} // namespace

int parseHead(const std::string &head, HttpHead &out, std::string &error) {
  out = HttpHead();
  llvm::StringRef rest(head);
  auto line = [&] {
    auto [l, r] = rest.split('\n');
    rest = r;
    return l.consume_back("\r"), l;
  };
  llvm::StringRef request = line();
  llvm::SmallVector<llvm::StringRef, 4> parts;
  request.split(parts, ' ');
  if (parts.size() != 3 || parts[0].empty() || parts[1].empty() ||
      !llvm::all_of(parts[0], isTokenChar)) {
    error = "a malformed request line";
    return 400;
  }
  if (parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0") {
    error = "HTTP/1.0 and HTTP/1.1 are served, not '" +
            validUtf8(parts[2].take_front(32).str()) + "'";
    return 505;
  }
  out.method = parts[0].str();
  llvm::StringRef target = parts[1];
  // (An absolute-form target's path; a query is not used.)
  if (target.consume_front("http://"))
    target = target.drop_until([](char c) { return c == '/'; });
  out.path = target.take_until([](char c) { return c == '?'; }).str();
  if (out.path.empty() || out.path[0] != '/') {
    error = "the request target is not a path";
    return 400;
  }
  bool hasLength = false;
  while (!rest.empty()) {
    llvm::StringRef h = line();
    if (h.empty())
      break;
    auto [name, value] = h.split(':');
    if (name.size() == h.size() || name.empty() ||
        !llvm::all_of(name, isTokenChar)) {
      error = "a malformed header line";
      return 400;
    }
    value = value.trim(" \t");
    if (name.equals_insensitive("content-length")) {
      uint64_t n;
      if (value.empty() || value.size() > 18 ||
          !llvm::all_of(value, [](char c) { return c >= '0' && c <= '9'; }) ||
          value.getAsInteger(10, n) || (hasLength && n != out.contentLength)) {
        error = "Content-Length is not one decimal length";
        return 400;
      }
      if (n > kMaxBodyBytes) {
        error = "the body is " + std::to_string(n) + " bytes; at most " +
                std::to_string(kMaxBodyBytes) + " are read";
        return 413;
      }
      out.contentLength = size_t(n);
      hasLength = true;
    } else if (name.equals_insensitive("transfer-encoding")) {
      error = "a Transfer-Encoding body is not read: send Content-Length";
      return 501;
    } else if (name.equals_insensitive("expect")) {
      out.expectContinue = value.equals_insensitive("100-continue");
    }
  }
  return 0;
}

int parseRequest(const std::string &body, bool chat, Request &out,
                 std::string &error) {
  out = Request();
  out.chat = chat;
  std::optional<json::Value> parsed;
  const json::Object *o = bodyObject(body, parsed, error);
  if (!o)
    return 400;
  Fields f{*o, error};
  if (chat) {
    const json::Array *messages =
        f.get("messages") ? f.get("messages")->getAsArray() : nullptr;
    if (!messages || messages->empty())
      return f.bad("messages", "must be a non-empty array of messages"), 400;
    bool nullContent = false;
    for (size_t i = 0; i < messages->size(); ++i) {
      const json::Object *m = (*messages)[i].getAsObject();
      if (!m || !m->getString("role"))
        return f.bad("messages",
                     "[" + std::to_string(i) +
                         "] must be an object with a string 'role'"),
               400;
      const json::Value *content = m->get("content");
      nullContent |= m->getString("role") == "assistant" && content &&
                     content->kind() == json::Value::Null;
    }
    out.messages = rawMember(body, "messages");
    if (nullContent) {
      // Each message's text as sent, those with null content written
      // again with "".
      const std::string &raw = out.messages;
      size_t k = raw.find('[') + 1;
      out.messagesNonNull = "[";
      for (size_t i = 0; i < messages->size(); ++i) {
        while (k < raw.size() && llvm::StringRef(" \t\r\n,").contains(raw[k]))
          ++k;
        size_t end = jsonValueEnd(raw, k);
        std::string text = raw.substr(k, end - k);
        const json::Object &m = *(*messages)[i].getAsObject();
        const json::Value *content = m.get("content");
        if (m.getString("role") == "assistant" && content &&
            content->kind() == json::Value::Null) {
          json::Object copy = m;
          copy["content"] = "";
          text.clear();
          llvm::raw_string_ostream os(text);
          os << json::Value(std::move(copy));
        }
        out.messagesNonNull += (i ? ", " : "") + text;
        k = end;
      }
      out.messagesNonNull += "]";
    }
    if (const json::Value *rf = f.get("reasoning_format")) {
      std::optional<llvm::StringRef> name = rf->getAsString();
      if (!name || (*name != "auto" && *name != "none" && *name != "deepseek"))
        return f.bad("reasoning_format",
                     "must be \"auto\", \"none\" or \"deepseek\""),
               400;
      out.reasoningFormat = name->str();
    }
    // The template's other variables: chat_template_kwargs' members, then
    // the tools (which a kwarg of that name does not replace).
    std::string vars;
    if (const json::Value *kw = f.get("chat_template_kwargs")) {
      if (!kw->getAsObject())
        return f.bad("chat_template_kwargs", "must be a JSON object"), 400;
      std::string raw = rawMember(body, "chat_template_kwargs");
      std::string inner = raw.substr(1, raw.size() - 2);
      if (llvm::StringRef(inner).trim(" \t\r\n").size())
        vars = inner;
    }
    if (const json::Value *tools = f.get("tools")) {
      if (!tools->getAsArray())
        return f.bad("tools", "must be an array"), 400;
      out.tools = rawMember(body, "tools");
      vars += (vars.empty() ? "" : ", ") + std::string("\"tools\": ") +
              out.tools;
      out.toolCalls = !tools->getAsArray()->empty();
    }
    out.templateVars = vars.empty() ? "" : "{" + vars + "}";
    if (!f.integer("max_completion_tokens", 0, INT32_MAX, out.maxTokens))
      return 400;
    bool logprobs = false;
    int64_t top = 0;
    if (!f.boolean("logprobs", logprobs) ||
        !f.integer("top_logprobs", 0, kMaxTopLogprobs, top))
      return 400;
    if (top > 0 && !logprobs)
      return f.bad("top_logprobs", "needs 'logprobs' true"), 400;
    out.logprobs = logprobs ? top : -1;
  } else {
    const json::Value *p = f.get("prompt");
    const json::Array *list = p ? p->getAsArray() : nullptr;
    // (One prompt in a list: its text, or its ids.)
    if (list && list->size() == 1 &&
        ((*list)[0].getAsString() || (*list)[0].getAsArray())) {
      p = &(*list)[0];
      list = p->getAsArray();
    }
    if (p && p->getAsString()) {
      out.prompt = p->getAsString()->str();
    } else if (list && !list->empty() &&
               ((*list)[0].getAsArray() || (*list)[0].getAsString())) {
      return f.bad("prompt", "holds several prompts; archc serve takes one "
                             "a request"),
             400;
    } else if (list && !list->empty()) {
      if (!f.ids("prompt", *list, "a string or an array of token ids",
                 out.promptIds))
        return 400;
      out.promptIsIds = true;
    } else {
      return f.bad("prompt", "must be a string or an array of token ids"),
             400;
    }
    if (!f.unsupported("suffix", {""}) || !f.unsupported("echo", {false}) ||
        !f.unsupported("best_of", {1}))
      return 400;
    // (A count; false, as some clients send it, asks for none.)
    const json::Value *lp = f.get("logprobs");
    if (lp && *lp != json::Value(false) &&
        !f.integer("logprobs", 0, kMaxTopLogprobs, out.logprobs))
      return 400;
  }
  if (!f.integer("max_tokens", 0, INT32_MAX, out.maxTokens) ||
      !f.number("temperature", 0, 2, false, out.temperature) ||
      !f.number("top_p", 0, 1, true, out.topP) ||
      !f.boolean("stream", out.stream) ||
      !f.boolean("ignore_eos", out.ignoreEos))
    return 400;
  int64_t seed = 0;
  if (!f.integer("seed", INT64_MIN, INT64_MAX, seed))
    return 400;
  out.hasSeed = f.get("seed") != nullptr;
  out.seed = uint64_t(seed);
  if (const json::Value *so = f.get("stream_options")) {
    const json::Object *opts = so->getAsObject();
    if (!opts)
      return f.bad("stream_options", "must be an object"), 400;
    Fields sf{*opts, error};
    if (!sf.boolean("include_usage", out.includeUsage))
      return error = "stream_options." + error, 400;
  }
  if (const json::Value *stop = f.get("stop")) {
    if (stop->getAsString()) {
      out.stop.push_back(stop->getAsString()->str());
    } else if (const json::Array *list = stop->getAsArray()) {
      for (const json::Value &s : *list) {
        if (!s.getAsString())
          return f.bad("stop", "must be a string or an array of strings"),
                 400;
        out.stop.push_back(s.getAsString()->str());
      }
    } else {
      return f.bad("stop", "must be a string or an array of strings"), 400;
    }
    if (out.stop.size() > kMaxStops)
      return f.bad("stop", "holds more than " + std::to_string(kMaxStops) +
                               " strings"),
             400;
    for (const std::string &s : out.stop)
      if (s.empty() || s.size() > kMaxStopBytes)
        return f.bad("stop", "strings must be 1 to " +
                                 std::to_string(kMaxStopBytes) + " bytes"),
               400;
  }
  if (!f.number("presence_penalty", -2, 2, false, out.presencePenalty) ||
      !f.number("frequency_penalty", -2, 2, false, out.frequencyPenalty) ||
      !f.number("repeat_penalty", 0, 2, true, out.repetitionPenalty) ||
      !f.number("repetition_penalty", 0, 2, true, out.repetitionPenalty) ||
      !f.number("min_p", 0, 1, false, out.minP) ||
      !f.integer("top_k", -1, INT32_MAX, out.topK))
    return 400;
  if (const json::Value *lb = f.get("logit_bias")) {
    const json::Object *bias = lb->getAsObject();
    if (!bias)
      return f.bad("logit_bias", "must be an object of token ids and "
                                 "biases"),
             400;
    if (bias->size() > kMaxLogitBias)
      return f.bad("logit_bias", "names more than " +
                                     std::to_string(kMaxLogitBias) +
                                     " tokens"),
             400;
    // (A token id in decimal, as it is written: "05" or "+5" would name
    // a token another key may name too.)
    for (const auto &[key, value] : *bias) {
      int64_t id;
      std::optional<double> b = value.getAsNumber();
      if (llvm::StringRef(key).getAsInteger(10, id) || id < 0 ||
          id > INT32_MAX || key.str() != std::to_string(id))
        return f.bad("logit_bias", "'" + validUtf8(key.str()) +
                                       "' is not a token id"),
               400;
      if (!b || !(*b >= -100 && *b <= 100))
        return f.bad("logit_bias", "'" + key.str() +
                                       "' must be a number in [-100, 100]"),
               400;
      out.logitBias.push_back({id, *b});
    }
  }
  // What archc does not do is refused, not ignored.
  if (!f.unsupported("n", {1}))
    return 400;
  // The reply's grammar: llama-server's `grammar` (GBNF) and `json_schema`,
  // or OpenAI's response_format (json_object, json_schema); one of them.
  std::string gbnf, from;
  auto constrain = [&](const char *key, std::string text) {
    if (!from.empty())
      return f.bad(key, "and '" + from + "' both constrain the reply: give "
                                         "one"),
             false;
    from = key;
    gbnf = std::move(text);
    return true;
  };
  auto schema = [&](const char *key, const std::string &raw) {
    std::string text;
    if (!schemaGrammar(raw, text, error))
      return f.bad(key, error), false;
    return constrain(key, std::move(text));
  };
  if (const json::Value *g = f.get("grammar")) {
    if (!g->getAsString())
      return f.bad("grammar", "must be a GBNF grammar's text"), 400;
    if (!g->getAsString()->empty() &&
        !constrain("grammar", g->getAsString()->str()))
      return 400;
  }
  if (f.get("json_schema") &&
      !schema("json_schema", rawMember(body, "json_schema")))
    return 400;
  if (const json::Value *rf = f.get("response_format")) {
    const json::Object *r = rf->getAsObject();
    std::optional<llvm::StringRef> type = r ? r->getString("type") : std::nullopt;
    std::string raw = rawMember(body, "response_format");
    if (type == std::optional<llvm::StringRef>("json_object")) {
      // (llama-server's json_object may carry a schema.)
      if (r->get("schema") ? !schema("response_format", rawMember(raw, "schema"))
                           : !constrain("response_format", jsonObjectGrammar()))
        return 400;
    } else if (type == std::optional<llvm::StringRef>("json_schema")) {
      const json::Object *js = r->getObject("json_schema");
      if (!js || !js->get("schema"))
        return f.bad("response_format",
                     "json_schema must be an object with a 'schema'"),
               400;
      if (!schema("response_format",
                  rawMember(rawMember(raw, "json_schema"), "schema")))
        return 400;
    } else if (type != std::optional<llvm::StringRef>("text")) {
      return f.bad("response_format",
                   "must be {\"type\": \"text\"}, {\"type\": "
                   "\"json_object\"} or {\"type\": \"json_schema\", "
                   "\"json_schema\": {\"schema\": ...}}"),
             400;
    }
  }
  if (!from.empty()) {
    out.grammar = Grammar::parse(gbnf, error);
    if (!out.grammar)
      return f.bad(from, from == "grammar"
                             ? "at " + error
                             : "makes a grammar that does not parse (" +
                                   error + ")"),
             400;
    // (A grammar whose empty rules multiply its parses is refused here,
    // where its first character's parses are opened.)
    if (GrammarMatcher(out.grammar).overflowed())
      return f.bad(from, "is too ambiguous: " + GrammarMatcher::startLimits()),
             400;
  }
  if (const json::Value *tc = f.get("tool_choice")) {
    // "auto", "none" (the reply is content, whatever it holds),
    // "required" or {"type": "function", "function": {"name": NAME}}: the
    // reply is calls (of that tool), by a grammar of the model's format
    // (Serve.cpp, toolCallGrammar).
    std::optional<llvm::StringRef> choice = tc->getAsString();
    const json::Object *named = tc->getAsObject();
    const json::Object *function =
        named ? named->getObject("function") : nullptr;
    const json::Value *name = function ? function->get("name") : nullptr;
    if (name && (!name->getAsString() || name->getAsString()->empty()))
      return f.bad("tool_choice", "names no function"), 400;
    if (choice == std::optional<llvm::StringRef>("required") || name) {
      if (!out.toolCalls)
        return f.bad("tool_choice", "asks for a call, but 'tools' holds none"),
               400;
      if (out.grammar)
        return f.bad("tool_choice", "asks for a call, and '" + from +
                                        "' constrains the reply: give one"),
               400;
      out.toolRequired = true;
      out.toolNamed = name ? name->getAsString()->str() : "";
    } else if (choice != std::optional<llvm::StringRef>("auto") &&
               choice != std::optional<llvm::StringRef>("none")) {
      return f.bad("tool_choice",
                   "must be \"auto\", \"none\", \"required\" or "
                   "{\"type\": \"function\", \"function\": {\"name\": "
                   "...}}"),
             400;
    } else {
      out.toolCalls &= *choice == "auto";
    }
  }
  if (!f.boolean("parallel_tool_calls", out.parallelToolCalls))
    return 400;
  return 0;
}

int parseTokenize(const std::string &body, std::string &content,
                  bool &addSpecial, std::string &error) {
  std::optional<json::Value> parsed;
  const json::Object *o = bodyObject(body, parsed, error);
  if (!o)
    return 400;
  Fields f{*o, error};
  const json::Value *c = f.get("content");
  if (!c || !c->getAsString())
    return f.bad("content", "must be a string"), 400;
  content = c->getAsString()->str();
  addSpecial = false;
  return f.boolean("add_special", addSpecial) ? 0 : 400;
}

int parseDetokenize(const std::string &body, std::vector<int64_t> &tokens,
                    std::string &error) {
  std::optional<json::Value> parsed;
  const json::Object *o = bodyObject(body, parsed, error);
  if (!o)
    return 400;
  Fields f{*o, error};
  const json::Array *list = f.get("tokens") ? f.get("tokens")->getAsArray()
                                            : nullptr;
  if (!list)
    return f.bad("tokens", "must be an array of token ids"), 400;
  return f.ids("tokens", *list, "an array of token ids", tokens) ? 0 : 400;
}

std::string validUtf8(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (size_t k = 0; k < text.size();) {
    unsigned char c = uint8_t(text[k]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3
                                            : (c >> 3) == 30 ? 4 : 0;
    bool ok = n && k + n <= text.size();
    uint32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (size_t j = 1; ok && j < n; ++j) {
      unsigned char d = uint8_t(text[k + j]);
      ok = (d & 0xC0) == 0x80;
      cp = cp << 6 | (d & 0x3F);
    }
    // (No overlong forms, surrogates or code points past U+10FFFF.)
    ok = ok && !(n == 2 && cp < 0x80) && !(n == 3 && cp < 0x800) &&
         !(n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) &&
         !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      out.append(text, k, n);
      k += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++k;
    }
  }
  return out;
}

std::string errorBody(int status, const std::string &message) {
  return "{\"error\": {\"code\": " + std::to_string(status) +
         ", \"message\": " + jsonString(validUtf8(message)) +
         ", \"type\": " +
         (status >= 500 ? "\"server_error\"" : "\"invalid_request_error\"") +
         "}}";
}

const char *statusText(int status) {
  switch (status) {
  case 200: return "OK";
  case 400: return "Bad Request";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 413: return "Content Too Large";
  case 431: return "Request Header Fields Too Large";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 503: return "Service Unavailable";
  case 505: return "HTTP Version Not Supported";
  default: return "Error";
  }
}

size_t partialMark(llvm::StringRef text, llvm::StringRef mark, size_t from) {
  from = std::min(from, text.size());
  size_t longest = std::min(mark.empty() ? 0 : mark.size() - 1,
                            text.size() - from);
  for (size_t n = longest; n > 0; --n)
    if (text.take_back(n) == mark.take_front(n))
      return text.size() - n;
  return std::string::npos;
}

StopScanner::StopScanner(std::vector<std::string> stops)
    : stops(std::move(stops)) {
  for (const std::string &s : this->stops)
    longest = std::max(longest, s.size());
}

bool StopScanner::add(const char *piece) {
  if (stopped)
    return true;
  size_t from = all.size() > longest ? all.size() - longest : 0;
  from = std::max(from, released);
  all += piece;
  size_t cut = std::string::npos;
  for (const std::string &s : stops)
    cut = std::min(cut, all.find(s, from));
  if (cut == std::string::npos)
    return false;
  all.resize(cut);
  return stopped = true;
}

std::string StopScanner::take(bool end, size_t upTo) {
  size_t safe = std::min(all.size(), upTo);
  if (!end && !stopped) {
    // Not the start of a stop string...
    for (const std::string &s : stops)
      safe = std::min(safe, partialMark(all, s));
    // ...nor a character's first bytes.
    safe = std::max(safe, released);
    for (size_t n = 1; n <= 3 && n <= safe - released; ++n) {
      unsigned char c = uint8_t(all[safe - n]);
      if ((c & 0xC0) == 0x80)
        continue; // a continuation byte: look further back
      size_t want = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
      if (want > n)
        safe -= n;
      break;
    }
  }
  if (safe <= released)
    return "";
  std::string out = validUtf8(all.substr(released, safe - released));
  released = safe;
  return out;
}

} // namespace arch::serve
