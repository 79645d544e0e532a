// RUN: arch-opt %s -split-input-file -arch-sink-last-token | FileCheck %s
// RUN: arch-opt %s -split-input-file -arch-sink-last-token | FileCheck %s --check-prefix=COUNT

arch.weight @wo : tensor<8x8xf32>
arch.weight @n : tensor<8xf32>
arch.weight @wg : tensor<16x8xf32>
arch.weight @wu : tensor<16x8xf32>
arch.weight @wd : tensor<8x16xf32>
// A serial block after its attention (%a), picked at its end: the pick
// moves up through the FFN, the norm, both residual adds and the output
// projection, to the attention's output and the residual stream %x the
// block started from; every op computes one row, and the pick of %h that
// both the norm and the second add asked for is made once.
// CHECK-LABEL: func.func @serial
// CHECK-DAG: %[[A:.*]] = arch.last_token %arg0 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-DAG: %[[X:.*]] = arch.last_token %arg1 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-DAG: %[[O:.*]] = arch.linear %[[A]], %{{.*}} : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
// CHECK: %[[H:.*]] = arch.add %[[X]], %[[O]] : tensor<1x8xf32>
// CHECK: %[[N:.*]] = arch.norm rms %[[H]], %{{.*}} {eps = {{.*}}} : (tensor<1x8xf32>, tensor<8xf32>) -> tensor<1x8xf32>
// CHECK-DAG: %[[G:.*]] = arch.linear %[[N]], %{{.*}} : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
// CHECK-DAG: %[[U:.*]] = arch.linear %[[N]], %{{.*}} : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
// CHECK: %[[M:.*]] = arch.glu silu %[[G]], %[[U]] : tensor<1x16xf32>
// CHECK: %[[D:.*]] = arch.linear %[[M]], %{{.*}} : (tensor<1x16xf32>, tensor<8x16xf32>) -> tensor<1x8xf32>
// CHECK: %[[Y:.*]] = arch.add %[[H]], %[[D]] : tensor<1x8xf32>
// CHECK-NEXT: return %[[Y]]
// COUNT-LABEL: func.func @serial
// COUNT-COUNT-2: arch.last_token
// COUNT-NOT: arch.last_token
// COUNT: return
func.func @serial(%a: tensor<?x8xf32>, %x: tensor<?x8xf32>) -> tensor<1x8xf32> {
  %wo = arch.param @wo : tensor<8x8xf32>
  %o = arch.linear %a, %wo : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %h = arch.add %x, %o : tensor<?x8xf32>
  %nw = arch.param @n : tensor<8xf32>
  %n = arch.norm rms %h, %nw {eps = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %wg = arch.param @wg : tensor<16x8xf32>
  %g = arch.linear %n, %wg : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %wu = arch.param @wu : tensor<16x8xf32>
  %u = arch.linear %n, %wu : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %m = arch.glu silu %g, %u : tensor<?x16xf32>
  %wd = arch.param @wd : tensor<8x16xf32>
  %d = arch.linear %m, %wd : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %y = arch.add %h, %d : tensor<?x8xf32>
  %l = arch.last_token %y : tensor<?x8xf32> -> tensor<1x8xf32>
  return %l : tensor<1x8xf32>
}

// -----

arch.weight @wo : tensor<8x8xf32>
// Where something else reads every row (here the caller: %y, and %o's
// second reader), the pick stays: only the ops whose every row goes to a
// pick compute one. A new pick comes right after the rows it picks.
// CHECK-LABEL: func.func @read_in_full
// CHECK: %[[O:.*]] = arch.linear %arg0, %{{.*}} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
// CHECK-NEXT: %[[P:.*]] = arch.last_token %[[O]]
// CHECK-NEXT: %[[Y:.*]] = arch.add %arg1, %[[O]] : tensor<?x8xf32>
// CHECK-NEXT: %[[L:.*]] = arch.last_token %[[Y]]
// CHECK-NEXT: %[[S:.*]] = arch.scale %[[P]] {factor = 2.000000e+00 : f32} : tensor<1x8xf32>
// CHECK-NEXT: %[[A:.*]] = arch.activation relu %[[O]] : tensor<?x8xf32>
// CHECK-NEXT: return %[[L]], %[[Y]], %[[S]], %[[A]]
func.func @read_in_full(%a: tensor<?x8xf32>, %x: tensor<?x8xf32>) -> (tensor<1x8xf32>, tensor<?x8xf32>, tensor<1x8xf32>, tensor<?x8xf32>) {
  %wo = arch.param @wo : tensor<8x8xf32>
  %o = arch.linear %a, %wo : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %y = arch.add %x, %o : tensor<?x8xf32>
  %l = arch.last_token %y : tensor<?x8xf32> -> tensor<1x8xf32>
  %s = arch.scale %o {factor = 2.0 : f32} : tensor<?x8xf32>
  %r = arch.last_token %s : tensor<?x8xf32> -> tensor<1x8xf32>
  %f = arch.activation relu %o : tensor<?x8xf32>
  return %l, %y, %r, %f : tensor<1x8xf32>, tensor<?x8xf32>, tensor<1x8xf32>, tensor<?x8xf32>
}

// -----

// Ops that read other rows or the position keep the pick after them:
// RoPE (row t turns by position pos + t; attention is moved to its last
// query's position: @attention below); a row already one (decode's shape,
// or a pick's) is left as it is.
// CHECK-LABEL: func.func @stops
// CHECK: %[[R:.*]] = arch.rope half_split %arg0, %arg1
// CHECK-NEXT: arch.last_token %[[R]]
// CHECK: arch.activation relu %arg2 : tensor<1x8xf32>
// CHECK-NEXT: arch.last_token
func.func @stops(%x: tensor<?x8xf32>, %pos: index, %one: tensor<1x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %r = arch.rope half_split %x, %pos {n_heads = 2, head_dim = 4, rotary_dim = 4, theta = 1.0e4} : (tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %l = arch.last_token %r : tensor<?x8xf32> -> tensor<1x8xf32>
  %a = arch.activation relu %one : tensor<1x8xf32>
  %m = arch.last_token %a : tensor<1x8xf32> -> tensor<1x8xf32>
  return %l, %m : tensor<1x8xf32>, tensor<1x8xf32>
}

// -----

arch.weight @wr : tensor<4x8xf32>
arch.weight @g : tensor<64x8xf32>
arch.weight @u : tensor<64x8xf32>
arch.weight @d : tensor<32x16xf32>
// Experts route each row on its own: the pick moves through arch.moe and
// its router (picking the chosen experts, i32, on the way) to the router's
// and the experts' input.
// CHECK-LABEL: func.func @experts
// CHECK: %[[H:.*]] = arch.last_token %arg0 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-NOT: arch.last_token
// CHECK: %[[L:.*]] = arch.linear %[[H]], %{{.*}} : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<1x4xf32>
// CHECK-NOT: arch.last_token
// CHECK: %[[E:.*]], %[[W:.*]] = arch.route softmax %[[L]] {{.*}} : (tensor<1x4xf32>) -> (tensor<1x2xi32>, tensor<1x2xf32>)
// CHECK-NOT: arch.last_token
// CHECK: %[[Y:.*]] = arch.moe silu %[[H]], %[[E]], %[[W]] gate {{.*}} -> tensor<1x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @experts(%h: tensor<?x8xf32>) -> tensor<1x8xf32> {
  %wr = arch.param @wr : tensor<4x8xf32>
  %l = arch.linear %h, %wr : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %e, %w = arch.route softmax %l {top_k = 2 : i64, normalize = true, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f32} : (tensor<?x4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %g = arch.param @g : tensor<64x8xf32>
  %u = arch.param @u : tensor<64x8xf32>
  %d = arch.param @d : tensor<32x16xf32>
  %y = arch.moe silu %h, %e, %w gate %g up %u down %d {n_experts = 4 : i64, d_ff = 16 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x8xf32>, tensor<64x8xf32>, tensor<32x16xf32>) -> tensor<?x8xf32>
  %p = arch.last_token %y : tensor<?x8xf32> -> tensor<1x8xf32>
  return %p : tensor<1x8xf32>
}

// -----

arch.weight @wr : tensor<4x8xf32>
arch.weight @u : tensor<64x8xf32>
arch.weight @d : tensor<32x16xf32>
// Where the chosen experts are also read in full, the router keeps every
// row and the experts read the pick of its i32 choices.
// CHECK-LABEL: func.func @experts_read_in_full
// CHECK: %[[H:.*]] = arch.last_token %arg0 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK: %[[E:.*]], %[[W:.*]] = arch.route softmax %{{.*}} : (tensor<?x4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
// CHECK-DAG: %[[E1:.*]] = arch.last_token %[[E]] : tensor<?x2xi32> -> tensor<1x2xi32>
// CHECK-DAG: %[[W1:.*]] = arch.last_token %[[W]] : tensor<?x2xf32> -> tensor<1x2xf32>
// CHECK: arch.moe gelu %[[H]], %[[E1]], %[[W1]] up
func.func @experts_read_in_full(%h: tensor<?x8xf32>) -> (tensor<1x8xf32>, tensor<?x2xi32>) {
  %wr = arch.param @wr : tensor<4x8xf32>
  %l = arch.linear %h, %wr : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %e, %w = arch.route softmax %l {top_k = 2 : i64, normalize = true, n_group = 1 : i64, topk_group = 1 : i64, scaling = 1.0 : f32} : (tensor<?x4xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
  %u = arch.param @u : tensor<64x8xf32>
  %d = arch.param @d : tensor<32x16xf32>
  %y = arch.moe gelu %h, %e, %w up %u down %d {n_experts = 4 : i64, d_ff = 16 : i64} : (tensor<?x8xf32>, tensor<?x2xi32>, tensor<?x2xf32>, tensor<64x8xf32>, tensor<32x16xf32>) -> tensor<?x8xf32>
  %p = arch.last_token %y : tensor<?x8xf32> -> tensor<1x8xf32>
  return %p, %e : tensor<1x8xf32>, tensor<?x2xi32>
}

// -----

// A split whose every part is picked computes one row; one with a part
// read in full keeps its rows.
// CHECK-LABEL: func.func @split
// CHECK: %[[X:.*]] = arch.last_token %arg0 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[S:.*]]:2 = arch.split %[[X]] : tensor<1x8xf32> -> tensor<1x4xf32>, tensor<1x4xf32>
// CHECK: %[[T:.*]]:2 = arch.split %arg1 : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
// CHECK-NEXT: arch.last_token %[[T]]#0
func.func @split(%x: tensor<?x8xf32>, %z: tensor<?x8xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<?x4xf32>) {
  %a, %b = arch.split %x : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %pa = arch.last_token %a : tensor<?x4xf32> -> tensor<1x4xf32>
  %pb = arch.last_token %b : tensor<?x4xf32> -> tensor<1x4xf32>
  %c, %d = arch.split %z : tensor<?x8xf32> -> tensor<?x4xf32>, tensor<?x4xf32>
  %pc = arch.last_token %c : tensor<?x4xf32> -> tensor<1x4xf32>
  return %pa, %pb, %pc, %d : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<?x4xf32>
}

// -----

arch.weight @wo : tensor<8x8xf32>
arch.weight @bo : tensor<8xf32>
// Attention, then its output projection with a bias and a residual
// (operands the clone keeps in their segments): the residual is picked,
// the bias is not; the attention gets its last query row alone, at that
// row's position (pos + T - 1: arch.last_position), over the whole
// context, as a decode step there would. (The query here is also the
// context: its pick is shared with the residual's.)
// CHECK-LABEL: func.func @attention
// CHECK: %[[X:.*]] = arch.last_token %arg0 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[P:.*]] = arch.last_position %arg0, %arg1 : tensor<?x8xf32>
// CHECK-NEXT: %[[A:.*]] = arch.attention %[[X]], %arg0, %arg0, %[[P]] {{.*}} : (tensor<1x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<1x8xf32>
// CHECK: %[[Y:.*]] = arch.linear %[[A]], %{{.*}}, %{{.*}} residual %[[X]] : (tensor<1x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @attention(%x: tensor<?x8xf32>, %pos: index) -> tensor<1x8xf32> {
  %a = arch.attention %x, %x, %x, %pos {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  %wo = arch.param @wo : tensor<8x8xf32>
  %bo = arch.param @bo : tensor<8xf32>
  %y = arch.linear %a, %wo, %bo residual %x : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %p = arch.last_token %y : tensor<?x8xf32> -> tensor<1x8xf32>
  return %p : tensor<1x8xf32>
}

// -----

// Per-head ops work row by row too: MLA's split, head linear and join
// (one head shared), a per-head norm (groups), differential attention's
// combination (its lambda vectors are weights, not rows).
// CHECK-LABEL: func.func @heads
// CHECK-DAG: %[[Q:.*]] = arch.last_token %arg0 : tensor<?x48xf32> -> tensor<1x48xf32>
// CHECK-DAG: %[[R:.*]] = arch.last_token %arg1 : tensor<?x4xf32> -> tensor<1x4xf32>
// CHECK-DAG: %[[B:.*]] = arch.last_token %arg3 : tensor<?x64xf32> -> tensor<1x64xf32>
// CHECK: %[[S:.*]]:2 = arch.heads_split %[[Q]] {heads = 4 : i64} : tensor<1x48xf32> -> tensor<1x32xf32>, tensor<1x16xf32>
// CHECK: %[[L:.*]] = arch.head_linear %[[S]]#0, %arg2 {heads = 4 : i64, k_major} : (tensor<1x32xf32>, tensor<32x16xf32>) -> tensor<1x64xf32>
// CHECK: %[[N:.*]] = arch.norm rms %[[L]], %arg4 {eps = {{.*}}, groups = 4 : i64} : (tensor<1x64xf32>, tensor<16xf32>) -> tensor<1x64xf32>
// CHECK: %[[D:.*]] = arch.differential %[[N]], %[[B]], %arg5, %arg5, %arg5, %arg5 {{.*}} -> tensor<1x64xf32>
// CHECK: %[[C:.*]] = arch.heads_concat %[[D]], %[[R]] {{.*}} : (tensor<1x64xf32>, tensor<1x4xf32>) -> tensor<1x80xf32>
// CHECK-NEXT: return %[[C]]
func.func @heads(%q: tensor<?x48xf32>, %kr: tensor<?x4xf32>, %wk: tensor<32x16xf32>, %b: tensor<?x64xf32>, %nw: tensor<16xf32>, %l: tensor<8xf32>) -> tensor<1x80xf32> {
  %qn, %qr = arch.heads_split %q {heads = 4 : i64} : tensor<?x48xf32> -> tensor<?x32xf32>, tensor<?x16xf32>
  %ql = arch.head_linear %qn, %wk {heads = 4 : i64, k_major} : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x64xf32>
  %n = arch.norm rms %ql, %nw {eps = 1.0e-5 : f32, groups = 4} : (tensor<?x64xf32>, tensor<16xf32>) -> tensor<?x64xf32>
  %d = arch.differential %n, %b, %l, %l, %l, %l {lambda_init = 0.2 : f64} : (tensor<?x64xf32>, tensor<?x64xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x64xf32>
  %c = arch.heads_concat %d, %kr {heads = 4 : i64, input_heads = array<i64: 4, 1>} : (tensor<?x64xf32>, tensor<?x4xf32>) -> tensor<?x80xf32>
  %p = arch.last_token %c : tensor<?x80xf32> -> tensor<1x80xf32>
  return %p : tensor<1x80xf32>
}

// -----

// Two picks of one value both read the sunk op; a pick of the input that
// comes after the op (which its new input could not read) is kept, and a
// new one made where the input is.
// CHECK-LABEL: func.func @picks
// CHECK: %[[X:.*]] = arch.last_token %arg0 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[R:.*]] = arch.activation relu %[[X]] : tensor<1x8xf32>
// CHECK-NEXT: %[[L:.*]] = arch.last_token %arg0 : tensor<?x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: return %[[R]], %[[R]], %[[L]]
func.func @picks(%x: tensor<?x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) {
  %r = arch.activation relu %x : tensor<?x8xf32>
  %p1 = arch.last_token %r : tensor<?x8xf32> -> tensor<1x8xf32>
  %p2 = arch.last_token %r : tensor<?x8xf32> -> tensor<1x8xf32>
  %l = arch.last_token %x : tensor<?x8xf32> -> tensor<1x8xf32>
  return %p1, %p2, %l : tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
}
