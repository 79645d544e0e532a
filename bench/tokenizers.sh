#!/usr/bin/env bash
# Tokenizer encode throughput (issue 13), one core: the five tokenizer.json
# files of scripts/fetch-tokenizers.sh over the 5,000-record test corpus
# (test/e2e/tokenizer/make_corpus.py, 0.85 MB), archrt-tokenize against the
# reference, @lenml/tokenizers 3.7.2 under node (transformers.js'
# tokenizers, with its 10,000-word cache warm). Each side encodes the whole
# corpus once to warm up, then 5 times; the median pass gives MB/s (UTF-8
# input bytes, 1 MB = 1e6 bytes). Loading the tokenizer is not counted.
#   bench/tokenizers.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cache="$(scripts/fetch-tokenizers.sh)"
export ARCHC_TOKENIZERS_NODE_MODULES="$cache/node_modules"
/usr/bin/python3 test/e2e/tokenizer/make_corpus.py --out "$out/corpus.bin"
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /'
printf '%-12s %10s %14s %7s\n' tokenizer "archc MB/s" "reference MB/s" ratio
for m in llama2 llama3 qwen3 gemma3 deepseek_v3; do
  ours=$(taskset -c 0 "$build/bin/archrt-tokenize" "$cache/$m/tokenizer.json" \
           --records "$out/corpus.bin" --bench | sed -n 's/^encode: \([0-9.]*\) MB.*/\1/p')
  ref=$(taskset -c 0 node test/e2e/tokenizer/reference.mjs "$cache/$m" \
          "$out/corpus.bin" --bench 2>&1 >/dev/null | grep -o '[0-9.]* MB/s' | cut -d' ' -f1)
  printf '%-12s %10s %14s %7s\n' "$m" "$ours" "$ref" \
    "$(awk -v a="$ours" -v b="$ref" 'BEGIN { printf "%.1fx", a / b }')"
done
