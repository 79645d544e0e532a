//===- ArchEnums.h - Enums of the arch dialect -----------------*- C++ -*-===//
//
// The one definition of the enums (ArchAttrs.td) that the dialect's ops
// carry and the kernels are specialized on: NormKind, Activation, RopeStyle,
// RopeScaling, PosEmbedKind, CacheLayout, StoreType.
//
//===----------------------------------------------------------------------===//
#ifndef ARCH_DIALECT_ARCHENUMS_H
#define ARCH_DIALECT_ARCHENUMS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "arch/Dialect/ArchEnums.h.inc"

#endif // ARCH_DIALECT_ARCHENUMS_H
