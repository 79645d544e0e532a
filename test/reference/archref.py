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
        self.eps = t.get("norm", {}).get("eps", 1e-5)
        self.heads = a["n_heads"]
        self.kv_heads = a.get("n_kv_heads", self.heads)
        self.head_dim = a.get("head_dim", self.d // self.heads)
        self.scale = a.get("scale", 1.0 / math.sqrt(self.head_dim))
        pos = a.get("position", {})
        self.rope = pos.get("kind", "rope") == "rope"
        self.theta = pos.get("theta", 10000.0)
        self.rotary_dim = pos.get("rotary_dim", self.head_dim)
        self.style = pos.get("style", "half_split")
        self.d_ff = t["ffn"]["d_ff"]

    def param_shapes(self):
        """Hugging Face Llama tensor names and shapes."""
        d, q, kv, ff = self.d, self.heads * self.head_dim, \
            self.kv_heads * self.head_dim, self.d_ff
        shapes = {"model.embed_tokens.weight": (self.vocab, d)}
        for i in range(self.layers):
            p = f"model.layers.{i}."
            shapes.update({
                p + "input_layernorm.weight": (d,),
                p + "self_attn.q_proj.weight": (q, d),
                p + "self_attn.k_proj.weight": (kv, d),
                p + "self_attn.v_proj.weight": (kv, d),
                p + "self_attn.o_proj.weight": (d, q),
                p + "post_attention_layernorm.weight": (d,),
                p + "mlp.gate_proj.weight": (ff, d),
                p + "mlp.up_proj.weight": (ff, d),
                p + "mlp.down_proj.weight": (d, ff),
            })
        shapes["model.norm.weight"] = (d,)
        if not self.tied:
            shapes["lm_head.weight"] = (self.vocab, d)
        return shapes


def random_weights(spec, seed):
    """Seeded weights with activations of unit scale: matrices N(0, 1/fan_in),
    embeddings N(0, 1), norm weights 1 + N(0, 0.1^2)."""
    g = torch.Generator().manual_seed(seed)
    w = {}
    for name, shape in spec.param_shapes().items():
        if len(shape) == 1:
            w[name] = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name == "model.embed_tokens.weight":
            w[name] = torch.randn(shape, generator=g)
        else:
            w[name] = torch.randn(shape, generator=g) / math.sqrt(shape[1])
    return {k: v.float().contiguous() for k, v in w.items()}


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = tensors[name].numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
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


def rotate(x, spec):
    """RoPE on x [T, H, head_dim] at positions 0..T-1 (Su et al. 2021)."""
    T = x.shape[0]
    rot = spec.rotary_dim
    i = torch.arange(rot // 2, dtype=torch.float64)
    freq = spec.theta ** (-2.0 * i / rot)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
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


def forward(spec, w, tokens, dtype=torch.float64, last_only=False):
    """Logits [T, vocab] of a whole token sequence (causal); with last_only,
    the final norm and classifier run on the last position only."""
    W = {k: v.to(dtype) for k, v in w.items()}
    T, H, KV, hd = len(tokens), spec.heads, spec.kv_heads, spec.head_dim
    x = W["model.embed_tokens.weight"][torch.tensor(tokens)]
    mask = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)
    for i in range(spec.layers):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], spec.eps)
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(T, H, hd)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(T, KV, hd)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(T, KV, hd)
        if spec.rope:
            q, k = rotate(q, spec).to(dtype), rotate(k, spec).to(dtype)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = torch.einsum("thd,shd->hts", q, k) * spec.scale + mask
        attn = torch.einsum("hts,shd->thd", torch.softmax(scores, -1), v)
        x = x + attn.reshape(T, H * hd) @ W[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], spec.eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        u = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (g * torch.sigmoid(g) * u) @ W[p + "mlp.down_proj.weight"].T
    if last_only:
        x = x[-1:]
    x = rms_norm(x, W["model.norm.weight"], spec.eps)
    head = W["model.embed_tokens.weight" if spec.tied else "lm_head.weight"]
    return x @ head.T


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
    wr.add_argument("--out", required=True)
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
    elif args.cmd == "weights":
        write_safetensors(args.out, random_weights(spec, args.seed))
    else:
        prompt = [int(t) for t in args.prompt.split(",")]
        w = load_llama2c(spec, args.llama2c)
        print(",".join(str(t) for t in greedy(spec, w, prompt, args.n)))


if __name__ == "__main__":
    sys.exit(main())
