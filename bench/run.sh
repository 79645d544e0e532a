#!/usr/bin/env bash
# Prefill and decode throughput of the compiled libraries, 1 and 2 threads,
# with achieved GFLOP/s (prefill; the classifier counted for the last
# token only, as computed), weight-streaming GB/s (decode), the ratio to
# PyTorch eager fp32 prefill on the same shapes and threads, and the
# 2-thread / 1-thread ratio. Figures are medians of $RUNS repetitions.
#   bench/run.sh [SPEC...]   (default: stories15M and the 156M Llama shape)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ARCHC_BUILD:-build}"
archc="$build/bin/archc"
specs=("$@")
[ "${#specs[@]}" -gt 0 ] || specs=(specs/llama/stories15M.toml specs/llama/bench-156m.toml)
prompt="${PROMPT_LEN:-128}" gen="${GEN:-64}" runs="${RUNS:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
for spec in "${specs[@]}"; do
  name="$(basename "$spec" .toml)"
  start=$(date +%s.%N)
  "$archc" compile "$spec" -o "$out/lib$name.so" --quiet
  compile=$(echo "$(date +%s.%N) - $start" | bc)
  "$archc" check "$spec" --json --context "$prompt" > "$out/$name.check.json"
  for t in 1 2; do
    "$archc" bench "$out/lib$name.so" --random-weights --prompt-len "$prompt" \
      --gen "$gen" --threads "$t" --runs "$runs" --json > "$out/$name.$t.json"
    OMP_WAIT_POLICY=passive /usr/bin/python3 test/reference/archref.py bench \
      --spec "$spec" --prompt-len "$prompt" --threads "$t" --runs "$runs" \
      > "$out/$name.$t.torch"
  done
  echo "$compile" > "$out/$name.compile"
done
/usr/bin/python3 - "$out" "${specs[@]}" <<'PY'
import json, os, sys
out, specs = sys.argv[1], sys.argv[2:]
print(f"{'model':<12} {'thr':>3} {'compile s':>9} {'prefill tok/s':>13} {'GFLOP/s':>8} "
      f"{'vs torch':>8} {'decode tok/s':>12} {'GB/s':>6} {'peak MiB':>8}")
for spec in specs:
    name = os.path.basename(spec)[:-5]
    chk = json.load(open(f"{out}/{name}.check.json"))
    comp = float(open(f"{out}/{name}.compile").read())
    r = {t: json.load(open(f"{out}/{name}.{t}.json")) for t in (1, 2)}
    for t in (1, 2):
        b = r[t]
        n = b["prompt_len"]
        flops = chk["prefill_flops_per_token"] - chk["classifier_flops_per_token"] * (n - 1) / n
        gf = b["prefill_tokens_per_s"] * flops / 1e9
        gb = b["decode_tokens_per_s"] * chk["decode_weight_bytes"] / 1e9
        torch_tps = float(open(f"{out}/{name}.{t}.torch").read())
        print(f"{b['model']:<12} {t:>3} {comp:>9.2f} {b['prefill_tokens_per_s']:>13.1f} "
              f"{gf:>8.1f} {b['prefill_tokens_per_s'] / torch_tps:>7.2f}x "
              f"{b['decode_tokens_per_s']:>12.1f} {gb:>6.1f} {b['peak_rss_mib']:>8.1f}")
    p = r[2]["prefill_tokens_per_s"] / r[1]["prefill_tokens_per_s"]
    d = r[2]["decode_tokens_per_s"] / max(r[1]["decode_tokens_per_s"], 1e-9)
    print(f"{'':<12} 2/1 thread ratio: prefill {p:.2f}x, decode {d:.2f}x")
PY
