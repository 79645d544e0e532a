// RUN: arch-opt %s -split-input-file -verify-diagnostics -arch-lower-to-kernels | FileCheck %s

// A fused q/k/v projection: the prepared weight is concatenated straight
// into its buffer (no temporary, no copy), each source acquired before its
// first read (a loader may convert it only then) and released after its
// last. In @forward the logits become an argument, the token rows a
// value (memref.dim of the tokens), q/k/v column views of the projection,
// each cache append a copy into rows pos .. of the cache with the context
// its rows 0 ..< pos + T, and the last token a one-row view whose count
// is the value 1: the classifier writes the logits directly.
// CHECK-LABEL: func.func @prepare_params()
// CHECK-NEXT: %[[Q:.*]] = archk.weight @q : memref<8x8xf32>
// CHECK-NEXT: %[[K:.*]] = archk.weight @k : memref<4x8xf32>
// CHECK-NEXT: %[[V:.*]] = archk.weight @v : memref<4x8xf32>
// CHECK-NEXT: %[[W:.*]] = archk.weight @qkv : memref<16x8xf32>
// CHECK-NEXT: %[[WQ:.*]] = memref.subview %[[W]][0, 0] [8, 8] [1, 1]
// CHECK-NEXT: archk.acquire %[[Q]] : memref<8x8xf32>
// CHECK-NEXT: archk.call "copy" {store = "f32", width = 8 : i64}(%[[Q]], %[[WQ]])
// CHECK-NEXT: archk.release %[[Q]] : memref<8x8xf32>
// CHECK-NEXT: %[[WK:.*]] = memref.subview %[[W]][8, 0] [4, 8] [1, 1] : memref<16x8xf32> to memref<4x8xf32, strided<[8, 1], offset: 64>>
// CHECK-NEXT: archk.acquire %[[K]]
// CHECK-NEXT: archk.call "copy" {store = "f32", width = 8 : i64}(%[[K]], %[[WK]])
// CHECK-NEXT: archk.release %[[K]]
// CHECK: archk.acquire %[[V]]
// CHECK-NEXT: archk.call "copy" {store = "f32", width = 8 : i64}(%[[V]],
// CHECK-NEXT: archk.release %[[V]]
// CHECK-NEXT: return
// CHECK-NOT: memref.alloc
// CHECK-LABEL: func.func @forward(%arg0: memref<?xi32>, %arg1: index, %arg2: memref<1x32xf32>)
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0 : memref<?xi32>
// CHECK-NEXT: %[[X:.*]] = memref.alloc(%[[T]]) : memref<?x8xf32>
// CHECK-NEXT: archk.call "embed" {d_model = 8 : i64, scale = 1.000000e+00 : f64, vocab = 32 : i64}(%arg0, %{{.*}}, %[[X]])
// CHECK: %[[P:.*]] = memref.alloc(%[[T]]) : memref<?x16xf32>
// CHECK-NEXT: archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 0 : i64}(%[[X]], %{{.*}}, %[[P]])
// CHECK-NEXT: %[[VQ:.*]] = memref.subview %[[P]][0, 0] [%[[T]], 8] [1, 1] : memref<?x16xf32> to memref<?x8xf32, strided<[16, 1]>>
// CHECK-NEXT: %[[VK:.*]] = memref.subview %[[P]][0, 8] [%[[T]], 4] [1, 1] : memref<?x16xf32> to memref<?x4xf32, strided<[16, 1], offset: 8>>
// CHECK-NEXT: %[[VV:.*]] = memref.subview %[[P]][0, 12] [%[[T]], 4] [1, 1]
// A KV cache is head-major [heads, positions, head_dim] (the sequence sets
// the head stride): one `append` call stores the rows, as heads, to
// positions pos .. of every head, given as a transposed window; attention
// reads the context [pos + T, heads, head_dim], transposed likewise.
// CHECK-NEXT: %[[KC:.*]] = archk.cache @kc : memref<1x16x4xf32, strided<[?, 4, 1]>>
// CHECK-NEXT: %[[KH:.*]] = memref.expand_shape %[[VK]] {{\[\[}}0], [1, 2]] output_shape [%[[T]], 1, 4]
// CHECK-NEXT: %[[KW:.*]] = memref.subview %[[KC]][0, %arg1, 0] [1, %[[T]], 4] [1, 1, 1] : memref<1x16x4xf32, strided<[?, 4, 1]>> to memref<1x?x4xf32, strided<[?, 4, 1], offset: ?>>
// CHECK-NEXT: %[[KWT:.*]] = memref.transpose %[[KW]] (d0, d1, d2) -> (d1, d0, d2) : memref<1x?x4xf32, strided<[?, 4, 1], offset: ?>> to memref<?x1x4xf32, strided<[4, ?, 1], offset: ?>>
// CHECK-NEXT: archk.call "append" {head_dim = 4 : i64, heads = 1 : i64, store = "f32"}(%[[KH]], %[[KWT]])
// CHECK-NEXT: %[[END:.*]] = arith.addi %arg1, %[[T]] : index
// CHECK-NEXT: %[[KCTX:.*]] = memref.subview %[[KC]][0, 0, 0] [1, %[[END]], 4] [1, 1, 1]
// CHECK-NEXT: %[[KT:.*]] = memref.transpose %[[KCTX]] (d0, d1, d2) -> (d1, d0, d2) : memref<1x?x4xf32, strided<[?, 4, 1]>> to memref<?x1x4xf32, strided<[4, ?, 1]>>
// CHECK: %[[A:.*]] = memref.alloc(%[[T]]) : memref<?x8xf32>
// CHECK: archk.call "attention" {alibi = false, block_kv = 0 : i64, block_q = 0 : i64, head_dim = 4 : i64, heads = 2 : i64, kv = "f32", kv_by_head = true, kv_heads = 1 : i64, scale = 5.000000e-01 : f64, shaw_clip = 0 : i64, softcap = 0.000000e+00 : f64, split_kv = 0 : i64, t5_buckets = 0 : i64, t5_max_distance = 0 : i64, v_head_dim = 4 : i64, window = 0 : i64}({{.*}}, %[[KT]], {{.*}}, %arg1, {{.*}}) : memref<?x2x4xf32, strided<[16, 4, 1]>>, memref<?x1x4xf32, strided<[4, ?, 1]>>, memref<?x1x4xf32, strided<[4, ?, 1]>>, index, memref<?x2x4xf32>
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[LASTROW:.*]] = arith.subi %[[T]], %[[ONE]] : index
// CHECK-NEXT: %[[LAST:.*]] = memref.subview %[[A]][%[[LASTROW]], 0] [%[[ONE]], 8] [1, 1] : memref<?x8xf32> to memref<?x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT: %[[LOGITS:.*]] = memref.cast %arg2 : memref<1x32xf32> to memref<?x32xf32>
// CHECK-NEXT: archk.call "linear" {K = 8 : i64, N = 32 : i64, bias = false, one_row = true, panel = 0 : i64}(%[[LAST]], %{{.*}}, %[[LOGITS]])
// CHECK-NEXT: return
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<32x8xf32>
  arch.weight @q : tensor<8x8xf32>
  arch.weight @k : tensor<4x8xf32>
  arch.weight @v : tensor<4x8xf32>
  arch.weight @qkv prepared : tensor<16x8xf32>
  arch.cache @kc tokens 16 : tensor<1x4xf32>
  arch.cache @vc tokens 16 : tensor<1x4xf32>
  func.func @prepare_params() {
    %q = arch.param @q : tensor<8x8xf32>
    %k = arch.param @k : tensor<4x8xf32>
    %v = arch.param @v : tensor<4x8xf32>
    %c = arch.concat %q, %k, %v {dim = 0 : i64} : (tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    arch.assign @qkv = %c : tensor<16x8xf32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x8xf32>) -> tensor<?x8xf32>
    %w = arch.param @qkv : tensor<16x8xf32>
    %p = arch.linear %x, %w : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
    %s:3 = arch.split %p : tensor<?x16xf32> -> tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>
    %kc = arch.cache_append @kc, %s#1 at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    %vc = arch.cache_append @vc, %s#2 at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    %a = arch.attention %s#0, %kc, %vc, %pos {head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
    %l = arch.last_token %a : tensor<?x8xf32> -> tensor<1x8xf32>
    %y = arch.linear %l, %e : (tensor<1x8xf32>, tensor<32x8xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

// Tiled attention: the same call, its block sizes in the description (a
// windowed, soft-capped GQA layer here).
// CHECK-LABEL: func.func @forward
// CHECK: archk.call "attention" {alibi = false, block_kv = 64 : i64, block_q = 32 : i64, head_dim = 4 : i64, heads = 2 : i64, kv = "f32", kv_by_head = true, kv_heads = 1 : i64, scale = 5.000000e-01 : f64, shaw_clip = 0 : i64, softcap = 3.000000e+01 : f64, split_kv = 256 : i64, t5_buckets = 0 : i64, t5_max_distance = 0 : i64, v_head_dim = 4 : i64, window = 4 : i64}({{.*}}, %arg1, {{.*}}) : memref<?x2x4xf32{{.*}}>, memref<?x1x4xf32{{.*}}>, memref<?x1x4xf32{{.*}}>, index, memref<?x2x4xf32>
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<32x8xf32>
  arch.weight @wk : tensor<4x8xf32>
  arch.cache @kc tokens 16 : tensor<1x4xf32>
  arch.cache @vc tokens 16 : tensor<1x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x8xf32>) -> tensor<?x8xf32>
    %w = arch.param @wk : tensor<4x8xf32>
    %k = arch.linear %x, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
    %kc = arch.cache_append @kc, %k at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    %vc = arch.cache_append @vc, %k at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    %a = arch.flash_attention %x, %kc, %vc, %pos {head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 1 : i64, scale = 0.5 : f64, softcap = 30.0 : f64, window = 4 : i64, block_q = 32 : i64, block_kv = 64 : i64, split_kv = 256 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
    %l = arch.last_token %a : tensor<?x8xf32> -> tensor<1x8xf32>
    %y = arch.linear %l, %e : (tensor<1x8xf32>, tensor<32x8xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

// Activations side by side (a parallel block's fused output projection):
// one buffer, each input copied into its columns. Weight-only work left in
// @forward (hoisting off) gets a buffer of fixed size.
// CHECK-LABEL: func.func @forward
// CHECK: %[[CAT:.*]] = memref.alloc(%{{.*}}) : memref<?x12xf32>
// CHECK-NEXT: %[[LEFT:.*]] = memref.subview %[[CAT]][0, 0] [%{{.*}}, 8] [1, 1]
// CHECK-NEXT: archk.call "copy" {store = "f32", width = 8 : i64}(%{{.*}}, %[[LEFT]])
// CHECK-NEXT: %[[RIGHT:.*]] = memref.subview %[[CAT]][0, 8] [%{{.*}}, 4] [1, 1] : memref<?x12xf32> to memref<?x4xf32, strided<[12, 1], offset: 8>>
// CHECK-NEXT: archk.call "copy" {store = "f32", width = 4 : i64}(%{{.*}}, %[[RIGHT]])
// CHECK: %[[SUM:.*]] = memref.alloc() : memref<32xf32>
// CHECK: archk.call "add" {width = 32 : i64}
// CHECK-SAME: memref<1x32xf32>, memref<1x32xf32>, memref<1x32xf32>
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<32x8xf32>
  arch.weight @wide : tensor<32x12xf32>
  arch.weight @b1 : tensor<32xf32>
  arch.weight @b2 : tensor<32xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x8xf32>) -> tensor<?x8xf32>
    %h:2 = arch.split %x : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
    %c = arch.concat %x, %h#1 {dim = 1 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x12xf32>
    %l = arch.last_token %c : tensor<?x12xf32> -> tensor<1x12xf32>
    %w = arch.param @wide : tensor<32x12xf32>
    %b1 = arch.param @b1 : tensor<32xf32>
    %b2 = arch.param @b2 : tensor<32xf32>
    %b = arch.add %b1, %b2 : tensor<32xf32>
    %y = arch.linear %l, %w, %b : (tensor<1x12xf32>, tensor<32x12xf32>, tensor<32xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  // expected-error @+1 {{'arch.cache' op is a state cache that 0 arch.linear_attention ops read, which has no lowering (one op per state)}}
  arch.cache @kc state : tensor<1x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
  arch.weight @emb : tensor<4x4xf32>
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.cache @kc tokens 16 : tensor<1x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %k = arch.cache_append @kc, %x at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    // expected-error @+1 {{'arch.attention' op reads keys or values that are not the context of an arch.cache_append, which has no lowering}}
    %a = arch.attention %x, %k, %x, %pos {head_dim = 4 : i64, n_heads = 1 : i64, n_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x4xf32>
    %l = arch.last_token %a : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.cache @kc tokens 16 : tensor<1x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %k = arch.cache_append @kc, %x at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    // expected-error @+1 {{'arch.cache_append' op appends to @kc a second time in one call}}
    %k2 = arch.cache_append @kc, %x at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// A KV cache is head-major: attention reads it as the heads of its rows.
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x8xf32>
  arch.cache @kc tokens 16 : tensor<1x8xf32>
  arch.cache @vc tokens 16 : tensor<1x8xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x8xf32> {
    %e = arch.param @emb : tensor<4x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    %k = arch.cache_append @kc, %x at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
    %v = arch.cache_append @vc, %x at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
    // expected-error @+1 {{'arch.attention' op reads 2 heads of 4 from cache @kc, whose rows are 'tensor<1x8xf32>': a KV cache's rows are [n_kv_heads, head_dim]}}
    %a = arch.attention %x, %k, %v, %pos {head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
    %l = arch.last_token %a : tensor<?x8xf32> -> tensor<1x8xf32>
    return %l : tensor<1x8xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  // expected-error @+1 {{'arch.weight' op is prepared but @prepare_params never assigns it}}
  arch.weight @never prepared : tensor<4x4xf32>
  func.func @prepare_params() {
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// expected-error @+1 {{module needs an arch.max_seq_len attribute in [1, 2147483647]}}
module {
  arch.weight @emb : tensor<4x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    // expected-error @+1 {{'arch.scale' op depends only on weights and has no lowering as weight preparation}}
    %s = arch.scale %e {factor = 2.0 : f32} : tensor<4x4xf32>
    %x = arch.embed %tokens, %s : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  // expected-error @+1 {{@forward has more than one block, which has no lowering}}
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  ^unreachable:
    %e2 = arch.param @emb : tensor<4x4xf32>
    %x2 = arch.embed %tokens, %e2 : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l2 = arch.last_token %x2 : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l2 : tensor<1x4xf32>
  }
}

// -----

// Functions other than @forward and @prepare_params are not part of the
// model: the conversion leaves them as they are. Logits that are a view
// (the last token itself) are copied into the logits argument.
// CHECK-LABEL: func.func @helper
// CHECK-NEXT: arch.scale
// CHECK-LABEL: func.func @forward
// CHECK-NOT: arch.
// CHECK: %[[LAST:.*]] = memref.subview
// CHECK-NEXT: archk.call "copy" {store = "f32", width = 4 : i64}(%[[LAST]], %arg2) : memref<?x4xf32, strided<[4, 1], offset: ?>>, memref<1x4xf32>
// CHECK-NEXT: return
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  func.func @helper(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %y = arch.scale %x {factor = 2.0 : f32} : tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.weight @twice prepared : tensor<4x4xf32>
  func.func @prepare_params() {
    %e = arch.param @emb : tensor<4x4xf32>
    arch.assign @twice = %e : tensor<4x4xf32>
    // expected-error @+1 {{'arch.assign' op assigns @twice twice}}
    arch.assign @twice = %e : tensor<4x4xf32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @twice : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.weight @scaled prepared : tensor<4x4xf32>
  func.func @prepare_params() {
    %e = arch.param @emb : tensor<4x4xf32>
    // expected-error @+1 {{'arch.scale' op has no lowering in @prepare_params}}
    %s = arch.scale %e {factor = 2.0 : f32} : tensor<4x4xf32>
    arch.assign @scaled = %s : tensor<4x4xf32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @scaled : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// expected-error @+1 {{module has prepared weights but no func.func @prepare_params}}
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb prepared : tensor<4x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    // expected-error @+1 {{'arith.constant' op has no lowering}}
    %c = arith.constant 1 : index
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.weight @cube : tensor<2x2x4xf32>
  arch.weight @cubes prepared : tensor<4x2x4xf32>
  func.func @prepare_params() {
    %c = arch.param @cube : tensor<2x2x4xf32>
    // expected-error @+1 {{'arch.concat' op of weights of rank 3 has no lowering}}
    %cc = arch.concat %c, %c {dim = 0 : i64} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<4x2x4xf32>
    arch.assign @cubes = %cc : tensor<4x2x4xf32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.weight @cube : tensor<2x2x4xf32>
  arch.weight @sum prepared : tensor<2x2x4xf32>
  func.func @prepare_params() {
    %c = arch.param @cube : tensor<2x2x4xf32>
    // expected-error @+1 {{'arch.add' op of rank above 2 has no lowering}}
    %s = arch.add %c, %c : tensor<2x2x4xf32>
    arch.assign @sum = %s : tensor<2x2x4xf32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.weight @copy prepared : tensor<4x4xf32>
  func.func @prepare_params() {
    %e = arch.param @emb : tensor<4x4xf32>
    arch.assign @copy = %e : tensor<4x4xf32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    // expected-error @+1 {{'arch.assign' op assigns a prepared weight in @forward: only @prepare_params does}}
    arch.assign @copy = %e : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.weight @s : tensor<f32>
  arch.weight @s2 prepared : tensor<f32>
  func.func @prepare_params() {
    // expected-error @+1 {{'arch.param' op reads or makes a rank-0 tensor, which has no lowering}}
    %s = arch.param @s : tensor<f32>
    %t = arch.add %s, %s : tensor<f32>
    arch.assign @s2 = %t : tensor<f32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.cache @kc tokens 16 : tensor<1x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    // expected-error @+1 {{'arch.cache_append' op has a context that arch.scale reads, which has no lowering (only attention's keys and values, and the splits, linears and head copies that make them from an f32 cache of 1-D rows, do)}}
    %k = arch.cache_append @kc, %x at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    %s = arch.scale %k {factor = 2.0 : f32} : tensor<?x4xf32>
    %a = arch.attention %x, %k, %k, %pos {head_dim = 4 : i64, n_heads = 1 : i64, n_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x4xf32>
    %l = arch.last_token %a : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.cache @kc tokens 16 : tensor<1x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    // expected-error @+1 {{'arch.cache_append' op has a context that arch.attention reads, which has no lowering (only attention's keys and values, and the splits, linears and head copies that make them from an f32 cache of 1-D rows, do)}}
    %k = arch.cache_append @kc, %x at %pos : tensor<?x4xf32> -> tensor<?x4xf32>
    %a = arch.attention %k, %k, %k, %pos {head_dim = 4 : i64, n_heads = 1 : i64, n_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x4xf32>
    %l = arch.last_token %a : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// A weight of rank 3 is copied as rows of its last dimension.
// CHECK-LABEL: func.func @prepare_params
// CHECK: %[[SRC:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK: %[[DST:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : memref<2x3x4xf32> into memref<6x4xf32>
// CHECK: archk.call "copy" {store = "f32", width = 4 : i64}(%[[SRC]], %[[DST]]) : memref<6x4xf32>, memref<6x4xf32>
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  arch.weight @cube : tensor<2x3x4xf32>
  arch.weight @cube2 prepared : tensor<2x3x4xf32>
  func.func @prepare_params() {
    %c = arch.param @cube : tensor<2x3x4xf32>
    arch.assign @cube2 = %c : tensor<2x3x4xf32>
    return
  }
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %c = arch.param @cube2 : tensor<2x3x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// A sliding window's ring cache: W = 6 positions kept, calls of at most 8
// rows, so C >= 6 + 8 - 1 = 13 rows, rounded to whole 4 KiB pages of
// 1 KiB rows: 16. Its buffer is the 2C rows the runtime maps twice; the
// rows go to pos mod C, the context is the last min(pos + T, C) positions
// from row (pos + T - kept) mod C.
// CHECK-LABEL: arch.cache @kc ring 16 : tensor<4x64xf32>
// CHECK-NEXT: arch.cache @vc ring 16 : tensor<4x64xf32>
// CHECK: %[[T:.*]] = memref.dim %arg0
// CHECK: %[[KC:.*]] = archk.cache @kc : memref<32x256xf32>
// CHECK-NEXT: %[[C:.*]] = arith.constant 16 : index
// CHECK-NEXT: %[[ROW:.*]] = arith.remui %arg1, %[[C]] : index
// CHECK-NEXT: %[[ROWS:.*]] = memref.subview %[[KC]][%[[ROW]], 0] [%[[T]], 256] [1, 1]
// CHECK-NEXT: archk.call "copy" {store = "f32", width = 256 : i64}(%{{.*}}, %[[ROWS]])
// CHECK-NEXT: %[[END:.*]] = arith.addi %arg1, %[[T]] : index
// CHECK-NEXT: %[[KEPT:.*]] = arith.minui %[[END]], %[[C]] : index
// CHECK-NEXT: %[[OLD:.*]] = arith.subi %[[END]], %[[KEPT]] : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.remui %[[OLD]], %[[C]] : index
// CHECK-NEXT: memref.subview %[[KC]][%[[FIRST]], 0] [%[[KEPT]], 256] [1, 1]
// CHECK: archk.call "attention"
module attributes {arch.max_seq_len = 64 : i64, arch.max_chunk = 8 : i64} {
  arch.weight @emb : tensor<32x256xf32>
  arch.cache @kc ring 6 : tensor<4x64xf32>
  arch.cache @vc ring 6 : tensor<4x64xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x256xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x256xf32>) -> tensor<?x256xf32>
    %kc = arch.cache_append @kc, %x at %pos : tensor<?x256xf32> -> tensor<?x256xf32>
    %vc = arch.cache_append @vc, %x at %pos : tensor<?x256xf32> -> tensor<?x256xf32>
    %a = arch.flash_attention %x, %kc, %vc, %pos {head_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, scale = 0.125 : f64, window = 6 : i64, block_q = 16 : i64, block_kv = 64 : i64, split_kv = 256 : i64} : (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, index) -> tensor<?x256xf32>
    %l = arch.last_token %a : tensor<?x256xf32> -> tensor<1x256xf32>
    %y = arch.linear %l, %e : (tensor<1x256xf32>, tensor<32x256xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

// A ring that would not be smaller than max_seq_len (6 + 256 - 1 rows at
// the default chunk, 64 positions): a tokens cache, head-major.
// CHECK-LABEL: arch.cache @kc tokens 64 : tensor<4x64xf32>
// CHECK: archk.cache @kc : memref<4x64x64xf32, strided<[?, 64, 1]>>
module attributes {arch.max_seq_len = 64 : i64} {
  arch.weight @emb : tensor<32x256xf32>
  arch.cache @kc ring 6 : tensor<4x64xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x256xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x256xf32>) -> tensor<?x256xf32>
    %kc = arch.cache_append @kc, %x at %pos : tensor<?x256xf32> -> tensor<?x256xf32>
    %a = arch.flash_attention %x, %kc, %kc, %pos {head_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, scale = 0.125 : f64, window = 6 : i64, block_q = 16 : i64, block_kv = 64 : i64, split_kv = 256 : i64} : (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, index) -> tensor<?x256xf32>
    %l = arch.last_token %a : tensor<?x256xf32> -> tensor<1x256xf32>
    %y = arch.linear %l, %e : (tensor<1x256xf32>, tensor<32x256xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 64 : i64} {
  arch.weight @emb : tensor<32x256xf32>
  arch.cache @kc ring 6 : tensor<4x64xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x256xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x256xf32>) -> tensor<?x256xf32>
    %kc = arch.cache_append @kc, %x at %pos : tensor<?x256xf32> -> tensor<?x256xf32>
    // expected-error @+1 {{'arch.attention' op attends to every position but reads ring caches that keep the last 6 positions}}
    %a = arch.attention %x, %kc, %kc, %pos {head_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, scale = 0.125 : f64} : (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, index) -> tensor<?x256xf32>
    %l = arch.last_token %a : tensor<?x256xf32> -> tensor<1x256xf32>
    %y = arch.linear %l, %e : (tensor<1x256xf32>, tensor<32x256xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 64 : i64} {
  arch.weight @emb : tensor<32x256xf32>
  arch.cache @kc ring 6 : tensor<4x64xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x256xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x256xf32>) -> tensor<?x256xf32>
    %kc = arch.cache_append @kc, %x at %pos : tensor<?x256xf32> -> tensor<?x256xf32>
    // expected-error @+1 {{'arch.attention' op attends to the last 8 positions but reads ring caches that keep the last 6 positions}}
    %a = arch.attention %x, %kc, %kc, %pos {head_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, scale = 0.125 : f64, window = 8 : i64} : (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, index) -> tensor<?x256xf32>
    %l = arch.last_token %a : tensor<?x256xf32> -> tensor<1x256xf32>
    %y = arch.linear %l, %e : (tensor<1x256xf32>, tensor<32x256xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

module attributes {arch.max_seq_len = 64 : i64} {
  arch.weight @emb : tensor<32x256xf32>
  arch.cache @kc ring 6 : tensor<4x64xf32>
  arch.cache @vc tokens 64 : tensor<4x64xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x32xf32> {
    %e = arch.param @emb : tensor<32x256xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<32x256xf32>) -> tensor<?x256xf32>
    %kc = arch.cache_append @kc, %x at %pos : tensor<?x256xf32> -> tensor<?x256xf32>
    %vc = arch.cache_append @vc, %x at %pos : tensor<?x256xf32> -> tensor<?x256xf32>
    // expected-error @+1 {{'arch.attention' op reads keys from a cache that keeps the last 6 positions and values from one that keeps every position, which has no lowering}}
    %a = arch.attention %x, %kc, %vc, %pos {head_dim = 64 : i64, n_heads = 4 : i64, n_kv_heads = 4 : i64, scale = 0.125 : f64, window = 6 : i64} : (tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, index) -> tensor<?x256xf32>
    %l = arch.last_token %a : tensor<?x256xf32> -> tensor<1x256xf32>
    %y = arch.linear %l, %e : (tensor<1x256xf32>, tensor<32x256xf32>) -> tensor<1x32xf32>
    return %y : tensor<1x32xf32>
  }
}

// -----

// expected-error @+1 {{module's arch.max_chunk must be an integer in [1, 2147483647], got 0 : i64}}
module attributes {arch.max_seq_len = 64 : i64, arch.max_chunk = 0 : i64} {
  arch.weight @emb : tensor<4x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %x : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// A head-major KV cache's context is read by attention only.
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x8xf32>
  arch.cache @kc tokens 16 : tensor<2x4xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    // expected-error @+1 {{'arch.cache_append' op has a context that arch.split reads, which has no lowering}}
    %k = arch.cache_append @kc, %x at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
    %a, %b = arch.split %k : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
    %l = arch.last_token %a : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// A latent cache's rows joined with a call's rows: not the same positions.
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x8xf32>
  arch.cache @lc tokens 16 : tensor<8xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x12xf32> {
    %e = arch.param @emb : tensor<4x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    %c = arch.cache_append @lc, %x at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
    %a, %b = arch.split %c : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
    // expected-error @+1 {{'arch.heads_concat' op joins the context of @lc with rows that are not, which has no lowering}}
    %j = arch.heads_concat %a, %x {heads = 1 : i64, input_heads = array<i64: 1, 1>} : (tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x12xf32>
    %l = arch.last_token %j : tensor<?x12xf32> -> tensor<1x12xf32>
    return %l : tensor<1x12xf32>
  }
}

// -----

// A 16-bit latent cache is read by attention only (the linear takes f32).
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x8xf32>
  arch.weight @w : tensor<4x8xf32>
  arch.cache @lc tokens 16 : tensor<8xf16>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    // expected-error @+1 {{'arch.cache_append' op has a context that arch.linear reads, which has no lowering}}
    %c = arch.cache_append @lc, %x at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
    %w = arch.param @w : tensor<4x8xf32>
    %y = arch.linear %c, %w : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %y : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
}

// -----

// Nor by a linear with a residual: its output has the context's pos + T
// rows, the residual the call's T.
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @emb : tensor<4x8xf32>
  arch.weight @w : tensor<8x8xf32>
  arch.cache @lc tokens 16 : tensor<8xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x8xf32> {
    %e = arch.param @emb : tensor<4x8xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x8xf32>) -> tensor<?x8xf32>
    // expected-error @+1 {{'arch.cache_append' op has a context that arch.linear reads, which has no lowering}}
    %c = arch.cache_append @lc, %x at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
    %w = arch.param @w : tensor<8x8xf32>
    %y = arch.linear %c, %w residual %x : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    %l = arch.last_token %y : tensor<?x8xf32> -> tensor<1x8xf32>
    return %l : tensor<1x8xf32>
  }
}

// -----

// Two linear attentions would share one state: the second would read it
// before the first's update.
module attributes {arch.max_seq_len = 16 : i64} {
  // expected-error @+1 {{'arch.cache' op is a state cache that 2 arch.linear_attention ops read, which has no lowering (one op per state)}}
  arch.cache @s state : tensor<1x4x5xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %a = arch.linear_attention elu1 @s, %x, %x, %x {n_heads = 1, n_kv_heads = 1, head_dim = 4, normalize, scale = 0.5 : f64} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %b = arch.linear_attention elu1 @s, %a, %a, %a {n_heads = 1, n_kv_heads = 1, head_dim = 4, normalize, scale = 0.5 : f64} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %b : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
  arch.weight @emb : tensor<4x4xf32>
}

// -----

// The outputs from the state, then the state updated in place.
// CHECK-LABEL: module @linear
// CHECK: %[[S:.*]] = archk.cache @s : memref<1x4x5xf32>
// CHECK: archk.call "linear_attention" {chunk = 8 : i64, head_dim = 4 : i64, heads = 1 : i64, kv_heads = 1 : i64, map = "relu", normalize = true, scale = 5.000000e-01 : f64, v_head_dim = 4 : i64}({{.*}}, %[[S]], %{{.*}})
// CHECK-NEXT: archk.call "linear_state" {head_dim = 4 : i64, kv_heads = 1 : i64, map = "relu", normalize = true, v_head_dim = 4 : i64}(%{{.*}}, %{{.*}}, %[[S]], %[[S]])
module @linear attributes {arch.max_seq_len = 16 : i64} {
  arch.cache @s state : tensor<1x4x5xf32>
  func.func @forward(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x4xf32> {
    %e = arch.param @emb : tensor<4x4xf32>
    %x = arch.embed %tokens, %e : (tensor<?xi32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    %a = arch.linear_attention relu @s, %x, %x, %x {n_heads = 1, n_kv_heads = 1, head_dim = 4, normalize, scale = 0.5 : f64, chunk = 8} : (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %l = arch.last_token %a : tensor<?x4xf32> -> tensor<1x4xf32>
    return %l : tensor<1x4xf32>
  }
  arch.weight @emb : tensor<4x4xf32>
}
