#!/usr/bin/python3
"""The 16-bit weights of a library compiled with --weight-type, exactly.

Calls the library's own pack kernel (archk_pack_*) on an f32 weight full of
special values (ties, the largest and smallest normals, subnormals, values
past f16's range, infinities for f16, signed zeros) and random ones, and
checks every stored 16-bit pattern against PyTorch's rounding as archc
defines it (archref.stored_weight: nearest even; f16 saturated at +-65504,
its subnormals flushed to zero). Then runs the library's linear kernel on
the packed weight with the identity as input, so that each output is one
weight as the kernel widens it, and checks those against the same values.

With --pairs (bf16 weights of a library whose matmuls take bf16 inputs, the
bf16 dot product), the pack and linear kernels are the pairs' ones
([panels, K / 2, panel, 2]), and the input is checked too: a diagonal input
of ties and random values gives outputs that are each one product of the
input rounded to bf16 (nearest even) and a weight, exactly; random inputs
of 37 and 5 rows (the GEMM code; with AMX tiles, two whole tiles of 16
rows and a ragged one, and a ragged one alone) and 1 row (the GEMV code)
give the reference's
sums of those products within f32 round-off (4 sqrt(K) units of 2^-24 of
the sum of magnitudes), which the unrounded input's sums exceed. Subnormal bf16
operands and products may count as zero (AVX512-BF16's vdpbf16ps flushes
them). A linear whose x its producer rounds (archk-bf16-inputs: the
kernel's `input` field, x11x2 in its name) is given the input rounded to
bf16 here (nearest even), as that producer stores it.
"""
import argparse
import ctypes as C
import os
import re
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402


class Dim(C.Structure):
    _fields_ = [("min", C.c_int32), ("extent", C.c_int32),
                ("stride", C.c_int32), ("flags", C.c_uint32)]


