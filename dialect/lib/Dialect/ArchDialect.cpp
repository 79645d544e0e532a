//===- ArchDialect.cpp - The arch dialect ---------------------------------===//
#include "arch/Dialect/ArchDialect.h"

#include "arch/Dialect/ArchDialect.cpp.inc"
#include "arch/Dialect/ArchEnums.cpp.inc"

namespace arch {

void ArchDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "arch/Dialect/ArchOps.cpp.inc"
      >();
}

} // namespace arch
