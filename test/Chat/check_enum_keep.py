"""`const` and `enum` beside `type`, the lengths, the bounds and `pattern`:
for seeded random schemas (an enum of 1 to 6 values drawn from numbers
written many ways, strings, arrays, objects, booleans and null; one to
four of the keywords, each drawn), archc's grammar takes exactly the
values JSON Schema keeps: a type among those named (an integer: a number
of no fraction, 1.0 and 1e1 too), a string's code points and an array's
items within the lengths, a number within the bounds by its exact
decimal value (Python's decimals), a string in which JavaScript's own
RegExp (node, the "u" flag) finds the pattern; a keyword speaks only of
values of its kind. Where none is kept, archc refuses the schema naming
the keywords ('const': the first it does not meet).
    check_enum_keep.py ARCHC"""
import json
import random
import subprocess
import sys
import tempfile
from decimal import Decimal

from schema_matches import BOUND_KEYS, node_tests

NUMBERS = ["0", "-0", "1", "1.0", "1e1", "10.00", "2.5", "-3.25e-1", "7",
           "-7", "100", "1E2", "0.1", "0.10000000000000000001", "-2",
           "12345678901234567890", "1e-400", "-1e400", "3.5e0", "9.99"]
STRINGS = ["", "a", "ab", "ba", "abc", "cab", "é", "éé", "a1", "12", "😀b",
           "a\"b", "x\\\\y", "b", "\bb", "a\x01", "\x7fb", "\nb"]
OTHERS = ["null", "true", "false", "[]", "[1]", "[1,\"a\"]", "[[],2,3]",
          "{}", "{\"a\":1}"]
TYPES = ["string", "number", "integer", "boolean", "null", "array", "object"]
PATTERNS = ["^a", "b$", "^[a-c]+$", "é", "^.{2}$", "\\d", "^$"]
BOUNDS = ["0", "1", "1.0", "2.5", "-2", "7", "1e1", "9.99", "100", "-0.5",
          "1e400", "-1e-400", "12345678901234567890.5", "0.1000000000000000000001"]

NODE = r"""
const fs = require("fs");
const [patterns, strings] = JSON.parse(fs.readFileSync(process.argv[1]));
// (A pattern's "." leaves out the controls JSON writes as \u00XX, as
// archc's grammar of it does: docs/design.md.)
const dot = "[^\\n\\r\\u2028\\u2029\\x00-\\x07\\x0b\\x0e-\\x1f\\x7f]";
console.log(JSON.stringify(patterns.map(
    p => strings.map(s => new RegExp(p.replaceAll(".", dot), "u").test(s)))));
"""


def kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "number"


def unmet(raw, schema, found):
    """The keywords the value written `raw` does not meet."""
    v = json.loads(raw, parse_float=Decimal, parse_int=Decimal)
    k = kind(v)
    out = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) \
            else [schema["type"]]
        integral = k == "number" and v == v.to_integral_value()
        if k not in types and not (integral and "integer" in types):
            out.append("type")
    n = len(v) if k in ("string", "array") else None
    low, high = ("minLength", "maxLength") if k == "string" \
        else ("minItems", "maxItems")
    if n is not None and n < schema.get(low, 0):
        out.append(low)
    if n is not None and high in schema and n > schema[high]:
        out.append(high)
    if k == "number":
        for b in BOUND_KEYS:
            if b in schema:
                c = Decimal(schema[b])
                ok = {"minimum": v >= c, "maximum": v <= c,
                      "exclusiveMinimum": v > c,
                      "exclusiveMaximum": v < c}[b]
                if not ok:
                    out.append(b)
    if k == "string" and "pattern" in schema \
            and not found[(schema["pattern"], v)]:
        out.append("pattern")
    return out


def draw(rng):
    """A schema (a dict; the bounds' values as their text) and its
    values' texts."""
    pool = NUMBERS + [json.dumps(s, ensure_ascii=False) for s in STRINGS] \
        + OTHERS
    values = rng.sample(pool, rng.randint(1, 6))
    schema = {}
    for key in rng.sample(["type", "length", "items", "bound", "bound",
                           "pattern"], rng.randint(1, 4)):
        if key == "type":
            t = rng.sample(TYPES, rng.randint(1, 2))
            schema["type"] = t[0] if len(t) == 1 else t
        elif key in ("length", "items"):
            names = ["minLength", "maxLength"] if key == "length" \
                else ["minItems", "maxItems"]
            for name in rng.sample(names, rng.randint(1, 2)):
                schema[name] = rng.randint(0, 3)
        elif key == "bound":
            schema[rng.choice(BOUND_KEYS)] = rng.choice(BOUNDS)
        else:
            schema["pattern"] = rng.choice(PATTERNS)
    return schema, values


def text(schema, values, const):
    """The schema's JSON text, its bounds and values written as drawn."""
    members = [f'"const": {values[0]}' if const
               else f'"enum": [{", ".join(values)}]']
    for k, v in schema.items():
        members.append(f'"{k}": {v}' if k in BOUND_KEYS
                       else f'"{k}": {json.dumps(v)}')
    return "{" + ", ".join(members) + "}"


def main():
    archc = sys.argv[1]
    rng = random.Random(20261208)
    drawn = [draw(rng) for _ in range(240)]
    found = {(p, s): m
             for p, row in zip(PATTERNS, node_tests(NODE, PATTERNS, STRINGS))
             for s, m in zip(STRINGS, row)}
    with tempfile.TemporaryDirectory() as tmp:
        counts = {"kept": 0, "left": 0, "refused": 0}
        for i, (schema, values) in enumerate(drawn):
            const = i % 4 == 0
            if const:
                values = values[:1]
            body = text(schema, values, const)
            path = f"{tmp}/s.json"
            with open(path, "w") as f:
                f.write(body)
            # (Each value as the grammar spells it: JSON's escapes as
            # json.dumps writes them, DEL as \u007f too.)
            run = subprocess.run(
                [archc, "grammar", "--json-schema", path] +
                [a for v in values
                 for a in ("--match", v.replace("\x7f", "\\u007f"))],
                capture_output=True, text=True)
            misses = [unmet(v, schema, found) for v in values]
            kept = [not m for m in misses]
            if not any(kept):
                want = (f"'const' does not meet its '{misses[0][0]}'" if const
                        else "no value of 'enum' meets its ")
                if run.returncode == 0 or want not in run.stderr:
                    sys.exit(f"{body}: want a refusal with {want!r}, got "
                             f"{run.returncode}: {run.stderr.strip()}")
                counts["refused"] += 1
                continue
            if run.returncode:
                sys.exit(f"{body}: refused: {run.stderr.strip()}")
            verdicts = [line.rsplit(": ", 1)[1]
                        for line in run.stdout.splitlines()
                        if line.startswith('"')]
            for v, keep, verdict in zip(values, kept, verdicts, strict=True):
                if (verdict == "whole") != keep:
                    sys.exit(f"{body}: {v} is {verdict!r}, want "
                             f"{'kept' if keep else 'left out'}")
                counts["kept" if keep else "left"] += 1
    print(f"enum keep: {len(drawn)} schemas, {counts['kept']} values kept, "
          f"{counts['left']} left out, {counts['refused']} refused, each as "
          f"JSON Schema reads them")


main()
