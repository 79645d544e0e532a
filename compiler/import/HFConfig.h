//===- HFConfig.h - A Hugging Face config.json as an archc spec -*- C++ -*-===//
//
// `archc import-hf` and `archc compile|check|run DIR`: a model directory's
// config.json becomes the TOML spec archc would be written with by hand,
// for the model_types whose architecture archc supports. The spec then
// goes through the spec parser like any other (its bounds and checks).
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_IMPORT_HFCONFIG_H
#define ARCHC_IMPORT_HFCONFIG_H

#include <string>
#include <vector>

namespace arch {

struct HFSpec {
  std::string toml; ///< a commented spec, each key naming its source field
  /// Fields of the config that neither set a key nor are known to have no
  /// effect on inference (tokens ids, dropout, training settings): the
  /// caller warns with them.
  std::vector<std::string> unknown;
};

/// The spec of config.json text `json` (read from `source`, which the
/// comments and errors name; `name` the model name to give, derived from
/// the directory when empty). On failure, `error` says which field and
/// why, and the result is empty.
bool importHFConfig(const std::string &json, const std::string &source,
                    std::string name, HFSpec &out, std::string &error);

/// The model_types importHFConfig takes, comma-separated.
std::string hfModelTypes();

} // namespace arch

#endif // ARCHC_IMPORT_HFCONFIG_H