class Buffer(C.Structure):
    _fields_ = [("device", C.c_uint64), ("device_interface", C.c_void_p),
                ("host", C.c_void_p), ("flags", C.c_uint64),
                ("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16),
                ("dimensions", C.c_int32), ("dim", C.POINTER(Dim)),
                ("padding", C.c_void_p)]


def buffer(array, code, extents):
    """A dense Halide buffer over `array` (extents innermost first)."""
    dims = (Dim * len(extents))()
    stride = 1
    for i, e in enumerate(extents):
        dims[i] = Dim(0, e, stride, 0)
        stride *= e
    b = Buffer(0, None, array.ctypes.data, 0, code, array.itemsize * 8, 1,
               len(extents), dims, None)
    b._keep = (array, dims)
    return b


def specials(kind):
    v = [0.0, -0.0, 1.0, -1.0, 0.5, 1 + 2 ** -9, 3.1415926, -2.7182818,
         1e-3, -7e-4, 3e38, -3e38, 2 ** -126, 1e-40]
    if kind == "bf16":  # ties of bf16's 8-bit mantissa
        v += [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 2 ** -133]
    else:  # f16: range, ties, its subnormals
        v += [65504.0, 65519.99, 65520.0, 1e6, -1e6, float("inf"),
              float("-inf"), 2 ** -14, -(2 ** -14), 2 ** -14 - 2 ** -25,
              2 ** -14 - 2 ** -24, 2 ** -15, -(2 ** -20), 2 ** -24, 6e-8,
              1 + 2 ** -11, 1 + 3 * 2 ** -11, 2048 + 1, 2048 + 3]
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--type", choices=["bf16", "f16"], required=True)
    ap.add_argument("--pairs", action="store_true",
                    help="the bf16 dot product's kernels (weights in pairs)")
    ap.add_argument("--k", type=int, help="the kernels of this K (default: "
                    "the first pack kernel's)")
    ap.add_argument("--n", type=int, help="the kernels of this N (default: "
                    "the first pack kernel's)")
    args = ap.parse_args()
    code = {"bf16": "2", "f16": "1"}[args.type]
    code += "x1" if args.pairs else ""
    syms = subprocess.run(["nm", "-D", "--defined-only", args.lib],
                          capture_output=True, text=True, check=True).stdout
    packs = sorted(set(re.findall(rf"archk_pack_(\d+)x(\d+)x64x1x{code}\b", syms)))
    if args.k:
        packs = [p for p in packs if int(p[0]) == args.k]
    if args.n:
        packs = [p for p in packs if int(p[1]) == args.n]
    if not packs:
        print(f"FAILED: no {args.type} pack kernel in {args.lib}")
        return 1
    k, n = (int(x) for x in packs[0])
    linear = f"archk_linear_{k}x{n}x0x64x0x{code}"
    # (Or its residual epilogue's, arch-fuse-residual's: an output
    # projection's; it adds a [t, n] input. Or one that takes x as bf16.)
    found = re.findall(rf"\b{linear}(x10x1)?(x11x2)?\b", syms)
    if not found:
        print(f"FAILED: no {linear} beside archk_pack_{k}x{n}")
        return 1
    residual, bf16_input = (bool(f) for f in found[0])
    linear += "".join(found[0])
    lib = C.CDLL(os.path.abspath(args.lib))
    pack = getattr(lib, f"archk_pack_{k}x{n}x64x1x{code}")
    run = getattr(lib, linear)
    print(f"kernels archk_pack_{k}x{n}x64x1x{code}, {linear}")

    rng = np.random.default_rng(3)
    w = (rng.standard_normal((n, k)) * 0.05).astype(np.float32)
    s = np.array(specials(args.type), dtype=np.float32)
    w.reshape(-1)[:len(s) * 7:7] = s  # spread over rows and columns
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[args.type]
    want = archref.stored_weight(torch.from_numpy(w), dtype)
    want_bits = want.view(torch.int16).numpy().view(np.uint16)
    want_f32 = want.float().numpy()

    panels = (n + 63) // 64
    code = 4 if args.type == "bf16" else 2

    def pack_weight(w):
        """w [n, k] packed by the library: the array and its buffer."""
        if args.pairs:
            packed = np.zeros((panels, k // 2, 64, 2), dtype=np.uint16)
            extents = [128, k // 2, panels]
        else:
            packed = np.zeros((panels, k, 64), dtype=np.uint16)
            extents = [64, k, panels]
        bp = buffer(packed, code, extents)
        if pack(C.byref(buffer(w, 2, [k, n])), C.byref(bp)):
            return None, None
        return packed, bp

    def as_rows(packed):
        """The packed weight as [n, k] 16-bit patterns."""
        if args.pairs:
            packed = packed.transpose(0, 2, 1, 3)
        else:
            packed = packed.transpose(0, 2, 1)
        return packed.reshape(panels * 64, k)[:n]

    def linear_of(x, bp, r=None):
        """The library's linear kernel on rows x [t, k]: [t, n]; a residual
        kernel's input r [t, n] (zeros unless given) added."""
        y = np.zeros((len(x), n), dtype=np.float32)
        if bf16_input:  # the bf16 patterns, code 4 (halide_type_bfloat)
            xb = torch.from_numpy(np.ascontiguousarray(x)).to(torch.bfloat16)
            bufs = [buffer(xb.view(torch.int16).numpy(), 4, [k, len(x)]), bp]
        else:
            bufs = [buffer(x, 2, [k, len(x)]), bp]
        if residual:
            r = np.zeros_like(y) if r is None else r
            bufs.append(buffer(r, 2, [n, len(x)]))
        bufs.append(buffer(y, 2, [n, len(x)]))
        if run(*(C.byref(b) for b in bufs)):
            return None
        return y

    packed, bp = pack_weight(w)
    if packed is None:
        print("FAILED: the pack kernel returned an error")
        return 1
    got_bits = as_rows(packed)
    bad = np.argwhere(got_bits != want_bits)
    print(f"{args.type}: {n}x{k} weight, {len(s)} special values, "
          f"{len(bad)} stored patterns differ")
    for r, c in bad[:5]:
        print(f"  w[{r},{c}] = {w[r, c]!r}: stored {got_bits[r, c]:#06x}, "
              f"want {want_bits[r, c]:#06x}")
    if args.type == "f16" and (packed.reshape(-1) & 0x7c00 == 0x7c00).any():
        print("  an infinity or NaN was stored")
        bad = [1]

    y = linear_of(np.eye(k, dtype=np.float32), bp)
    if y is None:
        print("FAILED: the linear kernel returned an error")
        return 1
    finite = np.isfinite(want_f32).all()
    differ = y.T != want_f32
    if args.pairs:  # a subnormal weight may read as zero
        differ &= ~((np.abs(want_f32) < 2.0 ** -126) & (y.T == 0))
    wrong = (np.count_nonzero(differ) if finite
             else "skipped (infinite weights)")
    print(f"widened by the linear kernel: {wrong} values differ")
    if len(bad) or (finite and wrong):
        print("FAILED")
        return 1
    if args.pairs and not check_inputs(rng, pack_weight, linear_of, k, n,
                                       residual):
        print("FAILED")
        return 1
    print("PASSED")
    return 0


def bf16(a):
    """f32 array `a` rounded to bf16 (nearest even), as f32."""
    return torch.from_numpy(a).to(torch.bfloat16).float().numpy()


def check_inputs(rng, pack_weight, linear_of, k, n, residual):
    """The pairs' linear kernel rounds its input to bf16 and sums the
    products of rounded operands (plus a random residual, where the kernel
    adds one)."""
    w = (rng.standard_normal((n, k)) * 0.05).astype(np.float32)
    _, bp = pack_weight(w)
    wb = bf16(w)
    ties = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 3 + 2 ** -7,
            1 + 2 ** -9, 1 - 2 ** -10, 1e-3, -0.0, 2 ** -126, 1e30]
    v = rng.standard_normal(k).astype(np.float32)
    v[:len(ties)] = ties
    y = linear_of(np.diag(v), bp)
    want = bf16(v)[:, None] * wb.T  # one product each, exact in f32
    flushed = (np.abs(want) < 2.0 ** -126) & (y == 0)
    wrong = np.count_nonzero((y != want) & ~flushed)
    print(f"bf16 dot product, diagonal input: {wrong} products differ "
          f"from the rounded input's")
    ok = wrong == 0
    for rows in (37, 5, 1):
        x = rng.standard_normal((rows, k)).astype(np.float32)
        r = (rng.standard_normal((rows, n)).astype(np.float32) if residual
             else np.zeros((rows, n), dtype=np.float32))
        y = linear_of(x, bp, r)
        ref = bf16(x).astype(np.float64) @ wb.T.astype(np.float64)
        # f32 round-off of a k-term sum: ~sqrt(k) units of 2^-24 of the
        # sum of magnitudes (a random walk), with a margin of 4; the
        # residual's add rounds once more.
        bound = 4 * np.sqrt(k) * 2.0 ** -24 * (np.abs(bf16(x)) @ np.abs(wb.T))
        bound += 2.0 ** -24 * (np.abs(ref) + np.abs(r))
        err = np.abs(y - r - ref)
        unrounded = np.abs(x.astype(np.float64) @ wb.T.astype(np.float64) - ref)
        print(f"bf16 dot product, {rows} random row(s)"
              f"{' plus a residual' if residual else ''}: "
              f"{np.count_nonzero(err > bound)} sums off by more than f32 "
              f"summation error (the unrounded input's are off by up to "
              f"{unrounded.max() / bound.max():.0f}x that bound)")
        ok &= bool((err <= bound).all()) and unrounded.max() > bound.max()
    return ok


if __name__ == "__main__":
    sys.exit(main())
