"""A number schema's bounds (minimum, maximum, exclusiveMinimum,
exclusiveMaximum: integers, one side or both, below and above zero, up to
the grammar's 16 digits and past them) against Python's decimal
comparison: for each of a seeded draw of bound sets, archc grammar
--json-schema --match over the values at and around each bound (a
fraction of one unit in the 16th place either side, a fraction of zeros
on the bound itself), zero and minus zero, random decimals, and texts
the grammar's numbers are not (exponents, 17 fraction digits, "01",
".5", "1."); a value is "whole" exactly where it is a number of the
grammar (16 digits each side of the point, no exponent) within the
bounds, and not a minus zero ("-0", "-0.0": as for integers, not
written).
    check_number_bounds.py ARCHC"""
import random
import re
import sys
from decimal import Decimal

from schema_matches import verdicts

MAX = 10 ** 16 - 1  # the grammar's integer part: at most 16 digits
GRAMMAR = re.compile(r"-?(0|[1-9][0-9]{0,15})(\.[0-9]{1,16})?")
TINY = "0000000000000001"  # one unit in the 16th place


def within(bounds, x):
    for k, v in bounds.items():
        v = Decimal(v)
        if not {"minimum": x >= v, "maximum": x <= v,
                "exclusiveMinimum": x > v, "exclusiveMaximum": x < v}[k]:
            return False
    return True


def near(b):
    """Texts at and around the integer b."""
    s = str(b)
    out = {s, s + ".0", s + "." + "0" * 16, s + "." + "0" * 17,
           str(b + 1), str(b - 1)}
    for v in (b, b - 1):  # v + a fraction, written from v's sign
        whole = str(abs(v)) if v >= 0 else str(abs(v + 1))
        for frac in (TINY, "5", "9" * 16, "9" * 17):
            if v >= 0:
                out.add(f"{whole}.{frac}")
            else:  # the number between v and v + 1, from below zero
                out.add(f"-{whole}.{frac}")
    return out


def draw(rng):
    scale = rng.choice([1, 9, 100, 10 ** 5, 10 ** 15, 10 ** 17])
    bounds = {}
    for k in rng.sample(["minimum", "maximum", "exclusiveMinimum",
                         "exclusiveMaximum"], rng.randint(1, 2)):
        bounds[k] = rng.randint(-scale, scale)
    return bounds


def some(bounds):
    lo = max([v for k, v in bounds.items() if k.endswith("inimum")],
             default=-MAX - 1)
    hi = min([v for k, v in bounds.items() if k.endswith("aximum")],
             default=MAX + 1)
    return lo, hi


def main():
    archc = sys.argv[1]
    rng = random.Random(11)
    cases = [{"minimum": 0, "maximum": 1}, {"exclusiveMinimum": 0},
             {"exclusiveMaximum": 0}, {"minimum": -1, "maximum": 1},
             {"exclusiveMinimum": -1, "exclusiveMaximum": 1},
             {"maximum": -3}, {"minimum": 5, "maximum": 5},
             {"exclusiveMinimum": MAX}, {"minimum": -MAX},
             {"maximum": 10 ** 20}, {"minimum": -10 ** 20,
                                     "exclusiveMaximum": 0},
             {"minimum": 1.0, "exclusiveMaximum": 2}]
    while len(cases) < 40:
        b = draw(rng)
        lo, hi = some(b)
        if lo < hi and lo <= MAX and hi >= -MAX:
            cases.append(b)
    checked = 0
    for bounds in cases:
        lo, hi = some(bounds)
        texts = {"0", "0.0", "-0", "-0.0", "1e2", "1.5E1", "01", ".5", "1.",
                 "+1", ""}
        for b in {lo, hi, 0}:
            if abs(b) <= MAX + 1:
                texts |= near(b)
        a, z = max(lo, -MAX), min(hi, MAX)
        for _ in range(20):
            whole = rng.randint(a, z)
            digits = rng.randint(1, 16)
            frac = "".join(rng.choice("0123456789") for _ in range(digits))
            sign = "-" if whole < 0 or (whole == 0 and rng.random() < .5) \
                else ""
            texts.add(f"{sign}{abs(whole)}.{frac}")
        texts = sorted(texts)
        got = verdicts(archc, dict(bounds, type="number"), texts,
                       str(bounds))
        for text, verdict in zip(texts, got, strict=True):
            want = GRAMMAR.fullmatch(text) is not None and \
                within(bounds, Decimal(text)) and \
                not (text.startswith("-") and Decimal(text) == 0)
            if (verdict == "whole") != want:
                sys.exit(f"{bounds}: {text!r} {verdict}, expected "
                         f"{'whole' if want else 'not whole'}")
            checked += 1
    print(f"number bounds: {len(cases)} schemas, {checked} texts, each "
          "whole exactly where it is a number of the grammar within the "
          "bounds")


if __name__ == "__main__":
    main()
