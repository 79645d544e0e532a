#!/usr/bin/python3
"""The library's position kernels at far positions, against exact values.

Calls each archk_rope_* kernel of --lib (those of the heads and head
dimensions of --spec's queries and keys) directly on seeded random rows, at
prompts that start at positions 0, 4093, 100000, 2^31 - 40 and 5000 (3
rows), and checks every output against the rotation computed in float64
from the spec's own frequencies (archref.rope_frequencies: the scaling and
its cos/sin factor),
element by element within 8 units of 2^-24 of |x_j| + |partner_j| (times
the factor). A rotation by an angle taken in f32, as (pos + t) * freq, is
off by up to half a unit of the angle (1.2e-4 rad at position 4093 for the
fastest pair) and fails here; so does a wrong quadrant or coefficient of
the kernel's own cos and sin. A sinusoidal spec's archk_pos_embed_* kernel
likewise: x plus the table of Vaswani et al. (archref.sinusoidal's
formula), within 8 units of 2^-24 of |x| + 1.

A projection whose RoPE is its epilogue (arch-fuse-rope: an f32
archk_linear_* kernel with rope fields, bias-free) likewise, on rows and
a weight of small integers, so that its sums are exact in f32: its first
heads rotated, the others its sums exactly.
"""
import argparse
import ctypes as C
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
from check_weight_rounding import buffer  # noqa: E402

# (Positions and rows: 3 rows are a GEMV's, whose tasks a fused
# projection's epilogue takes in a schedule of their own.)
STARTS = [(0, 9), (4093, 20), (100000, 8), (2 ** 31 - 40, 17), (5000, 3)]


def expected(x, pos, spec):
    """x [T, H, hd] rotated at positions pos .. pos + T - 1, in float64."""
    freq, mscale = archref.rope_frequencies(spec)
    freq = freq.numpy()
    rot = spec.rotary_dim
    t = np.arange(x.shape[0], dtype=np.float64) + pos
    ang = t[:, None] * freq[None, :]
    c, s = mscale * np.cos(ang)[:, None, :], mscale * np.sin(ang)[:, None, :]
    x = x.astype(np.float64)
    out, partner = x.copy(), np.zeros_like(x)
    if spec.style == "interleaved":
        a, b = x[..., 0:rot:2], x[..., 1:rot:2]
        out[..., 0:rot:2], out[..., 1:rot:2] = a * c - b * s, a * s + b * c
        partner[..., 0:rot:2], partner[..., 1:rot:2] = b, a
    else:
        h = rot // 2
        a, b = x[..., :h], x[..., h:rot]
        out[..., :h], out[..., h:rot] = a * c - b * s, a * s + b * c
        partner[..., :h], partner[..., h:rot] = b, a
    return out, partner, mscale


def check_kernel(lib, name, features, want_of, rng):
    """Runs kernel `name` (x, pos, out; rows of `features`, outermost
    first) at each of STARTS on seeded random rows; want_of(x, pos) gives
    the exact outputs and the scale of a unit. Prints the worst error and
    each failure; returns whether it failed."""
    fn = getattr(lib, name)
    fn.argtypes = [C.c_void_p, C.c_int32, C.c_void_p]
    worst, failed = 0.0, False
    for pos, T in STARTS:
        x = rng.standard_normal((T, *features)).astype(np.float32)
        y = np.zeros_like(x)
        extents = [*reversed(features), T]
        status = fn(C.byref(buffer(x, 2, extents)), pos,
                    C.byref(buffer(y, 2, extents)))
        if status:
            print(f"FAILED: {name} at position {pos} returned {status}")
            return True
        want, scale = want_of(x, pos)
        off, units = compare(name, pos, y, want, scale)
        failed |= off
        worst = max(worst, units)
    print(f"{name}: {len(STARTS)} prompts, worst {worst:.2f} units")
    return failed


def compare(name, pos, y, want, scale):
    """Output rows y [T, ...] of kernel `name` from position pos against
    `want`, a unit 2^-24 of `scale`: prints the first element more than 8
    units off; returns whether one was, and the most units off."""
    units = np.abs(y - want) / (scale * 2.0 ** -24)
    off = bool((units > 8).any())
    if off:
        at = tuple(np.argwhere(units > 8)[0])
        print(f"FAILED: {name} at position {pos + at[0]}, element "
              f"{at[1:]}: {y[at]!r}, exact {want[at]!r} "
              f"({units[at]:.0f} units)")
    return off, float(units.max())


