//===- ArchOps.td - arch operations -----------------------*- tablegen -*-===//
#ifndef ARCH_OPS_TD
#define ARCH_OPS_TD

include "arch/Dialect/ArchDialect.td"
include "arch/Dialect/ArchAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/SymbolInterfaces.td"

// Every tensor of the dialect is ranked: verifiers read its shape.
def Arch_F32Tensor : RankedTensorOf<[F32]>;
// Weights are f32; a matmul's weight may be stored in 16 bits (arch-pack-
// weights{weight-type}), widened to f32 as the kernel reads it.
def Arch_WeightTensor : RankedTensorOf<[F32, F16, BF16]>;

//===----------------------------------------------------------------------===//
// Parameters and embeddings
//===----------------------------------------------------------------------===//

def Arch_WeightOp : Arch_Op<"weight", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a model weight, declared once at module level";
  let description = [{
    A tensor the runtime binds to a loaded checkpoint tensor of exactly this
    static shape, or, when `prepared`, one that `@prepare_params` computes
    from other weights once at load (`arch.assign`). Functions read it by
    reference with `arch.param`, so a pass can replace, concatenate or
    re-layout a weight in one place. The module's loaded weights, in order,
    are the runtime's parameter table.

    ```mlir
    arch.weight @"model.layers.0.self_attn.q_proj.weight" : tensor<288x288xf32>
    ```

    Under a naming scheme other than hf-llama, `from` names the checkpoint
    tensor that holds the values and its stored shape; `transposed` says it
    is stored [in, out] (GPT-2's Conv1D); `rows [groups, stride, offset,
    length]` takes rows g * stride + offset ..< + length of the (transposed)
    tensor for every g < groups, as from a fused query_key_value.

    ```mlir
    arch.weight @"model.layers.0.self_attn.k_proj.weight"
        from "gpt_neox.layers.0.attention.query_key_value.weight" [192, 64]
        rows [4, 48, 16, 16] : tensor<64x64xf32>
    arch.weight @"model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight"
        prepared : tensor<192x64xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Arch_WeightTensor>:$type,
                       OptionalAttr<StrAttr>:$source,
                       OptionalAttr<DenseI64ArrayAttr>:$source_shape,
                       UnitAttr:$transpose,
                       OptionalAttr<DenseI64ArrayAttr>:$rows,
                       UnitAttr:$prepared);
  let assemblyFormat = [{
    $sym_name (`from` $source^ $source_shape)? (`transposed` $transpose^)?
    (`rows` $rows^)? (`prepared` $prepared^)? attr-dict `:` $type
  }];
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::RankedTensorType":$type,
                   CArg<"bool", "false">:$prepared), [{
      build($_builder, $_state, name, type, ::mlir::StringAttr(),
            ::mlir::DenseI64ArrayAttr(), false, ::mlir::DenseI64ArrayAttr(),
            prepared);
    }]>
  ];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
  let hasVerifier = 1;
}

def Arch_ParamOp : Arch_Op<"param",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a weight";
  let description = [{
    The value of the module-level `arch.weight` of this name and type.

    ```mlir
    %wq = arch.param @"model.layers.0.self_attn.q_proj.weight" : tensor<288x288xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Arch_WeightTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Arch_AssignOp : Arch_Op<"assign",
    [MemoryEffects<[MemWrite]>,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "sets a prepared weight (in @prepare_params)";
  let description = [{
    Stores `value` into the `prepared` weight `name`. Only
    `@prepare_params`, which the runtime runs once after weights load,
    assigns weights.

    ```mlir
    arch.assign @"model.layers.0.self_attn.{q_proj,k_proj,v_proj}.weight" = %w
        : tensor<192x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name, Arch_WeightTensor:$value);
  let assemblyFormat = "$name `=` $value attr-dict `:` type($value)";
}

