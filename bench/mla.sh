#!/usr/bin/env bash
# Multi-head latent attention absorbed (arch-absorb-mla, the default) vs
# naive (--disable-pass=arch-absorb-mla) on specs/deepseek/bench-mla.toml
# (264M parameters, DeepSeek-V2-Lite's attention shape), 2 threads, against
# this machine's ceilings measured in the same run (bench/ceilings.c):
#   1. decode tok/s at context 256, 2K and 8K (16 tokens after a prompt of
#      that length), the cache bytes those positions hold (the same in both
#      forms: latent and rotary key only), and the process's peak RSS
#      (the naive form also keeps per-position keys and values while a
#      call runs);
#   2. prefill tok/s of 128, 512 and 2048-token prompts, 1 and 2 threads:
#      which form a prompt is faster in.
# Figures are medians of $RUNS repetitions after a warm-up call (1 at 8K).
#   bench/mla.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
spec=specs/deepseek/bench-mla.toml
runs="${RUNS:-3}"
bench_ceilings
"$archc" compile "$spec" -o "$out/absorbed.so" --quiet
"$archc" compile "$spec" -o "$out/naive.so" --quiet --disable-pass=arch-absorb-mla
"$archc" check "$spec" --json > "$out/check.json"
bench() { # build threads prompt gen runs -> json
  "$archc" bench "$out/$1.so" --random-weights --prompt-len "$3" --gen "$4" \
    --threads "$2" --runs "$5" --json
}
for b in absorbed naive; do
  for n in 256 2048 8192; do
    r=$runs; [ "$n" -gt 2048 ] && r=1
    bench "$b" 2 "$n" 16 "$r" > "$out/decode.$b.$n"
  done
  for t in 1 2; do
    for n in 128 512 2048; do bench "$b" "$t" "$n" 1 "$runs" > "$out/prefill.$b.$t.$n"; done
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
sys.path.insert(0, "bench")
import benchlib
out = sys.argv[1]
ceil = benchlib.ceilings(out)
check = json.load(open(f"{out}/check.json"))
per = check["kv_bytes_per_token"]
print(f"\nbench-mla: {check['params']:,} parameters, cache {per:,} bytes per token "
      f"({check['kv_elements_per_token']:,} elements, all layers)")
print("\ndecode, 2 threads: tok/s after a prompt of the context's length; "
      "cache bytes; peak RSS")
print(f"{'context':>7} {'absorbed tok/s':>14} {'naive tok/s':>11} {'ratio':>7} "
      f"{'cache MiB':>9} {'RSS absorbed':>12} {'RSS naive':>9}")
for n in (256, 2048, 8192):
    a = json.load(open(f"{out}/decode.absorbed.{n}"))
    v = json.load(open(f"{out}/decode.naive.{n}"))
    print(f"{n:>7} {a['decode_tokens_per_s']:>14.2f} {v['decode_tokens_per_s']:>11.2f} "
          f"{a['decode_tokens_per_s'] / v['decode_tokens_per_s']:>6.1f}x "
          f"{per * (n + 16) / 2**20:>9.1f} {a['peak_rss_mib']:>10.0f} M "
          f"{v['peak_rss_mib']:>7.0f} M")
print("\nprefill tok/s (from position 0)")
print(f"{'thr':>3} {'prompt':>6} {'absorbed':>9} {'naive':>9} {'naive/absorbed':>14}")
for t in (1, 2):
    for n in (128, 512, 2048):
        a = json.load(open(f"{out}/prefill.absorbed.{t}.{n}"))["prefill_tokens_per_s"]
        v = json.load(open(f"{out}/prefill.naive.{t}.{n}"))["prefill_tokens_per_s"]
        print(f"{t:>3} {n:>6} {a:>9.1f} {v:>9.1f} {v / a:>13.2f}x")
PY
