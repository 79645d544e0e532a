//===- ImportSpec.h - ArchSpec -> arch IR ----------------------*- C++ -*-===//
#ifndef ARCHC_IMPORT_IMPORTSPEC_H
#define ARCHC_IMPORT_IMPORTSPEC_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace arch {
struct ArchSpec;

/// Builds a module holding `func.func @forward(%tokens: tensor<?xi32>,
/// %pos: index) -> tensor<1xVxf32>` (logits of the last token) from a
/// validated spec. Every op is located at the spec key it came from.
mlir::OwningOpRef<mlir::ModuleOp> importSpec(mlir::MLIRContext &ctx,
                                             const ArchSpec &spec);
} // namespace arch

#endif // ARCHC_IMPORT_IMPORTSPEC_H
