// RUN: arch-opt %s -split-input-file -verify-diagnostics

func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'archk.call' op has no kernel kind 'matmul'}}
  archk.call "matmul" {width = 8 : i64}(%a, %b) : memref<4x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'copy' lacks 'width'}}
  archk.call "copy" {}(%a, %b) : memref<4x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'copy' has 'width' that is not an integer}}
  archk.call "copy" {store = "f32", width = 8.0 : f64}(%a, %b) : memref<4x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'copy' has fields the kind does not have}}
  archk.call "copy" {store = "f32", width = 8 : i64, factor = 2.0 : f64}(%a, %b) : memref<4x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'activation' has 'activation' = "swish", which is none of its values}}
  archk.call "activation" {width = 8 : i64, activation = "swish"}(%a, %b) : memref<4x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @f(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'archk.call' op passes 3 arguments to a 'copy' kernel, which takes 2}}
  archk.call "copy" {store = "f32", width = 8 : i64}(%a, %a, %b) : memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>
  return
}

// -----

func.func @f(%a: memref<4x2x4xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'archk.call' op argument 0 ('a') is 'memref<4x2x4xf32>', but the kernel takes a memref of the declared element type and rank (f32, 2)}}
  archk.call "copy" {store = "f32", width = 8 : i64}(%a, %b) : memref<4x2x4xf32>, memref<4x8xf32>
  return
}

// -----

func.func @f(%x: memref<4x2x8xf32>, %pos: i32, %out: memref<4x2x8xf32>) {
  // expected-error @+1 {{'archk.call' op argument 1 ('pos') is 'i32', but the kernel takes index}}
  archk.call "rope" {attention_factor = 1.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64, factor = 1.0 : f64, factors = array<f64>, head_dim = 8 : i64, heads = 2 : i64, high_freq_factor = 4.0 : f64, low_freq_factor = 1.0 : f64, mscale = 1.0 : f64, mscale_all_dim = 0.0 : f64, original_max_seq_len = 0 : i64, rotary_dim = 8 : i64, scaling = "none", style = "interleaved", theta = 10000.0 : f64}(%x, %pos, %out) : memref<4x2x8xf32>, i32, memref<4x2x8xf32>
  return
}

// -----

module {
  arch.weight @w : tensor<16x8xf32>
  func.func @f() {
    // expected-error @+1 {{'archk.weight' op has type 'memref<8x16xf32>', not a dense buffer of the weight's type 'tensor<16x8xf32>'}}
    %w = archk.weight @w : memref<8x16xf32>
    return
  }
}

// -----

module {
  func.func @f() {
    // expected-error @+1 {{'archk.weight' op names @nowhere, which is no arch.weight of the module}}
    %w = archk.weight @nowhere : memref<8x16xf32>
    return
  }
}

// -----

module {
  arch.cache @c tokens 32 : tensor<2x4xf32>
  func.func @f() {
    // expected-error @+1 {{'archk.cache' op has type 'memref<32x4xf32>' but the cache holds 32 rows of 8 'f32'}}
    %c = archk.cache @c : memref<32x4xf32>
    return
  }
}

// -----

// A KV cache's head-major buffer: the head stride is the sequence's.
module {
  arch.cache @c tokens 32 : tensor<2x4xf32>
  func.func @f() {
    // expected-error @+1 {{'archk.cache' op has type 'memref<2x32x4xf32>' but the cache is 'memref<2x32x4xf32, strided<[?, 4, 1]>>' (head-major)}}
    %c = archk.cache @c : memref<2x32x4xf32>
    return
  }
}

// -----

func.func @f(%x: memref<4x8xf32>, %w: memref<16x8xf32>, %out: memref<4x16xf32>) {
  // The first problem, in field order, is the one reported.
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has 'K' that is not an integer}}
  archk.call "linear" {K = 8.0 : f64, bias = false, one_row = false, panel = 0 : i64}(%x, %w, %out) : memref<4x8xf32>, memref<16x8xf32>, memref<4x16xf32>
  return
}

// -----

