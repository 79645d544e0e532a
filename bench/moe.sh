#!/usr/bin/env bash
# A mixture of experts against the dense model of the same active size:
# specs/llama/bench-moe.toml (bench-156m with 16 experts of 1408, top 2:
# 8x the FFN weights, the same per token) vs specs/llama/bench-156m.toml,
# in one run, against this machine's ceilings (bench/ceilings.c):
#   1. decode tok/s (64 tokens after a 128-token prompt), 1 and 2 threads,
#      and the MoE/dense ratio;
#   2. the weight bytes a decoded token reads (archc check's active
#      parameters x 4) over its time, as a share of the read bandwidth; and
#      the bandwidth it would take to read every expert in that time: above
#      the machine's ceiling means the unchosen experts were not read;
#   3. prefill tok/s of 128 tokens (each expert's GEMM over its routed rows).
# Medians of $RUNS repetitions after a warm-up call.
#   bench/moe.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
runs="${RUNS:-5}"
bench_ceilings
for m in bench-156m bench-moe; do
  "$archc" compile "specs/llama/$m.toml" -o "$out/$m.so" --quiet
  "$archc" check "specs/llama/$m.toml" --json > "$out/$m.json"
  for t in 1 2; do
    "$archc" bench "$out/$m.so" --random-weights --prompt-len 128 --gen 64 \
      --threads "$t" --runs "$runs" --json > "$out/$m.$t"
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
sys.path.insert(0, "bench")
import benchlib
out = sys.argv[1]
ceil = benchlib.ceilings(out)
check = {m: json.load(open(f"{out}/{m}.json")) for m in ("bench-156m", "bench-moe")}
for m, c in check.items():
    print(f"{m}: {c['params']:,} parameters, {c['active_params']:,} active per token")
print(f"\n{'model':<11} {'thr':>3} {'decode tok/s':>12} {'active GB/s':>14} "
      f"{'all-experts GB/s':>16} {'prefill tok/s':>13}")
r = {}
for t in (1, 2):
    for m in ("bench-156m", "bench-moe"):
        d = json.load(open(f"{out}/{m}.{t}"))
        tok = d["decode_tokens_per_s"]
        r[m, t] = tok
        c = check[m]
        active = c["active_params"] * 4 * tok / 1e9
        every = (c["params"] - c["embedding_params"]) * 4 * tok / 1e9
        print(f"{m:<11} {t:>3} {tok:>12.1f} {active:>6.1f} ({active / ceil[t]['read_gbs']:>4.0%}) "
              f"{every:>8.1f} ({every / ceil[t]['read_gbs']:>4.0%}) "
              f"{d['prefill_tokens_per_s']:>13.1f}")
for t in (1, 2):
    print(f"MoE / dense decode time per token, {t} thread(s): "
          f"{r['bench-156m', t] / r['bench-moe', t]:.2f}x")
PY
