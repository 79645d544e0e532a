#!/usr/bin/env python3
"""Checks an `archc run --chat --verbose-prompt` conversation (or `archc
serve --verbose-prompt`'s log of one, each completion a turn).

Each turn's prompt must be the conversation so far as jinja2 renders the
template (test/Chat/reference.py: Hugging Face's environment), with the
replies as archc printed them; its tokens those of the reference tokenizer
(test/e2e/tokenizer/reference.mjs, no special tokens added, as
apply_chat_template tokenizes); the positions archc kept in the cache the
longest prefix they share with what it held (the previous prompt, the
reply's decoded tokens), less the last where they are all; and each reply's
greedy tokens those a fresh run of the library gives from the whole prompt
in one prefill (`archc run --prompt IDS`): what the turns kept in the cache
is what a recomputation would hold.

  check_chat.py --lib LIB --weights W --template T --tokenizer DIR
                --specials JSON --log ERR [--system S] --users JSON -n N

--users: the user messages, a JSON list; -n: archc run's -n. --resets: the
library cannot go back (a linear-attention state): a turn that keeps less
than it held must start over (reset), prefilling the whole prompt.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "Chat"))
import reference  # noqa: E402


def parse_log(path):
    turns = {}
    # (archc run --chat's turns; archc serve's completions.)
    pat = re.compile(r"^\[archc\] (?:turn|completion) (\d+): "
                     r"(prompt|prefill|reply|grammar: the mask made at) "
                     r"(.*)$")
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            m = pat.match(line.rstrip("\n"))
            if not m:
                continue
            t = turns.setdefault(int(m.group(1)), {})
            kind, rest = m.group(2), m.group(3)
            if kind == "prompt":
                t["prompt"] = json.loads(rest)
            elif kind == "prefill":
                pm = re.match(r"(\d+) tokens after (\d+)( \(reset\))?:(.*)$",
                              rest)
                t["kept"] = int(pm.group(2))
                t["reset"] = bool(pm.group(3))
                t["prefill"] = [int(x) for x in pm.group(4).split()]
                assert len(t["prefill"]) == int(pm.group(1)), rest
            elif kind.startswith("grammar"):
                gm = re.match(r"(\d+) of (\d+) tokens$", rest)
                t["masks"] = (int(gm.group(1)), int(gm.group(2)))
            elif rest.startswith('"'):
                t["reply_text"] = json.loads(rest)
            else:
                rm = re.match(r"(\d+) tokens:(.*)$", rest)
                t["reply"] = [int(x) for x in rm.group(2).split()]
    return turns


def reference_ids(tokenizer, text):
    """The reference tokenizer's ids of `text`, no special tokens added
    (node without the sanitizer's preload)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    with tempfile.NamedTemporaryFile("wb", suffix=".bin") as f:
        f.write(text.encode("utf-8", "surrogateescape"))
        f.flush()
        out = subprocess.run(
            ["node", os.path.join(HERE, "tokenizer", "reference.mjs"),
             tokenizer, f.name, "--no-special"], env=env,
            capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--weights", required=True)
    # (The fresh runs' weights, the same values: a GGUF file whose
    # tokenizer would read the prompt's ids as text has a twin without.)
    ap.add_argument("--fresh-weights")
    ap.add_argument("--template", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--specials", default="{}")
    ap.add_argument("--log", required=True)
    ap.add_argument("--system")
    ap.add_argument("--users", required=True)
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("--resets", action="store_true")
    args = ap.parse_args()
    users = json.loads(args.users)

    turns = parse_log(args.log)
    if sorted(turns) != list(range(1, len(users) + 1)):
        sys.exit(f"turns {sorted(turns)}, expected {len(users)}")
    with open(args.template, encoding="utf-8", newline="") as f:
        env = reference.environment().from_string(f.read())
    specials = json.loads(args.specials)
    messages = [{"role": "system", "content": args.system}] \
        if args.system else []
    held, resets = [], 0
    for i, user in enumerate(users, 1):
        t = turns[i]
        messages.append({"role": "user", "content": user})
        rendered = env.render(messages=messages, add_generation_prompt=True,
                              **specials)
        if t["prompt"] != rendered:
            sys.exit(f"turn {i}: the prompt is not jinja2's rendering:\n"
                     f"{t['prompt']!r}\n{rendered!r}")
        ids = reference_ids(args.tokenizer, rendered)
        common = 0
        while (common < len(held) and common + 1 < len(ids)
               and held[common] == ids[common]):
            common += 1
        if args.resets and common < len(held):
            common = 0  # the truncation refused: from the start
        if t["reset"] != (args.resets and bool(held) and common == 0) or \
                t["kept"] != common:
            sys.exit(f"turn {i}: kept {t['kept']} positions (reset "
                     f"{t['reset']}), the common prefix is {common}")
        resets += t["reset"]
        if ids[:common] + t["prefill"] != ids:
            sys.exit(f"turn {i}: the kept and prefilled tokens are not the "
                     f"reference tokenizer's:\n{ids}")
        fresh = subprocess.run(
            ["archc", "run", args.lib, "--weights",
             args.fresh_weights or args.weights,
             "--prompt", ",".join(map(str, ids)), "-n", str(args.n),
             "--quiet"], capture_output=True, text=True, check=True)
        fresh_ids = [int(x) for x in fresh.stdout.split()]
        reply = t["reply"]
        if fresh_ids[:len(reply)] != reply:
            sys.exit(f"turn {i}: reply {reply} != a fresh run's "
                     f"{fresh_ids[:len(reply)]}")
        # The cache holds the prompt and the reply's decoded tokens: all but
        # a last one at the -n limit.
        print(f"turn {i}: {len(ids)} tokens as jinja2 and the reference "
              f"tokenizer give them, {common} kept of {len(held)} held; "
              f"{len(reply)} reply tokens as a fresh run gives them")
        held = ids + (reply[:-1] if len(reply) == args.n else reply)
        messages.append({"role": "assistant", "content": t["reply_text"]})
    print(f"chat: {len(users)} turns agree, {resets} resets")


if __name__ == "__main__":
    main()