module {
  arch.weight @w : tensor<16x8xf32>
  func.func @f() {
    // expected-error @+1 {{'archk.weight' op has type 'memref<16x8xf32, strided<[1, 16]>>', not a dense buffer of the weight's type 'tensor<16x8xf32>'}}
    %w = archk.weight @w : memref<16x8xf32, strided<[1, 16]>>
    return
  }
}

// -----

// A cache's buffer has the cache's element type; a ring's rows are
// mapped twice.
module {
  arch.cache @kc ring 32 : tensor<2x4xbf16>
  func.func @cache_type() {
    // expected-error @+1 {{'archk.cache' op has type 'memref<64x8xf32>' but the cache holds 64 rows of 8 'bf16'}}
    %c = archk.cache @kc : memref<64x8xf32>
    return
  }
}

// -----

// A linear reads a 16-bit packed weight only when its description names
// the weight type (and a pack writes one only when it names `store`).
func.func @linear_weight_type(%x: memref<?x8xf32>, %w: memref<1x8x64xbf16>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op argument 1 ('weight') is 'memref<1x8x64xbf16>', but the kernel takes a memref of the declared element type and rank (f32, 3)}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 64 : i64}(%x, %w, %o) : memref<?x8xf32>, memref<1x8x64xbf16>, memref<?x16xf32>
  return
}

// -----

// A linear's glu epilogue takes no bias (arch.linear's rule, checked in
// the kernel description too).
func.func @linear_glu_bias(%x: memref<?x8xf32>, %w: memref<1x8x64xf32>, %b: memref<16xf32>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has a glu epilogue and a bias or a residual}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, activation = "silu", bias = true, glu = true, one_row = false, panel = 64 : i64}(%x, %w, %b, %o) : memref<?x8xf32>, memref<1x8x64xf32>, memref<16xf32>, memref<?x16xf32>
  return
}

// -----

// A rope epilogue's heads are whole heads of N, and within it.
func.func @linear_rope_heads(%x: memref<?x8xf32>, %w: memref<1x8x64xf32>, %p: index, %o: memref<?x3x4xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has a rope epilogue whose heads are not within whole heads and panels of N, or beside a glu or residual epilogue}}
  archk.call "linear" {K = 8 : i64, N = 12 : i64, bias = false, one_row = false, panel = 64 : i64, rope_attention_factor = 1.0 : f64, rope_beta_fast = 32.0 : f64, rope_beta_slow = 1.0 : f64, rope_factor = 1.0 : f64, rope_factors = array<f64>, rope_head_dim = 4 : i64, rope_heads = 4 : i64, rope_high_freq_factor = 4.0 : f64, rope_low_freq_factor = 1.0 : f64, rope_mscale = 1.0 : f64, rope_mscale_all_dim = 0.0 : f64, rope_original_max_seq_len = 0 : i64, rope_rotary_dim = 4 : i64, rope_scaling = "none", rope_style = "interleaved", rope_theta = 10000.0 : f64}(%x, %w, %p, %o) : memref<?x8xf32>, memref<1x8x64xf32>, index, memref<?x3x4xf32>
  return
}

// -----

// Whole panels: the epilogue's tasks are whole heads and panels (96
// columns are one and a half of 64).
func.func @linear_rope_panels(%x: memref<?x8xf32>, %w: memref<2x8x64xf32>, %p: index, %o: memref<?x6x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has a rope epilogue whose heads are not within whole heads and panels of N, or beside a glu or residual epilogue}}
  archk.call "linear" {K = 8 : i64, N = 96 : i64, bias = false, one_row = false, panel = 64 : i64, rope_attention_factor = 1.0 : f64, rope_beta_fast = 32.0 : f64, rope_beta_slow = 1.0 : f64, rope_factor = 1.0 : f64, rope_factors = array<f64>, rope_head_dim = 16 : i64, rope_heads = 5 : i64, rope_high_freq_factor = 4.0 : f64, rope_low_freq_factor = 1.0 : f64, rope_mscale = 1.0 : f64, rope_mscale_all_dim = 0.0 : f64, rope_original_max_seq_len = 0 : i64, rope_rotary_dim = 16 : i64, rope_scaling = "none", rope_style = "interleaved", rope_theta = 10000.0 : f64}(%x, %w, %p, %o) : memref<?x8xf32>, memref<2x8x64xf32>, index, memref<?x6x16xf32>
  return
}