def check_fused(lib, name, k, n, heads, hd, spec, rng):
    """Runs fused projection `name` (x [T, k], a packed weight [ceil(n /
    64), k, 64], pos, out [T, n / hd, hd]) at each of STARTS; its first
    `heads` heads must be the rotation of the exact sums, the others the
    sums. Prints the worst error and each failure; returns whether it
    failed."""
    fn = getattr(lib, name)
    fn.argtypes = [C.c_void_p, C.c_void_p, C.c_int32, C.c_void_p]
    w = rng.integers(-1, 2, size=(n, k)).astype(np.float32)
    panels = (n + 63) // 64
    packed = np.zeros((panels, k, 64), dtype=np.float32)
    for p in range(panels):
        cols = w[p * 64:(p + 1) * 64]
        packed[p, :, :cols.shape[0]] = cols.T
    worst, failed = 0.0, False
    for pos, T in STARTS:
        x = rng.integers(-4, 5, size=(T, k)).astype(np.float32)
        y = np.zeros((T, n // hd, hd), dtype=np.float32)
        status = fn(C.byref(buffer(x, 2, [k, T])),
                    C.byref(buffer(packed, 2, [64, k, panels])), pos,
                    C.byref(buffer(y, 2, [hd, n // hd, T])))
        if status:
            print(f"FAILED: {name} at position {pos} returned {status}")
            return True
        sums = (x.astype(np.float64) @ w.T.astype(np.float64)).reshape(
            T, n // hd, hd)
        want, partner, mscale = expected(sums[:, :heads], pos, spec)
        want = np.concatenate([want, sums[:, heads:]], axis=1)
        # (A unit of at least 1's: an integer sum and its partner may
        # both be 0.)
        scale = np.maximum(np.concatenate(
            [max(1.0, mscale) * (np.abs(sums[:, :heads]) + np.abs(partner)),
             np.abs(sums[:, heads:])], axis=1), 1.0)
        off, units = compare(name, pos, y, want, scale)
        failed |= off
        worst = max(worst, units)
    print(f"{name}: {len(STARTS)} prompts, worst {worst:.2f} units")
    return failed


def sinusoidal(x, pos):
    """x [T, d] plus the sinusoidal table at positions pos .., float64."""
    d = x.shape[1]
    p = np.arange(x.shape[0], dtype=np.float64)[:, None] + pos
    i = np.arange(0, d, 2, dtype=np.float64)
    want = x.astype(np.float64)
    want[:, 0::2] += np.sin(p / 10000 ** (i / d))
    want[:, 1::2] += np.cos(p / 10000 ** (i / d))
    return want, np.abs(x) + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, action="append",
                    help="repeatable, a --spec each: one process checks "
                    "them all (PyTorch, which archref imports, once)")
    ap.add_argument("--spec", required=True, action="append")
    args = ap.parse_args()
    if len(args.lib) != len(args.spec):
        ap.error("give one --spec for each --lib")
    rc = 0
    for lib, spec in zip(args.lib, args.spec):
        rc |= check_library(lib, spec)
    return rc


def check_library(lib_path, spec_path):
    """Checks one library's position kernels; prints PASSED or FAILED."""
    spec = archref.Spec(spec_path)
    syms = subprocess.run(["nm", "-D", "--defined-only", lib_path],
                          capture_output=True, text=True, check=True).stdout
    lib = C.CDLL(os.path.abspath(lib_path))
    rng = np.random.default_rng(11)
    failed = 0
    if spec.pos_kind == "sinusoidal":
        kernels = sorted(set(re.findall(
            r"\b(archk_pos_embed_(\d+)x1x\d+x\d+)$", syms, re.M)))
        for name, d in kernels:
            failed += check_kernel(lib, name, [int(d)], sinusoidal, rng)
    else:
        kernels = sorted(set(re.findall(
            r"\b(archk_rope_(\d+)x(\d+)x(\d+)x\d+x\d+x\d+_[0-9a-f]+)$",
            syms, re.M)))
        for name, heads, hd, rot in kernels:
            if int(rot) != spec.rotary_dim:
                print(f"FAILED: {name} rotates {rot} dims, the spec "
                      f"{spec.rotary_dim}")
                return 1

            def rotation(x, pos):
                want, partner, mscale = expected(x, pos, spec)
                return want, max(1.0, mscale) * (np.abs(x) + np.abs(partner))
            failed += check_kernel(lib, name, [int(heads), int(hd)],
                                   rotation, rng)
        fused = sorted(set(re.findall(
            r"\b(archk_linear_(\d+)x(\d+)x0x64x0x13x(\d+)x(\d+)x(\d+)"
            r"x\d+x\d+x\d+_[0-9a-f]+)$", syms, re.M)))
        for name, k, n, heads, hd, rot in fused:
            if int(rot) != spec.rotary_dim:
                print(f"FAILED: {name} rotates {rot} dims, the spec "
                      f"{spec.rotary_dim}")
                return 1
            failed += check_fused(lib, name, int(k), int(n), int(heads),
                                  int(hd), spec, rng)
        kernels += fused
    if not kernels:
        print(f"FAILED: no {spec.pos_kind} position kernel in {lib_path}")
        return 1
    print("FAILED" if failed else "PASSED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
