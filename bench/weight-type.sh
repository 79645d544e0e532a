#!/usr/bin/env bash
# 16-bit weights (archc compile --weight-type) against f32 on one spec
# (default specs/llama/bench-156m.toml), in one run, against this
# machine's ceilings (bench/ceilings.c): prefill tok/s of $PROMPT_LEN
# tokens (default 128) and its GFLOP/s as a share of the peak of the
# unit its GEMMs run on (the bf16 dot product's for bf16 weights where the
# CPU has one, else the FP32 FMA peak);
# decode tok/s ($GEN tokens after the prompt, default 64), the matmul
# weight bytes a decoded token reads (archc check --weight-type) over its time as a
# share of the read bandwidth, and its speed-up over f32; resident MiB
# after loading. $ROUNDS rounds (default 3), each running every library
# in turn ($RUNS repetitions after a warm-up call, default 5, their
# median), and the median of the rounds (decode's speed-up over f32: the
# median of each round's ratio): on a VM whose speed drifts, a slow spell
# then lands on every library alike, not on one row of the table; 1 and 2
# threads. (So the default takes 3 times the calls of one round.) The
# ceilings are measured again right before and right after each
# library's calls (the higher of the two: a probe only reads low, when
# the VM takes a core away), and the shares ("of peak", "of bw") are the
# medians of each call's figure over the ceiling measured beside it: this
# VM's speed flips within seconds, and a share over a probe taken minutes
# earlier can read 100% or 60% for the same code. bf16 twice: with bf16
# inputs (the default: the bf16 dot product, its GEMM on AMX tiles where
# the CPU has them, vdpbf16ps where it has AVX512-BF16) and with
# --matmul-input=f32 ("bf16w": the weights widened).
#   bench/weight-type.sh [SPEC]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_round_options "$@"
bench_ceilings
# (FLOPs a prefilled token at the prompt's length: attention's share grows
# with the context; archc check's default is the spec's whole length.)
for w in f32 bf16 f16; do
  "$archc" check "$spec" --weight-type="$w" --json --context "$prompt" \
    > "$out/check.$w.json"
done
for w in f32 bf16 bf16w f16; do
  case $w in
    bf16) flags="--weight-type=bf16 --matmul-input=bf16" ;;
    bf16w) flags="--weight-type=bf16 --matmul-input=f32" ;;
    *) flags="--weight-type=$w" ;;
  esac
  "$archc" compile "$spec" $flags -o "$out/$w.so" --quiet
done
for round in $(seq "$rounds"); do
  for t in 1 2; do
    for w in f32 bf16 bf16w f16; do
      bench_probed "$out/ceilings.$w.$t.$round" "$t" "$out/$w.$t.$round" \
        "$archc" bench "$out/$w.so" --random-weights --prompt-len "$prompt" \
        --gen "$gen" --threads "$t" --runs "$runs" --json
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
sys.path.insert(0, "bench")
import benchlib
out, rounds = sys.argv[1], int(sys.argv[2])
benchlib.ceilings(out)  # (the start's, printed; the shares use the probes)


def runs(w, t):
    return [json.load(open(f"{out}/{w}.{t}.{r}")) for r in range(1, rounds + 1)]


def peak(w, cl):
    """The ceiling of library w's prefill in probe cl: the bf16 dot
    product's own (AMX's where the CPU has it, vdpbf16ps's), FP32's for
    the others or where neither."""
    return (benchlib.bf16_peak(cl) if w == "bf16" else 0) or cl["peak_gflops"]


def probes(w, t):
    """The ceilings measured beside each round's calls of w: the higher
    of the probes before and after them."""
    return [benchlib.probed(f"{out}/ceilings.{w}.{t}.{r}") for r in range(1, rounds + 1)]


def measured(w, t):
    """The median over the rounds of each figure of library w, t threads,
    and of its decode speed over f32's in the same round."""
    mine, f32 = runs(w, t), runs("f32", t)
    keys = ("prefill_tokens_per_s", "decode_tokens_per_s", "load_rss_mib")
    b = {k: statistics.median(x[k] for x in mine) for k in keys}
    b["vs_f32"] = statistics.median(x["decode_tokens_per_s"] / y["decode_tokens_per_s"]
                                    for x, y in zip(mine, f32))
    b["prompt_len"] = mine[0]["prompt_len"]
    return b


chk = {w: json.load(open(f"{out}/check.{w}.json")) for w in ("f32", "bf16", "f16")}
chk["bf16w"] = chk["bf16"]
print(f"\n{chk['f32']['model']}: {chk['f32']['params']:,} parameters, "
      f"{chk['f32']['decode_weight_bytes'] // 4:,} matmul weights per decoded token")
print("(of peak: FP32 FMA peak; bf16's: its unit's peak, AMX tiles' where the CPU "
      "has them, else vdpbf16ps')")
print(f"{'weights':<7} {'thr':>3} {'prefill tok/s':>13} {'of peak':>7} "
      f"{'decode tok/s':>12} {'GB/s':>6} {'of bw':>6} {'vs f32':>6} {'load MiB':>8}")
probed = {}
for t in (1, 2):
    for w in ("f32", "bf16", "bf16w", "f16"):
        b = measured(w, t)
        n = b["prompt_len"]
        c = chk[w]
        flops = (c["prefill_flops_per_token"]
                 - c["last_row_flops"] * (n - 1) / n)
        gb = b["decode_tokens_per_s"] * c["decode_weight_bytes"] / 1e9
        pairs = list(zip(runs(w, t), probes(w, t)))
        of_peak = statistics.median(x["prefill_tokens_per_s"] * flops / 1e9 / peak(w, p)
                                    for x, p in pairs)
        of_bw = statistics.median(x["decode_tokens_per_s"] * c["decode_weight_bytes"] / 1e9
                                  / p["read_gbs"] for x, p in pairs)
        probed[w, t] = (statistics.median(peak(w, p) for _, p in pairs),
                        statistics.median(p["read_gbs"] for _, p in pairs))
        print(f"{w:<7} {t:>3} {b['prefill_tokens_per_s']:>13.1f} "
              f"{of_peak:>6.0%} {b['decode_tokens_per_s']:>12.1f} "
              f"{gb:>6.1f} {of_bw:>5.0%} "
              f"{b['vs_f32']:>5.2f}x {b['load_rss_mib']:>8.1f}")
print("\nceilings probed beside each library's calls (medians; the peak is "
      "the one its share is of):")
for t in (1, 2):
    print(f"  {t} thread(s): " + ", ".join(
        f"{w} {probed[w, t][0]:.1f} GFLOP/s, {probed[w, t][1]:.1f} GB/s"
        for w in ("f32", "bf16", "bf16w", "f16")))
print("two threads over one, prefill (median of each round's ratio), beside "
      "the probed peak's own:")
for w in ("f32", "bf16", "bf16w", "f16"):
    two = statistics.median(x["prefill_tokens_per_s"] / y["prefill_tokens_per_s"]
                            for x, y in zip(runs(w, 2), runs(w, 1)))
    own = statistics.median(peak(w, x) / peak(w, y)
                            for x, y in zip(probes(w, 2), probes(w, 1)))
    print(f"  {w:<6} {two:.2f}x (the peak probe's: {own:.2f}x)")
PY
