#!/usr/bin/env bash
# Checkpoint loading time against the number of tensors: a tiny-dimension
# mixture (d_model 16, 32 layers) with $EXPERTS experts per layer (default
# 100, 1024 and 2048: about 10^4, 10^5 and 2x10^5 tensors), each written as
# an 8-shard Hugging Face checkpoint (model.safetensors.index.json) by the
# PyTorch reference, then archrt_load_weights timed from the page cache
# (median of $RUNS, Python ctypes around the call). Linear time shows as a
# constant time per tensor once the checkpoint outgrows the caches (the
# 100-expert one, 7 MiB, fits the L3). Two builds: the default, where most
# of the time is parameter preparation (each expert's weights packed into
# 64-column panels, padded from 8: 400 MiB of panels at 1024 experts), and
# one without arch-pack-weights, which leaves finding the tensors (index,
# shard headers, name tables) and stacking each layer's experts into one
# buffer. About 3 minutes.
#   bench/load.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
runs="${RUNS:-5}"
for e in ${EXPERTS:-100 1024 2048}; do
  cat > "$out/many-$e.toml" <<SPEC
[model]
name = "many_$e"
vocab_size = 64
d_model = 16
n_layers = 32
max_seq_len = 16
[attention]
n_heads = 2
[ffn]
d_ff = 16
[moe]
n_experts = $e
top_k = 2
d_ff = 8
SPEC
  "$archc" compile "$out/many-$e.toml" -o "$out/many-$e.so" --quiet
  "$archc" compile "$out/many-$e.toml" -o "$out/many-$e.unpacked.so" --quiet \
    --disable-pass=arch-pack-weights
  mkdir -p "$out/ckpt-$e"
  /usr/bin/python3 test/reference/archref.py weights --spec "$out/many-$e.toml" \
    --seed 1 --hf --shards 8 --out "$out/ckpt-$e"
done
grep -m1 'model name' /proc/cpuinfo | sed 's/.*: /cpu: /'
/usr/bin/python3 - "$out" "$runs" ${EXPERTS:-100 1024 2048} <<'PY'
import json, os, statistics, sys, time
sys.path.insert(0, "test/e2e")
import archrt
out, runs, experts = sys.argv[1], int(sys.argv[2]), [int(e) for e in sys.argv[3:]]
def load_ms(so, ckpt):
    lib = archrt.Lib(so)
    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        m = lib.model(ckpt)
        times.append(time.perf_counter() - t0)
        lib.lib.archrt_model_free(m)
    return statistics.median(times[1:]) * 1e3
print(f"{'experts':>7} {'tensors':>8} {'shards MiB':>10} {'load ms':>8} {'us/tensor':>9} "
      f"{'unpacked ms':>11} {'us/tensor':>9}")
for e in experts:
    ckpt = f"{out}/ckpt-{e}"
    n = len(json.load(open(f"{ckpt}/model.safetensors.index.json"))["weight_map"])
    mib = sum(os.path.getsize(f"{ckpt}/{f}") for f in os.listdir(ckpt)) / 2**20
    packed = load_ms(f"{out}/many-{e}.so", ckpt)
    unpacked = load_ms(f"{out}/many-{e}.unpacked.so", ckpt)
    print(f"{e:>7} {n:>8} {mib:>10.1f} {packed:>8.1f} {packed / n * 1e3:>9.2f} "
          f"{unpacked:>11.1f} {unpacked / n * 1e3:>9.2f}")
PY
