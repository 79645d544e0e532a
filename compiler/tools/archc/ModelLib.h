//===- ModelLib.h - A compiled model library, opened with dlopen -*- C++ -*-===//
#ifndef ARCHC_TOOLS_MODELLIB_H
#define ARCHC_TOOLS_MODELLIB_H

#include "archrt.h"

#include <string>

namespace arch {

/// The archrt C ABI of one model library, resolved with dlsym.
struct ModelLib {
  void *handle = nullptr;
#define ARCHRT_FN(name) decltype(&::name) name = nullptr;
#include "ModelLibFns.def"

  /// Opens `path` and resolves every function; false with `error` if any is
  /// missing.
  bool open(const std::string &path, std::string &error);
  ~ModelLib();
};

} // namespace arch

#endif // ARCHC_TOOLS_MODELLIB_H
