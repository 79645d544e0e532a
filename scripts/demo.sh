#!/usr/bin/env bash
# The main job on a fresh machine: install, build, compile stories15M into a
# shared library and tell a story from "Once upon a time".
#   scripts/demo.sh [extra archc run options, e.g. -n 256 --temperature 0.8]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
models="$(scripts/fetch-stories15m.sh)"
build="${ARCHC_BUILD:-build}"
"$build"/bin/archc compile specs/llama/stories15M.toml -o "$build"/libstories15M.so
"$build"/bin/archc run "$build"/libstories15M.so \
  --weights "$models"/stories15M.bin --tokenizer "$models"/tokenizer.bin \
  --prompt "Once upon a time" -n 200 "$@"
