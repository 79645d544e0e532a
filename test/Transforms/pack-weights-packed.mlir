// A weight an IR input packed already is left as it is, and with a 16-bit
// weight-type it must be of that type.
// RUN: arch-opt %s -arch-pack-weights | FileCheck %s
// RUN: not arch-opt %s -arch-pack-weights='weight-type=f16' 2>&1 | FileCheck %s --check-prefix=MIXED
// MIXED: error: 'arch.linear' op has a weight packed as 'tensor<1x8x64xf32>', not of arch-pack-weights' weight-type f16

// CHECK-LABEL: func.func @packed_already
func.func @packed_already(%x: tensor<?x8xf32>, %w: tensor<1x8x64xf32>) -> tensor<?x16xf32> {
  // CHECK-NOT: arch.pack
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<1x8x64xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
