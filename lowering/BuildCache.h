//===- BuildCache.h - Objects kept across builds ---------------*- C++ -*-===//
//
// archc keeps what costs the most to rebuild and depends on little: the
// Halide runtime (Halide and the target only) and each kernel's object
// (its KernelSpec, the target and the code that compiles it), under
// $ARCHC_CACHE (default ~/.cache/archc). Entries are written beside and
// renamed into place, so concurrent builds never read half of one; any
// failure of the cache falls back to compiling. A build that misses holds
// the entry's lock (flock on a file beside it) while it compiles, so that
// concurrent builds of the same kernel wait and take its object instead of
// compiling it again.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHC_LOWERING_BUILDCACHE_H
#define ARCHC_LOWERING_BUILDCACHE_H

#include "arch/Kernel/Kernels.h"

#include <string>

namespace arch {

/// $ARCHC_CACHE, else $HOME/.cache/archc, else "" (no cache).
std::string cacheDirectory();

/// Kernel objects by (KernelSpec::signature(), target: kernelTargetString,
/// which also names what else an object depends on), and the Halide
/// runtime object by target, in kernels/<toolchain>/ under the cache
/// directory, where <toolchain> digests the ELF build ids of archc, of the
/// object that holds the kernel compiler (archc itself while it is linked
/// statically) and of the Halide and LLVM libraries it loaded: a rebuilt
/// archc (a changed algorithm or schedule) or an upgraded Halide never
/// sees another one's objects. Directories of other toolchains untouched
/// for two weeks are removed when one opens.
class KernelCache {
public:
  /// Off when `enable` is false, without a cache directory or when a
  /// build id is missing (offReason() says which).
  explicit KernelCache(bool enable);
  bool enabled() const { return !dir.empty(); }
  /// The directory in use, or why there is none.
  const std::string &directory() const { return dir; }
  const std::string &offReason() const { return off; }
  /// Copies the cached object of `spec` for `target` to `path`.
  bool fetch(const KernelSpec &spec, const std::string &target,
             const std::string &path) const;
  /// Keeps a copy of the object at `path`; best effort.
  void store(const KernelSpec &spec, const std::string &target,
             const std::string &path) const;
  /// The same for the Halide runtime object of `target`.
  bool fetchRuntime(const std::string &target, const std::string &path) const;
  void storeRuntime(const std::string &target, const std::string &path) const;

  /// An entry's lock, held until destroyed: taken after a miss and before
  /// compiling (it waits while another build holds it; fetch again once it
  /// is held). Holds nothing when the cache is off, the lock file cannot
  /// be opened or another build has held it past $ARCHC_CACHE_LOCK_WAIT
  /// seconds (default 300): the build then compiles, as without a cache.
  class Lock {
  public:
    Lock() = default;
    explicit Lock(const std::string &path);
    Lock(Lock &&other) : fd(other.fd) { other.fd = -1; }
    Lock &operator=(Lock &&) = delete;
    ~Lock();

  private:
    int fd = -1;
  };
  Lock lock(const KernelSpec &spec, const std::string &target) const;
  Lock lockRuntime(const std::string &target) const;

private:
  std::string dir, off;
};

} // namespace arch

#endif // ARCHC_LOWERING_BUILDCACHE_H
