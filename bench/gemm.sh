#!/usr/bin/env bash
# archc's GEMM (the linear kernel over packed weights, as prefill runs it)
# against OpenBLAS sgemm on the same shapes, in one run, against this
# machine's ceilings (bench/ceilings.c): every linear of bench-156m (K, N
# 1024-2816) and of one Llama-3-8B-shaped layer (4096 -> 6144 fused QKV,
# 4096, 14336 gate/up; 14336 -> 4096 down), M = $M token rows (default
# 128, a prefill of 128 tokens), f32 and bf16 weights (bf16 inputs: the
# bf16 dot product: AMX tiles where the CPU has them, else vdpbf16ps where
# it has AVX512-BF16, against that unit's ceiling; and --matmul-input=f32:
# widened), 1 and 2 threads;
# medians of $RUNS calls (bench/gemm.c), each row's shares of the peak
# probed just before and just after its call (the higher of the two: a
# probe only reads low), so that the VM's drift over the run's minutes
# lands on the ceiling and the call alike (the probes, each over a 1 GiB
# buffer, make a round about two minutes). $ROUNDS rounds (default 1)
# measure every shape again in turn; each figure printed is then the
# median over the rounds (a share: of the round's shares, each against
# its own probes), so that a slow spell of the VM in one round does not
# decide a shape's row. With COLD=1, archc's calls go
# through packed copies of each weight in turn, 512 MiB of them, so that
# every call reads its panels from memory, as a model's forward pass does
# (OpenBLAS's stay on one copy, as without COLD). OpenBLAS
# is Debian's libopenblas0-pthread (scripts/install-deps.sh), run with
# this image's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (they halve
# its speed).
#   bench/gemm.sh    COLD=1 ROUNDS=3 bench/gemm.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
m="${M:-128}" runs="${RUNS:-5}" rounds="${ROUNDS:-1}" copies=1
bench_whole_numbers "M:$m" "RUNS:$runs" "ROUNDS:$rounds"
[ "${COLD:-0}" = 1 ] && copies=0
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OMP_WAIT_POLICY=PASSIVE
bench_ceilings
cc -O2 -I/usr/include/halide14 bench/gemm.c -ldl -lm -o "$out/gemm"
sed -e 's/^name = .*/name = "llama3-8b-layer"/' -e 's/^vocab_size = .*/vocab_size = 256/' \
    -e 's/^d_model = .*/d_model = 4096/' -e 's/^n_layers = .*/n_layers = 1/' \
    -e 's/^n_heads = .*/n_heads = 32/' -e 's/^n_kv_heads = .*/n_kv_heads = 8/' \
    -e 's/^head_dim = .*/head_dim = 128/' -e 's/^d_ff = .*/d_ff = 14336/' \
    specs/llama/bench-156m.toml > "$out/llama3-8b-layer.toml"
for spec in specs/llama/bench-156m.toml "$out/llama3-8b-layer.toml"; do
  name=$(basename "$spec" .toml)
  for w in f32 bf16 bf16w; do
    case $w in
      f32) flags="--weight-type=f32" bits=32 suffix="" ;;
      bf16) flags="--weight-type=bf16 --matmul-input=bf16" bits=16p suffix=x2x1 ;;
      bf16w) flags="--weight-type=bf16 --matmul-input=f32" bits=16 suffix=x2 ;;
    esac
    # (Without arch-fuse-glu, arch-fuse-residual and arch-fuse-rope: the
    # QKV, gate, up, output and down projections as the plain GEMMs they
    # are there, their gating, residual add and RoPE not part of the
    # figure; without arch-sink-last-token, which would leave the
    # one-layer spec's projections after its attention one row each.)
    "$archc" compile "$spec" $flags --disable-pass=arch-fuse-glu \
      --disable-pass=arch-fuse-residual --disable-pass=arch-fuse-rope \
      --disable-pass=arch-sink-last-token -o "$out/$name.$w.so" --quiet
    # Every linear but the one-row classifier (its one_row field is 1).
    # (A bf16 dot product's takes x rounded by its producer, x11x2:
    # archk-bf16-inputs; bench/gemm.c then rounds it.)
    lins=$(nm -D "$out/$name.$w.so" |
      grep -oE "archk_linear_[0-9]+x[0-9]+x0x64x0$suffix(x11x2)?\$" | sort -u || true)
    # (Four a spec: QKV, output, gate and up, down. A kernel name that
    # gained a field would drop out of the pattern: say so.)
    if [ "$(echo "$lins" | grep -c .)" != 4 ]; then
      echo "gemm.sh: expected 4 linears in $name ($w), found: ${lins:-none}" >&2
      exit 1
    fi
    for lin in $lins; do
      read -r k n < <(echo "$lin" | sed -E 's/archk_linear_([0-9]+)x([0-9]+)x.*/\1 \2/')
      echo "$name $w $bits ${suffix:--} $lin $k $n" # ("-": none)
    done
  done
