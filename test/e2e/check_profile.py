#!/usr/bin/python3
"""A sequence's kernel profile (archrt_seq_set_profiling, archrt_seq_profile):
one site per kernel call of the forward function, in the glue's order and
with its comment's label; off by default; while on, each call adds 1 and its
time to its site (a site in a mixture's expert loop once per expert that
got tokens); turning it on zeroes, off keeps; bad arguments fail with a
message naming the call.

A linear's site also counts its work: rows, 2 K N FLOPs a row and the
bytes of its weights a call; over one decoded token the linears' FLOPs are
twice the matmul weights `archc check --json` counts from the IR (--check,
its output), their bytes those weights' (up to the panels' padding and the
biases); in a prefill each call before the last attention counts the
prompt's rows, each after it one (the last layer's output projection and
FFN, and the classifier, compute the last token's row only: a mixture's
expert calls top_k rows a token), and the linears' FLOPs are n tokens'
less `archc check`'s last_row_flops n - 1 times;
an attention's query-key pairs, their FLOPs and the cache rows its queries
see are those counted here by brute force (full or windowed; in a
prefill the last attention's of the last query row alone); the other
kernels count none.

--c is the library's glue (archc compile --emit=c). Each case prints "ok
NAME" or "FAIL NAME: why"; exit status 1 on failure.
"""
import ctypes as C
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
import archrt  # noqa: E402
from archc import _abi  # noqa: E402

case = archrt.Cases()

CALL = re.compile(r"^( *)ARCHRT_CALL\((\d+), .*?(archk_\w+)\(")
LABEL = re.compile(r"^ */\* (.*) \*/$")


def glue_sites(path):
    """The glue's sites in text order: (index, kernel, label, in a loop)."""
    sites, label = [], None
    for line in open(path):
        m = LABEL.match(line.rstrip("\n"))
        if m:
            label = m.group(1)
            continue
        m = CALL.match(line)
        if m:
            # (The forward body's statements are indented by 2; a loop's or
            # an if's by more.)
            sites.append((int(m.group(2)), m.group(3), label,
                          len(m.group(1)) > 2))
    return sites


def read(L, seq):
    """archrt_seq_profile's sites, as (kernel, op, calls, seconds)."""
    n = C.c_int32()
    st = L.archrt_seq_profile(seq, None, 0, C.byref(n))
    assert st == 0, st
    sites = (_abi.ProfileSite * n.value)()
    st = L.archrt_seq_profile(seq, sites, n.value, C.byref(n))
    assert st == 0, st
    return [(s.kernel.decode(), s.op.decode(), s.calls, s.seconds)
            for s in sites]


def work(L, seq):
    """archrt_seq_profile's work counts, as (rows, flops, bytes)."""
    n = C.c_int32()
    assert L.archrt_seq_profile(seq, None, 0, C.byref(n)) == 0
    sites = (_abi.ProfileSite * n.value)()
    assert L.archrt_seq_profile(seq, sites, n.value, C.byref(n)) == 0
    return [(s.rows, s.flops, s.bytes) for s in sites]


def attention_work(spec, pos, n, label):
    """What an attention call of the layer its site's `label` names
    ("attention layers.N (...)"), over query rows at pos .. pos + n - 1,
    counts, by brute force: (query-key pairs, FLOPs, cache bytes of the
    positions they see, each once); a window of 0: every earlier
    position."""
    spec = spec.layer(int(re.match(r"attention layers\.(\d+) ", label)[1]))
    window = spec.window
    seen = [set(range(max(0, p + 1 - window) if window else 0, p + 1))
            for p in range(pos, pos + n)]
    pairs = sum(len(s) for s in seen)
    keys = len(set().union(*seen))
    if spec.mla:  # absorbed: queries and keys of the latent and RoPE
        # parts, values of the latent; one cache row holds both
        qk, v, row = spec.kv_lora + spec.d_rope, spec.kv_lora, \
            spec.kv_lora + spec.d_rope
    else:
        qk, v = spec.head_dim, spec.head_dim
        row = spec.kv_heads * 2 * spec.head_dim
    return pairs, pairs * 2 * spec.heads * (qk + v), keys * row * 4


