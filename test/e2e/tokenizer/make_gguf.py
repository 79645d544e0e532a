#!/usr/bin/env python3
"""Writes a tokenizer as llama.cpp's converter keeps it in a GGUF file's
metadata (a GGUF of version 3 with no tensors):

  make_gguf.py spm TOKENIZER.BIN OUT.gguf    tokenizer.ggml.model "llama":
      the pieces with U+2581 for the space, <0xXX> byte tokens, scores,
      token types (2 unknown, 3 control, 6 byte, 1 normal)
  make_gguf.py bpe TOKENIZER.JSON PRE OUT.gguf   tokenizer.ggml.model
      "gpt2": the tokens by id, merges as "a b", token types (3 for the
      special added tokens, 4 for the other added ones), tokenizer.ggml.pre
  make_gguf.py spm-json TOKENIZER.JSON OUT.gguf BOS EOS SPACE [TEMPLATE]
      tokenizer.ggml.model "llama" from a Hugging Face BPE tokenizer.json
      with byte fallback (as converted from a SentencePiece model): its
      pieces by id, each piece's score minus the rank of the first merge
      that makes it (-1e10 for a piece no merge makes: never merged), the
      added tokens as control (special) or user-defined (other) ones, the
      unknown token 2, byte tokens 6; BOS and EOS ids, add_space_prefix
      SPACE (0 or 1), add_bos_token true; TEMPLATE: a file whose text is
      tokenizer.chat_template
  make_gguf.py spm-phi3 OUT.gguf NAME   a small SentencePiece one with
      Phi-3's chat tokens, general.name NAME
  make_gguf.py bare OUT.gguf    metadata without a tokenizer
  make_gguf.py spm-control OUT.gguf   a small SentencePiece one whose best
      piece is a control token
  make_gguf.py spm-layout OUT.gguf BOS EOS SPACE BYTES [ADD_BOS]   a small
      SentencePiece one with those BOS and EOS ids, add_space_prefix SPACE
      (0 or 1) and its 256 byte tokens from id BYTES on (Llama 2's: 1 2 1
      3; Gemma's: 2 1 0 and later; none where BYTES is -1), and
      add_bos_token ADD_BOS where given
  make_gguf.py spm-special OUT.gguf LEN NTYPES [COUNT]   a small
      SentencePiece one with COUNT (1) user-defined tokens <xx..x> of LEN
      bytes and NTYPES token types (-1: one a token)
"""
import json
import struct
import sys

STRING, ARRAY, U32, I32, F32, BOOL = 8, 9, 4, 5, 6, 7


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value, elem=None):
    out = gstr(key) + struct.pack("<I", vtype)
    if vtype == STRING:
        return out + gstr(value)
    if vtype == ARRAY:
        out += struct.pack("<IQ", elem, len(value))
        if elem == STRING:
            return out + b"".join(gstr(v) for v in value)
        fmt = {I32: "<i", F32: "<f", U32: "<I"}[elem]
        return out + b"".join(struct.pack(fmt, v) for v in value)
    fmt = {U32: "<I", BOOL: "<?"}[vtype]
    return out + struct.pack(fmt, value)


def write(path, entries):
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)))
        f.write(b"".join(entries))


def spm(src, out):
    data = open(src, "rb").read()
    off, pieces = 4, []
    while off < len(data):
        score, n = struct.unpack_from("<fi", data, off)
        pieces.append((data[off + 8:off + 8 + n], score))
        off += 8 + n
    tokens, types = [], []
    for i, (raw, _) in enumerate(pieces):
        if i in (1, 2):
            text, kind = raw.decode().strip("\n"), 3
        elif i == 0:
            text, kind = raw.decode(), 2
        elif i < 259:
            text, kind = "<0x%02X>" % (i - 3), 6
        else:
            text, kind = raw.decode().replace(" ", "\u2581"), 1
        tokens.append(text)
        types.append(kind)
    write(out, [
        kv("general.architecture", STRING, "llama"),
        kv("tokenizer.ggml.model", STRING, "llama"),
        kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
        kv("tokenizer.ggml.scores", ARRAY, [s for _, s in pieces], F32),
        kv("tokenizer.ggml.token_type", ARRAY, types, I32),
        kv("tokenizer.ggml.bos_token_id", U32, 1),
        kv("tokenizer.ggml.add_bos_token", BOOL, True)])


