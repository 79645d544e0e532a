// RUN: arch-opt %s -split-input-file -arch-fuse-rope=panel=32 | FileCheck %s
// With the default panel (64, arch-pack-weights'), a result of 96 columns
// is not whole panels: left as it is; 64 columns are.
// RUN: arch-opt %s -split-input-file -arch-fuse-rope | FileCheck %s --check-prefix=PANEL64
// PANEL64-LABEL: func.func @fuse
// PANEL64: arch.rope half_split %{{.*}}#0
// PANEL64: arch.rope half_split %{{.*}}#1
// PANEL64: arch.rope interleaved epilogue

arch.weight @wqkv : tensor<96x64xf32>
arch.weight @wq : tensor<64x64xf32>
// A fused projection's queries and keys, each read by its rope alone,
// rotating alike: one rope epilogue over the whole result, its heads theirs
// together (4 + 1), the values passing through; the split after it gives
// the attention what the ropes gave. An unfused projection's rope becomes
// its epilogue as it is.
// CHECK-LABEL: func.func @fuse
// CHECK: %[[Y:.*]] = arch.linear %arg0, %{{.*}} : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
// CHECK-NEXT: %[[R:.*]] = arch.rope half_split epilogue %[[Y]], %arg1 {head_dim = 16 : i64, n_heads = 5 : i64, rotary_dim = 16 : i64, theta = 1.000000e+04 : f64} : (tensor<?x96xf32>, index) -> tensor<?x96xf32>
// CHECK-NEXT: %[[S:.*]]:3 = arch.split %[[R]] : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
// CHECK: %[[Q:.*]] = arch.linear %arg0, %{{.*}} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT: %[[QR:.*]] = arch.rope interleaved epilogue %[[Q]], %arg1 {head_dim = 16 : i64, n_heads = 4 : i64, rotary_dim = 8 : i64, theta = 1.000000e+04 : f64}
// CHECK: return %[[S]]#0, %[[S]]#1, %[[S]]#2, %[[QR]]
func.func @fuse(%x: tensor<?x64xf32>, %pos: index) -> (tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x64xf32>) {
  %w = arch.param @wqkv : tensor<96x64xf32>
  %y = arch.linear %x, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %q, %k, %v = arch.split %y : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %qr = arch.rope half_split %q, %pos {n_heads = 4, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  %kr = arch.rope half_split %k, %pos {n_heads = 1, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
  %wq = arch.param @wq : tensor<64x64xf32>
  %q2 = arch.linear %x, %wq : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %q2r = arch.rope interleaved %q2, %pos {n_heads = 4, head_dim = 16, rotary_dim = 8, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  return %qr, %kr, %v, %q2r : tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x64xf32>
}

// -----

arch.weight @wqkv : tensor<96x64xf32>
// Keys that rotate otherwise (another theta) stay out: the queries alone
// are the epilogue's, the keys' rope stays on its piece of the new split.
// CHECK-LABEL: func.func @first_only
// CHECK: %[[R:.*]] = arch.rope half_split epilogue %{{.*}}, %arg1 {head_dim = 16 : i64, n_heads = 4 : i64, rotary_dim = 16 : i64, theta = 1.000000e+04 : f64} : (tensor<?x96xf32>, index) -> tensor<?x96xf32>
// CHECK-NEXT: %[[S:.*]]:3 = arch.split %[[R]]
// CHECK-NEXT: %[[K:.*]] = arch.rope half_split %[[S]]#1, %arg1 {head_dim = 16 : i64, n_heads = 1 : i64, rotary_dim = 16 : i64, theta = 5.000000e+05 : f64}
// CHECK: return %[[S]]#0, %[[K]], %[[S]]#2
func.func @first_only(%x: tensor<?x64xf32>, %pos: index) -> (tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  %w = arch.param @wqkv : tensor<96x64xf32>
  %y = arch.linear %x, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %q, %k, %v = arch.split %y : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %qr = arch.rope half_split %q, %pos {n_heads = 4, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  %kr = arch.rope half_split %k, %pos {n_heads = 1, head_dim = 16, rotary_dim = 16, theta = 5.0e+05} : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return %qr, %kr, %v : tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

arch.weight @wqkv : tensor<96x64xf32>
arch.weight @bqkv : tensor<96xf32>
// Keys at another position, or of another style, stay out too; a bias
// stays with the linear (the rotation is of its sums plus the bias).
// CHECK-LABEL: func.func @other_rotation
// CHECK: %[[Y:.*]] = arch.linear %arg0, %{{.*}}, %{{.*}} : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<?x96xf32>
// CHECK-NEXT: arch.rope half_split epilogue %[[Y]], %arg1 {head_dim = 16 : i64, n_heads = 4 : i64
// CHECK: arch.rope half_split %{{.*}}#1, %arg2
// CHECK: arch.rope half_split epilogue %{{.*}}, %arg1 {head_dim = 16 : i64, n_heads = 4 : i64
// CHECK: arch.rope interleaved %{{.*}}#1, %arg1
func.func @other_rotation(%x: tensor<?x64xf32>, %pos: index, %pos2: index) -> (tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x64xf32>, tensor<?x16xf32>) {
  %w = arch.param @wqkv : tensor<96x64xf32>
  %b = arch.param @bqkv : tensor<96xf32>
  %y = arch.linear %x, %w, %b : (tensor<?x64xf32>, tensor<96x64xf32>, tensor<96xf32>) -> tensor<?x96xf32>
  %q, %k, %v = arch.split %y : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %qr = arch.rope half_split %q, %pos {n_heads = 4, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  %kr = arch.rope half_split %k, %pos2 {n_heads = 1, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
  %y2 = arch.linear %x, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %q2, %k2, %v2 = arch.split %y2 : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %q2r = arch.rope half_split %q2, %pos {n_heads = 4, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  %k2r = arch.rope interleaved %k2, %pos {n_heads = 1, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
  return %qr, %kr, %q2r, %k2r : tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x64xf32>, tensor<?x16xf32>
}

// -----

arch.weight @wqkv : tensor<96x64xf32>
arch.weight @wc : tensor<128x64xf32>
arch.weight @wr : tensor<64x64xf32>
arch.weight @wg : tensor<128x64xf32>
// Left as they are: queries read by something besides their rope, a
// first piece that no rope reads (the rotated piece must lead), a result
// that is not whole heads (128 columns of 24-wide heads), a rope over a
// linear with a residual epilogue, and one over a glu linear.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: epilogue
// CHECK: return
func.func @unfused(%x: tensor<?x64xf32>, %pos: index) -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x96xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %w = arch.param @wqkv : tensor<96x64xf32>
  %y = arch.linear %x, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %q, %k, %v = arch.split %y : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %qr = arch.rope half_split %q, %pos {n_heads = 4, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  %y2 = arch.linear %x, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %c, %kpe, %v2 = arch.split %y2 : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %kr = arch.rope half_split %kpe, %pos {n_heads = 1, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
  %wc = arch.param @wc : tensor<128x64xf32>
  %y3 = arch.linear %x, %wc : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
  %q3, %rest = arch.split %y3 : tensor<?x128xf32> -> tensor<?x96xf32>, tensor<?x32xf32>
  %q3r = arch.rope half_split %q3, %pos {n_heads = 4, head_dim = 24, rotary_dim = 24, theta = 1.0e+04} : (tensor<?x96xf32>, index) -> tensor<?x96xf32>
  %wr = arch.param @wr : tensor<64x64xf32>
  %y4 = arch.linear %x, %wr residual %x : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
  %y4r = arch.rope half_split %y4, %pos {n_heads = 4, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  %wg = arch.param @wg : tensor<128x64xf32>
  %y5 = arch.linear %x, %wg glu silu : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  %y5r = arch.rope half_split %y5, %pos {n_heads = 4, head_dim = 16, rotary_dim = 16, theta = 1.0e+04} : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
  return %q, %qr, %kr, %q3r, %rest, %y4r, %y5r, %c : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x96xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}
