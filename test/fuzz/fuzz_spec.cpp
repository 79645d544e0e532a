//===- fuzz_spec.cpp - TOML text -> ArchSpec ------------------------------===//
//
// Any text either parses into a spec the importer can rely on (one layer
// spec per layer, positive sizes, head groups that divide, weight and cache
// shapes whose element counts fit in int64), or gives errors that each
// name a key or a place.
//
//===----------------------------------------------------------------------===//
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::vector<arch::SpecError> errors;
  auto spec = arch::parseSpecString(text, "fuzz.toml", errors);
  if (!spec) {
    if (errors.empty())
      abort();
    for (const arch::SpecError &e : errors)
      if (e.message.empty())
        abort();
    return 0;
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
  return 0;
}
