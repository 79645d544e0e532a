#!/usr/bin/python3
"""Independent PyTorch reference for archc.

Reads the same TOML spec as archc, makes seeded random weights (or loads a
llama2.c checkpoint), writes them as safetensors, and computes logits. It
follows the published formulas, not archc's code: every forward pass
recomputes the whole sequence without a KV cache, in float64, so the
reference's own rounding is far below the tolerance it checks.

Run with Debian's /usr/bin/python3 (python3-torch, python3-numpy).
"""
import argparse
import json
import math
import struct
import sys
import tomllib

import numpy as np
import torch


class Spec:
    """The keys of a spec that the reference needs, with archc's defaults."""

    def __init__(self, path):
        with open(path, "rb") as f:
            t = tomllib.load(f)
        m, a = t["model"], t["attention"]
        self.name = m["name"]
        self.vocab = m["vocab_size"]
        self.d = m["d_model"]
        self.layers = m["n_layers"]
        self.max_seq = m["max_seq_len"]
        self.tied = m.get("tie_embeddings", False)
        self.emb_scale = m.get("embedding_scale", 1.0)
        norm = t.get("norm", {})
        self.eps = norm.get("eps", 1e-5)
        self.norm_kind = norm.get("kind", "rmsnorm")
        self.norm_bias = norm.get("bias", False)
        self.placement = norm.get("placement", "pre")
        self.final_norm = norm.get("final", True)
        self.weight_offset = norm.get("weight_offset", 0.0)
        self.embedding_norm = norm.get("embedding_norm", False)
        out = t.get("output", {})
        self.final_softcap = out.get("final_softcap", 0.0)
        self.lm_bias = out.get("bias", False)
        self.logit_scale = out.get("logit_scale", 1.0)
        block = t.get("block", {})
        self.parallel = block.get("layout", "serial") == "parallel"
        self.shared_norm = block.get("shared_norm", True)
        self.heads = a["n_heads"]
        self.kv_heads = a.get("n_kv_heads", self.heads)
        self.head_dim = a.get("head_dim", self.d // self.heads)
        # Multi-head latent attention (DeepSeek-V2, section 2.1).
        self.mla = a.get("mla")
        if self.mla:
            self.q_lora = self.mla.get("q_lora_rank", 0)
            self.kv_lora = self.mla["kv_lora_rank"]
            self.d_nope = self.mla["qk_nope_head_dim"]
            self.d_rope = self.mla["qk_rope_head_dim"]
            self.d_v = self.mla["v_head_dim"]
            self.head_dim = self.d_nope + self.d_rope
        # Differential attention (Ye et al. 2024): queries and keys of
        # half-heads, two maps over each full-width value head.
        self.differential = a.get("differential", False)
        # Linear attention (Katharopoulos et al. 2020): its feature map, or
        # "none" (softmax); per layer.
        self.linear = a.get("linear", "none")
        self.linear_normalize = a.get("linear_normalize", True)
        qk_dim = self.head_dim // 2 if self.differential else self.head_dim
        self.scale = a.get("scale", 1.0 / math.sqrt(qk_dim))
        self.qkv_bias = a.get("qkv_bias", False)
        self.out_bias = a.get("out_bias", False)
        self.softcap = a.get("softcap", 0.0)
        self.qk_norm = a.get("qk_norm", "none")
        self.window = a.get("window", 0)
        self.dilation = a.get("dilation", 1)
        self.global_tokens = a.get("global_tokens", [])
        self.random_blocks = a.get("random_blocks", 0)
        self.block_size = a.get("block_size", 0)
        self.random_seed = a.get("random_seed", 0)
        pos = a.get("position", {})
        self.pos_kind = pos.get("kind", "rope")
        self.rope = self.pos_kind == "rope"
        self.pos_offset = pos.get("offset", 0)
        self.scaling = pos.get("scaling", "none")
        self.factor = pos.get("factor", 1.0)
        self.orig_max = pos.get("original_max_seq_len", 0)
        self.low_freq = pos.get("low_freq_factor", 1.0)
        self.high_freq = pos.get("high_freq_factor", 4.0)
        self.beta_fast = pos.get("beta_fast", 32.0)
        self.beta_slow = pos.get("beta_slow", 1.0)
        self.buckets = pos.get("buckets", 32)
        self.clip = pos.get("clip", 16)
        self.max_distance = pos.get("max_distance", 128)
        self.theta = pos.get("theta", 10000.0)
        self.rotary_dim = pos.get("rotary_dim", qk_dim)
        if self.mla:
            self.rotary_dim = self.d_rope
        # DeepSeek's YaRN (modeling_deepseek.py): cos and sin times
        # m(mscale) / m(mscale_all_dim), the softmax scale times
        # m(mscale_all_dim)^2, m(x) = 0.1 x ln(factor) + 1.
        self.mscale = pos.get("mscale", 1.0)
        self.mscale_all_dim = pos.get("mscale_all_dim", 0.0)
        # LongRoPE (Phi-3 128k): a factor per pair, the long list's where
        # the context passes the original one; cos and sin times the
        # attention factor.
        self.short_factor = pos.get("short_factor")
        self.long_factor = pos.get("long_factor")
        self.attention_factor = pos.get("attention_factor")
        if ("scale" not in a and self.scaling == "yarn"
                and self.mscale_all_dim and self.factor > 1):
            m = 0.1 * self.mscale_all_dim * math.log(self.factor) + 1.0
            self.scale *= m * m
        self.style = pos.get("style", "half_split")
        ffn = t["ffn"]
        self.d_ff = ffn["d_ff"]
        self.glu = ffn.get("kind", "glu") == "glu"
        self.act = ffn.get("activation", "silu")
        self.ffn_bias = ffn.get("bias", False)
        moe = t.get("moe")
        self.moe = moe is not None
        self.moe_layer = False
        if moe:
            self.n_experts = moe["n_experts"]
            self.top_k = moe["top_k"]
            self.expert_d_ff = moe.get("d_ff", self.d_ff)
            self.router = moe.get("router", "softmax_topk")
            self.normalize = moe.get("normalize",
                                     self.router != "softmax_topk")
            self.selection_bias = moe.get("selection_bias", False)
            self.n_group = moe.get("n_group", 1)
            self.topk_group = moe.get("topk_group", 1)
            self.routed_scaling = moe.get("routed_scaling", 1.0)
            self.n_shared = moe.get("n_shared_experts", 0)
            self.shared_d_ff = moe.get("shared_d_ff",
                                       self.n_shared * self.expert_d_ff)
            self.first_k_dense = moe.get("first_k_dense", 0)
            self.shared_gate = moe.get("shared_gate", False)
        self.overrides = t.get("layer_overrides", [])
        self.naming = t.get("weights", {}).get("naming", "hf-llama")

    def selects(self, o, i):
        if "every" in o:
            return i % o["every"] == o.get("offset", 0)
        if "layers" in o:
            return i in o["layers"]
        return i < o["first"]

    def layer(self, i):
        """This spec as layer i sees it: every override that selects i
        applied in order."""
        import copy
        ls = copy.copy(self)
        ls.moe_layer = self.moe and i >= self.first_k_dense
        for o in self.overrides:
            if not self.selects(o, i):
                continue
            a = o.get("attention", {})
            for key, attr in [("scale", "scale"), ("softcap", "softcap"),
                              ("qk_norm", "qk_norm"), ("window", "window"),
                              ("dilation", "dilation"),
                              ("global_tokens", "global_tokens"),
                              ("random_blocks", "random_blocks"),
                              ("block_size", "block_size"),
                              ("random_seed", "random_seed"),
                              ("linear", "linear"),
                              ("linear_normalize", "linear_normalize")]:
                if key in a:
                    setattr(ls, attr, a[key])
            pos = a.get("position", {})
            for key, attr in [("kind", "pos_kind"), ("theta", "theta"),
                              ("rotary_dim", "rotary_dim"), ("style", "style"),
                              ("scaling", "scaling"), ("factor", "factor"),
                              ("original_max_seq_len", "orig_max"),
                              ("low_freq_factor", "low_freq"),
                              ("high_freq_factor", "high_freq"),
                              ("beta_fast", "beta_fast"),
                              ("beta_slow", "beta_slow"),
                              ("short_factor", "short_factor"),
                              ("long_factor", "long_factor"),
                              ("attention_factor", "attention_factor")]:
                if key in pos:
                    setattr(ls, attr, pos[key])
            ls.rope = ls.pos_kind == "rope"
            f = o.get("ffn", {})
            if "kind" in f:
                ls.glu = f["kind"] == "glu"
            for key, attr in [("activation", "act"), ("d_ff", "d_ff"),
                              ("bias", "ffn_bias")]:
                if key in f:
                    setattr(ls, attr, f[key])
            if "moe" in f:
                ls.moe_layer = f["moe"] and self.moe
        return ls

    def norm_names(self, i):
        """The norms of layer i, in the order they apply."""
        p = f"model.layers.{i}."
        if self.parallel:
            return [p + "input_layernorm"] + (
                [] if self.shared_norm else [p + "post_attention_layernorm"])
        if self.placement in ("post", "post_sublayer"):
            return [p + "post_attention_layernorm",
                    p + "post_feedforward_layernorm"]
        if self.placement == "sandwich":
            return [p + "input_layernorm", p + "post_attention_layernorm",
                    p + "pre_feedforward_layernorm",
                    p + "post_feedforward_layernorm"]
        return [p + "input_layernorm", p + "post_attention_layernorm"]

    def param_shapes(self):
        """Hugging Face Llama tensor names and shapes."""
        d, q, kv, ff = self.d, self.heads * self.head_dim, \
            self.kv_heads * self.head_dim, self.d_ff
        shapes = {"model.embed_tokens.weight": (self.vocab, d)}
        if self.pos_kind == "t5_bias":
            shapes["model.relative_attention_bias.weight"] = (self.buckets, self.heads)
        if self.pos_kind == "learned":
            shapes["model.embed_positions.weight"] = (
                self.max_seq + self.pos_offset, d)

        def norm(prefix, width=d):
            shape = width if isinstance(width, tuple) else (width,)
            shapes[prefix + ".weight"] = shape
            if self.norm_bias:
                shapes[prefix + ".bias"] = shape

        def linear(prefix, n_out, n_in, bias):
            shapes[prefix + ".weight"] = (n_out, n_in)
            if bias:
                shapes[prefix + ".bias"] = (n_out,)

        for i in range(self.layers):
            p = f"model.layers.{i}."
            ls = self.layer(i)
            ff = ls.d_ff
            for n in self.norm_names(i):
                norm(n)
            if self.mla:  # DeepSeek's names
                a = p + "self_attn."
                qw = self.heads * self.head_dim
                if self.q_lora:
                    linear(a + "q_a_proj", self.q_lora, d, False)
                    norm(a + "q_a_layernorm", self.q_lora)
                    linear(a + "q_b_proj", qw, self.q_lora, False)
                else:
                    linear(a + "q_proj", qw, d, False)
                linear(a + "kv_a_proj_with_mqa", self.kv_lora + self.d_rope,
                       d, False)
                norm(a + "kv_a_layernorm", self.kv_lora)
                linear(a + "kv_b_proj", self.heads * (self.d_nope + self.d_v),
                       self.kv_lora, False)
                linear(a + "o_proj", d, self.heads * self.d_v, False)
            else:
                for name, n_out in [("q", q), ("k", kv), ("v", kv)]:
                    linear(p + f"self_attn.{name}_proj", n_out, d,
                           self.qkv_bias)
                linear(p + "self_attn.o_proj", d, q, self.out_bias)
            if self.differential:
                for name in ("lambda_q1", "lambda_k1", "lambda_q2",
                             "lambda_k2"):
                    shapes[p + "self_attn." + name] = (self.head_dim // 2,)
                shapes[p + "self_attn.subln.weight"] = (self.head_dim,)
            if ls.pos_kind == "shaw":
                for name in ("rel_key", "rel_value"):
                    shapes[p + f"self_attn.{name}.weight"] = (
                        2 * ls.clip + 1, self.head_dim)
            if ls.qk_norm in ("head", "full"):
                per_head = ls.qk_norm == "head"
                norm(p + "self_attn.q_norm", self.head_dim if per_head else q)
                norm(p + "self_attn.k_norm", self.head_dim if per_head else kv)
            elif ls.qk_norm == "head_separate":  # a weight per head
                norm(p + "self_attn.q_norm", (self.heads, self.head_dim))
                norm(p + "self_attn.k_norm", (self.kv_heads, self.head_dim))
            def mlp(prefix, ff):
                linear(prefix + "up_proj", ff, d, ls.ffn_bias)
                if ls.glu:
                    linear(prefix + "gate_proj", ff, d, ls.ffn_bias)
                linear(prefix + "down_proj", d, ff, ls.ffn_bias)
            if ls.moe_layer:
                linear(p + "mlp.gate", self.n_experts, d, False)
                if self.selection_bias:
                    shapes[p + "mlp.gate.e_score_correction_bias"] = (
                        self.n_experts,)
                for e in range(self.n_experts):
                    mlp(p + f"mlp.experts.{e}.", self.expert_d_ff)
                if self.n_shared and self.shared_gate:  # Qwen-MoE's names
                    mlp(p + "mlp.shared_expert.", self.shared_d_ff)
                    linear(p + "mlp.shared_expert_gate", 1, d, False)
                elif self.n_shared:
                    mlp(p + "mlp.shared_experts.", self.shared_d_ff)
            else:
                mlp(p + "mlp.", ff)
        if self.final_norm:
            norm("model.norm")
        if self.embedding_norm:
            norm("model.embed_layernorm")
        if not self.tied:
            shapes["lm_head.weight"] = (self.vocab, d)
        if self.lm_bias:
            shapes["lm_head.bias"] = (self.vocab,)
        return shapes


def random_weights(spec, seed):
    """Seeded weights with activations of unit scale: matrices N(0, 1/fan_in),
    embeddings N(0, 1), norm weights 1 + N(0, 0.1^2), biases N(0, 0.1^2)."""
    g = torch.Generator().manual_seed(seed)
    w = {}
    for name, shape in spec.param_shapes().items():
        if name.endswith(".bias") or name.endswith("_bias"):
            w[name] = 0.1 * torch.randn(shape, generator=g)
        elif ".lambda_" in name:  # differential attention: lambda moves
            w[name] = 0.3 * torch.randn(shape, generator=g)  # by ~0.5
        elif len(shape) == 1 or name.split(".")[-2].endswith("norm"):
            w[name] = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name == "model.embed_tokens.weight":
            w[name] = torch.randn(shape, generator=g)
        else:
            w[name] = torch.randn(shape, generator=g) / math.sqrt(shape[1])
    return {k: v.float().contiguous() for k, v in w.items()}


def write_safetensors(path, tensors, dtype="F32"):
    """F32, F16 or BF16 (rounded to nearest even)."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        if dtype == "F32":
            data = t.numpy().astype("<f4").tobytes()
        else:
            half = torch.float16 if dtype == "F16" else torch.bfloat16
            data = t.to(half).view(torch.int16).numpy().astype("<i2").tobytes()
        header[name] = {"dtype": dtype, "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


# Each family's Hugging Face checkpoint layout, as its modeling code reads
# it: (our module, theirs) per layer and for the whole model. Fused q/k/v
# and gate/up tensors and GPT-2's Conv1D are built in hf_checkpoint.
HF_NAMES = {
    "hf-gpt2": ("transformer.h.{}.", {
        "input_layernorm": "ln_1", "post_attention_layernorm": "ln_2",
        "self_attn.o_proj": "attn.c_proj", "mlp.up_proj": "mlp.c_fc",
        "mlp.down_proj": "mlp.c_proj"}, {
        "model.embed_tokens": "transformer.wte",
        "model.embed_positions": "transformer.wpe",
        "model.norm": "transformer.ln_f", "lm_head": "lm_head"}),
    "hf-gptj": ("transformer.h.{}.", {
        "input_layernorm": "ln_1", "self_attn.q_proj": "attn.q_proj",
        "self_attn.k_proj": "attn.k_proj", "self_attn.v_proj": "attn.v_proj",
        "self_attn.o_proj": "attn.out_proj", "mlp.up_proj": "mlp.fc_in",
        "mlp.down_proj": "mlp.fc_out"}, {
        "model.embed_tokens": "transformer.wte",
        "model.norm": "transformer.ln_f", "lm_head": "lm_head"}),
    "hf-gpt-neox": ("gpt_neox.layers.{}.", {
        "input_layernorm": "input_layernorm",
        "post_attention_layernorm": "post_attention_layernorm",
        "self_attn.o_proj": "attention.dense",
        "mlp.up_proj": "mlp.dense_h_to_4h",
        "mlp.down_proj": "mlp.dense_4h_to_h"}, {
        "model.embed_tokens": "gpt_neox.embed_in",
        "model.norm": "gpt_neox.final_layer_norm", "lm_head": "embed_out"}),
    "hf-opt": ("model.decoder.layers.{}.", {
        "input_layernorm": "self_attn_layer_norm",
        "post_attention_layernorm": "final_layer_norm",
        "self_attn.q_proj": "self_attn.q_proj",
        "self_attn.k_proj": "self_attn.k_proj",
        "self_attn.v_proj": "self_attn.v_proj",
        "self_attn.o_proj": "self_attn.out_proj", "mlp.up_proj": "fc1",
        "mlp.down_proj": "fc2"}, {
        "model.embed_tokens": "model.decoder.embed_tokens",
        "model.embed_positions": "model.decoder.embed_positions",
        "model.norm": "model.decoder.final_layer_norm", "lm_head": "lm_head"}),
    "hf-bloom": ("transformer.h.{}.", {
        "input_layernorm": "input_layernorm",
        "post_attention_layernorm": "post_attention_layernorm",
        "self_attn.o_proj": "self_attention.dense",
        "mlp.up_proj": "mlp.dense_h_to_4h",
        "mlp.down_proj": "mlp.dense_4h_to_h"}, {
        "model.embed_tokens": "transformer.word_embeddings",
        "model.embed_layernorm": "transformer.word_embeddings_layernorm",
        "model.norm": "transformer.ln_f", "lm_head": "lm_head"}),
    "hf-falcon": ("transformer.h.{}.", {
        "self_attn.o_proj": "self_attention.dense",
        "mlp.up_proj": "mlp.dense_h_to_4h",
        "mlp.down_proj": "mlp.dense_4h_to_h"}, {
        "model.embed_tokens": "transformer.word_embeddings",
        "model.norm": "transformer.ln_f", "lm_head": "lm_head"}),
    "hf-phi3": ("model.layers.{}.", {
        "input_layernorm": "input_layernorm",
        "post_attention_layernorm": "post_attention_layernorm",
        "self_attn.o_proj": "self_attn.o_proj",
        "mlp.down_proj": "mlp.down_proj"}, {
        "model.embed_tokens": "model.embed_tokens", "model.norm": "model.norm",
        "lm_head": "lm_head"}),
}

HF_FUSED_QKV = {"hf-gpt2": "attn.c_attn",
                "hf-gpt-neox": "attention.query_key_value",
                "hf-bloom": "self_attention.query_key_value",
                "hf-falcon": "self_attention.query_key_value",
                "hf-phi3": "self_attn.qkv_proj"}


def hf_checkpoint(spec, w):
    """Our weights as the spec's family stores them in a Hugging Face
    checkpoint, with the buffers such checkpoints carry (causal masks) that
    a loader must skip."""
    if spec.naming == "hf-llama":
        return dict(w)
    if spec.naming == "hf-mixtral":
        # MixtralSparseMoeBlock: gate, experts.E.w1 (gate) / w3 (up) / w2.
        import re
        out = {}
        for k, v in w.items():
            k = re.sub(r"\.mlp\.gate\.", ".block_sparse_moe.gate.", k)
            m = re.search(r"\.mlp\.experts\.(\d+)\.(\w+)_proj\.", k)
            if m:
                wn = {"gate": "w1", "up": "w3", "down": "w2"}[m.group(2)]
                k = k.replace(m.group(0),
                              f".block_sparse_moe.experts.{m.group(1)}.{wn}.")
            out[k] = v.contiguous()
        return out
    layer_prefix, per_layer, whole = HF_NAMES[spec.naming]
    per_layer = dict(per_layer)
    if spec.naming == "hf-falcon":
        two = spec.parallel and not spec.shared_norm  # Falcon 40B/180B
        per_layer["input_layernorm"] = "ln_attn" if two else "input_layernorm"
        per_layer["post_attention_layernorm"] = (
            "ln_mlp" if two else "post_attention_layernorm")
    out = {}
    used = set()

    def take(ours, suffix):
        used.add(ours + suffix)
        return w.get(ours + suffix)

    for ours, theirs in whole.items():
        for suffix in (".weight", ".bias"):
            t = take(ours, suffix)
            if t is not None:
                out[theirs + suffix] = t
    H, KV, hd = spec.heads, spec.kv_heads, spec.head_dim
    for i in range(spec.layers):
        p, h = f"model.layers.{i}.", layer_prefix.format(i)
        conv1d = spec.naming == "hf-gpt2"
        for ours, theirs in per_layer.items():
            for suffix in (".weight", ".bias"):
                t = take(p + ours, suffix)
                if t is None:
                    continue
                if conv1d and t.dim() == 2:
                    t = t.t()  # Conv1D: y = x @ W + b, W is [in, out]
                out[h + theirs + suffix] = t
        fused = HF_FUSED_QKV.get(spec.naming)
        for suffix in (".weight", ".bias"):
            q, k, v = (take(p + f"self_attn.{n}_proj", suffix) for n in "qkv")
            if fused is None or q is None:
                continue
            if spec.naming in ("hf-gpt2", "hf-phi3"):
                qkv = torch.cat([q, k, v], 0)  # [all q; all k; all v]
            else:
                # Falcon: view(n_kv, q_per_kv + 2, head_dim); NeoX and
                # BLOOM are the n_kv == n_heads case, view(n_heads, 3, hd).
                rest = q.shape[1:]
                qkv = torch.cat([q.reshape(KV, H // KV, hd, *rest),
                                 k.reshape(KV, 1, hd, *rest),
                                 v.reshape(KV, 1, hd, *rest)], 1)
                qkv = qkv.reshape(-1, *rest)
            out[h + fused + suffix] = qkv.t() if conv1d and qkv.dim() == 2 \
                else qkv
        if spec.naming == "hf-phi3":
            for suffix in (".weight", ".bias"):
                g, u = take(p + "mlp.gate_proj", suffix), \
                    take(p + "mlp.up_proj", suffix)
                if g is not None:
                    # Phi3MLP: gate, up = gate_up_proj(x).chunk(2, dim=-1)
                    out[h + "mlp.gate_up_proj" + suffix] = torch.cat([g, u], 0)
        if spec.naming == "hf-gpt2":
            out[h + "attn.bias"] = torch.tril(torch.ones(1, 1, 8, 8))
    missing = set(w) - used
    if missing:
        raise ValueError(f"{spec.naming} has no name for {sorted(missing)}")
    return {k: v.contiguous() for k, v in out.items()}


def write_checkpoint(directory, spec, w, shards=1, strip_prefix=False,
                     dtype="F32"):
    """Writes `w` in the family's Hugging Face layout into `directory`: one
    model.safetensors, or `shards` files and model.safetensors.index.json.
    strip_prefix drops the base-model prefix ("transformer.") as checkpoints
    saved from the bare model do (BLOOM's)."""
    import os
    tensors = hf_checkpoint(spec, w)
    if strip_prefix:
        tensors = {(k.split(".", 1)[1] if k.startswith(("transformer.",
                   "gpt_neox.", "model.")) else k): v
                   for k, v in tensors.items()}
    if shards <= 1:
        write_safetensors(os.path.join(directory, "model.safetensors"), tensors,
                          dtype)
        return directory
    names = sorted(tensors)
    weight_map = {}
    for s in range(shards):
        part = names[s::shards]
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(directory, fname),
                          {n: tensors[n] for n in part}, dtype)
        weight_map.update({n: fname for n in part})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 4 * sum(
            t.numel() for t in tensors.values())}, "weight_map": weight_map}, f)
    return directory


