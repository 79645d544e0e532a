#!/usr/bin/python3
"""Writes the seed corpora of the fuzz harnesses (test/fuzz/corpus/NAME),
small valid inputs the fuzzers mutate. Rerun after changing the tiny model
the runtime harnesses link (specs/tiny/llama-gqa-half-split.toml):

    /usr/bin/python3 test/fuzz/make_seeds.py build/bin/archc
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "..")
sys.path.insert(0, os.path.join(root, "test", "e2e"))
import archrt  # noqa: E402

SPEC = os.path.join(root, "specs", "tiny", "llama-gqa-half-split.toml")


def tokenizer_json_seeds():
    """tokenizer.json seeds: the hand-made one of the feature test, and a
    small byte-level one with Llama 3's split regex and NFC."""
    features = open(os.path.join(root, "test", "e2e", "Inputs", "tokenizer",
                                 "features.json"), "rb").read()
    text = "  ab   xyz <x>  a12 ".encode()
    put("tokenizer", "json-features",
        struct.pack("<HBB", 63, 0xfd, len(text)) + text + features)
    byte_chars = [chr(c) for c in range(ord("!"), ord("~") + 1)] + ["\u0120"]
    vocab = {c: i for i, c in enumerate(byte_chars)}
    for merged in ["\u0120a", "ab", "\u0120ab", "12", "123"]:
        vocab[merged] = len(vocab)
    doc = {
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex":
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                "\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False,
             "use_regex": False}]},
        "added_tokens": [{"id": len(vocab), "content": "<|end|>",
                          "special": True, "normalized": False}],
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "ignore_merges": True,
                  "merges": [["\u0120", "a"], ["a", "b"], ["\u0120a", "b"],
                             ["1", "2"], ["12", "3"]]},
    }
    raw = json.dumps(doc).encode()
    text = "Ab ab's 1234\r\n  x<|end|>\u00e9e\u0301".encode()
    put("tokenizer", "json-bytelevel",
        struct.pack("<HBB", 200, 0xfd, len(text)) + text + raw)
    # The same as a GGUF file's tokenizer ("gpt2", llama.cpp's layout).
    sys.path.insert(0, os.path.join(root, "test", "e2e", "tokenizer"))
    import make_gguf
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "t.json"), os.path.join(tmp, "t.gguf")
        with open(src, "w") as f:
            json.dump(dict(doc, added_tokens=[dict(doc["added_tokens"][0],
                                                   lstrip=False)]), f)
        make_gguf.bpe(src, "llama-bpe", out)
        gguf = open(out, "rb").read()
    put("tokenizer", "gguf-bpe",
        struct.pack("<HBB", 200, 0xfd, len(text)) + text + gguf)
    # SentencePiece ("llama") ones: Gemma's layout, and special tokens
    # split out of the text.
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.gguf")
        make_gguf.spm_layout(out, 2, 1, 0, 10)
        layout = open(out, "rb").read()
        make_gguf.spm_special(out, 12, -1, 3)
        special = open(out, "rb").read()
    text = b"ab ab\xe2\x96\x81c"
    put("tokenizer", "gguf-spm-layout",
        struct.pack("<HBB", 299, 0xfd, len(text)) + text + layout)
    text = b"a<xxxxxxxxxx>a<x000000001>"
    put("tokenizer", "gguf-spm-special",
        struct.pack("<HBB", 299, 0xfd, len(text)) + text + special)


