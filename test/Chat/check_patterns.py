"""String schemas' `pattern`s against JavaScript's own RegExp (node: the
ECMA-262 that JSON Schema names, with the "u" flag JSON Schema advises;
without it for a pattern only the web's lenient syntax reads, as "-{"):
for each pattern, every string of up to 4 characters over a
10-character alphabet (letters, a digit, a space, '-', '"', a backslash,
a newline, 'é', an emoji past the BMP), written as JSON writes it, is
"whole" for archc grammar --json-schema --match exactly where
RegExp.test finds the pattern in it (searched, as JSON Schema does,
unless anchored); and patterns that name control characters, over an
alphabet that holds two.
    check_patterns.py ARCHC"""
import itertools
import json
import sys

from schema_matches import node_tests, verdicts

PATTERNS = [
    "^[a-c]+$", "b", "^\\d{2,3}-\\w?$", "^(ab|a)\\\\$", "[^a]", "^.$",
    "a|^b$", "^\"{1,2}\\n?$", "^a{2}$", "^[\\w-]{1,3}$", "",
    "^(?:a|b)*-$", "^[^\"\\\\]*$", "\\s", "^\\S+$", "^é?1*$", "^(a|b-)?1$",
    "^[a\\-]{2}$", "^\\W$", "^[\\d\\s]+$", "^a+?b$", "a{2,}", "^(?<n>a)b$",
    "\\x61$", "^\\u00e9", "^[é-ú]$", "^[^\\n]*$", "-{", "^(a|b-)(1|\")$",
    "^.{2}$", "^[^a]$", "^\\u{1F600}?b", "^[😀-😂]",
]
ALPHABET = ["a", "b", "1", " ", "-", "\"", "\\", "\n", "é", "😀"]
CONTROL_PATTERNS = ["^[\\x00-\\x07]+$", "^a\\x01?$", "^[\\x01b]$"]
CONTROL_ALPHABET = ["a", "b", "\x01", "\x02"]

NODE = r"""
const fs = require("fs");
const [patterns, strings] = JSON.parse(fs.readFileSync(process.argv[1]));
const regexp = p => { try { return new RegExp(p, "u"); }
                      catch (e) { return new RegExp(p); } };
console.log(JSON.stringify(patterns.map(
    p => strings.map(s => regexp(p).test(s)))));
"""


def check(archc, patterns, alphabet, length):
    """The count of strings checked; exits at the first that differs."""
    strings = ["".join(t) for n in range(length + 1)
               for t in itertools.product(alphabet, repeat=n)]
    checked = 0
    want = node_tests(NODE, patterns, strings)
    texts = [json.dumps(s, ensure_ascii=False) for s in strings]
    for pattern, expected in zip(patterns, want, strict=True):
        got = verdicts(archc, {"type": "string", "pattern": pattern},
                       texts, f"pattern {pattern!r}")
        for s, verdict, match in zip(strings, got, expected, strict=True):
            if (verdict == "whole") != match:
                sys.exit(f"pattern {pattern!r}: {s!r} {verdict}, "
                         f"RegExp {'finds' if match else 'does not '}"
                         "find it")
            checked += 1
    return checked


def main():
    archc = sys.argv[1]
    checked = check(archc, PATTERNS, ALPHABET, 4)
    checked += check(archc, CONTROL_PATTERNS, CONTROL_ALPHABET, 3)
    print(f"patterns: {len(PATTERNS) + len(CONTROL_PATTERNS)}, {checked} "
          "strings, each whole exactly where RegExp finds the pattern")


if __name__ == "__main__":
    main()
