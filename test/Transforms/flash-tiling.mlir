// RUN: arch-opt %s -arch-flash-tiling | FileCheck %s --check-prefixes=CHECK,L16 --implicit-check-not=arch.attention
// RUN: arch-opt %s -arch-flash-tiling=lanes=8 | FileCheck %s --check-prefixes=CHECK,L8 --implicit-check-not=arch.attention
// RUN: arch-opt %s -arch-flash-tiling=lanes=4 | FileCheck %s --check-prefixes=CHECK,L4 --implicit-check-not=arch.attention
// RUN: arch-opt %s -arch-flash-tiling=lanes=64 | FileCheck %s --check-prefix=L64
// RUN: arch-opt %s -arch-flash-tiling="block-q=4 block-kv=8 split-kv=16" | FileCheck %s --check-prefix=FIXED --implicit-check-not=arch.attention

// Every arch.attention becomes arch.flash_attention: operands and
// attributes kept, the block sizes added. For a target of `lanes` f32
// lanes, a tile's rows (block_q positions x the query heads of one kv
// head) make whole vectors, four where the group allows; block_kv is 64
// keys (or four vectors) and split_kv 1024 (or 64 vectors), 256 (or 16
// vectors) for keys from a ring cache. (A call with fewer than block_q
// rows, or one row, takes the decode chunks; block_q 1, as for 32 query
// heads per kv head at 8 lanes, still decodes in chunks.)

