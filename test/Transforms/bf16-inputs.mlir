// RUN: arch-opt %s -archk-bf16-inputs | FileCheck %s
// RUN: arch-opt %s -archk-bf16-inputs -archk-plan-buffers | FileCheck %s --check-prefix=SLOTS

// A norm whose rows only bf16 dot products read (as their x, dense rows)
// stores them rounded: its buffer and every view of it become bf16, the
// norm's `store` and each reader's `input` say so.
// CHECK-LABEL: func.func @rounded
// CHECK: %[[H:.*]] = memref.alloc(%{{.*}}) : memref<?x64xbf16>
// CHECK: %[[HV:.*]] = memref.expand_shape %[[H]] {{.*}} : memref<?x64xbf16> into memref<?x1x64xbf16>
// CHECK: archk.call "norm" {{{.*}}store = "bf16"{{.*}}}({{.*}}, %[[HV]]) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xbf16>
// CHECK: archk.call "linear" {{{.*}}input = "bf16", one_row = false, pairs = true{{.*}}}(%[[H]], {{.*}}) : memref<?x64xbf16>, memref<4x32x128xbf16>, memref<?x256xf32>
// CHECK: archk.call "linear" {{{.*}}input = "bf16", one_row = false, pairs = true{{.*}}}(%[[H]], {{.*}}) : memref<?x64xbf16>, memref<4x32x128xbf16>, memref<?x256xf32>
// A glu linear's products read by a bf16 dot product only: stored bf16.
// CHECK: archk.call "linear" {{{.*}}glu = true, input = "bf16"{{.*}}store = "bf16"{{.*}}}({{.*}}) : memref<?x64xbf16>, memref<2x32x128xbf16>, memref<?x64xbf16>
// CHECK: archk.call "linear" {K = 64 : i64{{.*}}input = "bf16"{{.*}}}({{.*}}) : memref<?x64xbf16>, memref<1x32x128xbf16>, memref<?x64xf32>
func.func @rounded(%x: memref<?x64xf32>, %w: memref<64xf32>,
                   %wq: memref<4x32x128xbf16>, %wg: memref<2x32x128xbf16>,
                   %wd: memref<1x32x128xbf16>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %h = memref.alloc(%n) : memref<?x64xf32>
  %xv = memref.expand_shape %x [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  %hv = memref.expand_shape %h [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%xv, %w, %hv) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xf32>
  %q = memref.alloc(%n) : memref<?x256xf32>
  archk.call "linear" {K = 64 : i64, N = 256 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%h, %wq, %q) : memref<?x64xf32>, memref<4x32x128xbf16>, memref<?x256xf32>
  %q2 = memref.alloc(%n) : memref<?x256xf32>
  archk.call "linear" {K = 64 : i64, N = 256 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%h, %wq, %q2) : memref<?x64xf32>, memref<4x32x128xbf16>, memref<?x256xf32>
  %g = memref.alloc(%n) : memref<?x64xf32>
  archk.call "linear" {K = 64 : i64, N = 64 : i64, activation = "silu", bias = false, glu = true, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%h, %wg, %g) : memref<?x64xf32>, memref<2x32x128xbf16>, memref<?x64xf32>
  %y = memref.alloc(%n) : memref<?x64xf32>
  archk.call "linear" {K = 64 : i64, N = 64 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%g, %wd, %y) : memref<?x64xf32>, memref<1x32x128xbf16>, memref<?x64xf32>
  return
}

// Any other reader keeps the rows f32: another kernel (an add), a linear
// over f32 weights, a bf16 dot product's residual, or its x as a view of
// columns (rows that are not dense).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: {{store|input}} = "bf16"
// CHECK-NOT: memref.alloc({{.*}}xbf16>
// CHECK: return
func.func @kept(%x: memref<?x64xf32>, %w: memref<64xf32>,
                %wq: memref<4x32x128xbf16>, %wf: memref<1x64x64xf32>,
                %wd: memref<1x32x128xbf16>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %xv = memref.expand_shape %x [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  // Read by an add too.
  %a = memref.alloc(%n) : memref<?x64xf32>
  %av = memref.expand_shape %a [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%xv, %w, %av) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xf32>
  %qa = memref.alloc(%n) : memref<?x256xf32>
  archk.call "linear" {K = 64 : i64, N = 256 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%a, %wq, %qa) : memref<?x64xf32>, memref<4x32x128xbf16>, memref<?x256xf32>
  %s = memref.alloc(%n) : memref<?x64xf32>
  archk.call "add" {width = 64 : i64}(%a, %x, %s) : memref<?x64xf32>, memref<?x64xf32>, memref<?x64xf32>
  // Read by a linear over f32 weights.
  %b = memref.alloc(%n) : memref<?x64xf32>
  %bv = memref.expand_shape %b [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%xv, %w, %bv) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xf32>
  %qb = memref.alloc(%n) : memref<?x64xf32>
  archk.call "linear" {K = 64 : i64, N = 64 : i64, bias = false, one_row = false, panel = 64 : i64}(%b, %wf, %qb) : memref<?x64xf32>, memref<1x64x64xf32>, memref<?x64xf32>
  // Read as a bf16 dot product's residual.
  %c = memref.alloc(%n) : memref<?x64xf32>
  %cv = memref.expand_shape %c [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%xv, %w, %cv) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xf32>
  %qc = memref.alloc(%n) : memref<?x64xf32>
  archk.call "linear" {K = 64 : i64, N = 64 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, residual = true, weight = "bf16"}(%x, %wd, %c, %qc) : memref<?x64xf32>, memref<1x32x128xbf16>, memref<?x64xf32>, memref<?x64xf32>
  // Read as x through a view of its first 64 of 128 columns.
  %d = memref.alloc(%n) : memref<?x128xf32>
  %dv = memref.expand_shape %d [[0], [1, 2]] output_shape [%n, 2, 64] : memref<?x128xf32> into memref<?x2x64xf32>
  %xx = memref.alloc(%n) : memref<?x128xf32>
  %xxv = memref.expand_shape %xx [[0], [1, 2]] output_shape [%n, 2, 64] : memref<?x128xf32> into memref<?x2x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 2 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%xxv, %w, %dv) : memref<?x2x64xf32>, memref<64xf32>, memref<?x2x64xf32>
  %d0 = memref.subview %d[0, 0] [%n, 64] [1, 1] : memref<?x128xf32> to memref<?x64xf32, strided<[128, 1]>>
  %qd = memref.alloc(%n) : memref<?x256xf32>
  archk.call "linear" {K = 64 : i64, N = 256 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%d0, %wq, %qd) : memref<?x64xf32, strided<[128, 1]>>, memref<4x32x128xbf16>, memref<?x256xf32>
  return
}

// A bf16 row of 64 takes 32 floats of its activation slot.
// CHECK-LABEL: func.func @slot
// SLOTS-LABEL: func.func @slot
// SLOTS-SAME: archk.slot_widths = array<i64: 32, 256>
func.func @slot(%x: memref<?x64xf32>, %w: memref<64xf32>,
                %wq: memref<4x32x128xbf16>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %h = memref.alloc(%n) : memref<?x64xf32>
  %xv = memref.expand_shape %x [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  %hv = memref.expand_shape %h [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%xv, %w, %hv) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xf32>
  %q = memref.alloc(%n) : memref<?x256xf32>
  archk.call "linear" {K = 64 : i64, N = 256 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%h, %wq, %q) : memref<?x64xf32>, memref<4x32x128xbf16>, memref<?x256xf32>
  return
}

// A one-row view of the last token (the classifier's, one_row), and a
// memref.dim of it, read the rows as rounded as any.
// CHECK-LABEL: func.func @last_row
// CHECK: memref.subview {{.*}} : memref<?x64xbf16> to memref<1x64xbf16, strided<[64, 1], offset: ?>>
// CHECK: memref.dim {{.*}} : memref<1x64xbf16, strided<[64, 1], offset: ?>>
// CHECK: archk.call "linear" {{{.*}}input = "bf16", one_row = true{{.*}}}({{.*}}) : memref<1x64xbf16, strided<[64, 1], offset: ?>>
func.func @last_row(%x: memref<?x64xf32>, %w: memref<64xf32>,
                    %wq: memref<4x32x128xbf16>, %out: memref<1x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %h = memref.alloc(%n) : memref<?x64xf32>
  %xv = memref.expand_shape %x [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  %hv = memref.expand_shape %h [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%xv, %w, %hv) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xf32>
  %last = arith.subi %n, %c1 : index
  %row = memref.subview %h[%last, 0] [1, 64] [1, 1] : memref<?x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
  %one = memref.dim %row, %c0 : memref<1x64xf32, strided<[64, 1], offset: ?>>
  archk.call "linear" {K = 64 : i64, N = 256 : i64, bias = false, one_row = true, pairs = true, panel = 64 : i64, weight = "bf16"}(%row, %wq, %out) : memref<1x64xf32, strided<[64, 1], offset: ?>>, memref<4x32x128xbf16>, memref<1x256xf32>
  return
}

// A norm that writes an argument (a buffer the pass does not own) keeps
// it f32.
// CHECK-LABEL: func.func @argument
// CHECK-NOT: {{store|input}} = "bf16"
// CHECK: return
func.func @argument(%x: memref<?x1x64xf32>, %w: memref<64xf32>,
                    %h: memref<?x64xf32>, %wq: memref<4x32x128xbf16>,
                    %q: memref<?x256xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %h, %c0 : memref<?x64xf32>
  %hv = memref.expand_shape %h [[0], [1, 2]] output_shape [%n, 1, 64] : memref<?x64xf32> into memref<?x1x64xf32>
  archk.call "norm" {bias = false, eps = 1.0e-05 : f64, groups = 1 : i64, norm = "rms", weight_offset = 0.0 : f64, weight_per_group = false, width = 64 : i64}(%x, %w, %hv) : memref<?x1x64xf32>, memref<64xf32>, memref<?x1x64xf32>
  archk.call "linear" {K = 64 : i64, N = 256 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%h, %wq, %q) : memref<?x64xf32>, memref<4x32x128xbf16>, memref<?x256xf32>
  return
}

// A mixture's experts (arch.moe's lowering): the gather's routed rows
// and each expert's glu products, read in a loop by row windows, round
// too.
// CHECK-LABEL: func.func @experts
// CHECK: archk.call "gather" {store = "bf16", width = 64 : i64}({{.*}}) : memref<?x64xf32>, memref<?xi32>, memref<?x64xbf16>
// CHECK: scf.for
// CHECK: archk.call "linear" {{{.*}}input = "bf16"{{.*}}}({{.*}}) : memref<?x64xbf16, strided<[64, 1], offset: ?>>, memref<2x32x128xbf16>, memref<?x128xf32, strided<[128, 1], offset: ?>>
// CHECK: archk.call "glu" {activation = "silu", store = "bf16", width = 128 : i64}
// CHECK: archk.call "linear" {{{.*}}input = "bf16"{{.*}}}({{.*}}) : memref<?x128xbf16, strided<[128, 1], offset: ?>>, memref<1x64x128xbf16>
func.func @experts(%x: memref<?x64xf32>, %order: memref<?xi32>,
                   %lo: memref<3xindex>, %wu: memref<2x32x128xbf16>,
                   %wd: memref<1x64x128xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %order, %c0 : memref<?xi32>
  %xs = memref.alloc(%n) : memref<?x64xf32>
  archk.call "gather" {width = 64 : i64}(%x, %order, %xs) : memref<?x64xf32>, memref<?xi32>, memref<?x64xf32>
  %u = memref.alloc(%n) : memref<?x128xf32>
  %h = memref.alloc(%n) : memref<?x128xf32>
  %ys = memref.alloc(%n) : memref<?x64xf32>
  scf.for %e = %c0 to %c2 step %c1 {
    %a = memref.load %lo[%e] : memref<3xindex>
    %e1 = arith.addi %e, %c1 : index
    %b = memref.load %lo[%e1] : memref<3xindex>
    %m = arith.subi %b, %a : index
    %xe = memref.subview %xs[%a, 0] [%m, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    %ue = memref.subview %u[%a, 0] [%m, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
    %he = memref.subview %h[%a, 0] [%m, 128] [1, 1] : memref<?x128xf32> to memref<?x128xf32, strided<[128, 1], offset: ?>>
    %ye = memref.subview %ys[%a, 0] [%m, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1], offset: ?>>
    archk.call "linear" {K = 64 : i64, N = 128 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%xe, %wu, %ue) : memref<?x64xf32, strided<[64, 1], offset: ?>>, memref<2x32x128xbf16>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    archk.call "glu" {activation = "silu", width = 128 : i64}(%ue, %ue, %he) : memref<?x128xf32, strided<[128, 1], offset: ?>>, memref<?x128xf32, strided<[128, 1], offset: ?>>, memref<?x128xf32, strided<[128, 1], offset: ?>>
    archk.call "linear" {K = 128 : i64, N = 64 : i64, bias = false, one_row = false, pairs = true, panel = 64 : i64, weight = "bf16"}(%he, %wd, %ye) : memref<?x128xf32, strided<[128, 1], offset: ?>>, memref<1x64x128xbf16>, memref<?x64xf32, strided<[64, 1], offset: ?>>
  }
  return
}
