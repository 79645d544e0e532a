#!/usr/bin/env bash
# Builds the libFuzzer harnesses of test/fuzz with clang-19 (ASan + UBSan +
# libFuzzer) and runs each for SECONDS, starting from its seed corpus in
# test/fuzz/corpus/NAME (runs keep what they find in build-fuzz/corpus/NAME,
# outside git). Any crash, leak, timeout or sanitizer report fails the run.
#
#   scripts/fuzz.sh SECONDS [NAME ...]    (default: every harness)
#   ARCHC_FUZZ_RUNS=1000000 scripts/fuzz.sh 0   (a fixed number of runs each)
#
# Needs archc built (it writes the models' glue and kernels) and clang-19 with
# libclang-rt-19-dev (scripts/install-deps.sh installs both). Built with
# NDEBUG, as the release build is: TOML++'s internal debug assertions are
# stricter than its error paths (it reports "[)" as an error either way).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:?usage: scripts/fuzz.sh SECONDS [NAME ...]}"
shift
all=(spec hfconfig safetensors index llama2c gguf tokenizer abi)
names=("$@")
[ "${#names[@]}" -gt 0 ] || names=("${all[@]}")
build="${ARCHC_BUILD:-build}"
out="${ARCHC_FUZZ_BUILD:-build-fuzz}"
mkdir -p "$out"
cc=clang-19
cxx=clang++-19
flags=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined)

# The loader harnesses see the tiny model through its generated glue, with
# stub kernels and a stub Halide runtime (they never run a kernel).
glue() {
  local spec=$1 dir="$out/glue-$2"
  mkdir -p "$dir"
  "$build"/bin/archc compile "$spec" --emit=c -o "$dir/glue.c"
  sed -n 's/^int \(archk_[A-Za-z0-9_]*\)(.*);$/int \1(void) { return 0; }/p' \
    "$dir/glue.c" > "$dir/kernel_stubs.c"
  echo "$dir/glue.c $dir/kernel_stubs.c test/fuzz/halide_stubs.c"
}
tiny=$(glue specs/tiny/llama-gqa-half-split.toml tiny)
# fuzz_abi runs the micro model's real compiled kernels and Halide runtime;
# its glue and the runtime are rebuilt here with the sanitizers.
kept=$(ARCHC_KEEP_TEMPS=1 "$build"/bin/archc compile test/fuzz/micro.toml \
         -o "$out/micro.so" --quiet 2>&1 | sed -n 's/^archc: kept build files in //p')
rm -rf "$out/micro" && mv "$kept" "$out/micro"
micro="$out/micro/glue.c $(ls "$out"/micro/archk_*.o) $out/micro/halide_runtime.o"
inc=(-Iruntime/include -I/usr/include/halide14 -Itest/fuzz)

build_one() {
  local name=$1 bin="$out/fuzz_$1"
  case "$name" in
    spec)
      "$cxx" "${flags[@]}" -std=c++17 -fexceptions -DTOML_HEADER_ONLY=1 -DNDEBUG -I. \
        compiler/spec/SpecParser.cpp compiler/spec/Checkpoint.cpp \
        test/fuzz/fuzz_spec.cpp -o "$bin" ;;
    hfconfig)
      # The importer's JSON parser is LLVM's (libLLVM, uninstrumented).
      "$cxx" "${flags[@]}" -std=c++17 -fexceptions -DTOML_HEADER_ONLY=1 -DNDEBUG -I. \
        -I/usr/lib/llvm-19/include compiler/import/HFConfig.cpp \
        compiler/spec/SpecParser.cpp compiler/spec/Checkpoint.cpp \
        test/fuzz/fuzz_hfconfig.cpp -o "$bin" -L/usr/lib/llvm-19/lib \
        -lLLVM-19 -Wl,-rpath,/usr/lib/llvm-19/lib ;;
    *)
      local model=$tiny
      [ "$name" != abi ] || model=$micro
      # shellcheck disable=SC2086
      "$cc" "${flags[@]}" -std=c11 -D_GNU_SOURCE "${inc[@]}" runtime/src/*.c \
        $model "test/fuzz/fuzz_$name.c" -o "$bin" -lm -lpthread -ldl ;;
  esac
}

passed=0
failed=0
for name in "${names[@]}"; do
  echo "fuzz: building fuzz_$name" >&2
  build_one "$name"
  corpus="$out/corpus/$name"
  mkdir -p "$corpus" "$out/artifacts/$name"
  log="$out/fuzz_$name.log"
  rc=0
  limit=(-max_total_time="$seconds")
  [ -z "${ARCHC_FUZZ_RUNS:-}" ] || limit=(-runs="$ARCHC_FUZZ_RUNS")
  "$out/fuzz_$name" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/$name/" \
    "$corpus" "test/fuzz/corpus/$name" > "$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz_$name: ok, ${execs:-0} executions in $SECONDS s"
    passed=$((passed + 1))
  else
    echo "fuzz_$name: FAILED (exit $rc), ${execs:-0} executions; log: $log"
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5 || true
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