def Arch_CacheOp : Arch_Op<"cache", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "state a sequence keeps between forward calls";
  let description = [{
    A cache the runtime allocates per sequence, from the table the library
    exports (module order). `row` is what one position stores: for a KV
    cache `[n_kv_heads, head_dim]`, with keys and values in caches of their
    own so that they may differ in head dim (MLA's 192-wide keys, 128-wide
    values), or one latent vector per position (MLA's compressed cache).
    Its element type is the stored type (f32; f16/bf16 convert on append).
    `tokens N` keeps positions 0 ..< N (N = max_seq_len), `ring N` keeps the
    last N (a sliding window's cache, position p in row p mod N), and
    `state` keeps one `row` however long the sequence (a linear-attention
    recurrent state).

    ```mlir
    arch.cache @"model.layers.0.self_attn.k_cache" tokens 2048 : tensor<4x64xf32>
    arch.cache @"model.layers.3.self_attn.k_cache" ring 4096 : tensor<8x128xf16>
    arch.cache @"model.layers.0.attn.state" state : tensor<8x64x64xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Arch_CacheLayout:$layout,
                       OptionalAttr<I64Attr>:$capacity,
                       TypeAttrOf<AnyStaticShapeTensor>:$row);
  let assemblyFormat = "$sym_name $layout ($capacity^)? attr-dict `:` $row";
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getRowType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getRow());
    }
    /// Elements one position stores (the state's size for `state`).
    int64_t getRowElements() { return getRowType().getNumElements(); }
  }];
  let hasVerifier = 1;
}

def Arch_CacheAppendOp : Arch_Op<"cache_append",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "stores rows in a cache and reads back the context";
  let description = [{
    Stores row t of `rows` (`[T, numel(row)]`, f32) as position `pos + t`
    of the `tokens` or `ring` cache, converting to its element type, and
    returns every position the cache holds after the store, in f32: for
    `tokens`, positions 0 ..< pos + T; for `ring`, the last `capacity` of
    them in ring order. Attention reads its keys and values from the
    result, so the store and the read are one step of the dataflow.

    ```mlir
    %kc = arch.cache_append @"model.layers.0.self_attn.k_cache", %k at %pos
        : tensor<?x256xf32> -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$cache, 2DTensorOf<[F32]>:$rows,
                       Index:$pos);
  let results = (outs 2DTensorOf<[F32]>:$context);
  let assemblyFormat = "$cache `,` $rows `at` $pos attr-dict `:` type($rows) "
                       "`->` type($context)";
  let hasVerifier = 1;
}

def Arch_EmbedOp : Arch_Op<"embed", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    Row `tokens[t]` of `table`, times `scale`.

    ```mlir
    %x = arch.embed %tokens, %table {scale = 1.0 : f32}
        : (tensor<?xi32>, tensor<32000x288xf32>) -> tensor<?x288xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[I32]>:$tokens, Arch_F32Tensor:$table,
                       DefaultValuedAttr<F32Attr, "1.0">:$scale);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat =
      "$tokens `,` $table attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Norms, matmuls, activations
//===----------------------------------------------------------------------===//

def Arch_NormOp : Arch_Op<"norm", [Pure]> {
  let summary = "normalization over the last dimension";
  let description = [{
    `rms`: x / sqrt(mean(x^2) + eps) * (weight_offset + weight) (+ bias).
    `layer`: (x - mean(x)) / sqrt(var(x) + eps) * (weight_offset + weight)
    (+ bias). Gemma stores weights around 0 and scales by 1 + w. With
    `groups` = g > 1, each of g equal contiguous slices of a row is
    normalized on its own with the same weight (QK-norm per head).

    ```mlir
    %h = arch.norm rms %x, %w {eps = 1.0e-05 : f32}
        : (tensor<?x288xf32>, tensor<288xf32>) -> tensor<?x288xf32>
    %g = arch.norm layer %x, %w, %b {eps = 1.0e-05 : f32}
        : (tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, Arch_F32Tensor:$weight,
                       Optional<Arch_F32Tensor>:$bias,
                       Arch_NormKind:$kind, F32Attr:$eps,
                       DefaultValuedAttr<F32Attr, "0.0">:$weight_offset,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$kind $input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Arch_LinearOp : Arch_Op<"linear", [Pure, AttrSizedOperandSegments]> {
  let summary = "x times W transposed, plus an optional bias";
  let description = [{
    The only matmul with a weight: `result[t, n] = sum_k input[t, k] *
    weight[n, k] (+ bias[n])`, with the weight in PyTorch's [N, K] layout,
    or packed by `arch.pack` into [ceil(N / panel), K, panel]; a packed
    weight may hold f16 or bf16 elements (products and sums in f32). Over a
    bf16 weight packed in pairs ([ceil(N / panel), K / 2, panel, 2]) the
    input is rounded to bf16 too (nearest even): the bf16 dot product,
    products of bf16 pairs summed in f32 (AVX512-BF16's `vdpbf16ps`).

    With `glu` (arch-fuse-glu: a gated FFN's gate and up projections on
    one input) the weight holds 2N rows, the gate's N then the up's N
    (packed, each half on its own: `groups = 2`, 2 ceil(N / panel)
    panels), and `result[t, n] = act(g[t, n]) * u[t, n]` of the halves'
    products g and u: arch.glu as the GEMM's epilogue. No bias.

    With `residual` r (arch-fuse-residual: a residual connection's add of
    the linear's output) `result[t, n] = r[t, n] + sum_k ...`: the add as
    the GEMM's epilogue, r of the result's type. Not with `glu`.

    ```mlir
    %q = arch.linear %h, %wq
        : (tensor<?x288xf32>, tensor<288x288xf32>) -> tensor<?x288xf32>
    %m = arch.linear %h, %wgu glu silu
        : (tensor<?x288xf32>, tensor<1536x288xf32>) -> tensor<?x768xf32>
    %y = arch.linear %a, %wo residual %x : (tensor<?x288xf32>,
        tensor<288x288xf32>, tensor<?x288xf32>) -> tensor<?x288xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, Arch_WeightTensor:$weight,
                       Optional<Arch_F32Tensor>:$bias,
                       Optional<Arch_F32Tensor>:$residual,
                       OptionalAttr<Arch_Activation>:$glu);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? "
                       "(`residual` $residual^)? (`glu` $glu^)? "
                       "attr-dict `:` functional-type(operands, results)";
  let builders = [
    // A linear without an epilogue (the bias optional).
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
                   "::mlir::Value":$weight,
                   CArg<"::mlir::Value", "{}">:$bias), [{
      build($_builder, $_state, result, input, weight, bias,
            ::mlir::Value(), ::arch::ActivationAttr());
    }]>
  ];
  let hasVerifier = 1;
}

def Arch_GluOp : Arch_Op<"glu", [Pure, SameOperandsAndResultType]> {
  let summary = "gated activation: act(gate) * up";
  let description = [{
    ```mlir
    %m = arch.glu silu %g, %u : tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$gate, Arch_F32Tensor:$up,
                       Arch_Activation:$activation);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat =
      "$activation $gate `,` $up attr-dict `:` type($result)";
}

def Arch_ActivationOp : Arch_Op<"activation",
    [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise activation";
  let description = [{
    ```mlir
    %a = arch.activation gelu_tanh %h : tensor<?x3072xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, Arch_Activation:$activation);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$activation $input attr-dict `:` type($result)";
}

def Arch_SoftcapOp : Arch_Op<"softcap", [Pure, SameOperandsAndResultType]> {
  let summary = "soft-capping: cap * tanh(x / cap)";
  let description = [{
    Bounds logits smoothly to (-cap, cap) (Gemma 2's final logits: 30).

    ```mlir
    %c = arch.softcap %logits {cap = 3.0e+01 : f32} : tensor<1x256000xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, F32Attr:$cap);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Arch_ScaleOp : Arch_Op<"scale", [Pure, SameOperandsAndResultType]> {
  let summary = "multiplication by a constant (logit scale)";
  let description = [{
    ```mlir
    %s = arch.scale %logits {factor = 6.250000e-02 : f32} : tensor<1x256000xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, F32Attr:$factor);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Arch_AddOp : Arch_Op<"add", [Pure, Commutative,
                                 SameOperandsAndResultType]> {
  let summary = "elementwise sum (residual connection)";
  let description = [{
    ```mlir
    %y = arch.add %x, %o : tensor<?x288xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$lhs, Arch_F32Tensor:$rhs);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Arch_LastTokenOp : Arch_Op<"last_token", [Pure]> {
  let summary = "the last row of a token-major tensor";
  let description = [{
    Prefill needs the classifier only for the last position.
    arch-sink-last-token moves the pick up through what works row by row,
    so it may also pick a router's chosen experts (i32).

    ```mlir
    %l = arch.last_token %x : tensor<?x288xf32> -> tensor<1x288xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32, I32]>:$input);
  let results = (outs RankedTensorOf<[F32, I32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Arch_LastPositionOp : Arch_Op<"last_position", [Pure]> {
  let summary = "the position of the last row of a call's rows";
  let description = [{
    `pos + T - 1` for rows [T, N] whose first row is position `pos`: where
    arch-sink-last-token leaves an attention only the last query row, the
    attention takes it as that row's position (a decode step's, over the
    same context).

    ```mlir
    %p = arch.last_position %q, %pos : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$rows, Index:$pos);
  let results = (outs Index:$result);
  let assemblyFormat = "$rows `,` $pos attr-dict `:` type($rows)";
  let hasVerifier = 1;
}

def Arch_ConcatOp : Arch_Op<"concat", [Pure]> {
  let summary = "concatenation along one dimension";
  let description = [{
    Joins its operands along `dim`; every other dimension must agree. Fusion
    passes concatenate weights with it (rows of [N, K] weights, biases), and
    arch-hoist-param-prep moves such weight-only work to `@prepare_params`.

    ```mlir
    %w = arch.concat %wq, %wk, %wv {dim = 0 : i64}
        : (tensor<288x288xf32>, tensor<96x288xf32>, tensor<96x288xf32>)
        -> tensor<480x288xf32>
    ```
  }];
  let arguments = (ins Variadic<Arch_F32Tensor>:$inputs, I64Attr:$dim);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def Arch_PackOp : Arch_Op<"pack", [Pure]> {
  let summary = "a [N, K] weight re-laid out in column panels for the GEMM";
  let description = [{
    `result[p, k, j] = weight[p * panel + j, k]`, zero where
    `p * panel + j >= N`: the weight as ceil(N / panel) panels of `panel`
    output columns, each stored K-major, so that a register tile of the
    GEMM reads one contiguous row of a panel per step of K. `arch.linear`
    takes a packed weight in place of the [N, K] one. With `groups` = G the
    weight is G blocks of N / G rows (the experts of `arch.moe`), each
    packed on its own: G x ceil(N / G / panel) panels, none straddling two.
    The result may be f16 or bf16: each element rounded to nearest, ties to
    even (a 16-bit weight type). A bf16 result of rank 4, [panels, K / 2,
    panel, 2] (K even), holds the panels' rows in pairs:
    `result[p, i, j, e] = weight[p * panel + j, 2 * i + e]`, each pair of
    K-adjacent elements one 32-bit word, as the bf16 dot product reads them;
    the linear or experts over it round their input to bf16 too.
    Several weights of one shape are packed as their concatenation along N
    would be, each a group (`groups` = their count), without that
    concatenation being made: a glu linear's gate and up halves.

    ```mlir
    %p = arch.pack %w {panel = 64 : i64} : tensor<96x288xf32> -> tensor<2x288x64xf32>
    %gu = arch.pack %wg, %wu {groups = 2 : i64, panel = 64 : i64}
        : tensor<96x288xf32>, tensor<96x288xf32> -> tensor<4x288x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Arch_F32Tensor>:$weights, I64Attr:$panel,
                       OptionalAttr<I64Attr>:$groups);
  let results = (outs Arch_WeightTensor:$result);
  let assemblyFormat =
      "$weights attr-dict `:` type($weights) `->` type($result)";
  let hasVerifier = 1;
}

def Arch_SplitOp : Arch_Op<"split", [Pure]> {
  let summary = "consecutive column blocks of a token-major tensor";
  let description = [{
    Result i holds the columns of `input` after those of results 0 .. i - 1,
    as wide as its type says; together they cover the input. Lowered as
    strided views of the input's buffer, never a copy.

    ```mlir
    %q, %k, %v = arch.split %qkv
        : tensor<?x480xf32> -> tensor<?x288xf32>, tensor<?x96xf32>, tensor<?x96xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input);
  let results = (outs Variadic<Arch_F32Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def Arch_HeadsSplitOp : Arch_Op<"heads_split", [Pure]> {
  let summary = "each head's consecutive column blocks";
  let description = [{
    The input's columns are `heads` heads of equal width; result i holds,
    head by head, the columns of each head after those of results
    0 .. i - 1, as many per head as its width / heads. Multi-head latent
    attention splits each query head into its part without position and its
    rotary part, and each up-projected latent head into key and value.

    ```mlir
    %qn, %qr = arch.heads_split %q {heads = 4 : i64}
        : tensor<?x96xf32> -> tensor<?x64xf32>, tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, I64Attr:$heads);
  let results = (outs Variadic<Arch_F32Tensor>:$results);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($results)";
  let hasVerifier = 1;
}

def Arch_HeadsConcatOp : Arch_Op<"heads_concat", [Pure]> {
  let summary = "heads joined head by head";
  let description = [{
    Head h of the result is head h of each input in turn. An input of one
    head is shared: every head of the result takes it (MLA's rotary key,
    one for all heads). Every input has `heads` heads or one.

    ```mlir
    %k = arch.heads_concat %kn, %kr {heads = 4 : i64}
        : (tensor<?x64xf32>, tensor<?x8xf32>) -> tensor<?x96xf32>
    ```
  }];
  let arguments = (ins Variadic<Arch_F32Tensor>:$inputs, I64Attr:$heads,
                       DenseI64ArrayAttr:$input_heads);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def Arch_HeadLinearOp : Arch_Op<"head_linear", [Pure]> {
  let summary = "a linear per head, each with its own weight";
  let description = [{
    Head h (of `heads`) of the input, K wide, times weight block h: `[N, K]`
    blocks (the rows h N ..< (h + 1) N of a [heads N, K] weight, as arch.linear
    takes its weight), or with `k_major` `[K, N]` blocks (rows h K ..<
    (h + 1) K of [heads K, N]); head h of the result is N wide. arch-absorb-mla
    applies MLA's per-head up-projections with it: the query's part without
    position through W_UK (K-major, as the checkpoint keeps it) into the
    latent space, and the attention's latent output through W_UV.

    ```mlir
    %ql = arch.head_linear %qn, %wuk {heads = 4 : i64, k_major}
        : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, Arch_F32Tensor:$weight,
                       I64Attr:$heads, UnitAttr:$k_major);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Arch_DifferentialOp : Arch_Op<"differential", [Pure]> {
  let summary = "differential attention's difference of two attention maps";
  let description = [{
    `first - lambda * second`, where the inputs are the outputs of the two
    softmax maps of differential attention (DIFF Transformer, Ye et al.
    2024) over the same values and lambda = exp(lambda_q1 . lambda_k1) -
    exp(lambda_q2 . lambda_k2) + `lambda_init`, from the layer's four
    learned vectors (one lambda per layer, shared by its heads). The
    per-head RMSNorm and the (1 - lambda_init) factor that follow are
    arch.norm and arch.scale.

    ```mlir
    %d = arch.differential %a1, %a2, %lq1, %lk1, %lq2, %lk2
        {lambda_init = 2.000000e-01 : f64}
        : (tensor<?x256xf32>, tensor<?x256xf32>, tensor<32xf32>,
           tensor<32xf32>, tensor<32xf32>, tensor<32xf32>)
        -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$first, Arch_F32Tensor:$second,
                       Arch_F32Tensor:$lambda_q1, Arch_F32Tensor:$lambda_k1,
                       Arch_F32Tensor:$lambda_q2, Arch_F32Tensor:$lambda_k2,
                       F64Attr:$lambda_init);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Arch_RouteOp : Arch_Op<"route", [Pure]> {
  let summary = "a mixture-of-experts router: the top k experts per token";
  let description = [{
    From router logits [T, E]: scores (softmax over the experts, or the
    sigmoid of each); with `n_group` > 1, the experts split into n_group
    groups of consecutive experts and only the `topk_group` best groups
    kept (a group's score is its best expert's with softmax scores, the sum
    of its best two with sigmoid scores, as DeepSeek-V2 and V3 route);
    then the `top_k` best experts, ties to the lower index. `bias` (a
    selection-only bias, DeepSeek-V3's e_score_correction_bias) is added
    to the scores for choosing groups and experts, not to the weights.
    Results: the chosen experts [T, k] (best first) and their weights,
    each the expert's score, divided by the k scores' sum when `normalize`,
    times `scaling`.

    ```mlir
    %e, %w = arch.route softmax %logits {top_k = 2 : i64, normalize = true,
                                         n_group = 1 : i64, topk_group = 1 : i64,
                                         scaling = 1.0 : f32}
        : (tensor<?x8xf32>) -> (tensor<?x2xi32>, tensor<?x2xf32>)
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$logits, Optional<Arch_F32Tensor>:$bias,
                       Arch_RouterScoring:$scoring, I64Attr:$top_k,
                       BoolAttr:$normalize, I64Attr:$n_group,
                       I64Attr:$topk_group, F32Attr:$scaling);
  let results = (outs RankedTensorOf<[I32]>:$experts, Arch_F32Tensor:$weights);
  let assemblyFormat = "$scoring $logits (`bias` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Arch_MoEOp : Arch_Op<"moe", [Pure]> {
  let summary = "the routed experts' FFNs, weighted and summed per token";
  let description = [{
    `result[t] = sum_j weights[t, j] * FFN_e(input[t])`, e = experts[t, j]:
    expert e's FFN is `down_e(act(gate_e x) * up_e x)` (or, without
    `gate`, `down_e(act(up_e x))`). The expert weights are stacked: `up`
    and `gate` [E * d_ff, D], expert e's rows e * d_ff ..< (e + 1) * d_ff;
    `down` [E * D, d_ff]; or packed by `arch.pack` with groups = E (in bf16
    pairs: each expert's input rounded to bf16, as `arch.linear`'s). Only
    the rows routed to an expert pass through it, and only the experts some
    token chose are read.

    ```mlir
    %y = arch.moe silu %h, %e, %w gate %g up %u down %d
        {n_experts = 8 : i64, d_ff = 64 : i64}
        : (tensor<?x32xf32>, tensor<?x2xi32>, tensor<?x2xf32>,
           tensor<512x32xf32>, tensor<512x32xf32>, tensor<256x64xf32>)
        -> tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, RankedTensorOf<[I32]>:$experts,
                       Arch_F32Tensor:$weights, Optional<Arch_WeightTensor>:$gate,
                       Arch_WeightTensor:$up, Arch_WeightTensor:$down,
                       Arch_Activation:$activation, I64Attr:$n_experts,
                       I64Attr:$d_ff);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat =
      "$activation $input `,` $experts `,` $weights (`gate` $gate^)? `up` $up "
      "`down` $down attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Positions and attention
//===----------------------------------------------------------------------===//

def Arch_RopeOp : Arch_Op<"rope", [Pure]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates the first `rotary_dim` dimensions of each of `n_heads` heads of
    `input` by angle `(pos + t) * theta^(-2i / rotary_dim)` for token `t`,
    pairing dimensions as `style` says. `pos` is the position of the first
    token (the number already in the KV cache). `scaling` and its factors
    adjust the frequencies for context extension (see RopeScaling); with
    yarn, cos and sin are scaled by m(mscale) / m(mscale_all_dim), m(x) =
    0.1 x ln(factor) + 1 (1 for x = 0): YaRN's own factor by default, 1 as
    DeepSeek sets them (it scales the softmax instead). With longrope, pair
    i's frequency is divided by `factors[i]` (one per rotated pair: the
    spec's short or long list, as its context picks) and cos and sin are
    scaled by `attention_factor`.

    With `epilogue` (arch-fuse-rope) the input is an `arch.linear`'s
    result, read by this op alone, that may be wider than the rotated
    heads: its columns past `n_heads * head_dim` pass through unchanged
    (a fused projection's values), and the linear's kernel rotates its
    output as it stores it, so that no kernel of its own runs.

    ```mlir
    %qr = arch.rope interleaved %q, %pos {n_heads = 6, head_dim = 48,
        rotary_dim = 48, theta = 1.0e+04}
        : (tensor<?x288xf32>, index) -> tensor<?x288xf32>
    %kr = arch.rope half_split scaling llama3 %k, %pos {factor = 8.0,
        original_max_seq_len = 8192, n_heads = 8, head_dim = 128,
        rotary_dim = 128, theta = 5.0e+05}
        : (tensor<?x1024xf32>, index) -> tensor<?x1024xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, Index:$pos, Arch_RopeStyle:$style,
                       I64Attr:$n_heads, I64Attr:$head_dim,
                       I64Attr:$rotary_dim, F64Attr:$theta,
                       DefaultValuedAttr<Arch_RopeScaling,
                                         "::arch::RopeScaling::none">:$scaling,
                       DefaultValuedAttr<F64Attr, "1.0">:$factor,
                       DefaultValuedAttr<I64Attr, "0">:$original_max_seq_len,
                       DefaultValuedAttr<F64Attr, "1.0">:$low_freq_factor,
                       DefaultValuedAttr<F64Attr, "4.0">:$high_freq_factor,
                       DefaultValuedAttr<F64Attr, "32.0">:$beta_fast,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta_slow,
                       DefaultValuedAttr<F64Attr, "1.0">:$mscale,
                       DefaultValuedAttr<F64Attr, "0.0">:$mscale_all_dim,
                       OptionalAttr<DenseF64ArrayAttr>:$factors,
                       DefaultValuedAttr<F64Attr, "1.0">:$attention_factor,
                       UnitAttr:$epilogue);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$style (`scaling` $scaling^)? (`epilogue` $epilogue^)? "
                       "$input `,` $pos "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Arch_PosEmbedOp : Arch_Op<"pos_embed", [Pure]> {
  let summary = "absolute position embedding added to the token embedding";
  let description = [{
    Row `t` of `input` plus the embedding of position `pos + t`: row
    `pos + t + offset` of `table` (learned), or sin/cos of the position
    (sinusoidal: dimension 2i is sin(p / 10000^(2i/d)), 2i + 1 its cos).

    ```mlir
    %y = arch.pos_embed learned %x, %pos, %table {offset = 2 : i64}
        : (tensor<?x768xf32>, index, tensor<1024x768xf32>) -> tensor<?x768xf32>
    %z = arch.pos_embed sinusoidal %x, %pos {offset = 0 : i64}
        : (tensor<?x512xf32>, index) -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Arch_F32Tensor:$input, Index:$pos,
                       Optional<Arch_F32Tensor>:$table, Arch_PosEmbedKind:$kind,
                       DefaultValuedAttr<I64Attr, "0">:$offset);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$kind $input `,` $pos (`,` $table^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

// arch.attention and its tiled form share operands, attributes, syntax and
// verifier; the tiled form adds its block sizes.
class Arch_AttentionBase<string mnemonic, dag tiling>
    : Arch_Op<mnemonic, [Pure, AttrSizedOperandSegments]> {
  let arguments = !con(
      (ins Arch_F32Tensor:$query, Arch_F32Tensor:$key, Arch_F32Tensor:$value,
           Index:$pos, Optional<Arch_F32Tensor>:$rel_bias,
           Optional<Arch_F32Tensor>:$rel_key,
           Optional<Arch_F32Tensor>:$rel_value,
           I64Attr:$n_heads,
           I64Attr:$n_kv_heads, I64Attr:$head_dim, F64Attr:$scale,
           DefaultValuedAttr<F64Attr, "0.0">:$softcap,
           UnitAttr:$alibi,
           DefaultValuedAttr<I64Attr, "0">:$window,
           DefaultValuedAttr<I64Attr, "128">:$t5_max_distance,
           DefaultValuedAttr<I64Attr, "0">:$shaw_clip,
           DefaultValuedAttr<I64Attr, "0">:$v_head_dim,
           DefaultValuedAttr<I64Attr, "1">:$dilation,
           OptionalAttr<DenseI64ArrayAttr>:$global_tokens,
           DefaultValuedAttr<I64Attr, "0">:$random_blocks,
           DefaultValuedAttr<I64Attr, "0">:$block_size,
           DefaultValuedAttr<I64Attr, "0">:$random_seed),
      tiling);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$query `,` $key `,` $value `,` $pos "
                       "(`bias` $rel_bias^)? "
                       "(`shaw` $rel_key^ `,` $rel_value)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
  code attentionClassDeclaration = [{
    /// The value (and result) head dim: head_dim unless v_head_dim is set.
    int64_t getValueHeadDim() {
      return getVHeadDim() ? int64_t(getVHeadDim()) : int64_t(getHeadDim());
    }
  }];
  let extraClassDeclaration = attentionClassDeclaration;
}

def Arch_AttentionOp : Arch_AttentionBase<"attention", (ins)> {
  let summary = "causal scaled-dot-product attention over a context";
  let description = [{
    Attends each query row `t` (position `pos + t`) over the rows of `key`
    and `value` that hold positions up to `pos + t` (causal): the context an
    `arch.cache_append` returns, whose last row is position pos + T - 1
    (its first is position 0 for a tokens cache, a later one for a ring,
    which only a windowed attention may read). `n_heads` query heads share `n_kv_heads`
    key/value heads (MHA, GQA, MQA). With `softcap` > 0 the scaled scores
    become softcap * tanh(scores / softcap) (Gemma 2); with `alibi` each
    head h adds -slope_h * (query position - key position) (Press et al.
    2022); with `window` > 0 a query attends only to the last `window`
    positions (sliding-window attention, Mistral, Gemma 2 local layers);
    with `dilation` d > 1 as well, the window's keys are d apart: key j is
    in the window of query i when i - j < window * d and d divides i - j
    (Longformer's dilated window); `global_tokens`, a list of positions,
    widen a window: a global key is attended by every later query and a
    global query attends to every earlier key (Longformer, BigBird); with
    `random_blocks` r > 0, positions form blocks of `block_size` and query
    block Q > 0 also attends to key blocks drawn(Q, m) for m < r, each a
    32-bit hash of (`random_seed`, Q, m) modulo Q (BigBird's random keys,
    among the earlier blocks; the same for every head).
    With a `rel_bias` table [t5_buckets, n_heads], scores add
    rel_bias[bucket(query - key), h] with T5's causal log buckets (Raffel
    et al. 2020) up to `t5_max_distance`. With `rel_key` and `rel_value`
    tables [2 shaw_clip + 1, head_dim] (Shaw et al. 2018), the key and
    value of position j for query position i gain row
    clip(j - i, -shaw_clip, shaw_clip) + shaw_clip. With `v_head_dim`
    set, values (and the result) have heads of that width, not head_dim
    (multi-head latent attention: 192-wide keys and 128-wide values naive,
    576 and 512 absorbed).

    ```mlir
    %kc = arch.cache_append @"model.layers.0.self_attn.k_cache", %k at %pos
        : tensor<?x288xf32> -> tensor<?x288xf32>
    %vc = arch.cache_append @"model.layers.0.self_attn.v_cache", %v at %pos
        : tensor<?x288xf32> -> tensor<?x288xf32>
    %a = arch.attention %q, %kc, %vc, %pos {n_heads = 6, n_kv_heads = 6,
        head_dim = 48, scale = 0.144}
        : (tensor<?x288xf32>, tensor<?x288xf32>, tensor<?x288xf32>, index)
        -> tensor<?x288xf32>
    ```
  }];
}

def Arch_FlashAttentionOp : Arch_AttentionBase<"flash_attention",
    (ins I64Attr:$block_q, I64Attr:$block_kv, I64Attr:$split_kv,
         UnitAttr:$bf16_dot)> {
  let summary = "arch.attention, tiled, with an online softmax";
  let description = [{
    The attention of `arch.attention` (same operands, attributes and
    meaning), computed without a score matrix (arch-flash-tiling makes it).
    With at least `block_q` query rows, tiles of `block_q` query rows times
    the query heads of one key/value head meet blocks of `block_kv` keys:
    each block's scores, maximum, exponentials and value products are
    merged into a running maximum, sum and rescaled accumulator per row,
    and blocks wholly past a tile's causal or window limit are skipped.
    With fewer rows (decode), the context is cut into chunks of `split_kv`
    keys, each chunk's partial maximum, sum and accumulator computed in
    parallel and the partials merged. With `bf16_dot`, the tiles' products
    Q.K^T and P.V are bf16 dot products (queries, keys, the block's
    exponentials and values rounded to bf16, sums in f32); decode's chunks
    stay f32. It needs an even head_dim and block_kv and takes no Shaw
    relative positions.

    ```mlir
    %a = arch.flash_attention %q, %kc, %vc, %pos {n_heads = 6,
        n_kv_heads = 6, head_dim = 48, scale = 0.144, block_q = 64,
        block_kv = 64, split_kv = 256}
        : (tensor<?x288xf32>, tensor<?x288xf32>, tensor<?x288xf32>, index)
        -> tensor<?x288xf32>
    ```
  }];
}

def Arch_LinearAttentionOp : Arch_Op<"linear_attention",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "causal linear attention through a recurrent state";
  let description = [{
    Linear attention (Katharopoulos et al. 2020): with phi the
    `feature_map` (elu(x) + 1, identity or relu) applied to each query and
    key head, query row t of head h (key/value head g = h / (n_heads /
    n_kv_heads)) gets

      S_t = S_0 + sum over rows s <= t of phi(k_s) v_s^T   [head_dim, v]
      out_t = phi(q_t) S_t / (phi(q_t) z_t + 1e-6)         (`normalize`)
      out_t = scale * phi(q_t) S_t                          (otherwise)

    where z_t = z_0 + sum over s <= t of phi(k_s) is the normalizer. The
    state cache `state` ([n_kv_heads, head_dim, v_head_dim + 1] with
    `normalize`, the last column z; [.., v_head_dim] without) holds S_0
    (and z_0), what the sequence's earlier calls left, and receives S_T:
    decode cost and memory stay constant in position. With `chunk` C > 0,
    rows are taken in chunks of C: a chunk's rows meet the state at the
    chunk's start (a prefix of per-chunk sums) and the earlier rows of
    their own chunk quadratically; with 0, the call's rows are one chunk.
    RoPE and QK-norm, where a layer has them, come before.

    ```mlir
    arch.cache @"model.layers.0.self_attn.state" state : tensor<2x32x33xf32>
    %a = arch.linear_attention elu1 @"model.layers.0.self_attn.state", %q,
        %k, %v {n_heads = 4, n_kv_heads = 2, head_dim = 32, normalize,
        scale = 0.17677669529663687, chunk = 64}
        : (tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32>)
        -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state, Arch_F32Tensor:$query,
                       Arch_F32Tensor:$key, Arch_F32Tensor:$value,
                       I64Attr:$n_heads, I64Attr:$n_kv_heads,
                       I64Attr:$head_dim,
                       DefaultValuedAttr<I64Attr, "0">:$v_head_dim,
                       Arch_FeatureMap:$feature_map, UnitAttr:$normalize,
                       F64Attr:$scale,
                       DefaultValuedAttr<I64Attr, "0">:$chunk);
  let results = (outs Arch_F32Tensor:$result);
  let assemblyFormat = "$feature_map $state `,` $query `,` $key `,` $value "
                       "attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The value (and result) head dim: head_dim unless v_head_dim is set.
    int64_t getValueHeadDim() {
      return getVHeadDim() ? int64_t(getVHeadDim()) : int64_t(getHeadDim());
    }
    /// The state's columns: the value head, plus the normalizer's.
    int64_t getStateColumns() {
      return getValueHeadDim() + (getNormalize() ? 1 : 0);
    }
  }];
}

#endif // ARCH_OPS_TD
