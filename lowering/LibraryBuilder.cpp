//===- LibraryBuilder.cpp - Kernels + glue + runtime -> .so ---------------===//
#include "lowering/LibraryBuilder.h"
#include "lowering/BuildCache.h"
#include "lowering/HalideEmitter.h"
#include "lowering/OutputFile.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace arch {
namespace fs = std::filesystem;

namespace {

/// Runs argv, its temporaries under `tmpDir`; on failure returns false with
/// the command's output in `error`.
bool run(const std::vector<std::string> &argv, const std::string &logPath,
         const std::string &tmpDir, std::string &error) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  // The child's temporaries (gcc's ccXXXXXX.s) go into the build
  // directory, which a signal removes with them (lowering/OutputFile.h).
  std::string tmpVar = "TMPDIR=" + tmpDir;
  std::vector<char *> env;
  for (char **e = environ; *e; ++e)
    if (strncmp(*e, "TMPDIR=", 7))
      env.push_back(*e);
  env.push_back(tmpVar.data());
  env.push_back(nullptr);
  // A signal that arrives while the child starts waits until the signal
  // handlers know it: held on this thread, and waited for by a handler on
  // another (-1: starting). The child leads a process group of its own
  // (the handlers end the group) and gets the mask as it was.
  holdSignals();
  setChildOnSignal(-1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &maskBeforeHold());
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(),
                        env.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  setChildOnSignal(rc == 0 ? pid : 0);
  releaseSignals();
  if (rc != 0) {
    error = "cannot run '" + argv[0] + "': " + std::strerror(rc);
    return false;
  }
  // Waited for without reaping, then reaped with the signals held: a
  // handler never kills a pid that was reaped (and may be reused).
  siginfo_t info;
  int waitedFor;
  while ((waitedFor = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)) < 0 &&
         errno == EINTR)
    ;
  int waitErr = errno;
  holdSignals();
  setChildOnSignal(0);
  int status = 0;
  pid_t waited;
  while ((waited = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
    ;
  if (waited < 0 && waitedFor == 0)
    waitErr = errno;
  releaseSignals();
  // A handler on another thread killed the child and is ending archc.
  parkIfSignalled();
  if (waited < 0) {
    error = "cannot wait for '" + argv[0] + "': " + std::strerror(waitErr);
    return false;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return true;
  std::ifstream log(logPath);
  std::stringstream ss;
  ss << log.rdbuf();
  std::string cmd;
  for (const std::string &a : argv)
    cmd += (cmd.empty() ? "" : " ") + a;
  error = "command failed: " + cmd + "\n" + ss.str();
  return false;
}

class TempDir {
public:
  TempDir() {
    std::string tmpl = tempTemplate("archc-build");
    // Kept from the signal handlers where ARCHC_KEEP_TEMPS keeps it.
    if (makeTempDir(tmpl, getenv("ARCHC_KEEP_TEMPS") ? nullptr : &guard))
      path = tmpl;
  }
  ~TempDir() {
    if (!path.empty() && getenv("ARCHC_KEEP_TEMPS")) {
      // Kernel objects, the Halide runtime and glue.c, for a debugger or
      // for scripts/fuzz.sh (which links them with a sanitized runtime).
      fprintf(stderr, "archc: kept build files in %s\n", path.c_str());
    } else if (!path.empty()) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
  std::string path;
  std::unique_ptr<TempOnSignal> guard;
};

/// `rel`, a path the build gives relative to archc's own directory (bin/),
/// made absolute; "" with `error` naming `what` where archc's path cannot be
/// read or the file is missing. archc names no path of its checkout, so
/// that two clones of a commit build the same archc (lowering/CMakeLists.txt).
std::string besideArchc(const char *rel, const char *what,
                        std::string &error) {
  static const fs::path dir = [] {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::path() : exe.parent_path();
  }();
  if (dir.empty()) {
    error = "cannot read archc's own path from /proc/self/exe, which "
            "locates " + std::string(what);
    return "";
  }
  fs::path path = (dir / rel).lexically_normal();
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    error = "missing " + std::string(what) + ": " + path.string() +
            " (archc runs from its build tree, where the build put it)";
    return "";
  }
  return path.string();
}

/// The glue's C compiler: clang-19 where it is on PATH, which compiles a
/// large model's straight-line glue at -O0 about twice as fast as gcc
/// (DeepSeek-V3's 6 MB: 2.5 s against 5.3; Llama 2 7B's 0.37 s against
/// 0.68; a tiny spec's the same), else cc; cc always under --sanitize,
/// whose flags and ASan runtime are gcc's, as archrt_san's.
/// docs/design.md "The glue's compiler".
std::string glueCompiler(bool sanitize) {
  if (sanitize)
    return "cc";
  const char *path = getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string exe = (dir.empty() ? "." : dir) + "/clang-19";
    struct stat st;
    if (stat(exe.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(exe.c_str(), X_OK) == 0)
      return "clang-19";
  }
  return "cc";
}

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       since)
      .count();
}

} // namespace