// Causal GQA (4 query heads per kv head): 16 x 4 = 64 rows at 16 lanes,
// 8 x 4 = 32 at 8, 4 x 4 = 16 at 4.
// CHECK-LABEL: func.func @causal_gqa
// L16: arch.flash_attention %arg0, %arg1, %arg1, %arg2 {block_kv = 64 : i64, block_q = 16 : i64, head_dim = 4 : i64, n_heads = 8 : i64, n_kv_heads = 2 : i64, scale = 5.000000e-01 : f64, split_kv = 1024 : i64}
// L8: arch.flash_attention {{.*}} {block_kv = 64 : i64, block_q = 8 : i64, {{.*}}split_kv = 1024 : i64}
// L4: arch.flash_attention {{.*}} {block_kv = 64 : i64, block_q = 4 : i64, {{.*}}split_kv = 1024 : i64}
// FIXED: arch.flash_attention {{.*}} {block_kv = 8 : i64, block_q = 4 : i64, {{.*}}split_kv = 16 : i64}
// L64: arch.flash_attention {{.*}} {block_kv = 256 : i64, block_q = 64 : i64, {{.*}}split_kv = 4096 : i64}
func.func @causal_gqa(%q: tensor<?x32xf32>, %k: tensor<?x8xf32>, %p: index) -> tensor<?x32xf32> {
  %a = arch.attention %q, %k, %k, %p {n_heads = 8, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x32xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}

// A sliding window, MHA (one query head per kv head): 64 positions at 16
// lanes.
// CHECK-LABEL: func.func @window_mha
// L16: arch.flash_attention {{.*}} {block_kv = 64 : i64, block_q = 64 : i64, head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 2 : i64, scale = 5.000000e-01 : f64, split_kv = 1024 : i64, window = 6 : i64}
// L8: {block_kv = 64 : i64, block_q = 32 : i64,
// L4: {block_kv = 64 : i64, block_q = 16 : i64,
func.func @window_mha(%q: tensor<?x8xf32>, %p: index) -> tensor<?x8xf32> {
  %a = arch.attention %q, %q, %q, %p {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5, window = 6} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// ALiBi and soft-capping, 3 query heads per kv head: 16 x 3 = 48 rows (3
// vectors) at 16 lanes; 8 x 3 = 24 at 8; 4 x 3 = 12 at 4.
// CHECK-LABEL: func.func @alibi_softcap
// L16: arch.flash_attention {{.*}} {alibi, block_kv = 64 : i64, block_q = 16 : i64, head_dim = 4 : i64, n_heads = 6 : i64, n_kv_heads = 2 : i64, scale = 5.000000e-01 : f64, softcap = 5.000000e+01 : f64, split_kv = 1024 : i64}
// L8: {alibi, block_kv = 64 : i64, block_q = 8 : i64,
// L4: {alibi, block_kv = 64 : i64, block_q = 4 : i64,
func.func @alibi_softcap(%q: tensor<?x24xf32>, %k: tensor<?x8xf32>, %p: index) -> tensor<?x24xf32> {
  %a = arch.attention %q, %k, %k, %p {n_heads = 6, n_kv_heads = 2, head_dim = 4, scale = 0.5, softcap = 50.0, alibi} : (tensor<?x24xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x24xf32>
  return %a : tensor<?x24xf32>
}

// A T5 bias table and Shaw tables stay operands; MQA with 32 query heads:
// 2 positions fill 4 vectors at 16 lanes.
arch.weight @rel : tensor<32x32xf32>
// CHECK-LABEL: func.func @t5_mqa
// L16: arch.flash_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} {block_kv = 64 : i64, block_q = 2 : i64, head_dim = 4 : i64, n_heads = 32 : i64, n_kv_heads = 1 : i64, scale = 1.000000e+00 : f64, split_kv = 1024 : i64}
// L8: bias {{.*}} {block_kv = 64 : i64, block_q = 1 : i64,
// L4: bias {{.*}} {block_kv = 64 : i64, block_q = 1 : i64,
func.func @t5_mqa(%q: tensor<?x128xf32>, %k: tensor<?x4xf32>, %p: index) -> tensor<?x128xf32> {
  %t = arch.param @rel : tensor<32x32xf32>
  %a = arch.attention %q, %k, %k, %p bias %t {n_heads = 32, n_kv_heads = 1, head_dim = 4, scale = 1.0} : (tensor<?x128xf32>, tensor<?x4xf32>, tensor<?x4xf32>, index, tensor<32x32xf32>) -> tensor<?x128xf32>
  return %a : tensor<?x128xf32>
}

arch.weight @rk : tensor<5x4xf32>
arch.weight @rv : tensor<5x4xf32>
// CHECK-LABEL: func.func @shaw
// L16: arch.flash_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} shaw %{{.*}}, %{{.*}} {block_kv = 64 : i64, block_q = 64 : i64, head_dim = 4 : i64, n_heads = 2 : i64, n_kv_heads = 2 : i64, scale = 5.000000e-01 : f64, shaw_clip = 2 : i64, split_kv = 1024 : i64}
func.func @shaw(%q: tensor<?x8xf32>, %pos: index) -> tensor<?x8xf32> {
  %rk = arch.param @rk : tensor<5x4xf32>
  %rv = arch.param @rv : tensor<5x4xf32>
  %a = arch.attention %q, %q, %q, %pos shaw %rk, %rv {n_heads = 2, n_kv_heads = 2, head_dim = 4, scale = 0.5, shaw_clip = 2} : (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}

// Keys from a ring cache (a sliding window's): shorter decode chunks,
// since a ring keeps each position's heads together; from a tokens cache
// (head-major), the longer ones.
arch.cache @ring ring 8 : tensor<2x4xf32>
arch.cache @tokens tokens 64 : tensor<2x4xf32>
// CHECK-LABEL: func.func @caches
// L16: arch.flash_attention {{.*}}split_kv = 256 : i64, window = 8 : i64}
// L16: arch.flash_attention {{.*}}split_kv = 1024 : i64}
// L8: arch.flash_attention {{.*}}split_kv = 256 : i64, window = 8 : i64}
// L8: arch.flash_attention {{.*}}split_kv = 1024 : i64}
// L64: arch.flash_attention {{.*}}split_kv = 1024 : i64, window = 8 : i64}
// L64: arch.flash_attention {{.*}}split_kv = 4096 : i64}
func.func @caches(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %p: index) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %r = arch.cache_append @ring, %k at %p : tensor<?x8xf32> -> tensor<?x8xf32>
  %a = arch.attention %q, %r, %r, %p {n_heads = 4, n_kv_heads = 2, head_dim = 4, scale = 0.5, window = 8} : (tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x16xf32>
  %t = arch.cache_append @tokens, %k at %p : tensor<?x8xf32> -> tensor<?x8xf32>
  %b = arch.attention %q, %t, %t, %p {n_heads = 4, n_kv_heads = 2, head_dim = 4, scale = 0.5} : (tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, index) -> tensor<?x16xf32>
  return %a, %b : tensor<?x16xf32>, tensor<?x16xf32>
}

// Linear attention gets its chunk: 64 rows, or linear-chunk.
// RUN: arch-opt %s -arch-flash-tiling="linear-chunk=4" | FileCheck %s --check-prefix=CHUNK
// L16: arch.linear_attention elu1 @state, {{.*}}chunk = 64 : i64
// CHUNK: arch.linear_attention elu1 @state, {{.*}}chunk = 4 : i64
arch.cache @state state : tensor<2x4x5xf32>
func.func @linear(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %a = arch.linear_attention elu1 @state, %q, %k, %k {n_heads = 4, n_kv_heads = 2, head_dim = 4, normalize, scale = 0.5 : f64} : (tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x16xf32>
  return %a : tensor<?x16xf32>
}

// Bad options: the pass fails, naming the option.
// RUN: not arch-opt %s -arch-flash-tiling=lanes=12 2>&1 | FileCheck %s --check-prefix=LANES
// LANES: error: arch-flash-tiling: lanes must be a power of two in [1, 64], got 12
// RUN: not arch-opt %s -arch-flash-tiling=block-q=-1 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: error: arch-flash-tiling: block-q, block-kv and split-kv must be in [1, 65536] (or 0 to choose), got -1, 0 and 0
// RUN: not arch-opt %s -arch-flash-tiling=split-kv=65537 2>&1 | FileCheck %s --check-prefix=BIG
// BIG: error: arch-flash-tiling: block-q, block-kv and split-kv must be in [1, 65536] (or 0 to choose), got 0, 0 and 65537
// RUN: not arch-opt %s -arch-flash-tiling=linear-chunk=0 2>&1 | FileCheck %s --check-prefix=LCHUNK
// LCHUNK: error: arch-flash-tiling: linear-chunk must be in [1, 65536], got 0
// RUN: not arch-opt %s -arch-flash-tiling=dot=f8 2>&1 | FileCheck %s --check-prefix=DOT
// DOT: error: arch-flash-tiling: dot must be f32 or bf16, got 'f8'

// dot=bf16 marks the tiles' products as bf16 dot products (bf16_dot),
// except where Shaw's tables enter the scores (their products stay f32)
// or block_kv is odd (the value products take keys in pairs).
// RUN: arch-opt %s -arch-flash-tiling=dot=bf16 | FileCheck %s --check-prefix=BF16
// RUN: arch-opt %s -arch-flash-tiling="dot=bf16 block-kv=7" | FileCheck %s --check-prefix=ODDKV --implicit-check-not=bf16_dot
// BF16-LABEL: func.func @causal_gqa
// BF16: arch.flash_attention {{.*}} {bf16_dot, block_kv = 64 : i64
// BF16-LABEL: func.func @window_mha
// BF16: arch.flash_attention {{.*}} {bf16_dot,
// BF16-LABEL: func.func @shaw
// BF16-NOT: bf16_dot
// BF16-LABEL: func.func @caches
// BF16: arch.flash_attention {{.*}} {bf16_dot,
// BF16: arch.flash_attention {{.*}} {bf16_dot,
// ODDKV: arch.flash_attention {{.*}} {block_kv = 7 : i64
