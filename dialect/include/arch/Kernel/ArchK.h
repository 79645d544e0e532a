//===- ArchK.h - The kernel-call level -------------------------*- C++ -*-===//
//
// The archk dialect (ArchKOps.td) and the conversion between a kernel's
// typed description (Kernels.h) and the attribute archk.call carries.
//
//===----------------------------------------------------------------------===//
#ifndef ARCH_KERNEL_ARCHK_H
#define ARCH_KERNEL_ARCHK_H

#include "arch/Kernel/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "arch/Kernel/ArchKDialect.h.inc"

#define GET_OP_CLASSES
#include "arch/Kernel/ArchKOps.h.inc"

namespace arch {
namespace archk {

/// A view of its first operand's buffer, no copy: memref.subview (a
/// window), memref.expand_shape / collapse_shape / cast (a reshape).
bool isBufferView(mlir::Operation *op);
/// A view that covers the whole buffer it views (a reshape).
bool isReshape(mlir::Operation *op);
/// `buffer` and every view of it, views of views included.
llvm::SmallVector<mlir::Value> viewsOf(mlir::Value buffer);
/// The buffer `v` views, through the views `through` accepts (`v` itself
/// where it is none of them).
mlir::Value rootOf(mlir::Value v,
                   bool (*through)(mlir::Operation *) = isBufferView);
/// Whether `t` is rows of its width one after another (rank 2, strides
/// [width, 1], any offset): a linear's x rounded by its producer
/// (archk-bf16-inputs) must be.
bool denseRows(mlir::MemRefType t);

/// The MLIR element type of a StoreType (f32, f16, bf16), and back (none
/// for another type).
mlir::Type storeElementType(mlir::MLIRContext *ctx, StoreType t);
std::optional<StoreType> storeTypeOf(mlir::Type t);

/// `spec`'s fields as a dictionary: integers as i64, booleans, reals as
/// f64, enums by name.
mlir::DictionaryAttr kernelAttr(mlir::MLIRContext *ctx, KernelSpec spec);

/// The description of kind `kind` with the fields of `fields`; fails with
/// `emitError` naming the kind and the field that is missing, unknown or
/// of the wrong type.
mlir::FailureOr<KernelSpec>
kernelSpec(llvm::StringRef kind, mlir::DictionaryAttr fields,
           llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace archk
} // namespace arch

#endif // ARCH_KERNEL_ARCHK_H
