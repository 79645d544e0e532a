#!/usr/bin/env bash
# Prefill and decode throughput of the compiled libraries, 1 and 2 threads,
# against this machine's own ceilings measured in the same run
# (bench/ceilings.c: FP32 FMA peak, read bandwidth): achieved prefill
# GFLOP/s (the classifier and the last layer after its attention counted
# for the last token only, as computed: `archc check`'s last_row_flops) as
# a share of the peak (every build counted with the default build's work,
# the FLOPs the model needs: a build that computes more, without
# arch-sink-last-token, shows the time it spends on it as a lower share),
# decode weight-streaming GB/s as a share of the read
# bandwidth (each row's shares of the ceilings probed just before and
# after its call, the higher of the two), the first forward call against
# the median of the later ones, and resident memory after load and at the
# runs' fullest (caches and activations too) against the weights' bytes
# and the caches'. Each spec is
# also built with each pass of the default pipeline disabled, side by side
# (a pass that leaves a spec's IR unchanged is skipped); PyTorch eager fp32
# prefill over OpenBLAS (Debian's torch uses the libblas.so.3 alternative:
# libopenblas0-pthread, installed by scripts/install-deps.sh; with this
# image's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, which halve it) is
# the peer column for the default build; with another BLAS behind torch
# (the reference BLAS runs a matmul at a few GFLOP/s) the column is left
# out. Figures are medians of $RUNS repetitions after a warm-up call.
#   bench/run.sh [SPEC...]   (default: the 156M Llama and Falcon shapes)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
specs=("$@")
[ "${#specs[@]}" -gt 0 ] || specs=(specs/llama/bench-156m.toml specs/falcon/bench-falcon-160m.toml)
prompt="${PROMPT_LEN:-128}" gen="${GEN:-64}" runs="${RUNS:-5}"
passes=(arch-absorb-mla arch-sink-last-token arch-fuse-qkv arch-fuse-parallel-block arch-fuse-glu
        arch-fuse-residual arch-fuse-rope arch-flash-tiling arch-pack-weights arch-hoist-param-prep)
bench_ceilings
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
case "$blas" in *openblas*) echo "$blas" > "$out/blas" ;; *) : > "$out/blas" ;; esac
for spec in "${specs[@]}"; do
  name="$(basename "$spec" .toml)"
  "$archc" check "$spec" --json --context "$prompt" > "$out/$name.check.json"
  "$archc" compile "$spec" --emit=mlir > "$out/$name.default.mlir"
  variants=(default)
  for p in "${passes[@]}"; do
    "$archc" compile "$spec" --emit=mlir --disable-pass="$p" > "$out/$name.no-$p.mlir"
    cmp -s "$out/$name.default.mlir" "$out/$name.no-$p.mlir" || variants+=("no-$p")
  done
  for v in "${variants[@]}"; do
    flag=()
    [ "$v" = default ] || flag=(--disable-pass="${v#no-}")
    start=$(date +%s.%N)
    "$archc" compile "$spec" -o "$out/$name.$v.so" --quiet "${flag[@]}"
    echo "$(date +%s.%N) - $start" | bc > "$out/$name.$v.compile"
    for t in 1 2; do
      # (Each row's shares are of the ceilings probed beside its call.)
      bench_probed "$out/ceilings.$name.$v.$t" "$t" "$out/$name.$v.$t.json" \
        "$archc" bench "$out/$name.$v.so" --random-weights --prompt-len "$prompt" \
        --gen "$gen" --threads "$t" --runs "$runs" --json
    done
  done
  for t in 1 2; do
    if [ -s "$out/blas" ]; then
      OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS="$t" /usr/bin/python3 \
        test/reference/archref.py bench --spec "$spec" --prompt-len "$prompt" \
        --threads "$t" --runs "$runs" > "$out/$name.$t.torch"
    else
      echo 0 > "$out/$name.$t.torch"
    fi
  done
  printf '%s\n' "${variants[@]}" > "$out/$name.variants"
done
/usr/bin/python3 - "$out" "${specs[@]}" <<'PY'
import json, os, sys
sys.path.insert(0, "bench")
import benchlib
out, specs = sys.argv[1], sys.argv[2:]
benchlib.ceilings(out)  # (the start's, printed; the shares use the probes)
blas = open(f"{out}/blas").read().strip()
print(f"vs torch: PyTorch eager fp32 over {blas}" if blas else
      "vs torch: left out (torch's BLAS is not OpenBLAS; install libopenblas0-pthread)")
print(f"{'model':<18} {'build':<27} {'thr':>3} {'compile s':>9} {'prefill tok/s':>13} "
      f"{'GFLOP/s':>8} {'of peak':>7} {'vs torch':>8} {'decode tok/s':>12} "
      f"{'GB/s':>6} {'of bw':>6} {'1st/med':>7} {'load MiB':>8} {'run MiB':>8} "
      f"{'weights':>7} {'caches':>6}")
for spec in specs:
    name = os.path.basename(spec)[:-5]
    chk = json.load(open(f"{out}/{name}.check.json"))
    for v in open(f"{out}/{name}.variants").read().split():
        comp = float(open(f"{out}/{name}.{v}.compile").read())
        for t in (1, 2):
            b = json.load(open(f"{out}/{name}.{v}.{t}.json"))
            c = benchlib.probed(f"{out}/ceilings.{name}.{v}.{t}")
            n = b["prompt_len"]
            flops = (chk["prefill_flops_per_token"]
                     - chk["last_row_flops"] * (n - 1) / n)
            gf = b["prefill_tokens_per_s"] * flops / 1e9
            gb = b["decode_tokens_per_s"] * chk["decode_weight_bytes"] / 1e9
            torch = float(open(f"{out}/{name}.{t}.torch").read())
            vs = (f"{b['prefill_tokens_per_s'] / torch:>7.2f}x"
                  if v == "default" and torch else f"{'':>8}")
            print(f"{b['model']:<18} {v:<27} {t:>3} {comp:>9.2f} "
                  f"{b['prefill_tokens_per_s']:>13.1f} {gf:>8.1f} "
                  f"{gf / c['peak_gflops']:>6.0%} {vs} {b['decode_tokens_per_s']:>12.1f} "
                  f"{gb:>6.1f} {gb / c['read_gbs']:>5.0%} "
                  f"{b['first_prefill_tokens_per_s'] / b['prefill_tokens_per_s']:>7.2f} "
                  f"{b['load_rss_mib']:>8.1f} {b['run_rss_mib']:>8.1f} "
                  f"{b['weight_mib']:>7.1f} {b['cache_mib']:>6.1f}")
PY
