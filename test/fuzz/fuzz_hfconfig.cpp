//===- fuzz_hfconfig.cpp - config.json text -> spec text -> ArchSpec ------===//
//
// Any bytes either import (archc import-hf) to spec text that meets what
// every spec text must (spec_checks.h: a spec the importer can rely on, or
// errors that each name a key or a place), or fail with a message naming
// the file; never a crash, a hang (nesting is bounded) or undefined
// behaviour.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/HFConfig.h"
#include "spec_checks.h"

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  arch::HFSpec hf;
  std::string error;
  if (!arch::importHFConfig(text, "fuzz/config.json", "", hf, error)) {
    if (error.rfind("fuzz/config.json: ", 0) != 0)
      abort(); // every failure names the file
    return 0;
  }
  if (hf.toml.empty())
    abort();
  // The imported text meets what any spec text must (spec_checks.h).
  checkSpecText(hf.toml, "imported.toml");
  return 0;
}
