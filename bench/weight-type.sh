#!/usr/bin/env bash
# 16-bit weights (archc compile --weight-type) against f32 on one spec
# (default specs/llama/bench-156m.toml), in one run, against this
# machine's ceilings (bench/ceilings.c): prefill tok/s of $PROMPT_LEN
# tokens (default 128) and its GFLOP/s as a share of the FP32 FMA peak;
# decode tok/s ($GEN tokens after the prompt, default 64), the matmul
# weight bytes a decoded token reads (archc check --weight-type) over its time as a
# share of the read bandwidth, and its speed-up over f32; resident MiB
# after loading. $ROUNDS rounds (default 3), each running every library
# in turn ($RUNS repetitions after a warm-up call, default 5, their
# median), and the median of the rounds (decode's speed-up over f32: the
# median of each round's ratio): on a VM whose speed drifts, a slow spell
# then lands on every library alike, not on one row of the table; 1 and 2
# threads. (So the default takes 3 times the calls of one round.) bf16 twice: with bf16 inputs (the default: the bf16 dot
# product, its GEMM on AMX tiles where the CPU has them, vdpbf16ps where
# it has AVX512-BF16) and with
# --matmul-input=f32 ("bf16w": the weights widened).
#   bench/weight-type.sh [SPEC]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
spec="${1:-specs/llama/bench-156m.toml}"
prompt="${PROMPT_LEN:-128}" gen="${GEN:-64}" runs="${RUNS:-5}" rounds="${ROUNDS:-3}"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "weight-type.sh: ROUNDS must be a whole number >= 1, not '$rounds'" >&2; exit 2; }
bench_ceilings
for w in f32 bf16 f16; do
  "$archc" check "$spec" --weight-type="$w" --json > "$out/check.$w.json"
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
      "$archc" bench "$out/$w.so" --random-weights --prompt-len "$prompt" \
        --gen "$gen" --threads "$t" --runs "$runs" --json > "$out/$w.$t.$round"
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
sys.path.insert(0, "bench")
import benchlib
out, rounds = sys.argv[1], int(sys.argv[2])
ceil = benchlib.ceilings(out)


def runs(w, t):
    return [json.load(open(f"{out}/{w}.{t}.{r}")) for r in range(1, rounds + 1)]


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
for t in (1, 2):
    for w in ("f32", "bf16", "bf16w", "f16"):
        b = measured(w, t)
        n = b["prompt_len"]
        c = chk[w]
        flops = (c["prefill_flops_per_token"]
                 - c["classifier_flops_per_token"] * (n - 1) / n)
        gf = b["prefill_tokens_per_s"] * flops / 1e9
        gb = b["decode_tokens_per_s"] * c["decode_weight_bytes"] / 1e9
        # (The bf16 dot product's prefill against its own ceiling: AMX's
        # where the CPU has it, vdpbf16ps's, or FP32's where neither.)
        peak = (benchlib.bf16_peak(ceil[t]) if w == "bf16" else 0) or ceil[t]["peak_gflops"]
        print(f"{w:<7} {t:>3} {b['prefill_tokens_per_s']:>13.1f} "
              f"{gf / peak:>6.0%} {b['decode_tokens_per_s']:>12.1f} "
              f"{gb:>6.1f} {gb / ceil[t]['read_gbs']:>5.0%} "
              f"{b['vs_f32']:>5.2f}x {b['load_rss_mib']:>8.1f}")
PY
