#!/usr/bin/python3
"""A library compiled with the default pipeline vs the same spec compiled
with a pass disabled: the same seeded random weights (archrt_init_random),
a random prompt prefilled in two calls, then decode steps; after every call
the logits of each variant must be within --tol relative L2 of the
default's. Passes rewrite the IR; they must not change what it computes.
"""
import argparse
import ctypes as C
import os
import random
import sys
import tomllib

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import archrt  # noqa: E402


def run(lib, vocab, seed, tokens, split, prompt_len, weights=None):
    if weights:  # a checkpoint: variants whose parameters differ (MLA's
        model = lib.model(weights)  # absorbed kv_b_proj) load the same
    else:
        model = lib.model()
        lib.check(lib.lib.archrt_init_random(model, C.c_uint64(seed)),
                  "init_random")
    seq = lib.seq(model)
    out = []
    steps = [(0, split), (split, prompt_len)]
    steps += [(n, n + 1) for n in range(prompt_len, len(tokens))]
    for begin, end in steps:
        if end - begin == 1 and begin >= prompt_len:
            lib.decode(seq, tokens[begin])
        else:
            lib.prefill(seq, tokens[begin:end])
        out.append(np.array(lib.logits(seq, vocab), dtype=np.float64))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lib", required=True, help="the default pipeline's")
    ap.add_argument("--spec", required=True)
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=LIB, compiled with a pass disabled")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--prompt-len", type=int, default=7)
    ap.add_argument("--split", type=int, default=5)
    ap.add_argument("--decode", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--weights", help="a checkpoint every library loads, "
                    "instead of archrt_init_random's weights (which follow "
                    "a library's own parameter table)")
    args = ap.parse_args()
    with open(args.spec, "rb") as f:
        vocab = tomllib.load(f)["model"]["vocab_size"]
    name = os.path.relpath(args.spec, os.path.join(args.spec, "..", ".."))

    rng = random.Random(args.seed)
    tokens = [rng.randrange(vocab)
              for _ in range(args.prompt_len + args.decode)]
    base = run(archrt.Lib(args.lib), vocab, args.seed, tokens,
               args.split, args.prompt_len, args.weights)
    if not all(np.linalg.norm(b) > 0 for b in base):
        print(f"{name}: FAILED: zero logits")
        return 1
    ok = True
    for v in args.variant:
        variant, path = v.split("=", 1)
        got = run(archrt.Lib(path), vocab, args.seed, tokens,
                  args.split, args.prompt_len, args.weights)
        worst = max(np.linalg.norm(g - b) / np.linalg.norm(b)
                    for g, b in zip(got, base))
        good = worst <= args.tol
        ok &= good
        print(f"{name} {variant}: worst rel L2 {worst:.2e} over "
              f"{len(base)} calls (tol {args.tol:g}): "
              f"{'ok' if good else 'FAILED'}")
    print(f"{name}: {'PASSED' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
