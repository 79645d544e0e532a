//===- ArchDialect.td - The arch dialect ------------------*- tablegen -*-===//
#ifndef ARCH_DIALECT_TD
#define ARCH_DIALECT_TD

include "mlir/IR/OpBase.td"

def Arch_Dialect : Dialect {
  let name = "arch";
  let cppNamespace = "::arch";
  let summary = "Transformer architecture operations";
  let description = [{
    Ops of a decoder-only transformer at the level a model card describes it:
    embeddings, norms, linear layers, rotary embeddings, attention with a KV
    cache, gated FFNs and residual adds. Tensors have value semantics; the
    leading (token) dimension is dynamic. Weights are module-level
    `arch.weight` symbols that the runtime binds to loaded tensors (or
    computes once at load, `prepared`); functions read them with
    `arch.param`.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class Arch_Op<string mnemonic, list<Trait> traits = []>
    : Op<Arch_Dialect, mnemonic, traits>;

#endif // ARCH_DIALECT_TD
