#!/usr/bin/python3
"""The Python package (python/archc, imported from PYTHONPATH: the build
tree's copy) on the real stories15M: greedy and seeded sampled generation
equal `archc run`'s text (files given), the raw prefill/decode logits
equal the C host's (test/e2e/archrt.py), the stream keeps multi-byte
characters whole, and each misuse raises archc.Error with the runtime's
message."""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

import archc

sys.path.insert(0, os.path.dirname(__file__))
import archrt  # noqa: E402


def byte_level_tokenizer():
    """A byte-level tokenizer.json without merges: a token per byte."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172
                 or 174 <= b <= 255]
    chars, extra = {}, 256
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(extra)
            extra += 1
    return {"model": {"type": "BPE", "merges": [],
                      "vocab": {chars[b]: b for b in range(256)}},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "use_regex": False},
            "decoder": {"type": "ByteLevel"}}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--greedy", required=True,
                    help="archc run's output, -n 24, greedy")
    ap.add_argument("--sampled", required=True, help="archc run's output, "
                    "-n 32 --temperature 0.9 --top-p 0.9 --seed 5")
    ap.add_argument("--tokenizer-json", help="stories15M's tokenizer as a "
                    "tokenizer.json (bin_to_json.py)")
    args = ap.parse_args()
    case = archrt.Cases()
    weights = os.path.join(args.models, "stories15M.bin")
    tokenizer = os.path.join(args.models, "tokenizer.bin")
    prompt = "Once upon a time"
    print("package:", os.path.dirname(archc.__file__))

    model = archc.load(args.lib, weights=weights, tokenizer=tokenizer,
                       threads=2)
    case("model info", model.info["name"] == "stories15M" and
         model.vocab_size == 32000 and model.info["n_layers"] == 6,
         str(model.info))
    case("parameter table", len(model.params()) == model.info["n_tensors"]
         and model.params()[0][0] == "model.embed_tokens.weight",
         str(model.params()[:2]))
    for name, path, kw in (("greedy", args.greedy, dict(n=24)),
                           ("sampled", args.sampled,
                            dict(n=32, temperature=0.9, top_p=0.9, seed=5))):
        pieces = list(model.generate(prompt, **kw))
        with open(path, encoding="utf-8") as f:
            want = f.read()
        got = prompt + "".join(pieces) + "\n"
        case(f"{name} text equals archc run's", got == want,
             f"got {got!r}, archc run {want!r}")
        case(f"{name}: a stream of pieces", len(pieces) > 5, str(pieces))

    # Raw calls: the same logits as a C host's calls of the same library.
    ids = model.tokenizer.encode(prompt)
    seq = model.sequence()
    first = seq.prefill(ids)
    second = seq.decode(int(np.argmax(first)))
    host = archrt.Lib(args.lib)
    m = host.model(weights)
    s = host.seq(m)
    host.prefill(s, ids)
    want1 = np.array(host.logits(s, 32000), dtype=np.float32)
    host.decode(s, int(np.argmax(want1)))
    want2 = np.array(host.logits(s, 32000), dtype=np.float32)
    case("prefill logits as the C host's", first.dtype == np.float32 and
         first.shape == (32000,) and np.array_equal(first, want1))
    case("decode logits as the C host's", np.array_equal(second, want2))
    case("sequence length", len(seq) == len(ids) + 1, str(len(seq)))
    seq.truncate(len(ids) - 1)
    again = seq.prefill(ids[-1:])
    case("truncate, then the last prompt token again", len(seq) == len(ids)
         and np.allclose(again, first, rtol=1e-5, atol=1e-4),
         f"max difference {np.abs(again - first).max()}")
    try:
        seq.truncate(len(ids) + 1)
        case("truncate past the length is refused", False)
    except archc.Error as e:
        case("truncate past the length is refused",
             "n_tokens must be in [0, " in str(e), str(e))
    seq.reset()
    case("reset", len(seq) == 0 and np.array_equal(seq.prefill(ids), first))
    # The kernel profile: nothing counted until on, then each site once a
    # decode, with its kernel and label; a linear's a row and its work.
    off = seq.profile()
    seq.set_profiling()
    seq.decode(1)
    seq.set_profiling(False)
    on = seq.profile()
    case("profile", off and all(p["calls"] == 0 for p in off) and
         all(p["calls"] == 1 and p["seconds"] >= 0 and
             p["kernel"].startswith("archk_") and p["op"] for p in on),
         str(on[:2]))
    # (stories15M's matmuls: 6 layers of q, k, v, o 288 x 288 and gate,
    # up, down 288 x 768, and the tied classifier 288 x 32000: 15,187,968
    # weights, two FLOPs each a token; each read as 4 bytes or more.)
    linear = [p for p in on if p["op"].split()[0] == "linear"]
    counted = ("linear", "attention")
    case("profile: a linear's row, FLOPs and weight bytes",
         linear and all(p["rows"] == 1 and p["bytes"] >= 2 * p["flops"] > 0
                        for p in linear) and
         sum(p["flops"] for p in linear) == 2 * 15187968 and
         all(p["rows"] == p["flops"] == p["bytes"] == 0
             for p in on if p["op"].split()[0] not in counted),
         f"{sum(p['flops'] for p in linear)} FLOPs; {linear[:2]}")
    greedy_ids = list(model.generate_ids(ids, 3))
    case("generate_ids greedy", greedy_ids[0] == int(np.argmax(first)),
         str(greedy_ids))

    # A character split across byte tokens comes whole.
    text, rest = archc._complete_utf8("né".encode()[:2])
    case("split character held back", text == "n" and rest == b"\xc3",
         f"{text!r} {rest!r}")
    text, rest = archc._complete_utf8(rest + b"\xa9!")
    case("split character completed", text == "é!" and rest == b"",
         f"{text!r} {rest!r}")

    # Misuse: errors with the runtime's message and status.
    def raises(name, fn, *fragments):
        try:
            fn()
        except archc.Error as e:
            msg = str(e)
            case(name, all(f in msg for f in fragments),
                 f"message {msg!r}, wanted {fragments}")
            return
        case(name, False, "no archc.Error")
    raises("no such library", lambda: archc.Library("/nonexistent/x.so"),
           "/nonexistent/x.so", "I/O error")
    raises("not a model library",
           lambda: archc.Library("/usr/lib/x86_64-linux-gnu/libm.so.6"),
           "not an archc model library")
    raises("bad weights file", lambda: archc.load(args.lib, weights=tokenizer),
           "load_weights", "tokenizer.bin")
    raises("token outside the vocabulary", lambda: seq.decode(32000),
           "outside the vocabulary", "invalid argument")
    raises("empty prompt", lambda: seq.prefill([]), "non-empty")
    raises("NUL in the text", lambda: model.tokenizer.encode("a\0b"),
           "NUL byte")
    if args.tokenizer_json:
        # The same model with stories15M's tokenizer as a tokenizer.json:
        # the same greedy text.
        other = archc.load(args.lib, weights=weights,
                           tokenizer=args.tokenizer_json, threads=2)
        with open(args.greedy, encoding="utf-8") as f:
            want = f.read()
        got = prompt + "".join(other.generate(prompt, 24)) + "\n"
        case("tokenizer.json: greedy text equals archc run's", got == want,
             f"got {got!r}")
        # A text that needs more tokens than bytes (each invalid byte is a
        # U+FFFD, three byte tokens in a byte-level vocabulary): the
        # runtime reports the count and the package asks again.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tokenizer.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(byte_level_tokenizer(), f)
            tok = archc.Tokenizer(model.lib, path, model.vocab_size)
            ids = tok.encode(b"\xff" * 40, bos=False)
            case("encode asks again with the count it needs",
                 len(ids) == 120, str(len(ids)))
            raises("too little room", lambda: tok.encode(b"\xff" * 40,
                                                         max_tokens=50),
                   "needs 120 tokens, room for 50")
            case("no stop token in a vocabulary without special ones",
                 not any(tok.is_stop(t) for t in range(256)), "")
            tok.close()
        # Where generation ends: the tokenizer's special tokens, not ids
        # 1 and 2 (Llama 3's '"' and '#').
        case("tokenizer.json stops at </s> and <s>",
             other.tokenizer.is_stop(2) and other.tokenizer.is_stop(1) and
             not other.tokenizer.is_stop(29871), "")
        llama3 = os.path.join(args.models, "tokenizers", "llama3",
                              "tokenizer.json")
        tok = archc.Tokenizer(model.lib, llama3, 128256)
        case("Llama 3 stops at <|end_of_text|> and <|eot_id|>, not at 1, 2",
             tok.is_stop(128001) and tok.is_stop(128009) and
             not tok.is_stop(1) and not tok.is_stop(2), "")
        tok.close()
    case("tokenizer.bin stops at ids 1 and 2",
         model.tokenizer.is_stop(1) and model.tokenizer.is_stop(2) and
         not model.tokenizer.is_stop(3), "")
    raises("bad sampling", lambda: list(model.generate(prompt, 4,
                                                       temperature=-1.0)),
           "sampler_create", "invalid argument")
    raises("logits before prefill", lambda: model.sequence().logits(),
           "prefill first")
    bare = archc.load(args.lib, random_seed=3)
    raises("generate without a tokenizer",
           lambda: list(bare.generate(prompt, 4)), "no tokenizer")
    return case.summary()


if __name__ == "__main__":
    sys.exit(main())
