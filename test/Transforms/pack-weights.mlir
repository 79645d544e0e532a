// RUN: arch-opt %s -split-input-file -arch-pack-weights | FileCheck %s
// RUN: arch-opt %s -split-input-file -arch-pack-weights='panel=32 min-columns=64' | FileCheck %s --check-prefix=OPTS
// 16-bit weights: every matmul weight packed in that type, the one-row
// classifier and narrow ones included.
// RUN: arch-opt %s -split-input-file -arch-pack-weights='weight-type=bf16' | FileCheck %s --check-prefix=BF16
// RUN: arch-opt %s -split-input-file -arch-pack-weights='weight-type=f16' | FileCheck %s --check-prefix=F16
// RUN: not arch-opt %s -split-input-file -arch-pack-weights='weight-type=f8' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: arch-pack-weights: weight-type must be f32, f16 or bf16, got 'f8'
// bf16 inputs (the bf16 dot product): weights of even K packed in pairs,
// [panels, K / 2, panel, 2]; an odd K in plain panels.
// RUN: arch-opt %s -split-input-file -arch-pack-weights='weight-type=bf16 input-type=bf16' | FileCheck %s --check-prefix=PAIRS
// RUN: not arch-opt %s -split-input-file -arch-pack-weights='weight-type=bf16 input-type=f16' 2>&1 | FileCheck %s --check-prefix=BADIN
// BADIN: arch-pack-weights: input-type must be f32 or bf16, got 'f16'
// RUN: not arch-opt %s -split-input-file -arch-pack-weights='weight-type=f16 input-type=bf16' 2>&1 | FileCheck %s --check-prefix=BADPAIR
// BADPAIR: arch-pack-weights: input-type bf16 needs weight-type bf16 (the bf16 dot product), got weight-type f16

arch.weight @w : tensor<96x8xf32>
arch.weight @c : tensor<16x8xf32>
// A projection over many rows reads its weight packed: ceil(96 / 64) = 2
// panels, the second half zeros. The classifier (one row) too, its weight
// read by nothing else.
// CHECK-LABEL: func.func @pack_projection
// OPTS-LABEL: func.func @pack_projection
func.func @pack_projection(%x: tensor<?x8xf32>, %l: tensor<1x8xf32>) -> (tensor<?x96xf32>, tensor<1x16xf32>) {
  // CHECK: %[[W:.*]] = arch.param @w
  // CHECK: %[[P:.*]] = arch.pack %[[W]] {panel = 64 : i64} : tensor<96x8xf32> -> tensor<2x8x64xf32>
  // CHECK: arch.linear %{{.*}}, %[[P]] : (tensor<?x8xf32>, tensor<2x8x64xf32>) -> tensor<?x96xf32>
  // OPTS: arch.pack %{{.*}} {panel = 32 : i64} : tensor<96x8xf32> -> tensor<3x8x32xf32>
  // BF16: %[[P:.*]] = arch.pack %{{.*}} {panel = 64 : i64} : tensor<96x8xf32> -> tensor<2x8x64xbf16>
  // BF16: arch.linear %{{.*}}, %[[P]] : (tensor<?x8xf32>, tensor<2x8x64xbf16>) -> tensor<?x96xf32>
  // BF16: %[[Q:.*]] = arch.pack %{{.*}} {panel = 64 : i64} : tensor<16x8xf32> -> tensor<1x8x64xbf16>
  // BF16: arch.linear %{{.*}}, %[[Q]] : (tensor<1x8xf32>, tensor<1x8x64xbf16>) -> tensor<1x16xf32>
  // F16: arch.pack %{{.*}} -> tensor<2x8x64xf16>
  // F16: arch.pack %{{.*}} -> tensor<1x8x64xf16>
  // PAIRS: %[[P:.*]] = arch.pack %{{.*}} {panel = 64 : i64} : tensor<96x8xf32> -> tensor<2x4x64x2xbf16>
  // PAIRS: arch.linear %{{.*}}, %[[P]] : (tensor<?x8xf32>, tensor<2x4x64x2xbf16>) -> tensor<?x96xf32>
  // PAIRS: arch.pack %{{.*}} -> tensor<1x4x64x2xbf16>
  %w = arch.param @w : tensor<96x8xf32>
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<96x8xf32>) -> tensor<?x96xf32>
  // CHECK: %[[C:.*]] = arch.param @c
  // CHECK: %[[PC:.*]] = arch.pack %[[C]] {panel = 64 : i64} : tensor<16x8xf32> -> tensor<1x8x64xf32>
  // CHECK: arch.linear %{{.*}}, %[[PC]] : (tensor<1x8xf32>, tensor<1x8x64xf32>) -> tensor<1x16xf32>
  %c = arch.param @c : tensor<16x8xf32>
  %z = arch.linear %l, %c : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  return %y, %z : tensor<?x96xf32>, tensor<1x16xf32>
}

// -----

arch.weight @e : tensor<16x8xf32>
// A tied classifier (its weight the embedding table, read by the lookup
// too) stays a GEMV over the [N, K] table in f32: packing would copy it.
// 16-bit weights pack it all the same (their copy is the 16-bit one).
// CHECK-LABEL: func.func @tied_classifier
func.func @tied_classifier(%t: tensor<?xi32>, %l: tensor<1x8xf32>) -> (tensor<?x8xf32>, tensor<1x16xf32>) {
  // CHECK-NOT: arch.pack
  // BF16: arch.pack %{{.*}} -> tensor<1x8x64xbf16>
  %e = arch.param @e : tensor<16x8xf32>
  %x = arch.embed %t, %e : (tensor<?xi32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %z = arch.linear %l, %e : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  return %x, %z : tensor<?x8xf32>, tensor<1x16xf32>
}

// -----

arch.weight @w : tensor<8x8xf32>
// Fewer output columns than min-columns: left as it is.
// CHECK-LABEL: func.func @no_pack_narrow
// OPTS-LABEL: func.func @no_pack_narrow
func.func @no_pack_narrow(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // CHECK-NOT: arch.pack
  // OPTS-NOT: arch.pack
  // BF16: arch.pack %{{.*}} -> tensor<1x8x64xbf16>
  %w = arch.param @w : tensor<8x8xf32>
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

arch.weight @w : tensor<128x8xf32>
// CHECK-LABEL: func.func @min_columns
// OPTS-LABEL: func.func @min_columns
func.func @min_columns(%x: tensor<?x8xf32>) -> tensor<?x128xf32> {
  // OPTS: arch.pack {{.*}} -> tensor<4x8x32xf32>
  %w = arch.param @w : tensor<128x8xf32>
  %y = arch.linear %x, %w : (tensor<?x8xf32>, tensor<128x8xf32>) -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

arch.weight @w : tensor<64x7xf32>
// An odd K has no pairs: plain bf16 panels (an f32 input).
// PAIRS-LABEL: func.func @odd_k
func.func @odd_k(%x: tensor<?x7xf32>) -> tensor<?x64xf32> {
  // PAIRS: arch.pack %{{.*}} {panel = 64 : i64} : tensor<64x7xf32> -> tensor<1x7x64xbf16>
  %w = arch.param @w : tensor<64x7xf32>
  %y = arch.linear %x, %w : (tensor<?x7xf32>, tensor<64x7xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
