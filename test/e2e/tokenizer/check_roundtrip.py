#!/usr/bin/env python3
"""Checks decode(encode(x)) for every record of a corpus against what the
tokenizer can give back (archrt-tokenize --decode prints the streamed
decoding of each record in hexadecimal).

  check_roundtrip.py --corpus FILE --decoded FILE --kind KIND

KIND says what is lost by design:
  lossless       byte-level BPE: every record back as it was (invalid UTF-8
                 as U+FFFD, the encoder's reading of it);
  nfc            the NFC normalizer: the record's NFC form;
  sentencepiece  Prepend/Replace of U+2581 and byte fallback: the record with
                 U+2581 read as a space, except records that spell a byte
                 token (<0x41> decodes to 'A') or hold special-token text
                 (the space the Strip decoder takes after BOS);
                 these are counted, not compared.
Prints the counts; exits 1 on the first record that differs.
"""
import argparse
import re
import sys
import unicodedata


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--decoded", required=True)
    ap.add_argument("--kind", required=True,
                    choices=["lossless", "nfc", "sentencepiece"])
    ap.add_argument("--special", action="append", default=[],
                    help="special-token text (sentencepiece: skip records "
                         "holding it)")
    args = ap.parse_args()
    records = open(args.corpus, "rb").read().split(b"\0")
    decoded = open(args.decoded).read().split("\n")[:-1]
    if len(decoded) != len(records):
        print("FAILED: %d decoded lines for %d records" %
              (len(decoded), len(records)))
        return 1
    byte_token = re.compile(r"<0x[0-9A-F]{2}>")
    compared = skipped = 0
    for i, (raw, hexed) in enumerate(zip(records, decoded)):
        text = raw.decode("utf-8", errors="replace")
        got = bytes.fromhex(hexed).decode("utf-8", errors="replace")
        if args.kind == "nfc":
            text = unicodedata.normalize("NFC", text)
        elif args.kind == "sentencepiece":
            if byte_token.search(text) or any(s in text
                                              for s in args.special):
                skipped += 1
                continue
            text = text.replace("\u2581", " ")
        if got != text:
            print("FAILED: record %d: %r back, %r expected" %
                  (i, got[:200], text[:200]))
            return 1
        compared += 1
    print("roundtrip: %d records equal, %d not compared" % (compared, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
