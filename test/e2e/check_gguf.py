#!/usr/bin/python3
"""GGUF round trip: a tiny Llama's seeded weights written as GGUF version 3
the way llama.cpp's converter writes them (llama.cpp's tensor names,
dims innermost first, q/k rows permuted for its RoPE, 1-D tensors F32,
matrices F32, F16, BF16 or Q8_0), loaded by the library, give logits
identical (bit for bit) to the same values, rounded as each type rounds
them, loaded from safetensors F32; and each malformed or mismatched file
gets an error that names the problem."""
import math
import os
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
import archrt  # noqa: E402

TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7,
         "Q8_0": 8, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "BF16": 30}


def gguf_name(name, arch="llama"):
    top = {"model.embed_tokens.weight": "token_embd.weight",
           "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}
    if name in top:
        return top[name]
    per = {"input_layernorm.weight": "attn_norm.weight",
           "self_attn.q_proj.weight": "attn_q.weight",
           "self_attn.k_proj.weight": "attn_k.weight",
           "self_attn.v_proj.weight": "attn_v.weight",
           "self_attn.q_proj.bias": "attn_q.bias",
           "self_attn.k_proj.bias": "attn_k.bias",
           "self_attn.v_proj.bias": "attn_v.bias",
           "self_attn.q_norm.weight": "attn_q_norm.weight",
           "self_attn.k_norm.weight": "attn_k_norm.weight",
           "self_attn.o_proj.weight": "attn_output.weight",
           "post_attention_layernorm.weight": "ffn_norm.weight",
           "mlp.gate_proj.weight": "ffn_gate.weight",
           "mlp.up_proj.weight": "ffn_up.weight",
           "mlp.down_proj.weight": "ffn_down.weight",
           "self_attn.qkv_proj.weight": "attn_qkv.weight",  # (Phi-3's fused)
           "mlp.gate_up_proj.weight": "ffn_up.weight",
           "mlp.gate.weight": "ffn_gate_inp.weight",
           "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
           "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
           "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
           "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight"}
    if arch.startswith("gemma"):  # (Gemma's sandwich norms' own names)
        per.update({"post_attention_layernorm.weight": "post_attention_norm.weight",
                    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
                    "post_feedforward_layernorm.weight": "post_ffw_norm.weight"})
    _, _, layer, rest = name.split(".", 3)
    if rest.startswith("mlp.experts."):  # stacked: ffn_gate_exps, ...
        proj = rest.split(".", 3)[3].split("_proj")[0]
        return f"blk.{layer}.ffn_{proj}_exps.weight"
    return f"blk.{layer}.{per[rest]}"


def expert_of(name):
    """A routed expert's index in its stacked tensor, or None."""
    parts = name.split(".")
    return int(parts[5]) if parts[3:5] == ["mlp", "experts"] else None


def permute(w, heads):
    """llama.cpp's convert_hf_to_gguf LlamaModel.permute (weights and
    biases)."""
    out = w.shape[0]
    return (w.reshape(heads, 2, out // heads // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def bf16_round(x):
    b = x.astype("<f4").view("<u4").astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype("<u2")


def q8_0(x):
    """Blocks of 32 along rows: an f16 scale max|x| / 127, int8 round(x/d)
    (llama.cpp's quantize_row_q8_0_ref), and the values they stand for."""
    blocks = x.reshape(-1, 32).astype(np.float32)
    d = np.abs(blocks).max(axis=1) / 127.0
    inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1), 0.0).astype(np.float32)
    q = np.round(blocks * inv[:, None]).astype(np.int8)
    d16 = d.astype(np.float16)
    raw = b"".join(d16[i].tobytes() + q[i].tobytes() for i in range(len(q)))
    return raw, (d16.astype(np.float32)[:, None] * q).reshape(x.shape)


F32 = np.float32


def k_quant_45(x, bits):
    """Q4_K (bits 4) or Q5_K (bits 5), as ggml-quants.c lays them out:
    super-blocks of 256 along rows, each an f16 d and dmin, eight 6-bit
    scales and mins packed in 12 bytes, (Q5_K: 32 bytes of fifth bits,)
    128 bytes of 4-bit values; a value is d * scale * q - dmin * min over
    sub-blocks of 32. (A plain min/max quantizer: any valid block will
    do, the test compares what the loader reads with what this writes.)"""
    top = (1 << bits) - 1
    sub = x.reshape(-1, 8, 32).astype(F32)
    lo = np.minimum(sub.min(axis=2), 0)
    scale = (sub.max(axis=2) - lo) / top
    d = (scale.max(axis=1) / 63).astype(np.float16)
    dmin = ((-lo).max(axis=1) / 63).astype(np.float16)
    df, dminf = d.astype(F32)[:, None], dmin.astype(F32)[:, None]
    sc = np.clip(np.round(np.divide(scale, df, out=np.zeros_like(scale),
                                    where=df > 0)), 0, 63).astype(np.uint8)
    mn = np.clip(np.round(np.divide(-lo, dminf, out=np.zeros_like(lo),
                                    where=dminf > 0)), 0, 63).astype(np.uint8)
    a = (df * sc.astype(F32))[:, :, None]
    m = (dminf * mn.astype(F32))[:, :, None]
    q = np.clip(np.round(np.divide(sub + m, a, out=np.zeros_like(sub),
                                   where=a > 0)), 0, top).astype(np.uint8)
    packed = np.zeros((len(sub), 12), np.uint8)
    packed[:, 0:4] = (sc[:, 0:4] & 63) | (sc[:, 4:8] >> 4) << 6
    packed[:, 4:8] = (mn[:, 0:4] & 63) | (mn[:, 4:8] >> 4) << 6
    packed[:, 8:12] = (sc[:, 4:8] & 15) | (mn[:, 4:8] & 15) << 4
    qs = (q[:, 0::2] & 15) | (q[:, 1::2] & 15) << 4  # [block, chunk, 32]
    parts = [d.view(np.uint8).reshape(-1, 2), dmin.view(np.uint8).reshape(-1, 2),
             packed]
    if bits == 5:
        qh = np.zeros((len(sub), 32), np.uint8)
        for k in range(8):
            qh |= ((q[:, k] >> 4) & 1) << k
        parts.append(qh)
    parts.append(qs.reshape(len(sub), 128))
    raw = np.concatenate(parts, axis=1).tobytes()
    return raw, decode_k_quant_45(raw, bits).reshape(x.shape)


def decode_k_quant_45(raw, bits):
    """The values of Q4_K / Q5_K blocks `raw` (f32, in block order)."""
    size = 176 if bits == 5 else 144
    b = np.frombuffer(raw, np.uint8).reshape(-1, size)
    d = b[:, 0:2].copy().view(np.float16).astype(F32).reshape(-1)
    dmin = b[:, 2:4].copy().view(np.float16).astype(F32).reshape(-1)
    p = b[:, 4:16].astype(np.int32)
    sc = np.concatenate([p[:, 0:4] & 63, (p[:, 8:12] & 15) | (p[:, 0:4] >> 6) << 4], 1)
    mn = np.concatenate([p[:, 4:8] & 63, (p[:, 8:12] >> 4) | (p[:, 4:8] >> 6) << 4], 1)
    qs = b[:, size - 128:].reshape(-1, 4, 32).astype(np.int32)
    q = np.stack([qs[:, k // 2] >> (4 * (k % 2)) & 15 for k in range(8)], 1)
    if bits == 5:
        qh = b[:, 16:48].astype(np.int32)
        q = q + np.stack([(qh >> k & 1) << 4 for k in range(8)], 1)
    a = (d[:, None] * sc.astype(F32))[:, :, None]
    m = (dmin[:, None] * mn.astype(F32))[:, :, None]
    return (a * q.astype(F32) - m).reshape(-1)


def legacy(x, kind):
    """Q4_0, Q4_1, Q5_0, Q5_1: blocks of 32 along rows, an f16 d (_1: and
    an f16 m), (Q5: 32 fifth bits, a little-endian word,) 16 bytes holding
    value j in the low nibble of byte j and j + 16 in its high one; _0
    values are (q - 8 or 16) * d, _1 values q * d + m."""
    bits, offset = int(kind[1]), kind.endswith("_1")
    top = (1 << bits) - 1
    blocks = x.reshape(-1, 32).astype(F32)
    if offset:
        lo = blocks.min(axis=1)
        d = ((blocks.max(axis=1) - lo) / top).astype(np.float16)
        m = lo.astype(np.float16)
        df = d.astype(F32)[:, None]
        q = np.round(np.divide(blocks - m.astype(F32)[:, None], df,
                               out=np.zeros_like(blocks), where=df > 0))
    else:
        d = (np.abs(blocks).max(axis=1) / (top // 2)).astype(np.float16)
        df = d.astype(F32)[:, None]
        q = np.round(np.divide(blocks, df, out=np.zeros_like(blocks),
                               where=df > 0)) + (top + 1) // 2
    q = np.clip(q, 0, top).astype(np.uint32)
    parts = [d.view(np.uint8).reshape(-1, 2)]
    if offset:
        parts.append(m.view(np.uint8).reshape(-1, 2))
    if bits == 5:
        qh = ((q >> 4) & 1) << np.arange(32, dtype=np.uint32)
        parts.append(qh.sum(axis=1, dtype=np.uint32).astype("<u4")
                     .view(np.uint8).reshape(-1, 4))
    parts.append(((q[:, :16] & 15) | (q[:, 16:] & 15) << 4).astype(np.uint8))
    raw = np.concatenate(parts, axis=1).tobytes()
    return raw, decode_legacy(raw, kind).reshape(x.shape)


def decode_legacy(raw, kind):
    bits, offset = int(kind[1]), kind.endswith("_1")
    size = 2 + 2 * offset + 4 * (bits == 5) + 16
    b = np.frombuffer(raw, np.uint8).reshape(-1, size)
    d = b[:, 0:2].copy().view(np.float16).astype(F32).reshape(-1, 1)
    qs = b[:, size - 16:].astype(np.int32)
    q = np.concatenate([qs & 15, qs >> 4], axis=1)  # values 0..15, 16..31
    if bits == 5:
        at = 2 + 2 * offset
        qh = b[:, at:at + 4].copy().view("<u4").astype(np.int64).reshape(-1, 1)
        q = q | ((qh >> np.arange(32)) & 1).astype(np.int32) << 4
    if offset:
        m = b[:, 2:4].copy().view(np.float16).astype(F32).reshape(-1, 1)
        return (q.astype(F32) * d + m).reshape(-1)
    return ((q - (1 << (bits - 1))).astype(F32) * d).reshape(-1)


def q6_k(x):
    """Q6_K: super-blocks of 256, 6-bit values q - 32 (low 4 bits in 128
    bytes, high 2 in 64), an int8 scale per 16, an f16 d last."""
    sub = x.reshape(-1, 16, 16).astype(F32)
    scale = np.abs(sub).max(axis=2) / 31
    d = (scale.max(axis=1) / 127).astype(np.float16)
    df = d.astype(F32)[:, None]
    # (Odd sub-blocks take negative scales, their values negated: the
    # format's int8 scales, which ggml's quantizer writes.)
    sign = np.where(np.arange(16) % 2, -1.0, 1.0).astype(F32)
    sc = np.clip(np.round(np.divide(scale, df, out=np.zeros_like(scale),
                                    where=df > 0)) * sign, -128, 127).astype(np.int8)
    a = (df * sc.astype(F32))[:, :, None]
    q = np.clip(np.round(np.divide(sub, a, out=np.zeros_like(sub),
                                   where=a != 0)), -32, 31).astype(np.int32)
    q6 = (q + 32).reshape(-1, 2, 4, 32)  # [block, half, k, l]: value 32k + l
    low, high = q6 & 15, q6 >> 4
    ql = np.concatenate([low[:, :, 0] | low[:, :, 2] << 4,
                         low[:, :, 1] | low[:, :, 3] << 4], 2)  # [b, half, 64]
    qh = high[:, :, 0] | high[:, :, 1] << 2 | high[:, :, 2] << 4 | high[:, :, 3] << 6
    raw = np.concatenate([ql.reshape(-1, 128).astype(np.uint8),
                          qh.reshape(-1, 64).astype(np.uint8),
                          sc.view(np.uint8), d.view(np.uint8).reshape(-1, 2)],
                         1).tobytes()
    return raw, decode_q6_k(raw).reshape(x.shape)


def decode_q6_k(raw):
    b = np.frombuffer(raw, np.uint8).reshape(-1, 210)
    ql = b[:, 0:128].reshape(-1, 2, 64).astype(np.int32)
    qh = b[:, 128:192].reshape(-1, 2, 32).astype(np.int32)
    sc = b[:, 192:208].copy().view(np.int8).astype(F32).reshape(-1, 2, 8)
    d = b[:, 208:210].copy().view(np.float16).astype(F32).reshape(-1)
    lows = [ql[:, :, 0:32] & 15, ql[:, :, 32:64] & 15, ql[:, :, 0:32] >> 4,
            ql[:, :, 32:64] >> 4]
    q = np.stack([lows[k] | (qh >> (2 * k) & 3) << 4 for k in range(4)], 2)
    q = (q - 32).reshape(-1, 2, 128)  # value 32k + l of each half
    scale = np.repeat(sc, 16, axis=2)  # a scale per 16 values
    return ((d[:, None, None] * scale) * q.astype(F32)).reshape(-1)


def encode(x, kind):
    """(bytes, the f32 values they hold)."""
    if kind == "F32":
        return x.astype("<f4").tobytes(), x.astype(np.float32)
    if kind == "F16":
        h = x.astype("<f2")
        return h.tobytes(), h.astype(np.float32)
    if kind == "BF16":
        b = bf16_round(x)
        return b.tobytes(), (b.astype("<u4") << 16).view("<f4").reshape(x.shape)
    if kind in ("Q4_K", "Q5_K"):
        return k_quant_45(x, 4 if kind == "Q4_K" else 5)
    if kind == "Q6_K":
        return q6_k(x)
    if kind in ("Q4_0", "Q4_1", "Q5_0", "Q5_1"):
        return legacy(x, kind)
    return q8_0(x)


def golden(case):
    """Blocks written by hand, their values worked out by hand from
    ggml-quants.c's layouts: the numpy decoders above (which the loader's
    values are compared with, bit for bit) read them so."""
    z = bytearray(144)
    z[0:2] = bytes.fromhex("003c")  # d = 1.0
    z[2:4] = bytes.fromhex("0038")  # dmin = 0.5
    z[4 + 1], z[4 + 5], z[4 + 9] = 0xC0, 0x40, 0x23
    z[16 + 64] = 0x70  # chunk 2, value 0: sub-block 5's (high nibble) q = 7
    # Sub-block 5: scale (0x23 & 15) | (0xC0 >> 6) << 4 = 51, min
    # (0x23 >> 4) | (0x40 >> 6) << 4 = 18: 51 * 7 - 0.5 * 18 = 348; its
    # other values 0 * 51 - 9 = -9; every other sub-block's scale and min 0.
    y = decode_k_quant_45(bytes(z), 4)
    case("golden Q4_K", y[160] == 348 and y[161] == -9 and
         np.count_nonzero(y) == 32, str(y[158:163]))
    z5 = bytearray(z[:16]) + bytearray(32) + bytearray(z[16:])
    z5[16] = 1 << 5  # value 0's fifth bit in sub-block 5: q = 23
    y = decode_k_quant_45(bytes(z5), 5)
    case("golden Q5_K", y[160] == 51 * 23 - 9 and y[161] == -9, str(y[160:162]))
    z6 = bytearray(210)
    z6[0] = 0x50  # value 64's low 4 bits (high nibble of low byte 0) = 5
    z6[128] = 0x20  # its high 2 bits (bits 4-5 of high byte 0) = 2: q = 37
    z6[192 + 4] = 0xFD  # the scale of values 64..79: -3
    z6[208:210] = bytes.fromhex("0038")  # d = 0.5
    y = decode_q6_k(bytes(z6))
    case("golden Q6_K", y[64] == 0.5 * -3 * 5 and y[65] == 0.5 * -3 * -32 and
         y[0] == 0, str(y[63:66]))
    q5 = bytearray(22)
    q5[0:2] = bytes.fromhex("0040")  # d = 2.0
    q5[2:6] = (1 << 17).to_bytes(4, "little")  # value 17's fifth bit
    q5[6 + 1] = 0x30  # value 17 (high nibble of byte 1) = 3: q = 19
    y = decode_legacy(bytes(q5), "Q5_0")
    case("golden Q5_0", y[17] == 2.0 * 3 and y[0] == 2.0 * -16, str(y[:2]))


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = gstr(key) + struct.pack("<I", vtype)
    if vtype == 8:
        return out + gstr(value)
    if vtype == 9:  # an array of strings
        return out + struct.pack("<IQ", 8, len(value)) + b"".join(
            gstr(v) for v in value)
    fmt = {4: "<I", 6: "<f"}[vtype]
    return out + struct.pack(fmt, value)


def family_meta(spec, arch):
    """The keys llama.cpp's converter writes for `arch` beside the shared
    ones, from the spec's values."""
    meta = {}
    overrides = [o.get("attention", {}) for o in spec.overrides]
    window = spec.window or max([o.get("window", 0) for o in overrides] + [0])
    if arch.startswith("gemma"):  # (Gemma's converters: always a head's width)
        meta[f"{arch}.attention.key_length"] = (4, spec.head_dim)
        meta[f"{arch}.attention.value_length"] = (4, spec.head_dim)
    if arch in ("gemma2", "gemma3", "phi3") and window:
        meta[f"{arch}.attention.sliding_window"] = (4, window)
    if arch == "gemma2":
        for key, cap in (("attn", spec.softcap), ("final", spec.final_softcap)):
            if cap:
                meta[f"gemma2.{key}_logit_softcapping"] = (6, cap)
    if arch == "gemma3":  # (the global layers' base and scaling)
        for o in overrides:
            pos = o.get("position", {})
            if "theta" in pos:
                meta["gemma3.rope.freq_base"] = (6, pos["theta"])
            if pos.get("scaling") == "linear":
                meta["gemma3.rope.scaling.type"] = (8, "linear")
                meta["gemma3.rope.scaling.factor"] = (6, pos["factor"])
    if arch == "phi3" and spec.scaling == "longrope":  # (and two tensors)
        ratio = spec.max_seq / spec.orig_max
        meta["phi3.rope.scaling.original_context_length"] = (4, spec.orig_max)
        meta["phi3.rope.scaling.attn_factor"] = (6, spec.attention_factor or (
            math.sqrt(1 + math.log(ratio) / math.log(spec.orig_max))
            if ratio > 1 else 1.0))
    if arch in ("qwen2moe", "qwen3moe") and spec.moe:
        meta[f"{arch}.expert_feed_forward_length"] = (4, spec.expert_d_ff)
        if spec.n_shared:
            meta[f"{arch}.expert_shared_feed_forward_length"] = (
                4, spec.shared_d_ff)
    return meta


def family_tensors(spec, arch):
    """The tables llama.cpp's converter adds as tensors beside the weights:
    Phi-3's LongRoPE factors (F32, a factor per rotated pair)."""
    if arch != "phi3" or spec.scaling != "longrope":
        return []
    return [(f"rope_factors_{k}.weight", [len(v)], "F32",
             np.array(v, np.float32).tobytes())
            for k, v in (("long", spec.long_factor),
                         ("short", spec.short_factor))]


def write_gguf(path, spec, weights, kind, meta_override=None, version=3,
               drop=None, extra=None, arch="llama", alignment=32,
               tokenizer=None, spare_expert=False):
    """Returns the f32 values (in Hugging Face order) the file holds.
    `tokenizer`: metadata entries of a tokenizer, in place of the bare
    token list. `spare_expert`: one expert more in each stacked tensor
    than the model has."""
    meta = {f"{arch}.embedding_length": (4, spec.d),
            f"{arch}.block_count": (4, spec.layers),
            f"{arch}.attention.head_count": (4, spec.heads),
            f"{arch}.attention.head_count_kv": (4, spec.kv_heads),
            f"{arch}.feed_forward_length": (4, spec.d_ff),
            f"{arch}.context_length": (4, spec.max_seq),
            f"{arch}.rope.freq_base": (6, spec.theta),
            f"{arch}.attention.layer_norm_rms_epsilon": (6, spec.eps),
            f"{arch}.rope.dimension_count": (4, spec.rotary_dim)}
    if spec.moe:  # (Mixtral's and Qwen-MoE's converters write both.)
        meta[f"{arch}.expert_count"] = (4, spec.n_experts)
        meta[f"{arch}.expert_used_count"] = (4, spec.top_k)
    # (The converter writes a head's width where the config has head_dim;
    # these specs have one where it is not d / heads.)
    if spec.head_dim * spec.heads != spec.d:
        meta[f"{arch}.attention.key_length"] = (4, spec.head_dim)
        meta[f"{arch}.attention.value_length"] = (4, spec.head_dim)
    meta.update(family_meta(spec, arch))
    meta.update(meta_override or {})
    meta = {k: v for k, v in meta.items() if v is not None}
    entries = [kv("general.architecture", 8, arch),
               kv("general.alignment", 4, alignment)]
    entries += tokenizer or [kv("tokenizer.ggml.tokens", 9,
                                ["<unk>", "<s>", "</s>"])]
    entries += [kv(k, t, v) for k, (t, v) in meta.items()]
    infos, blobs, held, offset = [], [], {}, 0
    # One tensor per GGUF name: a layer's routed experts stacked
    # outermost, as llama.cpp writes them.
    groups = {}
    for name in sorted(weights):
        if name != drop:
            groups.setdefault(gguf_name(name, arch), []).append(name)
    for gname in sorted(groups):
        names = sorted(groups[gname], key=lambda n: expert_of(n) or 0)
        name = names[0]
        w = np.stack([weights[n].numpy() for n in names]).astype(np.float32)
        w = w if expert_of(name) is not None else w[0]
        if spare_expert and expert_of(name) is not None:
            w = np.concatenate([w, w[:1]])
            names = names + [None]
        shape = w.shape
        if name.endswith("shared_expert_gate.weight"):  # [1, d]: a vector
            w = w.reshape(-1)
        # (llama.cpp's Gemma converters store a norm's 1 + w.)
        gemma_norm = arch.startswith("gemma") and name.endswith("norm.weight")
        if gemma_norm:
            w = w + np.float32(1)
        # (llama.cpp permutes q/k rows for its llama architecture only, from
        # Hugging Face's half-split order into its interleaved rotation's: a
        # model that rotates interleaved already has that order.)
        turn = arch == "llama" and spec.style != "interleaved"
        q = turn and name.endswith(("q_proj.weight", "q_proj.bias"))
        k_ = turn and name.endswith(("k_proj.weight", "k_proj.bias"))
        if q:
            w = permute(w, spec.heads)
        elif k_:
            w = permute(w, spec.kv_heads)
        k = kind if w.ndim >= 2 else "F32"
        if k.endswith("_K") and w.shape[-1] % 256:  # (as llama.cpp falls back)
            k = {"Q4_K": "Q5_0", "Q5_K": "Q5_1"}.get(k, "Q8_0")
        if k[0] == "Q" and w.shape[-1] % 32:
            k = "F16"
        raw, vals = encode(w, k)
        if gemma_norm:
            vals = vals - np.float32(1)
        if q:  # back to Hugging Face's rows
            vals = permute_back(vals, spec.heads)
        elif k_:
            vals = permute_back(vals, spec.kv_heads)
        vals = vals.reshape(shape)
        if expert_of(name) is not None:
            held.update((n, vals[i]) for i, n in enumerate(names) if n)
        else:
            held[name] = vals
        dims = list(reversed(w.shape))
        infos.append(gstr(gname) + struct.pack("<I", len(dims)) +
                     struct.pack(f"<{len(dims)}Q", *dims) +
                     struct.pack("<IQ", TYPES[k], offset))
        pad = (-len(raw)) % alignment
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    for name, dims, k, raw, *at in (extra or []) + family_tensors(spec, arch):
        # (`at`: the tensor's data at that offset, over another's.)
        infos.append(gstr(name) + struct.pack("<I", len(dims)) +
                     struct.pack(f"<{len(dims)}Q", *dims) +
                     struct.pack("<IQ", TYPES.get(k, k), at[0] if at else offset))
        if not at:
            blobs.append(raw + b"\0" * ((-len(raw)) % alignment))
            offset += len(blobs[-1])
    head = (b"GGUF" + struct.pack("<IQQ", version, len(infos), len(entries)) +
            b"".join(entries) + b"".join(infos))
    head += b"\0" * ((-len(head)) % alignment)
    with open(path, "wb") as f:
        f.write(head + b"".join(blobs))
    return held


def permute_back(w, heads):
    out = w.shape[0]
    return (w.reshape(heads, out // heads // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def expect_load_error(case, lib_path, path, name, *fragments):
    """Loading `path` into a fresh model of the library fails with a
    message holding each of `fragments`."""
    m = archrt.Lib(lib_path)
    model = archrt.C.c_void_p()
    m.check(m.lib.archrt_model_create(archrt.C.byref(model)), "create")
    status = m.lib.archrt_load_weights(model, path.encode())
    case.error(m, name, status, *fragments)
    m.lib.archrt_model_free(model)


def logits(lib, path, spec, tokens):
    model = lib.model(path)
    seq = lib.seq(model)
    out = []
    lib.prefill(seq, tokens[:5])
    out.append(np.array(lib.logits(seq, spec.vocab), dtype=np.float32))
    for t in tokens[5:]:
        lib.decode(seq, t)
        out.append(np.array(lib.logits(seq, spec.vocab), dtype=np.float32))
    lib.lib.archrt_seq_free(seq)
    lib.lib.archrt_model_free(model)
    return np.stack(out)


def spm_tokenizer(vocab, gemma=False):
    """A SentencePiece tokenizer as llama.cpp keeps it, `vocab` tokens:
    control tokens, the 256 byte tokens, then pieces of a few letters
    (scores favour the longer). Gemma's layout (`gemma`): <pad> <eos> <bos>
    <unk> and the turn markers first (BOS 2, EOS 1), no space before the
    text, and the token types that mark them."""
    head = ["<unk>", "<s>", "</s>"]
    if gemma:
        head = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>",
                "<end_of_turn>"]
    pieces = head + ["<0x%02X>" % b for b in range(256)]
    words = ["\u2581", "a", "b", "ab", "\u2581a", "\u2581ab", "ba", "\u2581b"]
    pieces += words + ["x%d" % i for i in range(vocab - len(pieces) -
                                                len(words))]
    scores = [0.0] * (len(head) + 256)
    scores += [-1.0, -2.0, -2.0, -0.5, -0.4, -0.1, -0.6, -0.3]
    scores += [-9.0] * (vocab - len(scores))
    raw = struct.pack("<IQ", 6, len(scores)) + struct.pack(
        f"<{len(scores)}f", *scores)
    entries = [kv("tokenizer.ggml.model", 8, "llama"),
               kv("tokenizer.ggml.tokens", 9, pieces),
               gstr("tokenizer.ggml.scores") + struct.pack("<I", 9) + raw]
    if gemma:
        types = [3, 3, 3, 2, 3, 3] + [6] * 256 + [1] * (vocab - 262)
        entries += [
            gstr("tokenizer.ggml.token_type") + struct.pack(
                "<IIQ", 9, 5, vocab) + struct.pack(f"<{vocab}i", *types),
            gstr("tokenizer.ggml.bos_token_id") + struct.pack("<II", 4, 2),
            gstr("tokenizer.ggml.eos_token_id") + struct.pack("<II", 4, 1),
            gstr("tokenizer.ggml.add_space_prefix") + struct.pack("<IB", 7, 0)]
    return entries


def main():
    args = archrt.script_args(__doc__, "write-tokenized", "write-all", "arch",
                              "kinds", "write-import", "same-as", "weights",
                              "tokenizer-json", "template")
    if args.same_as:  # two libraries of one model: a GGUF's import, a spec
        case = archrt.Cases()
        spec = archref.Spec(args.spec)
        tokens = [int(t) for t in
                  np.random.default_rng(3).integers(0, spec.vocab, 12)]
        got = logits(archrt.Lib(os.path.abspath(args.lib)), args.weights,
                     spec, tokens)
        want = logits(archrt.Lib(os.path.abspath(args.same_as)), args.weights,
                      spec, tokens)
        case(f"{spec.name}: logits equal, bit for bit, the spec's library's "
             f"(spread {want.std():.3g})", np.array_equal(got, want),
             f"max diff {np.abs(got - want).max()}")
        return case.summary()
    if args.write_import:  # files archc cannot make a spec of
        spec = archref.Spec(args.spec)
        weights = archref.random_weights(spec, 7)
        out = args.write_import
        a = "llama"
        write_gguf(os.path.join(out, "falcon.gguf"), spec, weights, "F32",
                   arch="falcon")
        # (The families' own keys, on this spec's tensors: the import reads
        # the metadata and the tensor table's names.)
        write_gguf(os.path.join(out, "gemma2-no-window.gguf"), spec, weights,
                   "F32", arch="gemma2")
        narrow = {"gemma2.attention.key_length": (4, spec.head_dim // 2),
                  "gemma2.attention.value_length": (4, spec.head_dim // 2),
                  "gemma2.rope.dimension_count": (4, spec.head_dim // 2),
                  "gemma2.attention.sliding_window": (4, 4096)}
        write_gguf(os.path.join(out, "gemma2-27b.gguf"), spec, weights, "F32",
                   arch="gemma2",
                   meta_override=dict(narrow, **{"gemma2.block_count": (4, 46)}))
        write_gguf(os.path.join(out, "gemma2-9b.gguf"), spec, weights, "F32",
                   arch="gemma2",
                   meta_override=dict(narrow, **{"gemma2.block_count": (4, 42)}))
        write_gguf(os.path.join(out, "gemma3-27b.gguf"), spec, weights, "F32",
                   arch="gemma3", meta_override={
                       "gemma3.attention.key_length": (4, spec.head_dim // 2),
                       "gemma3.attention.value_length": (4, spec.head_dim // 2),
                       "gemma3.rope.dimension_count": (4, spec.head_dim // 2),
                       "gemma3.block_count": (4, 62),
                       "gemma3.attention.sliding_window": (4, 512),
                       "gemma3.final_logit_softcapping": (6, 30.0)})
        write_gguf(os.path.join(out, "gemma3-global.gguf"), spec, weights,
                   "F32", arch="gemma3",
                   meta_override={"gemma3.final_logit_softcapping": (6, 0.0)})
        write_gguf(os.path.join(out, "gemma3-yarn.gguf"), spec, weights,
                   "F32", arch="gemma3",
                   meta_override={"gemma3.rope.scaling.type": (8, "yarn"),
                                  "gemma3.rope.scaling.factor": (6, 4.0)})
        write_gguf(os.path.join(out, "phi3-window.gguf"), spec, weights,
                   "F32", arch="phi3",
                   meta_override={"phi3.attention.sliding_window": (4, 2047),
                                  "phi3.rope.scaling.attn_factor": (6, 1.19)})
        write_gguf(os.path.join(out, "rope-dims-big.gguf"), spec, weights,
                   "F32", meta_override={
                       f"{a}.rope.dimension_count": (4, 2 * spec.head_dim)})
        ones = np.ones(spec.head_dim // 2, np.float32).tobytes()
        write_gguf(os.path.join(out, "phi3-longrope.gguf"), spec, weights,
                   "F32", arch="phi3",
                   extra=[("rope_factors_long.weight", [spec.head_dim // 2],
                           "F32", ones)])
        half = spec.head_dim // 2
        def tables(long=None, short=None, more=()):
            return [("rope_factors_long.weight", [len(long or [1.0] * half)],
                     "F32", np.array(long or [1.0] * half, np.float32).tobytes()),
                    ("rope_factors_short.weight", [half], "F32",
                     np.array(short or [1.0] * half, np.float32).tobytes())
                    ] + list(more)
        orig = {"phi3.rope.scaling.original_context_length": (
            4, spec.max_seq // 4)}
        write_gguf(os.path.join(out, "phi3-lr-no-orig.gguf"), spec, weights,
                   "F32", arch="phi3", extra=tables())
        write_gguf(os.path.join(out, "phi3-lr-default.gguf"), spec, weights,
                   "F32", arch="phi3", extra=tables(), meta_override=orig)
        write_gguf(os.path.join(out, "phi3-lr-nan.gguf"), spec, weights,
                   "F32", arch="phi3", meta_override=orig,
                   extra=tables(long=[1.0] * (half - 1) + [float("nan")]))
        write_gguf(os.path.join(out, "phi3-lr-length.gguf"), spec, weights,
                   "F32", arch="phi3", meta_override=orig,
                   extra=tables(long=[1.0] * (half // 2)))
        write_gguf(os.path.join(out, "phi3-lr-freqs.gguf"), spec, weights,
                   "F32", arch="phi3", meta_override=orig, extra=tables(
                       more=[("rope_freqs.weight", [half], "F32", ones)]))
        write_gguf(os.path.join(out, "llama-longrope.gguf"), spec, weights,
                   "F32", extra=[(f"rope_factors_{k}.weight",
                                  [spec.head_dim // 2], "F32", ones)
                                 for k in ("long", "short")])
        write_gguf(os.path.join(out, "qwen2moe-widths.gguf"), spec, weights,
                   "F32", arch="qwen2moe",
                   meta_override={"qwen2moe.expert_count": (4, 4),
                                  "qwen2moe.expert_used_count": (4, 2)})
        write_gguf(os.path.join(out, "no-ctx.gguf"), spec, weights, "F32",
                   meta_override={f"{a}.context_length": None})
        write_gguf(os.path.join(out, "rope-freqs.gguf"), spec, weights, "F32",
                   extra=[("rope_freqs.weight", [spec.head_dim // 2], "F32",
                           b"\0" * (2 * spec.head_dim))])
        write_gguf(os.path.join(out, "q-bias.gguf"), spec, weights, "F32",
                   extra=[("blk.0.attn_q.bias", [spec.heads * spec.head_dim],
                           "F32", b"\0" * (4 * spec.heads * spec.head_dim))])
        write_gguf(os.path.join(out, "scaling.gguf"), spec, weights, "F32",
                   meta_override={f"{a}.rope.scaling.type": (8, "longrope"),
                                  f"{a}.rope.scaling.factor": (6, 4.0)})
        write_gguf(os.path.join(out, "linear.gguf"), spec, weights, "F32",
                   meta_override={f"{a}.rope.scaling.type": (8, "linear"),
                                  f"{a}.rope.scaling.factor": (6, 4.0)})
        # (Files that import, each with what llama.cpp would make of it.)
        write_gguf(os.path.join(out, "defaults.gguf"), spec, weights, "F32",
                   drop="lm_head.weight",
                   meta_override={f"{a}.rope.freq_base": None,
                                  f"{a}.rope.scaling.factor": (6, 2.0),
                                  f"{a}.foo_bar": (4, 7)})
        # Llama 3.1's scaling as llama.cpp's converter keeps it: a factor
        # per frequency (factor 8, low 1, high 4, original 8192), float32.
        dim, factors = spec.head_dim, []
        for i in range(0, spec.head_dim, 2):
            freq = np.float32(1.0) / np.float32(spec.theta) ** (
                np.float32(i) / np.float32(dim))
            wavelen = 2 * np.pi / float(freq)
            if wavelen < 8192 / 4:
                factors.append(1.0)
            elif wavelen > 8192 / 1:
                factors.append(8.0)
            else:
                smooth = (8192 / wavelen - 1) / (4 - 1)
                factors.append(1 / ((1 - smooth) / 8 + smooth))
        write_gguf(os.path.join(out, "llama3.gguf"), spec, weights, "F32",
                   extra=[("rope_freqs.weight", [dim // 2], "F32",
                           np.array(factors, np.float32).tobytes())])
        write_gguf(os.path.join(out, "align.gguf"), spec, weights, "F32",
                   alignment=48)
        write_gguf(os.path.join(out, "yarn-nan.gguf"), spec, weights, "F32",
                   meta_override={
                       f"{a}.rope.scaling.type": (8, "yarn"),
                       f"{a}.rope.scaling.factor": (6, 4.0),
                       f"{a}.rope.scaling.original_context_length": (
                           6, float("nan"))})
        write_gguf(os.path.join(out, "yarn.gguf"), spec, weights, "F32",
                   meta_override={f"{a}.rope.scaling.type": (8, "yarn"),
                                  f"{a}.rope.scaling.factor": (6, 4.0)})
        # (And files that do not.)
        per_layer = (gstr(f"{a}.attention.head_count_kv") +
                     struct.pack("<IIQ", 9, 4, spec.layers) +
                     struct.pack(f"<{spec.layers}I", *[1] * spec.layers))
        write_gguf(os.path.join(out, "per-layer.gguf"), spec, weights, "F32",
                   meta_override={f"{a}.attention.head_count_kv": None},
                   tokenizer=[kv("tokenizer.ggml.tokens", 9, ["<unk>"]),
                              per_layer])
        write_gguf(os.path.join(out, "value-length.gguf"), spec, weights,
                   "F32", meta_override={
                       f"{a}.attention.key_length": (4, spec.head_dim),
                       f"{a}.attention.value_length": (4, spec.head_dim // 2)})
        write_gguf(os.path.join(out, "nan-eps.gguf"), spec, weights, "F32",
                   meta_override={
                       f"{a}.attention.layer_norm_rms_epsilon": (6, float("nan"))})
        return 0
    if args.write_tokenized:  # an F32 GGUF with its tokenizer, for archc run
        spec = archref.Spec(args.spec)
        arch = args.arch or "llama"
        tokenizer = spm_tokenizer(spec.vocab, gemma=arch.startswith("gemma"))
        if args.tokenizer_json:  # a Llama 2 tokenizer.json's, as converted
            sys.path.insert(0, os.path.join(os.path.dirname(__file__),
                                            "tokenizer"))
            import make_gguf
            tokenizer = make_gguf.spm_json_entries(
                args.tokenizer_json, 1, 2, 1, args.template)
        write_gguf(args.write_tokenized, spec, archref.random_weights(spec, 7),
                   "F32", arch=arch, tokenizer=tokenizer)
        return 0
    if args.write_all:  # the files this script loads, for other readers
        spec = archref.Spec(args.spec)
        weights = archref.random_weights(spec, 7)
        arch = args.arch or "llama"
        # (Phi-3's GGUF tensors are its checkpoint's fused ones.)
        if spec.naming == "hf-phi3":
            weights = archref.hf_checkpoint(spec, weights)
        for kind in (args.kinds or "F32,F16,BF16,Q8_0").split(","):
            write_gguf(os.path.join(args.write_all, f"w-{kind}.gguf"), spec,
                       weights, kind, alignment=64 if kind == "Q8_0" else 32,
                       arch=arch)
        write_gguf(os.path.join(args.write_all, "w-tokenized.gguf"), spec,
                   weights, "F32", tokenizer=spm_tokenizer(spec.vocab),
                   arch=arch)
        return 0
    case = archrt.Cases()
    spec = archref.Spec(args.spec)
    weights = archref.random_weights(spec, 7)
    lib = archrt.Lib(args.lib)
    tokens = [3, 17, 42, 9, 77, 5, 61, 2]
    import torch
    if args.arch:  # another architecture llama.cpp names alike: round trips
        if args.kinds:
            golden(case)
        # (Phi-3's GGUF tensors are its checkpoint's fused ones.)
        fused = spec.naming == "hf-phi3"
        source = archref.hf_checkpoint(spec, weights) if fused else weights
        with tempfile.TemporaryDirectory() as tmp:
            st = os.path.join(tmp, "w.safetensors")
            # (Under the spec's own checkpoint names: Mixtral's.)
            archref.write_safetensors(st, archref.hf_checkpoint(spec, weights))
            base = logits(lib, st, spec, tokens)
            kinds = args.kinds.split(",") if args.kinds else ["F32", "Q8_0"]
            for kind in kinds:
                g = os.path.join(tmp, f"w-{kind}.gguf")
                held = write_gguf(g, spec, source, kind, arch=args.arch)
                ref = os.path.join(tmp, f"held-{kind}.safetensors")
                held = {n: torch.from_numpy(v.copy()) for n, v in held.items()}
                archref.write_safetensors(
                    ref, held if fused else archref.hf_checkpoint(spec, held))
                got = logits(lib, g, spec, tokens)
                want = logits(lib, ref, spec, tokens)
                case(f"{args.arch} {kind}: logits equal the same values' "
                     "from safetensors", np.array_equal(got, want),
                     f"max diff {np.abs(got - want).max()}")
                err = np.linalg.norm(got - base) / np.linalg.norm(base)
                if kind == "F32" and any(expert_of(n) is not None
                                         for n in weights):
                    g = os.path.join(tmp, "spare.gguf")
                    write_gguf(g, spec, weights, "F32", arch=args.arch,
                               spare_expert=True)
                    expect_load_error(case, args.lib, g, f"{args.arch}: an "
                                      "expert more than the model's",
                                      "experts; the model reads")
                if kind == "F32" and args.arch.startswith("gemma"):
                    # (The file's 1 + w, less 1, is w to f32 rounding.)
                    case(f"{args.arch} F32: the original weights' logits "
                         f"to the rounding of 1 + w (rel L2 {err:.1e})",
                         err < 1e-5, str(err))
                elif kind == "F32":
                    case(f"{args.arch} F32: the original weights' logits",
                         np.array_equal(got, base), "differ")
                else:
                    # (Random weights, so the logits move by about what
                    # each type's rounding of them does: Q4_K's 7%.)
                    bound = {"Q4_K": 0.3, "Q5_K": 0.15, "Q6_K": 0.08,
                             "Q4_0": 0.3, "Q4_1": 0.3, "Q5_0": 0.15,
                             "Q5_1": 0.15}.get(kind, 0.05)
                    case(f"{args.arch} {kind}: within its rounding of f32 "
                         f"(rel L2 {err:.1e})", 0 < err < bound, str(err))
        return case.summary()
    with tempfile.TemporaryDirectory() as tmp:
        st = os.path.join(tmp, "w.safetensors")
        archref.write_safetensors(st, weights)
        base = logits(lib, st, spec, tokens)
        for kind in ("F32", "F16", "BF16", "Q8_0"):
            g = os.path.join(tmp, f"w-{kind}.gguf")
            # (Q8_0 with the data aligned to 64 bytes.)
            held = write_gguf(g, spec, weights, kind,
                              alignment=64 if kind == "Q8_0" else 32)
            ref = os.path.join(tmp, f"held-{kind}.safetensors")
            archref.write_safetensors(ref, {n: torch.from_numpy(v.copy())
                                            for n, v in held.items()})
            got, want = logits(lib, g, spec, tokens), logits(lib, ref, spec,
                                                            tokens)
            case(f"{kind}: logits equal the same values' from safetensors",
                 np.array_equal(got, want),
                 f"max diff {np.abs(got - want).max()}")
            err = np.linalg.norm(got - base) / np.linalg.norm(base)
            case(f"{kind}: within its rounding of f32 (rel L2 {err:.1e})",
                 err == 0 if kind == "F32" else 0 < err < 0.05, str(err))

        def load_error(name, fragments, **kw):
            g = os.path.join(tmp, name + ".gguf")
            write_gguf(g, spec, weights, "F16", **kw)
            expect_load_error(case, args.lib, g, name, *fragments)
        load_error("another architecture",
                   ['general.architecture is "gemma"; archc reads GGUF files '
                    'of the llama, qwen2, qwen2moe, qwen3, qwen3moe, gemma2, '
                    'gemma3 and phi3 architectures'],
                   arch="gemma")
        # (Named before its tensor table: a k-quant tensor is not the error.)
        # (Another architecture's per-layer arrays are not its shape keys.)
        per_layer = (gstr("deci.feed_forward_length") + struct.pack("<I", 9) +
                     struct.pack("<IQ", 4, 2) + struct.pack("<2I", 64, 96))
        load_error("another architecture, per-layer arrays",
                   ['general.architecture is "deci"; archc reads GGUF files'],
                   arch="deci", tokenizer=[per_layer])
        load_error("another architecture, k-quants",
                   ['general.architecture is "starcoder2"; archc reads GGUF files '
                    'of the llama, qwen2, qwen2moe, qwen3, qwen3moe, gemma2, '
                    'gemma3 and phi3 architectures'],
                   arch="starcoder2",
                   extra=[("x.weight", [256], 12, b"\0" * 144)])
        # 19 tensors and 104 more: the count's low byte is '{', which the
        # safetensors sniff would take; the GGUF magic decides.
        load_error("count byte '{'", ["tensor 'z000.weight' is not a parameter"],
                   extra=[(f"z{i:03d}.weight", [1], "F32", b"\0" * 4)
                          for i in range(104)])
        load_error("metadata mismatch",
                   ["llama.embedding_length is 96, the model has"],
                   meta_override={"llama.embedding_length": (4, 96)})
        load_error("missing tensor", ["tensor 'blk.1.ffn_up.weight' "
                                      "(parameter 'model.layers.1.mlp.up_proj."
                                      "weight') is missing"],
                   drop="model.layers.1.mlp.up_proj.weight")
        load_error("version 2", ["GGUF version 2; archc reads version 3"],
                   version=2)
        load_error("unexpected tensor", ["tensor 'blk.9.attn_q.weight' is not "
                                         "a parameter of the model"],
                   extra=[("blk.9.attn_q.weight", [4], "F32", b"\0" * 16)])
        load_error("overlapping tensors",
                   ["data of tensors", "overlap (offsets 0 and 0"],
                   extra=[("x.weight", [4], "F32", b"", 0)])
        load_error("Q2_K", ["tensor 'x.weight': type 10 is not F32, F16, "
                            "BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K "
                            "or Q6_K"],
                   extra=[("x.weight", [256], 10, b"\0" * 84)])
        # A k-quant's rows must be whole super-blocks of 256.
        load_error("Q4_K rows of 128", ["tensor 'x.weight': type 12 is not",
                                        "256 for the k-quants"],
                   extra=[("x.weight", [128, 2], 12, b"\0" * 144)])
        g = os.path.join(tmp, "trunc.gguf")
        write_gguf(g, spec, weights, "F32")
        with open(g, "rb") as f:
            data = f.read()
        for cut, frag in ((3, "not a GGUF file"), (20, "not a GGUF file (the magic"),
                          (200, "more than the file holds"),
                          (len(data) - 8, "past the end of the file")):
            with open(g, "wb") as f:
                f.write(data[:cut])
            if cut == 3:  # too short to sniff: the generic error
                frag = "neither a safetensors file"
            expect_load_error(case, args.lib, g, f"cut at {cut} bytes", frag)
    return case.summary()


if __name__ == "__main__":
    sys.exit(main())
