#!/usr/bin/env python3
"""Writes a model whose replies are known: a checkpoint (Hugging Face
layout) of a tiny Llama spec whose next token depends only on the last one,
along given chains, with a copy of a tokenizer that holds each chain's
pieces as tokens. What a server makes of a reply (tool calls, stop strings)
can then be held to the exact text the model writes.

  steer_model.py --spec SPEC --model TOKENIZER_DIR CHAINS_FILE OUT_DIR ...

Each --model writes OUT_DIR from a tokenizer and a chains file (one
process for them all: PyTorch is imported once).

FILE: a JSON object whose "chains" is a list of chains (and "special",
texts added as special tokens, as a family's tokenizer holds them), each a
list of texts: the first is the token a
prompt ends with (one the tokenizer has), the rest the reply, token by
token (the last a stop token). A text the tokenizer holds as an added token
or a vocabulary entry is that token; any other becomes an added token (not
special) after the tokenizer's last id. Tokens with a successor must be
distinct across the chains; there may be at most d_model of them.

The layers add nothing (every weight but the embedding, the head and the
norms is zero: their outputs are), so the last
position's hidden state is its token's embedding: token i of the chains
embeds as the unit vector e_i, and the head maps e_i to its successor with
a logit of 20 * sqrt(d_model) where every other logit is 0 (greedy, or
sampled at any temperature, the chain is followed).
"""
import argparse
import json
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import archref  # noqa: E402


def byte_level(text):
    """`text` in a byte-level BPE vocabulary's alphabet (GPT-2's)."""
    bs = list(range(ord("!"), ord("~") + 1)) + \
        list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, map(chr, cs)))
    return "".join(table[b] for b in text.encode("utf-8"))


def steer(spec, tokenizer, chains_file, out):
    with open(chains_file, encoding="utf-8") as f:
        spec_file = json.load(f)
    chains, special = spec_file["chains"], spec_file.get("special", [])

    with open(os.path.join(tokenizer, "tokenizer.json"),
              encoding="utf-8") as f:
        tok = json.load(f)
    vocab = tok["model"]["vocab"]
    added = {a["content"]: a["id"] for a in tok["added_tokens"]}
    last = max(list(vocab.values()) + list(added.values()))

    def token(text, new_ok):
        nonlocal last
        for key in (text, byte_level(text)):
            if key in added:
                return added[key]
            if key in vocab:
                return vocab[key]
        if not new_ok:
            sys.exit(f"steer_model: the tokenizer has no token {text!r}")
        last += 1
        tok["added_tokens"].append({
            "id": last, "content": text, "single_word": False,
            "lstrip": False, "rstrip": False, "normalized": False,
            "special": text in special})
        added[text] = last
        return last

    steps = []  # (token, its successor)
    for chain in chains:
        ids = [token(chain[0], False)] + [token(t, True) for t in chain[1:]]
        steps += list(zip(ids, ids[1:]))

    # (Every weight but the embedding, the head and the norms is zero: the
    # layers' outputs are.)
    w = {name: torch.ones(shape) if len(shape) == 1 else torch.zeros(shape)
         for name, shape in spec.param_shapes().items()}
    d = w["model.embed_tokens.weight"].shape[1]
    vocab_size = w["model.embed_tokens.weight"].shape[0]
    if len(steps) > d or last >= vocab_size:
        sys.exit(f"steer_model: {len(steps)} steps for d_model {d}, last id "
                 f"{last} for a vocabulary of {vocab_size}")
    if len({t for t, _ in steps}) != len(steps):
        sys.exit("steer_model: a token with two successors")
    scale = 20.0
    for i, (t, nxt) in enumerate(steps):
        w["model.embed_tokens.weight"][t, i] = 1.0
        w["lm_head.weight"][nxt, i] = scale
    os.makedirs(out, exist_ok=True)
    archref.write_checkpoint(out, spec, w)
    with open(os.path.join(out, "tokenizer.json"), "w",
              encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    src = os.path.join(tokenizer, "tokenizer_config.json")
    if os.path.exists(src):
        shutil.copy(src, out)
    print(f"steered: {len(steps)} steps into {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True)
    ap.add_argument("--model", nargs=3, action="append", required=True,
                    metavar=("TOKENIZER", "CHAINS", "OUT"))
    args = ap.parse_args()
    spec = archref.Spec(args.spec)
    for tokenizer, chains, out in args.model:
        steer(spec, tokenizer, chains, out)


if __name__ == "__main__":
    main()
