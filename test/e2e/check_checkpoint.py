#!/usr/bin/python3
"""Loading a family's Hugging Face checkpoint into a compiled library:
fused and transposed tensors, sharded files with an index, names without
the base-model prefix, buffers to skip, half precision, and every error of
an index or of a fused tensor. Prints one line per case and a summary."""
import ctypes as C
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
import archrt  # noqa: E402

case = archrt.Cases()


def main():
    args = archrt.script_args(__doc__)
    spec = archref.Spec(args.spec)
    lib = archrt.Lib(args.lib)
    L = lib.lib
    tmp = tempfile.mkdtemp()
    weights = archref.random_weights(spec, 5)
    tokens = [3, 1, 4, 1, 5, 9, 2]

    def directory(name):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        return d

    def run(model):
        seq = lib.seq(model)
        lib.prefill(seq, tokens)
        out = np.array(lib.logits(seq, spec.vocab))
        L.archrt_seq_free(seq)
        return out

    def load(path):
        """Logits after loading `path` into a fresh model, or the error."""
        model = lib.model()
        st = L.archrt_load_weights(model, path.encode())
        out = run(model) if st == 0 else L.archrt_last_error().decode()
        L.archrt_model_free(model)
        return out

    def expect_error(name, path, *fragments):
        got = load(path)
        ok = isinstance(got, str) and all(f in got for f in fragments)
        case(name, ok, f"got {got!r}, wanted {fragments}")

    # --- the parameter table names the checkpoint's tensors ----------------
    model = lib.model()
    info, sources = archrt.ParamInfo(), {}
    i = 0
    while L.archrt_param_info_get(model, i, C.byref(info)) == 0:
        sources[info.name.decode()] = info.source.decode()
        i += 1
    L.archrt_model_free(model)
    fused = sorted((s, n) for n, s in sources.items() if s != n)
    case(f"param table: {len(fused)} of {len(sources)} parameters come "
         f"from other tensors (e.g. {fused[0][1]} <- {fused[0][0]})",
         len(fused) > 0)
    shared = {s for s, _ in fused if sum(t == s for t, _ in fused) > 1}
    print(f"  {len(shared)} checkpoint tensors hold several parameters")

    # --- good checkpoints ----------------------------------------------------
    ref = archref.forward(spec, weights, tokens).numpy()[-1]
    one = archref.write_checkpoint(directory("one"), spec, weights)
    base = load(one)
    err = np.linalg.norm(base - ref) / np.linalg.norm(ref)
    case(f"one file vs reference (rel err {err:.1e})", err <= 1e-4)
    sharded = archref.write_checkpoint(directory("sharded"), spec, weights, 3)
    case("3 shards: same logits", np.array_equal(load(sharded), base))
    index = os.path.join(sharded, "model.safetensors.index.json")
    case("index path: same logits", np.array_equal(load(index), base))
    single = os.path.join(one, "model.safetensors")
    case("file path: same logits", np.array_equal(load(single), base))
    bare = archref.write_checkpoint(directory("bare"), spec, weights,
                                    strip_prefix=True)
    case("names without the base-model prefix: same logits",
         np.array_equal(load(bare), base))
    extra = archref.hf_checkpoint(spec, weights)
    extra["transformer.h.0.attn.masked_bias"] = torch.tensor([-1e4])
    extra["gpt_neox.layers.0.attention.bias"] = torch.ones(1, 1, 4, 4)
    extra["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(4)
    if spec.tied:
        extra["lm_head.weight"] = weights["model.embed_tokens.weight"]
    d = directory("buffers")
    archref.write_safetensors(os.path.join(d, "model.safetensors"), extra)
    case("mask and rotary buffers (and a tied lm_head) skipped",
         np.array_equal(load(d), base))
    for dtype, half in [("F16", torch.float16), ("BF16", torch.bfloat16)]:
        rounded = {k: v.to(half).float() for k, v in weights.items()}
        path = archref.write_checkpoint(directory(dtype), spec, rounded, 2,
                                        dtype=dtype)
        want = archref.forward(spec, rounded, tokens).numpy()[-1]
        got = load(path)
        err = np.linalg.norm(got - want) / np.linalg.norm(want) \
            if not isinstance(got, str) else float("inf")
        case(f"{dtype} shards converted while split/transposed "
             f"(rel err {err:.1e})", err <= 1e-4, str(got)[:200])

    # --- errors of fused tensors ----------------------------------------------
    src, holder = fused[0]
    ckpt = archref.hf_checkpoint(spec, weights)
    missing = dict(ckpt)
    del missing[src]
    d = directory("missing")
    archref.write_safetensors(os.path.join(d, "model.safetensors"), missing)
    expect_error("missing fused tensor", d, f"missing tensor '{src}'",
                 f"(holds {holder}")
    wrong = dict(ckpt)
    wrong[src] = ckpt[src].reshape(-1)[1:].clone()
    d = directory("shape")
    archref.write_safetensors(os.path.join(d, "model.safetensors"), wrong)
    expect_error("fused tensor of the wrong shape", d,
                 f"tensor '{src}' has shape [{ckpt[src].numel() - 1}]",
                 "the model expects")
    unexpected = dict(ckpt)
    unexpected["transformer.h.0.attn.c_attn.weight_extra"] = torch.ones(2)
    d = directory("unexpected")
    archref.write_safetensors(os.path.join(d, "model.safetensors"),
                              unexpected)
    expect_error("unexpected tensor", d,
                 "unexpected tensor 'transformer.h.0.attn.c_attn.weight_extra'")

    # --- errors of sharded checkpoints ----------------------------------------
    with open(index) as f:
        good_index = json.load(f)

    def bad_index(name, edit):
        d = directory(name)
        for f in os.listdir(sharded):
            shutil.copy(os.path.join(sharded, f), d)
        doc = json.loads(json.dumps(good_index))
        text = edit(doc)
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(doc))
        return d

    first = sorted(good_index["weight_map"])[0]
    shard_names = sorted(set(good_index["weight_map"].values()))

    def drop_shard(doc):
        os.remove(os.path.join(tmp, "noshard", shard_names[1]))
    expect_error("index names a shard that is not there",
                 bad_index("noshard", drop_shard), shard_names[1],
                 "cannot open")

    def wrong_shard(doc):
        doc["weight_map"][first] = next(
            s for s in shard_names if s != doc["weight_map"][first])
    expect_error("index puts a tensor in the wrong shard",
                 bad_index("wrongshard", wrong_shard),
                 f"weight_map puts tensor '{first}'", "which does not hold it")

    def outside(doc):
        doc["weight_map"][first] = "../elsewhere.safetensors"
    expect_error("shard outside the checkpoint's directory",
                 bad_index("outside", outside),
                 "shard '../elsewhere.safetensors' is not a file name beside "
                 "the index")

    def no_map(doc):
        del doc["weight_map"]
    expect_error("index without weight_map", bad_index("nomap", no_map),
                 "index has no weight_map entries")
    expect_error("malformed index", bad_index("badjson", lambda doc: '{"weight_map": {"a": '),
                 "index JSON")

    def duplicate(doc):
        # The same tensor in two shards: copy one shard under a new name.
        shutil.copy(os.path.join(tmp, "dup", shard_names[0]),
                    os.path.join(tmp, "dup", "copy.safetensors"))
        doc["weight_map"]["only.in.copy"] = "copy.safetensors"
    expect_error("tensor in two shards", bad_index("dup", duplicate),
                 "is in more than one shard")
    expect_error("directory without a checkpoint", directory("empty"),
                 "directory holds neither model.safetensors.index.json nor "
                 "model.safetensors")

    # --- a failed load keeps the weights the model had --------------------------
    model = lib.model(one)
    st = L.archrt_load_weights(model, os.path.join(tmp, "missing").encode())
    case("failed load leaves the loaded weights in place",
         st != 0 and np.array_equal(run(model), base))
    L.archrt_model_free(model)

    shutil.rmtree(tmp)
    return case.summary()


if __name__ == "__main__":
    sys.exit(main())
