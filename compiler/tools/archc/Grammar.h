//===- Grammar.h - Grammars that constrain a reply's tokens -----*- C++ -*-===//
//
// A reply that must be JSON, JSON of a schema, or the language of a
// grammar: archc serve masks, before each token is sampled, every token
// whose text cannot continue the reply within the grammar, as llama.cpp's
// grammars and vLLM's guided decoding do.
//
// The grammars are llama.cpp's GBNF: rules `name ::= alternatives`, string
// literals, character classes, `.`, groups, and the repetitions `*`, `+`,
// `?`, `{m}`, `{m,}`, `{m,n}`; the start rule is `root`. A JSON schema
// (response_format's json_schema) becomes such a grammar first
// (schemaGrammar), so that a user can read what constrains the reply
// (`archc grammar --json-schema`). docs/design.md "Constrained replies".
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_TOOLS_GRAMMAR_H
#define ARCHC_TOOLS_GRAMMAR_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace arch::serve {

/// A parsed GBNF grammar: its rules' alternatives as runs of elements.
class Grammar {
public:
  /// `text` as a grammar; nullptr with `error` ("line L, column C: what")
  /// where it is not one, refers to a rule it does not define, has no
  /// `root`, is left-recursive, or is larger than kMaxElements.
  static std::unique_ptr<Grammar> parse(llvm::StringRef text,
                                        std::string &error);

  /// What a grammar may hold, after its repetitions are expanded.
  static constexpr size_t kMaxElements = 1 << 20;

  enum class Kind : uint8_t {
    Chars, ///< one code point within (or, negated, outside) ranges
    Ref,   ///< a rule
    End,   ///< the end of an alternative
  };
  struct Element {
    Kind kind = Kind::End;
    bool negated = false;
    uint32_t a = 0, b = 0; ///< Chars: ranges [a, b); Ref: the rule
  };
  std::vector<Element> elements;
  /// Chars' ranges of code points [first, last], sorted and merged.
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  /// Each rule's alternatives: where each starts in `elements`.
  std::vector<std::vector<uint32_t>> rules;
  std::vector<std::string> names;
  uint32_t root = 0;

  /// Whether Chars element `e` matches code point `c`.
  bool matches(const Element &e, uint32_t c) const;
  /// Whether it matches some code point in [lo, hi].
  bool matchesSome(const Element &e, uint32_t lo, uint32_t hi) const;
};

/// The vocabulary's token texts as a trie of their bytes, built once a
/// model: a grammar's mask walks it, so that tokens sharing a prefix are
/// matched once for it.
class TokenTrie {
public:
  /// `texts[id]`; an empty text (a stop token's, a byte token's of 0x00)
  /// is no token of the trie.
  explicit TokenTrie(const std::vector<std::string> &texts);

  struct Node {
    uint32_t firstChild = 0, children = 0; ///< in `edges`
    uint32_t firstToken = 0, tokens = 0;   ///< in `ids`: those ending here
  };
  struct Edge {
    uint8_t byte;
    uint32_t node;
  };
  std::vector<Node> nodes; ///< nodes[0]: the root
  std::vector<Edge> edges;
  std::vector<int32_t> ids;
  size_t vocab = 0;
  size_t maxDepth = 0; ///< the longest text's bytes
};

/// Where a reply stands in a grammar: the parses still open (stacks of
/// what each has left to match), and a code point's bytes not all seen.
class GrammarMatcher {
public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  /// At most this many parses at once, this many stacks looked at to
  /// follow one character (a grammar whose empty rules multiply its
  /// parses), and this many in a mask's walk or an accept: a grammar more
  /// ambiguous than that is refused while it runs (`overflowed`). (A JSON
  /// reply's mask over 150 000 tokens looks at about 10^7.)
  static constexpr size_t kMaxParses = 4096;
  static constexpr size_t kMaxWork = 1 << 17;
  static constexpr size_t kMaxWalk = 1 << 26;

