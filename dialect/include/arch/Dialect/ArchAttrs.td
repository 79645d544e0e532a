//===- ArchAttrs.td - arch enums and attributes -----------*- tablegen -*-===//
#ifndef ARCH_ATTRS_TD
#define ARCH_ATTRS_TD

include "mlir/IR/EnumAttr.td"

def Arch_NormKind : I32EnumAttr<"NormKind", "normalization", [
    I32EnumAttrCase<"rms", 0>,
  ]> {
  let cppNamespace = "::arch";
}

def Arch_RopeStyle : I32EnumAttr<"RopeStyle", "which dimensions RoPE pairs", [
    // (i, i + rotary_dim/2): GPT-NeoX and Hugging Face Llama.
    I32EnumAttrCase<"half_split", 0>,
    // (2i, 2i + 1): GPT-J, Meta's original Llama, llama2.c.
    I32EnumAttrCase<"interleaved", 1>,
  ]> {
  let cppNamespace = "::arch";
}

def Arch_Activation : I32EnumAttr<"Activation", "activation function", [
    I32EnumAttrCase<"silu", 0>,
  ]> {
  let cppNamespace = "::arch";
}

#endif // ARCH_ATTRS_TD
