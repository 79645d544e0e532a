//===- ArchDialect.h - The arch dialect ------------------------*- C++ -*-===//
#ifndef ARCH_DIALECT_ARCHDIALECT_H
#define ARCH_DIALECT_ARCHDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "arch/Dialect/ArchDialect.h.inc"
#include "arch/Dialect/ArchEnums.h"

#define GET_OP_CLASSES
#include "arch/Dialect/ArchOps.h.inc"

#include "llvm/ADT/SetVector.h"

#include <string>

namespace arch {

/// The ops of `fn` whose results depend on weights only: arch.param, and
/// pure ops with operands and results whose every operand is such a
/// result; in order.
/// They compute the same on every call (arch-hoist-param-prep moves them
/// to @prepare_params).
llvm::SetVector<mlir::Operation *> weightOnlyOps(mlir::func::FuncOp fn);

/// The module's `func.func @forward`, checked to be what the runtime
/// calls: a body, (tensor<?xi32> tokens, index pos) -> tensor<1xVxf32>
/// logits computed by an op. Reports the mismatch and fails otherwise.
mlir::FailureOr<mlir::func::FuncOp> lookupForward(mlir::ModuleOp module);

/// Features per token row: the last dimension of a shaped value.
int64_t widthOf(mlir::Value v);

/// The largest block_q, block_kv or split_kv of arch.flash_attention: the
/// kernel's index arithmetic stays within 32 bits.
constexpr int64_t kMaxFlashBlock = 1 << 16;

/// Whether an arch.flash_attention of these sizes may take bf16_dot: the
/// pairs run along head_dim and over block_kv's keys, and Shaw's tables
/// enter the products (they stay f32).
inline bool bf16DotFits(int64_t headDim, int64_t blockKv, int64_t shawClip) {
  return headDim % 2 == 0 && blockKv % 2 == 0 && shawClip == 0;
}

/// The model's name: the module's symbol, "model" without one.
std::string modelName(mlir::ModuleOp module);

/// The most token rows one forward call takes: the runtime cuts longer
/// prefills into calls of this many. It sizes the activation buffers and
/// the sliding-window ring caches (which must keep a call's rows besides
/// the window). The module's `arch.max_chunk` (`archc compile
/// --max-chunk`), else kDefaultMaxChunk; at most `arch.max_seq_len`.
constexpr int64_t kDefaultMaxChunk = 256;
int64_t maxChunkOf(mlir::ModuleOp module);

/// The rows the library gives ring cache `c` (which keeps the last W =
/// capacity positions): W + max_chunk - 1, so that a call's first row
/// still sees W positions once the call's rows are stored, rounded up to
/// whole 4 KiB pages (the runtime maps a ring twice in a row). 0 when that
/// is not fewer than max_seq_len: the ring saves nothing and is lowered as
/// a tokens cache.
int64_t ringRows(CacheOp c);

} // namespace arch

#endif // ARCH_DIALECT_ARCHDIALECT_H
