// RUN: arch-opt %s -split-input-file | arch-opt -split-input-file | FileCheck %s
// Every op prints and parses back to itself.

arch.weight @emb : tensor<16x8xf32>
arch.weight @"layers.0.norm" : tensor<8xf32>
arch.weight @wq : tensor<8x8xf32>
arch.weight @wk : tensor<4x8xf32>
arch.weight @bias : tensor<4xf32>
// CHECK-LABEL: func.func @block
func.func @block(%tokens: tensor<?xi32>, %pos: index) -> tensor<1x16xf32> {
  // CHECK: %[[E:.*]] = arch.param @emb : tensor<16x8xf32>
  %emb = arch.param @emb : tensor<16x8xf32>
  // CHECK: %[[X:.*]] = arch.embed %{{.*}}, %[[E]] {scale = 2.000000e+00 : f32} : (tensor<?xi32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %x = arch.embed %tokens, %emb {scale = 2.0 : f32} : (tensor<?xi32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %nw = arch.param @"layers.0.norm" : tensor<8xf32>
  // CHECK: arch.norm rms %[[X]], %{{.*}} {eps = 9.99999974E-6 : f32}
  %h = arch.norm rms %x, %nw {eps = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wq = arch.param @wq : tensor<8x8xf32>
  %wk = arch.param @wk : tensor<4x8xf32>
  %b = arch.param @bias : tensor<4xf32>
  // CHECK: arch.linear %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %q = arch.linear %h, %wq : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  // CHECK: arch.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %k = arch.linear %h, %wk, %b : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: arch.rope interleaved %{{.*}}, %{{.*}} {head_dim = 4 : i64, n_heads = 2 : i64, rotary_dim = 2 : i64, theta = 1.000000e+04 : f64}
  %qr = arch.rope interleaved %q, %pos {n_heads = 2, head_dim = 4, rotary_dim = 2, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  // CHECK: arch.rope half_split
  %kr = arch.rope half_split %k, %pos {n_heads = 1, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x4xf32>, index) -> tensor<?x4xf32>
  // CHECK: arch.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 1 : i64, scale = 5.000000e-01 : f64}
  %a = arch.attention %qr, %kr, %k, %pos {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  // CHECK: arch.glu silu %{{.*}}, %{{.*}} : tensor<?x8xf32>
  %g = arch.glu silu %a, %q : tensor<?x8xf32>
  // CHECK: arch.add %{{.*}}, %{{.*}} : tensor<?x8xf32>
  %y = arch.add %x, %g : tensor<?x8xf32>
  // CHECK: arch.last_token %{{.*}} : tensor<?x8xf32> -> tensor<1x8xf32>
  %l = arch.last_token %y : tensor<?x8xf32> -> tensor<1x8xf32>
  // CHECK: arch.last_position %{{.*}}, %{{.*}} : tensor<?x8xf32>
  %lp = arch.last_position %y, %pos : tensor<?x8xf32>
  %logits = arch.linear %l, %emb : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
  return %logits : tensor<1x16xf32>
}

// -----
arch.weight @w : tensor<8xf32>
arch.weight @b : tensor<8xf32>
arch.weight @positions : tensor<34x8xf32>
// CHECK-LABEL: func.func @dense_options
func.func @dense_options(%x: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %w = arch.param @w : tensor<8xf32>
  %b = arch.param @b : tensor<8xf32>
  %table = arch.param @positions : tensor<34x8xf32>
  // CHECK: arch.pos_embed learned %{{.*}}, %{{.*}}, %{{.*}} {offset = 2 : i64} : (tensor<?x8xf32>, index, tensor<34x8xf32>) -> tensor<?x8xf32>
  %p = arch.pos_embed learned %x, %pos, %table {offset = 2} : (tensor<?x8xf32>, index, tensor<34x8xf32>) -> tensor<?x8xf32>
  // CHECK: arch.pos_embed sinusoidal %{{.*}}, %{{.*}} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %s = arch.pos_embed sinusoidal %p, %pos : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  // CHECK: arch.norm layer %{{.*}}, %{{.*}}, %{{.*}} {eps = 9.99999974E-6 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %n = arch.norm layer %s, %w, %b {eps = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: arch.activation gelu_tanh %{{.*}} : tensor<?x8xf32>
  %a = arch.activation gelu_tanh %n : tensor<?x8xf32>
  // CHECK: arch.activation squared_relu
  %r = arch.activation squared_relu %a : tensor<?x8xf32>
  // CHECK: arch.glu identity
  %g = arch.glu identity %r, %a : tensor<?x8xf32>
  return %g : tensor<?x8xf32>
}

// -----
// CHECK-LABEL: func.func @stability
func.func @stability(%q: tensor<?x8xf32>, %k: tensor<?x4xf32>, %pos: index, %l: tensor<1x16xf32>) -> tensor<1x16xf32> {
  // CHECK: arch.attention {{.*}} {alibi, head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 1 : i64, scale = 5.000000e-01 : f64, softcap = 5.000000e+01 : f64}
  %a = arch.attention %q, %k, %k, %pos {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5, softcap = 50.0, alibi} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  // CHECK: arch.softcap %{{.*}} {cap = 3.000000e+01 : f32} : tensor<1x16xf32>
  %c = arch.softcap %l {cap = 30.0 : f32} : tensor<1x16xf32>
  return %c : tensor<1x16xf32>
}

// -----
arch.weight @rel : tensor<32x2xf32>
// CHECK-LABEL: func.func @t5_bias
func.func @t5_bias(%q: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %t = arch.param @rel : tensor<32x2xf32>
  // CHECK: arch.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} {head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 2 : i64, scale = 1.000000e+00 : f64}
  %a = arch.attention %q, %q, %q, %pos bias %t {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 1.0} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index, tensor<32x2xf32>) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----
arch.weight @rk : tensor<5x4xf32>
arch.weight @rv : tensor<5x4xf32>
// CHECK-LABEL: func.func @shaw
func.func @shaw(%q: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %rk = arch.param @rk : tensor<5x4xf32>
  %rv = arch.param @rv : tensor<5x4xf32>
  // CHECK: arch.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} shaw %{{.*}}, %{{.*}} {head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 2 : i64, scale = 5.000000e-01 : f64, shaw_clip = 2 : i64}
  %a = arch.attention %q, %q, %q, %pos shaw %rk, %rv {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5, shaw_clip = 2} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----
// CHECK-LABEL: func.func @scale
func.func @scale(%l: tensor<1x16xf32>) -> tensor<1x16xf32> {
  // CHECK: arch.scale %{{.*}} {factor = 6.250000e-02 : f32} : tensor<1x16xf32>
  %s = arch.scale %l {factor = 0.0625 : f32} : tensor<1x16xf32>
  return %s : tensor<1x16xf32>
}

// -----
// Weights kept elsewhere in a checkpoint: renamed, fused, transposed.
// CHECK: arch.weight @wte from "transformer.wte.weight" [8, 4] : tensor<8x4xf32>
arch.weight @wte from "transformer.wte.weight" [8, 4] : tensor<8x4xf32>
// CHECK: arch.weight @k from "h.0.attn.c_attn.weight" [4, 12] transposed rows [1, 12, 4, 4] : tensor<4x4xf32>
arch.weight @k from "h.0.attn.c_attn.weight" [4, 12] transposed rows [1, 12, 4, 4] : tensor<4x4xf32>
// CHECK: arch.weight @kb from "qkv.bias" [12] rows [2, 6, 2, 1] : tensor<2xf32>
arch.weight @kb from "qkv.bias" [12] rows [2, 6, 2, 1] : tensor<2xf32>
// CHECK-LABEL: func.func @param_sources
func.func @param_sources() -> (tensor<8x4xf32>, tensor<4x4xf32>, tensor<2xf32>) {
  // CHECK: arch.param @wte : tensor<8x4xf32>
  %e = arch.param @wte : tensor<8x4xf32>
  %k = arch.param @k : tensor<4x4xf32>
  %b = arch.param @kb : tensor<2xf32>
  return %e, %k, %b : tensor<8x4xf32>, tensor<4x4xf32>, tensor<2xf32>
}

// -----
// Prepared weights, their assignment, concatenation and column views.
// CHECK: arch.weight @wq : tensor<4x8xf32>
arch.weight @wq : tensor<4x8xf32>
arch.weight @wk : tensor<2x8xf32>
// CHECK: arch.weight @"{wq,wk}" prepared : tensor<6x8xf32>
arch.weight @"{wq,wk}" prepared : tensor<6x8xf32>
// CHECK-LABEL: func.func @prepare_params
func.func @prepare_params() {
  %q = arch.param @wq : tensor<4x8xf32>
  %k = arch.param @wk : tensor<2x8xf32>
  // CHECK: %[[C:.*]] = arch.concat %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<6x8xf32>
  %c = arch.concat %q, %k {dim = 0 : i64} : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<6x8xf32>
  // CHECK: arch.assign @"{wq,wk}" = %[[C]] : tensor<6x8xf32>
  arch.assign @"{wq,wk}" = %c : tensor<6x8xf32>
  return
}
// CHECK-LABEL: func.func @views
func.func @views(%x: tensor<?x8xf32>) -> tensor<?x2xf32> {
  %w = arch.param @"{wq,wk}" : tensor<6x8xf32>
  // CHECK: %[[P:.*]] = arch.pack %{{.*}} {panel = 4 : i64} : tensor<6x8xf32> -> tensor<2x8x4xf32>
  %p = arch.pack %w {panel = 4 : i64} : tensor<6x8xf32> -> tensor<2x8x4xf32>
  // CHECK: arch.linear %{{.*}}, %[[P]] : (tensor<?x8xf32>, tensor<2x8x4xf32>) -> tensor<?x6xf32>
  %y = arch.linear %x, %p : (tensor<?x8xf32>, tensor<2x8x4xf32>) -> tensor<?x6xf32>
  // In bf16 pairs for the bf16 dot product.
  // CHECK: %[[Q:.*]] = arch.pack %{{.*}} {panel = 4 : i64} : tensor<6x8xf32> -> tensor<2x4x4x2xbf16>
  %pp = arch.pack %w {panel = 4 : i64} : tensor<6x8xf32> -> tensor<2x4x4x2xbf16>
  // CHECK: arch.linear %{{.*}}, %[[Q]] : (tensor<?x8xf32>, tensor<2x4x4x2xbf16>) -> tensor<?x6xf32>
  %z = arch.linear %x, %pp : (tensor<?x8xf32>, tensor<2x4x4x2xbf16>) -> tensor<?x6xf32>
  // CHECK: %{{.*}}:2 = arch.split %{{.*}} : tensor<?x6xf32> -> tensor<?x4xf32>, tensor<?x2xf32>
  %q, %k = arch.split %y : tensor<?x6xf32> -> tensor<?x4xf32>, tensor<?x2xf32>
  return %k : tensor<?x2xf32>
}

// -----
// Caches: a KV cache per stream (keys and values may differ in head dim),
// a latent cache, a ring of the last `window` positions, a fixed-size
// recurrent state; appending rows returns the context attention reads.
// CHECK: arch.cache @k tokens 16 : tensor<2x4xf32>
arch.cache @k tokens 16 : tensor<2x4xf32>
// CHECK: arch.cache @v tokens 16 : tensor<2x3xf32>
arch.cache @v tokens 16 : tensor<2x3xf32>
// CHECK: arch.cache @latent tokens 16 : tensor<6xbf16>
arch.cache @latent tokens 16 : tensor<6xbf16>
// CHECK: arch.cache @window ring 4 : tensor<2x4xf16>
arch.cache @window ring 4 : tensor<2x4xf16>
// CHECK: arch.cache @state state : tensor<2x4x4xf32>
arch.cache @state state : tensor<2x4x4xf32>
// CHECK-LABEL: func.func @append
func.func @append(%k: tensor<?x8xf32>, %v: tensor<?x6xf32>, %pos: index) -> tensor<?x6xf32> {
  // CHECK: %[[K:.*]] = arch.cache_append @k, %{{.*}} at %{{.*}} : tensor<?x8xf32> -> tensor<?x8xf32>
  %kc = arch.cache_append @k, %k at %pos : tensor<?x8xf32> -> tensor<?x8xf32>
  // CHECK: arch.cache_append @window, %{{.*}} at %{{.*}} : tensor<?x8xf32> -> tensor<4x8xf32>
  %wc = arch.cache_append @window, %k at %pos : tensor<?x8xf32> -> tensor<4x8xf32>
  // CHECK: arch.cache_append @v, %{{.*}} at %{{.*}} : tensor<?x6xf32> -> tensor<?x6xf32>
  %vc = arch.cache_append @v, %v at %pos : tensor<?x6xf32> -> tensor<?x6xf32>
  return %vc : tensor<?x6xf32>
}

// -----
// The tiled form prints and parses like arch.attention, its blocks among
// the attributes.
// CHECK-LABEL: func.func @flash
func.func @flash(%q: tensor<?x8xf32>, %k: tensor<?x4xf32>, %pos: index) -> tensor<?x8xf32> {
  // CHECK: arch.flash_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {block_kv = 64 : i64, block_q = 32 : i64, head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 1 : i64, scale = 5.000000e-01 : f64, split_kv = 256 : i64, window = 3 : i64}
  %a = arch.flash_attention %q, %k, %k, %pos {n_heads = 2, n_kv_heads = 1, head_dim = 4, scale = 0.5, window = 3, block_q = 32, block_kv = 64, split_kv = 256} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// -----
// Multi-head latent attention's ops: per-head splits and joins (a
// one-head input shared by every head), per-head linears in both weight
// layouts, attention with value heads narrower than key heads.
// CHECK-LABEL: func.func @latent
func.func @latent(%q: tensor<?x48xf32>, %kr: tensor<?x4xf32>, %lat: tensor<?x16xf32>, %wk: tensor<32x16xf32>, %wv: tensor<24x16xf32>, %pos: index) -> tensor<?x24xf32> {
  // CHECK: %[[S:.*]]:2 = arch.heads_split %{{.*}} {heads = 4 : i64} : tensor<?x48xf32> -> tensor<?x32xf32>, tensor<?x16xf32>
  %qn, %qr = arch.heads_split %q {heads = 4 : i64} : tensor<?x48xf32> -> tensor<?x32xf32>, tensor<?x16xf32>
  // CHECK: %[[L:.*]] = arch.head_linear %[[S]]#0, %{{.*}} {heads = 4 : i64, k_major} : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x64xf32>
  %ql = arch.head_linear %qn, %wk {heads = 4 : i64, k_major} : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x64xf32>
  // CHECK: %[[Q:.*]] = arch.heads_concat %[[L]], %[[S]]#1 {heads = 4 : i64, input_heads = array<i64: 4, 4>} : (tensor<?x64xf32>, tensor<?x16xf32>) -> tensor<?x80xf32>
  %q2 = arch.heads_concat %ql, %qr {heads = 4 : i64, input_heads = array<i64: 4, 4>} : (tensor<?x64xf32>, tensor<?x16xf32>) -> tensor<?x80xf32>
  // CHECK: %[[K:.*]] = arch.heads_concat %{{.*}}, %{{.*}} {heads = 1 : i64, input_heads = array<i64: 1, 1>} : (tensor<?x16xf32>, tensor<?x4xf32>) -> tensor<?x20xf32>
  %k = arch.heads_concat %lat, %kr {heads = 1 : i64, input_heads = array<i64: 1, 1>} : (tensor<?x16xf32>, tensor<?x4xf32>) -> tensor<?x20xf32>
  // CHECK: %[[O:.*]] = arch.attention %[[Q]], %[[K]], %{{.*}}, %{{.*}} {head_dim = 20 : i64, n_heads = 4 : i64, n_kv_heads = 1 : i64, scale = 5.000000e-01 : f64, v_head_dim = 16 : i64} : (tensor<?x80xf32>, tensor<?x20xf32>, tensor<?x16xf32>, index) -> tensor<?x64xf32>
  %o = arch.attention %q2, %k, %lat, %pos {n_heads = 4, n_kv_heads = 1, head_dim = 20, v_head_dim = 16, scale = 0.5} : (tensor<?x80xf32>, tensor<?x20xf32>, tensor<?x16xf32>, index) -> tensor<?x64xf32>
  // CHECK: arch.head_linear %[[O]], %{{.*}} {heads = 4 : i64} : (tensor<?x64xf32>, tensor<24x16xf32>) -> tensor<?x24xf32>
  %a = arch.head_linear %o, %wv {heads = 4 : i64} : (tensor<?x64xf32>, tensor<24x16xf32>) -> tensor<?x24xf32>
  return %a : tensor<?x24xf32>
}

// -----

// Differential attention's two maps combined.
// CHECK-LABEL: func.func @differential
func.func @differential(%a: tensor<?x64xf32>, %b: tensor<?x64xf32>, %l: tensor<8xf32>) -> tensor<?x64xf32> {
  // CHECK: arch.differential %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {lambda_init = 2.000000e-01 : f64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x64xf32>
  %d = arch.differential %a, %b, %l, %l, %l, %l {lambda_init = 0.2 : f64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x64xf32>
  return %d : tensor<?x64xf32>
}

// -----

// CHECK: arch.cache @state state : tensor<2x8x9xf32>
arch.cache @state state : tensor<2x8x9xf32>
// CHECK-LABEL: func.func @linear_attention
func.func @linear_attention(%q: tensor<?x32xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>) -> tensor<?x32xf32> {
  // CHECK: arch.linear_attention elu1 @state, %{{.*}}, %{{.*}}, %{{.*}} {chunk = 64 : i64, head_dim = 8 : i64, n_heads = 4 : i64, n_kv_heads = 2 : i64, normalize, scale = 2.500000e-01 : f64} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  %a = arch.linear_attention elu1 @state, %q, %k, %v {n_heads = 4, n_kv_heads = 2, head_dim = 8, normalize, scale = 0.25 : f64, chunk = 64} : (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}