def gguf_config_seeds():
    """GGUF headers of each family archc import-hf reads, as llama.cpp's
    converter writes them (test/e2e/check_gguf.py), with the one tensor
    the import reads the vocabulary from (16 rows) and a family's tables
    (Phi-3's LongRoPE factors)."""
    sys.path.insert(0, os.path.join(root, "test", "reference"))
    import archref
    import check_gguf
    import torch
    phi3 = open(os.path.join(root, "specs", "tiny", "phi3.toml")).read()
    longrope = phi3.replace(
        'kind = "rope"\n', 'kind = "rope"\nrotary_dim = 8\n'
        'scaling = "longrope"\noriginal_max_seq_len = 16\n'
        'short_factor = [1.0, 1.25, 1.5, 1.75]\n'
        'long_factor = [1.0, 3.0, 5.5, 9.0]\n')
    qwen3moe = open(os.path.join(root, "specs", "tiny", "qwen3.toml")).read() + (
        '\n[moe]\nn_experts = 8\ntop_k = 2\nd_ff = 32\n'
        'router = "softmax_topk"\nnormalize = true\n')
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = os.path.join(tmp, "phi3-longrope.toml")
        with open(spec_path, "w") as f:
            f.write(longrope)
        moe_path = os.path.join(tmp, "qwen3-moe.toml")
        with open(moe_path, "w") as f:
            f.write(qwen3moe)
        for spec, arch in [("llama-gqa-half-split", "llama"), (moe_path, "qwen3moe"),
                           ("mixtral", "llama"), ("qwen2", "qwen2"),
                           ("qwen3", "qwen3"), ("moe-qwen", "qwen2moe"),
                           ("gemma2", "gemma2"), ("gemma3", "gemma3"),
                           (spec_path, "phi3")]:
            path = spec if os.path.isabs(spec) else os.path.join(
                root, "specs", "tiny", spec + ".toml")
            sp = archref.Spec(path)
            out = os.path.join(tmp, "seed.gguf")
            check_gguf.write_gguf(out, sp, {"model.embed_tokens.weight":
                                            torch.zeros(16, sp.d)}, "F32",
                                  arch=arch)
            name = os.path.basename(spec).replace(".toml", "")
            put("ggufconfig", f"{arch}-{name}", open(out, "rb").read())


def chat_template_seeds():
    """The templates of test/Chat/Inputs: the published ones, and
    features.jinja, which uses each statement and most filters and tests."""
    inputs = os.path.join(root, "test", "Chat", "Inputs")
    for name in sorted(os.listdir(inputs)):
        if name.endswith(".jinja"):
            with open(os.path.join(inputs, name), "rb") as f:
                put("chattemplate", name[:-len(".jinja")], f.read())


def serve_seeds():
    """What a client sends archc serve, one of each kind (the first byte
    picks the reader: fuzz_serve.cpp)."""
    head = (b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\n"
            b"Content-Length: 12\r\nExpect: 100-continue\r\n")
    chat = (b'{"model": "m", "messages": [{"role": "user", "content": "Hi"},'
            b' {"role": "assistant", "content": null, "tool_calls": []}],'
            b' "tools": [{"type": "function"}], "chat_template_kwargs":'
            b' {"enable_thinking": false}, "max_tokens": 8, "temperature":'
            b' 0.5, "top_p": 0.9, "seed": -3, "stop": ["\\n", "x"],'
            b' "stream": true, "stream_options": {"include_usage": true},'
            b' "n": 1, "response_format": {"type": "text"}, "logprobs": true,'
            b' "top_logprobs": 3, "parallel_tool_calls": false,'
            b' "presence_penalty": 0.5, "frequency_penalty": -1,'
            b' "repetition_penalty": 1.1, "logit_bias": {"5": -3, "7": 100},'
            b' "top_k": 40, "min_p": 0.05}')
    put("serve", "head", b"\x00" + head)
    put("serve", "chat", b"\x01" + chat)
    put("serve", "completion", b"\x02" + b'{"prompt": [1, 2, 3], "echo":'
        b' false, "max_tokens": 0, "stop": "\u00e9", "logprobs": 2}')
    put("serve", "tokenize", b'\x03{"content": "a b", "add_special": true}')
    put("serve", "detokenize", b'\x04{"tokens": [1, 2, 32000]}')
    put("serve", "stops", b"\x05ab\x02\xc3\xa9c\x00x a\x01b\xc3\x01"
        b"\xa9\x01c d\x01\xe2\x82")
    # Replies with tool calls in pieces, one a format.
    ds = "<\uff5ctool\u2581%s\uff5c>"
    calls = {
        0: 'I will look.\n\n<tool\x01_call>\n{"name": "get", "arguments":'
           ' {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "t",'
           ' "arguments": "{\\"a\\": [1]}"}\n</tool_call> ok',
        1: ' <|python_tag|>{"name": "get", "parameters": {"q": "x"}}; '
           '{"name": "t", "\x01arguments": {}}',
        2: 'Sure [TOOL_\x01CALLS][{"name": "get", "arguments": {"a": 1}}]'
           '[TOOL_CALLS]get[ARGS]{"b": 2}',
        3: ("<think>x</think>\n" + ds % "calls\u2581begin" +
            ds % "call\u2581begin" + "function" + ds % "sep" +
            'get\n```json\n{"a": 1}\n```' + ds % "call\u2581end" +
            ds % "call\u2581begin" + "t" + ds % "sep" + '{"b": 2}' +
            ds % "call\u2581end" + ds % "calls\u2581end"),
    }
    # (The second byte: the format, 0x10 thoughts, 0x20 the prompt opened
    # one: fuzz_serve.cpp's reply.)
    for f, reply in calls.items():
        put("serve", "toolcalls-%d" % f, b"\x06" + bytes([f + 1 + 0x10]) +
            reply.encode())
    put("serve", "thought-opened", b"\x06\x31Let me see\x01.\n</th\x01ink>"
        b"\n\nIt is \xe2\x82\x01\xac5.")
    # (A stop string that cuts a thought after space was sent: the
    # review's case.)
    put("serve", "thought-stop", b"\x06\x10Observation:\x00<think>\x01plan"
        b"\x01\n\x01Obs\x01ervation:\x01 more")


