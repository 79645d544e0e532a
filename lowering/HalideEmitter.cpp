//===- HalideEmitter.cpp - Compile kernels with Halide --------------------===//
#include "lowering/HalideEmitter.h"
#include "lowering/OutputFile.h"
#include "lowering/Algorithms.h"
#include "lowering/Ukernels.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
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

/// Whether this CPU has AVX512-BF16 (CPUID leaf 7, subleaf 1, EAX bit 5).
static bool hostHasAvx512Bf16() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
    return (a >> 5) & 1;
#endif
  return false;
}

/// Whether this machine runs AMX-BF16 code: the CPU has AMX-TILE and
/// AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22), the OS saves the tiles
/// (OSXSAVE, and XCR0's bits 17 and 18), and Linux grants this process
/// their state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): not
/// before Linux 5.16, nor under a seccomp filter that forbids it), as the
/// AMX ukernel asks at its first call (lowering/ukernels_amx.c).
/// (Asked once: Linux's answer holds for the process.)
static bool hostRunsAmx() {
  static const bool runs = [] {
#if defined(__x86_64__) && defined(__linux__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !((d >> 24) & 1) ||
        !((d >> 22) & 1))
      return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1))
      return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if (((lo >> 17) & 3) != 3)
      return false;
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                   18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return false;
#endif
  }();
  return runs;
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

/// `t` with the x86 features its own imply. Halide 14 documents each
/// AVX-512 level as including the one below it, but its code generator
/// takes only the features named: a bare `avx512_sapphirerapids` calls
/// bf16 intrinsics it never defines, a bare `avx512` half-float helpers,
/// and the library fails to link. AVX-512 implies AVX2, FMA and F16C
/// as in LLVM; the levels under it are left as given (they link alone,
/// and `avx2` without `f16c` is a target of its own).
static Target withImpliedX86Features(Target t) {
  if (t.arch != Target::X86)
    return t;
  using F = Target::Feature;
  static const std::pair<F, std::vector<F>> kImplies[] = {
      {Target::AVX512_SapphireRapids, {Target::AVX512_Cannonlake}},
      {Target::AVX512_Cannonlake, {Target::AVX512_Skylake}},
      {Target::AVX512_Skylake, {Target::AVX512}},
      {Target::AVX512_KNL, {Target::AVX512}},
      {Target::AVX512, {Target::AVX2, Target::AVX, Target::SSE41,
                        Target::FMA, Target::F16C}}};
  // (In order, from the top: each level's lower ones are then looked up
  // in turn.)
  for (const auto &[feature, lower] : kImplies)
    if (t.has_feature(feature))
      for (F f : lower)
        t = t.with_feature(f);
  return t;
}

