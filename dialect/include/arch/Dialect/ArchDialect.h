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

/// The model's name: the module's symbol, "model" without one.
std::string modelName(mlir::ModuleOp module);

} // namespace arch

#endif // ARCH_DIALECT_ARCHDIALECT_H
