//===- ArchOps.cpp - arch op verifiers ------------------------------------===//
//
// Shape checks ODS cannot state: the token dimension is dynamic, every
// feature dimension is static and must agree with the op's attributes.
//
//===----------------------------------------------------------------------===//
#include "arch/Dialect/ArchDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;

#define GET_OP_CLASSES
#include "arch/Dialect/ArchOps.cpp.inc"

namespace arch {

/// A [?, N] activation: dynamic tokens, static features. Returns N or -1.
static int64_t featureDim(Operation *op, Value v, StringRef what) {
  auto t = cast<RankedTensorType>(v.getType());
  if (t.getRank() != 2 || t.isDynamicDim(1)) {
    op->emitOpError() << what << " must be a rank-2 tensor with a static "
                      << "feature dimension, got " << t;
    return -1;
  }
  return t.getDimSize(1);
}

static LogicalResult checkStatic(Operation *op, Value v, StringRef what) {
  auto t = cast<RankedTensorType>(v.getType());
  if (!t.hasStaticShape())
    return op->emitOpError() << what << " must have a static shape, got " << t;
  return success();
}

LogicalResult ParamOp::verify() {
  if (failed(checkStatic(*this, getResult(), "parameter")))
    return failure();
  auto shape = cast<RankedTensorType>(getType()).getShape();
  if (!getSource()) {
    if (getSourceShape() || getTranspose() || getRows())
      return emitOpError() << "has a source layout but no source tensor";
    return success();
  }
  if (!getSourceShape())
    return emitOpError() << "source tensor needs its stored shape";
  llvm::SmallVector<int64_t, 2> view(*getSourceShape());
  if (view.size() != shape.size())
    return emitOpError() << "source tensor has rank " << view.size()
                         << ", the parameter " << shape.size();
  if (getTranspose()) {
    if (view.size() != 2)
      return emitOpError() << "only a rank-2 source can be transposed";
    std::swap(view[0], view[1]);
  }
  for (size_t i = 1; i < view.size(); ++i)
    if (view[i] != shape[i])
      return emitOpError() << "source dimension " << i << " is " << view[i]
                           << ", the parameter's " << shape[i];
  if (!getRows()) {
    if (view[0] != shape[0])
      return emitOpError() << "source has " << view[0]
                           << " rows, the parameter " << shape[0];
    return success();
  }
  ArrayRef<int64_t> r = *getRows();
  if (r.size() != 4)
    return emitOpError() << "rows must be [groups, stride, offset, length]";
  int64_t groups = r[0], stride = r[1], offset = r[2], length = r[3];
  if (groups <= 0 || length <= 0 || offset < 0 || offset + length > stride)
    return emitOpError() << "rows [" << groups << ", " << stride << ", "
                         << offset << ", " << length
                         << "] do not select a block within each group";
  if (groups * stride != view[0] || groups * length != shape[0])
    return emitOpError() << "rows of " << groups << " groups of " << stride
                         << " take " << groups * length << " of "
                         << view[0] << " source rows, the parameter has "
                         << shape[0];
  return success();
}

LogicalResult EmbedOp::verify() {
  auto table = cast<RankedTensorType>(getTable().getType());
  if (table.getRank() != 2 || !table.hasStaticShape())
    return emitOpError() << "table must be a static [vocab, d_model] tensor";
  int64_t d = featureDim(*this, getResult(), "result");
  if (d < 0)
    return failure();
  if (d != table.getDimSize(1))
    return emitOpError() << "result width " << d
                         << " does not match the table's d_model "
                         << table.getDimSize(1);
  return success();
}

LogicalResult NormOp::verify() {
  int64_t d = featureDim(*this, getInput(), "input");
  if (d < 0)
    return failure();
  if (getGroups() < 1 || d % getGroups() != 0)
    return emitOpError() << "groups (" << getGroups()
                         << ") must divide the input width " << d;
  int64_t g = int64_t(getGroups());
  d /= g;
  // One weight for every group ([d]) or one per group ([groups, d]).
  auto w = cast<RankedTensorType>(getWeight().getType());
  bool shared = w.getRank() == 1 && w.getDimSize(0) == d;
  bool perGroup = w.getRank() == 2 && w.getDimSize(0) == g &&
                  w.getDimSize(1) == d;
  if (!shared && !perGroup)
    return emitOpError() << "weight must be tensor<" << d << "xf32> or tensor<"
                         << g << "x" << d << "xf32>, got " << w;
  if (getBias() && getBias().getType() != getWeight().getType())
    return emitOpError() << "bias must have the weight's type " << w
                         << ", got " << getBias().getType();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type";
  if (getEps().convertToFloat() <= 0)
    return emitOpError() << "eps must be positive";
  return success();
}

LogicalResult LinearOp::verify() {
  int64_t k = featureDim(*this, getInput(), "input");
  if (k < 0)
    return failure();
  auto w = cast<RankedTensorType>(getWeight().getType());
  if (w.getRank() != 2 || !w.hasStaticShape())
    return emitOpError() << "weight must be a static [N, K] tensor, got " << w;
  if (w.getDimSize(1) != k)
    return emitOpError() << "weight has K = " << w.getDimSize(1)
                         << " but the input has " << k << " features";
  int64_t n = featureDim(*this, getResult(), "result");
  if (n < 0)
    return failure();
  if (n != w.getDimSize(0))
    return emitOpError() << "result has " << n << " features but the weight "
                         << "has N = " << w.getDimSize(0);
  if (getBias()) {
    auto b = cast<RankedTensorType>(getBias().getType());
    if (b.getRank() != 1 || b.getDimSize(0) != n)
      return emitOpError() << "bias must be tensor<" << n << "xf32>, got "
                           << b;
  }
  return success();
}

LogicalResult SoftcapOp::verify() {
  if (!(getCap().convertToFloat() > 0))
    return emitOpError() << "cap must be positive";
  return success();
}

LogicalResult LastTokenOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (in.getRank() != 2 || out.getRank() != 2 || out.getDimSize(0) != 1 ||
      in.getDimSize(1) != out.getDimSize(1))
    return emitOpError() << "expects [T, N] -> [1, N], got " << in << " -> "
                         << out;
  return success();
}

