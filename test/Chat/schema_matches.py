"""What archc grammar --json-schema --match says of texts under a schema:
the shared step of check_integer_bounds.py and check_patterns.py."""
import json
import os
import subprocess
import sys
import tempfile


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
