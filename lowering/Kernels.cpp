//===- Kernels.cpp - Kernel names -----------------------------------------===//
#include "lowering/Kernels.h"

#include <cstdio>
#include <cstring>

namespace arch {

const char *kindName(KernelKind k) {
  switch (k) {
  case KernelKind::Embed: return "embed";
  case KernelKind::RMSNorm: return "rmsnorm";
  case KernelKind::LinearGemm: return "linear_gemm";
  case KernelKind::LinearGemv: return "linear_gemv";
  case KernelKind::Rope: return "rope";
  case KernelKind::Attention: return "attention";
  case KernelKind::GluSiLU: return "glu_silu";
  case KernelKind::Add: return "add";
  }
  return "unknown";
}

const char *cParameters(KernelKind k) {
  switch (k) {
  case KernelKind::Rope:
    return "halide_buffer_t *, int32_t, halide_buffer_t *";
  case KernelKind::Attention:
    return "halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, int32_t, "
           "halide_buffer_t *";
  default:
    return "halide_buffer_t *, halide_buffer_t *, halide_buffer_t *";
  }
}

std::string KernelSpec::name() const {
  std::string s = std::string("archk_") + kindName(kind);
  for (size_t i = 0; i < ints.size(); ++i)
    s += (i ? "x" : "_") + std::to_string(ints[i]);
  if (!reals.empty()) {
    // Reals do not make readable identifiers: add a hash of their bits.
    uint64_t h = 1469598103934665603ull;
    for (double r : reals) {
      uint64_t bits;
      std::memcpy(&bits, &r, sizeof bits);
      for (int b = 0; b < 8; ++b) {
        h ^= (bits >> (8 * b)) & 0xff;
        h *= 1099511628211ull;
      }
    }
    char buf[24];
    std::snprintf(buf, sizeof buf, "_%08x", unsigned(h ^ (h >> 32)));
    s += buf;
  }
  return s;
}

} // namespace arch
