"""A required call's grammar after a thought the prompt opened (archc
grammar --tool-format hermes --thought opened): its text is any text in
which </think> does not appear. Seeded random texts over the mark's own
characters (and one other), each followed by </think>, a blank line and
a call: "whole" exactly where the text holds no </think>.
    check_thought_text.py ARCHC TOOLS.json"""
import json
import random
import subprocess
import sys

MARK = "</think>"
CALL = '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>'


def main():
    archc, tools = sys.argv[1], sys.argv[2]
    rng = random.Random(5)
    texts = ["", "<", "</think", "</thin<", "<</think", "</think>", "a</think>b",
             "</th</think", "<<<>", "think>", "/think>"]
    while len(texts) < 400:
        n = rng.randint(1, 24)
        texts.append("".join(rng.choice("</thinkx>") for _ in range(n)))
        if rng.random() < 0.5:  # the mark's prefix spliced in
            t = texts[-1]
            cut = rng.randint(0, len(t))
            texts[-1] = t[:cut] + MARK[:rng.randint(1, 8)] + t[cut:]
    args = [a for t in texts for a in ("--match", t + MARK + "\n\n" + CALL)]
    run = subprocess.run([archc, "grammar", tools, "--tool-format", "hermes",
                          "--thought", "opened"] + args,
                         capture_output=True, text=True)
    if run.returncode:
        sys.exit(run.stderr.strip())
    # (Each line: the text as a JSON string, ": ", the verdict.)
    decode = json.JSONDecoder().raw_decode
    got = [line[decode(line)[1] + 2:] for line in run.stdout.splitlines()
           if line.startswith('"')]
    if len(got) != len(texts):
        sys.exit(f"{len(got)} verdicts for {len(texts)} texts")
    held = 0
    for text, verdict in zip(texts, got, strict=True):
        want = MARK not in text
        if verdict.startswith("whole") != want:
            sys.exit(f"{text!r}: {verdict}, expected "
                     f"{'whole' if want else 'not whole'}")
        held += MARK in text
    print(f"thought texts: {len(texts)}, {held} holding {MARK}: each whole "
          f"exactly where {MARK} does not appear in it")


if __name__ == "__main__":
    main()
