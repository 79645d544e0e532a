//===- BuildCache.cpp - Objects kept across builds ------------------------===//
#include "lowering/BuildCache.h"
#include "lowering/OutputFile.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <link.h>
#include <sstream>
#include <sys/file.h>
#include <unistd.h>

namespace arch {
namespace fs = std::filesystem;

std::string cacheDirectory() {
  const char *env = getenv("ARCHC_CACHE"), *home = getenv("HOME");
  if (env && *env)
    return env;
  return home && *home ? std::string(home) + "/.cache/archc" : "";
}

namespace {

uint64_t fnv1a(const std::string &s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

/// The GNU build id of a loaded object, "" without one.
std::string buildId(const dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const char *p = (const char *)(info->dlpi_addr + ph.p_vaddr);
    const char *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) n;
      std::memcpy(&n, p, sizeof n);
      const char *name = p + sizeof n;
      const char *desc = name + ((n.n_namesz + 3) & ~3u);
      if (desc + n.n_descsz > end)
        break;
      if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0)
        return std::string(desc, n.n_descsz);
      p = desc + ((n.n_descsz + 3) & ~3u);
    }
  }
  return "";
}

/// Build ids of the executable, of the object holding this code (the
/// kernel compiler) and of the Halide and LLVM libraries, or "" if one
/// lacks an id.
std::string toolchainId() {
  struct Ids {
    std::string all;
    bool missing = false;
    uintptr_t self = 0; ///< the load address of the object holding this
  } ids;
  Dl_info self;
  if (dladdr(reinterpret_cast<void *>(&cacheDirectory), &self))
    ids.self = reinterpret_cast<uintptr_t>(self.dli_fbase);
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto &ids = *static_cast<Ids *>(data);
        const char *name = info->dlpi_name ? info->dlpi_name : "";
        bool main = ids.all.empty() && !ids.missing && !*name;
        bool holder = false;
        for (int i = 0; i < info->dlpi_phnum && !holder; ++i)
          holder = info->dlpi_phdr[i].p_type == PT_LOAD &&
                   info->dlpi_addr + info->dlpi_phdr[i].p_vaddr <= ids.self &&
                   ids.self < info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
                                  info->dlpi_phdr[i].p_memsz;
        if (!main && !holder && !strstr(name, "Halide") &&
            !strstr(name, "LLVM"))
          return 0;
        std::string id = buildId(info);
        ids.missing |= id.empty();
        ids.all += std::string(name) + ":" + id + ";";
        return 0;
      },
      &ids);
  return ids.missing ? "" : hex(fnv1a(ids.all));
}

/// A kernel's entry: its file stem and the text its .key file holds.
struct Entry {
  std::string stem, key;
};

Entry entryOf(const std::string &dir, const KernelSpec &spec,
              const std::string &target) {
  std::string key = spec.signature() + "\n" + target + "\n";
  return {dir + "/" + spec.name() + "-" + hex(fnv1a(key)), key};
}

Entry runtimeEntry(const std::string &dir, const std::string &target) {
  std::string key = "halide runtime\n" + target + "\n";
  return {dir + "/halide_runtime-" + hex(fnv1a(key)), key};
}

/// Copies the object of entry `e` to `path` if its key matches; the key
/// names the object's size, so a truncated object is a miss.
bool fetchEntry(const Entry &e, const std::string &path) {
  std::ifstream f(e.stem + ".key", std::ios::binary);
  std::stringstream recorded;
  recorded << f.rdbuf();
  std::error_code ec;
  uintmax_t size = fs::file_size(e.stem + ".o", ec);
  if (ec || recorded.str() != e.key + std::to_string(size) + "\n")
    return false;
  return fs::copy_file(e.stem + ".o", path,
                       fs::copy_options::overwrite_existing, ec) &&
         !ec;
}

/// The object at `path` as entry `e`: the object first, then its key.
void storeEntry(const Entry &e, const std::string &path) {
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  std::string error;
  if (ec || !putFile(e.stem + ".o", nullptr, path, 0666, error))
    return;
  std::string key = e.key + std::to_string(size) + "\n";
  putFile(e.stem + ".key", &key, "", 0666, error);
}

} // namespace

KernelCache::KernelCache(bool enable) {
  std::string root = cacheDirectory();
  if (!enable) {
    off = "--no-cache";
    return;
  }
  if (root.empty()) {
    off = "neither ARCHC_CACHE nor HOME is set";
    return;
  }
  std::string id = toolchainId();
  if (id.empty()) {
    off = "archc, Halide or LLVM carries no ELF build id";
    return;
  }
  std::error_code ec;
  fs::path kernels = fs::path(root) / "kernels";
  fs::create_directories(kernels / id, ec);
  if (ec) {
    off = "cannot create " + (kernels / id).string() + ": " + ec.message();
    return;
  }
  dir = (kernels / id).string();
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(dir, now, ec);
  for (const fs::directory_entry &e : fs::directory_iterator(kernels, ec)) {
    std::error_code ignored;
    if (e.path().filename() != id && e.is_directory(ignored) &&
        now - e.last_write_time(ignored) > std::chrono::hours(24 * 14))
      fs::remove_all(e.path(), ignored);
  }
}

bool KernelCache::fetch(const KernelSpec &spec, const std::string &target,
                        const std::string &path) const {
  return enabled() && fetchEntry(entryOf(dir, spec, target), path);
}

void KernelCache::store(const KernelSpec &spec, const std::string &target,
                        const std::string &path) const {
  if (enabled())
    storeEntry(entryOf(dir, spec, target), path);
}

bool KernelCache::fetchRuntime(const std::string &target,
                               const std::string &path) const {
  return enabled() && fetchEntry(runtimeEntry(dir, target), path);
}

void KernelCache::storeRuntime(const std::string &target,
                               const std::string &path) const {
  if (enabled())
    storeEntry(runtimeEntry(dir, target), path);
}

KernelCache::Lock::Lock(const std::string &path)
    : fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
  // Waits while another build holds the entry, saying so after 10 s; one
  // that holds it for longer than $ARCHC_CACHE_LOCK_WAIT seconds (default
  // 300: a stopped or hung process) is given up on, and the kernel
  // compiled here without the lock (entries are renamed into place, so
  // two stores never mix).
  const char *env = getenv("ARCHC_CACHE_LOCK_WAIT");
  double limit = env && *env ? std::atof(env) : 300.0;
  auto start = std::chrono::steady_clock::now();
  bool told = false;
  while (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    bool busy = err == EWOULDBLOCK || err == EINTR;
    double waited = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (!busy || waited >= limit) {
      if (busy)
        fprintf(stderr,
                "archc: warning: gave up waiting for %s after %.0f s; "
                "compiling without it\n",
                path.c_str(), waited);
      close(fd);
      fd = -1;
      break;
    }
    if (!told && waited >= std::min(10.0, limit / 2)) {
      fprintf(stderr,
              "archc: waiting for %s (another build is compiling that "
              "kernel)\n",
              path.c_str());
      told = true;
    }
    usleep(20000);
  }
}

KernelCache::Lock::~Lock() {
  if (fd >= 0)
    close(fd); // releases the lock
}

KernelCache::Lock KernelCache::lock(const KernelSpec &spec,
                                    const std::string &target) const {
  return enabled() ? Lock(entryOf(dir, spec, target).stem + ".lock") : Lock();
}

KernelCache::Lock KernelCache::lockRuntime(const std::string &target) const {
  return enabled() ? Lock(runtimeEntry(dir, target).stem + ".lock") : Lock();
}

} // namespace arch
