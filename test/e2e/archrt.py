"""ctypes binding of runtime/include/archrt.h, for tests that drive a
compiled model library exactly as a C host would."""
import ctypes as C


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


def script_args(doc):
    """The --lib LIB --spec SPEC every check script takes."""
    import argparse
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--spec", required=True)
    return ap.parse_args()


class ParamInfo(C.Structure):
    """archrt_param_info."""
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_char_p),
                ("ndim", C.c_int32), ("shape", C.c_int64 * 4),
                ("source", C.c_char_p)]


class Lib:
    def __init__(self, path):
        self.lib = L = C.CDLL(path)
        vp, i32, st = C.c_void_p, C.c_int32, C.c_int
        sig = {
            "archrt_last_error": (C.c_char_p, []),
            "archrt_model_create": (st, [C.POINTER(vp)]),
            "archrt_model_free": (None, [vp]),
            "archrt_load_weights": (st, [vp, C.c_char_p]),
            "archrt_load_safetensors": (st, [vp, C.c_char_p]),
            "archrt_param_info_get": (st, [vp, i32, C.POINTER(ParamInfo)]),
            "archrt_init_random": (st, [vp, C.c_uint64]),
            "archrt_seq_create": (st, [vp, i32, C.POINTER(vp)]),
            "archrt_seq_free": (None, [vp]),
            "archrt_seq_reset": (st, [vp]),
            "archrt_prefill": (st, [vp, C.POINTER(i32), i32]),
            "archrt_decode": (st, [vp, i32]),
            "archrt_logits": (C.POINTER(C.c_float), [vp]),
            "archrt_tokenizer_load": (st, [C.c_char_p, i32, C.POINTER(vp)]),
            "archrt_tokenizer_free": (None, [vp]),
            "archrt_tokenizer_decode": (C.c_char_p, [vp, i32, i32]),
            "archrt_tokenizer_encode": (st, [vp, C.c_char_p, C.c_int, C.c_int,
                                             C.POINTER(i32), i32,
                                             C.POINTER(i32)]),
            "archrt_set_num_threads": (None, [C.c_int]),
        }
        for name, (res, args) in sig.items():
            f = getattr(L, name)
            f.restype, f.argtypes = res, args

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