def load_llama2c(spec, path):
    """llama2.c legacy fp32 checkpoint -> Hugging Face Llama names."""
    raw = np.fromfile(path, dtype="<i4", count=7)
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = (int(v) for v in raw)
    shared = vocab > 0
    vocab = abs(vocab)
    assert (dim, hidden, layers, heads, kv_heads, vocab) == (
        spec.d, spec.d_ff, spec.layers, spec.heads, spec.kv_heads, spec.vocab)
    hd = dim // heads
    kv = kv_heads * hd
    data = np.fromfile(path, dtype="<f4", offset=28)
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        out = torch.from_numpy(data[at:at + n].copy()).reshape(shape)
        at += n
        return out

    emb = take(vocab, dim)
    arrays = {}
    for key, shape in [("rms_att", (layers, dim)), ("wq", (layers, dim, dim)),
                       ("wk", (layers, kv, dim)), ("wv", (layers, kv, dim)),
                       ("wo", (layers, dim, dim)), ("rms_ffn", (layers, dim)),
                       ("w1", (layers, hidden, dim)),
                       ("w2", (layers, dim, hidden)),
                       ("w3", (layers, hidden, dim))]:
        arrays[key] = take(*shape)
    final = take(dim)
    take(seq_len, hd // 2)
    take(seq_len, hd // 2)
    w = {"model.embed_tokens.weight": emb, "model.norm.weight": final}
    if not shared:
        w["lm_head.weight"] = take(vocab, dim)
    names = {"rms_att": "input_layernorm", "wq": "self_attn.q_proj",
             "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
             "wo": "self_attn.o_proj", "rms_ffn": "post_attention_layernorm",
             "w1": "mlp.gate_proj", "w2": "mlp.down_proj", "w3": "mlp.up_proj"}
    for key, hf in names.items():
        for i in range(layers):
            w[f"model.layers.{i}.{hf}.weight"] = arrays[key][i]
    assert at == data.size, "trailing data in checkpoint"
    return w


def rms_norm(x, w, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * w


def norm(spec, W, prefix, x):
    """RMSNorm (Zhang & Sennrich 2019) or LayerNorm (Ba et al. 2016)."""
    if spec.norm_kind == "layernorm":
        c = x - x.mean(-1, keepdim=True)
        y = c / torch.sqrt((c * c).mean(-1, keepdim=True) + spec.eps)
    else:
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + spec.eps)
    y = y * (spec.weight_offset + W[prefix + ".weight"])
    return y + W[prefix + ".bias"] if prefix + ".bias" in W else y


def activation(name, x):
    if name == "silu":
        return x * torch.sigmoid(x)
    if name == "gelu":
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    if name == "gelu_tanh":
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi)
                                         * (x + 0.044715 * x ** 3)))
    if name == "gelu_sigmoid":
        return x * torch.sigmoid(1.702 * x)
    if name == "relu":
        return torch.relu(x)
    if name == "squared_relu":
        return torch.relu(x) ** 2
    if name == "sigmoid":
        return torch.sigmoid(x)
    assert name == "identity", name
    return x