LogicalResult PosEmbedOp::verify() {
  int64_t d = featureDim(*this, getInput(), "input");
  if (d < 0)
    return failure();
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type";
  if (int64_t(getOffset()) < 0)
    return emitOpError() << "offset must be non-negative";
  bool learned = getKind() == PosEmbedKind::learned;
  if (learned != bool(getTable()))
    return emitOpError() << (learned ? "learned positions need a table"
                                     : "sinusoidal positions take no table");
  if (learned) {
    auto t = cast<RankedTensorType>(getTable().getType());
    if (t.getRank() != 2 || !t.hasStaticShape() || t.getDimSize(1) != d ||
        t.getDimSize(0) <= int64_t(getOffset()))
      return emitOpError() << "table must be a static [positions, " << d
                           << "] tensor with more than offset rows, got " << t;
  } else if (d % 2 != 0) {
    return emitOpError() << "sinusoidal positions need an even width, got "
                         << d;
  }
  return success();
}

LogicalResult RopeOp::verify() {
  int64_t d = featureDim(*this, getInput(), "input");
  if (d < 0)
    return failure();
  int64_t heads = getNHeads(), hd = getHeadDim(), rot = getRotaryDim();
  if (heads <= 0 || hd <= 0 || heads * hd != d)
    return emitOpError() << "n_heads (" << heads << ") * head_dim (" << hd
                         << ") must equal the input width " << d;
  if (rot <= 0 || rot > hd || rot % 2 != 0)
    return emitOpError() << "rotary_dim must be even and in (0, head_dim], "
                         << "got " << rot;
  if (getTheta().convertToDouble() <= 0)
    return emitOpError() << "theta must be positive";
  if (getResult().getType() != getInput().getType())
    return emitOpError() << "result type must equal the input type";
  return success();
}

LogicalResult AttentionOp::verify() {
  int64_t heads = getNHeads(), kvHeads = getNKvHeads(), hd = getHeadDim();
  if (heads <= 0 || kvHeads <= 0 || hd <= 0)
    return emitOpError() << "n_heads, n_kv_heads and head_dim must be positive";
  if (heads % kvHeads != 0)
    return emitOpError() << "n_heads (" << heads
                         << ") must be a multiple of n_kv_heads (" << kvHeads
                         << ")";
  int64_t q = featureDim(*this, getQuery(), "query");
  int64_t k = featureDim(*this, getKey(), "key");
  int64_t v = featureDim(*this, getValue(), "value");
  if (q < 0 || k < 0 || v < 0)
    return failure();
  if (q != heads * hd)
    return emitOpError() << "query width " << q << " != n_heads * head_dim ("
                         << heads * hd << ")";
  if (k != kvHeads * hd || v != kvHeads * hd)
    return emitOpError() << "key and value widths must be n_kv_heads * "
                         << "head_dim (" << kvHeads * hd << "), got " << k
                         << " and " << v;
  if (getResult().getType() != getQuery().getType())
    return emitOpError() << "result type must equal the query type";
  if (int64_t(getLayer()) < 0)
    return emitOpError() << "layer must be non-negative";
  if (int64_t(getWindow()) < 0)
    return emitOpError() << "window must be non-negative";
  if (getRelBias()) {
    auto t = cast<RankedTensorType>(getRelBias().getType());
    if (t.getRank() != 2 || !t.hasStaticShape() || t.getDimSize(1) != heads ||
        t.getDimSize(0) < 2)
      return emitOpError() << "rel_bias must be a static [buckets, " << heads
                           << "] tensor, got " << t;
    if (int64_t(getT5MaxDistance()) <= t.getDimSize(0) / 2)
      return emitOpError() << "t5_max_distance must exceed buckets / 2";
    if (getAlibi())
      return emitOpError() << "takes ALiBi or a T5 bias, not both";
  }
  if (bool(getRelKey()) != bool(getRelValue()))
    return emitOpError() << "Shaw positions need both rel_key and rel_value";
  if (getRelKey()) {
    int64_t rows = 2 * int64_t(getShawClip()) + 1;
    for (Value t : {getRelKey(), getRelValue()}) {
      auto ty = cast<RankedTensorType>(t.getType());
      if (ty.getRank() != 2 || ty.getDimSize(0) != rows ||
          ty.getDimSize(1) != hd)
        return emitOpError() << "Shaw tables must be tensor<" << rows << "x"
                             << hd << "xf32> (2 shaw_clip + 1 rows), got "
                             << ty;
    }
  }
  if (getSoftcap().convertToDouble() < 0)
    return emitOpError() << "softcap must be positive (or 0 for none)";
  return success();
}

} // namespace arch
