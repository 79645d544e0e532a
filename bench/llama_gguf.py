"""A GGUF file of random weights for a Llama-shaped archc spec, for
bench/llama-cpp.sh to run llama.cpp's llama-bench on the same shapes as
`archc bench --random-weights`.

  llama_gguf.py SPEC OUT.gguf f32|bf16|f16 GGUF_PY_DIR
  llama_gguf.py SPEC --check      (only the check below)

The spec must be what llama.cpp's "llama" architecture computes: RMSNorm
before attention and FFN, RoPE over the whole head, a SiLU-gated FFN, no
biases, the default attention scale (any other value
of a field, or a table such as [moe], is refused, naming it). Weights are
normal(0, 0.02) from a fixed seed (their values do not change the time of
a dense model); the norms' are ones, in f32 as llama.cpp's converter keeps
them. The vocabulary is a placeholder of the spec's size (three control
tokens, 256 byte tokens, then "t<i>"): llama-bench feeds token ids, never
text.
"""

import sys
import tomllib


def refuse(spec_path: str, what: str) -> None:
    sys.exit(f"llama_gguf.py: {spec_path}: {what}; llama.cpp's 'llama' "
             "architecture would compute another model")


ANY = object()  # a key whose value does not change what "llama" computes
# Per table, the keys "llama" computes with any value (ANY) or only with
# the one given (docs/spec.md's default, or what makes the key a no-op).
# A key not listed, or a table not listed, is refused.
ALLOWED = {
    "model": {"name": ANY, "vocab_size": ANY, "d_model": ANY, "n_layers": ANY,
              "max_seq_len": ANY, "tie_embeddings": ANY, "embedding_scale": 1.0},
    "norm": {"kind": "rmsnorm", "eps": ANY, "bias": False, "placement": "pre",
             "final": True, "embedding_norm": False},
    "attention": {"n_heads": ANY, "n_kv_heads": ANY, "head_dim": ANY,
                  "qkv_bias": False, "out_bias": False, "qk_norm": "none",
                  "window": 0, "dilation": 1, "global_tokens": [],
                  "random_blocks": 0, "differential": False, "linear": "none",
                  "linear_normalize": ANY, "position": ANY,
                  "scale": ANY},  # (checked below: 1/sqrt(head_dim))
    # (style: half_split is interleaved RoPE with q and k rows permuted,
    # the same work; the T5/Shaw/learned keys do nothing under rope.)
    "attention.position": {"kind": "rope", "theta": ANY, "style": ANY,
                           "scaling": "none", "offset": ANY, "buckets": ANY,
                           "max_distance": ANY, "clip": ANY,
                           "rotary_dim": ANY},  # (checked below: head_dim)
    "ffn": {"kind": "glu", "activation": "silu", "d_ff": ANY, "bias": False},
    "block": {"layout": "serial", "shared_norm": ANY},
    "output": {"bias": False, "logit_scale": 1.0, "z_loss": ANY},
    "weights": {"naming": ANY},
}


