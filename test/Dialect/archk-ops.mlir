// RUN: arch-opt %s | arch-opt | FileCheck %s

// The kernel-call level round-trips: weight and cache buffers, calls with
// their description, acquires and releases.
// CHECK: %[[W:.*]] = archk.weight @w : memref<16x8xf32>
// CHECK: %[[C:.*]] = archk.cache @c : memref<32x8xf32>
// CHECK: %[[KC:.*]] = archk.cache @kc : memref<2x32x4xf32, strided<[?, 4, 1]>>
// CHECK: memref.transpose %{{.*}} (d0, d1, d2) -> (d1, d0, d2) : memref<2x?x4xf32, strided<[?, 4, 1]>> to memref<?x2x4xf32, strided<[4, ?, 1]>>
// CHECK: archk.acquire %[[W]] : memref<16x8xf32>
// CHECK: archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 0 : i64}(%{{.*}}, %[[W]], %{{.*}}) : memref<?x8xf32, strided<[8, 1], offset: ?>>, memref<16x8xf32>, memref<?x16xf32>
// CHECK: archk.call "rope" {{.*}}style = "interleaved", theta = 1.000000e+04 : f64}(%{{.*}}, %arg1, %{{.*}}) : memref<?x2x8xf32>, index, memref<?x2x8xf32>
// CHECK: archk.release %[[W]] : memref<16x8xf32>
module attributes {arch.max_seq_len = 32 : i64} {
  arch.weight @w : tensor<16x8xf32>
  arch.cache @c tokens 32 : tensor<8xf32>
  arch.cache @kc tokens 32 : tensor<2x4xf32>
  func.func @f(%n: index, %pos: index) {
    %w = archk.weight @w : memref<16x8xf32>
    %c = archk.cache @c : memref<32x8xf32>
    // A KV cache is head-major; its context is a transposed view.
    %kc = archk.cache @kc : memref<2x32x4xf32, strided<[?, 4, 1]>>
    %kv = memref.subview %kc[0, 0, 0] [2, %n, 4] [1, 1, 1] : memref<2x32x4xf32, strided<[?, 4, 1]>> to memref<2x?x4xf32, strided<[?, 4, 1]>>
    %ctx = memref.transpose %kv (d0, d1, d2) -> (d1, d0, d2) : memref<2x?x4xf32, strided<[?, 4, 1]>> to memref<?x2x4xf32, strided<[4, ?, 1]>>
    %rows = memref.subview %c[%pos, 0] [%n, 8] [1, 1] : memref<32x8xf32> to memref<?x8xf32, strided<[8, 1], offset: ?>>
    %out = memref.alloc(%n) : memref<?x16xf32>
    archk.acquire %w : memref<16x8xf32>
    archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 0 : i64}(%rows, %w, %out) : memref<?x8xf32, strided<[8, 1], offset: ?>>, memref<16x8xf32>, memref<?x16xf32>
    %h = memref.expand_shape %out [[0], [1, 2]] output_shape [%n, 2, 8] : memref<?x16xf32> into memref<?x2x8xf32>
    %r = memref.alloc(%n) : memref<?x2x8xf32>
    archk.call "rope" {attention_factor = 1.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64, factor = 1.0 : f64, factors = array<f64>, head_dim = 8 : i64, heads = 2 : i64, high_freq_factor = 4.0 : f64, low_freq_factor = 1.0 : f64, mscale = 1.0 : f64, mscale_all_dim = 0.0 : f64, original_max_seq_len = 0 : i64, rotary_dim = 8 : i64, scaling = "none", style = "interleaved", theta = 10000.0 : f64}(%h, %pos, %r) : memref<?x2x8xf32>, index, memref<?x2x8xf32>
    archk.release %w : memref<16x8xf32>
    return
  }
}