// -----

// Nor beside a glu epilogue (arch.rope's epilogue verifier's rule too).
func.func @linear_rope_glu(%x: memref<?x8xf32>, %w: memref<2x8x64xf32>, %p: index, %o: memref<?x4x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has a rope epilogue whose heads are not within whole heads and panels of N, or beside a glu or residual epilogue}}
  archk.call "linear" {K = 8 : i64, N = 64 : i64, activation = "silu", bias = false, glu = true, one_row = false, panel = 64 : i64, rope_attention_factor = 1.0 : f64, rope_beta_fast = 32.0 : f64, rope_beta_slow = 1.0 : f64, rope_factor = 1.0 : f64, rope_factors = array<f64>, rope_head_dim = 16 : i64, rope_heads = 4 : i64, rope_high_freq_factor = 4.0 : f64, rope_low_freq_factor = 1.0 : f64, rope_mscale = 1.0 : f64, rope_mscale_all_dim = 0.0 : f64, rope_original_max_seq_len = 0 : i64, rope_rotary_dim = 16 : i64, rope_scaling = "none", rope_style = "interleaved", rope_theta = 10000.0 : f64}(%x, %w, %p, %o) : memref<?x8xf32>, memref<2x8x64xf32>, index, memref<?x4x16xf32>
  return
}

// -----

// Its rotation is checked as a RoPE kernel's.
func.func @linear_rope_odd(%x: memref<?x8xf32>, %w: memref<1x8x64xf32>, %p: index, %o: memref<?x16x4xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has a rotary_dim that is not even and in (0, head_dim]}}
  archk.call "linear" {K = 8 : i64, N = 64 : i64, bias = false, one_row = false, panel = 64 : i64, rope_attention_factor = 1.0 : f64, rope_beta_fast = 32.0 : f64, rope_beta_slow = 1.0 : f64, rope_factor = 1.0 : f64, rope_factors = array<f64>, rope_head_dim = 4 : i64, rope_heads = 1 : i64, rope_high_freq_factor = 4.0 : f64, rope_low_freq_factor = 1.0 : f64, rope_mscale = 1.0 : f64, rope_mscale_all_dim = 0.0 : f64, rope_original_max_seq_len = 0 : i64, rope_rotary_dim = 3 : i64, rope_scaling = "none", rope_style = "interleaved", rope_theta = 10000.0 : f64}(%x, %w, %p, %o) : memref<?x8xf32>, memref<1x8x64xf32>, index, memref<?x16x4xf32>
  return
}

// -----

// Nor a residual (arch.linear's rule too).
func.func @linear_glu_residual(%x: memref<?x8xf32>, %w: memref<1x8x64xf32>, %r: memref<?x16xf32>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has a glu epilogue and a bias or a residual}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, activation = "silu", bias = false, glu = true, one_row = false, panel = 64 : i64, residual = true}(%x, %w, %r, %o) : memref<?x8xf32>, memref<1x8x64xf32>, memref<?x16xf32>, memref<?x16xf32>
  return
}

// -----

// A residual linear takes the residual before its output.
func.func @linear_residual_args(%x: memref<?x8xf32>, %w: memref<1x8x64xf32>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op passes 3 arguments to a 'linear' kernel, which takes 4}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 64 : i64, residual = true}(%x, %w, %o) : memref<?x8xf32>, memref<1x8x64xf32>, memref<?x16xf32>
  return
}

// -----

func.func @pack_store(%w: memref<16x8xf32>, %o: memref<1x8x64xf32>) {
  // expected-error @+1 {{'archk.call' op argument 1 ('out') is 'memref<1x8x64xf32>', but the kernel takes a memref of the declared element type and rank (bf16, 3)}}
  archk.call "pack" {K = 8 : i64, N = 16 : i64, groups = 1 : i64, panel = 64 : i64, store = "bf16"}(%w, %o) : memref<16x8xf32>, memref<1x8x64xf32>
  return
}

// -----

func.func @linear_weight_unpacked(%x: memref<?x8xf32>, %w: memref<16x8xbf16>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has a weight type other than f32 without panels, or i32}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 0 : i64, weight = "bf16"}(%x, %w, %o) : memref<?x8xf32>, memref<16x8xbf16>, memref<?x16xf32>
  return
}

