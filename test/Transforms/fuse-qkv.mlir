// RUN: arch-opt %s -split-input-file -arch-fuse-qkv | FileCheck %s

arch.weight @wq : tensor<8x8xf32>
arch.weight @wk : tensor<8x8xf32>
arch.weight @wv : tensor<8x8xf32>
arch.cache @kc tokens 16 : tensor<2x4xf32>
arch.cache @vc tokens 16 : tensor<2x4xf32>
// MHA with RoPE on q and k, keys and values through their caches: one
// linear, then views of its columns.
// CHECK-LABEL: func.func @fuse_mha
func.func @fuse_mha(%h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK-DAG: %[[WQ:.*]] = arch.param @wq
  // CHECK-DAG: %[[WK:.*]] = arch.param @wk
  // CHECK-DAG: %[[WV:.*]] = arch.param @wv
  // CHECK: %[[W:.*]] = arch.concat %[[WQ]], %[[WK]], %[[WV]] {dim = 0 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<24x8xf32>
  // CHECK: %[[Y:.*]] = arch.linear %{{.*}}, %[[W]] : (tensor<?x8xf32>, tensor<24x8xf32>) -> tensor<?x24xf32>
  // CHECK: %[[S:.*]]:3 = arch.split %[[Y]] : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  // CHECK-NOT: arch.linear
  // CHECK: %[[Q:.*]] = arch.rope half_split %[[S]]#0
  // CHECK: %[[K:.*]] = arch.rope half_split %[[S]]#1
  // CHECK: %[[KC:.*]] = arch.cache_append @kc, %[[K]] at
  // CHECK: %[[VC:.*]] = arch.cache_append @vc, %[[S]]#2 at
  // CHECK: arch.attention %[[Q]], %[[KC]], %[[VC]]
  %wq = arch.param @wq : tensor<8x8xf32>
  %q = arch.linear %h, %wq : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wk = arch.param @wk : tensor<8x8xf32>
  %k = arch.linear %h, %wk : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wv = arch.param @wv : tensor<8x8xf32>
  %v = arch.linear %h, %wv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %qr = arch.rope half_split %q, %pos {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %kr = arch.rope half_split %k, %pos {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %kc = arch.cache_append @kc, %kr at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
  %vc = arch.cache_append @vc, %v at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
  %a = arch.attention %qr, %kc, %vc, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

arch.weight @wq : tensor<8x8xf32>
arch.weight @wk : tensor<8x8xf32>
arch.weight @wv : tensor<8x8xf32>
// Already tiled (arch-flash-tiling ran first): the same fusion.
// CHECK-LABEL: func.func @fuse_tiled
// CHECK: %[[S:.*]]:3 = arch.split %{{.*}} : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
// CHECK-NEXT: arch.flash_attention %[[S]]#0, %[[S]]#1, %[[S]]#2
func.func @fuse_tiled(%h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %wq = arch.param @wq : tensor<8x8xf32>
  %q = arch.linear %h, %wq : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wk = arch.param @wk : tensor<8x8xf32>
  %k = arch.linear %h, %wk : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wv = arch.param @wv : tensor<8x8xf32>
  %v = arch.linear %h, %wv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %a = arch.flash_attention %q, %k, %v, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5, block_q = 32, block_kv = 64, split_kv = 256} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

arch.weight @wq : tensor<8x8xf32>
arch.weight @wk : tensor<4x8xf32>
arch.weight @wv : tensor<4x8xf32>
arch.weight @bq : tensor<8xf32>
arch.weight @bk : tensor<4xf32>
arch.weight @bv : tensor<4xf32>
arch.weight @n : tensor<4xf32>
// GQA with biases and QK-norm: biases are concatenated too; the norms read
// the views.
// CHECK-LABEL: func.func @fuse_gqa_bias_qk_norm
func.func @fuse_gqa_bias_qk_norm(%h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK: %[[W:.*]] = arch.concat {{.*}} -> tensor<16x8xf32>
  // CHECK: %[[B:.*]] = arch.concat {{.*}} : (tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<16xf32>
  // CHECK: %[[Y:.*]] = arch.linear %{{.*}}, %[[W]], %[[B]] : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  // CHECK: %[[S:.*]]:3 = arch.split %[[Y]] : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  // CHECK: arch.norm rms %[[S]]#0
  // CHECK: arch.norm rms %[[S]]#1
  %wq = arch.param @wq : tensor<8x8xf32>
  %bq = arch.param @bq : tensor<8xf32>
  %q = arch.linear %h, %wq, %bq : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wk = arch.param @wk : tensor<4x8xf32>
  %bk = arch.param @bk : tensor<4xf32>
  %k = arch.linear %h, %wk, %bk : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %wv = arch.param @wv : tensor<4x8xf32>
  %bv = arch.param @bv : tensor<4xf32>
  %v = arch.linear %h, %wv, %bv : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %n = arch.param @n : tensor<4xf32>
  %qn = arch.norm rms %q, %n {eps = 1.0e-5 : f32, groups = 2} : (tensor<?x8xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  %kn = arch.norm rms %k, %n {eps = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %a = arch.attention %qn, %kn, %v, %pos {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

arch.weight @wq : tensor<8x8xf32>
arch.weight @wk : tensor<2x8xf32>
arch.weight @wv : tensor<2x8xf32>
// MQA: one key/value head.
// CHECK-LABEL: func.func @fuse_mqa
func.func @fuse_mqa(%h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK: arch.linear {{.*}} -> tensor<?x12xf32>
  // CHECK: arch.split {{.*}} -> tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xf32>
  %wq = arch.param @wq : tensor<8x8xf32>
  %q = arch.linear %h, %wq : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wk = arch.param @wk : tensor<2x8xf32>
  %k = arch.linear %h, %wk : (tensor<?x8xf32>, tensor<2x8xf32>) -> tensor<?x2xf32>
  %wv = arch.param @wv : tensor<2x8xf32>
  %v = arch.linear %h, %wv : (tensor<?x8xf32>, tensor<2x8xf32>) -> tensor<?x2xf32>
  %a = arch.attention %q, %k, %v, %pos {n_heads = 4, n_kv_heads = 1, head_dim = 2, scale = 0.5} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

arch.weight @w : tensor<8x8xf32>
// Linears on different inputs stay apart.
// CHECK-LABEL: func.func @no_fuse_different_inputs
func.func @no_fuse_different_inputs(%h: tensor<?x8xf32>, %g: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK-NOT: arch.concat
  // CHECK-NOT: arch.split
  // CHECK-COUNT-3: arch.linear
  %w = arch.param @w : tensor<8x8xf32>
  %q = arch.linear %h, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %k = arch.linear %g, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %v = arch.linear %h, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %a = arch.attention %q, %k, %v, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

arch.weight @w : tensor<8x8xf32>
arch.weight @b : tensor<8xf32>
// Some with a bias and some without stay apart.
// CHECK-LABEL: func.func @no_fuse_mixed_bias
func.func @no_fuse_mixed_bias(%h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK-NOT: arch.concat
  // CHECK-COUNT-3: arch.linear
  %w = arch.param @w : tensor<8x8xf32>
  %b = arch.param @b : tensor<8xf32>
  %q = arch.linear %h, %w, %b : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %k = arch.linear %h, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %v = arch.linear %h, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %a = arch.attention %q, %k, %v, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

// Query, key and value that are not projections (function arguments)
// leave the IR unchanged.
// CHECK-LABEL: func.func @no_fuse_not_projections
func.func @no_fuse_not_projections(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK-NEXT: arch.attention
  %a = arch.attention %q, %k, %k, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----

arch.weight @wq : tensor<8x8xf32>
arch.weight @wk : tensor<8x8xf32>
arch.weight @wv : tensor<8x8xf32>
arch.cache @kc tokens 16 : tensor<2x4xf32>
arch.cache @vc tokens 16 : tensor<2x4xf32>
// Not when a projection adds a residual (arch-fuse-residual's epilogue,
// here by hand): the fused linear has no per-piece residual.
// CHECK-LABEL: func.func @residual_projection
// CHECK-NOT: arch.concat
// CHECK: arch.linear %arg0, %{{.*}} residual %arg0
// CHECK-NOT: arch.split
func.func @residual_projection(%h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %wq = arch.param @wq : tensor<8x8xf32>
  %q = arch.linear %h, %wq residual %h : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %wk = arch.param @wk : tensor<8x8xf32>
  %k = arch.linear %h, %wk : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wv = arch.param @wv : tensor<8x8xf32>
  %v = arch.linear %h, %wv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %kc = arch.cache_append @kc, %k at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
  %vc = arch.cache_append @vc, %v at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
  %a = arch.attention %q, %kc, %vc, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}
