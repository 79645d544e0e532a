#!/usr/bin/env python3
"""archc chat-template against jinja2 (reference.py), every template over
every context: the same text byte for byte, or both failing with the same
message (jinja2's, or the template's own raise_exception message, within
archc's, which adds the place).

  compare.py --contexts DIR SOURCE...

SOURCE: a .jinja file (rendered with bos_token "<s>" and eos_token "</s>")
or a model directory (its tokenizer_config.json's template and special
tokens). Prints a line a case and 'agree: N of M (K fail in both)'; exits 1 on a
mismatch.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--contexts", required=True)
    ap.add_argument("sources", nargs="+")
    args = ap.parse_args()
    contexts = sorted(glob.glob(os.path.join(args.contexts, "*.json")))
    total = agree = failing = 0
    with tempfile.TemporaryDirectory() as tmp:
        for source in args.sources:
            is_dir = os.path.isdir(source)
            name = os.path.basename(source.rstrip("/"))
            for path in contexts:
                with open(path, encoding="utf-8") as f:
                    context = json.load(f)
                if not is_dir:
                    context.setdefault("bos_token", "<s>")
                    context.setdefault("eos_token", "</s>")
                ctx = os.path.join(tmp, "context.json")
                with open(ctx, "w", encoding="utf-8") as f:
                    json.dump(context, f, ensure_ascii=False)
                ref_cmd = [sys.executable, os.path.join(HERE, "reference.py")]
                ref_cmd += (["--config",
                             os.path.join(source, "tokenizer_config.json")]
                            if is_dir else [source])
                rc_ref, out_ref, err_ref = run(ref_cmd + [ctx])
                rc, out, err = run(["archc", "chat-template", source,
                                    "--messages", ctx])
                case = f"{name} {os.path.basename(path)}"
                total += 1
                if rc_ref == 0 and rc == 0 and out == out_ref:
                    agree += 1
                    print(f"ok {case}")
                elif rc_ref != 0 and rc != 0:
                    message = err_ref.strip().removeprefix("error: ")
                    if message and message in err:
                        agree += 1
                        failing += 1
                        print(f"ok {case} (both fail: {message})")
                    else:
                        print(f"MISMATCH {case}: archc '{err.strip()}', "
                              f"jinja2 '{message}'")
                else:
                    print(f"MISMATCH {case}: archc rc {rc}, jinja2 rc "
                          f"{rc_ref}")
                    print(f"  archc:  {out[:300]!r} {err.strip()}")
                    print(f"  jinja2: {out_ref[:300]!r} {err_ref.strip()}")
    print(f"agree: {agree} of {total} ({failing} fail in both)")
    sys.exit(0 if agree == total else 1)


if __name__ == "__main__":
    main()
