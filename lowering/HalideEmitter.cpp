//===- HalideEmitter.cpp - Compile kernels with Halide --------------------===//
#include "lowering/HalideEmitter.h"
#include "lowering/Algorithms.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

using namespace Halide;

namespace arch {

/// Whether this CPU has AVX512-FP16 (CPUID leaf 7, EDX bit 23), which
/// Halide 14's avx512_sapphirerapids makes LLVM assume.
static bool hostHasAvx512Fp16() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return (d >> 23) & 1;
#endif
  return false;
}

/// "host": the CPU's own features. Halide 14 detects avx512_sapphirerapids
/// from AVX512-BF16 and VNNI, and with it LLVM assumes AVX512-FP16 (and
/// AMX) too: kept where the CPU has AVX512-FP16 (a Sapphire Rapids Xeon),
/// dropped where it has not (a Zen 4 or 5: code using FP16 instructions
/// would die with SIGILL there).
static Target hostTarget() {
  Target t = get_host_target();
  if (!hostHasAvx512Fp16())
    t = t.without_feature(Target::AVX512_SapphireRapids);
  return t;
}

static Target parseTarget(const std::string &s) {
  if (s == "host")
    return hostTarget();
  if (!Target::validate_target_string(s))
    throw CompileError("unknown target '" + s +
                       "' (use 'host' or a Halide target string such as "
                       "x86-64-linux-avx2-fma-f16c-sse41)");
  return Target(s);
}

template <typename F> static bool guarded(std::string &error, F &&f) {
  try {
    f();
    return true;
  } catch (const Halide::Error &e) {
    error = e.what();
  } catch (const std::exception &e) {
    error = e.what();
  }
  return false;
}

bool resolveTarget(const std::string &target, std::string &canonical,
                   std::string &error, int *floatLanes) {
  return guarded(error, [&] {
    Target t = parseTarget(target);
    canonical = t.to_string();
    if (floatLanes)
      *floatLanes = t.natural_vector_size<float>();
  });
}

static KernelFuncs build(const KernelSpec &spec, const Target &t) {
  KernelFuncs k = lowerKernel(spec, t.natural_vector_size<float>());
  scheduleKernel(k, t);
  return k;
}

bool compileKernelObject(const KernelSpec &spec, const std::string &target,
                         const std::string &path, std::string &error) {
  return guarded(error, [&] {
    Target t = parseTarget(target).with_feature(Target::NoRuntime);
    KernelFuncs k = build(spec, t);
    k.out.compile_to_object(path, k.args, spec.name(), t);
  });
}

bool kernelLoweredStmt(const KernelSpec &spec, const std::string &target,
                       std::string &stmt, std::string &error) {
  return guarded(error, [&] {
    Target t = parseTarget(target).with_feature(Target::NoRuntime);
    KernelFuncs k = build(spec, t);
    char tmpl[] = "/tmp/archc-stmt-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
      throw CompileError("cannot create a temporary file");
    close(fd);
    k.out.compile_to_lowered_stmt(tmpl, k.args, StmtOutputFormat::Text, t);
    std::ifstream in(tmpl);
    std::stringstream ss;
    ss << in.rdbuf();
    stmt = ss.str();
    std::remove(tmpl);
  });
}

bool compileHalideRuntime(const std::string &target, const std::string &path,
                          std::string &error) {
  return guarded(error, [&] {
    compile_standalone_runtime(path, parseTarget(target));
  });
}

} // namespace arch