def check_work(L, seq, lib, model, glue, spec, figures, prompt):
    """The linears' counted work in one decoded token (after what `seq`
    holds) and in a prefill of `prompt` (from position 0)."""
    # (Matmuls: linears, and absorbed MLA's head linears; not linear
    # attention's kernels.)
    linear = [bool(re.match(r"archk_(head_)?linear_\d", k))
              for _, k, _, _ in glue]
    attn = [k.startswith("archk_attention_") for _, k, _, _ in glue]
    labels = [label for _, _, label, _ in glue]
    lib.check(L.archrt_seq_set_profiling(seq, 1), "set_profiling")
    pos = L.archrt_seq_length(seq)
    lib.decode(seq, 5)
    calls = [c for *_, c, _ in read(L, seq)]
    done = work(L, seq)
    lin = [w for w, is_lin in zip(done, linear) if is_lin]
    case("other kernels count no work",
         all(w == (0, 0, 0) for w, is_lin, is_attn in zip(done, linear, attn)
             if not is_lin and not is_attn),
         f"{[w for w, l in zip(done, linear) if not l][:5]}")
    # Attention: the pairs, FLOPs and cache bytes of its layer, full or
    # windowed. (The prompt and this position longer than any window: the
    # windows cut.)
    # In a prefill (`last`), the last layer's attention (each of its
    # calls: differential attention has two) scores its last query row
    # alone, at position pos + n - 1 (arch-sink-last-token).
    def layer_of(label):
        return int(re.match(r"attention layers\.(\d+) ", label)[1])
    last_layer = max(layer_of(label) for label, a in zip(labels, attn) if a)
    def attention_ok(works, pos, n, last=False):
        got = [(w, attention_work(spec, *((pos + n - 1, 1)
                                          if last and layer_of(label) ==
                                          last_layer else (pos, n)), label))
               for w, a, label in zip(works, attn, labels) if a]
        return got and all(w == want for w, want in got), got[:4]
    windows = {spec.layer(i).window for i in range(spec.layers)}
    case("the prompt and the decoded position past every window",
         len(prompt) > max(windows) and pos > max(windows), f"{windows}")
    ok, why = attention_ok(done, pos, 1)
    case("decode: attention's pairs, FLOPs and cache bytes", ok, f"{why}")
    # (Naive MLA's up-projection over the cache, not tested here, counts
    # the context's rows.)
    case("decode: a row a linear call",
         all(w[0] == c for w, c, is_lin in zip(done, calls, linear) if is_lin),
         f"{[(w[0], c) for w, c, l in zip(done, calls, linear) if l][:8]}")
    kn = figures["decode_weight_bytes"] // 4  # f32 weights
    flops, nbytes = sum(f for _, f, _ in lin), sum(b for *_, b in lin)
    case("decode: the linears' FLOPs twice the matmul weights archc check "
         "counts", kn > 0 and flops == 2 * kn, f"{flops} against 2 x {kn}")
    # (Padding: a dense model's panels are full but for the classifier's
    # last; the tiny mixture's experts are 32 columns in 64-column panels.)
    loops = any(inner for *_, inner in glue)
    case("decode: the linears' bytes those weights' (the panels' padding and "
         "the biases: < 5% more, < 2x in a mixture)",
         4 * kn <= nbytes <= (2 if loops else 1.05) * 4 * kn,
         f"{nbytes} against {4 * kn}")
    lib.check(L.archrt_seq_reset(seq), "seq_reset")
    lib.check(L.archrt_seq_set_profiling(seq, 1), "set_profiling")
    lib.prefill(seq, prompt)
    done = work(L, seq)
    ok, why = attention_ok(done, 0, len(prompt), last=True)
    case("prefill: attention's pairs, FLOPs and cache bytes (the last "
         "attention's of the last row)", ok, f"{why}")
    # Before the last attention every linear call has the prompt's rows;
    # after it (the last layer's output projection and FFN, the
    # classifier: arch-sink-last-token) the last token's one. A mixture's
    # expert calls (in its loop) count top_k rows a token.
    last_attn = max(i for i, a in enumerate(attn) if a)
    rows = [(w[0], inner, i > last_attn)
            for i, (w, (*_, inner), is_lin) in enumerate(zip(done, glue, linear))
            if is_lin]
    top_k = getattr(spec, "top_k", 0)
    n = len(prompt)
    def want(inner, after):
        return (1 if after else n) * (top_k if inner else 1)
    case("prefill: a linear call's rows the prompt's before the last "
         "attention, one after it",
         rows and rows[-1][2] and any(a for *_, a in rows[:-1]) and
         all(r == want(inner, after) for r, inner, after in rows),
         f"{rows}")
    if any(inner for _, inner, _ in rows):
        case("prefill: an expert's calls' rows the prompt's times top_k",
             any(inner and not after for _, inner, after in rows) and
             all(r == want(True, after) for r, inner, after in rows if inner),
             f"{[r for r, inner, _ in rows if inner]} (top_k {top_k})")
    # So a prefill of n tokens multiplies the matmul weights of a token n
    # times, but those archc check counts as the last row's once.
    flops = sum(w[1] for w, is_lin in zip(done, linear) if is_lin)
    last = figures["last_row_flops"]
    case("prefill: the linears' FLOPs n tokens' less the last row's n - 1 "
         "times (archc check's last_row_flops)",
         last > 0 and flops == n * 2 * kn - (n - 1) * last,
         f"{flops} against {n} x 2 x {kn} - {n - 1} x {last}")

