//===- fuzz_spec.cpp - TOML text -> ArchSpec -> analytic report -----------===//
//
// Any text either parses into a spec whose report is finite and
// non-negative, or gives errors that each name a key or a place.
//
//===----------------------------------------------------------------------===//
#include "compiler/spec/ArchSpec.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

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
  arch::SpecReport r = arch::analyzeSpec(*spec);
  double flops = r.prefillFlopsPerToken(spec->model.maxSeqLen);
  if (r.params <= 0 || r.weightBytes <= 0 || r.kvBytesPerToken <= 0 ||
      !std::isfinite(flops) || flops <= 0)
    abort();
  return 0;
}
