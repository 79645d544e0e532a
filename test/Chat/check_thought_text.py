"""A required call's grammar after a thought the prompt opened (archc
grammar --tool-format hermes --thought opened): its text is any text in
which </think> does not appear. Seeded random texts over the mark's own
characters, a letter, space and two characters of several bytes (some
starting with <think>, which the parser leaves out of an opened
thought), each followed by </think>, a blank line and a call: "whole"
exactly where the text holds no </think>, and then the thought the
server's parser reads (its bytes) the text less that <think> and the
space at its ends.
    check_thought_text.py ARCHC TOOLS.json"""
import json
import random
import subprocess
import sys

MARK = "</think>"
SPACE = " \t\r\n"  # (what the parser trims from a thought's ends)
CALL = '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>'


def main():
    archc, tools = sys.argv[1], sys.argv[2]
    rng = random.Random(5)
    texts = ["", "<", "</think", "</thin<", "<</think", "</think>", "a</think>b",
             "</th</think", "<<<>", "think>", "/think>"]
    while len(texts) < 400:
        n = rng.randint(1, 24)
        texts.append("".join(rng.choice("</thinkx> \u00e9\u2014")
                             for _ in range(n)))
        if rng.random() < 0.5:  # the mark's prefix spliced in
            t = texts[-1]
            cut = rng.randint(0, len(t))
            texts[-1] = t[:cut] + MARK[:rng.randint(1, 8)] + t[cut:]
        if rng.random() < 0.1:
            texts[-1] = rng.choice(["<think>", " <think>\n"]) + texts[-1]
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
        if want:
            rest = text.lstrip(SPACE)
            if rest.startswith("<think>"):
                rest = rest[len("<think>"):]
            size = len(rest.strip(SPACE).encode())
            if f"a thought of {size} bytes" not in verdict:
                sys.exit(f"{text!r}: {verdict}, expected a thought of "
                         f"{size} bytes")
        held += MARK in text
    print(f"thought texts: {len(texts)}, {held} holding {MARK}: each whole "
          f"exactly where {MARK} does not appear in it, and the parser's "
          "thought its text")


if __name__ == "__main__":
    main()
