//===- ArchAttrs.td - arch enums and attributes -----------*- tablegen -*-===//
#ifndef ARCH_ATTRS_TD
#define ARCH_ATTRS_TD

include "mlir/IR/EnumAttr.td"

def Arch_NormKind : I32EnumAttr<"NormKind", "normalization", [
    I32EnumAttrCase<"rms", 0>,
    // (x - mean) / sqrt(var + eps) * w (+ b): Ba et al. 2016.
    I32EnumAttrCase<"layer", 1>,
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

def Arch_RopeScaling : I32EnumAttr<"RopeScaling", "RoPE context extension", [
    I32EnumAttrCase<"none", 0>,
    // Position interpolation: inv_freq / factor (Chen et al. 2023).
    I32EnumAttrCase<"linear", 1>,
    // NTK-aware: theta * factor^(rotary_dim / (rotary_dim - 2)).
    I32EnumAttrCase<"ntk", 2>,
    // YaRN (Peng et al. 2023): per-frequency ramp between interpolation and
    // extrapolation, cos/sin scaled by 0.1 ln(factor) + 1.
    I32EnumAttrCase<"yarn", 3>,
    // Llama 3.1: low frequencies / factor, high kept, smooth in between.
    I32EnumAttrCase<"llama3", 4>,
    // LongRoPE (Phi-3 128k, Phi-3.5): each pair's frequency over its own
    // factor (`factors`), cos/sin times `attention_factor`.
    I32EnumAttrCase<"longrope", 5>,
  ]> {
  let cppNamespace = "::arch";
}

def Arch_Activation : I32EnumAttr<"Activation", "activation function", [
    I32EnumAttrCase<"silu", 0>,         // x * sigmoid(x)
    I32EnumAttrCase<"gelu", 1>,         // x * Phi(x), exact (erf)
    I32EnumAttrCase<"gelu_tanh", 2>,    // tanh approximation (GPT-2)
    I32EnumAttrCase<"gelu_sigmoid", 3>, // x * sigmoid(1.702 x)
    I32EnumAttrCase<"relu", 4>,
    I32EnumAttrCase<"squared_relu", 5>, // relu(x)^2 (Primer, Nemotron-4)
    I32EnumAttrCase<"sigmoid", 6>,      // GLU's original gate
    I32EnumAttrCase<"identity", 7>,     // bilinear GLU
  ]> {
  let cppNamespace = "::arch";
}

def Arch_RouterScoring : I32EnumAttr<"RouterScoring",
    "how a mixture-of-experts router scores its experts", [
    // softmax over every expert (Mixtral, Qwen-MoE, DeepSeek-V2).
    I32EnumAttrCase<"softmax", 0>,
    // sigmoid of each logit (DeepSeek-V3).
    I32EnumAttrCase<"sigmoid", 1>,
  ]> {
  let cppNamespace = "::arch";
}

def Arch_PosEmbedKind : I32EnumAttr<"PosEmbedKind", "absolute positions", [
    // A trained table row per position (GPT-2, OPT with offset 2).
    I32EnumAttrCase<"learned", 0>,
    // sin/cos of position / 10000^(2i/d) (Vaswani et al. 2017).
    I32EnumAttrCase<"sinusoidal", 1>,
  ]> {
  let cppNamespace = "::arch";
}

def Arch_CacheLayout : I32EnumAttr<"CacheLayout", "how a cache keeps tokens", [
    // One row per position, up to `capacity` positions (a KV cache).
    I32EnumAttrCase<"tokens", 0>,
    // The rows of the last `capacity` positions, position p in row
    // p mod capacity (a sliding-window layer's cache).
    I32EnumAttrCase<"ring", 1>,
    // One fixed-size state, however many tokens went by (linear
    // attention's recurrent state).
    I32EnumAttrCase<"state", 2>,
  ]> {
  let cppNamespace = "::arch";
}

def Arch_FeatureMap : I32EnumAttr<"FeatureMap",
    "linear attention's feature map phi, applied to queries and keys", [
    // elu(x) + 1 (Katharopoulos et al. 2020): positive, so the normalizer
    // phi(q) . sum phi(k) is too.
    I32EnumAttrCase<"elu1", 0>,
    I32EnumAttrCase<"identity", 1>,
    I32EnumAttrCase<"relu", 2>,
  ]> {
  let cppNamespace = "::arch";
}

def Arch_StoreType : I32EnumAttr<"StoreType",
    "the element type a buffer stores (a KV cache: --kv-type)", [
    I32EnumAttrCase<"f32", 0>,
    // IEEE half: 10-bit mantissa, 5-bit exponent.
    I32EnumAttrCase<"f16", 1>,
    // bfloat16: f32's exponent, 7-bit mantissa.
    I32EnumAttrCase<"bf16", 2>,
    // 32-bit integers: expert indices and routed-row tables of arch.moe.
    I32EnumAttrCase<"i32", 3>,
  ]> {
  let cppNamespace = "::arch";
}

#endif // ARCH_ATTRS_TD
