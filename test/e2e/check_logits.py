#!/usr/bin/python3
"""Compiled library vs the PyTorch reference on seeded random weights.

Prefills a random prompt in two calls (so the second starts at pos > 0 with
several tokens), then decodes random tokens one at a time, and after every
call compares the library's fp32 logits with the reference's float64
logits: relative L2 error must be <= --tol (1e-4 by default).

Under the sanitized test run (ARCHC_SANITIZE=1, the ASan runtime preloaded
into this process) the PyTorch side (weights, checkpoint, reference logits)
runs in a child process without the preload: the sanitizer is there for
the library, and PyTorch under an intercepted malloc costs seconds a test.

  check_logits.py --batch FILE   runs the checks FILE lists, one line of
                                 these arguments each, in one process
                                 (PyTorch is imported once: 1.5 s saved a
                                 check); prints what each would, exits 1
                                 if any fails.
"""
import argparse
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archrt  # noqa: E402


def parser():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=7)
    ap.add_argument("--split", type=int, default=5,
                    help="tokens in the first prefill call")
    ap.add_argument("--decode", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--kv-type", choices=["f32", "f16", "bf16"],
                    default="f32", help="the library's KV cache element "
                    "type: the reference rounds keys and values to it")
    ap.add_argument("--weight-type", choices=["f32", "f16", "bf16"],
                    default="f32", help="the library's --weight-type: the "
                    "reference rounds the matmul weights to it")
    ap.add_argument("--matmul-input", choices=["f32", "bf16"],
                    help="the library's --matmul-input (default as archc's: "
                    "bf16 with bf16 weights): with bf16 the reference "
                    "rounds those matmuls' inputs too")
    ap.add_argument("--check-json", help="output of archc check --json: its "
                    "parameter count must equal the reference's")
    ap.add_argument("--shards", type=int, default=1,
                    help="write the checkpoint as this many shards with a "
                    "model.safetensors.index.json")
    ap.add_argument("--strip-prefix", action="store_true",
                    help="leave the base-model prefix out of tensor names")
    ap.add_argument("--max-tokens", type=int, default=0,
                    help="create the sequence for this many positions (0: "
                    "max_seq_len); fewer put a head-major cache's heads "
                    "closer together than max_seq_len does")
    ap.add_argument("--reset", action="store_true",
                    help="then archrt_seq_reset and the first prefill again")
    ap.add_argument("--truncate", type=int,
                    help="then archrt_seq_truncate to this many positions, "
                    "a prefill of other tokens, the truncation again and "
                    "the prefill of the rest of the tokens: the last "
                    "logits again")
    ap.add_argument("--truncate-refused",
                    help="then archrt_seq_truncate to each of these "
                    "comma-separated positions in turn: each but the last "
                    "must succeed, the last fail with ARCHRT_ERR_STATE (a "
                    "state or ring cache), the sequence unchanged")
    ap.add_argument("--tie-experts", action="store_true",
                    help="give experts 0 and 1 the same router row (and "
                    "selection bias): every token's scores tie, and the "
                    "lower index must win in both")
    return ap


def main():
    # --batch FILE and --prepare-into DIR (the child's) come first.
    argv = sys.argv[1:]
    batch = prepare_into = None
    while argv and argv[0] in ("--batch", "--prepare-into"):
        if argv[0] == "--batch":
            batch = argv[1]
        else:
            prepare_into = argv[1]
        argv = argv[2:]
    if batch:
        with open(batch) as f:
            runs = [shlex.split(line) for line in f if line.strip()]
    else:
        runs = [argv]
    checks = [parser().parse_args(words) for words in runs]
    if prepare_into:  # the child: the PyTorch side of every check
        for i, args in enumerate(checks):
            prepare(args, os.path.join(prepare_into, str(i)))
        return 0
    rc = 0
    with tempfile.TemporaryDirectory() as tmp:
        if os.environ.get("ARCHC_SANITIZE") == "1":
            env = {k: v for k, v in os.environ.items()
                   if k not in ("LD_PRELOAD", "ARCHC_SANITIZE")}
            subprocess.run([sys.executable, __file__, "--prepare-into", tmp]
                           + (["--batch", batch] if batch else argv),
                           env=env, check=False)
        for i, args in enumerate(checks):
            out = os.path.join(tmp, str(i))
            if os.environ.get("ARCHC_SANITIZE") != "1":
                prepare(args, out)
            with open(os.path.join(out, "meta.json")) as f:
                meta = json.load(f)
            for line in meta["lines"]:
                print(line)
            if meta["rc"]:
                rc = 1
                continue
            ref = np.load(os.path.join(out, "ref.npy"))
            lib = archrt.Lib(args.lib)
            model = lib.model(os.path.join(out, "ckpt"))
            rc |= run(args, lib, model, ref, meta["tokens"], meta["vocab"],
                      meta["name"])
            sys.stdout.flush()
    return rc


