//===- arch-opt.cpp - mlir-opt for the arch dialect -----------------------===//
//
// Parses, verifies, transforms and prints arch IR; the driver of the
// dialect and pass lit tests.
//
//===----------------------------------------------------------------------===//
#include "arch/Dialect/ArchDialect.h"
#include "arch/Kernel/ArchK.h"
#include "arch/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  arch::registerArchPassesAndPipelines();
  mlir::DialectRegistry registry;
  registry.insert<arch::ArchDialect, arch::archk::ArchKDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect,
                  mlir::arith::ArithDialect, mlir::scf::SCFDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "arch optimizer driver\n", registry));
}