static Target parseTarget(const std::string &s) {
  if (s == "host")
    return hostTarget();
  if (!Target::validate_target_string(s))
    throw CompileError("unknown target '" + s +
                       "' (use 'host' or a Halide target string such as "
                       "x86-64-linux-avx2-fma-f16c-sse41)");
  return withImpliedX86Features(Target(s));
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

/// Whether the kernels of a library for `t` have AMX tiles: x86-64 Linux
/// with avx512_sapphirerapids (the Xeons that have it all have AMX), which
/// for this CPU's own target (hostTarget() keeps it where the CPU has
/// AVX512-FP16) also asks whether this machine runs AMX code
/// (hostRunsAmx: a VM may hide AMX, a kernel refuse it). An explicit
/// target is taken as given: its library needs a machine with AMX (on a
/// Zen 4 or 5 its GEMMs fail, "extern stage failed").
static bool amxTiles(const Target &t) {
  if (t.arch != Target::X86 || t.bits != 64 || t.os != Target::Linux ||
      !t.has_feature(Target::AVX512_SapphireRapids))
    return false;
  Target plain = t.without_feature(Target::LargeBuffers)
                     .without_feature(Target::NoRuntime);
  return !(plain == hostTarget()) || hostRunsAmx();
}

bool bf16DotProductPays(const std::string &target) {
  std::string error;
  bool pays = false;
  guarded(error, [&] {
    Target t = parseTarget(target).without_feature(Target::LargeBuffers);
    // AVX512-BF16 without the rest of Sapphire Rapids (a Zen 4 or 5: its
    // vdpbf16ps at the FMA's rate), or AMX tiles (the GEMM's, with
    // vdpbf16ps for the GEMV).
    pays = (!t.has_feature(Target::AVX512_SapphireRapids) &&
            t.has_feature(Target::AVX512_Cannonlake) && t == hostTarget() &&
            hostHasAvx512Bf16()) ||
           amxTiles(t);
  });
  return pays;
}

/// The target kernel `spec` compiles for, given the library's. Halide 14
/// emits the bf16 dot product (`vdpbf16ps`) only with
/// avx512_sapphirerapids, which hostTarget() drops where the CPU lacks
/// AVX512-FP16: a kernel that takes it (a linear over pairs, attention
/// with bf16 tiles) gets it back when the library is for this CPU and the
/// CPU has AVX512-BF16, and so does a kernel that rounds its rows for
/// such linears (archk-bf16-inputs: `vcvtneps2bf16`, where Halide
/// otherwise rounds in integer ops).
static Target kernelTarget(const KernelSpec &spec, Target t) {
  const LinearKernel *l = spec.get<LinearKernel>();
  const AttentionKernel *at = spec.get<AttentionKernel>();
  const StoreType *rounding = spec.roundingStore();
  bool bf16Ops = (l && l->pairs) || (at && at->pairs) ||
                 (rounding && *rounding == StoreType::bf16);
  if (bf16Ops && t.has_feature(Target::AVX512_Cannonlake) &&
      !t.has_feature(Target::AVX512_SapphireRapids) &&
      t.without_feature(Target::LargeBuffers) == hostTarget() &&
      hostHasAvx512Bf16())
    t = t.with_feature(Target::AVX512_SapphireRapids);
  return t;
}

/// The L2 the GEMMs of a kernel for `t` are blocked for (kBlockOf):
/// $ARCHC_L2_BYTES where set (a cross-compile's, or a test's that must
/// not depend on the machine), else this CPU's where `t` is this CPU's
/// target (features the kernels add or drop aside), else kDefaultL2Bytes.
static int64_t l2BytesFor(const Target &t) {
  if (const char *env = getenv("ARCHC_L2_BYTES")) {
    char *end = nullptr;
    long long v = strtoll(env, &end, 10);
    if (end != env && !*end && v >= (64 << 10) && v <= (1ll << 30))
      return v;
  }
  auto plain = [](const Target &x) {
    return x.without_feature(Target::LargeBuffers)
        .without_feature(Target::NoRuntime)
        .without_feature(Target::AVX512_SapphireRapids);
  };
  if (!(plain(t) == plain(hostTarget())))
    return kDefaultL2Bytes;
  long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return v >= (256 << 10) && v <= (64 << 20) ? v : kDefaultL2Bytes;
}

std::string kernelTargetString(const KernelSpec &spec,
                               const std::string &target) {
  std::string s = target, error;
  guarded(error, [&] {
    Target t = parseTarget(target);
    Target own = kernelTarget(spec, t);
    s = own.to_string();
    // (On a CPU without AVX512-FP16, compileKernelObject builds an
    // avx512_sapphirerapids kernel again without it where LLVM used it:
    // another object than such a CPU's, for a cache two machines share.)
    if (own.has_feature(Target::AVX512_SapphireRapids) && !hostHasAvx512Fp16())
      s += " host-no-fp16";
    // (A packed linear's GEMM blocks by the L2, the bf16 pairs' too:
    // part of its identity.)
    const LinearKernel *l = spec.get<LinearKernel>();
    if (l && l->panel)
      s += " l2=" + std::to_string(l2BytesFor(t));
    // (So is AMX: the GEMM of amxGemm on the tiles, and a 16-bit GEMV's
    // prefetch, prefetchGemvRows.)
    if (l && l->panel && (l->pairs || l->weight != StoreType::f32) &&
        amxTiles(t))
      s += " amx";
  });
  return s;
}

/// Kernel `spec`'s algorithm and schedule for `t` (kernelTarget's), with
/// AMX tiles where `amx` (amxTiles of the library's target).
static KernelFuncs build(const KernelSpec &spec, const Target &t, bool amx) {
  KernelFuncs k = lowerKernel(spec, t, l2BytesFor(t), amx);
  scheduleKernel(k, t);
  return k;
}

/// Kernel `spec`'s algorithm and schedule in a library for `target`; `t`
/// gets the kernel's own target (kernelTarget's, without a runtime).
static KernelFuncs buildForLibrary(const KernelSpec &spec,
                                   const std::string &target, Target &t) {
  Target lib = parseTarget(target);
  t = kernelTarget(spec, lib).with_feature(Target::NoRuntime);
  return build(spec, t, amxTiles(lib));
}

/// Compiles kernel `k` to `outputs`, linking the ukernels' bitcode
/// (lowering/ukernels.ll) into its module where its schedule calls them.
static void compileKernel(KernelFuncs &k,
                          const std::map<OutputFileType, std::string> &outputs,
                          const std::string &name, const Target &t) {
  Module m = k.output().compile_to_module(k.args, name, t);
  if (k.ukernels)
    m.append(ExternalCode::bitcode_wrapper(
        t,
        std::vector<uint8_t>(kUkernelBitcode,
                             kUkernelBitcode + kUkernelBitcodeSize),
        "archc_ukernels"));
  if (k.callsAmx())
    m.append(ExternalCode::bitcode_wrapper(
        t, std::vector<uint8_t>(kAmxBitcode, kAmxBitcode + kAmxBitcodeSize),
        "archc_ukernels_amx"));
  m.compile(outputs);
}

/// Whether x86 assembly `path` has an AVX512-FP16 instruction: a mnemonic
/// on half-precision vectors or scalars (..ph, ..sh, ..phx, ..psx, vmovw),
/// F16C's vcvtps2ph / vcvtph2ps aside.
static bool usesAvx512Fp16(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] != 'v')
      continue;
    size_t e = line.find_first_of(" \t", b);
    std::string m = line.substr(b, e == std::string::npos ? e : e - b);
    auto ends = [&](const char *suffix) {
      size_t n = std::strlen(suffix);
      return m.size() > n && m.compare(m.size() - n, n, suffix) == 0;
    };
    if (m == "vcvtps2ph" || m == "vcvtph2ps")
      continue;
    if (m == "vmovw" || ends("ph") || ends("sh") || ends("phx") ||
        ends("psx"))
      return true;
  }
  return false;
}

