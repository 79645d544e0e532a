// A weight an IR input packed already is left as it is, and with a 16-bit
// weight-type it must be of that type.
// RUN: arch-opt %s -arch-pack-weights | FileCheck %s
// RUN: not arch-opt %s -arch-pack-weights='weight-type=f16' 2>&1 | FileCheck %s --check-prefix=MIXED
// MIXED: error: 'arch.linear' op has a weight packed as 'tensor<1x8x64xf32>', not as arch-pack-weights' weight-type f16 and input-type f32 pack it
// A bf16 weight packed plainly where input-type bf16 packs it in pairs:
// RUN: not arch-opt %s -arch-pack-weights='weight-type=bf16 input-type=bf16' 2>&1 | FileCheck %s --check-prefix=PAIRS
// PAIRS: error: 'arch.linear' op has a weight packed as 'tensor<1x8x64xbf16>', not as arch-pack-weights' weight-type bf16 and input-type bf16 pack it

// CHECK-LABEL: func.func @packed_already
func.func @packed_already(%x: tensor<?x8xf32>, %w: tensor<1x8x64xf32>) -> tensor<?x16xf32> {
  // CHECK-NOT: arch.pack
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<1x8x64xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----
// (Only with 16-bit weights: a bf16 weight in plain panels.)
func.func @packed_bf16(%x: tensor<?x8xf32>, %w: tensor<1x8x64xbf16>) -> tensor<?x16xf32> {
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<1x8x64xbf16>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
