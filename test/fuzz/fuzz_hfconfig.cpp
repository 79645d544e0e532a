//===- fuzz_hfconfig.cpp - config.json text -> spec text -> ArchSpec ------===//
//
// Any bytes either import (archc import-hf) to spec text that the spec
// parser reads into a spec or refuses with errors that each name a key or
// a place, or fail with a message naming the file; never a crash, a hang
// (nesting is bounded) or undefined behaviour.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/HFConfig.h"
#include "compiler/spec/ArchSpec.h"

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
  std::vector<arch::SpecError> errors;
  auto spec = arch::parseSpecString(hf.toml, "imported.toml", errors);
  if (!spec) {
    if (errors.empty())
      abort();
    for (const arch::SpecError &e : errors)
      if (e.message.empty())
        abort();
  }
  return 0;
}