// -----

func.func @linear_pairs_f32(%x: memref<?x8xf32>, %w: memref<1x4x128xf32>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has pairs without bf16 panels of an even K}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 64 : i64, pairs = true}(%x, %w, %o) : memref<?x8xf32>, memref<1x4x128xf32>, memref<?x16xf32>
  return
}

// -----

func.func @pack_pairs_odd(%w: memref<16x7xf32>, %o: memref<1x7x64xbf16>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'pack' has pairs without bf16 panels of an even K}}
  archk.call "pack" {K = 7 : i64, N = 16 : i64, groups = 1 : i64, panel = 64 : i64, store = "bf16", pairs = true}(%w, %o) : memref<16x7xf32>, memref<1x7x64xbf16>
  return
}

// -----

func.func @pack_store_i32(%w: memref<16x8xf32>, %o: memref<1x8x64xi32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'pack' stores i32}}
  archk.call "pack" {K = 8 : i64, N = 16 : i64, groups = 1 : i64, panel = 64 : i64, store = "i32"}(%w, %o) : memref<16x8xf32>, memref<1x8x64xi32>
  return
}

// -----

// Attention reads keys and values of the element type its description
// names.
func.func @attention_kv_type(%q: memref<?x2x4xf32>, %k: memref<?x1x4xf32>, %p: index, %o: memref<?x2x4xf32>) {
  // expected-error @+1 {{'archk.call' op argument 1 ('k') is 'memref<?x1x4xf32>', but the kernel takes a memref of the declared element type and rank (f16, 3)}}
  archk.call "attention" {alibi = false, block_kv = 0 : i64, block_q = 0 : i64, head_dim = 4 : i64, heads = 2 : i64, kv = "f16", kv_by_head = false, kv_heads = 1 : i64, scale = 5.000000e-01 : f64, shaw_clip = 0 : i64, softcap = 0.000000e+00 : f64, split_kv = 0 : i64, t5_buckets = 0 : i64, t5_max_distance = 0 : i64, window = 0 : i64, v_head_dim = 4 : i64}(%q, %k, %k, %p, %o) : memref<?x2x4xf32>, memref<?x1x4xf32>, memref<?x1x4xf32>, index, memref<?x2x4xf32>
  return
}

// -----

func.func @dispatch_offsets(%e: memref<?x2xi32>, %o: memref<4xi32>, %r: memref<?xi32>, %s: memref<?x2xi32>) {
  // expected-error @+1 {{offsets must be memref<5xi32> (n_experts + 1), got 'memref<4xi32>'}}
  archk.dispatch %e -> %o, %r, %s {n_experts = 4 : i64} : memref<?x2xi32>, memref<4xi32>, memref<?xi32>, memref<?x2xi32>
  return
}

// -----

func.func @dispatch_slots(%e: memref<?x2xi32>, %o: memref<5xi32>, %r: memref<?xi32>, %s: memref<?x3xi32>) {
  // expected-error @+1 {{experts and slots must be [T, k] alike and rows [T * k]}}
  archk.dispatch %e -> %o, %r, %s {n_experts = 4 : i64} : memref<?x2xi32>, memref<5xi32>, memref<?xi32>, memref<?x3xi32>
  return
}

// -----

// A list field holds an array of i64.
func.func @f(%q: memref<?x1x16xf32>, %p: index) {
  // expected-error @+1 {{'archk.call' op kernel description of 'attention' has 'globals' that is not an array of i64}}
  archk.call "attention" {alibi = false, block_kv = 0 : i64, block_q = 0 : i64, head_dim = 16 : i64, heads = 1 : i64, kv = "f32", kv_by_head = false, kv_heads = 1 : i64, scale = 2.500000e-01 : f64, shaw_clip = 0 : i64, softcap = 0.000000e+00 : f64, split_kv = 0 : i64, t5_buckets = 0 : i64, t5_max_distance = 0 : i64, v_head_dim = 16 : i64, window = 4 : i64, globals = 3 : i64}(%q, %q, %q, %p, %q) : memref<?x1x16xf32>, memref<?x1x16xf32>, memref<?x1x16xf32>, index, memref<?x1x16xf32>
  return
}

