"""What archc grammar --json-schema --match says of texts under a schema:
the shared step of check_integer_bounds.py, check_number_bounds.py and
check_patterns.py; the bounds the two bounds' scripts draw; and
JavaScript's RegExp through node (check_patterns.py, check_enum_keep.py)."""
import json
import os
import subprocess
import sys
import tempfile
from decimal import Decimal

BOUND_KEYS = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]


def bound_value(v):
    """A bound's exact value: its text's (a str, written as it is), or the
    repr json writes of an int or a float."""
    return Decimal(v) if isinstance(v, str) else Decimal(repr(v))


def bounds_schema(bounds, type_):
    """The schema of `type_` with `bounds`, each written as its text."""
    return "{" + "".join(f'"{k}": {v if isinstance(v, str) else repr(v)}, '
                         for k, v in bounds.items()) + f'"type": "{type_}"}}'


def draw_bounds(rng, scales, written):
    """One or two bounds, each an integer of -scale..scale (scale one of
    `scales`) as `written(rng, v)` writes it."""
    scale = rng.choice(scales)
    return {k: written(rng, rng.randint(-scale, scale))
            for k in rng.sample(BOUND_KEYS, rng.randint(1, 2))}


def node_tests(script, patterns, strings):
    """What node's `script` prints for [patterns, strings] (a JSON file
    named by its first argument): each pattern's RegExp.test of each
    string, as a list of lists."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/in.json", "w") as f:
            json.dump([patterns, strings], f)
        return json.loads(subprocess.run(
            ["node", "-e", script, f"{tmp}/in.json"], env=env,
            capture_output=True, text=True, check=True).stdout)


def verdicts(archc, schema, texts, what):
    """Each text's verdict under `schema` (a dict, or its JSON text), in
    order: "whole",
    "prefix" or "no (after N bytes)". Exits naming `what` where archc
    refuses the schema."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.json")
        with open(path, "w") as f:
            if isinstance(schema, str):
                f.write(schema)
            else:
                json.dump(schema, f)
        run = subprocess.run(
            [archc, "grammar", "--json-schema", path] +
            [a for t in texts for a in ("--match", t)],
            capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"{what}: {run.stderr.strip()}")
    got = [line.rsplit(": ", 1)[1] for line in run.stdout.splitlines()
           if line.startswith('"')]
    if len(got) != len(texts):
        sys.exit(f"{what}: {len(got)} verdicts for {len(texts)} texts")
    return got
