//===- fuzz_ggufconfig.cpp - GGUF bytes -> config.json -> spec text -------===//
//
// Any bytes either make a config.json (archc import-hf FILE.gguf) that
// imports to spec text meeting what every spec text must (spec_checks.h),
// or a config the importer refuses, or fail with a message naming the
// file; never a crash, a hang or undefined behaviour, whatever the
// header's counts, lengths, types and offsets say.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/GGUFConfig.h"
#include "compiler/import/HFConfig.h"
#include "spec_checks.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string name = "fuzz.gguf";
  std::string json, error;
  std::vector<std::string> unread;
  if (!arch::ggufConfigJSONFromBytes(data, size, name, json, unread, error)) {
    if (error.rfind(name + ": ", 0) != 0)
      abort(); // every failure names the file
    return 0;
  }
  arch::HFSpec hf;
  if (!arch::importHFConfig(json, name, "", hf, error)) {
    if (error.rfind(name + ": ", 0) != 0)
      abort();
    return 0;
  }
  // The imported text meets what any spec text must (spec_checks.h).
  checkSpecText(hf.toml, "imported.toml");
  return 0;
}
