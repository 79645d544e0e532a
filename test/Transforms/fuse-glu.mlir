// RUN: arch-opt %s -split-input-file -arch-fuse-glu | FileCheck %s
// RUN: arch-opt %s -split-input-file -arch-fuse-glu -arch-pack-weights | FileCheck %s --check-prefix=PACKED

arch.weight @wg : tensor<96x8xf32>
arch.weight @wu : tensor<96x8xf32>
// A gated FFN's gate and up projections on one input: one linear over
// their weights, gate first, with the gating as its epilogue; packed,
// each half on its own (96 columns: 2 panels of 64 each, the second
// half-empty), straight from the two weights (no concatenation).
// CHECK-LABEL: func.func @fuse
// CHECK-DAG: %[[WG:.*]] = arch.param @wg
// CHECK-DAG: %[[WU:.*]] = arch.param @wu
// CHECK: %[[W:.*]] = arch.concat %[[WG]], %[[WU]] {dim = 0 : i64} : (tensor<96x8xf32>, tensor<96x8xf32>) -> tensor<192x8xf32>
// CHECK-NEXT: %[[Y:.*]] = arch.linear %arg0, %[[W]] glu gelu_tanh : (tensor<?x8xf32>, tensor<192x8xf32>) -> tensor<?x96xf32>
// CHECK-NEXT: return %[[Y]]
// CHECK-NOT: arch.glu
// PACKED-LABEL: func.func @fuse
// PACKED-NOT: arch.concat
// PACKED: %[[WG:.*]] = arch.param @wg
// PACKED: %[[P:.*]] = arch.pack %[[WG]], %{{.*}} {groups = 2 : i64, panel = 64 : i64} : tensor<96x8xf32>, tensor<96x8xf32> -> tensor<4x8x64xf32>
// PACKED-NEXT: arch.linear %arg0, %[[P]] glu gelu_tanh : (tensor<?x8xf32>, tensor<4x8x64xf32>) -> tensor<?x96xf32>
func.func @fuse(%h: tensor<?x8xf32>) -> tensor<?x96xf32> {
  %wu = arch.param @wu : tensor<96x8xf32>
  %u = arch.linear %h, %wu : (tensor<?x8xf32>, tensor<96x8xf32>) -> tensor<?x96xf32>
  %wg = arch.param @wg : tensor<96x8xf32>
  %g = arch.linear %h, %wg : (tensor<?x8xf32>, tensor<96x8xf32>) -> tensor<?x96xf32>
  %m = arch.glu gelu_tanh %g, %u : tensor<?x96xf32>
  return %m : tensor<?x96xf32>
}

// -----

arch.weight @wg : tensor<16x8xf32>
arch.weight @wu : tensor<16x8xf32>
arch.weight @bg : tensor<16xf32>
// Left as they are: a bias (the epilogue takes none), a half read by
// something else too, halves on different inputs, one linear as both.
// CHECK-LABEL: func.func @unfused
// CHECK-COUNT-4: arch.glu silu
// CHECK-NOT: glu silu :
func.func @unfused(%h: tensor<?x8xf32>, %h2: tensor<?x8xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  %wg = arch.param @wg : tensor<16x8xf32>
  %wu = arch.param @wu : tensor<16x8xf32>
  %bg = arch.param @bg : tensor<16xf32>
  %g1 = arch.linear %h, %wg, %bg : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %u1 = arch.linear %h, %wu : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m1 = arch.glu silu %g1, %u1 : tensor<?x16xf32>
  %g2 = arch.linear %h, %wg : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %u2 = arch.linear %h, %wu : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m2 = arch.glu silu %g2, %u2 : tensor<?x16xf32>
  %g3 = arch.linear %h, %wg : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %u3 = arch.linear %h2, %wu : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m3 = arch.glu silu %g3, %u3 : tensor<?x16xf32>
  %g4 = arch.linear %h, %wg : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m4 = arch.glu silu %g4, %g4 : tensor<?x16xf32>
  return %m1, %m2, %u2, %m3, %m4 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

arch.weight @wg : tensor<16x8xf32>
arch.weight @wu : tensor<16x8xf32>
// Nor a half that adds a residual (arch-fuse-residual's epilogue).
// CHECK-LABEL: func.func @residual_half
// CHECK: arch.linear %arg0, %{{.*}} residual %arg1
// CHECK: arch.glu silu
// CHECK-NOT: glu silu :
func.func @residual_half(%h: tensor<?x8xf32>, %r: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %wg = arch.param @wg : tensor<16x8xf32>
  %wu = arch.param @wu : tensor<16x8xf32>
  %g = arch.linear %h, %wg residual %r : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %u = arch.linear %h, %wu : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m = arch.glu silu %g, %u : tensor<?x16xf32>
  return %m : tensor<?x16xf32>
}
