# Sourced by every bench/*.sh: runs from the repository root, with $archc,
# a scratch directory $out removed on exit, and bench_ceilings, which
# measures this machine's ceilings (bench/ceilings.c: FP32 FMA peak, read
# bandwidth, the bf16 dot product's and AMX tiles' peaks where the CPU has
# them, the cores' round trip with 2; 1 and 2 threads)
# into $out/ceilings.{1,2} and names the CPU in $out/cpu, for
# bench/benchlib.py to print beside the figures.
cd "$(dirname "${BASH_SOURCE[1]}")/.."
build="${ARCHC_BUILD:-build}"
archc="$build/bin/archc"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
bench_ceilings() {
  cc -O3 -march=native -pthread bench/ceilings.c -o "$out/ceilings"
  for t in 1 2; do "$out/ceilings" "$t" > "$out/ceilings.$t"; done
  grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /' > "$out/cpu"
}
# bench_probed PREFIX THREADS OUTPUT COMMAND...: COMMAND's stdout into
# OUTPUT, between two probes of the ceilings at THREADS threads, into
# PREFIX.before and PREFIX.after (benchlib.probed reads the pair).
bench_probed() {
  local prefix=$1 t=$2 output=$3
  shift 3
  "$out/ceilings" "$t" > "$prefix.before"
  "$@" > "$output"
  "$out/ceilings" "$t" > "$prefix.after"
}
export PYTHONDONTWRITEBYTECODE=1
# bench_whole_numbers NAME:VALUE...: exits (status 2, naming the
# variable) unless every VALUE is a whole number >= 1.
bench_whole_numbers() {
  local v
  for v in "$@"; do
    [[ ${v#*:} =~ ^[1-9][0-9]*$ ]] || { echo "$(basename "$0"): ${v%%:*} must be a whole number >= 1, not '${v#*:}'" >&2; exit 2; }
  done
}
# bench_round_options [SPEC]: the options of the benchmarks that alternate
# their libraries over rounds (profile.sh, weight-type.sh, llama-cpp.sh):
# $spec (SPEC, default bench-156m), $prompt, $gen, $runs and $rounds from
# $PROMPT_LEN (128), $GEN (64), $RUNS (5) and $ROUNDS (3), each checked
# by bench_whole_numbers.
bench_round_options() {
  spec="${1:-specs/llama/bench-156m.toml}"
  prompt="${PROMPT_LEN:-128}" gen="${GEN:-64}" runs="${RUNS:-5}" rounds="${ROUNDS:-3}"
  bench_whole_numbers "ROUNDS:$rounds" "RUNS:$runs" "GEN:$gen" "PROMPT_LEN:$prompt"
}
# bench_weight_types LIST: exits (status 2) unless every word of LIST (a
# $WEIGHTS) is a weight type archc compile takes.
bench_weight_types() {
  local w
  for w in $1; do
    case $w in f32|bf16|f16) ;; *) echo "$(basename "$0"): WEIGHTS takes f32, bf16 and f16, not '$w'" >&2; exit 2 ;; esac
  done
}
