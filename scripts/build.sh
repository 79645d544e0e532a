#!/usr/bin/env bash
# Configures (once) and builds archc into ${ARCHC_BUILD:-build} with Ninja.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${ARCHC_BUILD:-build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py >/dev/null
fi
ninja -C "$build"
