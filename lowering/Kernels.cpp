//===- Kernels.cpp - Kernel names -----------------------------------------===//
#include "lowering/Kernels.h"

#include <cstdio>
#include <cstring>

namespace arch {

const char *kindName(KernelKind k) {
  switch (k) {
  case KernelKind::Embed: return "embed";
  case KernelKind::Norm: return "norm";
  case KernelKind::LinearGemm: return "linear_gemm";
  case KernelKind::LinearGemv: return "linear_gemv";
  case KernelKind::Pack: return "pack";
  case KernelKind::Rope: return "rope";
  case KernelKind::Attention: return "attention";
  case KernelKind::Activation: return "activation";
  case KernelKind::Glu: return "glu";
  case KernelKind::PosEmbed: return "pos_embed";
  case KernelKind::Softcap: return "softcap";
  case KernelKind::Scale: return "scale";
  case KernelKind::Add: return "add";
  case KernelKind::Copy: return "copy";
  }
  return "unknown";
}

std::string cParameters(const KernelSpec &k) {
  // Buffers before the position argument, then buffers after it.
  int before = 0, after = 0;
  bool pos = false;
  switch (k.kind) {
  case KernelKind::Rope: before = 1, pos = true, after = 1; break;
  case KernelKind::Attention:
    before = 3 + int(k.ints[5] > 0) + 2 * int(k.ints[7] > 0), pos = true,
    after = 1;
    break;
  case KernelKind::PosEmbed:
    before = k.ints[1] == 0 ? 2 : 1, pos = true, after = 1;
    break;
  case KernelKind::Activation:
  case KernelKind::Softcap:
  case KernelKind::Scale:
  case KernelKind::Copy:
  case KernelKind::Pack: before = 2; break;
  case KernelKind::LinearGemm:
  case KernelKind::LinearGemv:
  case KernelKind::Norm: before = 3 + int(k.ints[2] != 0); break;
  default: before = 3; break;
  }
  std::string s;
  auto add = [&](const char *t) { s += (s.empty() ? "" : ", ") + std::string(t); };
  for (int i = 0; i < before; ++i)
    add("halide_buffer_t *");
  if (pos)
    add("int32_t");
  for (int i = 0; i < after; ++i)
    add("halide_buffer_t *");
  return s;
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
