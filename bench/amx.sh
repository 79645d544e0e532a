#!/usr/bin/env bash
# AMX through Halide 14 (issue 11): a bf16 matmul of $M x $N x $K (default
# 128 x 1024 x 1024, a bench-156m prefill's attention projection) scheduled
# for AMX tiles (bench/amx.cpp) with each tile shape and reduction split,
# on one thread, beside this machine's ceilings (bench/ceilings.c): which
# shapes Halide 14 turns into AMX instructions, how many, and the GFLOP/s
# against the FP32 FMA and bf16 dot-product peaks. On a CPU without AMX
# it says so and stops.
#   bench/amx.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! grep -qw amx_bf16 /proc/cpuinfo; then
  echo "this CPU has no AMX-BF16: nothing to measure"; exit 0
fi
m="${M:-128}" n="${N:-1024}" k="${K:-1024}"
bench_ceilings
g++ -O2 -std=c++17 -I/usr/include/halide14 bench/amx.cpp -lHalide14 -o "$out/amx"
for shape in "16 16 2" "8 16 2" "16 8 2" "16 16 4" "16 16 32"; do
  HL_NUM_THREADS=1 "$out/amx" "$m" "$n" "$k" $shape "$out/amx.s" \
    > "$out/amx.${shape// /x}" 2> /dev/null
done
/usr/bin/python3 - "$out" "$m" "$n" "$k" <<'PY'
import sys
sys.path.insert(0, "bench")
import benchlib
out, m, n, k = sys.argv[1], *sys.argv[2:]
ceil = benchlib.ceilings(out)[1]
print(f"\nbf16 matmul {m} x {n} x {k}, AMX tiles through Halide 14, 1 thread")
print("tile x,y  K/instr  result    tdpbf16ps  GFLOP/s  of FP32 peak  of bf16 peak")
for shape in ("16x16x2", "8x16x2", "16x8x2", "16x16x4", "16x16x32"):
    tx, ty, tr = shape.split("x")
    r = benchlib.kv(f"{out}/amx.{shape}")
    if r.get("refused", 1):
        print(f"{tx:>3},{ty:<5} {tr:>7}  refused by Halide 14")
        continue
    g = r["gflops"]
    bf = ceil.get("bf16_gflops", 0)
    print(f"{tx:>3},{ty:<5} {tr:>7}  err {r['max_rel_err']:.0e} {int(r['tdpbf16ps']):>9} {g:>8.1f} "
          f"{g / ceil['peak_gflops']:>12.0%} " + (f"{g / bf:>12.0%}" if bf else ""))
PY