class Weights(dict):
    """Tensors by name, and the prefixes of the linears that round their
    input to bf16 (archc's --matmul-input=bf16, the bf16 dot product)."""
    bf16_inputs = frozenset()


def bf16_input(x):
    """x as the bf16 dot product takes it: its f32 value rounded to bf16,
    nearest even."""
    return x.to(torch.float32).to(torch.bfloat16).to(x.dtype)


def linear(W, prefix, x):
    if prefix in getattr(W, "bf16_inputs", ()):
        x = bf16_input(x)
    y = x @ W[prefix + ".weight"].T
    return y + W[prefix + ".bias"] if prefix + ".bias" in W else y


def sinusoidal(T, d, dtype):
    """Vaswani et al. 2017: PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1)
    = cos(p / 10000^(2i/d))."""
    p = torch.arange(T, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)[None, :]
    pe = torch.zeros(T, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(p / 10000 ** (i / d))
    pe[:, 1::2] = torch.cos(p / 10000 ** (i / d))
    return pe.to(dtype)


def rope_frequencies(spec):
    """Inverse frequencies of the rotary pairs and the cos/sin factor, with
    context-extension scaling written from each method's paper."""
    rot, theta, s = spec.rotary_dim, spec.theta, spec.factor
    if spec.scaling == "ntk":  # "NTK-aware" scaled base (bloc97, 2023)
        theta = theta * s ** (rot / (rot - 2))
    i = torch.arange(0, rot, 2, dtype=torch.float64)
    freq = 1.0 / theta ** (i / rot)
    mscale = 1.0
    if spec.scaling == "linear":  # position interpolation (Chen et al. 2023)
        freq = freq / s
    elif spec.scaling == "llama3":  # Llama 3.1 report, "rope_scaling"
        wavelen = 2 * math.pi / freq
        low_wl = spec.orig_max / spec.low_freq
        high_wl = spec.orig_max / spec.high_freq
        smooth = (spec.orig_max / wavelen - spec.low_freq) / (
            spec.high_freq - spec.low_freq)
        mid = (1 - smooth) * freq / s + smooth * freq
        freq = torch.where(wavelen > low_wl, freq / s,
                           torch.where(wavelen < high_wl, freq, mid))
    elif spec.scaling == "yarn":  # Peng et al. 2023
        def correction_dim(rotations):
            return rot * math.log(spec.orig_max / (rotations * 2 * math.pi)) / (
                2 * math.log(theta))
        lo = max(math.floor(correction_dim(spec.beta_fast)), 0)
        hi = min(math.ceil(correction_dim(spec.beta_slow)), rot - 1)
        if lo == hi:
            hi += 0.001
        ramp = ((torch.arange(rot // 2, dtype=torch.float64) - lo) / (hi - lo)).clamp(0, 1)
        keep = 1 - ramp  # share of the original (extrapolated) frequency
        freq = freq / s * (1 - keep) + freq * keep
        def m(x):
            return 0.1 * x * math.log(s) + 1.0 if s > 1 and x > 0 else 1.0
        mscale = m(spec.mscale) / m(spec.mscale_all_dim)
    elif spec.scaling == "longrope":  # Ding et al. 2024, as Phi-3 ships it
        orig = spec.orig_max
        ext = torch.tensor(spec.long_factor if spec.max_seq > orig
                           else spec.short_factor, dtype=torch.float64)
        freq = freq / ext
        mscale = spec.attention_factor
        if mscale is None:  # (the paper's, from the extension's ratio)
            ratio = spec.max_seq / orig
            mscale = (math.sqrt(1 + math.log(ratio) / math.log(orig))
                      if ratio > 1 and orig > 1 else 1.0)
    return freq, mscale


def rotate(x, spec):
    """RoPE on x [T, H, head_dim] at positions 0..T-1 (Su et al. 2021)."""
    T = x.shape[0]
    rot = spec.rotary_dim
    freq, mscale = rope_frequencies(spec)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]
    cos = mscale * torch.cos(ang)[:, None, :]
    sin = mscale * torch.sin(ang)[:, None, :]
    out = x.clone()
    if spec.style == "interleaved":
        a, b = x[..., 0:rot:2], x[..., 1:rot:2]
        out[..., 0:rot:2] = a * cos - b * sin
        out[..., 1:rot:2] = a * sin + b * cos
    else:
        a, b = x[..., :rot // 2], x[..., rot // 2:rot]
        out[..., :rot // 2] = a * cos - b * sin
        out[..., rot // 2:rot] = a * sin + b * cos
    return out


def drawn_block(seed, q, m):
    """BigBird-style random keys: the m-th key block drawn for query block
    q >= 1, in [0, q): a 32-bit integer mix of (seed, q, m), modulo q (the
    kernel's AttentionTerms::drawn)."""
    mask = 0xFFFFFFFF
    x = (seed * 0x9E3779B1 + m * 0xC2B2AE3D + q * 0x85EBCA77) & mask
    x ^= x >> 16
    x = (x * 0x7FEB352D) & mask
    x ^= x >> 15
    x = (x * 0x846CA68B) & mask
    x ^= x >> 16
    return x % q


def alibi_slopes(n):
    """Press et al. 2022, as in their released code: 2^(-8/n) ... for a power
    of two; otherwise the closest lower power of two's slopes, then every
    other slope for twice that."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]


def t5_bucket(relative_position, num_buckets, max_distance):
    """T5's unidirectional bucketing (Raffel et al. 2020, as in the released
    mesh-tensorflow code): relative_position = key - query <= 0."""
    n = torch.clamp(-relative_position, min=0)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.double().clamp(min=1) / max_exact)
                         / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).long()
    large = torch.clamp(large, max=num_buckets - 1)
    return torch.where(is_small, n, large)


def matmul_weight(name):
    """Whether archc stores checkpoint tensor `name` in a 16-bit
    --weight-type: the weights of its matmuls (projections, experts, the
    router, Qwen's shared-expert gate, the classifier), not MLA's kv_b_proj
    (absorbed into f32 per-head products), embeddings or tables."""
    return ((name.endswith(("_proj.weight", "_proj_with_mqa.weight"))
             and not name.endswith("kv_b_proj.weight"))
            or name == "lm_head.weight" or name.endswith("mlp.gate.weight")
            or name.endswith("shared_expert_gate.weight"))


def stored_weight(t, weight_type):
    """f32 tensor `t` as archc stores it in a 16-bit --weight-type:
    bfloat16 or float16 to nearest even; float16 saturated at +-65504 and
    its subnormals (below 2^-14) flushed to zero of their sign."""
    if weight_type == torch.float16:
        h = t.clamp(-65504, 65504).to(torch.float16)
        return torch.where(h.abs() < 2.0 ** -14, h * 0, h)
    return t.to(weight_type)


def forward(spec, w, tokens, dtype=torch.float64, last_only=False,
            kv_type=None, weight_type=None, input_type=None):
    """Logits [T, vocab] of a whole token sequence (causal); with last_only,
    the final norm and classifier run on the last position only. With
    kv_type (torch.float16 or torch.bfloat16), keys and values are rounded
    to it, as a cache of that element type stores them; with weight_type,
    the matmul weights (matmul_weight; a tied classifier too) are; with
    input_type torch.bfloat16 too (bf16 weights), the inputs of those
    matmuls whose K is even (archc packs them in pairs)."""
    def stored(name, t):
        if weight_type is None:
            return t.to(dtype)
        return stored_weight(t, weight_type).to(dtype)
    W = Weights({k: stored(k, v) if matmul_weight(k) else v.to(dtype)
                 for k, v in w.items()})
    if input_type is not None:
        assert input_type == torch.bfloat16 == weight_type, input_type
        W.bf16_inputs = frozenset(
            k[:-len(".weight")] for k, v in w.items()
            if matmul_weight(k) and v.shape[-1] % 2 == 0)
    T, H, KV, hd = len(tokens), spec.heads, spec.kv_heads, spec.head_dim
    x = W["model.embed_tokens.weight"][torch.tensor(tokens)] * spec.emb_scale
    if spec.pos_kind == "learned":
        x = x + W["model.embed_positions.weight"][spec.pos_offset:spec.pos_offset + T]
    elif spec.pos_kind == "sinusoidal":
        x = x + sinusoidal(T, spec.d, dtype)
    if spec.embedding_norm:
        x = norm(spec, W, "model.embed_layernorm", x)
    causal = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)
    dist = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).to(dtype)

    def latent_attention(p, h, ls):
        # Naive MLA (DeepSeek-V2, eqs. 9-19): every key and value from the
        # normalized latent; the rotary key shared by the heads.
        a = p + "self_attn."
        dn, dr, dv, c = spec.d_nope, spec.d_rope, spec.d_v, spec.kv_lora
        if spec.q_lora:
            cq = norm(spec, W, a + "q_a_layernorm",
                      linear(W, a + "q_a_proj", h))
            q = linear(W, a + "q_b_proj", cq)
        else:
            q = linear(W, a + "q_proj", h)
        q = q.view(T, H, dn + dr)
        kva = linear(W, a + "kv_a_proj_with_mqa", h)
        latent = norm(spec, W, a + "kv_a_layernorm", kva[:, :c])
        q_rot = rotate(q[..., dn:], ls).to(dtype)
        k_rot = rotate(kva[:, c:].reshape(T, 1, dr), ls).to(dtype)
        kv = linear(W, a + "kv_b_proj", latent).view(T, H, dn + dv)
        k = torch.cat([kv[..., :dn], k_rot.expand(T, H, dr)], -1)
        v = kv[..., dn:]
        q = torch.cat([q[..., :dn], q_rot], -1)
        scores = torch.einsum("thd,shd->hts", q, k) * ls.scale + causal
        probs = torch.softmax(scores, -1)
        out = torch.einsum("hts,shd->thd", probs, v)
        return linear(W, a + "o_proj", out.reshape(T, H * dv))

    def differential_attention(p, h, ls, mask, layer):
        # DIFF Transformer (Ye et al. 2024), as its reference code lays it
        # out: 2H query and key half-heads, head h's maps from half-heads
        # 2h and 2h + 1, over value head h.
        a, half = p + "self_attn.", hd // 2
        q = linear(W, a + "q_proj", h).view(T, 2 * H, half)
        k = linear(W, a + "k_proj", h).view(T, 2 * H, half)
        v = linear(W, a + "v_proj", h).view(T, H, hd)
        if ls.rope:
            q, k = rotate(q, ls).to(dtype), rotate(k, ls).to(dtype)
        if kv_type is not None:  # what the caches keep
            k, v = k.to(kv_type).to(dtype), v.to(kv_type).to(dtype)
        scores = torch.einsum("thd,shd->hts", q, k) * ls.scale
        if ls.softcap:
            scores = ls.softcap * torch.tanh(scores / ls.softcap)
        probs = torch.softmax(scores + mask, -1).view(H, 2, T, T)
        lambda_init = 0.8 - 0.6 * math.exp(-0.3 * layer)
        lam = (torch.exp((W[a + "lambda_q1"] * W[a + "lambda_k1"]).sum())
               - torch.exp((W[a + "lambda_q2"] * W[a + "lambda_k2"]).sum())
               + lambda_init)
        out = torch.einsum("hts,shd->thd", probs[:, 0] - lam * probs[:, 1], v)
        out = out / torch.sqrt((out * out).mean(-1, keepdim=True) + spec.eps)
        out = out * W[a + "subln.weight"] * (1 - lambda_init)
        return linear(W, a + "o_proj", out.reshape(T, H * hd))

    def linear_attention(q, k, v, ls):
        # Causal linear attention in its quadratic form (the library's is
        # recurrent and chunked): row t weighs value s <= t by
        # phi(q_t) . phi(k_s), over the sum of those weights (+ 1e-6) when
        # normalized, else times the scale. (The state stays f32: no
        # kv_type rounding.)
        phi = {"elu1": lambda x: torch.nn.functional.elu(x) + 1,
               "identity": lambda x: x,
               "relu": torch.relu}[ls.linear]
        k = phi(k).repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        weights = torch.einsum("thd,shd->hts", phi(q), k)
        weights = weights * torch.ones(T, T, dtype=dtype).tril()
        out = torch.einsum("hts,shd->thd", weights, v)
        if ls.linear_normalize:
            return out / (weights.sum(-1).permute(1, 0)[..., None] + 1e-6)
        return out * ls.scale

    def attention(p, h, ls, layer):
        if spec.mla:
            return latent_attention(p, h, ls)
        mask = causal
        if ls.window:  # sliding window: keys within the last `window` tokens
            # (dilated: window keys `dilation` apart, Longformer), widened
            # by global positions (attended by and attending to all).
            qpos, key = torch.arange(T)[:, None], torch.arange(T)[None, :]
            gap = qpos - key
            keep = (gap < ls.window * ls.dilation) & (gap % ls.dilation == 0)
            g = torch.tensor(ls.global_tokens, dtype=torch.long)
            keep = keep | torch.isin(key, g) | torch.isin(qpos, g)
            if ls.random_blocks:  # BigBird: drawn earlier key blocks
                bs, seed = ls.block_size, ls.random_seed
                drawn = torch.zeros(T, T, dtype=torch.bool)
                for qi in range(T):
                    qb = qi // bs
                    for m in range(ls.random_blocks if qb else 0):
                        kb = drawn_block(seed, qb, m)
                        drawn[qi, kb * bs:(kb + 1) * bs] = True
                keep = keep | drawn
            mask = mask + torch.where(keep, 0.0, float("-inf")).to(dtype)
        if spec.differential:
            return differential_attention(p, h, ls, mask, layer)
        q = linear(W, p + "self_attn.q_proj", h).view(T, H, hd)
        k = linear(W, p + "self_attn.k_proj", h).view(T, KV, hd)
        v = linear(W, p + "self_attn.v_proj", h).view(T, KV, hd)
        if ls.qk_norm in ("head", "head_separate"):  # each head on its own
            q = norm(spec, W, p + "self_attn.q_norm", q)
            k = norm(spec, W, p + "self_attn.k_norm", k)
        elif ls.qk_norm == "full":  # over the whole projection (OLMo 2)
            q = norm(spec, W, p + "self_attn.q_norm", q.reshape(T, H * hd)).view(T, H, hd)
            k = norm(spec, W, p + "self_attn.k_norm", k.reshape(T, KV * hd)).view(T, KV, hd)
        if ls.rope:
            q, k = rotate(q, ls).to(dtype), rotate(k, ls).to(dtype)
        if ls.linear != "none":
            return linear(W, p + "self_attn.o_proj",
                          linear_attention(q, k, v, ls).reshape(T, H * hd))
        if kv_type is not None:  # what the cache keeps
            k, v = k.to(kv_type).to(dtype), v.to(kv_type).to(dtype)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        if ls.pos_kind == "shaw":  # Shaw et al. 2018, eq. 3-5
            idx = (torch.arange(T)[None, :] - torch.arange(T)[:, None]).clamp(
                -ls.clip, ls.clip) + ls.clip  # [query t, key s]
            rel_k = W[p + "self_attn.rel_key.weight"][idx]    # [t, s, hd]
            rel_v = W[p + "self_attn.rel_value.weight"][idx]
            scores = (torch.einsum("thd,shd->hts", q, k)
                      + torch.einsum("thd,tsd->hts", q, rel_k)) * ls.scale
        else:
            scores = torch.einsum("thd,shd->hts", q, k) * ls.scale
        if ls.softcap:
            scores = ls.softcap * torch.tanh(scores / ls.softcap)
        if ls.pos_kind == "t5_bias":
            rel = torch.arange(T)[None, :] - torch.arange(T)[:, None]
            bucket = t5_bucket(rel, spec.buckets, spec.max_distance)
            table = W["model.relative_attention_bias.weight"]  # [buckets, H]
            scores = scores + table[bucket].permute(2, 0, 1)
        if ls.pos_kind == "alibi":
            slopes = torch.tensor(alibi_slopes(H), dtype=dtype)
            scores = scores - slopes[:, None, None] * dist[None]
        scores = scores + mask
        probs = torch.softmax(scores, -1)
        a = torch.einsum("hts,shd->thd", probs, v)
        if ls.pos_kind == "shaw":
            a = a + torch.einsum("hts,tsd->thd", probs, rel_v)
        return linear(W, p + "self_attn.o_proj", a.reshape(T, H * hd))

    def mlp(prefix, h, ls):
        up = linear(W, prefix + "up_proj", h)
        if ls.glu:
            m = activation(ls.act, linear(W, prefix + "gate_proj", h)) * up
        else:
            m = activation(ls.act, up)
        return linear(W, prefix + "down_proj", m)

    def route(p, h, ls):
        """The top-k experts per token and their weights, as the families'
        modeling code routes (ties to the lower expert index: a stable
        descending sort)."""
        logits = linear(W, p + "mlp.gate", h)
        E, k = ls.n_experts, ls.top_k

        def topk(x, n):
            return torch.sort(x, dim=-1, descending=True, stable=True)[1][:, :n]
        if ls.router == "topk_softmax":
            # The top k logits, then a softmax over those k.
            idx = topk(logits, k)
            return idx, torch.softmax(logits.gather(1, idx), -1) * \
                ls.routed_scaling
        scores = torch.sigmoid(logits) if ls.router == "sigmoid" \
            else torch.softmax(logits, -1)
        choice = scores.clone()
        if ls.selection_bias:
            choice = choice + W[p + "mlp.gate.e_score_correction_bias"]
        if ls.n_group > 1:
            g = choice.view(T, ls.n_group, -1)
            if ls.router == "sigmoid":  # DeepSeek-V3: sum of the best two
                gs = torch.sort(g, dim=-1, descending=True, stable=True)[0][..., :2].sum(-1)
            else:  # DeepSeek-V2: the best expert's
                gs = g.max(-1).values
            keep = torch.zeros_like(gs, dtype=torch.bool)
            keep.scatter_(1, topk(gs, ls.topk_group), True)
            choice = torch.where(keep[:, :, None], g,
                                 torch.full_like(g, float("-inf"))).view(T, E)
        idx = topk(choice, k)
        wts = scores.gather(1, idx)
        if ls.normalize:
            wts = wts / wts.sum(-1, keepdim=True)
        return idx, wts * ls.routed_scaling

    def ffn(p, h, ls):
        if not ls.moe_layer:
            return mlp(p + "mlp.", h, ls)
        idx, wts = route(p, h, ls)
        y = torch.zeros_like(h)
        for e in range(ls.n_experts):
            rows, j = (idx == e).nonzero(as_tuple=True)
            if len(rows):
                y[rows] += wts[rows, j, None] * mlp(
                    p + f"mlp.experts.{e}.", h[rows], ls)
        if ls.n_shared and ls.shared_gate:  # Qwen2-MoE's gated shared expert
            gate = torch.sigmoid(linear(W, p + "mlp.shared_expert_gate", h))
            y = y + gate * mlp(p + "mlp.shared_expert.", h, ls)
        elif ls.n_shared:
            y = y + mlp(p + "mlp.shared_experts.", h, ls)
        return y

    for i in range(spec.layers):
        p = f"model.layers.{i}."
        names = spec.norm_names(i)
        ls = spec.layer(i)
        if spec.parallel:
            h1 = norm(spec, W, names[0], x)
            h2 = h1 if spec.shared_norm else norm(spec, W, names[1], x)
            x = x + attention(p, h1, ls, i) + ffn(p, h2, ls)
        elif spec.placement == "post":
            x = norm(spec, W, names[0], x + attention(p, x, ls, i))
            x = norm(spec, W, names[1], x + ffn(p, x, ls))
        elif spec.placement == "post_sublayer":
            x = x + norm(spec, W, names[0], attention(p, x, ls, i))
            x = x + norm(spec, W, names[1], ffn(p, x, ls))
        elif spec.placement == "sandwich":
            x = x + norm(spec, W, names[1],
                         attention(p, norm(spec, W, names[0], x), ls, i))
            x = x + norm(spec, W, names[3], ffn(p, norm(spec, W, names[2], x), ls))
        else:
            x = x + attention(p, norm(spec, W, names[0], x), ls, i)
            x = x + ffn(p, norm(spec, W, names[1], x), ls)
    if last_only:
        x = x[-1:]
    if spec.final_norm:
        x = norm(spec, W, "model.norm", x)
    head = (stored("", w["model.embed_tokens.weight"]) if spec.tied
            else W["lm_head.weight"])
    if input_type is not None and head.shape[-1] % 2 == 0:
        x = bf16_input(x)
    logits = x @ head.T
    if spec.lm_bias:
        logits = logits + W["lm_head.bias"]
    logits = logits * spec.logit_scale
    if spec.final_softcap:
        logits = spec.final_softcap * torch.tanh(logits / spec.final_softcap)
    return logits


def bench_prefill(spec, n, threads, runs):
    """Median prefill tokens/s of PyTorch eager (fp32, logits of the last
    position only) on random weights: the baseline of bench/run.sh."""
    import time
    torch.set_num_threads(threads)
    w = random_weights(spec, 0)
    tokens = [(i * 7919 + 13) % spec.vocab for i in range(n)]
    times = []
    with torch.no_grad():
        for r in range(runs + 1):
            t0 = time.perf_counter()
            forward(spec, w, tokens, torch.float32, last_only=True)
            if r:
                times.append(time.perf_counter() - t0)
    times.sort()
    return n / times[len(times) // 2]


def greedy(spec, w, prompt, n):
    tokens = list(prompt)
    for _ in range(n):
        tokens.append(int(forward(spec, w, tokens)[-1].argmax()))
    return tokens[len(prompt):]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    wr = sub.add_parser("weights", help="write seeded random safetensors")
    wr.add_argument("--spec", required=True)
    wr.add_argument("--seed", type=int, default=0)
    wr.add_argument("--out", required=True,
                    help="a .safetensors file, or with --hf a directory")
    wr.add_argument("--hf", action="store_true",
                    help="the spec family's Hugging Face layout and names")
    wr.add_argument("--shards", type=int, default=1)
    wr.add_argument("--dtype", default="F32", choices=["F32", "F16", "BF16"])
    gen = sub.add_parser("greedy", help="greedy tokens from a checkpoint")
    gen.add_argument("--spec", required=True)
    gen.add_argument("--llama2c", required=True)
    gen.add_argument("-n", type=int, default=64)
    gen.add_argument("--prompt", default="1")
    bn = sub.add_parser("bench", help="PyTorch-eager fp32 prefill tokens/s")
    bn.add_argument("--spec", required=True)
    bn.add_argument("--prompt-len", type=int, default=128)
    bn.add_argument("--threads", type=int, default=1)
    bn.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    spec = Spec(args.spec)
    if args.cmd == "bench":
        print(f"{bench_prefill(spec, args.prompt_len, args.threads, args.runs):.2f}")
    elif args.cmd == "weights" and args.hf:
        import os
        os.makedirs(args.out, exist_ok=True)
        write_checkpoint(args.out, spec, random_weights(spec, args.seed),
                         args.shards, dtype=args.dtype)
    elif args.cmd == "weights":
        write_safetensors(args.out, random_weights(spec, args.seed),
                          args.dtype)
    else:
        prompt = [int(t) for t in args.prompt.split(",")]
        w = load_llama2c(spec, args.llama2c)
        print(",".join(str(t) for t in greedy(spec, w, prompt, args.n)))


if __name__ == "__main__":
    sys.exit(main())