def grammar_seeds():
    """Grammars, vocabularies and texts (fuzz_grammar.cpp: grammar, then
    after 0x00 tokens split at 0x01, then after 0x00 a text); JSON
    schemas after an 'S'."""
    vocab = b"\x01".join([b"{", b"}", b'"', b"a", b"ab", b" ", b"\n", b"1",
                          b"12", b"true", b"\xc3", b"\xa9", b"\xc3\xa9",
                          b"[", b"]", b",", b":", b"yes", b"no", b"-"])
    put("grammar", "choice", b'root ::= ("yes" | "no") "!"? # a comment\n'
        b"\x00" + vocab + b"\x00yes")
    put("grammar", "classes", b"root ::= [a-z\\x41-\\x5A]{1,3} ws\n"
        b'ws ::= [ \\t\\n]* ( "\\u00e9" | [^"] )+ .\n'
        b"\x00" + vocab + b"\x00ab \xc3\xa9x")
    put("grammar", "nested", b'root ::= "[" ( item ( "," item )* )? "]"\n'
        b'item ::= [0-9]+ | root\n\x00' + vocab + b"\x00[1,[12],[]]")
    put("grammar", "schema", b'S{"type": "object", "properties": {"a": '
        b'{"type": "string", "maxLength": 3}, "b": {"type": "array", '
        b'"items": {"enum": [1, "x", null]}, "minItems": 1, "maxItems": 2},'
        b' "c": {"$ref": "#/$defs/c"}}, "required": ["b"], "$defs": {"c":'
        b' {"anyOf": [{"type": ["integer", "null"]}, {"const": true}]}},'
        b' "additionalProperties": {"type": "boolean"}}\x00' + vocab +
        b'\x00{"b": [1], "a": "ab"}')
    put("grammar", "json-object", b"S{}\x00" + vocab + b'\x00{"a": 12}')
    put("grammar", "pattern", b'P^(?:[a-c\\d]+|"\\u00e9.)*x{2,3}[^\\]-]$\x00'
        + vocab + b'\x00"ab1\\"xx-"')
    put("grammar", "pattern-bounds", b'S{"type": "object", "properties": '
        b'{"p": {"type": "string", "pattern": "^[a-c]+(x|\\\\d{2})?$|-"},'
        b' "n": {"type": "integer", "minimum": -5, "exclusiveMaximum": 120}'
        b'}}\x00' + vocab + b'\x00{"p": "ab12", "n": -3}')
    put("grammar", "number-bounds", b'S{"type": "array", "items": {"type": '
        b'"number", "exclusiveMinimum": -2, "maximum": 10.25}}\x00' + vocab +
        b'\x00[-1.5, 0, 10.2, 9.25]')
    put("grammar", "enum-keep", b'S{"type": "array", "items": {"enum": '
        b'[1, 2.5e0, "ab", "b", [1], null], "type": ["number", "string"], '
        b'"minimum": 2, "pattern": "^a", "maxLength": 2}}\x00' + vocab +
        b'\x00[2.5e0, "ab"]')
    put("grammar", "tools", b'T[{"type": "function", "function": {"name": "a",'
        b' "parameters": {"type": "object", "properties": {"x": {"enum": '
        b'[1, "\\u00e9"]}}, "required": ["x"]}}}, {"type": "function", '
        b'"function": {"name": "b c"}}]')


