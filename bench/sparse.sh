#!/usr/bin/env bash
# Sparse attention patterns (issue 12) against dense causal attention on
# one shape: bench-156m-32k's attention kernel (16 heads over 4 KV heads
# of 64) alone (bench/attention.c), 2 threads, median of $RUNS calls after
# a warm-up, in prefill of 4096 and 16384 tokens from position 0 and in
# decode at position 16383:
#   dense     causal, every position;
#   window    sliding window of 512;
#   dilated   window of 256 keys 2 apart (reaching back 512, half the keys);
#   global    window of 512 with positions 0-3 global;
#   random    window of 512 with 3 random key blocks of 64 per query block
#             (BigBird-style).
# Beside each time: its share of dense's, and the share of the (query tile,
# key block) pairs the kernel visits (prefill; block sizes from the
# kernel's name) or of the key chunks it makes (decode), counted here from
# the pattern, so that the time can be read against the blocks kept.
# The window and dilated layers keep rings (position-major keys and
# values, decode chunks of 256), the others every position (head-major,
# chunks of 1024).
#   bench/sparse.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
spec=specs/llama/bench-156m-32k.toml
runs="${RUNS:-3}"
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /'
cc -O2 -I/usr/include/halide14 bench/attention.c -ldl -o "$out/attention"
variant() { # name extra-attention-keys
  sed -e "/^\[attention\]$/a $2" "$spec" > "$out/$1.toml"
}
cp "$spec" "$out/dense.toml"
variant window 'window = 512'
variant dilated 'window = 256\ndilation = 2'
variant global 'window = 512\nglobal_tokens = [0, 1, 2, 3]'
variant random 'window = 512\nrandom_blocks = 3\nblock_size = 64\nrandom_seed = 1'
read -r heads kvh hd < <(/usr/bin/python3 -c '
import sys, tomllib
m = tomllib.load(open(sys.argv[1], "rb"))
print(m["attention"]["n_heads"], m["attention"]["n_kv_heads"],
      m["attention"]["head_dim"])' "$spec")
for v in dense window dilated global random; do
  "$archc" compile "$out/$v.toml" -o "$out/$v.so" --quiet
  nm -D --defined-only "$out/$v.so" | awk '/ T archk_attention_[0-9a-fx_]*$/ {print $3}' > "$out/$v.sym"
  [ "$(wc -l < "$out/$v.sym")" -eq 1 ] || { echo "expected one attention kernel in $v" >&2; exit 1; }
done
attn() { # variant T pos runs -> ms=..
  # The kernel reads a head-major cache unless its layer keeps a ring
  # (kv_by_head, the 13th integer of its name).
  local layout=positions
  [ "$(sed -E 's/^archk_attention_([0-9x]+)_.*/\1/' "$out/$1.sym" | cut -dx -f13)" = 1 ] && layout=heads
  "$out/attention" "$out/$1.so" "$(cat "$out/$1.sym")" "$heads" "$kvh" "$hd" 0 \
    "$2" "$3" 2 "$4" "$layout"
}
for v in dense window dilated global random; do
  for n in 4096 16384; do
    r=$runs; [ "$v" = dense ] && [ "$n" = 16384 ] && r=1
    attn "$v" "$n" 0 "$r" > "$out/$v.$n"
  done
  attn "$v" 1 16383 100 > "$out/$v.decode"
done
/usr/bin/python3 - "$out" <<'PY'
import os, re, sys
sys.path.insert(0, "bench")
sys.path.insert(0, "test/reference")
import archref
import benchlib
out = sys.argv[1]
# AttentionKernel's integer fields in name order: heads kv_heads head_dim
# alibi window t5_buckets t5_max_distance shaw_clip block_q block_kv
# split_kv kv kv_by_head v_head_dim [dilation] [globals...].
pattern = {"dense": (0, 1, [], 0), "window": (512, 1, [], 0),
           "dilated": (256, 2, [], 0), "global": (512, 1, [0, 1, 2, 3], 0),
           "random": (512, 1, [], 3)}
BS, SEED = 64, 1  # the random variant's block_size and random_seed
def blocks(sym):
    ints = [int(x) for x in re.match(r"archk_attention_([0-9x]+)", sym).group(1).split("x")]
    return ints[8], ints[9], ints[10]
def visible_blocks(T, bq, bk, w, d, g, r):
    """Pairs (tile, key block) the kernel visits: its kb.where predicates."""
    n = 0
    for first in range(0, T, bq):
        drawn = set()
        for Q in range(first // BS, (first + bq - 1) // BS + 1):
            for m in range(r if Q else 0):
                rb = archref.drawn_block(SEED, Q, m)
                drawn.update(range(rb * BS // bk, ((rb + 1) * BS - 1) // bk + 1))
        for kb in range(0, (T + bk - 1) // bk):
            if kb * bk > first + bq - 1:
                break
            if w:
                hit = kb * bk + bk - 1 > first - w * d or kb in drawn
                hit = hit or any(kb * bk <= x < kb * bk + bk or first <= x < first + bq for x in g)
                if not hit:
                    continue
            n += 1
    return n
def chunks(pos, ck, w, d, g, r):
    """Chunks a decode at `pos` makes: from the span's (every one with
    random blocks), plus one of the global keys before them."""
    start = max(0, pos + 1 - w * d) if w and not r else 0
    extra = 1 if w and g and not r else 0
    return (pos + 1 + ck - 1) // ck - start // ck + extra
syms = {v: open(f"{out}/{v}.sym").read().strip() for v in pattern}
print(f"{'pattern':<8} | {'prefill 4096 ms':>15} {'of dense':>8} {'blocks':>7} |"
      f" {'prefill 16384 ms':>16} {'of dense':>8} {'blocks':>7} |"
      f" {'decode @16383 ms':>16} {'of dense':>8} {'chunks':>7}")
for v, (w, d, g, r) in pattern.items():
    bq, bk, ck = blocks(syms[v])
    row = f"{v:<8}"
    for n in (4096, 16384):
        ms = benchlib.kv(f"{out}/{v}.{n}")["ms"]
        dense = benchlib.kv(f"{out}/dense.{n}")["ms"]
        share = visible_blocks(n, bq, bk, w, d, g, r) / visible_blocks(n, bq, bk, 0, 1, [], 0)
        row += f" | {ms:>{15 if n == 4096 else 16}.2f} {ms / dense:>8.1%} {share:>7.1%}"
    ms = benchlib.kv(f"{out}/{v}.decode")["ms"]
    dense = benchlib.kv(f"{out}/dense.decode")["ms"]
    share = chunks(16383, ck, w, d, g, r) / chunks(16383, ck, 0, 1, [], 0)
    row += f" | {ms:>16.3f} {ms / dense:>8.1%} {share:>7.1%}"
    print(row)
PY