  /// Whether the bytes `text` may come next; advances past them if so,
  /// else changes nothing.
  bool accept(llvm::StringRef text);
  /// Whether they may come next; the text stays where it is.
  bool accepts(llvm::StringRef text);
  /// Whether the text so far is a whole sentence of the grammar.
  bool complete() const;
  /// Whether nothing more may come (complete, no parse open).
  bool finished() const;
  /// allowed[id] = 1 where token `id`'s text may come next (0 for a token
  /// not in `trie`). False with `error` where the grammar ran past
  /// kMaxParses.
  bool mask(const TokenTrie &trie, std::vector<uint8_t> &allowed,
            std::string &error);
  /// Whether the grammar ran past kMaxParses or kMaxWork (then `accept`
  /// takes nothing more).
  bool overflowed() const { return overflow || broken; }
  /// What a start past the limits ran past: "its start opens more than
  /// ... parses, or takes more than ... steps".
  static std::string startLimits();

private:
  /// A stack: an element to match next and the stack below it (-1: none).
  struct Node {
    uint32_t at;
    int32_t below;
  };
  /// A point of the walk: the open parses (node ids; -1: one that is
  /// complete) and the code point being read.
  struct State {
    std::vector<int32_t> stacks;
    uint32_t partial = 0; ///< the code point's bits so far
    uint8_t remain = 0;   ///< its bytes still to come
    uint8_t length = 0;   ///< its bytes in all
  };

  int32_t node(uint32_t at, int32_t below);
  /// The stack of element `at` over `below`: `below` itself where `at` ends
  /// its alternative.
  int32_t next(uint32_t at, int32_t below);
  /// Starts a step: expand's marks and work count afresh.
  void newStep();
  /// Adds to `out` the stacks that `n` opens: each with a code point's
  /// element on top, or -1 where a parse ends.
  void expand(int32_t n, std::vector<int32_t> &out);
  /// Where the text so far goes after `text`, into `out`; false where no
  /// parse takes it.
  bool follow(llvm::StringRef text, State &out);
  /// `from` after byte `b`, into `to`; false where no parse takes it.
  bool step(const State &from, uint8_t b, State &to);
  bool stepCodePoint(const State &from, uint32_t c, State &to);
  /// Marks the tokens at and below trie node `at`, read from `state`.
  void walk(const TokenTrie &trie, uint32_t at, int32_t state,
            std::vector<uint8_t> &allowed);
  /// `state`'s id among the walks' states.
  int32_t intern(State &&state);
  /// Drops every node but `now`'s stacks', and the walks' states.
  void compact();
  /// compact() where they have grown past kMaxKeptNodes or kMaxKeptStates
  /// (at a mask, and at each accept: a reply seldom masked grows them
  /// too).
  void trim();

  std::shared_ptr<const Grammar> g;
  std::vector<Node> nodes;
  llvm::DenseMap<uint64_t, int32_t> interned;
  State now;
  /// The walks' states, and each one's step by a byte (state << 8 | byte:
  /// the next state, -1 where no parse takes the byte), kept from mask to
  /// mask; compacted away past kMaxKeptNodes nodes or kMaxKeptStates.
  std::vector<State> states;
  std::unordered_map<std::string, int32_t> stateIds;
  llvm::DenseMap<uint64_t, int32_t> steps;
#ifdef ARCHC_FUZZ_SMALL_CACHES
  // (scripts/fuzz.sh: compacted at almost every mask, so that fuzz_grammar
  // holds the compacted matcher's masks to its accept too.)
  static constexpr size_t kMaxKeptNodes = 64, kMaxKeptStates = 4;
#else
  static constexpr size_t kMaxKeptNodes = 1 << 20, kMaxKeptStates = 1 << 16;
#endif
  std::vector<int32_t> work;
  /// expand's marks: nodes met in the current step (seen[n] == stamp).
  std::vector<uint32_t> seen;
  uint32_t stamp = 0;
  size_t worked = 0; ///< stacks expand looked at in this step
  size_t walked = 0; ///< and in this mask's walk or accept
  bool broken = false; ///< the start ran past the limits
  bool overflow = false;
};

/// A model's vocabulary as grammars see it: each token's text within a
/// text (a stop token's ""), the tokens that end a reply, their trie.
struct GrammarVocabulary {
  GrammarVocabulary(std::vector<std::string> texts,
                    std::vector<uint8_t> ending);
  std::vector<std::string> texts;
  std::vector<uint8_t> ending;
  TokenTrie trie;
};

