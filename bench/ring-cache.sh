#!/usr/bin/env bash
# Sliding-window caches at length (issue: attention at length): bench-156m-32k
# as it is (every layer's caches keep every position) against the same model
# Mistral-shaped (window 4096 in every layer: ring caches of 4096 + 255 rows,
# arch-lower-to-kernels' ringRows). For prompts of 1K, 4K, 8K and 16K tokens
# then 16 decode steps, 2 threads: the cache MiB the library reports, the
# peak resident memory of the run, prefill and decode tok/s. One run after a
# warm-up call per figure (RUNS to change).
#   bench/ring-cache.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ARCHC_BUILD:-build}"
archc="$build/bin/archc"
spec=specs/llama/bench-156m-32k.toml
runs="${RUNS:-1}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /'
sed -e 's/^name = "llama-156m-32k"/name = "llama-156m-32k-swa"/' \
    -e '/^\[attention\]$/a window = 4096' "$spec" > "$out/swa.toml"
"$archc" compile "$spec" -o "$out/full.so" --quiet
"$archc" compile "$out/swa.toml" -o "$out/swa.so" --quiet
for n in 1024 4096 8192 16384; do
  for b in full swa; do
    # Each in a process of its own: peak memory is per run.
    "$archc" bench "$out/$b.so" --random-weights --prompt-len "$n" --gen 16 \
      --threads 2 --runs "$runs" --json > "$out/$b.$n"
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print(f"{'context':>8} | {'full: cache MiB':>15} {'peak MiB':>9} {'prefill':>8} {'decode':>7}"
      f" | {'window 4096: cache MiB':>22} {'peak MiB':>9} {'prefill':>8} {'decode':>7}")
for n in (1024, 4096, 8192, 16384):
    row = f"{n:>8}"
    for b, w in (("full", 15), ("swa", 22)):
        r = json.load(open(f"{out}/{b}.{n}"))
        row += (f" | {r['cache_mib']:>{w}.1f} {r['peak_rss_mib']:>9.1f}"
                f" {r['prefill_tokens_per_s']:>8.1f} {r['decode_tokens_per_s']:>7.2f}")
    print(row)
PY
