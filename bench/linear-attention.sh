#!/usr/bin/env bash
# Linear attention at length (issue 12), 2 threads, one run after a warm-up
# call per figure (RUNS to change): bench-156m-32k as it is (softmax
# attention, every layer's KV caches keep every position), with linear
# attention in every layer (linear = "elu1": a recurrent state of 4 x 64 x
# 65 floats per layer in place of its caches), and as a 3 linear : 1
# softmax hybrid (every fourth layer from layer 3 keeps softmax), after
# prompts of 256, 1K, 4K and 16K tokens: the decode time per token (16
# steps), the cache MiB the library reports, the peak memory of the run
# (PSS) and the prefill rate. Linear attention's decode time and state stay
# flat; softmax decode reads a cache that grows with the position.
#   bench/linear-attention.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
spec=specs/llama/bench-156m-32k.toml
runs="${RUNS:-1}"
bench_ceilings
sed -e 's/^name = "llama-156m-32k"/name = "llama-156m-32k-linear"/' \
    -e '/^\[attention\]$/a linear = "elu1"' "$spec" > "$out/linear.toml"
{
  cat "$out/linear.toml"
  printf '\n[[layer_overrides]]\nevery = 4\noffset = 3\n[layer_overrides.attention]\nlinear = "none"\n'
} | sed -e 's/-linear"$/-hybrid"/' > "$out/hybrid.toml"
"$archc" compile "$spec" -o "$out/softmax.so" --quiet
"$archc" compile "$out/linear.toml" -o "$out/linear.so" --quiet
"$archc" compile "$out/hybrid.toml" -o "$out/hybrid.so" --quiet
for n in 256 1024 4096 16384; do
  for b in softmax linear hybrid; do # each in a process of its own
    "$archc" bench "$out/$b.so" --random-weights --prompt-len "$n" --gen 16 \
      --threads 2 --runs "$runs" --json > "$out/$b.$n"
  done
done
PYTHONPATH=bench /usr/bin/python3 - "$out" <<'PY'
import json, sys
import benchlib
out = sys.argv[1]
benchlib.ceilings(out)  # the CPU and its ceilings, measured in this run
names = (("softmax", "softmax (as it is)"), ("linear", "linear, every layer"),
         ("hybrid", "3 linear : 1 softmax"))
print(f"{'position':>8}" + "".join(
    f" | {n + ': decode ms':>28} {'cache MiB':>9} {'peak MiB':>8} {'prefill':>8}"
    for _, n in names))
for n in (256, 1024, 4096, 16384):
    row = f"{n:>8}"
    for b, name in names:
        r = json.load(open(f"{out}/{b}.{n}"))
        row += (f" | {1000 / r['decode_tokens_per_s']:>28.2f}"
                f" {r['cache_mib']:>9.1f} {r['peak_pss_mib']:>8.1f}"
                f" {r['prefill_tokens_per_s']:>8.1f}")
    print(row)
for b, name in names:
    first = json.load(open(f"{out}/{b}.256"))
    last = json.load(open(f"{out}/{b}.16384"))
    print(f"{name}: decode time at 16K / at 256 = "
          f"{first['decode_tokens_per_s'] / last['decode_tokens_per_s']:.2f}, "
          f"fixed cache bytes {last['fixed_cache_bytes']:,}, "
          f"per token {last['cache_bytes_per_token']:,}")
PY
