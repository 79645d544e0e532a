#!/usr/bin/env bash
# archc against llama.cpp on the same machine, in one run: one Llama-shaped
# spec (default specs/llama/bench-156m.toml) with random weights, as
# `archc bench --random-weights` and as llama.cpp's llama-bench over a GGUF
# of the same shapes (bench/llama_gguf.py), for each weight type of
# $WEIGHTS (default "f32 bf16 f16"), 1 and 2 threads: the prefill of
# $PROMPT_LEN tokens (default 128; llama-bench's pp128) and $GEN tokens
# decoded after it (default 64; llama-bench's tg64 at depth 128, -d).
# $ROUNDS rounds (default 3) alternate the two engines (which goes first
# swaps each round), $RUNS timed repetitions each (default 5), each call
# between two probes of the ceilings (bench/ceilings.c); each engine's
# figure is the median of its repetitions (llama-bench's samples_ts), then
# the median over the rounds, and each ratio the median of the rounds'
# ratios, so that a slow spell of the VM lands on both engines alike.
# Besides tok/s, each engine's prefill as a share of the FP32 FMA peak
# probed beside it (a bf16 or f16 library's too: the issue's yardstick),
# counting the matmuls' 2 K N a row as each engine computes them (the
# classifier and the last layer's FFN for the last row only; archc's last
# output projection too). Each engine runs as it does by
# default (the script prints llama-bench's settings: flash attention,
# KV-cache types, mmap); archc's cache is f32 (its default), or $KV
# (f32, f16 or bf16: KV=f16 is llama.cpp's default type), its weights on
# huge pages.
#
# llama.cpp: $LLAMA_BENCH (a llama-bench binary, with $GGUF_PY its
# gguf-py directory) where set; else the source that node-llama-cpp
# $NLC_VERSION (default 3.22.1) ships as a git bundle, from the npm
# registry, built once for this CPU (-DGGML_NATIVE=ON, Release, static,
# llama-bench only: 3 minutes on 2 cores) under
# ~/.cache/archc/llama.cpp-nlc$NLC_VERSION-<CPU>, its build logs there.
# llama_gguf.py needs numpy and PyYAML (Debian's python3-numpy,
# python3-yaml).
#   bench/llama-cpp.sh [SPEC]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_round_options "$@"
weights="${WEIGHTS:-f32 bf16 f16}"
kv="${KV:-f32}"
case "$kv" in f32|f16|bf16) ;; *) echo "llama-cpp.sh: KV is f32, f16 or bf16, not '$kv'" >&2; exit 2 ;; esac
bench_weight_types "$weights"
# (The spec first: a spec llama.cpp would compute differently is refused
# before anything is built.)
/usr/bin/python3 bench/llama_gguf.py "$spec" --check

if [ -z "${LLAMA_BENCH:-}" ]; then
  nlc="${NLC_VERSION:-3.22.1}"
  # (Built with -march=native: one build per CPU model and feature set.)
  cpu=$( (grep -m1 'model name' /proc/cpuinfo; grep -m1 '^flags' /proc/cpuinfo) | md5sum | cut -c1-8)
  src="${XDG_CACHE_HOME:-$HOME/.cache}/archc/llama.cpp-nlc$nlc-$cpu"
  if [ ! -x "$src/build/bin/llama-bench" ]; then
    echo "llama-cpp.sh: building llama.cpp (node-llama-cpp $nlc's source) in $src" >&2
    (cd "$out" && npm pack --silent "node-llama-cpp@$nlc" > /dev/null && tar xzf node-llama-cpp-*.tgz) ||
      { echo "llama-cpp.sh: could not fetch node-llama-cpp@$nlc from the npm registry; set LLAMA_BENCH and GGUF_PY to a llama.cpp build instead" >&2; exit 1; }
    rm -rf "$src"
    mkdir -p "$(dirname "$src")"
    git -c advice.detachedHead=false clone -q "$out/package/llama/gitRelease.bundle" "$src"
    cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF > "$src/cmake.log" 2>&1 ||
      { tail -20 "$src/cmake.log" >&2; echo "llama-cpp.sh: cmake failed ($src/cmake.log)" >&2; exit 1; }
    ninja -C "$src/build" llama-bench > "$src/ninja.log" 2>&1 ||
      { tail -20 "$src/ninja.log" >&2; echo "llama-cpp.sh: the build failed ($src/ninja.log)" >&2; exit 1; }
  fi
  LLAMA_BENCH="$src/build/bin/llama-bench"
  GGUF_PY="${GGUF_PY:-$src/gguf-py}"
fi
[ -d "${GGUF_PY:-}" ] || { echo "llama-cpp.sh: GGUF_PY (llama.cpp's gguf-py directory) is not set" >&2; exit 2; }

bench_ceilings
for w in $weights; do
  "$archc" compile "$spec" --weight-type="$w" --kv-type="$kv" -o "$out/$w.so" --quiet
  /usr/bin/python3 bench/llama_gguf.py "$spec" "$out/$w.gguf" "$w" "$GGUF_PY"
