"""A number schema's bounds (minimum, maximum, exclusiveMinimum,
exclusiveMaximum: integers and decimals of up to 20 fraction digits,
some written with an exponent, one side or both, below and above zero,
minus zero, two at one value, up to the grammar's 16 digits and past
them) against Python's decimal comparison: for each of a seeded
draw of bound sets, archc grammar --json-schema --match over the values
at and around each bound (one unit in the 16th fraction place either
side, the bound cut to fewer digits, its trailing zeros), zero and
minus zero, random decimals, and texts
the grammar's numbers are not (exponents, 17 fraction digits, "01",
".5", "1."); a value is "whole" exactly where it is a number of the
grammar (16 digits each side of the point, no exponent) within the
bounds, and not a minus zero ("-0", "-0.0": as for integers, not
written).
    check_number_bounds.py ARCHC"""
import random
import re
import sys
from decimal import Decimal, getcontext

from schema_matches import bound_value, bounds_schema, draw_bounds, verdicts

MAX = 10 ** 16 - 1  # the grammar's integer part: at most 16 digits
GRAMMAR = re.compile(r"-?(0|[1-9][0-9]{0,15})(\.[0-9]{1,16})?")


def within(bounds, x):
    for k, v in bounds.items():
        v = bound_value(v)
        if not {"minimum": x >= v, "maximum": x <= v,
                "exclusiveMinimum": x > v, "exclusiveMaximum": x < v}[k]:
            return False
    return True


def text(x):
    """A Decimal as a JSON number: no exponent, no trailing zeros."""
    s = format(x, "f")
    return s.rstrip("0").rstrip(".") if "." in s else s


def near(b):
    """Texts at and around the bound b (a Decimal)."""
    s = text(b)
    unit = Decimal("1e-16")
    out = {s, s + ("" if "." in s else ".") + "0",
           s + ("" if "." in s else ".") + "0" * 17}
    for step in (1, Decimal("0.5"), unit, 2 * unit):
        out |= {text(b + step), text(b - step)}
    for places in range(0, 17):  # b cut, and cut then one unit further
        q = Decimal(1).scaleb(-places)
        cut = b.quantize(q, rounding="ROUND_DOWN")
        out |= {text(cut), text(cut + q), text(cut - q)}
    return out


def written(rng, v):
    """v, or v with a fraction of 1 to 20 digits (as text: past a
    double's); either, at times, with an exponent."""
    if rng.random() < 0.5:
        digits = "".join(rng.choice("0123456789")
                         for _ in range(rng.randint(1, 20)))
        sign = "-" if v < 0 or (v == 0 and rng.random() < 0.5) else ""
        v = f"{sign}{abs(v)}.{digits}"
    if rng.random() < 0.2:  # the same value, with an exponent
        v = format(bound_value(v), "e" if rng.random() < 0.5 else "E")
    return v


def draw(rng):
    return draw_bounds(rng, [1, 9, 100, 10 ** 5, 10 ** 15, 10 ** 17],
                       written)


def some(bounds):
    lo = max([bound_value(v) for k, v in bounds.items()
              if k.endswith("inimum")], default=Decimal(-MAX - 1))
    hi = min([bound_value(v) for k, v in bounds.items()
              if k.endswith("aximum")], default=Decimal(MAX + 1))
    return lo, hi


def main():
    archc = sys.argv[1]
    getcontext().prec = 60
    rng = random.Random(11)
    # (A bound in quotes is written as that text: digits past a double.)
    cases = [{"minimum": 0, "maximum": 1}, {"exclusiveMinimum": 0},
             {"exclusiveMaximum": 0}, {"minimum": -1, "maximum": 1},
             {"exclusiveMinimum": -1, "exclusiveMaximum": 1},
             {"maximum": -3}, {"minimum": 5, "maximum": 5},
             {"exclusiveMinimum": MAX}, {"minimum": -MAX},
             {"maximum": 10 ** 20}, {"minimum": -10 ** 20,
                                     "exclusiveMaximum": 0},
             {"minimum": 1.0, "exclusiveMaximum": 2},
             {"minimum": 0.25, "maximum": 0.75},
             {"exclusiveMinimum": -0.5, "exclusiveMaximum": 0.5},
             {"minimum": "0.99999999999999999", "maximum": 1},
             {"exclusiveMaximum": "-0.00000000000000001"},
             {"minimum": "-1.00000000000000001", "maximum": -1},
             {"exclusiveMinimum": "9999999999999999.999999999999999"},
             {"minimum": 2.5, "maximum": 2.5},
             # Two bounds on one side at one value (the strict holds),
             # the one cut past 16 digits included.
             {"minimum": 0.5, "exclusiveMinimum": 0.5},
             {"minimum": "0.00000000000000001",
              "exclusiveMinimum": "-0.00000000000000001"},
             {"exclusiveMaximum": "-0.00000000000000001",
              "maximum": "0.0"},
             # Minus zero as a bound: zero.
             {"exclusiveMinimum": "-0.0"}, {"maximum": "-0"},
             {"minimum": "-0", "maximum": 1},
             # Exponents: the point moved, far either way.
             {"minimum": "-2.5e1", "maximum": "1E2"},
             {"exclusiveMaximum": "5e-17"},
             {"minimum": "1e-100000"},
             {"maximum": "-1e+3", "minimum": "-12345.678e-1"},
             {"maximum": "1e400"}, {"minimum": "0e99999"}]
    while len(cases) < 64:
        b = draw(rng)
        lo, hi = some(b)
        if lo < hi and lo < MAX and hi > -MAX:
            cases.append(b)
    checked = 0
    for bounds in cases:
        lo, hi = some(bounds)
        texts = {"0", "0.0", "-0", "-0.0", "1e2", "1.5E1", "01", ".5", "1.",
                 "+1", ""}
        for b in {lo, hi, Decimal(0)}:
            if abs(b) <= MAX + 1 and (b == 0 or abs(b) > Decimal("1e-40")):
                texts |= near(b)
        a, z = int(max(lo, -MAX)), int(min(hi, MAX))
        for _ in range(20):
            whole = rng.randint(a, z)
            digits = rng.randint(1, 16)
            frac = "".join(rng.choice("0123456789") for _ in range(digits))
            sign = "-" if whole < 0 or (whole == 0 and rng.random() < .5) \
                else ""
            texts.add(f"{sign}{abs(whole)}.{frac}")
        texts = sorted(texts)
        got = verdicts(archc, bounds_schema(bounds, "number"), texts,
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
