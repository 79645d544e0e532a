//===- ArchKOps.td - The kernel-call level ------------------*- tablegen -*-===//
//
// What arch-lower-to-kernels produces: kernel calls on memref buffers.
// Activations are `memref.alloc`s whose token-row count is an `index`
// value, views are `memref.subview` / `memref.expand_shape` / `memref.cast`
// (no copy), weights and caches are the buffers named below. The C glue is
// printed from this form, one case per op.
//
//===----------------------------------------------------------------------===//
#ifndef ARCHK_OPS_TD
#define ARCHK_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def ArchK_Dialect : Dialect {
  let name = "archk";
  let cppNamespace = "::arch::archk";
  let summary = "kernel calls on buffers: the level the C glue is printed from";
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

class ArchK_Op<string mnemonic, list<Trait> traits = []>
    : Op<ArchK_Dialect, mnemonic, traits>;

def ArchK_F32MemRef : MemRefOf<[F32]>;
// What a cache stores (--kv-type).
def ArchK_CacheMemRef : MemRefOf<[F32, F16, BF16]>;
// A weight's buffer: f32, or a prepared 16-bit one (--weight-type).
def ArchK_WeightMemRef : MemRefOf<[F32, F16, BF16]>;

def ArchK_WeightOp : ArchK_Op<"weight",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the buffer of a weight the module declares";
  let description = [{
    The memory of `arch.weight @name`: loaded at startup, or filled by
    `@prepare_params` when the weight is prepared. Its shape is the weight's.

    ```mlir
    %w = archk.weight @"model.layers.0.mlp.up_proj.weight" : memref<768x288xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs ArchK_WeightMemRef:$buffer);
  let assemblyFormat = "$name attr-dict `:` type($buffer)";
}

def ArchK_CacheOp : ArchK_Op<"cache",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the current sequence's buffer of a cache the module declares";
  let description = [{
    The memory of `arch.cache @name` for the sequence a call runs on, of
    the cache's element type (f32, f16 or bf16):
    - a tokens cache of rows [heads, head_dim] (a KV cache) is head-major,
      [heads, capacity, head_dim]: each head's positions are consecutive
      rows. The runtime allocates the positions the sequence holds, so the
      head stride is dynamic (the sequence's capacity x head_dim);
    - another tokens cache is [capacity, elements per row];
    - a ring is [2 x capacity, elements per row], position-major: the
      runtime maps its rows twice in a row, so that row r + capacity is
      row r and any `capacity` consecutive positions are consecutive rows.

    ```mlir
    %k = archk.cache @"model.layers.0.self_attn.k_cache"
        : memref<4x256x64xf32, strided<[?, 64, 1]>>
    %r = archk.cache @"model.layers.1.self_attn.k_cache" : memref<512x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs ArchK_CacheMemRef:$buffer);
  let assemblyFormat = "$name attr-dict `:` type($buffer)";
}

def ArchK_CallOp : ArchK_Op<"call",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "a call of one compiled kernel";
  let description = [{
    Runs the kernel of kind `kind` specialized on the static values of
    `kernel` (the fields of its description in Kernels.h) over `args`, in
    the order the kind declares them: memref buffers (f32; the i32 tokens;
    16-bit weights, caches and, from archk-bf16-inputs, bf16 dot products'
    inputs, as each kind's fields say) and the `index` position. The last
    buffer is the output, the others are read. Calls with equal `kind` and `kernel` share one compiled
    kernel. The verifier checks the description and every argument's type
    against the kind.

    ```mlir
    archk.call "linear" {K = 288 : i64, N = 768 : i64, bias = false,
                         one_row = false, panel = 0 : i64}
        (%x, %w, %out) : memref<?x288xf32>, memref<768x288xf32>, memref<?x768xf32>
    ```
  }];
  let arguments = (ins StrAttr:$kind, DictionaryAttr:$kernel,
                       Variadic<AnyType>:$args);
  let assemblyFormat = "$kind $kernel `(` $args `)` attr-dict `:` type($args)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kernel's description, read from `kind` and `kernel`.
    ::arch::KernelSpec getSpec();
  }];
}

def ArchK_AcquireOp : ArchK_Op<"acquire"> {
  let summary = "a loaded weight about to be read for the first time";
  let description = [{
    In `@prepare_params`, before the first read of a loaded weight that
    `@forward` never reads (the weights `archk.release` marks): a runtime
    that defers converting a checkpoint's tensor (a 16-bit one, or one
    transposed or gathered from a fused tensor) converts it here, so that
    only the tensors preparation is reading are held as f32 at once.

    ```mlir
    archk.acquire %w : memref<64x64xf32>
    ```
  }];
  let arguments = (ins Arg<ArchK_F32MemRef, "", [MemWrite]>:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def ArchK_ReleaseOp : ArchK_Op<"release"> {
  let summary = "a loaded weight not read again: the runtime may drop it";
  let description = [{
    In `@prepare_params`, after the last read of a loaded weight that
    `@forward` never reads: its memory goes back (a prepared weight replaces
    its source instead of doubling it).

    ```mlir
    archk.release %w : memref<64x64xf32>
    ```
  }];
  let arguments = (ins Arg<ArchK_F32MemRef, "", [MemFree]>:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def ArchK_DispatchOp : ArchK_Op<"dispatch"> {
  let summary = "a call's routed pairs sorted by expert (a counting sort)";
  let description = [{
    From the experts chosen per token ([T, k], each below `n_experts`):
    `offsets` [n_experts + 1] (expert e's rows of the sorted order are
    offsets[e] ..< offsets[e + 1]), `rows` [T * k] (the token of each
    sorted row) and `slots` [T, k] (the sorted row of each pair). Stable:
    an expert's rows keep token order. Integer bookkeeping in linear time,
    printed as a call of the runtime's `archrt_gen_moe_dispatch`; the
    experts' matmuls then run over `rows`' gathered inputs, one expert
    after another (an `scf.for` over the offsets).
    ```mlir
    archk.dispatch %experts -> %offsets, %rows, %slots {n_experts = 8 : i64}
        : memref<?x2xi32>, memref<9xi32>, memref<?xi32>, memref<?x2xi32>
    ```
  }];
  let arguments = (ins Arg<MemRefOf<[I32]>, "", [MemRead]>:$experts,
                       Arg<MemRefOf<[I32]>, "", [MemWrite]>:$offsets,
                       Arg<MemRefOf<[I32]>, "", [MemWrite]>:$rows,
                       Arg<MemRefOf<[I32]>, "", [MemWrite]>:$slots,
                       I64Attr:$n_experts);
  let assemblyFormat = "$experts `->` $offsets `,` $rows `,` $slots attr-dict "
                       "`:` type($experts) `,` type($offsets) `,` type($rows) "
                       "`,` type($slots)";
  let hasVerifier = 1;
}

#endif // ARCHK_OPS_TD
