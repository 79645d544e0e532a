#!/usr/bin/env bash
# Each kernel against this machine's ceilings (bench/ceilings.c), from
# `archc bench --profile --json`: per kernel of one spec (default
# specs/llama/bench-156m.toml), its time a prefill of $PROMPT_LEN tokens
# (default 128) and a decoded token ($GEN after the prompt, default 64),
# and for the matmuls and attention their GFLOP/s in prefill as a share of
# the FP32 FMA peak (a bf16 library's: of its bf16 unit's peak, AMX tiles'
# where the CPU has them) and their GB/s read in decode (weights; the cache
# rows attention sees) as a share of the read bandwidth; then two threads
# over one, kernel by kernel. Libraries of
# $WEIGHTS (default "f32 bf16"; archc compile --weight-type). $ROUNDS
# rounds (default 3) of every library at 1 and 2 threads ($RUNS calls
# each after a warm-up, default 5; archc's figures are their medians),
# alternated (one thread first in odd rounds, two in even ones), each
# between two probes of the ceilings (the higher of the
# two is the round's: a probe only reads low); every figure is the median
# over the rounds of its per-round value
# (a share: of the ceiling probed beside it; a speed-up: of the round's
# ratio), so that a slow spell of the VM lands on every row alike. Each
# round also runs two one-thread processes of a library at once
# (prefills only): their prefills summed over one alone is the machine's
# own two-core scaling of that work, the ceiling the two-thread figure is
# read against. Each
# round's two-thread ratio is printed beside the cores' round trip probed
# there (bench/ceilings.c): on a VM, how far apart the two CPUs were.
#   bench/profile.sh [SPEC]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_round_options "$@"
weights="${WEIGHTS:-f32 bf16}"
bench_weight_types "$weights"
bench_ceilings
for w in $weights; do
  "$archc" compile "$spec" --weight-type="$w" -o "$out/$w.so" --quiet
  # (The weight bytes a decoded token reads, for the whole token's share
  # of the read bandwidth.)
  "$archc" check "$spec" --weight-type="$w" --json > "$out/$w.check.json"
done
reversed=$(echo $weights | tr ' ' '\n' | tac | tr '\n' ' ')
for round in $(seq "$rounds"); do
  # (Odd rounds one thread first and the libraries in $WEIGHTS' order,
  # even rounds the other way round: a drift within a round lands on
  # both sides of each ratio.)
  order="1 2" libs="$weights"
  if [ $((round % 2)) = 0 ]; then order="2 1" libs="$reversed"; fi
  for t in $order; do
    for w in $libs; do
      bench_probed "$out/ceilings.$w.$t.$round" "$t" "$out/$w.$t.$round" \
        "$archc" bench "$out/$w.so" --random-weights --prompt-len "$prompt" \
        --gen "$gen" --threads "$t" --runs "$runs" --profile --json
    done
  done
  # Two one-thread processes side by side: what this machine's two cores
  # give the same work with nothing shared between them but the hardware.
  # Prefills only (--gen 0), twice as many: with the decodes between, one
  # process's prefills would run beside the other's decodes (bound by
  # the read bandwidth), not beside its prefills.
  for w in $libs; do
    pids=()
    for half in a b; do
      "$archc" bench "$out/$w.so" --random-weights --prompt-len "$prompt" \
        --gen 0 --threads 1 --runs $((2 * runs)) --profile --json \
        > "$out/$w.pair.$round.$half" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do
      wait "$pid" # (its failure stops the script)
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" $weights <<'PY'
import json, statistics, sys
sys.path.insert(0, "bench")
import benchlib
out, rounds, weights = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
benchlib.ceilings(out)  # (the start's, printed; the shares use the probes)
med = statistics.median


def runs(w, t):
    return [json.load(open(f"{out}/{w}.{t}.{r}")) for r in range(1, rounds + 1)]


def probes(w, t):
    """The ceilings probed beside each round's calls: the higher of the
    probes before and after them."""
    return [benchlib.probed(f"{out}/ceilings.{w}.{t}.{r}") for r in range(1, rounds + 1)]


def peak(w, probe):
    """Library w's prefill ceiling: the bf16 unit's for bf16 weights where
    the CPU has one (bench/weight-type.sh's), else FP32 FMA."""
    return (benchlib.bf16_peak(probe) if w == "bf16" else 0) or probe["peak_gflops"]


def rows(bench):
    return {r["kernel"]: r for r in bench["profile"]}


def cell(v, fmt, width):
    return format(v, fmt).rjust(width) if v is not None else "-".rjust(width)


def line(ms_p, gf, of_peak, ms_d, gb, of_bw, name):
    print(f"  {ms_p:>10.3f} {cell(gf, '.1f', 7)} {cell(of_peak, '.0%', 7)} "
          f"{ms_d:>13.4f} {cell(gb, '.1f', 6)} {cell(of_bw, '.0%', 6)}  {name}")