bool buildLibrary(const LoweredModel &model, const BuildOptions &opts,
                  const std::string &outPath, std::string &error,
                  BuildStats *stats) {
  BuildStats local;
  BuildStats &st = stats ? *stats : local;
  TempDir tmp;
  if (tmp.path.empty()) {
    error = "cannot create a temporary build directory";
    return false;
  }
  std::string target;
  if (!resolveTarget(opts.target, target, error))
    return false;
  // What the glue compiles against and the library links, found before
  // any kernel is compiled.
  std::string include = besideArchc(
      ARCHC_RUNTIME_INCLUDE, "the runtime's headers (the glue includes them)",
      error);
  std::string runtime = include.empty() ? "" : besideArchc(
      opts.sanitize ? ARCHC_RUNTIME_SAN_LIBRARY : ARCHC_RUNTIME_LIBRARY,
      "the runtime archive (a library links it)", error);
  if (runtime.empty())
    return false;
  if (model.largeBuffers)
    target += "-large_buffers";

  std::vector<std::string> objects;
  auto t0 = std::chrono::steady_clock::now();
  KernelCache cache(opts.kernelCache);
  st.cache = cache.enabled() ? cache.directory() : "off: " + cache.offReason();
  for (size_t i = 0; i < model.kernels.size(); ++i) {
    const KernelSpec &k = model.kernels[i];
    std::string obj = tmp.path + "/" + k.name() + ".o";
    // (Keyed by the kernel's own target: it may add the bf16 dot product.)
    std::string own = kernelTargetString(k, target);
    bool cached = cache.fetch(k, own, obj);
    if (!cached) {
      // Another build may be compiling it: wait for it, then look again.
      KernelCache::Lock held = cache.lock(k, own);
      cached = cache.fetch(k, own, obj);
      if (!cached && !compileKernelObject(k, target, obj, error)) {
        error = "kernel " + k.name() + ": " + error;
        return false;
      }
      if (!cached)
        cache.store(k, own, obj);
    }
    st.cachedKernels += cached;
    objects.push_back(obj);
    if (opts.progress)
      opts.progress(i + 1, model.kernels.size());
  }
  st.kernels = model.kernels.size();
  st.kernelSeconds = seconds(t0);

  t0 = std::chrono::steady_clock::now();
  // One standalone runtime per library; it takes longer to compile than a
  // tiny model's kernels.
  std::string rt = tmp.path + "/halide_runtime.o";
  if (!cache.fetchRuntime(target, rt)) {
    KernelCache::Lock held = cache.lockRuntime(target);
    if (!cache.fetchRuntime(target, rt)) {
      if (!compileHalideRuntime(target, rt, error)) {
        error = "Halide runtime: " + error;
        return false;
      }
      cache.storeRuntime(target, rt);
    }
  }
  objects.push_back(rt);
  st.runtimeSeconds = seconds(t0);

  t0 = std::chrono::steady_clock::now();
  std::string glueC = tmp.path + "/glue.c", glueO = tmp.path + "/glue.o";
  {
    std::ofstream f(glueC);
    f << model.glue;
    if (!f) {
      error = "cannot write " + glueC;
      return false;
    }
  }
  std::string log = tmp.path + "/cc.log";
  // The flags archrt_san was built with (CMake joins them with spaces).
  std::vector<std::string> sanitize;
  if (opts.sanitize) {
    std::stringstream flags(ARCHC_SANITIZE_FLAGS);
    for (std::string f; flags >> f;)
      sanitize.push_back(f);
  }
  // The glue only fills buffer descriptors and calls kernels: -O0 decodes
  // as fast as -O2 (tiny/transformer, 34 us a token, and stories15M, within
  // the noise) and compiles 4x faster (gemma2-9b's glue 1.1 s against 4.3;
  // under ASan a tiny spec's 0.6 s against 5.9). docs/design.md.
  st.glueCompiler = glueCompiler(opts.sanitize);
  std::vector<std::string> cc = {st.glueCompiler, "-std=c11", "-O0",
                                 "-fPIC", "-c", glueC, "-o", glueO,
                                 "-I" + include, "-I" ARCHC_HALIDE_INCLUDE};
  cc.insert(cc.end(), sanitize.begin(), sanitize.end());
  if (!run(cc, log, tmp.path, error))
    return false;
  objects.insert(objects.begin(), glueO);

  std::string staged = tmp.path + "/out";
  std::vector<std::string> link = {"cc"};
  if (opts.relocatable) {
    link.insert(link.end(), {"-r", "-nostdlib", "-o", staged});
    link.insert(link.end(), objects.begin(), objects.end());
    link.insert(link.end(), {"-Wl,--whole-archive", runtime,
                             "-Wl,--no-whole-archive"});
  } else {
    link.insert(link.end(), {"-shared", "-o", staged});
    link.insert(link.end(), objects.begin(), objects.end());
    link.insert(link.end(), sanitize.begin(), sanitize.end());
    link.insert(link.end(), {"-Wl,--whole-archive", runtime,
                             "-Wl,--no-whole-archive", "-lm", "-lpthread",
                             "-ldl", "-Wl,-z,defs"});
  }
  if (!run(link, log, tmp.path, error))
    return false;
  st.linkSeconds = seconds(t0);

  // Into place whole (a temporary beside it, renamed; a device written).
  return putFile(outPath, nullptr, staged, opts.relocatable ? 0666 : 0777,
                 error);
}

} // namespace arch
