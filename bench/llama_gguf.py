"""A GGUF file of random weights for a Llama-shaped archc spec, for
bench/llama-cpp.sh to run llama.cpp's llama-bench on the same shapes as
`archc bench --random-weights`.

  llama_gguf.py SPEC OUT.gguf f32|bf16|f16 GGUF_PY_DIR

The spec must be what llama.cpp's "llama" architecture computes: RMSNorm
before attention and FFN, RoPE, a SiLU-gated FFN, no biases, untied
embeddings (anything else is refused, naming the field). Weights are
normal(0, 0.02) from a fixed seed (their values do not change the time of
a dense model); the norms' are ones, in f32 as llama.cpp's converter keeps
them. The vocabulary is a placeholder of the spec's size (three control
tokens, 256 byte tokens, then "t<i>"): llama-bench feeds token ids, never
text.
"""

import sys
import tomllib

import numpy as np


def refuse(spec_path: str, what: str) -> None:
    sys.exit(f"llama_gguf.py: {spec_path}: {what}; llama.cpp's 'llama' "
             "architecture would compute another model")


def main() -> None:
    if len(sys.argv) != 5 or sys.argv[3] not in ("f32", "bf16", "f16"):
        sys.exit("usage: llama_gguf.py SPEC OUT.gguf f32|bf16|f16 GGUF_PY_DIR")
    spec_path, out_path, wtype, gguf_dir = sys.argv[1:]
    sys.path.insert(0, gguf_dir)
    import gguf  # llama.cpp's own writer, from the source bench/llama-cpp.sh unpacks

    with open(spec_path, "rb") as f:
        spec = tomllib.load(f)
    # What the "llama" architecture computes, field by field: anything
    # else (another key, table or value) is refused.
    allowed = {
        "model": {"name", "vocab_size", "d_model", "n_layers", "max_seq_len",
                  "tie_embeddings"},
        "norm": {"kind", "eps", "placement", "final"},
        "attention": {"n_heads", "n_kv_heads", "head_dim", "position"},
        "attention.position": {"kind", "theta", "style"},
        "ffn": {"kind", "activation", "d_ff"},
    }
    values = {("model", "tie_embeddings"): [False], ("norm", "kind"): ["rmsnorm"],
              ("norm", "placement"): ["pre"], ("norm", "final"): [True],
              ("attention.position", "kind"): ["rope"],
              ("ffn", "kind"): ["glu"], ("ffn", "activation"): ["silu"]}
    for table in spec:
        if table not in allowed:
            refuse(spec_path, f"[{table}] is set")
    tables = dict(spec, **{"attention.position": spec.get("attention", {}).get("position", {})})
    for table, keys in allowed.items():
        for key, value in tables.get(table, {}).items():
            if key not in keys:
                refuse(spec_path, f"[{table}] {key} is set")
            if (table, key) in values and value not in values[(table, key)]:
                refuse(spec_path, f"[{table}] {key} = {value!r}")
    model, attn, ffn = spec["model"], spec["attention"], spec["ffn"]
    norm, pos = spec.get("norm", {}), tables["attention.position"]
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
    matrix("output.weight", vocab, d)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
