#!/usr/bin/python3
"""A prefill or decode whose kernel fails (a halide_malloc refused by
test/e2e/Inputs/fail_halide_malloc.c, preloaded) appends none of its
tokens: the status names a kernel error, the sequence keeps its length and
has no logits, and the same call again gives the logits of a sequence that
never failed (a token cache's rows past the length are rewritten). Where
a prompt of several chunks failed after its first, a sliding-window ring
may have lost rows the sequence needs: then (--ring 1) the sequence
refuses calls until archrt_seq_reset, and after it runs as a fresh one.
Run with one thread, so that each call's allocations come in one order.

Each case prints "ok NAME" or "FAIL NAME: why"; exit status 1 on failure.
"""
import ctypes as C
import os
import random
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
import archrt  # noqa: E402

ERR_KERNEL, ERR_STATE = 7, 6


def main():
    args = archrt.script_args(__doc__, "chunk", "ring", "prefix")
    chunk, ring = int(args.chunk), args.ring == "1"
    # Tokens every sequence holds before the calls that fail (a ring then
    # wraps within them).
    prefix_len = int(args.prefix or 0)
    inject = C.CDLL(None)  # (the preloaded library's symbols)
    inject.archtest_malloc_calls.restype = C.c_long
    inject.archtest_fail_in.argtypes = [C.c_long]
    calls = inject.archtest_malloc_calls

    case = archrt.Cases()
    spec = archref.Spec(args.spec)
    lib = archrt.Lib(args.lib)
    L = lib.lib
    L.archrt_set_num_threads(1)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "w.safetensors")
    archref.write_safetensors(
        path, archref.hf_checkpoint(spec, archref.random_weights(spec, 11)))
    model = lib.model(path)
    rng = random.Random(11)
    prefix = [rng.randrange(spec.vocab) for _ in range(prefix_len)]
    # Three chunks and a decoded token.
    prompt = [rng.randrange(spec.vocab) for _ in range(2 * chunk + 3)]
    token = rng.randrange(spec.vocab)

    def logits(seq):
        return np.array(lib.logits(seq, spec.vocab), dtype=np.float32)

    def fresh():
        seq = lib.seq(model)
        if prefix:
            lib.prefill(seq, prefix)
        return seq

    want = fresh()
    lib.prefill(want, prompt)
    want_prompt = logits(want)
    lib.decode(want, token)
    want_token = logits(want)

    # The allocations of the prompt's first chunk, on a sequence of its own.
    first = fresh()
    before = calls()
    lib.prefill(first, prompt[:chunk])
    per_chunk = calls() - before
    case(f"the first chunk allocates ({per_chunk} calls)", per_chunk > 0)

    def prefill(seq, tokens):
        arr = (C.c_int32 * len(tokens))(*tokens)
        return L.archrt_prefill(seq, arr, len(tokens))

    def failed_call(name, seq, status, length):
        case.error(lib, f"{name}: a kernel error", status, "kernel error")
        case(f"{name}: status ARCHRT_ERR_KERNEL", status == ERR_KERNEL,
             str(status))
        case(f"{name}: the length kept ({length})",
             L.archrt_seq_length(seq) == length,
             str(L.archrt_seq_length(seq)))
        case(f"{name}: no logits", not L.archrt_logits(seq))

    # Failing in the first chunk: nothing went in, nothing lost.
    seq = fresh()
    inject.archtest_fail_in(1)
    failed_call("first chunk", seq, prefill(seq, prompt), prefix_len)
    lib.prefill(seq, prompt)
    case("first chunk: the prompt again gives the unfailed logits",
         np.array_equal(logits(seq), want_prompt))

    # Failing in the second chunk, the first one's rows written.
    seq = fresh()
    inject.archtest_fail_in(per_chunk + 1)
    failed_call("second chunk", seq, prefill(seq, prompt), prefix_len)
    if ring:
        case.error(lib, "second chunk: a ring may have lost rows, the "
                   "sequence refuses calls", prefill(seq, prompt),
                   "archrt_seq_reset")
        case("second chunk: refused with ARCHRT_ERR_STATE",
             prefill(seq, prompt) == ERR_STATE)
        lib.check(L.archrt_seq_reset(seq), "reset")
        if prefix:
            lib.prefill(seq, prefix)
    lib.prefill(seq, prompt)
    case("second chunk: the prompt again gives the unfailed logits",
         np.array_equal(logits(seq), want_prompt))

    # A failed decode: the prompt stays, the token goes in on the retry.
    inject.archtest_fail_in(1)
    status = L.archrt_decode(seq, token)
    failed_call("decode", seq, status, prefix_len + len(prompt))
    lib.decode(seq, token)
    case("decode: the token again gives the unfailed logits",
         np.array_equal(logits(seq), want_token))
    return case.summary()


if __name__ == "__main__":
    sys.exit(main())
