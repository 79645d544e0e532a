#!/usr/bin/env bash
# Attention at length (issue: flash tiling), on bench-156m-32k (bench-156m
# with a 32K context), against this machine's ceilings measured in the same
# run (bench/ceilings.c), with arch-flash-tiling on (default) and off:
#   1. prefill tok/s at 128, 512 and 2048 tokens, 1 and 2 threads, and the
#      2048-token rate as a share of the 128-token rate;
#   2. the attention kernel alone (bench/attention.c) in prefill at 2048
#      and 8192 tokens: GFLOP/s of its QK^T and PV products (causal pairs)
#      as a share of the FP32 peak;
#   3. decode at context 256, 2K, 4K, 8K and 16K (2 threads): tok/s, the
#      attention kernel's share of a token's time (8 layers x its time at
#      that context, from bench/attention.c) and its K/V read rate as a
#      share of the read bandwidth; prefill tok/s of those prompts and the
#      peak resident memory after them; the kernel alone at 4K context at
#      1 and 2 threads (the decode target).
# Figures are medians of $RUNS repetitions after a warm-up call (1 for the
# 8K and 16K prompts, and for the untiled kernel at 8192 tokens); a decode
# call of the kernel alone, of 100 (300 at 4K), each on its own copy of
# K and V.
#   bench/long-context.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
spec=specs/llama/bench-156m-32k.toml
runs="${RUNS:-3}"
bench_ceilings
cc -O2 -I/usr/include/halide14 bench/attention.c -ldl -o "$out/attention"
"$archc" compile "$spec" -o "$out/tiled.so" --quiet
"$archc" compile "$spec" -o "$out/untiled.so" --quiet --disable-pass=arch-flash-tiling
# Model shape, for the kernel harness: heads, kv heads, head_dim, layers.
read -r heads kvh hd layers < <(/usr/bin/python3 -c '
import sys, tomllib
m = tomllib.load(open(sys.argv[1], "rb"))
print(m["attention"]["n_heads"], m["attention"]["n_kv_heads"],
      m["attention"]["head_dim"], m["model"]["n_layers"])' "$spec")
for b in tiled untiled; do
  nm -D --defined-only "$out/$b.so" | awk '/ T archk_attention_[0-9a-fx_]*$/ {print $3}' > "$out/$b.sym"
  [ "$(wc -l < "$out/$b.sym")" -eq 1 ] || { echo "expected one attention kernel in $b" >&2; exit 1; }
done
bench() { # build threads prompt gen runs -> json
  "$archc" bench "$out/$1.so" --random-weights --prompt-len "$3" --gen "$4" \
    --threads "$2" --runs "$5" --json
}
attn() { # build threads T pos runs -> ms=.. gflops=.. gbs=..
  "$out/attention" "$out/$1.so" "$(cat "$out/$1.sym")" "$heads" "$kvh" "$hd" 0 \
    "$3" "$4" "$2" "$5"
}
for b in tiled untiled; do
  for t in 1 2; do
    for n in 128 512 2048; do bench "$b" "$t" "$n" 1 "$runs" > "$out/prefill.$b.$t.$n"; done
    attn "$b" "$t" 2048 0 "$runs" > "$out/attn.$b.$t.2048"
    r=$runs; [ "$b" = untiled ] && r=1
    attn "$b" "$t" 8192 0 "$r" > "$out/attn.$b.$t.8192"
  done
done
for n in 256 2048 4096 8192 16384; do
  r=$runs; [ "$n" -gt 4096 ] && r=1
  bench tiled 2 "$n" 16 "$r" > "$out/decode.tiled.$n"
  attn tiled 2 1 "$n" 100 > "$out/attn.decode.tiled.$n"
  if [ "$n" -le 2048 ]; then
    bench untiled 2 "$n" 16 "$r" > "$out/decode.untiled.$n"
    attn untiled 2 1 "$n" 20 > "$out/attn.decode.untiled.$n"
  fi
done
# The decode target's point: the kernel alone at 4K context, both thread counts.
for t in 1 2; do attn tiled "$t" 1 4096 300 > "$out/attn.decode4k.$t"; done
/usr/bin/python3 - "$out" "$layers" <<'PY'
import json, os, sys
sys.path.insert(0, "bench")
import benchlib
out, layers = sys.argv[1], int(sys.argv[2])
ceil = benchlib.ceilings(out)
print("\nprefill tok/s (bench-156m-32k)")
print(f"{'build':<9} {'thr':>3} {'128':>8} {'512':>8} {'2048':>8} {'2048/128':>9}")
for b in ("tiled", "untiled"):
    for t in (1, 2):
        r = {n: json.load(open(f"{out}/prefill.{b}.{t}.{n}"))["prefill_tokens_per_s"]
             for n in (128, 512, 2048)}
        print(f"{b:<9} {t:>3} {r[128]:>8.1f} {r[512]:>8.1f} {r[2048]:>8.1f} "
              f"{r[2048] / r[128]:>8.2f}x")
print("\nattention kernel alone, prefill from position 0: GFLOP/s (share of FP32 peak)")
print(f"{'build':<9} {'thr':>3} {'2048 tokens':>18} {'8192 tokens':>18}")
for b in ("tiled", "untiled"):
    for t in (1, 2):
        cells = []
        for n in (2048, 8192):
            a = benchlib.kv(f"{out}/attn.{b}.{t}.{n}")
            cells.append(f"{a['gflops']:>8.1f} ({a['gflops'] / ceil[t]['peak_gflops']:>4.0%})")
        print(f"{b:<9} {t:>3} {cells[0]:>18} {cells[1]:>18}")
print("\ndecode, 2 threads: tok/s, the attention kernel's share of a token, its "
      "K/V read rate (share of bandwidth); prefill of the prompt; peak RSS")
print(f"{'build':<9} {'context':>7} {'decode tok/s':>12} {'attn share':>10} "
      f"{'attn GB/s':>14} {'prefill tok/s':>13} {'peak RSS MiB':>12}")
for b in ("tiled", "untiled"):
    for n in (256, 2048, 4096, 8192, 16384):
        path = f"{out}/decode.{b}.{n}"
        if not os.path.exists(path):
            continue
        d = json.load(open(path))
        a = benchlib.kv(f"{out}/attn.decode.{b}.{n}")
        share = layers * a["ms"] / 1e3 * d["decode_tokens_per_s"]
        print(f"{b:<9} {n:>7} {d['decode_tokens_per_s']:>12.1f} {share:>10.0%} "
              f"{a['gbs']:>7.1f} ({a['gbs'] / ceil[2]['read_gbs']:>4.0%}) "
              f"{d['prefill_tokens_per_s']:>13.1f} {d['peak_rss_mib']:>12.1f}")
print("\ndecode attention kernel alone at 4096 positions (tiled): K/V read rate")
for t in (1, 2):
    a = benchlib.kv(f"{out}/attn.decode4k.{t}")
    print(f"  {t} thread(s): {a['ms']:.3f} ms, {a['gbs']:.1f} GB/s "
          f"({a['gbs'] / ceil[t]['read_gbs']:.0%} of the read bandwidth)")
PY
