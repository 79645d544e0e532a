//===- ArchDialect.h - The arch dialect ------------------------*- C++ -*-===//
#ifndef ARCH_DIALECT_ARCHDIALECT_H
#define ARCH_DIALECT_ARCHDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "arch/Dialect/ArchDialect.h.inc"
#include "arch/Dialect/ArchEnums.h.inc"

#define GET_OP_CLASSES
#include "arch/Dialect/ArchOps.h.inc"

#endif // ARCH_DIALECT_ARCHDIALECT_H