/// A reply held to a grammar, token by token: archc serve's and archc
/// run's. Each token is sampled from the model's logits first and
/// stands where the grammar takes it; only a token refused is sampled
/// again under the mask, which gives each token the probability the mask
/// would (`maskFirst`: the mask first, where the sampler cuts the
/// distribution by rank or mass; docs/design.md "Constrained replies").
class ConstrainedReply {
public:
  ConstrainedReply(const GrammarVocabulary &vocabulary,
                   std::shared_ptr<const Grammar> grammar, bool maskFirst);
  /// Whether the logits are masked before the first sample (top_k, min_p,
  /// top_p < 1: a token the grammar refuses would change which tokens the
  /// cut keeps).
  const bool maskFirst;
  /// Whether the grammar takes token `id` next: a stop token where the text
  /// so far is a whole sentence (the mask's answer where it was made for
  /// this token); the text stays where it is.
  bool allows(int32_t id);
  /// -inf into `logits` (a copy of the model's, one a token of the
  /// vocabulary) for each token the grammar does not allow next, a
  /// stop token too unless the text so far is a whole sentence. False
  /// where the reply must end here: with error() empty where the text is
  /// whole and no token may follow (a vocabulary without stop tokens),
  /// else saying why the grammar cannot go on.
  bool mask(float *logits);
  /// mask()'s over a copy of `logits` (this reply's), or null where it
  /// returns false.
  const float *masked(const float *logits);
  /// Whether the token to come was masked (mask() since the last take()).
  bool maskedHere() const { return maskedNow; }
  /// Past token `id` (a stop token: nothing to match); false where the
  /// grammar does not take it (a token allows() or the mask allowed:
  /// archc's fault, not the grammar's: faultText()).
  bool take(int32_t id);
  /// Whether the text so far is a whole sentence of the grammar.
  bool whole() const { return matcher.complete(); }
  /// Why the last mask() failed: the grammar cannot go on ("": it did not,
  /// or the text was whole; a request's error, not archc's).
  const std::string &error() const { return failure; }
  /// The error of a token the grammar refused after allowing it.
  static std::string faultText(int32_t id);
  /// The tokens sampled under the grammar (the reply's, and a stop token
  /// that ended it), and those of them the mask was made for.
  size_t sampled() const { return positions; }
  size_t masks() const { return maskCount; }

private:
  const GrammarVocabulary &vocabulary;
  GrammarMatcher matcher;
  std::vector<uint8_t> allowed;
  std::vector<float> copy;
  std::string failure;
  size_t bytes = 0; ///< the reply's so far
  size_t positions = 0, maskCount = 0;
  /// Whether the token to come was looked at (allows() or mask() since the
  /// last take()), and masked.
  bool touched = false, maskedNow = false;
  void touch() {
    positions += !touched;
    touched = true;
  }
};

class SchemaWriter;

/// JSON schemas' grammars in one GBNF text: a rule (or an expression)
/// each, and the JSON rules (value, string, ws, ...) once.
class SchemaGrammar {
public:
  SchemaGrammar();
  ~SchemaGrammar();
  /// The GBNF expression of `schema` (valid JSON text; its $refs point
  /// into it), its rules named from `hint`; "" with `error` naming the
  /// place in the schema (a JSON pointer) and what it does not support.
  std::string add(const std::string &schema, const std::string &hint,
                  std::string &error);
  /// GBNF text whose root is `root`, with the rules added.
  std::string text(const std::string &root) const;
  /// A rule of the caller's, named from `hint` apart from the schemas'
  /// (and its other rules'), defined by `define` (its body may name it).
  std::string rule(const std::string &hint);
  void define(const std::string &name, const std::string &body);

private:
  std::unique_ptr<SchemaWriter> w;
};

/// A JSON schema's valid JSON text as GBNF text (its `root` the schema's
/// value; the properties in the order the text gives them), for the
/// keywords docs/design.md lists; false with `error` naming the place in
/// the schema (a JSON pointer) and what it does not support.
bool schemaGrammar(const std::string &schema, std::string &gbnf,
                   std::string &error);
/// `text` as a GBNF string literal (quoted, escaped).
std::string gbnfLiteral(llvm::StringRef text);
/// A string schema's `pattern` (ECMA-262's syntax: characters, classes,
/// `.`, the class escapes, groups, alternatives, the quantifiers, `^` and
/// `$` at an alternative's ends) as the GBNF expression of the JSON
/// strings (quotes and all) whose characters it matches, searched unless
/// anchored; its `char*` is kJsonRules' (Pattern.cpp). "" with `error`
/// ("at character N: what") where the pattern holds what the grammar
/// cannot (lookaround, backreferences, word boundaries, ...).
std::string patternGrammar(llvm::StringRef pattern, std::string &error);
/// The JSON text (quotes and all) of string `text` as a pattern's grammar
/// writes its characters (Pattern.cpp's jsonChar: `\"`, `\n`, `\u0001`).
std::string jsonStringText(llvm::StringRef text);
/// GBNF text whose root is any JSON object (response_format json_object).
std::string jsonObjectGrammar();

} // namespace arch::serve

#endif // ARCHC_TOOLS_GRAMMAR_H
