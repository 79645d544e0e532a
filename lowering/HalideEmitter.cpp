//===- HalideEmitter.cpp - Compile kernels with Halide --------------------===//
#include "lowering/HalideEmitter.h"
#include "lowering/Algorithms.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace Halide;

namespace arch {

static Target parseTarget(const std::string &s) {
  if (s == "host")
    return get_host_target().without_feature(Target::AVX512_SapphireRapids);
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
