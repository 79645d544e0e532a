"""An integer schema's bounds (minimum, maximum, exclusiveMinimum,
exclusiveMaximum: integers or not, written with an exponent or not, with
fractions past a double's digits, one side or both, below and above
zero, up to the grammar's 16 digits and past them) against Python's
decimal comparison: for
each of a seeded draw of bound sets, archc grammar --json-schema --match
over the values at and around each bound, zero, powers of ten and random
ones, and texts no JSON integer is ("01", "-0", "+1", "1.0"); a value is
"whole" exactly where it is a JSON integer within the bounds.
    check_integer_bounds.py ARCHC"""
import math
import random
import sys
from decimal import Decimal, getcontext

from schema_matches import bound_value, bounds_schema, draw_bounds, verdicts

MAX = 10 ** 16 - 1  # the grammar's integers: at most 16 digits


def allowed(bounds):
    lo, hi = -MAX, MAX
    for k, v in bounds.items():
        v = bound_value(v)
        if k == "minimum":
            lo = max(lo, math.ceil(v))
        elif k == "exclusiveMinimum":
            lo = max(lo, math.floor(v) + 1)
        elif k == "maximum":
            hi = min(hi, math.floor(v))
        else:
            hi = min(hi, math.ceil(v) - 1)
    return lo, hi


def written(rng, v):
    """v, or v and a half, or v with a fraction of up to 20 digits
    (past 2^52 a double holds none: as text), or v with an exponent."""
    r = rng.random()
    return v if r < 0.6 else v + 0.5 if abs(v) < 2 ** 52 and r < 0.7 \
        else f"{v}.{rng.randint(1, 10 ** 20)}" if r < 0.9 \
        else format(Decimal(v), "e")


def draw(rng):
    return draw_bounds(rng, [9, 99, 1000, 10 ** 5, 10 ** 9, 10 ** 17],
                       written)


def main():
    archc = sys.argv[1]
    getcontext().prec = 60
    rng = random.Random(7)
    cases = [{"minimum": 0}, {"maximum": -1}, {"minimum": 10, "maximum": 10},
             {"minimum": -1234, "maximum": 98765},
             {"exclusiveMinimum": 99, "exclusiveMaximum": 1000},
             {"minimum": 1.5, "maximum": 2.5}, {"maximum": 10 ** 20},
             {"maximum": "4503599627370497.5"},
             {"minimum": "-4503599627370497.5"},
             {"minimum": "1e2", "maximum": "1.5E3"},
             {"exclusiveMinimum": "5.00000000000000001"},
             {"exclusiveMaximum": "-5.00000000000000001"},
             {"minimum": "-5.00000000000000001", "maximum": "-0.0"},
             {"exclusiveMinimum": "9999999999999998.5e0"},
             {"maximum": "1e400"}]
    while len(cases) < 56:
        b = draw(rng)
        lo, hi = allowed(b)
        if lo <= hi:
            cases.append(b)
    checked = 0
    for bounds in cases:
        lo, hi = allowed(bounds)
        values = {0, 1, -1, MAX, -MAX, MAX + 1}
        for b in (lo, hi):
            values |= {b - 2, b - 1, b, b + 1, b + 2}
        for p in range(17):
            values |= {10 ** p, 10 ** p - 1, -10 ** p, 1 - 10 ** p}
        span = max(1, min(hi, MAX) - max(lo, -MAX))
        values |= {rng.randint(lo, lo + span) for _ in range(20)}
        texts = [str(v) for v in sorted(values)]
        if lo > 0:
            texts.append("0" + str(lo))
        texts += ["-0", "+1", "1.0", "1e2", ""]
        got = verdicts(archc, bounds_schema(bounds, "integer"), texts,
                       str(bounds))
        for text, verdict in zip(texts, got, strict=True):
            want = text == str(int(text)) if text.lstrip("-").isdigit() \
                else False
            want = want and text != "-0" and lo <= int(text) <= hi
            if (verdict == "whole") != want:
                sys.exit(f"{bounds}: {text!r} {verdict}, expected "
                         f"{'whole' if want else 'not whole'} "
                         f"(integers {lo}..{hi})")
            checked += 1
    print(f"integer bounds: {len(cases)} schemas, {checked} texts, each "
          "whole exactly where it is a JSON integer within the bounds")


if __name__ == "__main__":
    main()
