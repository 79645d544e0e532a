//===- fuzz_spec.cpp - TOML text -> ArchSpec ------------------------------===//
//
// Any text either parses into a spec the importer can rely on, or gives
// errors that each name a key or a place (spec_checks.h).
//
//===----------------------------------------------------------------------===//
#include "spec_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  checkSpecText(std::string(reinterpret_cast<const char *>(data), size),
                "fuzz.toml");
  return 0;
}