// -----

// A bf16 x (archk-bf16-inputs) is a bf16 dot product's only.
func.func @linear_input_unpaired(%x: memref<?x8xbf16>, %w: memref<1x8x64xf32>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has an input other than f32 outside a bf16 dot product}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, input = "bf16", one_row = false, panel = 64 : i64}(%x, %w, %o) : memref<?x8xbf16>, memref<1x8x64xf32>, memref<?x16xf32>
  return
}

// -----

// Nor is it f16.
func.func @linear_input_f16(%x: memref<?x8xf16>, %w: memref<1x4x128xbf16>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' has an input other than f32 outside a bf16 dot product}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, input = "f16", one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%x, %w, %o) : memref<?x8xf16>, memref<1x4x128xbf16>, memref<?x16xf32>
  return
}

// -----

// A linear stores bf16 only as a glu epilogue over panels.
func.func @linear_store_plain(%x: memref<?x8xf32>, %w: memref<1x8x64xf32>, %o: memref<?x16xbf16>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' stores other than f32 without a glu epilogue over panels}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 64 : i64, store = "bf16"}(%x, %w, %o) : memref<?x8xf32>, memref<1x8x64xf32>, memref<?x16xbf16>
  return
}

// -----

// A bf16 x is passed as bf16 rows.
func.func @linear_input_type(%x: memref<?x8xf32>, %w: memref<1x4x128xbf16>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op argument 0 ('x') is 'memref<?x8xf32>', but the kernel takes a memref of the declared element type and rank (bf16, 2)}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, input = "bf16", one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%x, %w, %o) : memref<?x8xf32>, memref<1x4x128xbf16>, memref<?x16xf32>
  return
}

// -----

// A norm or attention stores f32 or bf16.
func.func @norm_store_f16(%x: memref<?x1x8xf32>, %w: memref<8xf32>, %o: memref<?x1x8xf16>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'norm' stores other than f32 or bf16}}
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", store = "f16", weight_offset = 0.0 : f64, weight_per_group = false, width = 8 : i64}(%x, %w, %o) : memref<?x1x8xf32>, memref<8xf32>, memref<?x1x8xf16>
  return
}

// -----

func.func @attention_store_i32(%q: memref<?x1x16xf32>, %p: index, %o: memref<?x1x16xi32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'attention' stores other than f32 or bf16}}
  archk.call "attention" {alibi = false, block_kv = 0 : i64, block_q = 0 : i64, head_dim = 16 : i64, heads = 1 : i64, kv = "f32", kv_by_head = false, kv_heads = 1 : i64, scale = 2.500000e-01 : f64, shaw_clip = 0 : i64, softcap = 0.000000e+00 : f64, split_kv = 0 : i64, t5_buckets = 0 : i64, t5_max_distance = 0 : i64, v_head_dim = 16 : i64, window = 0 : i64, store = "i32"}(%q, %q, %q, %p, %o) : memref<?x1x16xf32>, memref<?x1x16xf32>, memref<?x1x16xf32>, index, memref<?x1x16xi32>
  return
}

// -----

// A rounded x is dense rows (its kernel assumes them).
func.func @linear_input_strided(%x: memref<?x8xbf16, strided<[16, 1]>>, %w: memref<1x4x128xbf16>, %o: memref<?x16xf32>) {
  // expected-error @+1 {{'archk.call' op argument 0 ('x') is 'memref<?x8xbf16, strided<[16, 1]>>', but a rounded input (input = bf16) is dense rows}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, input = "bf16", one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%x, %w, %o) : memref<?x8xbf16, strided<[16, 1]>>, memref<1x4x128xbf16>, memref<?x16xf32>
  return
}

// -----

// A glu linear stores bf16 over panels only.
func.func @linear_store_unpacked(%x: memref<?x8xf32>, %w: memref<32x8xf32>, %o: memref<?x16xbf16>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'linear' stores other than f32 without a glu epilogue over panels}}
  archk.call "linear" {K = 8 : i64, N = 16 : i64, activation = "silu", bias = false, glu = true, one_row = false, panel = 0 : i64, store = "bf16"}(%x, %w, %o) : memref<?x8xf32>, memref<32x8xf32>, memref<?x16xbf16>
  return
}

