//===- Passes.td - arch rewrites ----------------------------*- tablegen -*-===//
#ifndef ARCH_TRANSFORMS_PASSES_TD
#define ARCH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Attention forms
//===----------------------------------------------------------------------===//

def AbsorbMLAPass : Pass<"arch-absorb-mla", "::mlir::ModuleOp"> {
  let summary = "multi-head latent attention computed in the latent space";
  let description = [{
    Naive MLA (as archc imports it) up-projects every cached latent to
    per-head keys and values on every call: a `linear` of the context by
    kv_b_proj, split per head into k_nope and v, the shared rotary key
    appended to each key head. This pass folds the up-projections away
    from the cache (DeepSeek-V2, section 2.1.3): W_UK (the k_nope rows of
    kv_b_proj, per head [qk_nope, kv_lora]) moves to the query side, where
    `arch.head_linear` takes each head's q_nope into the latent space; the
    attention then has one key/value head, the cached rows themselves
    ([latent, rotary key] as keys, the latent as values, v_head_dim =
    kv_lora_rank); W_UV (the value rows, per head [v_head_dim, kv_lora])
    applies per head to the attention's latent output, before o_proj.
    Nothing per position is up-projected: decode reads the cache once.

    W_UK and W_UV become weights of their own, the rows of the checkpoint's
    kv_b_proj the runtime assembles at load (`rows [heads, qk_nope + v,
    offset, length]`); kv_b_proj itself is no longer loaded. With
    `fold-output`, W_UV is also multiplied into o_proj at load (one
    `arch.head_linear` of the two weights, hoisted to `@prepare_params`):
    the output projection becomes one linear from the attention's latent
    output. Off by default: that product [d_model, n_heads x kv_lora] is
    kv_lora / v_head_dim times o_proj's size (4x for DeepSeek), bytes every
    decoded token would read (bench/mla.sh measures both).

    ```mlir
    %kv = arch.linear %lat, %wkvb : ... -> tensor<?x192xf32>
    %kn, %v = arch.heads_split %kv {heads = 4 : i64} : ...
    %k = arch.heads_concat %kn, %kr {heads = 4 : i64, input_heads = array<i64: 4, 1>} : ...
    %a = arch.attention %q, %k, %v, %pos {head_dim = 24, n_heads = 4, n_kv_heads = 4, v_head_dim = 16, ...}
    // becomes
    %ql = arch.head_linear %qn, %wuk {heads = 4 : i64, k_major} : ...
    %q2 = arch.heads_concat %ql, %qr {heads = 4 : i64, input_heads = array<i64: 4, 4>} : ...
    %o = arch.attention %q2, %ctx, %lat, %pos {head_dim = 40, n_heads = 4, n_kv_heads = 1, v_head_dim = 32, ...}
    %a = arch.head_linear %o, %wuv {heads = 4 : i64} : ...
    ```
  }];
  let options = [
    Option<"foldOutput", "fold-output", "bool", /*default=*/"false",
           "multiply W_UV into o_proj at load">
  ];
  let dependentDialects = ["::arch::ArchDialect"];
}

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

