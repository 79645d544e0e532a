//===- ArchK.cpp - The kernel-call level ----------------------------------===//
#include "arch/Kernel/ArchK.h"
#include "arch/Dialect/ArchDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;

#include "arch/Kernel/ArchKDialect.cpp.inc"

namespace arch {
namespace archk {

void ArchKDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "arch/Kernel/ArchKOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Descriptions as attributes
//===----------------------------------------------------------------------===//

namespace {
/// Writes each field into a named attribute.
struct FieldWriter {
  Builder b;
  SmallVector<NamedAttribute> attrs;
  void add(const char *name, Attribute a) { attrs.push_back(b.getNamedAttr(name, a)); }
  void operator()(const char *name, int64_t v) { add(name, b.getI64IntegerAttr(v)); }
  void operator()(const char *name, bool v) { add(name, b.getBoolAttr(v)); }
  void operator()(const char *name, double v) { add(name, b.getF64FloatAttr(v)); }
  void operator()(const char *name, const std::vector<int64_t> &v) {
    add(name, b.getDenseI64ArrayAttr(v));
  }
  void operator()(const char *name, const std::vector<double> &v) {
    add(name, b.getDenseF64ArrayAttr(v));
  }
  template <class E> void operator()(const char *name, E v) {
    add(name, b.getStringAttr(stringifyEnum(v)));
  }
};

/// Reads each field from the dictionary; the first problem is kept.
struct FieldReader {
  DictionaryAttr dict;
  std::string error;
  unsigned found = 0;
  void fail(std::string message) {
    if (error.empty())
      error = std::move(message);
  }
  bool has(const char *name) const { return bool(dict.get(name)); }
  template <class A> A get(const char *name, const char *what) {
    Attribute a = dict.get(name);
    if (!a) {
      fail(std::string("lacks '") + name + "'");
      return {};
    }
    ++found;
    auto typed = dyn_cast<A>(a);
    if (!typed)
      fail(std::string("has '") + name + "' that is not " + what);
    return typed;
  }
  void operator()(const char *name, int64_t &v) {
    auto a = get<IntegerAttr>(name, "an integer");
    if (a && a.getType().isSignlessInteger(64))
      v = a.getInt();
    else if (a)
      fail(std::string("has '") + name + "' that is not an i64");
  }
  void operator()(const char *name, bool &v) {
    if (auto a = get<BoolAttr>(name, "a boolean"))
      v = a.getValue();
  }
  void operator()(const char *name, double &v) {
    if (auto a = get<FloatAttr>(name, "a real"))
      v = a.getValueAsDouble();
  }
  void operator()(const char *name, std::vector<int64_t> &v) {
    if (auto a = get<DenseI64ArrayAttr>(name, "an array of i64"))
      v.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  }
  void operator()(const char *name, std::vector<double> &v) {
    if (auto a = get<DenseF64ArrayAttr>(name, "an array of f64"))
      v.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  }
  template <class E> void operator()(const char *name, E &v) {
    auto a = get<StringAttr>(name, "a string");
    if (!a)
      return;
    if (std::optional<E> e = symbolizeEnum<E>(a.getValue()))
      v = *e;
    else
      fail(std::string("has '") + name + "' = \"" + a.getValue().str() +
           "\", which is none of its values");
  }
};
} // namespace

bool isReshape(Operation *op) {
  return isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(
      op);
}

bool denseRows(MemRefType t) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return t.getRank() == 2 &&
         succeeded(getStridesAndOffset(t, strides, offset)) &&
         strides[0] == t.getDimSize(1) && strides[1] == 1;
}

Type storeElementType(MLIRContext *ctx, StoreType t) {
  Builder b(ctx);
  switch (t) {
  case StoreType::f16: return b.getF16Type();
  case StoreType::bf16: return b.getBF16Type();
  case StoreType::i32: return b.getI32Type();
  case StoreType::f32: break;
  }
  return b.getF32Type();
}

std::optional<StoreType> storeTypeOf(Type t) {
  if (t.isF32())
    return StoreType::f32;
  if (t.isF16())
    return StoreType::f16;
  if (t.isBF16())
    return StoreType::bf16;
  if (t.isSignlessInteger(32))
    return StoreType::i32;
  return std::nullopt;
}

bool isBufferView(Operation *op) {
  return isa<memref::SubViewOp>(op) || isReshape(op);
}

Value rootOf(Value v, bool (*through)(Operation *)) {
  while (Operation *def = v.getDefiningOp()) {
    if (!through(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

SmallVector<Value> viewsOf(Value buffer) {
  SmallVector<Value> views{buffer};
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *u : views[i].getUsers())
      if (isBufferView(u))
        views.push_back(u->getResult(0));
  return views;
}

DictionaryAttr kernelAttr(MLIRContext *ctx, KernelSpec spec) {
  FieldWriter w{Builder(ctx), {}};
  spec.forEachField(w);
  return DictionaryAttr::get(ctx, w.attrs);
}

FailureOr<KernelSpec>
kernelSpec(StringRef kind, DictionaryAttr fields,
           llvm::function_ref<InFlightDiagnostic()> emitError) {
  std::optional<KernelSpec> spec =
      KernelSpec::ofKind(std::string_view(kind.data(), kind.size()));
  if (!spec) {
    emitError() << "has no kernel kind '" << kind << "'";
    return failure();
  }
  FieldReader r{fields, {}, 0};
  spec->forEachField(r);
  if (r.error.empty() && r.found != fields.size())
    r.error = "has fields the kind does not have";
  // 16-bit weights are packed; no kernel stores weights as integers; pairs
  // (the bf16 dot product's layout) are bf16 panels of an even K.
  auto badPairs = [](bool pairs, StoreType t, int64_t panel, int64_t k) {
    return pairs && (t != StoreType::bf16 || panel == 0 || k % 2);
  };
  const char *pairsError = "has pairs without bf16 panels of an even K";
  if (const LinearKernel *l = spec->get<LinearKernel>(); r.error.empty() && l) {
    if (l->weight == StoreType::i32 ||
        (l->weight != StoreType::f32 && l->panel == 0))
      r.error = "has a weight type other than f32 without panels, or i32";
    else if (badPairs(l->pairs, l->weight, l->panel, l->K))
      r.error = pairsError;
    else if (l->glu && (l->bias || l->residual))
      r.error = "has a glu epilogue and a bias or a residual";
    else if (l->input != StoreType::f32 &&
             (l->input != StoreType::bf16 || !l->pairs))
      r.error = "has an input other than f32 outside a bf16 dot product";
    else if (l->store != StoreType::f32 &&
             (l->store != StoreType::bf16 || !l->glu || !l->panel))
      r.error = "stores other than f32 without a glu epilogue over panels";
  }
  // A kernel that may round its rows for bf16 dot products
  // (archk-bf16-inputs) stores f32 or bf16.
  if (const StoreType *s = spec->roundingStore();
      r.error.empty() && s && *s != StoreType::f32 && *s != StoreType::bf16)
    r.error = "stores other than f32 or bf16";
  // RoPE's factors (a RoPE kernel's or a linear's rope epilogue's):
  // longrope's, one per rotated pair, positive and finite; none for
  // another scaling (ropeFrequencies indexes them by pair).
  const RopeKernel *rope = spec->rotation();
  if (const LinearKernel *l = spec->get<LinearKernel>(); l && rope) {
    // (Its output is [T, N / head_dim, head_dim], the first heads rotated.)
    // (Its tasks are whole heads and panels: N whole panels.)
    if (r.error.empty() &&
        (l->rope.heads < 0 || l->rope.headDim <= 0 ||
         l->N % l->rope.headDim || l->rope.heads * l->rope.headDim > l->N ||
         (l->panel && l->N % l->panel) || l->glu || l->residual))
      r.error = "has a rope epilogue whose heads are not within whole heads "
                "and panels of N, or beside a glu or residual epilogue";
  }
  if (rope && r.error.empty()) {
    auto bad = [](double f) { return !(f > 0) || !std::isfinite(f); };
    bool longRoPE = rope->scaling == RopeScaling::longrope;
    if (rope->rotaryDim <= 0 || rope->rotaryDim % 2 ||
        rope->rotaryDim > rope->headDim)
      r.error = "has a rotary_dim that is not even and in (0, head_dim]";
    else if (longRoPE ? int64_t(rope->factors.size()) != rope->rotaryDim / 2
                      : !rope->factors.empty())
      r.error = "has factors other than longrope's one per rotated pair";
    else if (llvm::any_of(rope->factors, bad) || bad(rope->attentionFactor) ||
             (!longRoPE && rope->attentionFactor != 1))
      r.error = "has factors that are not positive and finite, or an "
                "attention_factor other than 1 without longrope";
  }
  if (const PackKernel *p = spec->get<PackKernel>(); r.error.empty() && p) {
    if (p->store == StoreType::i32)
      r.error = "stores i32";
    else if (badPairs(p->pairs, p->store, p->panel, p->K))
      r.error = pairsError;
  }
  if (!r.error.empty()) {
    emitError() << "kernel description of '" << kind << "' " << r.error;
    return failure();
  }
  return *spec;
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

/// The arch op `name` refers to, of type T, or an error at `op`.
template <class T>
static T lookup(Operation *op, SymbolTableCollection &symbols,
                FlatSymbolRefAttr name, const char *what) {
  auto found = symbols.lookupNearestSymbolFrom<T>(op, name);
  if (!found)
    op->emitOpError() << "names " << name << ", which is no " << what
                      << " of the module";
  return found;
}

LogicalResult WeightOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto w = lookup<arch::WeightOp>(*this, symbols, getNameAttr(), "arch.weight");
  if (!w)
    return failure();
  if (w.getTensorType().getShape() != getBuffer().getType().getShape() ||
      !getBuffer().getType().getLayout().isIdentity())
    return emitOpError() << "has type " << getBuffer().getType()
                         << ", not a dense buffer of the weight's type "
                         << w.getTensorType();
  return success();
}

LogicalResult CacheOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto c = lookup<arch::CacheOp>(*this, symbols, getNameAttr(), "arch.cache");
  if (!c)
    return failure();
  // A ring's rows are mapped twice in a row (LowerToKernels.cpp).
  int64_t rows = c.getCapacity().value_or(1) *
                 (c.getLayout() == arch::CacheLayout::ring ? 2 : 1);
  MemRefType t = getBuffer().getType();
  RankedTensorType row = c.getRowType();
  Type elem = row.getElementType();
  if (c.getLayout() == arch::CacheLayout::tokens && row.getRank() == 2 &&
      t.getRank() == 3) {
    // Head-major [heads, capacity, head_dim]; the sequence sets the head
    // stride.
    int64_t heads = row.getDimSize(0), d = row.getDimSize(1);
    auto byHead = MemRefType::get(
        {heads, rows, d}, elem,
        StridedLayoutAttr::get(getContext(), 0, {ShapedType::kDynamic, d, 1}));
    if (t != byHead)
      return emitOpError() << "has type " << t << " but the cache is "
                           << byHead << " (head-major)";
    return success();
  }
  // A state is read and written as the one row it is.
  if (c.getLayout() == arch::CacheLayout::state &&
      t == MemRefType::get(row.getShape(), elem))
    return success();
  if (t.getShape() != ArrayRef<int64_t>{rows, c.getRowElements()} ||
      !t.getLayout().isIdentity() || t.getElementType() != elem)
    return emitOpError() << "has type " << t << " but the cache holds "
                         << rows << " rows of " << c.getRowElements() << " "
                         << elem;
  return success();
}

KernelSpec CallOp::getSpec() {
  // The verifier has read it once already.
  return *kernelSpec(getKind(), getKernel(), [&] { return emitOpError(); });
}

LogicalResult CallOp::verify() {
  FailureOr<KernelSpec> spec =
      kernelSpec(getKind(), getKernel(), [&] { return emitOpError(); });
  if (failed(spec))
    return failure();
  std::vector<KernelArg> declared = spec->args();
  if (declared.size() != getArgs().size())
    return emitOpError() << "passes " << getArgs().size()
                         << " arguments to a '" << getKind()
                         << "' kernel, which takes " << declared.size();
  for (auto [i, a] : llvm::enumerate(declared)) {
    Type t = getArgs()[i].getType();
    auto m = dyn_cast<MemRefType>(t);
    bool ok = false;
    const char *want = "";
    switch (a.kind) {
    case KernelArg::Position:
      ok = t.isIndex(), want = "index";
      break;
    case KernelArg::Tokens:
      ok = m && m.getRank() == 1 && m.getElementType().isSignlessInteger(32);
      want = "a rank-1 memref of i32";
      break;
    case KernelArg::Input:
    case KernelArg::Output:
      ok = m && m.getRank() == a.rank &&
           m.getElementType() == storeElementType(getContext(), a.elem);
      want = "a memref of the declared element type and rank";
      break;
    }
    if (!ok)
      return emitOpError() << "argument " << i << " ('" << a.name
                           << "') is " << t << ", but the kernel takes "
                           << want
                           << (a.rank ? " (" + stringifyEnum(a.elem).str() +
                                            ", " + std::to_string(a.rank) +
                                            ")"
                                      : "");
  }
  // (Its kernel assumes it: its tiles' row addresses fold.)
  if (const LinearKernel *l = spec->get<LinearKernel>();
      l && l->input != StoreType::f32 &&
      !denseRows(cast<MemRefType>(getArgs()[0].getType())))
    return emitOpError() << "argument 0 ('x') is " << getArgs()[0].getType()
                         << ", but a rounded input (input = "
                         << stringifyEnum(l->input) << ") is dense rows";
  return success();
}

LogicalResult DispatchOp::verify() {
  auto experts = cast<MemRefType>(getExperts().getType());
  auto offsets = cast<MemRefType>(getOffsets().getType());
  auto rows = cast<MemRefType>(getRows().getType());
  auto slots = cast<MemRefType>(getSlots().getType());
  if (experts.getRank() != 2 || slots != experts ||
      rows.getRank() != 1)
    return emitOpError() << "experts and slots must be [T, k] alike and rows "
                            "[T * k]";
  if (offsets.getRank() != 1 ||
      offsets.getDimSize(0) != int64_t(getNExperts()) + 1)
    return emitOpError() << "offsets must be memref<" << getNExperts() + 1
                         << "xi32> (n_experts + 1), got " << offsets;
  return success();
}

void CallOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // The output is the last buffer (KernelArg::Output comes last).
  for (OpOperand &o : getArgsMutable()) {
    if (!isa<MemRefType>(o.get().getType()))
      continue;
    bool out = o.getOperandNumber() + 1 == getNumOperands();
    if (out)
      effects.emplace_back(MemoryEffects::Write::get(), &o);
    else
      effects.emplace_back(MemoryEffects::Read::get(), &o);
  }
}

} // namespace archk
} // namespace arch

#define GET_OP_CLASSES
#include "arch/Kernel/ArchKOps.cpp.inc"
