"""ctypes binding of runtime/include/archrt.h, for tests that drive a
compiled model library exactly as a C host would."""
import ctypes as C
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "python"))
from archc import _abi  # noqa: E402
from archc._abi import ParamInfo  # noqa: E402,F401  (the scripts' name)


class Error(RuntimeError):
    pass


class Cases:
    """Test cases of a script: prints "ok NAME" or "FAIL NAME: why" for
    each, and a closing count."""

    def __init__(self):
        self.failed = []

    def __call__(self, name, cond, why=""):
        print(("ok " if cond else "FAIL ") + name + ("" if cond else ": " + why))
        if not cond:
            self.failed.append(name)

    def error(self, lib, name, status, *fragments, msg=None):
        """A case that expects a failed call whose message holds every
        fragment (`msg`: the message, when read on another thread)."""
        if msg is None:
            msg = lib.lib.archrt_last_error().decode(errors="replace")
        ok = status != 0 and all(f in msg for f in fragments)
        self(name, ok, f"status {status}, message {msg!r}, wanted {fragments}")

    def summary(self):
        print(f"{len(self.failed)} failed")
        return 1 if self.failed else 0


def script_args(doc, *extra):
    """The --lib LIB --spec SPEC every check script takes (and the optional
    --NAME VALUE of each of `extra`)."""
    import argparse
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--spec", required=True)
    for name in extra:
        ap.add_argument("--" + name)
    return ap.parse_args()


class Lib:
    """A library with every archrt function declared (python/archc/_abi.py,
    the package's own table), called as a C host would."""

    def __init__(self, path):
        self.lib = _abi.bind(path)

    def check(self, status, what):
        if status != 0:
            raise Error(f"{what}: status {status}: "
                        f"{self.lib.archrt_last_error().decode()}")

    def model(self, weights=None):
        m = C.c_void_p()
        self.check(self.lib.archrt_model_create(C.byref(m)), "model_create")
        if weights:
            self.check(self.lib.archrt_load_weights(m, weights.encode()),
                       "load_weights")
        return m

    def seq(self, model, max_tokens=0):
        s = C.c_void_p()
        self.check(self.lib.archrt_seq_create(model, max_tokens, C.byref(s)),
                   "seq_create")
        return s

    def prefill(self, seq, tokens):
        arr = (C.c_int32 * len(tokens))(*tokens)
        self.check(self.lib.archrt_prefill(seq, arr, len(tokens)), "prefill")

    def decode(self, seq, token):
        self.check(self.lib.archrt_decode(seq, token), "decode")

    def logits(self, seq, vocab):
        p = self.lib.archrt_logits(seq)
        if not p:
            raise Error("archrt_logits returned NULL")
        return [p[i] for i in range(vocab)]