def bpe(src, pre, out):
    doc = json.load(open(src, encoding="utf-8"))
    by_id = {i: t for t, i in doc["model"]["vocab"].items()}
    types = {i: 1 for i in by_id}
    for a in doc["added_tokens"]:
        by_id[a["id"]] = a["content"]
        types[a["id"]] = 3 if a["special"] else 4
    n = max(by_id) + 1
    tokens = [by_id.get(i, "[PAD%d]" % i) for i in range(n)]
    merges = [m if isinstance(m, str) else " ".join(m)
              for m in doc["model"]["merges"]]
    write(out, [
        kv("general.architecture", STRING, "llama"),
        kv("tokenizer.ggml.model", STRING, "gpt2"),
        kv("tokenizer.ggml.pre", STRING, pre),
        kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
        kv("tokenizer.ggml.token_type", ARRAY,
           [types.get(i, 5) for i in range(n)], I32),
        kv("tokenizer.ggml.merges", ARRAY, merges, STRING)])


def spm_special(out, length, n_types, count=1):
    """A small SentencePiece tokenizer with `count` user-defined tokens of
    `length` bytes, <xx...x> (the last ones numbered), and `n_types` token
    types (one a token when it is -1)."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tokens += ["\u2581", "a", "<" + "x" * (length - 2) + ">"]
    tokens += ["<" + "x" * (length - 11) + "%09d>" % i
               for i in range(1, count)]
    types = [2, 3, 3] + [6] * 256 + [1, 1] + [4] * count
    n_types = len(tokens) if n_types < 0 else n_types
    write(out, [kv("tokenizer.ggml.model", STRING, "llama"),
                kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
                kv("tokenizer.ggml.scores", ARRAY, [0.0] * len(tokens), F32),
                kv("tokenizer.ggml.token_type", ARRAY,
                   (types * 2)[:n_types], I32)])


def spm_phi3(out, name):
    """A small SentencePiece tokenizer with Phi-3's chat tokens, in a file
    whose general.name is `name` (llama.cpp's Phi-3 rule keys on it)."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tokens += ["\u2581", "a", "b", "ab", "\u2581ab", "<|endoftext|>",
               "<|user|>", "<|end|>", "<|assistant|>"]
    scores = [0.0] * 259 + [-1.0, -2.0, -2.0, -0.5, -0.1, 0.0, 0.0, 0.0, 0.0]
    types = [2, 3, 3] + [6] * 256 + [1] * 5 + [3, 4, 4, 4]
    write(out, [kv("general.name", STRING, name),
                kv("tokenizer.ggml.model", STRING, "llama"),
                kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
                kv("tokenizer.ggml.scores", ARRAY, scores, F32),
                kv("tokenizer.ggml.token_type", ARRAY, types, I32)])


def spm_json(src, out, bos, eos, space, template=None):
    write(out, [kv("general.architecture", STRING, "llama")] +
          spm_json_entries(src, bos, eos, space, template))