def main():
    args = archrt.script_args(__doc__, "c", "check")
    spec = archref.Spec(args.spec)
    lib = archrt.Lib(args.lib)
    L = lib.lib
    glue = glue_sites(args.c)
    case("the glue's sites are numbered 0, 1, ... in text order",
         [i for i, *_ in glue] == list(range(len(glue))) and glue,
         f"{[i for i, *_ in glue][:20]}")
    loops = any(inner for *_, inner in glue)

    model = lib.model()
    lib.check(L.archrt_init_random(model, 5), "init_random")
    seq = lib.seq(model)
    prompt = [(7 * i + 3) % spec.vocab for i in range(9)]

    # Off by default: a prefill leaves every site at zero.
    lib.prefill(seq, prompt)
    sites = read(L, seq)
    case("one site a kernel call of the glue, in its order, with its label",
         [(k, op) for k, op, *_ in sites] ==
         [(k, label) for _, k, label, _ in glue],
         f"{len(sites)} sites against the glue's {len(glue)}: "
         f"{sites[:3]} / {glue[:3]}")
    case("off by default: nothing counted",
         all(c == 0 and s == 0 for *_, c, s in sites), f"{sites[:5]}")

    # On: a prefill counts every call once (a loop's sites at most once an
    # expert), and the sites' time is within the call's.
    lib.check(L.archrt_seq_set_profiling(seq, 1), "set_profiling")
    t0 = time.perf_counter()
    lib.decode(seq, 1)
    wall = time.perf_counter() - t0
    sites = read(L, seq)
    straight = [c for (_, _, _, inner), (*_, c, _) in zip(glue, sites)
                if not inner]
    case("on: every call outside a loop counted once",
         straight and all(c == 1 for c in straight), f"{straight[:20]}")
    total = sum(s for *_, s in sites)
    case("on: the sites' time within the call's (one clock)",
         all(s >= 0 for *_, s in sites) and 0 < total <= wall,
         f"sum {total:.6f} s, call {wall:.6f} s")
    if loops:
        looped = [c for (_, _, _, inner), (*_, c, _) in zip(glue, sites)
                  if inner]
        experts = getattr(spec, "n_experts", 0)
        case("on: a loop's site once an expert that got tokens at most",
             looped and all(0 <= c <= experts for c in looped) and
             sum(looped) > 0, f"{looped[:20]} of {experts} experts")

    # More calls add up; turning it on again zeroes; off keeps the figures
    # and stops counting.
    lib.decode(seq, 2)
    lib.decode(seq, 3)
    again = read(L, seq)
    pairs = [(c1, c2, s1, s2, inner) for (*_, inner), (*_, c1, s1),
             (*_, c2, s2) in zip(glue, sites, again)]
    case("calls add up over decode calls",
         all((c2 == 3 * c1 or inner and c2 >= c1) and s2 >= s1
             for c1, c2, s1, s2, inner in pairs),
         f"{[(c1, c2) for c1, c2, *_ in pairs][:8]}")
    lib.check(L.archrt_seq_set_profiling(seq, 0), "set_profiling")
    lib.decode(seq, 4)
    kept = read(L, seq)
    case("off keeps what was counted and counts no more",
         [c for *_, c, _ in kept] == [c for *_, c, _ in again],
         f"{[c for *_, c, _ in kept][:8]}")
    lib.check(L.archrt_seq_set_profiling(seq, 1), "set_profiling")
    zeroed = read(L, seq)
    case("on again zeroes",
         all(c == 0 and s == 0 for *_, c, s in zeroed), f"{zeroed[:3]}")
    # (A shorter array: the first n filled, the count still the model's.)
    one, n = (_abi.ProfileSite * 1)(), C.c_int32()
    st = L.archrt_seq_profile(seq, one, 1, C.byref(n))
    case("n below the site count: the first n, and the count",
         st == 0 and n.value == len(glue) and
         one[0].kernel.decode() == glue[0][1],
         f"status {st}, n {n.value}")

    # Bad arguments.
    case.error(lib, "set_profiling(NULL)",
               L.archrt_seq_set_profiling(None, 1),
               "archrt_seq_set_profiling", "NULL")
    case.error(lib, "profile(NULL seq)",
               L.archrt_seq_profile(None, None, 0, C.byref(n)),
               "archrt_seq_profile", "NULL")
    case.error(lib, "profile(NULL n_sites)",
               L.archrt_seq_profile(seq, None, 0, None),
               "archrt_seq_profile", "NULL")
    case.error(lib, "profile(n > 0, NULL sites)",
               L.archrt_seq_profile(seq, None, 2, C.byref(n)),
               "archrt_seq_profile", "NULL")
    case.error(lib, "profile(n < 0)",
               L.archrt_seq_profile(seq, one, -1, C.byref(n)),
               "archrt_seq_profile", "n must be >= 0", "-1")
    if args.check:
        check_work(L, seq, lib, model, glue, spec,
                   json.load(open(args.check)), prompt)
    L.archrt_seq_free(seq)
    L.archrt_model_free(model)
    return case.summary()


if __name__ == "__main__":
    sys.exit(main())
