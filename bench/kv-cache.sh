#!/usr/bin/env bash
# KV caches at length (issue: attention at length), 2 threads, one run after
# a warm-up call per figure (RUNS to change):
#   1. bench-156m-32k as it is (every layer's caches keep every position)
#      against the same model Mistral-shaped (window 4096 in every layer:
#      ring caches of 4096 + 255 rows, ringRows in ArchOps.cpp), prompts of
#      1K, 4K, 8K and 16K tokens then 16 decode steps: the cache MiB the
#      library reports, the peak memory of the run, prefill and
#      decode tok/s (peak memory: proportional, PSS, which counts a ring's
#      two mappings of the same pages once; RSS counts them twice);
#      and Gemma 3-shaped (issue 12: a window of 1024 in every layer but
#      every sixth from layer 5, so 7 local layers to 1 global: the global
#      layer's caches grow, the local layers' rings stay fixed);
#   2. the f32, f16 and bf16 caches (--kv-type) of bench-156m-32k at 8K
#      positions: the same figures.
#   bench/kv-cache.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
spec=specs/llama/bench-156m-32k.toml
runs="${RUNS:-1}"
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /'
sed -e 's/^name = "llama-156m-32k"/name = "llama-156m-32k-swa"/' \
    -e '/^\[attention\]$/a window = 4096' "$spec" > "$out/swa.toml"
{
  sed -e 's/^name = "llama-156m-32k"/name = "llama-156m-32k-gemma3"/' \
      -e '/^\[attention\]$/a window = 1024' "$spec"
  printf '\n[[layer_overrides]]\nevery = 6\noffset = 5\n[layer_overrides.attention]\nwindow = 0\n'
} > "$out/gemma3.toml"
"$archc" compile "$spec" -o "$out/full.so" --quiet
"$archc" compile "$out/swa.toml" -o "$out/swa.so" --quiet
"$archc" compile "$out/gemma3.toml" -o "$out/gemma3.so" --quiet
for t in f16 bf16; do
  "$archc" compile "$spec" -o "$out/$t.so" --quiet --kv-type="$t"
done
bench() { # build prompt: each in a process of its own (peak memory per run)
  "$archc" bench "$out/$1.so" --random-weights --prompt-len "$2" --gen 16 \
    --threads 2 --runs "$runs" --json > "$out/$1.$2"
}
for n in 1024 4096 8192 16384; do
  for b in full swa gemma3; do bench "$b" "$n"; done
done
for t in f16 bf16; do bench "$t" 8192; done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print(f"{'context':>8} | {'full: cache MiB':>15} {'peak MiB':>9} {'prefill':>8} {'decode':>7}"
      f" | {'window 4096: cache MiB':>22} {'peak MiB':>9} {'prefill':>8} {'decode':>7}"
      f" | {'Gemma 3-shaped: cache MiB':>25} {'peak MiB':>9} {'prefill':>8} {'decode':>7}")
for n in (1024, 4096, 8192, 16384):
    row = f"{n:>8}"
    for b, w in (("full", 15), ("swa", 22), ("gemma3", 25)):
        r = json.load(open(f"{out}/{b}.{n}"))
        row += (f" | {r['cache_mib']:>{w}.1f} {r['peak_pss_mib']:>9.1f}"
                f" {r['prefill_tokens_per_s']:>8.1f} {r['decode_tokens_per_s']:>7.2f}")
    print(row)
print()
print(f"{'cache type':>10} | {'cache MiB':>9} {'peak MiB':>9} {'prefill 8K':>10} {'decode at 8K':>12}")
for b, name in (("full", "f32"), ("f16", "f16"), ("bf16", "bf16")):
    r = json.load(open(f"{out}/{b}.8192"))
    print(f"{name:>10} | {r['cache_mib']:>9.1f} {r['peak_pss_mib']:>9.1f}"
          f" {r['prefill_tokens_per_s']:>10.1f} {r['decode_tokens_per_s']:>12.2f}")
PY