def SinkLastTokenPass : Pass<"arch-sink-last-token", "::mlir::ModuleOp"> {
  let summary = "the last layer from its attention on, for the last token only";
  let description = [{
    A forward call returns the last token's logits: `arch.last_token` picks
    that row after the last layer. This pass moves the pick up through
    every op that works row by row and whose results only picks read
    (`arch.norm`, `linear`, `add`, `glu`, `activation`, `softcap`,
    `scale`, `split`, `heads_split`, `heads_concat`, `head_linear`,
    `differential`, `route`, `moe`), so those ops compute one row: the last
    layer's output projection, residual adds, norm and FFN (or experts) no
    longer compute the prompt's other T - 1 rows. Into an attention it
    moves as a decode step: `attention(q, k, v, pos)` becomes
    `attention(last_token(q), k, v, last_position(q, pos))`, the last
    query row alone at its position pos + T - 1, over the same context.
    The picks stop at what reads other rows or the position (RoPE: the
    query's rotation stays on every row) and at values something else
    reads in full (the residual stream the last layer's attention input is
    normalized from). One token (decode) computes the same; a prompt of
    128 tokens into bench-156m's 8 layers computes 11% less of its linears
    (the last layer's output projection and FFN, 86% of its matmul
    weights) and an eighth less of its attention.

    ```mlir
    %a = arch.attention %q, %k, %v, %pos {...} : (tensor<?x64xf32>, ...) -> tensor<?x64xf32>
    %o = arch.linear %a, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %y = arch.add %x, %o : tensor<?x64xf32>
    %l = arch.last_token %y : tensor<?x64xf32> -> tensor<1x64xf32>
    // becomes
    %q1 = arch.last_token %q : tensor<?x64xf32> -> tensor<1x64xf32>
    %x1 = arch.last_token %x : tensor<?x64xf32> -> tensor<1x64xf32>
    %p1 = arch.last_position %q, %pos : tensor<?x64xf32>
    %a1 = arch.attention %q1, %k, %v, %p1 {...} : (tensor<1x64xf32>, ...) -> tensor<1x64xf32>
    %o1 = arch.linear %a1, %wo : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
    %l = arch.add %x1, %o1 : tensor<1x64xf32>
    ```
  }];
  let dependentDialects = ["::arch::ArchDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def FuseQKVPass : Pass<"arch-fuse-qkv", "::mlir::ModuleOp"> {
  let summary = "one projection for the query, key and value of an attention";
  let description = [{
    The q, k and v `arch.linear`s that feed one `arch.attention` (directly
    or through QK-norm and RoPE) and read the same value become one linear
    over their concatenated weights (and biases), followed by an
    `arch.split` whose results are views of its output. MHA, GQA and MQA
    alike; linears on different inputs, or some with a bias and some
    without, stay apart.

    ```mlir
    %q = arch.linear %h, %wq : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %k = arch.linear %h, %wk : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
    %v = arch.linear %h, %wv : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
    // becomes
    %w = arch.concat %wq, %wk, %wv {dim = 0 : i64}
        : (tensor<64x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<96x64xf32>
    %qkv = arch.linear %h, %w : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
    %q, %k, %v = arch.split %qkv
        : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
    ```

    The concatenation depends on weights only: arch-hoist-param-prep moves
    it to load time.
  }];
  let dependentDialects = ["::arch::ArchDialect"];
}

def FuseParallelBlockPass
    : Pass<"arch-fuse-parallel-block", "::mlir::ModuleOp"> {
  let summary = "one GEMM in and one GEMM out of a parallel block";
  let description = [{
    In parallel blocks (GPT-J, PaLM, Falcon, Command: `x + attn(n(x)) +
    ffn(n(x))`), the attention's input projection (q/k/v, fused or not)
    and the FFN's input projections that read the same normalized value
    become one linear and one `arch.split` (when all have a bias or none);
    and the attention output projection and the FFN down projection, whose
    results are summed, become one linear over the concatenated
    activations, with the weights concatenated along K and the biases
    added. Serial blocks have neither shape and are untouched.

    ```mlir
    %o = arch.linear %a, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %d = arch.linear %m, %wd : (tensor<?x256xf32>, tensor<64x256xf32>) -> tensor<?x64xf32>
    %s = arch.add %o, %d : tensor<?x64xf32>
    // becomes
    %am = arch.concat %a, %m {dim = 1 : i64}
        : (tensor<?x64xf32>, tensor<?x256xf32>) -> tensor<?x320xf32>
    %w = arch.concat %wo, %wd {dim = 1 : i64}
        : (tensor<64x64xf32>, tensor<64x256xf32>) -> tensor<64x320xf32>
    %s = arch.linear %am, %w : (tensor<?x320xf32>, tensor<64x320xf32>) -> tensor<?x64xf32>
    ```
  }];
  let dependentDialects = ["::arch::ArchDialect"];
}

def FuseGluPass : Pass<"arch-fuse-glu", "::mlir::ModuleOp"> {
  let summary = "a gated FFN's gating as the epilogue of one GEMM";
  let description = [{
    `arch.glu act(g, u)` of two bias-free `arch.linear`s on the same
    input, read by nothing else, becomes one linear over their weights
    concatenated along N, gate first, with the gating as its epilogue
    (`glu act`): its kernel computes each gate panel with its up panel in
    one task and writes act(gate) * up, so the [T, 2 d_ff] products stay
    in the caches (while a task's fit) and arch.glu's pass over them is
    gone. A parallel
    block's gate and up, already fused with its q/k/v by
    arch-fuse-parallel-block, stay as they are.

    ```mlir
    %g = arch.linear %h, %wg : (tensor<?x64xf32>, tensor<192x64xf32>) -> tensor<?x192xf32>
    %u = arch.linear %h, %wu : (tensor<?x64xf32>, tensor<192x64xf32>) -> tensor<?x192xf32>
    %m = arch.glu silu %g, %u : tensor<?x192xf32>
    // becomes
    %w = arch.concat %wg, %wu {dim = 0 : i64}
        : (tensor<192x64xf32>, tensor<192x64xf32>) -> tensor<384x64xf32>
    %m = arch.linear %h, %w glu silu : (tensor<?x64xf32>, tensor<384x64xf32>) -> tensor<?x192xf32>
    ```
  }];
  let dependentDialects = ["::arch::ArchDialect"];
}

def FuseResidualPass : Pass<"arch-fuse-residual", "::mlir::ModuleOp"> {
  let summary = "a residual connection's add as the epilogue of its linear";
  let description = [{
    `arch.add x, linear(h, W)`, the linear read by nothing else and with no
    epilogue of its own, becomes `arch.linear h, W residual x`: its kernel
    adds x where it stores each output tile, so the linear's [T, N] result
    is never written and read back and the add's kernel call is gone (an
    attention block's output projection, an FFN's down projection, a
    parallel block's fused output).

    ```mlir
    %o = arch.linear %a, %wo : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    %y = arch.add %x, %o : tensor<?x64xf32>
    // becomes
    %y = arch.linear %a, %wo residual %x : (tensor<?x64xf32>,
        tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let dependentDialects = ["::arch::ArchDialect"];
}

def FuseRopePass : Pass<"arch-fuse-rope", "::mlir::ModuleOp"> {
  let summary = "RoPE as the epilogue of the projection it rotates";
  let description = [{
    The `arch.rope`s of a projection's leading pieces (a fused projection's
    queries and keys: each piece read by its rope alone, all rotating
    alike but for their heads) become one `arch.rope {epilogue}` over the
    linear's whole result, its heads theirs together; the columns after
    them (the values) pass through. A rope that alone reads a linear's
    result (an unfused projection) becomes its epilogue as it is. The
    linear's kernel rotates its output heads as its tasks store them, so
    the queries and keys are not stored, read back and stored again by
    RoPE kernels of their own. Not over a linear with a glu or residual
    epilogue, nor where the result is not whole panels of `panel` columns
    (arch-pack-weights' panel: the kernel's tasks are whole heads and
    panels).

    ```mlir
    %y = arch.linear %h, %wqkv : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
    %q, %k, %v = arch.split %y : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
    %qr = arch.rope half_split %q, %pos {head_dim = 16, n_heads = 4, rotary_dim = 16, theta = 1.0e+04}
        : (tensor<?x64xf32>, index) -> tensor<?x64xf32>
    %kr = arch.rope half_split %k, %pos {head_dim = 16, n_heads = 1, rotary_dim = 16, theta = 1.0e+04}
        : (tensor<?x16xf32>, index) -> tensor<?x16xf32>
    // becomes
    %y = arch.linear %h, %wqkv : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
    %r = arch.rope half_split epilogue %y, %pos {head_dim = 16, n_heads = 5, rotary_dim = 16, theta = 1.0e+04}
        : (tensor<?x96xf32>, index) -> tensor<?x96xf32>
    %qr, %kr, %v = arch.split %r : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x16xf32>, tensor<?x16xf32>
    ```
    (With `panel=32`: the 96 columns are three panels.)
  }];
  let options = [
    Option<"panel", "panel", "int64_t", /*default=*/"64",
           "the packed weights' panel: the result must be whole panels">,
  ];
  let dependentDialects = ["::arch::ArchDialect"];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def FlashTilingPass : Pass<"arch-flash-tiling", "::mlir::ModuleOp"> {
  let summary = "attention tiled with an online softmax, blocks per target";
  let description = [{
    Every `arch.attention` becomes `arch.flash_attention`: the same
    attention, computed block by block with a running maximum, sum and
    rescaled accumulator per query row, so that no [T, context] score
    buffer exists. Every attention form is covered (causal, sliding window,
    ALiBi, T5 bias, Shaw, soft-capping; QK-norm comes before attention).
    Linear attention is tiled too: every `arch.linear_attention` gets
    `chunk` = linear-chunk rows (64), so that a call's rows meet the
    recurrent state chunk by chunk (O(T chunk d + T d^2)) instead of each
    other (O(T^2 d), the untiled form).

    The blocks are chosen for the target's f32 vector width `lanes`: a
    tile's rows (block_q query positions times the query heads that share
    one key/value head) fill four vectors where the group size allows and
    are always a whole number of vectors, so the score and value products
    are register tiles of vectors of rows; block_kv is 64 keys (four
    vectors where that is more; a tile's last block stops at the group
    of keys, 4 where block_kv allows, holding its last query:
    docs/design.md); a decode call (fewer than block_q rows) splits the
    context into chunks of split_kv keys done in parallel: 1024 (or 64
    vectors where that is more) where the keys come from a tokens cache,
    which is head-major, so that a chunk streams one head's keys and
    values from contiguous memory; 256 (or sixteen vectors) from a ring,
    whose chunks take every head's scores at once.

    ```mlir
    %a = arch.attention %q, %kc, %vc, %pos {n_heads = 8, n_kv_heads = 2,
        head_dim = 16, scale = 0.25} : ...
    // becomes, with lanes = 16 (4 query heads per key/value head)
    %a = arch.flash_attention %q, %kc, %vc, %pos {block_kv = 64,
        block_q = 16, head_dim = 16, n_heads = 8, n_kv_heads = 2,
        scale = 0.25, split_kv = 1024} : ...
    ```
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"16",
           "f32 lanes of the target's vectors (16 AVX-512, 8 AVX2, 4 SSE)">,
    Option<"blockQ", "block-q", "int64_t", /*default=*/"0",
           "query positions per tile (0: chosen from lanes)">,
    Option<"blockKv", "block-kv", "int64_t", /*default=*/"0",
           "keys per block (0: max(64, 4 x lanes))">,
    Option<"splitKv", "split-kv", "int64_t", /*default=*/"0",
           "keys per parallel chunk when decoding (0: max(1024, 64 x lanes), "
           "max(256, 16 x lanes) from a ring cache)">,
    Option<"linearChunk", "linear-chunk", "int64_t", /*default=*/"64",
           "rows per chunk of arch.linear_attention">,
    Option<"dot", "dot", "std::string", /*default=*/"\"f32\"",
           "the tiles' products: f32, or bf16 (bf16_dot: bf16 dot products "
           "with f32 sums, where head_dim and block_kv are even and the "
           "attention takes no Shaw positions)">,
  ];
  let dependentDialects = ["::arch::ArchDialect"];
}

//===----------------------------------------------------------------------===//
// Weight preparation
//===----------------------------------------------------------------------===//

def PackWeightsPass : Pass<"arch-pack-weights", "::mlir::ModuleOp"> {
  let summary = "GEMM weights re-laid out in panels of the register tile";
  let description = [{
    Every `arch.linear` reads its weight through `arch.pack` (the one-row
    classifier only where its weight has no other reader: a tied embedding
    table is not copied): ceil(N / panel) panels of `panel` output
    columns, each stored K-major, which the GEMM kernel's register tile
    streams contiguously. Weights with fewer than `min-columns` outputs stay
    as they are. The packing depends on weights only, so
    arch-hoist-param-prep moves it to load time.

    With `weight-type` f16 or bf16, every matmul weight (every
    `arch.linear`'s, the classifier and the router included, and the
    experts of `arch.moe`) is packed and stored in that type, rounded to
    nearest even; the kernels widen it to f32 as they read it. Embedding
    tables, norms, biases and MLA's per-head `arch.head_linear` weights stay
    f32.

    With `input-type` bf16 too (weight-type bf16), the weights of even K are
    packed in pairs ([panels, K / 2, panel, 2]): their matmuls round their
    input to bf16 and take the bf16 dot product (`vdpbf16ps` where the CPU
    has AVX512-BF16), as llama.cpp does with bf16 weights. Odd K keeps the
    plain panels and an f32 input.

    ```mlir
    %y = arch.linear %x, %w : (tensor<?x288xf32>, tensor<768x288xf32>) -> tensor<?x768xf32>
    // becomes
    %p = arch.pack %w {panel = 64 : i64} : tensor<768x288xf32> -> tensor<12x288x64xf32>
    %y = arch.linear %x, %p : (tensor<?x288xf32>, tensor<12x288x64xf32>) -> tensor<?x768xf32>
    ```
  }];
  let options = [
    Option<"panel", "panel", "int64_t", /*default=*/"64",
           "output columns per panel (the register tile's width)">,
    Option<"minColumns", "min-columns", "int64_t", /*default=*/"16",
           "leave linears with fewer output columns unpacked">,
    Option<"weightType", "weight-type", "std::string", /*default=*/"\"f32\"",
           "element type of the packed weights: f32, f16 or bf16">,
    Option<"inputType", "input-type", "std::string", /*default=*/"\"f32\"",
           "the matmuls' input type: f32, or bf16 with bf16 weights">,
  ];
  let dependentDialects = ["::arch::ArchDialect"];
}

def HoistParamPrepPass : Pass<"arch-hoist-param-prep", "::mlir::ModuleOp"> {
  let summary = "moves weight-only computation to @prepare_params";
  let description = [{
    Every value of `@forward` that depends only on weights (concatenations
    made by the fusion passes, later re-layouts for the kernels) becomes a
    `prepared` `arch.weight`, computed once by `@prepare_params`, which the
    runtime runs when weights load. `@forward` reads it with `arch.param`,
    so no forward call repeats the work. A prepared weight's name shows
    where it came from: `model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight`.

    ```mlir
    %w = arch.concat %wq, %wk, %wv {dim = 0 : i64} : ... -> tensor<96x64xf32>
    // becomes, in @forward
    %w = arch.param @"model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight"
        : tensor<96x64xf32>
    // and in @prepare_params
    arch.assign @"model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight" = %c
        : tensor<96x64xf32>
    ```
  }];
  let dependentDialects = ["::arch::ArchDialect", "::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// The kernel-call level
//===----------------------------------------------------------------------===//

def LowerToKernelsPass : Pass<"arch-lower-to-kernels", "::mlir::ModuleOp"> {
  let summary = "arch ops on tensors -> archk kernel calls on buffers";
  let description = [{
    One conversion pattern per `arch` op turns `@forward` and
    `@prepare_params` into kernel calls on memrefs:

    - each op's result is a `memref.alloc` whose token-row count is an
      `index` value (`memref.dim` of the tokens, `%pos + %T` of a cache's
      context, `1` of the last token), written by one `archk.call`;
    - views are ops, not copies: `arch.split` becomes column
      `memref.subview`s of the fused projection's output, `arch.last_token`
      a one-row subview, `arch.cache_append` a copy into rows `pos ..` of
      the `archk.cache` buffer and the subview of rows `0 ..< pos + T` as
      the context; a kernel that sees heads reads a `memref.expand_shape`;
    - `arch.param` becomes `archk.weight`, `arch.assign` a copy into the
      prepared weight's buffer.

    Then the logits are written straight into a new third argument of
    `@forward` (`memref<1xVxf32>`), a prepared weight computed by one kernel
    straight into its buffer, and `archk.release` follows the last read of
    each loaded weight that only `@prepare_params` reads. Caches that are
    rings, states or not f32, keys and values that are not a cache's
    context, and a second append to one cache have no lowering yet: each is
    an error at its op.

    ```mlir
    %q = arch.linear %h, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
    // becomes
    %w = archk.weight @"model.layers.0.self_attn.q_proj.weight" : memref<64x64xf32>
    %q = memref.alloc(%T) : memref<?x64xf32>
    archk.call "linear" {K = 64 : i64, N = 64 : i64, bias = false,
                         one_row = false, panel = 0 : i64}
        (%h, %w, %q) : memref<?x64xf32>, memref<64x64xf32>, memref<?x64xf32>
    ```
  }];
  let dependentDialects = ["::arch::archk::ArchKDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def Bf16InputsPass : Pass<"archk-bf16-inputs", "::mlir::ModuleOp"> {
  let summary = "a bf16 dot product's x rounded by the kernel that writes it";
  let description = [{
    On the kernel-call level: a linear over a weight in pairs (the bf16 dot
    product) rounds its x to bf16 before its tasks, in a pass over the
    rows of its own. Where x's buffer is written by a norm, attention, a
    gather (a mixture's routed rows), a glu or activation kernel, or a glu
    linear over panels, and every other reader of it (through any view) is
    such a linear's x over dense rows, the writer stores bf16 instead (its
    `store`) and the readers take it as it is (`input`): the buffer and its
    views become bf16, the same rounded values, half the bytes, and no
    rounding pass. Any other reader keeps the buffer f32.

    ```mlir
    archk.call "norm" {..., width = 64 : i64}(%x, %w, %h) : ..., memref<?x1x64xf32>
    archk.call "linear" {K = 64 : i64, ..., pairs = true, ...}(%h2, %wq, %q) : memref<?x64xf32>, ...
    // becomes
    archk.call "norm" {..., store = "bf16", width = 64 : i64}(%x, %w, %h) : ..., memref<?x1x64xbf16>
    archk.call "linear" {K = 64 : i64, ..., input = "bf16", pairs = true, ...}(%h2, %wq, %q) : memref<?x64xbf16>, ...
    ```
  }];
  let dependentDialects = ["::arch::archk::ArchKDialect",
                           "::mlir::memref::MemRefDialect"];
}

def PlanBuffersPass : Pass<"archk-plan-buffers", "::mlir::ModuleOp"> {
  let summary = "activation slots and scratch offsets from buffer liveness";
  let description = [{
    On the kernel-call level, `mlir::Liveness` gives each `memref.alloc`
    its live range (through to the last use of any view of it). A linear
    scan then gives every allocation with a token-row count an activation
    slot (`archk.slot`), reusing a slot once its last reader has run, and
    every fixed-size allocation (weight-only work) an offset in floats into
    the function's scratch memory (`archk.offset`), first fit among those
    live at once. The function records what the runtime allocates:
    `archk.slot_widths` (floats per token row of each slot) and
    `archk.scratch_floats`. Allocations tagged `archk.context` hold a
    context's rows, pos + T of them (naive MLA's keys and values
    up-projected from every cached latent): they share slots only among
    themselves, listed in `archk.context_slots`, which the runtime sizes for
    the sequence's positions instead of a call's chunk of tokens.

    ```mlir
    %0 = memref.alloc(%T) {archk.slot = 0 : i64} : memref<?x64xf32>
    ```
  }];
  let dependentDialects = ["::arch::archk::ArchKDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // ARCH_TRANSFORMS_PASSES_TD