def put(harness, name, data):
    d = os.path.join(here, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def safetensors(tensors):
    header, blobs, off = {}, b"", 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs += raw
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + blobs


def main():
    archc = sys.argv[1]
    tmp = tempfile.mkdtemp()
    lib_path = os.path.join(tmp, "tiny.so")
    subprocess.check_call([archc, "compile", SPEC, "-o", lib_path, "--quiet"])
    lib = archrt.Lib(lib_path)
    model = lib.model()
    params = []
    i = 0
    while True:
        info = archrt.ParamInfo()
        if lib.lib.archrt_param_info_get(model, i, info) != 0:
            break
        params.append((info.source.decode(), list(info.shape[: info.ndim])))
        i += 1

    for name in ["llama-gqa-half-split", "gemma2", "falcon", "t5-bias", "command",
                 "linear-hybrid", "rope-longrope"]:
        shutil.copy(os.path.join(root, "specs", "tiny", name + ".toml"),
                    os.path.join(here, "corpus", "spec", name))

    norm = next(p for p in params if len(p[1]) == 1)
    one = {norm[0]: ("F32", norm[1], bytes(4 * norm[1][0]))}
    put("safetensors", "norm-f32", b"\0" + safetensors(one))
    put("safetensors", "norm-bf16-sniffed", b"\1" + safetensors(
        {norm[0]: ("BF16", norm[1], bytes(2 * norm[1][0]))}))
    text = json.dumps({"__metadata__": {"format": "pt", "a": [1, {"b": "\\u00e9"}]},
                       norm[0]: {"dtype": "F32", "shape": norm[1],
                                 "data_offsets": [0, 4 * norm[1][0]]}}).encode()
    put("safetensors", "metadata", b"\0" + struct.pack("<Q", len(text)) + text +
        bytes(4 * norm[1][0]))

    weight_map = {name: ("a.safetensors" if k % 2 == 0 else "b.safetensors")
                  for k, (name, _) in enumerate(params)}
    put("index", "valid", json.dumps({"metadata": {"total_size": 1},
                                      "weight_map": weight_map}).encode())
    put("index", "one-shard", json.dumps(
        {"weight_map": {params[0][0]: "a.safetensors"}}).encode())

    # dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len
    put("llama2c", "header", struct.pack("<7i", 64, 192, 2, 4, 2, 400, 64) + bytes(64))
    put("llama2c", "header-separate", struct.pack("<7i", 64, 192, 2, 4, 2, -400, 64))

    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(8)]
    pieces += [" ", "a", "b", "ab", " ab"]
    tok = struct.pack("<i", 8)
    for k, piece in enumerate(pieces):
        raw = piece.encode()
        tok += struct.pack("<fi", float(k % 3), len(raw)) + raw
    vocab = len(pieces) - 1  # the harness adds 1
    text = b"ab abba"
    put("tokenizer", "small", struct.pack("<HBB", vocab, 0xff, len(text)) + text + tok)
    tokenizer_json_seeds()
    gguf_config_seeds()
    chat_template_seeds()
    serve_seeds()
    grammar_seeds()

    put("abi", "prefill-sample", bytes([0x00, 0x02, 7, 0x03, 16, 0x05, 4, 1, 2, 3, 4,
                                        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a, 50,
                                        16, 32, 9, 0x0b, 0x06, 5, 0, 0x0b]))
    put("abi", "free-model-first", bytes([0x00, 0x02, 1, 0x03, 0, 0x01, 0x05, 2, 3, 4,
                                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0x04]))
    lib.lib.archrt_model_free(model)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
