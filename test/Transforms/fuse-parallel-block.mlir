// RUN: arch-opt %s -split-input-file -arch-fuse-parallel-block | FileCheck %s

arch.weight @wqkv : tensor<24x8xf32>
arch.weight @wup : tensor<16x8xf32>
arch.weight @wgate : tensor<16x8xf32>
arch.weight @wo : tensor<8x8xf32>
arch.weight @wd : tensor<8x16xf32>
// A parallel block with a shared norm (after arch-fuse-qkv): the q/k/v
// projection, up and gate read %h and become one linear with a 5-way split;
// o and down, summed, become one linear over [attention, FFN activation].
// CHECK-LABEL: func.func @parallel_shared_norm
func.func @parallel_shared_norm(%x: tensor<?x8xf32>, %h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK: %[[W:.*]] = arch.concat %{{.*}}, %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<24x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<56x8xf32>
  // CHECK: %[[Y:.*]] = arch.linear %{{.*}}, %[[W]] : (tensor<?x8xf32>, tensor<56x8xf32>) -> tensor<?x56xf32>
  // CHECK: %[[S:.*]]:5 = arch.split %[[Y]] : tensor<?x56xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  // CHECK: %[[A:.*]] = arch.attention %[[S]]#0, %[[S]]#1, %[[S]]#2
  // CHECK: %[[G:.*]] = arch.glu silu %[[S]]#4, %[[S]]#3
  // CHECK: %[[AG:.*]] = arch.concat %[[A]], %[[G]] {dim = 1 : i64} : (tensor<?x8xf32>, tensor<?x16xf32>) -> tensor<?x24xf32>
  // CHECK: %[[WOD:.*]] = arch.concat %{{.*}}, %{{.*}} {dim = 1 : i64} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x24xf32>
  // CHECK: %[[O:.*]] = arch.linear %[[AG]], %[[WOD]] : (tensor<?x24xf32>, tensor<8x24xf32>) -> tensor<?x8xf32>
  // CHECK: arch.add %{{.*}}, %[[O]]
  %wqkv = arch.param @wqkv : tensor<24x8xf32>
  %qkv = arch.linear %h, %wqkv : (tensor<?x8xf32>, tensor<24x8xf32>) -> tensor<?x24xf32>
  %q, %k, %v = arch.split %qkv : tensor<?x24xf32> -> tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  %a = arch.attention %q, %k, %v, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %wo = arch.param @wo : tensor<8x8xf32>
  %o = arch.linear %a, %wo : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %wup = arch.param @wup : tensor<16x8xf32>
  %up = arch.linear %h, %wup : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %wgate = arch.param @wgate : tensor<16x8xf32>
  %gate = arch.linear %h, %wgate : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m = arch.glu silu %gate, %up : tensor<?x16xf32>
  %wd = arch.param @wd : tensor<8x16xf32>
  %d = arch.linear %m, %wd : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %s = arch.add %o, %d : tensor<?x8xf32>
  %y = arch.add %x, %s : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

arch.weight @w : tensor<8x8xf32>
arch.weight @wup : tensor<16x8xf32>
arch.weight @bup : tensor<16xf32>
arch.weight @wd : tensor<8x16xf32>
arch.weight @bo : tensor<8xf32>
arch.weight @bd : tensor<8xf32>
// Separate norms (GPT-NeoX): the inputs differ, so only the output
// projections fuse; both have biases, which are added.
// CHECK-LABEL: func.func @parallel_separate_norms
func.func @parallel_separate_norms(%x: tensor<?x8xf32>, %h1: tensor<?x8xf32>, %h2: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK-COUNT-3: arch.linear %arg1
  // CHECK: arch.linear %arg2
  // CHECK: %[[B:.*]] = arch.add %{{.*}}, %{{.*}} : tensor<8xf32>
  // CHECK: arch.linear %{{.*}}, %{{.*}}, %[[B]] : (tensor<?x24xf32>, tensor<8x24xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %w = arch.param @w : tensor<8x8xf32>
  %q = arch.linear %h1, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %k = arch.linear %h1, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %v = arch.linear %h1, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %a = arch.attention %q, %k, %v, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %bo = arch.param @bo : tensor<8xf32>
  %o = arch.linear %a, %w, %bo : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wup = arch.param @wup : tensor<16x8xf32>
  %bup = arch.param @bup : tensor<16xf32>
  %up = arch.linear %h2, %wup, %bup : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %m = arch.activation gelu %up : tensor<?x16xf32>
  %wd = arch.param @wd : tensor<8x16xf32>
  %bd = arch.param @bd : tensor<8xf32>
  %d = arch.linear %m, %wd, %bd : (tensor<?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %s = arch.add %d, %o : tensor<?x8xf32>
  %y = arch.add %x, %s : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

arch.weight @w : tensor<8x8xf32>
arch.weight @wup : tensor<16x8xf32>
arch.weight @wd : tensor<8x16xf32>
// A serial block: the FFN reads the residual stream after attention, and
// nothing sums the two projections. Untouched.
// CHECK-LABEL: func.func @no_fuse_serial
func.func @no_fuse_serial(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK-NOT: arch.concat
  // CHECK-NOT: arch.split
  // CHECK-COUNT-6: arch.linear
  %w = arch.param @w : tensor<8x8xf32>
  %q = arch.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %k = arch.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %v = arch.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %a = arch.attention %q, %k, %v, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %o = arch.linear %a, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %x1 = arch.add %x, %o : tensor<?x8xf32>
  %wup = arch.param @wup : tensor<16x8xf32>
  %up = arch.linear %x1, %wup : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m = arch.activation relu %up : tensor<?x16xf32>
  %wd = arch.param @wd : tensor<8x16xf32>
  %d = arch.linear %m, %wd : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %y = arch.add %x1, %d : tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

arch.weight @wo : tensor<8x8xf32>
arch.weight @wup : tensor<16x8xf32>
arch.weight @wd : tensor<8x16xf32>
// The output projections stay apart when one adds a residual already
// (arch-fuse-residual's epilogue, here by hand).
// CHECK-LABEL: func.func @residual_output
// CHECK-NOT: {dim = 1 : i64}
// CHECK: arch.linear %{{.*}}, %{{.*}} residual %arg0
// CHECK: arch.add
func.func @residual_output(%x: tensor<?x8xf32>, %h: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %a = arch.attention %h, %h, %h, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %wo = arch.param @wo : tensor<8x8xf32>
  %o = arch.linear %a, %wo residual %x : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %wup = arch.param @wup : tensor<16x8xf32>
  %up = arch.linear %h, %wup : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m = arch.activation gelu %up : tensor<?x16xf32>
  %wd = arch.param @wd : tensor<8x16xf32>
  %d = arch.linear %m, %wd : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %s = arch.add %o, %d : tensor<?x8xf32>
  return %s : tensor<?x8xf32>
}