for w in weights:
    for t in (1, 2):
        rs, ps = runs(w, t), probes(w, t)
        # The whole decoded token (every kernel and what runs between them)
        # as weight bytes a second over the read probed beside it.
        wb = json.load(open(f"{out}/{w}.check.json"))["decode_weight_bytes"]
        whole = med(r["decode_tokens_per_s"] * wb / 1e9 / p["read_gbs"]
                    for r, p in zip(rs, ps))
        print(f"\n{rs[0]['model']}, {w} weights, {t} thread(s): prefill "
              f"{med(r['prefill_tokens_per_s'] for r in rs):.1f} tok/s, decode "
              f"{med(r['decode_tokens_per_s'] for r in rs):.1f} tok/s "
              f"({whole:.0%} of the read bandwidth, the whole token); probed "
              f"peak {med(peak(w, p) for p in ps):.1f} GFLOP/s, read "
              f"{med(p['read_gbs'] for p in ps):.1f} GB/s (medians of {rounds} "
              "rounds)")
        print(f"  {'prefill ms':>10} {'GFLOP/s':>7} {'of peak':>7} "
              f"{'decode ms/tok':>13} {'GB/s':>6} {'of bw':>6}  kernel")
        for k in (r["kernel"] for r in rs[0]["profile"]):
            per = [rows(r)[k] for r in rs]
            ms_p = med(x["prefill_ms"] for x in per)
            ms_d = med(x["decode_ms_per_token"] for x in per)
            def rate(key, ceiling):
                # (null where a round had no call of it: a mixture's
                # expert no token chose)
                v = [(x[key], ceiling(p)) for x, p in zip(per, ps)
                     if x.get(key) is not None]
                return (med(a for a, _ in v), med(a / c for a, c in v)) \
                    if v else (None, None)
            gf, of_peak = rate("prefill_gflop_s", lambda p: peak(w, p))
            gb, of_bw = rate("decode_gb_s", lambda p: p["read_gbs"])
            line(ms_p, gf, of_peak, ms_d, gb, of_bw, k)
        def linears(r, key):
            return sum(x[key] for x in r["profile"]
                       if x["op"] in ("linear", "head_linear"))
        line(med(linears(r, "prefill_ms") for r in rs),
             med(r["linears_prefill_gflop_s"] for r in rs),
             med(r["linears_prefill_gflop_s"] / peak(w, p) for r, p in zip(rs, ps)),
             med(linears(r, "decode_ms_per_token") for r in rs),
             med(r["linears_decode_gb_s"] for r in rs),
             med(r["linears_decode_gb_s"] / p["read_gbs"] for r, p in zip(rs, ps)),
             "(the matmuls together)")
        line(med(r["prefill_outside_kernels_ms"] for r in rs), None, None,
             med(r["decode_outside_kernels_ms_per_token"] for r in rs), None, None,
             "(outside the kernels)")

def pairs(w):
    """Each round's two one-thread processes run at once: their prefill
    rates summed."""
    return [sum(json.load(open(f"{out}/{w}.pair.{r}.{h}"))["prefill_tokens_per_s"]
                for h in "ab") for r in range(1, rounds + 1)]


for w in weights:
    one, two = runs(w, 1), runs(w, 2)
    print(f"\n{w}: two threads over one (medians of each round's ratio; the "
          "probes' own in brackets)")
    print(f"  prefill {med(b['prefill_tokens_per_s'] / a['prefill_tokens_per_s'] for a, b in zip(one, two)):.2f}x "
          f"[peak {med(peak(w, b) / peak(w, a) for a, b in zip(probes(w, 1), probes(w, 2))):.2f}x; "
          f"two one-thread processes at once "
          f"{med(p / a['prefill_tokens_per_s'] for a, p in zip(one, pairs(w))):.2f}x], "
          f"decode {med(b['decode_tokens_per_s'] / a['decode_tokens_per_s'] for a, b in zip(one, two)):.2f}x "
          f"[read {med(b['read_gbs'] / a['read_gbs'] for a, b in zip(probes(w, 1), probes(w, 2))):.2f}x]")
    # Each round's prefill ratio beside the cores' round trip probed at
    # its two-thread run: how far apart the VM had put the two CPUs.
    trips = [p.get("round_trip_ns", 0) for p in probes(w, 2)]
    if any(trips):
        print("  each round: " + ", ".join(
            f"{b['prefill_tokens_per_s'] / a['prefill_tokens_per_s']:.2f}x ({trip:.0f} ns)"
            for a, b, trip in zip(one, two, trips))
            + " (prefill, the cores' round trip)")
    print(f"  {'prefill':>8} {'decode':>8}  kernel")
    for k in (r["kernel"] for r in one[0]["profile"]):
        def ratio(key):
            v = [rows(a)[k][key] / rows(b)[k][key] for a, b in zip(one, two)
                 if rows(b)[k][key] > 0]
            return f"{med(v):>7.2f}x" if v else f"{'-':>8}"
        print(f"  {ratio('prefill_ms')} {ratio('decode_ms_per_token')}  {k}")
PY