def check(spec_path: str, spec: dict) -> None:
    """Refuses (exits, naming the field) a spec llama.cpp's "llama"
    architecture would compute differently."""
    tables = {k: v for k, v in spec.items() if k != "attention"}
    attn = spec.get("attention", {})
    tables["attention"] = attn
    tables["attention.position"] = attn.get("position", {})
    for table, keys in tables.items():
        if table not in ALLOWED:
            refuse(spec_path, f"[{table}] is set")
        for key, value in keys.items():
            if isinstance(value, dict) and table == "attention" and key != "position":
                refuse(spec_path, f"[attention.{key}] is set")
            want = ALLOWED[table].get(key, KeyError)
            if want is KeyError:
                refuse(spec_path, f"[{table}] {key} is set")
            if want is not ANY and value != want:
                refuse(spec_path, f"[{table}] {key} = {value!r}")
    hd = attn.get("head_dim", spec["model"]["d_model"] // attn["n_heads"])
    if tables["attention.position"].get("rotary_dim", hd) != hd:
        refuse(spec_path, "[attention.position] rotary_dim is not head_dim")
    if abs(attn.get("scale", hd ** -0.5) - hd ** -0.5) > 1e-9 * hd ** -0.5:
        refuse(spec_path, "[attention] scale is not 1/sqrt(head_dim)")


def main() -> None:
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 3 and sys.argv[2] != "--check") \
            or (len(sys.argv) == 5 and sys.argv[3] not in ("f32", "bf16", "f16")):
        sys.exit("usage: llama_gguf.py SPEC OUT.gguf f32|bf16|f16 GGUF_PY_DIR\n"
                 "       llama_gguf.py SPEC --check")
    spec_path = sys.argv[1]
    try:
        with open(spec_path, "rb") as f:
            spec = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        sys.exit(f"llama_gguf.py: {spec_path}: {e}")
    check(spec_path, spec)
    if sys.argv[2] == "--check":
        return
    out_path, wtype, gguf_dir = sys.argv[2:]
    sys.path.insert(0, gguf_dir)
    try:
        import gguf  # llama.cpp's own writer (bench/llama-cpp.sh unpacks it)
    except ImportError as e:
        sys.exit(f"llama_gguf.py: llama.cpp's gguf-py in {gguf_dir} does not "
                 f"import ({e}): it needs numpy and PyYAML (Debian's "
                 "python3-numpy, python3-yaml)")
    import numpy as np
    model, attn, ffn = spec["model"], spec["attention"], spec["ffn"]
    norm, pos = spec.get("norm", {}), attn.get("position", {})
    vocab, d = model["vocab_size"], model["d_model"]
    layers, dff = model["n_layers"], ffn["d_ff"]
    heads, kv = attn["n_heads"], attn.get("n_kv_heads", attn["n_heads"])
    hd = attn.get("head_dim", d // heads)

    w = gguf.GGUFWriter(out_path, "llama")
    w.add_name(model["name"])
    w.add_context_length(model.get("max_seq_len", 2048))
    w.add_embedding_length(d)
    w.add_block_count(layers)
    w.add_feed_forward_length(dff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(float(pos.get("theta", 10000.0)))
    w.add_layer_norm_rms_eps(float(norm.get("eps", 1e-5)))
    w.add_vocab_size(vocab)
    ftype = {"f32": gguf.LlamaFileType.ALL_F32, "bf16": gguf.LlamaFileType.MOSTLY_BF16,
             "f16": gguf.LlamaFileType.MOSTLY_F16}[wtype]
    w.add_file_type(ftype)
    tokens = [b"<unk>", b"<s>", b"</s>"] + [b"<0x%02X>" % i for i in range(256)]
    tokens += [b"t%d" % i for i in range(len(tokens), vocab)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256
    types += [gguf.TokenType.NORMAL] * (vocab - len(types))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens[:vocab])
    w.add_token_scores([0.0] * vocab)
    w.add_token_types(types[:vocab])
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    rng = np.random.default_rng(1234)

    def matrix(name: str, rows: int, cols: int) -> None:
        a = (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02)
        if wtype == "f32":
            w.add_tensor(name, a)
        elif wtype == "f16":
            w.add_tensor(name, a.astype(np.float16))
        else:  # bf16: the top half of each f32, rounded to nearest even
            bits = a.view(np.uint32)
            rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
            w.add_tensor(name, rounded.astype(np.uint16), raw_dtype=gguf.GGMLQuantizationType.BF16)

    def ones(name: str) -> None:
        w.add_tensor(name, np.ones(d, dtype=np.float32))

    matrix("token_embd.weight", vocab, d)
    for i in range(layers):
        ones(f"blk.{i}.attn_norm.weight")
        matrix(f"blk.{i}.attn_q.weight", heads * hd, d)
        matrix(f"blk.{i}.attn_k.weight", kv * hd, d)
        matrix(f"blk.{i}.attn_v.weight", kv * hd, d)
        matrix(f"blk.{i}.attn_output.weight", d, heads * hd)
        ones(f"blk.{i}.ffn_norm.weight")
        matrix(f"blk.{i}.ffn_gate.weight", dff, d)
        matrix(f"blk.{i}.ffn_up.weight", dff, d)
        matrix(f"blk.{i}.ffn_down.weight", d, dff)
    ones("output_norm.weight")
    if not model.get("tie_embeddings", False):  # (tied: llama.cpp reuses token_embd)
        matrix("output.weight", vocab, d)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