def prepare(args, out):
    """The PyTorch side into directory `out`: meta.json (the lines to print,
    tokens, vocab, name), ref.npy (the reference logits), ckpt/ (the
    checkpoint in the family's layout). Non-zero when the parameter
    counts differ."""
    import torch
    import archref
    lines = []
    os.makedirs(out, exist_ok=True)

    def finish(rc):
        with open(os.path.join(out, "meta.json"), "w") as f:
            json.dump({"lines": lines, "tokens": tokens, "vocab": spec.vocab,
                       "name": spec.name, "rc": rc}, f)
        return rc

    spec = archref.Spec(args.spec)
    tokens = []
    if args.check_json:
        with open(args.check_json) as f:
            reported = json.load(f)["params"]
        counted = sum(int(np.prod(s)) for s in spec.param_shapes().values())
        lines.append(f"parameters: archc check {reported}, reference {counted}")
        if reported != counted:
            lines.append("FAILED: parameter counts differ")
            return finish(1)
    weights = archref.random_weights(spec, args.seed)
    if args.tie_experts:
        for name, t in weights.items():
            if name.endswith("mlp.gate.weight") or name.endswith(
                    "mlp.gate.e_score_correction_bias"):
                t[1] = t[0]
    rng = random.Random(args.seed)
    total = args.prompt_len + args.decode
    tokens = [rng.randrange(spec.vocab) for _ in range(total)]
    kv_type = {"f32": None, "f16": torch.float16,
               "bf16": torch.bfloat16}[args.kv_type]
    weight_type = {"f32": None, "f16": torch.float16,
                   "bf16": torch.bfloat16}[args.weight_type]
    matmul_input = args.matmul_input or (
        "bf16" if args.weight_type == "bf16" else "f32")
    input_type = torch.bfloat16 if matmul_input == "bf16" else None
    ref = archref.forward(spec, weights, tokens, kv_type=kv_type,
                          weight_type=weight_type,
                          input_type=input_type).numpy()
    np.save(os.path.join(out, "ref.npy"), ref)
    # The family's Hugging Face layout (names, fused and transposed
    # tensors), loaded from the directory.
    ckpt = os.path.join(out, "ckpt")
    os.makedirs(ckpt)
    archref.write_checkpoint(ckpt, spec, weights, args.shards,
                             args.strip_prefix)
    lines.append(f"checkpoint: {spec.naming}, {len(os.listdir(ckpt))} file(s)")
    return finish(0)


def run(args, lib, model, ref, tokens, vocab, name):
    """The library's logits after each call against the reference's."""
    total = args.prompt_len + args.decode
    seq = lib.seq(model, args.max_tokens)

    worst, failures = 0.0, 0

    def compare(what, position):
        """The last call's logits against the reference's at `position`."""
        nonlocal worst, failures
        got = np.array(lib.logits(seq, vocab), dtype=np.float64)
        want = ref[position]
        err = np.linalg.norm(got - want) / np.linalg.norm(want)
        worst = max(worst, err)
        ok = err <= args.tol
        failures += not ok
        print(f"{what} rel L2 error {err:.3e} {'ok' if ok else 'FAIL'}")

    steps = [(0, args.split), (args.split, args.prompt_len)]
    steps += [(n, n + 1) for n in range(args.prompt_len, total)]
    for begin, end in steps:
        if begin == end:
            continue
        if end - begin == 1 and begin >= args.prompt_len:
            lib.decode(seq, tokens[begin])
            what = f"decode @{begin}"
        else:
            lib.prefill(seq, tokens[begin:end])
            what = f"prefill [{begin}, {end})"
        compare(f"{what:20s}", end - 1)
    if args.reset:  # the sequence starts over: its states zeroed again
        lib.check(lib.lib.archrt_seq_reset(seq), "reset")
        lib.prefill(seq, tokens[:args.split])
        compare(f"after reset: prefill [0, {args.split})", args.split - 1)
    if args.truncate is not None:
        # Positions [k, total) again, over other tokens' rows first.
        k = args.truncate
        lib.check(lib.lib.archrt_seq_truncate(seq, k), "truncate")
        if lib.lib.archrt_logits(seq) or lib.lib.archrt_seq_length(seq) != k:
            print("FAILED: a truncated sequence keeps its logits or length")
            failures += 1
        lib.prefill(seq, [(t * 7 + 3) % vocab for t in tokens[k:total]])
        lib.check(lib.lib.archrt_seq_truncate(seq, k), "truncate")
        lib.prefill(seq, tokens[k:total])
        compare(f"after truncate to {k}: prefill [{k}, {total})", total - 1)
    if args.truncate_refused is not None:
        *steps, last = [int(k) for k in args.truncate_refused.split(",")]
        for k in steps:
            lib.check(lib.lib.archrt_seq_truncate(seq, k), "truncate")
        length = lib.lib.archrt_seq_length(seq)
        logits = bool(lib.lib.archrt_logits(seq))
        st = lib.lib.archrt_seq_truncate(seq, last)
        message = lib.lib.archrt_last_error().decode()
        kept = lib.lib.archrt_seq_length(seq) == length and \
            bool(lib.lib.archrt_logits(seq)) == logits
        ok = st == 6 and kept  # ARCHRT_ERR_STATE
        failures += not ok
        print(f"truncate to {args.truncate_refused} refused: status {st}, "
              f"'{message}' {'ok' if ok else 'FAIL'}")
    lib.lib.archrt_seq_free(seq)
    lib.lib.archrt_model_free(model)
    print(f"{name}: worst rel L2 error {worst:.3e} (tolerance "
          f"{args.tol:g}) over {len(steps)} calls")
    if failures:
        print(f"FAILED: {failures} calls above tolerance")
        return 1
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
