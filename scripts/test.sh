#!/usr/bin/env bash
# Everything the tests need on a fresh machine, then every test:
# install, build, fetch the stories15M model and the tokenizer.json test
# data, run ctest (lit suites).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
scripts/fetch-stories15m.sh >/dev/null
scripts/fetch-tokenizers.sh >/dev/null
build="${ARCHC_BUILD:-build}"
cd "$build"
ctest --output-on-failure -j2
