//===- Kernels.cpp - Kernel names and argument lists ----------------------===//
#include "arch/Kernel/Kernels.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

namespace arch {
namespace {

/// The kind's name: the kernel name's stem and archk.call's `kind`.
struct KindName {
  const char *operator()(const EmbedKernel &) { return "embed"; }
  const char *operator()(const NormKernel &) { return "norm"; }
  const char *operator()(const LinearKernel &) { return "linear"; }
  const char *operator()(const PackKernel &) { return "pack"; }
  const char *operator()(const RopeKernel &) { return "rope"; }
  const char *operator()(const AttentionKernel &) { return "attention"; }
  const char *operator()(const PosEmbedKernel &) { return "pos_embed"; }
  const char *operator()(const AppendKernel &) { return "append"; }
  const char *operator()(const RouteKernel &) { return "route"; }
  const char *operator()(const RouteWeightsKernel &) { return "route_weights"; }
  const char *operator()(const GatherKernel &) { return "gather"; }
  const char *operator()(const CombineKernel &) { return "combine"; }
  const char *operator()(const HeadsCopyKernel &) { return "heads_copy"; }
  const char *operator()(const HeadLinearKernel &) { return "head_linear"; }
  const char *operator()(const DifferentialKernel &) { return "differential"; }
  const char *operator()(const LinearAttentionKernel &) {
    return "linear_attention";
  }
  const char *operator()(const LinearStateKernel &) { return "linear_state"; }
  const char *operator()(const ElementwiseKernel &k) {
    static const char *const names[] = {"add",   "glu",     "activation",
                                        "scale", "softcap", "copy"};
    return names[k.op];
  }
};

/// The static values as the kernel name spells them: integers, booleans
/// and enums in order (a tagged optional field's tag before it), reals
/// apart.
struct Key {
  std::vector<int64_t> ints;
  std::vector<double> reals;
  void tag(int64_t t) { ints.push_back(t); }
  void operator()(const char *, int64_t v) { ints.push_back(v); }
  void operator()(const char *, bool v) { ints.push_back(v); }
  void operator()(const char *, double v) { reals.push_back(v); }
  void operator()(const char *, const std::vector<int64_t> &v) {
    ints.push_back(int64_t(v.size()));
    ints.insert(ints.end(), v.begin(), v.end());
  }
  // (Among the reals, hashed; their count follows from the ints once
  // kernelSpec has checked them: RoPE's factors are longrope's, one per
  // rotated pair. The cache's key, signature(), spells each.)
  void operator()(const char *, const std::vector<double> &v) {
    reals.insert(reals.end(), v.begin(), v.end());
  }
  template <class E> void operator()(const char *, E v) {
    static_assert(std::is_enum_v<E>, "a kernel field of another type");
    ints.push_back(int64_t(v));
  }
};

/// Each static value as " name=value", reals exactly (in hexadecimal).
struct Spelling {
  std::string s;
  void operator()(const char *n, int64_t v) {
    s += std::string(" ") + n + "=" + std::to_string(v);
  }
  void operator()(const char *n, bool v) { (*this)(n, int64_t(v)); }
  void operator()(const char *n, double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%a", v);
    s += std::string(" ") + n + "=" + buf;
  }
  void operator()(const char *n, const std::vector<int64_t> &v) {
    s += std::string(" ") + n + "=[";
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? "," : "") + std::to_string(v[i]);
    s += "]";
  }
  void operator()(const char *n, const std::vector<double> &v) {
    s += std::string(" ") + n + "=[";
    char buf[40];
    for (size_t i = 0; i < v.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%a", v[i]);
      s += (i ? "," : "") + std::string(buf);
    }
    s += "]";
  }
  template <class E> void operator()(const char *n, E v) {
    static_assert(std::is_enum_v<E>, "a kernel field of another type");
    (*this)(n, int64_t(v));
  }
};

Key keyOf(KernelSpec k) {
  Key key;
  k.forEachField(key);
  return key;
}

/// The argument list of each kind.
struct Args {
  std::vector<KernelArg> a;
  void in(const char *name, int rank, StoreType elem = StoreType::f32) {
    a.push_back({KernelArg::Input, name, rank, elem});
  }
  void pos() { a.push_back({KernelArg::Position, "pos", 0}); }
  void out(int rank, StoreType elem = StoreType::f32) {
    a.push_back({KernelArg::Output, "out", rank, elem});
  }