done
run_archc() {  # weights, threads, tag
  bench_probed "$out/ceilings.archc.$3" "$2" "$out/archc.$3" \
    "$archc" bench "$out/$1.so" --random-weights --prompt-len "$prompt" \
    --gen "$gen" --threads "$2" --runs "$runs" --json
}
run_llama() {  # weights, threads, tag
  "$out/ceilings" "$2" > "$out/ceilings.llama.$3.before"
  { "$LLAMA_BENCH" -m "$out/$1.gguf" -t "$2" -r "$runs" -o json -p "$prompt" -n 0 \
      > "$out/llama.pp.$3" &&
    "$LLAMA_BENCH" -m "$out/$1.gguf" -t "$2" -r "$runs" -o json -p 0 -n "$gen" \
      -d "$prompt" > "$out/llama.tg.$3"; } 2> "$out/llama.log" ||
    { cat "$out/llama.log" >&2; echo "llama-cpp.sh: llama-bench failed" >&2; exit 1; }
  "$out/ceilings" "$2" > "$out/ceilings.llama.$3.after"
}
for round in $(seq "$rounds"); do
  for t in 1 2; do
    for w in $weights; do
      # (Which engine goes first alternates by round.)
      if (( round % 2 )); then
        run_archc "$w" "$t" "$w.$t.$round"; run_llama "$w" "$t" "$w.$t.$round"
      else
        run_llama "$w" "$t" "$w.$t.$round"; run_archc "$w" "$t" "$w.$t.$round"
      fi
    done
  done
done
/usr/bin/python3 - "$out" "$rounds" "$spec" "$prompt" "$gen" "$kv" $weights <<'PY'
import json, statistics, sys, tomllib
sys.path.insert(0, "bench")
import benchlib
out, rounds, spec_path, prompt, gen = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
kv_type = sys.argv[6]
weights = sys.argv[7:]
benchlib.ceilings(out)
med = statistics.median
spec = tomllib.load(open(spec_path, "rb"))
m, a, f = spec["model"], spec["attention"], spec["ffn"]
d, heads = m["d_model"], a["n_heads"]
kv, hd = a.get("n_kv_heads", heads), a.get("head_dim", d // heads)
qkv, out_proj, ffn = d * (heads + 2 * kv) * hd, heads * hd * d, 3 * d * f["d_ff"]
layer = qkv + out_proj + ffn
# The matmuls' FLOPs of a prefill, as each engine computes them: every
# layer's for each token but the last layer's FFN (llama.cpp's
# inp_out_ids rows; archc's arch-sink-last-token, its output projection
# too) and the classifier, for the last token only.
prefill_flop = {
    e: 2 * (prompt * m["n_layers"] * layer + m["vocab_size"] * d
            - (prompt - 1) * last)
    for e, last in (("archc", out_proj + ffn), ("llama", ffn))}


def probe(engine, tag):
    return benchlib.probed(f"{out}/ceilings.{engine}.{tag}")


def llama(kind, tag):
    """llama-bench's tok/s: the median of its repetitions (archc's figure
    is a median too; llama-bench's avg_ts is a mean)."""
    rows = json.load(open(f"{out}/llama.{kind}.{tag}"))
    return med(rows[0]["samples_ts"])


first = json.load(open(f"{out}/llama.pp.{weights[0]}.1.1"))[0]
print(f"llama.cpp {first['build_commit']}: flash_attn {first['flash_attn']} "
      f"(-1: auto), KV cache {first['type_k']} / {first['type_v']}, "
      f"load mode {first.get('load_mode', first.get('use_mmap'))}, "
      f"n_batch {first['n_batch']}, n_ubatch {first['n_ubatch']}")
print(f"archc: KV cache {kv_type} (--kv-type)")


print(f"\n{m['name']}: prefill of {prompt} tokens (llama-bench pp{prompt}) and "
      f"{gen} tokens decoded after it (tg{gen} at depth {prompt}); tok/s, "
      f"medians of {rounds} rounds; 'of peak': the prefill's matmul FLOPs "
      f"(archc {prefill_flop['archc'] / 1e9:.3f}, llama.cpp "
      f"{prefill_flop['llama'] / 1e9:.3f} GFLOP) a second over the FP32 FMA "
      "peak probed beside each call")
print(f"{'weights':>7} {'thr':>3} {'archc pp':>9} {'of peak':>7} {'llama pp':>9} "
      f"{'of peak':>7} {'ratio':>6} {'archc tg':>9} {'llama tg':>9} {'ratio':>6}")
for w in weights:
    for t in (1, 2):
        tags = [f"{w}.{t}.{r}" for r in range(1, rounds + 1)]
        ap = [json.load(open(f"{out}/archc.{x}"))["prefill_tokens_per_s"] for x in tags]
        ad = [json.load(open(f"{out}/archc.{x}"))["decode_tokens_per_s"] for x in tags]
        lp = [llama("pp", x) for x in tags]
        ld = [llama("tg", x) for x in tags]
        apk = [v * prefill_flop["archc"] / prompt / 1e9 / probe("archc", x)["peak_gflops"] for v, x in zip(ap, tags)]
        lpk = [v * prefill_flop["llama"] / prompt / 1e9 / probe("llama", x)["peak_gflops"] for v, x in zip(lp, tags)]
        print(f"{w:>7} {t:>3} {med(ap):>9.1f} {med(apk):>7.0%} {med(lp):>9.1f} "
              f"{med(lpk):>7.0%} {med(x / y for x, y in zip(ap, lp)):>5.2f}x "
              f"{med(ad):>9.1f} {med(ld):>9.1f} {med(x / y for x, y in zip(ad, ld)):>5.2f}x")
PY