done > "$out/shapes"
for round in $(seq "$rounds"); do
  while read -r name w bits suffix lin k n; do
    suffix=${suffix#-}
    for t in 1 2; do
      bench_probed "$out/probe.$w.$k.$n.$t.$round" "$t" "$out/call" \
        "$out/gemm" "$out/$name.$w.so" "archk_pack_${k}x${n}x64x1$suffix" \
        "$lin" "$k" "$n" "$m" "$t" "$runs" "$bits" "$copies"
      echo "$round $w $k $n $t $(cat "$out/call")"
    done
  done < "$out/shapes"
done > "$out/results"
/usr/bin/python3 - "$out" "$m" "$copies" "$rounds" <<'PY'
import statistics, sys
sys.path.insert(0, "bench")
import benchlib
out, m, copies, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
benchlib.ceilings(out)  # (the start's, printed; the shares use the probes)
fp32 = lambda c: c["peak_gflops"]
bf16 = lambda c: benchlib.bf16_peak(c) or c["peak_gflops"]
# Per shape, each round's figures and the ceilings probed beside them.
runs, probes = {}, {}
for line in open(f"{out}/results"):
    rnd, w, k, n, t, *kv = line.split()
    key = w, int(k), int(n), int(t)
    runs.setdefault(key, []).append({a: float(b) for a, b in (x.split("=") for x in kv)})
    probes.setdefault(key, []).append(
        benchlib.probed(f"{out}/probe.{w}.{k}.{n}.{t}.{rnd}"))
med = statistics.median
def row(key):
    """A shape's figures, medians over the rounds, and its shares of the
    FP32 peak (`share`) and of its own unit's (`unit`), medians of the
    rounds' shares."""
    w, rs, ps = key[0], runs[key], probes[key]
    unit = bf16 if w == "bf16" else fp32
    return {"archc": med(r["archc_gflops"] for r in rs),
            "blas": med(r["openblas_gflops"] for r in rs),
            "share": med(r["archc_gflops"] / fp32(p) for r, p in zip(rs, ps)),
            "blas_share": med(r["openblas_gflops"] / fp32(p) for r, p in zip(rs, ps)),
            "unit": med(r["archc_gflops"] / unit(p) for r, p in zip(rs, ps)),
            "vs": med(r["archc_gflops"] / r["openblas_gflops"] if r["openblas_gflops"] else 0 for r in rs),
            "diff": max(r["max_rel_diff"] for r in rs)}
rows = {key: row(key) for key in runs}
# The bf16 dot product over f32, the median of each round's ratio (its
# calls beside the f32 ones of the same round).
for (w, k, n, t), r in rows.items():
    b = runs.get(("bf16", k, n, t))
    if w == "f32" and b:
        r["bf16_vs"] = med(x["archc_gflops"] / y["archc_gflops"]
                           for x, y in zip(b, runs[w, k, n, t]))
for t in (1, 2):
    for name, peak, ws in (("FP32", fp32, ("f32", "bf16w")), ("bf16", bf16, ("bf16",))):
        probed = [peak(c) for (w, _, _, tt), cs in probes.items()
                  if tt == t and w in ws for c in cs]
        if probed:
            print(f"{name} peak probed beside the {t}-thread calls: "
                  f"{min(probed):.1f}-{max(probed):.1f} GFLOP/s")
print(f"\nGEMM of {m} rows, GFLOP/s (share of the FP32 FMA peak probed beside "
      "the call)"
      + ("; archc's weights from memory (COLD=1)" if copies == 0 else "")
      + (f"; medians of {rounds} rounds" if rounds > 1 else ""))
print("(bf16: the bf16 dot product, share of its unit's peak: AMX tiles' where "
      "the CPU has them, else vdpbf16ps'; "
      "bf16 widened: f32 inputs, share of the FP32 peak)")
print(f"{'K':>6} {'N':>6} {'thr':>3} {'archc f32':>15} {'OpenBLAS':>15} "
      f"{'archc/BLAS':>10} {'archc bf16':>15} {'bf16/f32':>8} "
      f"{'bf16 widened':>15} {'diff':>8}")
for (w, k, n, t), r in sorted(rows.items(), key=lambda x: (x[0][3], x[0][1], x[0][2])):
    if w != "f32":
        continue
    none = {"archc": 0, "unit": 0}
    rb, rw = rows.get(("bf16", k, n, t), none), rows.get(("bf16w", k, n, t), none)
    vs = f"{r['vs']:>9.2f}x" if r["blas"] else f"{'-':>10}"
    print(f"{k:>6} {n:>6} {t:>3} {r['archc']:>8.1f} ({r['share']:>4.0%}) "
          f"{r['blas']:>8.1f} ({r['blas_share']:>4.0%}) {vs} {rb['archc']:>8.1f} ({rb['unit']:>4.0%}) "
          f"{r.get('bf16_vs', 0):>7.2f}x {rw['archc']:>8.1f} ({rw['unit']:>4.0%}) "
          + (f"{r['diff']:>8.1e}" if r["blas"] else f"{'-':>8}"))
PY