  void operator()(const EmbedKernel &) {
    a.push_back({KernelArg::Tokens, "tokens", 1});
    in("table", 2), out(2);
  }
  void operator()(const NormKernel &k) {
    in("x", 3), in("weight", k.weightPerGroup ? 2 : 1);
    if (k.bias)
      in("bias", k.weightPerGroup ? 2 : 1);
    out(3, k.store);
  }
  void operator()(const LinearKernel &k) {
    in("x", 2, k.input), in("weight", k.panel ? 3 : 2, k.weight);
    if (k.bias)
      in("bias", 1);
    if (k.residual)
      in("residual", 2);
    if (k.rope.heads) // ([T, N / head_dim, head_dim])
      pos(), out(3, k.store);
    else
      out(2, k.store);
  }
  void operator()(const PackKernel &k) { in("weight", 2), out(3, k.store); }
  void operator()(const RopeKernel &) { in("x", 3), pos(), out(3); }
  void operator()(const AttentionKernel &k) {
    in("q", 3), in("k", 3, k.kv), in("v", 3, k.kv);
    if (k.t5Buckets)
      in("rel_bias", 2);
    if (k.shawClip)
      in("rel_key", 2), in("rel_value", 2);
    pos(), out(3, k.store);
  }
  void operator()(const PosEmbedKernel &k) {
    in("x", 2);
    if (k.kind == PosEmbedKind::learned)
      in("table", 2);
    pos(), out(2);
  }
  void operator()(const AppendKernel &k) { in("rows", 3), out(3, k.store); }
  void operator()(const RouteKernel &k) {
    in("logits", 2);
    if (k.bias)
      in("bias", 1);
    out(2, StoreType::i32);
  }
  void operator()(const RouteWeightsKernel &) {
    in("logits", 2), in("experts", 2, StoreType::i32), out(2);
  }
  void operator()(const GatherKernel &k) {
    in("x", 2), in("rows", 1, StoreType::i32), out(2, k.store);
  }
  void operator()(const CombineKernel &) {
    in("y", 2), in("slots", 2, StoreType::i32), in("weights", 2), out(2);
  }
  void operator()(const HeadsCopyKernel &) { in("x", 3), out(3); }
  void operator()(const HeadLinearKernel &) {
    in("x", 3), in("weight", 2), out(3);
  }
  void operator()(const DifferentialKernel &) {
    in("a", 2), in("b", 2);
    for (const char *l : DifferentialKernel::lambdas)
      in(l, 1);
    out(2);
  }
  void operator()(const LinearAttentionKernel &) {
    in("q", 3), in("k", 3), in("v", 3), in("state", 3), out(3);
  }
  void operator()(const LinearStateKernel &) {
    in("k", 3), in("v", 3), in("state", 3), out(3);
  }
  void operator()(const ElementwiseKernel &k) {
    in("a", 2);
    if (k.op == ElementwiseKernel::Add || k.op == ElementwiseKernel::Glu)
      in("b", 2);
    out(2, k.store);
  }
};

} // namespace

const char *KernelSpec::kindName() const {
  return std::visit(KindName(), desc);
}

std::optional<KernelSpec> KernelSpec::ofKind(std::string_view kind) {
  using EW = ElementwiseKernel;
  static const KernelSpec all[] = {
      EmbedKernel{},           NormKernel{},
      LinearKernel{},          PackKernel{},
      RopeKernel{},            AttentionKernel{},
      PosEmbedKernel{},        EW{EW::Add, 0},
      EW{EW::Glu, 0},          EW{EW::Activate, 0},
      EW{EW::Scale, 0},        EW{EW::Softcap, 0},
      EW{EW::Copy, 0},         AppendKernel{},
      RouteKernel{},           RouteWeightsKernel{},
      GatherKernel{},          CombineKernel{},
      HeadsCopyKernel{},       HeadLinearKernel{},
      DifferentialKernel{},    LinearAttentionKernel{},
      LinearStateKernel{}};
  for (const KernelSpec &k : all)
    if (kind == k.kindName())
      return k;
  return std::nullopt;
}

StoreType *KernelSpec::roundingStore() {
  return std::visit(
      [](auto &k) -> StoreType * {
        using T = std::decay_t<decltype(k)>;
        if constexpr (std::is_same_v<T, NormKernel> ||
                      std::is_same_v<T, AttentionKernel> ||
                      std::is_same_v<T, GatherKernel>)
          return &k.store;
        else if constexpr (std::is_same_v<T, ElementwiseKernel>)
          return k.op == ElementwiseKernel::Glu ||
                         k.op == ElementwiseKernel::Activate
                     ? &k.store
                     : nullptr;
        else if constexpr (std::is_same_v<T, LinearKernel>)
          return k.glu && k.panel ? &k.store : nullptr;
        else
          return nullptr;
      },
      desc);
}

const RopeKernel *KernelSpec::rotation() const {
  if (const LinearKernel *l = get<LinearKernel>())
    return l->rope.heads ? &l->rope : nullptr;
  return get<RopeKernel>();
}

bool KernelSpec::operator==(const KernelSpec &o) const {
  if (std::strcmp(kindName(), o.kindName()) != 0)
    return false;
  Key a = keyOf(*this), b = keyOf(o);
  return a.ints == b.ints && a.reals == b.reals;
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
  Key key = keyOf(*this);
  std::string s = std::string("archk_") + kindName();
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

std::string KernelSpec::signature() const {
  Spelling spell{kindName()};
  KernelSpec copy = *this;
  copy.forEachField(spell);
  return spell.s;
}

} // namespace arch
