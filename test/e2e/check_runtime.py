#!/usr/bin/python3
"""The archrt C ABI on bad input: every failure is a status with a message
that names the problem, never a crash. Also checks weight conversion
(F16/BF16 safetensors), sampling and the tokenizer on small made-up data.

Each case prints "ok NAME" or "FAIL NAME: why"; exit status 1 on failure.
"""
import ctypes as C
import json
import os
import struct
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
import archrt  # noqa: E402

case = archrt.Cases()


def write_raw_safetensors(path, header, data=b""):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    args = archrt.script_args(__doc__)
    spec = archref.Spec(args.spec)
    lib = archrt.Lib(args.lib)
    L = lib.lib
    tmp = tempfile.mkdtemp()
    p = lambda name: os.path.join(tmp, name)  # noqa: E731

    model = lib.model()
    weights = archref.random_weights(spec, 3)
    first = sorted(weights)[0]

    # --- weights files -----------------------------------------------------
    case.error(lib, "missing file", L.archrt_load_weights(model, p("nope").encode()),
                 "nope", "cannot open")
    open(p("empty"), "wb").close()
    case.error(lib, "empty file", L.archrt_load_safetensors(model, p("empty").encode()),
                 "empty")
    with open(p("junk.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{}")
    case.error(lib, "header length beyond file",
                 L.archrt_load_safetensors(model, p("junk.safetensors").encode()),
                 "header length")
    with open(p("badjson.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 6) + b'{"a":[')
    case.error(lib, "malformed JSON header",
                 L.archrt_load_safetensors(model, p("badjson.safetensors").encode()),
                 "safetensors header")

    w = dict(weights)
    del w[first]
    archref.write_safetensors(p("missing.safetensors"), w)
    case.error(lib, "missing tensor",
                 L.archrt_load_weights(model, p("missing.safetensors").encode()),
                 f"missing tensor '{first}'")
    w = dict(weights)
    w[first] = w[first].reshape(-1)[: w[first].numel() - 1].clone()
    archref.write_safetensors(p("shape.safetensors"), w)
    case.error(lib, "wrong shape",
                 L.archrt_load_weights(model, p("shape.safetensors").encode()),
                 f"tensor '{first}' has shape", "the model expects")
    w = dict(weights)
    w["extra.weight"] = torch.zeros(2)
    archref.write_safetensors(p("extra.safetensors"), w)
    case.error(lib, "unexpected tensor",
                 L.archrt_load_weights(model, p("extra.safetensors").encode()),
                 "unexpected tensor 'extra.weight'")
    write_raw_safetensors(p("dtype.safetensors"),
                          {first: {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}},
                          bytes(8))
    case.error(lib, "unsupported dtype",
                 L.archrt_load_weights(model, p("dtype.safetensors").encode()),
                 "dtype I64")
    write_raw_safetensors(p("offsets.safetensors"),
                          {first: {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
                          bytes(8))
    case.error(lib, "data offsets beyond file",
                 L.archrt_load_weights(model, p("offsets.safetensors").encode()),
                 "data_offsets")
    write_raw_safetensors(p("huge.safetensors"),
                          {first: {"dtype": "F32", "shape": [1 << 40, 1 << 40, 1 << 40],
                                   "data_offsets": [0, 8]}}, bytes(8))
    case.error(lib, "shape whose size overflows",
                 L.archrt_load_weights(model, p("huge.safetensors").encode()),
                 "data_offsets")

    # A checkpoint directory whose path leaves no room for the index's
    # name in a path: refused, not cut short into the shard's name.
    deep = tmp
    while len(deep) < 4080:
        deep = os.path.join(deep, "d" * min(200, 4080 - len(deep)))
    os.makedirs(deep)
    case.error(lib, "directory path too long",
                 L.archrt_load_weights(model, deep.encode()),
                 "checkpoint directory path too long (408")

    # llama2.c: wrong dimensions in the header, and a truncated file.
    def llama2c(hdr):
        """A llama2.c file of header `hdr` and 64 bytes of weights."""
        with open(p("ckpt.bin"), "wb") as f:
            f.write(struct.pack("<7i", *hdr) + bytes(64))
        return p("ckpt.bin").encode()

    hdr = [spec.d, spec.d_ff, spec.layers, spec.heads, spec.kv_heads,
           spec.vocab, spec.max_seq]
    case.error(lib, "llama2.c header mismatch",
                 L.archrt_load_llama2c(model, llama2c([spec.d + 1] + hdr[1:])),
                 f"header dim is {spec.d + 1}, the model has {spec.d}")
    case.error(lib, "llama2.c truncated",
                 L.archrt_load_llama2c(model, llama2c(hdr)),
                 "file has", "bytes")
    # 123 layers: byte 8 is '{', as a safetensors file's; still llama2.c
    # (its first 8 bytes as a header length run past the file's end).
    case.error(lib, "llama2.c of 123 layers, byte 8 '{'",
                 L.archrt_load_weights(model,
                                       llama2c(hdr[:2] + [123] + hdr[3:])),
                 f"header n_layers is 123, the model has {spec.layers}")

    # --- state and arguments ------------------------------------------------
    seq = lib.seq(model)
    one = (C.c_int32 * 1)(1)
    case.error(lib, "prefill before weights", L.archrt_prefill(seq, one, 1),
                 "no weights loaded")
    L.archrt_seq_free(seq)
    archref.write_safetensors(p("good.safetensors"), weights)
    lib.check(L.archrt_load_weights(model, p("good.safetensors").encode()), "load")
    s = C.c_void_p()
    case.error(lib, "seq longer than max_seq_len",
                 L.archrt_seq_create(model, spec.max_seq + 1, C.byref(s)),
                 "max_tokens")
    seq = lib.seq(model, 8)
    bad = (C.c_int32 * 2)(1, spec.vocab)
    case.error(lib, "token outside vocabulary", L.archrt_prefill(seq, bad, 2),
                 f"token {spec.vocab} at index 1")
    case.error(lib, "zero tokens", L.archrt_prefill(seq, one, 0), "positive")
    case.error(lib, "NULL tokens", L.archrt_prefill(seq, None, 1), "NULL")
    nine = (C.c_int32 * 9)(*range(9))
    case.error(lib, "prompt beyond capacity", L.archrt_prefill(seq, nine, 9),
                 "do not fit")
    case("no logits before a call", not L.archrt_logits(seq))
    case.error(lib, "NULL model", L.archrt_model_create(None), "NULL")
    lib.prefill(seq, list(range(8)))
    case.error(lib, "decode into a full sequence", L.archrt_decode(seq, 1),
                 "do not fit")
    L.archrt_seq_free(seq)

    # --- F16 and BF16 weights are converted at load ---------------------------
    tokens = [5, 1, 7, 3, 2]
    for dtype, torch_dtype in [("F16", torch.float16), ("BF16", torch.bfloat16)]:
        rounded = {k: v.to(torch_dtype).float() for k, v in weights.items()}
        header, blobs, off = {}, b"", 0
        for k in sorted(weights):
            raw = weights[k].to(torch_dtype).view(torch.int16).numpy().astype("<i2").tobytes()
            header[k] = {"dtype": dtype, "shape": list(weights[k].shape),
                         "data_offsets": [off, off + len(raw)]}
            off += len(raw)
            blobs += raw
        write_raw_safetensors(p("half.safetensors"), header, blobs)
        m2 = lib.model(p("half.safetensors"))
        sq = lib.seq(m2)
        lib.prefill(sq, tokens)
        got = np.array(lib.logits(sq, spec.vocab))
        want = archref.forward(spec, rounded, tokens).numpy()[-1]
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        case(f"{dtype} weights converted (rel err {err:.1e})", err <= 1e-4)
        L.archrt_seq_free(sq)
        L.archrt_model_free(m2)

    # --- sampling -------------------------------------------------------------
    V = 50
    logits = (C.c_float * V)(*[float((i * 37) % 11) for i in range(V)])
    smp = C.c_void_p()
    case.error(lib, "negative temperature",
                 L.archrt_sampler_create(V, -1.0, 1.0, 1, C.byref(smp)),
                 "temperature")
    case.error(lib, "top_p out of range",
                 L.archrt_sampler_create(V, 1.0, 1.5, 1, C.byref(smp)), "top_p")
    lib.check(L.archrt_sampler_create(V, 0.0, 1.0, 1, C.byref(smp)), "sampler")
    tok = C.c_int32()
    L.archrt_sample(smp, logits, C.byref(tok))
    case("greedy picks the argmax", tok.value == max(range(V), key=lambda i: logits[i]))
    L.archrt_sampler_free(smp)

    def draws(seed, top_p, n=200):
        s = C.c_void_p()
        lib.check(L.archrt_sampler_create(V, 1.0, top_p, seed, C.byref(s)), "sampler")
        out = []
        for _ in range(n):
            L.archrt_sample(s, logits, C.byref(tok))
            out.append(tok.value)
        L.archrt_sampler_free(s)
        return out

    case("same seed, same draws", draws(9, 1.0) == draws(9, 1.0))
    case("other seed, other draws", draws(9, 1.0) != draws(10, 1.0))
    top = {i for i in range(V) if logits[i] == 10.0}
    case("top-p 0.3 keeps only the most likely tokens", set(draws(4, 0.3)) <= top)
    case("temperature 1 reaches beyond the top", not set(draws(4, 1.0)) <= top)

    # --- tokenizer ------------------------------------------------------------
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    pieces += [" ", "a", "b", "ab", " ab", "\u00e9"]
    scores = [0.0] * len(pieces)
    scores[pieces.index("ab")] = 1.0
    scores[pieces.index(" ab")] = 2.0
    with open(p("tok.bin"), "wb") as f:
        f.write(struct.pack("<i", 8))
        for piece, score in zip(pieces, scores):
            b = piece.encode()
            f.write(struct.pack("<fi", score, len(b)) + b)
    tk = C.c_void_p()
    case.error(lib, "tokenizer vocab mismatch",
                 L.archrt_tokenizer_load(p("tok.bin").encode(), len(pieces) + 1,
                                         C.byref(tk)), "truncated")
    case.error(lib, "tokenizer missing file",
                 L.archrt_tokenizer_load(p("none.bin").encode(), 10, C.byref(tk)),
                 "cannot open")
    lib.check(L.archrt_tokenizer_load(p("tok.bin").encode(), len(pieces),
                                      C.byref(tk)), "tokenizer")
    out = (C.c_int32 * 16)()
    n = C.c_int32()
    lib.check(L.archrt_tokenizer_encode(tk, "ab\u00e9z".encode(), 1, 1, out, 16,
                                        C.byref(n)), "encode")
    got = list(out[: n.value])
    want = [1, pieces.index(" ab"), pieces.index("\u00e9"), ord("z") + 3, 2]
    case("BPE merges by score, byte fallback", got == want, f"{got} != {want}")
    case.error(lib, "encode into too small a buffer",
                 L.archrt_tokenizer_encode(tk, b"abab", 1, 0, out, 1, C.byref(n)),
                 "room for 1")
    dec = L.archrt_tokenizer_decode(tk, 1, pieces.index(" ab"))
    case("decode strips the space after BOS", dec == b"ab", repr(dec))
    dec = L.archrt_tokenizer_decode(tk, 5, ord("z") + 3)
    case("decode turns byte tokens into bytes", dec == b"z", repr(dec))
    L.archrt_tokenizer_free(tk)
    L.archrt_model_free(model)

    return case.summary()


if __name__ == "__main__":
    sys.exit(main())