def spm_json_entries(src, bos, eos, space, template=None):
    """spm-json's metadata entries (check_gguf.py writes them beside a
    model's tensors)."""
    doc = json.load(open(src, encoding="utf-8"))
    model = doc["model"]
    by_id = {i: t for t, i in model["vocab"].items()}
    types = {i: 1 for i in by_id}
    for i, t in by_id.items():
        if len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            types[i] = 6
    for a in doc["added_tokens"]:
        by_id[a["id"]] = a["content"]
        types[a["id"]] = 3 if a["special"] else 4
    if model.get("unk_token") in model["vocab"]:
        types[model["vocab"][model["unk_token"]]] = 2
    n = max(by_id) + 1
    rank = {}
    for r, m in enumerate(model["merges"]):
        merged = "".join(m.split(" ", 1) if isinstance(m, str) else m)
        rank.setdefault(merged, r)
    tokens = [by_id.get(i, "[PAD%d]" % i) for i in range(n)]
    scores = [-1e10 if t not in rank else -1.0 - rank[t] for t in tokens]
    return [
        kv("tokenizer.ggml.model", STRING, "llama"),
        kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
        kv("tokenizer.ggml.scores", ARRAY, scores, F32),
        kv("tokenizer.ggml.token_type", ARRAY,
           [types.get(i, 5) for i in range(n)], I32),
        kv("tokenizer.ggml.bos_token_id", U32, bos),
        kv("tokenizer.ggml.eos_token_id", U32, eos),
        kv("tokenizer.ggml.add_bos_token", BOOL, True),
        kv("tokenizer.ggml.add_space_prefix", BOOL, bool(space))] + (
            [] if template is None else
            [kv("tokenizer.chat_template", STRING,
                open(template, encoding="utf-8", newline="").read())])


def spm_control(out):
    """A small SentencePiece tokenizer whose best piece for "ab", "\u2581ab",
    is a control token (type 3): text never makes it."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    tokens += ["\u2581", "a", "b", "ab", "\u2581ab"]
    scores = [0.0] * 259 + [-1.0, -2.0, -2.0, -0.5, -0.1]
    types = [2, 3, 3] + [6] * 256 + [1, 1, 1, 1, 3]
    write(out, [kv("tokenizer.ggml.model", STRING, "llama"),
                kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
                kv("tokenizer.ggml.scores", ARRAY, scores, F32),
                kv("tokenizer.ggml.token_type", ARRAY, types, I32)])


def spm_layout(out, bos, eos, space, bytes_at, add_bos=None):
    """Control tokens up to the byte tokens at `bytes_at` (none where it is
    negative), then pieces."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<c%d>" % i for i in
                                         range(3, max(bytes_at, 3))]
    if bytes_at >= 0:
        tokens += ["<0x%02X>" % b for b in range(256)]
    tokens += ["\u2581", "a", "b", "ab"]
    scores = [0.0] * (len(tokens) - 4) + [-1.0, -2.0, -2.0, -0.5]
    write(out, [kv("tokenizer.ggml.model", STRING, "llama"),
                kv("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
                kv("tokenizer.ggml.scores", ARRAY, scores, F32),
                kv("tokenizer.ggml.bos_token_id", U32, bos),
                kv("tokenizer.ggml.eos_token_id", U32, eos),
                kv("tokenizer.ggml.add_space_prefix", BOOL, bool(space))] +
          ([] if add_bos is None else
           [kv("tokenizer.ggml.add_bos_token", BOOL, bool(add_bos))]))


if __name__ == "__main__":
    if sys.argv[1] == "bare":  # metadata without a tokenizer
        write(sys.argv[2], [kv("general.architecture", STRING, "llama")])
    elif sys.argv[1] == "spm-control":
        spm_control(sys.argv[2])
    elif sys.argv[1] == "spm-layout":
        spm_layout(sys.argv[2], *map(int, sys.argv[3:]))
    elif sys.argv[1] == "spm-special":
        spm_special(sys.argv[2], *map(int, sys.argv[3:]))
    elif sys.argv[1] == "spm-phi3":
        spm_phi3(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "spm-json":
        spm_json(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:7]),
                 *sys.argv[7:8])
    elif sys.argv[1] == "spm":
        spm(sys.argv[2], sys.argv[3])
    else:
        bpe(sys.argv[2], sys.argv[3], sys.argv[4])
