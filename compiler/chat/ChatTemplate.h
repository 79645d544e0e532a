//===- ChatTemplate.h - A model's chat template, rendered ------*- C++ -*-===//
//
// A chat model's prompt format is a Jinja template its checkpoint ships
// (tokenizer_config.json's `chat_template`, a chat_template.jinja file, or
// a GGUF file's `tokenizer.chat_template`), which Hugging Face renders with
// jinja2 in a sandboxed environment: trim_blocks and lstrip_blocks on, loop
// controls ({% break %}, {% continue %}), `raise_exception` and
// `strftime_now` as globals and `tojson` as json.dumps (ensure_ascii off).
// This is that environment's language, interpreted: the statements if, for
// (with loop.*, an else and a filter), set (names, a namespace's fields, a
// block), break, continue and generation; Python's expressions, values and
// their str(), with the string, list and dict methods and the filters and
// tests the published templates use. What it does not implement (macros,
// includes, call blocks, custom filters) is refused by name when the
// template is parsed, so that a template either renders as jinja2 would or
// says why it cannot (docs/design.md "Chat templates").
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_CHAT_CHATTEMPLATE_H
#define ARCHC_CHAT_CHATTEMPLATE_H

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace arch {

class ChatTemplate {
public:
  ~ChatTemplate();

  /// Parses template `source`; `name` (a file, or a file and key) leads its
  /// errors, which name the line and column and the problem.
  static std::unique_ptr<ChatTemplate> parse(const std::string &source,
                                             const std::string &name,
                                             std::string &error);

  /// Renders the template with the members of `context`, a JSON object's
  /// text, as its variables (messages, add_generation_prompt, tools, ...;
  /// objects keep their keys' order), and `defaults` as string variables
  /// the context does not set (the special tokens: bos_token, ...).
  /// Fails where jinja2 would raise (an undefined name's attribute, a type
  /// error, raise_exception), naming the place; or where the output passes
  /// 64 MiB.
  bool render(const std::string &context,
              const std::vector<std::pair<std::string, std::string>> &defaults,
              std::string &out,
              std::string &error) const;

  /// Whether `text` is one JSON value as render() reads it; `error` names
  /// `what` and the byte at fault.
  static bool checkJSON(const std::string &text, const std::string &what,
                        std::string &error);

  struct Node;

private:
  ChatTemplate();
  std::string name;
  std::unique_ptr<Node> root;
};

} // namespace arch

#endif // ARCHC_CHAT_CHATTEMPLATE_H
