// RUN: arch-opt %s -archk-plan-buffers | FileCheck %s

// Buffers of token rows share slots once their last reader (through any
// view) has run; a slot grows to the widest buffer it holds.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: archk.scratch_floats = 0 : i64, archk.slot_widths = array<i64: 16, 8, 8>
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) {archk.slot = 0 : i64} : memref<?x8xf32>
// CHECK: %[[B:.*]] = memref.alloc(%{{.*}}) {archk.slot = 1 : i64} : memref<?x8xf32>
// A is dead once the activation has read it: its slot, wider now.
// CHECK: %[[C:.*]] = memref.alloc(%{{.*}}) {archk.slot = 0 : i64} : memref<?x16xf32>
// CHECK: %[[D:.*]] = memref.alloc(%{{.*}}) {archk.slot = 1 : i64} : memref<?x8xf32>
// C is still read through its view by the add: a third slot.
// CHECK: %[[E:.*]] = memref.alloc(%{{.*}}) {archk.slot = 2 : i64} : memref<?x8xf32>
// CHECK: archk.call "add"
// Fixed-size buffers: the lowest offset clear of those still live.
// CHECK-LABEL: func.func @prepare_params
// CHECK-SAME: archk.scratch_floats = 48 : i64, archk.slot_widths = array<i64>
// CHECK: memref.alloc() {archk.offset = 0 : i64} : memref<4x8xf32>
// CHECK: memref.alloc() {archk.offset = 32 : i64} : memref<2x8xf32>
// CHECK: memref.alloc() {archk.offset = 0 : i64} : memref<4x8xf32>
module attributes {arch.max_seq_len = 16 : i64} {
  arch.weight @w : tensor<32x8xf32>
  arch.weight @w16 : tensor<16x8xf32>
  func.func @forward(%t: memref<?xi32>, %pos: index, %out: memref<1x32xf32>) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %t, %c0 : memref<?xi32>
    %w = archk.weight @w : memref<32x8xf32>
    %a = memref.alloc(%n) : memref<?x8xf32>
    archk.call "embed" {d_model = 8 : i64, scale = 1.0 : f64, vocab = 32 : i64}(%t, %w, %a) : memref<?xi32>, memref<32x8xf32>, memref<?x8xf32>
    %b = memref.alloc(%n) : memref<?x8xf32>
    archk.call "activation" {activation = "silu", width = 8 : i64}(%a, %b) : memref<?x8xf32>, memref<?x8xf32>
    %w16 = archk.weight @w16 : memref<16x8xf32>
    %c = memref.alloc(%n) : memref<?x16xf32>
    archk.call "linear" {K = 8 : i64, N = 16 : i64, bias = false, one_row = false, panel = 0 : i64}(%b, %w16, %c) : memref<?x8xf32>, memref<16x8xf32>, memref<?x16xf32>
    %v = memref.subview %c[0, 8] [%n, 8] [1, 1] : memref<?x16xf32> to memref<?x8xf32, strided<[16, 1], offset: 8>>
    %d = memref.alloc(%n) : memref<?x8xf32>
    archk.call "copy" {store = "f32", width = 8 : i64}(%v, %d) : memref<?x8xf32, strided<[16, 1], offset: 8>>, memref<?x8xf32>
    %e = memref.alloc(%n) : memref<?x8xf32>
    archk.call "add" {width = 8 : i64}(%d, %v, %e) : memref<?x8xf32>, memref<?x8xf32, strided<[16, 1], offset: 8>>, memref<?x8xf32>
    return
  }
  func.func @prepare_params() {
    %x = memref.alloc() : memref<4x8xf32>
    %y = memref.alloc() : memref<2x8xf32>
    %xs = memref.subview %x[0, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1]>>
    archk.call "copy" {store = "f32", width = 8 : i64}(%xs, %y) : memref<2x8xf32, strided<[8, 1]>>, memref<2x8xf32>
    %z = memref.alloc() : memref<4x8xf32>
    %zs = memref.subview %z[0, 0] [2, 8] [1, 1] : memref<4x8xf32> to memref<2x8xf32, strided<[8, 1]>>
    archk.call "copy" {store = "f32", width = 8 : i64}(%y, %zs) : memref<2x8xf32>, memref<2x8xf32, strided<[8, 1]>>
    return
  }
}
