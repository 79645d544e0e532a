"""Helpers shared by the bench/*.sh reports (run from the repository root)."""


def kv(path):
    """A file of key=value words as floats (bench/ceilings.c's output)."""
    return {k: float(v) for k, v in (x.split("=") for x in open(path).read().split())}


def ceilings(out):
    """Prints the CPU and its ceilings measured by bench_ceilings (bench/lib.sh);
    returns them by thread count."""
    ceil = {t: kv(f"{out}/ceilings.{t}") for t in (1, 2)}
    print(open(f"{out}/cpu").read().strip())
    for t in (1, 2):
        bf16 = ceil[t].get("bf16_gflops", 0)
        print(f"ceilings, {t} thread(s): FP32 FMA peak {ceil[t]['peak_gflops']:.1f} GFLOP/s, "
              f"read bandwidth {ceil[t]['read_gbs']:.1f} GB/s"
              + (f", bf16 dot-product peak {bf16:.1f} GFLOP/s" if bf16 else ""))
    return ceil
