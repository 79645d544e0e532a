// RUN: arch-opt %s -split-input-file -arch-hoist-param-prep | FileCheck %s

// A weight concatenation in @forward becomes a prepared weight, named after
// what it joins, that @prepare_params computes; @forward reads it.
// CHECK: arch.weight @m.q.w
// CHECK: arch.weight @"m.{q,k,v}.w" prepared : tensor<16x8xf32>
// CHECK-LABEL: func.func @prepare_params()
// CHECK-DAG: %[[Q:.*]] = arch.param @m.q.w
// CHECK-DAG: %[[K:.*]] = arch.param @m.k.w
// CHECK-DAG: %[[V:.*]] = arch.param @m.v.w
// CHECK: %[[C:.*]] = arch.concat %[[Q]], %[[K]], %[[V]] {dim = 0 : i64}
// CHECK: arch.assign @"m.{q,k,v}.w" = %[[C]] : tensor<16x8xf32>
// CHECK-LABEL: func.func @forward
// CHECK-NOT: arch.concat
// CHECK: %[[W:.*]] = arch.param @"m.{q,k,v}.w" : tensor<16x8xf32>
// CHECK: arch.linear %{{.*}}, %[[W]]
arch.weight @m.q.w : tensor<8x8xf32>
arch.weight @m.k.w : tensor<4x8xf32>
arch.weight @m.v.w : tensor<4x8xf32>
func.func @forward(%h: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %q = arch.param @m.q.w : tensor<8x8xf32>
  %k = arch.param @m.k.w : tensor<4x8xf32>
  %v = arch.param @m.v.w : tensor<4x8xf32>
  %w = arch.concat %q, %k, %v {dim = 0 : i64} : (tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %y = arch.linear %h, %w : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Only the value @forward reads is prepared; what it is made of moves with
// it, and its name joins the weights it reads. An existing @prepare_params
// is extended.
// CHECK: arch.weight @"{a,b}" prepared : tensor<12xf32>
// CHECK-LABEL: func.func @prepare_params()
// CHECK: arch.concat {{.*}} -> tensor<8xf32>
// CHECK: %[[C:.*]] = arch.concat {{.*}} -> tensor<12xf32>
// CHECK-NEXT: arch.assign @"{a,b}" = %[[C]]
// CHECK-NEXT: return
// CHECK-LABEL: func.func @forward
// CHECK-NOT: arch.concat
// CHECK: arch.param @"{a,b}"
arch.weight @a : tensor<4xf32>
arch.weight @b : tensor<4xf32>
func.func @prepare_params() {
  return
}
func.func @forward(%x: tensor<?x12xf32>) -> tensor<?x12xf32> {
  %a = arch.param @a : tensor<4xf32>
  %b = arch.param @b : tensor<4xf32>
  %ab = arch.concat %a, %b {dim = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %abc = arch.concat %ab, %a {dim = 0 : i64} : (tensor<8xf32>, tensor<4xf32>) -> tensor<12xf32>
  %n = arch.norm rms %x, %abc {eps = 1.0e-5 : f32} : (tensor<?x12xf32>, tensor<12xf32>) -> tensor<?x12xf32>
  return %n : tensor<?x12xf32>
}

// -----

// Nothing that depends only on weights: no @prepare_params, IR unchanged.
// CHECK-NOT: prepare_params
// CHECK-NOT: prepared
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: arch.param @w
// CHECK-NEXT: arch.linear
arch.weight @w : tensor<8x8xf32>
func.func @forward(%h: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %w = arch.param @w : tensor<8x8xf32>
  %y = arch.linear %h, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// A joined name already taken falls back to prepared.N.
// CHECK: arch.weight @prepared.0 prepared : tensor<8xf32>
// CHECK-LABEL: func.func @forward
// CHECK: arch.param @prepared.0
arch.weight @a : tensor<4xf32>
arch.weight @b : tensor<4xf32>
arch.weight @"{a,b}" : tensor<4xf32>
func.func @forward(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %a = arch.param @a : tensor<4xf32>
  %b = arch.param @b : tensor<4xf32>
  %ab = arch.concat %a, %b {dim = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %n = arch.norm rms %x, %ab {eps = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}

// -----

// Steps after concatenation name themselves: a packed weight.
// CHECK: arch.weight @w.pack prepared : tensor<2x8x64xf32>
// CHECK-LABEL: func.func @prepare_params()
// CHECK: %[[P:.*]] = arch.pack
// CHECK-NEXT: arch.assign @w.pack = %[[P]]
arch.weight @w : tensor<96x8xf32>
func.func @forward(%x: tensor<?x8xf32>) -> tensor<?x96xf32> {
  %w = arch.param @w : tensor<96x8xf32>
  %p = arch.pack %w {panel = 64 : i64} : tensor<96x8xf32> -> tensor<2x8x64xf32>
  %y = arch.linear %x, %p : (tensor<?x8xf32>, tensor<2x8x64xf32>) -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}
