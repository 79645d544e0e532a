//===- Kernels.cpp - Kernel names and argument lists ----------------------===//
#include "lowering/Kernels.h"

#include <cstdio>
#include <cstring>

namespace arch {
namespace {

/// The kind's name and its static values, as the kernel name spells them.
struct Key {
  const char *kind = "";
  std::vector<int64_t> ints;
  std::vector<double> reals;

  void operator()(const EmbedKernel &k) {
    kind = "embed", ints = {k.vocab, k.dModel}, reals = {k.scale};
  }
  void operator()(const NormKernel &k) {
    kind = "norm";
    ints = {k.width, int64_t(k.kind), k.bias, k.weightPerGroup ? k.groups : 0,
            k.groups};
    reals = {k.eps, k.weightOffset};
  }
  void operator()(const LinearKernel &k) {
    kind = "linear", ints = {k.K, k.N, k.bias, k.panel, k.oneRow};
  }
  void operator()(const PackKernel &k) {
    kind = "pack", ints = {k.K, k.N, k.panel};
  }
  void operator()(const RopeKernel &k) {
    kind = "rope";
    ints = {k.heads,           k.headDim,          k.rotaryDim,
            int64_t(k.style),  int64_t(k.scaling), k.originalMaxSeqLen};
    reals = {k.theta,          k.factor,   k.lowFreqFactor,
             k.highFreqFactor, k.betaFast, k.betaSlow};
  }
  void operator()(const AttentionKernel &k) {
    kind = "attention";
    ints = {k.heads,     k.kvHeads,       k.headDim,      k.alibi,
            k.window,    k.t5Buckets,     k.t5MaxDistance, k.shawClip};
    reals = {k.scale, k.softcap};
  }
  void operator()(const PosEmbedKernel &k) {
    kind = "pos_embed", ints = {k.dModel, int64_t(k.kind), k.offset, k.rows};
  }
  void operator()(const ElementwiseKernel &k) {
    ints = {k.width};
    switch (k.op) {
    case ElementwiseKernel::Add: kind = "add"; break;
    case ElementwiseKernel::Copy: kind = "copy"; break;
    case ElementwiseKernel::Glu:
    case ElementwiseKernel::Activate:
      kind = k.op == ElementwiseKernel::Glu ? "glu" : "activation";
      ints.push_back(int64_t(k.activation));
      break;
    case ElementwiseKernel::Scale:
    case ElementwiseKernel::Softcap:
      kind = k.op == ElementwiseKernel::Scale ? "scale" : "softcap";
      reals = {k.factor};
      break;
    }
  }
};

/// The argument list of each kind.
struct Args {
  std::vector<KernelArg> a;
  void in(const char *name, int rank) { a.push_back({KernelArg::Input, name, rank}); }
  void pos() { a.push_back({KernelArg::Position, "pos", 0}); }
  void out(int rank) { a.push_back({KernelArg::Output, "out", rank}); }

  void operator()(const EmbedKernel &) {
    a.push_back({KernelArg::Tokens, "tokens", 1});
    in("table", 2), out(2);
  }
  void operator()(const NormKernel &k) {
    in("x", 3), in("weight", k.weightPerGroup ? 2 : 1);
    if (k.bias)
      in("bias", k.weightPerGroup ? 2 : 1);
    out(3);
  }
  void operator()(const LinearKernel &k) {
    in("x", 2), in("weight", k.panel ? 3 : 2);
    if (k.bias)
      in("bias", 1);
    out(2);
  }
  void operator()(const PackKernel &) { in("weight", 2), out(3); }
  void operator()(const RopeKernel &) { in("x", 3), pos(), out(3); }
  void operator()(const AttentionKernel &k) {
    in("q", 3), in("k", 3), in("v", 3);
    if (k.t5Buckets)
      in("rel_bias", 2);
    if (k.shawClip)
      in("rel_key", 2), in("rel_value", 2);
    pos(), out(3);
  }
  void operator()(const PosEmbedKernel &k) {
    in("x", 2);
    if (k.kind == PosEmbedKind::learned)
      in("table", 2);
    pos(), out(2);
  }
  void operator()(const ElementwiseKernel &k) {
    in("a", 2);
    if (k.op == ElementwiseKernel::Add || k.op == ElementwiseKernel::Glu)
      in("b", 2);
    out(2);
  }
};

} // namespace

const char *KernelSpec::kindName() const {
  Key key;
  std::visit(key, desc);
  return key.kind;
}

bool KernelSpec::operator==(const KernelSpec &o) const {
  Key a, b;
  std::visit(a, desc);
  std::visit(b, o.desc);
  return std::strcmp(a.kind, b.kind) == 0 && a.ints == b.ints &&
         a.reals == b.reals;
}

std::vector<KernelArg> KernelSpec::args() const {
  Args args;
  std::visit(args, desc);
  return args.a;
}

std::string KernelSpec::cPrototype() const {
  std::string s = "int " + name() + "(";
  bool first = true;
  for (const KernelArg &a : args()) {
    s += first ? "" : ", ";
    s += a.kind == KernelArg::Position ? "int32_t" : "halide_buffer_t *";
    first = false;
  }
  return s + ");";
}

std::string KernelSpec::name() const {
  Key key;
  std::visit(key, desc);
  std::string s = std::string("archk_") + key.kind;
  for (size_t i = 0; i < key.ints.size(); ++i)
    s += (i ? "x" : "_") + std::to_string(key.ints[i]);
  if (!key.reals.empty()) {
    // Reals do not make readable identifiers: add a hash of their bits.
    uint64_t h = 1469598103934665603ull;
    for (double r : key.reals) {
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
