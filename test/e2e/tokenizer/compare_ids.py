#!/usr/bin/env python3
"""Compares two encodings of a corpus (one line of ids per record), record by
record, leaving out the records that the two encoders are not given alike:

  compare_ids.py --corpus FILE --ref FILE --got FILE
                 [--skip-invalid-utf8] [--skip-text TEXT ...]

--skip-invalid-utf8 leaves out records that are not valid UTF-8 (the
JavaScript reference reads each invalid subpart as U+FFFD, a SentencePiece
encoder takes the bytes as they are); --skip-text leaves out records
holding TEXT (say, special-token text that one encoder splits out and the
other does not). Prints the counts; exits 1 on the first record that
differs, naming it and the first id that does.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--got", required=True)
    ap.add_argument("--skip-invalid-utf8", action="store_true")
    ap.add_argument("--skip-text", action="append", default=[])
    args = ap.parse_args()
    records = open(args.corpus, "rb").read().split(b"\0")
    ref = open(args.ref).read().split("\n")[:-1]
    got = open(args.got).read().split("\n")[:-1]
    if not len(records) == len(ref) == len(got):
        print("FAILED: %d records, %d and %d lines" %
              (len(records), len(ref), len(got)))
        return 1
    skip = [s.encode("utf-8") for s in args.skip_text]
    equal = skipped = 0
    for i, (raw, a, b) in enumerate(zip(records, ref, got)):
        if any(s in raw for s in skip):
            skipped += 1
            continue
        if args.skip_invalid_utf8:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                skipped += 1
                continue
        if a != b:
            a, b = a.split(), b.split()
            k = 0
            while k < min(len(a), len(b)) and a[k] == b[k]:
                k += 1
            print("FAILED: record %d differs at id %d: %s against %s" %
                  (i, k, " ".join(b[k:k + 8]), " ".join(a[k:k + 8])))
            return 1
        equal += 1
    print("%d records equal, %d not compared" % (equal, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
