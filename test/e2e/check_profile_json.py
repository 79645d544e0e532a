#!/usr/bin/python3
"""archc bench --profile --json: a row per kernel of the glue with its
calls per prefill and per decoded token (its sites' count: a straight-line
model), times that are not negative, longest prefill first, and the time
outside the kernels not negative; GFLOP/s and GB/s for the matmuls and
attention only.

Usage: check_profile_json.py BENCH.json GLUE.c. Prints "ok NAME" or "FAIL
NAME: why" per case; exit status 1 on failure.
"""
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import archrt  # noqa: E402

case = archrt.Cases()


def main():
    bench = json.load(open(sys.argv[1]))
    sites = collections.Counter(re.findall(r"ARCHRT_CALL\(\d+, .*?(archk_\w+)\(",
                                           open(sys.argv[2]).read()))
    rows = bench.get("profile", [])
    case("a row per kernel of the glue",
         sorted(r["kernel"] for r in rows) == sorted(sites),
         f"{[r['kernel'] for r in rows]} against {sorted(sites)}")
    calls = [(r["kernel"], r["prefill_calls"], r["decode_calls_per_token"])
             for r in rows]
    case("calls: the kernel's sites, per prefill and per decoded token",
         all(p == sites[k] and d == sites[k] for k, p, d in calls),
         f"{calls}")
    times = [(r["prefill_ms"], r["decode_ms_per_token"]) for r in rows]
    case("times not negative, longest prefill first",
         all(p >= 0 and d >= 0 for p, d in times) and
         [p for p, _ in times] == sorted((p for p, _ in times), reverse=True),
         f"{times}")
    case("op kinds", {"linear", "attention", "norm"} <= {r["op"] for r in rows},
         f"{sorted({r['op'] for r in rows})}")
    rates = [(r["op"], "prefill_gflop_s" in r and "decode_gb_s" in r)
             for r in rows]
    matmul = ("linear", "head_linear", "attention")
    case("rates for the matmuls and attention (GFLOP/s, GB/s), none for the "
         "others",
         all(has == (op in matmul) for op, has in rates) and
         all(r["prefill_gflop_s"] > 0 and r["decode_gb_s"] > 0
             for r in rows if r["op"] in matmul) and
         bench["linears_prefill_gflop_s"] > 0 and
         bench["linears_decode_gb_s"] > 0, f"{rates}")
    case("the time outside the kernels is not negative",
         bench["prefill_outside_kernels_ms"] >= 0 and
         bench["decode_outside_kernels_ms_per_token"] >= 0,
         f"{bench.get('prefill_outside_kernels_ms')}, "
         f"{bench.get('decode_outside_kernels_ms_per_token')}")
    return case.summary()


if __name__ == "__main__":
    sys.exit(main())