// -----

// A glu or activation kernel stores f32 or bf16; an add has no store.
func.func @glu_store_f16(%a: memref<?x8xf32>, %o: memref<?x8xf16>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'glu' stores other than f32 or bf16}}
  archk.call "glu" {activation = "silu", store = "f16", width = 8 : i64}(%a, %a, %o) : memref<?x8xf32>, memref<?x8xf32>, memref<?x8xf16>
  return
}

// -----

func.func @add_store(%a: memref<?x8xf32>, %o: memref<?x8xbf16>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'add' has fields the kind does not have}}
  archk.call "add" {store = "bf16", width = 8 : i64}(%a, %a, %o) : memref<?x8xf32>, memref<?x8xf32>, memref<?x8xbf16>
  return
}

// -----

func.func @f(%x: memref<4x2x8xf32>, %pos: index, %out: memref<4x2x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'rope' has factors other than longrope's one per rotated pair}}
  archk.call "rope" {attention_factor = 1.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64, factor = 1.0 : f64, factors = array<f64: 1.0, 2.0, 3.0>, head_dim = 8 : i64, heads = 2 : i64, high_freq_factor = 4.0 : f64, low_freq_factor = 1.0 : f64, mscale = 1.0 : f64, mscale_all_dim = 0.0 : f64, original_max_seq_len = 0 : i64, rotary_dim = 8 : i64, scaling = "longrope", style = "interleaved", theta = 10000.0 : f64}(%x, %pos, %out) : memref<4x2x8xf32>, index, memref<4x2x8xf32>
  return
}

// -----

func.func @f(%x: memref<4x2x8xf32>, %pos: index, %out: memref<4x2x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'rope' has factors other than longrope's one per rotated pair}}
  archk.call "rope" {attention_factor = 1.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64, factor = 1.0 : f64, factors = array<f64: 1.0>, head_dim = 8 : i64, heads = 2 : i64, high_freq_factor = 4.0 : f64, low_freq_factor = 1.0 : f64, mscale = 1.0 : f64, mscale_all_dim = 0.0 : f64, original_max_seq_len = 0 : i64, rotary_dim = 8 : i64, scaling = "none", style = "interleaved", theta = 10000.0 : f64}(%x, %pos, %out) : memref<4x2x8xf32>, index, memref<4x2x8xf32>
  return
}

// -----

func.func @f(%x: memref<4x2x8xf32>, %pos: index, %out: memref<4x2x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'rope' has factors that are not positive and finite, or an attention_factor other than 1 without longrope}}
  archk.call "rope" {attention_factor = 1.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64, factor = 1.0 : f64, factors = array<f64: 1.0, 2.0, -3.0, 4.0>, head_dim = 8 : i64, heads = 2 : i64, high_freq_factor = 4.0 : f64, low_freq_factor = 1.0 : f64, mscale = 1.0 : f64, mscale_all_dim = 0.0 : f64, original_max_seq_len = 0 : i64, rotary_dim = 8 : i64, scaling = "longrope", style = "interleaved", theta = 10000.0 : f64}(%x, %pos, %out) : memref<4x2x8xf32>, index, memref<4x2x8xf32>
  return
}

// -----

func.func @f(%x: memref<4x2x8xf32>, %pos: index, %out: memref<4x2x8xf32>) {
  // expected-error @+1 {{'archk.call' op kernel description of 'rope' has factors that are not positive and finite, or an attention_factor other than 1 without longrope}}
  archk.call "rope" {attention_factor = 2.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64, factor = 1.0 : f64, factors = array<f64>, head_dim = 8 : i64, heads = 2 : i64, high_freq_factor = 4.0 : f64, low_freq_factor = 1.0 : f64, mscale = 1.0 : f64, mscale_all_dim = 0.0 : f64, original_max_seq_len = 0 : i64, rotary_dim = 8 : i64, scaling = "none", style = "interleaved", theta = 10000.0 : f64}(%x, %pos, %out) : memref<4x2x8xf32>, index, memref<4x2x8xf32>
  return
}