bool compileKernelObject(const KernelSpec &spec, const std::string &target,
                         const std::string &path, std::string &error) {
  return guarded(error, [&] {
    Target t;
    KernelFuncs k = buildForLibrary(spec, target, t);
    // (A kernel on AMX tiles, for an explicit target on a CPU without
    // AVX512-FP16, is for another machine: no need to run here.)
    if (!t.has_feature(Target::AVX512_SapphireRapids) ||
        hostHasAvx512Fp16() || k.callsAmx())
      return compileKernel(k, {{OutputFileType::object, path}}, spec.name(),
                           t);
    // LLVM may use AVX512-FP16 with it, which this CPU lacks (vmovw for a
    // gather of 16-bit elements): such a kernel is built again without.
    std::string s = path + ".s";
    compileKernel(
        k, {{OutputFileType::object, path}, {OutputFileType::assembly, s}},
        spec.name(), t);
    bool fp16 = usesAvx512Fp16(s);
    std::remove(s.c_str());
    if (!fp16)
      return;
    t = t.without_feature(Target::AVX512_SapphireRapids);
    KernelFuncs plain = build(spec, t, false);
    compileKernel(plain, {{OutputFileType::object, path}}, spec.name(), t);
  });
}

bool kernelLoweredStmt(const KernelSpec &spec, const std::string &target,
                       std::string &stmt, std::string &error) {
  return guarded(error, [&] {
    Target t;
    KernelFuncs k = buildForLibrary(spec, target, t);
    std::string tmpl = tempTemplate("archc-stmt");
    std::unique_ptr<TempOnSignal> guard;
    int fd = makeTempFile(tmpl, &guard);
    if (fd < 0)
      throw CompileError("cannot create a temporary file " + tmpl);
    close(fd);
    k.output().compile_to_lowered_stmt(tmpl, k.args, StmtOutputFormat::Text,
                                       t);
    std::ifstream in(tmpl);
    std::stringstream ss;
    ss << in.rdbuf();
    stmt = ss.str();
    std::remove(tmpl.c_str());
  });
}

bool compileHalideRuntime(const std::string &target, const std::string &path,
                          std::string &error) {
  return guarded(error, [&] {
    compile_standalone_runtime(path, parseTarget(target));
  });
}

} // namespace arch
