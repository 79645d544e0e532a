//===- spec_checks.h - What every spec text a harness makes must satisfy -===//
//
// Any text either parses into a spec the importer can rely on (one layer
// spec per layer, positive sizes, head groups that divide, weight and cache
// shapes whose element counts fit in int64), or gives errors that each
// name a key or a place. fuzz_spec checks TOML text as given, fuzz_hfconfig
// the text archc import-hf makes.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_FUZZ_SPEC_CHECKS_H
#define ARCHC_FUZZ_SPEC_CHECKS_H

#include "compiler/spec/ArchSpec.h"

#include <cstdint>
#include <cstdlib>
#include <string>

/// a * b, aborting if it is not positive or overflows int64.
static int64_t product(int64_t a, int64_t b) {
  int64_t r;
  if (a <= 0 || b <= 0 || __builtin_mul_overflow(a, b, &r))
    abort();
  return r;
}

/// Parses `text` (named `name` in errors) and aborts unless it holds.
inline void checkSpecText(const std::string &text, const char *name) {
  std::vector<arch::SpecError> errors;
  auto spec = arch::parseSpecString(text, name, errors);
  if (!spec) {
    if (errors.empty())
      abort();
    for (const arch::SpecError &e : errors)
      if (e.message.empty())
        abort();
    return;
  }
  const arch::ArchSpec &s = *spec;
  if (int64_t(s.layers.size()) != s.model.nLayers ||
      s.attention.nKVHeads <= 0 || s.attention.nHeads % s.attention.nKVHeads)
    abort();
  int64_t d = s.model.dModel;
  product(s.model.vocabSize, d);                      // embedding, classifier
  product(product(s.model.maxSeqLen, s.kvDim()), 2);  // one layer's cache
  product(d, s.qDim());
  for (const arch::LayerSpec &l : s.layers)
    product(product(d, l.ffn.dFF), 3);                // gate, up, down
}

#endif // ARCHC_FUZZ_SPEC_CHECKS_H
