#!/usr/bin/python3
"""The real stories15M checkpoint: 64 greedy tokens from BOS, produced by the
compiled library, must equal the PyTorch reference's greedy tokens from the
same checkpoint (the reference's argmax after each of the library's
prefixes), and the decoded text must begin "Once upon a time"."""
import argparse
import ctypes as C
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
import archrt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--models", required=True, help="directory with "
                    "stories15M.bin and tokenizer.bin")
    ap.add_argument("-n", type=int, default=64)
    args = ap.parse_args()
    ckpt = os.path.join(args.models, "stories15M.bin")
    tok_path = os.path.join(args.models, "tokenizer.bin")

    spec = archref.Spec(args.spec)
    lib = archrt.Lib(args.lib)
    model = lib.model(ckpt)
    seq = lib.seq(model)
    got, token = [], 1
    lib.prefill(seq, [token])
    for i in range(args.n):
        logits = lib.logits(seq, spec.vocab)
        token = max(range(spec.vocab), key=logits.__getitem__)
        got.append(token)
        if i + 1 < args.n:
            lib.decode(seq, token)

    # The reference's next token after each of the library's prefixes, in
    # one causal forward over them (row i sees tokens 0..i only): the
    # library's greedy tokens are the reference's greedy tokens exactly
    # when each row's argmax is the library's next token, and up to the
    # first difference the two lists are the same. (A forward per token,
    # archref.greedy, took 41 s of float64 classifier rows.)
    rows = archref.forward(spec, archref.load_llama2c(spec, ckpt),
                           [1] + got[:-1])
    want = [int(r.argmax()) for r in rows]

    tok = C.c_void_p()
    lib.check(lib.lib.archrt_tokenizer_load(tok_path.encode(), spec.vocab,
                                            C.byref(tok)), "tokenizer_load")
    text, prev = b"", 1
    for t in got:
        text += lib.lib.archrt_tokenizer_decode(tok, prev, t)
        prev = t
    text = text.decode("utf-8", "replace")
    lib.lib.archrt_tokenizer_free(tok)
    lib.lib.archrt_seq_free(seq)
    lib.lib.archrt_model_free(model)

    print("library:  ", ",".join(map(str, got)))
    print("reference:", ",".join(map(str, want)), "(after each library prefix)")
    print("text:", repr(text))
    same = sum(a == b for a, b in zip(got, want))
    print(f"{same}/{args.n} greedy tokens equal the reference")
    if got != want:
        first = next(i for i, (a, b) in enumerate(zip(got, want)) if a != b)
        print(f"FAILED: first difference at token {first}")
        return 1
    if not text.startswith("Once upon a time"):
        print("FAILED: text does not begin with 'Once upon a time'")
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
