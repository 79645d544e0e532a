"""Helpers shared by the bench/*.sh reports (run from the repository root)."""


def kv(path):
    """A file of key=value words as floats (bench/ceilings.c's output)."""
    return {k: float(v) for k, v in (x.split("=") for x in open(path).read().split())}


def probed(prefix):
    """The ceilings probed beside a call (bench/ceilings.c's output in
    PREFIX.before and PREFIX.after): the higher of the two, as a probe
    only reads low (the cores' round trip too: the higher is the farther
    placement seen beside the call)."""
    a, b = (kv(f"{prefix}.{s}") for s in ("before", "after"))
    return {k: max(a[k], b[k]) for k in a}


def ceilings(out):
    """Prints the CPU and its ceilings measured by bench_ceilings (bench/lib.sh);
    returns them by thread count."""
    ceil = {t: kv(f"{out}/ceilings.{t}") for t in (1, 2)}
    print(open(f"{out}/cpu").read().strip())
    for t in (1, 2):
        bf16 = ceil[t].get("bf16_gflops", 0)
        amx = ceil[t].get("amx_gflops", 0)
        trip = ceil[t].get("round_trip_ns", 0)
        print(f"ceilings, {t} thread(s): FP32 FMA peak {ceil[t]['peak_gflops']:.1f} GFLOP/s, "
              f"read bandwidth {ceil[t]['read_gbs']:.1f} GB/s"
              + (f", bf16 dot-product peak {bf16:.1f} GFLOP/s" if bf16 else "")
              + (f", AMX bf16 peak {amx:.1f} GFLOP/s" if amx else "")
              + (f", the cores' round trip {trip:.0f} ns" if trip else ""))
    return ceil


def bf16_peak(ceil):
    """The ceiling of a bf16 GEMM whose inputs are bf16 (the bf16 dot
    product): the AMX tiles' peak where the CPU has them (archc's GEMM then
    runs on them), else the vdpbf16ps peak, else 0."""
    return ceil.get("amx_gflops") or ceil.get("bf16_gflops", 0)
