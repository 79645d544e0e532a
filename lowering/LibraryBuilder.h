//===- LibraryBuilder.h - Kernels + glue + runtime -> .so ------*- C++ -*-===//
#ifndef ARCHC_LOWERING_LIBRARYBUILDER_H
#define ARCHC_LOWERING_LIBRARYBUILDER_H

#include "lowering/GlueEmitter.h"

#include <functional>
#include <string>

namespace arch {

struct BuildOptions {
  std::string target = "host";
  /// A relocatable object (--emit=obj) instead of a shared library.
  bool relocatable = false;
  /// Glue and runtime built with AddressSanitizer and UBSan (a host loads
  /// the library with the sanitizer runtimes, e.g. LD_PRELOAD=libasan.so).
  bool sanitize = false;
  /// Kernel and runtime objects from and into the cache (BuildCache.h).
  bool kernelCache = true;
  /// Called after each kernel compiles: (kernels done, kernels total).
  std::function<void(size_t, size_t)> progress;
};

struct BuildStats {
  double kernelSeconds = 0, runtimeSeconds = 0, linkSeconds = 0;
  size_t kernels = 0, cachedKernels = 0; ///< cached: taken from the cache
  std::string cache; ///< the cache directory, or "off: <why>"
  std::string glueCompiler; ///< the C compiler of the glue
};

/// Compiles every kernel and the Halide runtime, compiles the glue (with
/// clang-19 where it is on PATH, else cc) and links them with the archrt
/// runtime into `outPath`.
/// Works in a temporary directory ($TMPDIR, else /tmp) and puts the
/// library into place at the end (putFile: whole or not at all; a
/// device such as /dev/null written, not replaced).
bool buildLibrary(const LoweredModel &model, const BuildOptions &opts,
                  const std::string &outPath, std::string &error,
                  BuildStats *stats = nullptr);

} // namespace arch

#endif // ARCHC_LOWERING_LIBRARYBUILDER_H
