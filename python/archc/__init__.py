"""Run a model library compiled by `archc compile` from Python.

ctypes over the library's C ABI (runtime/include/archrt.h; nothing to
compile), numpy arrays in and out::

    import archc
    model = archc.load("stories15M.so", weights="stories15M.bin",
                       tokenizer="tokenizer.bin")
    for piece in model.generate("Once upon a time", 32, temperature=0.8,
                                top_p=0.9, seed=5):
        print(piece, end="", flush=True)

and, for research use, the raw calls::

    seq = model.sequence()
    logits = seq.prefill([1, 9038, 2501])   # float32 [vocab_size]
    logits = seq.decode(263)

Every failed call raises archc.Error with the runtime's message (the
file, tensor or argument at fault) and its status name.
"""
import ctypes as C
import os

import numpy as np

from . import _abi

__all__ = ["Error", "Library", "Model", "Sequence", "Tokenizer", "load"]

_STATUS = {1: "invalid argument", 2: "I/O error", 3: "format error",
           4: "mismatch", 5: "out of memory", 6: "state error",
           7: "kernel error"}


class Error(RuntimeError):
    """A failed archrt call: `status` (archrt_status), `message`."""

    def __init__(self, what, status, message):
        super().__init__(f"{what}: {message} "
                         f"({_STATUS.get(status, 'status %d' % status)})")
        self.status, self.message = status, message


class Library:
    """A compiled model library (a .so from `archc compile`)."""

    def __init__(self, path):
        path = os.fspath(path)
        if os.path.exists(path):  # (dlopen searches the library path for
            path = os.path.abspath(path)  # a name without a slash)
        try:
            self.c = _abi.bind(path)
        except OSError as e:
            raise Error("loading " + path, 2, str(e)) from None
        except AttributeError as e:  # a shared object, but not archc's
            raise Error("loading " + path, 3,
                        f"not an archc model library ({e})") from None
        if self.c.archrt_abi_version() != _abi.ABI_VERSION:
            raise Error("loading " + path, 4,
                        f"library ABI {self.c.archrt_abi_version()}, this "
                        f"package speaks {_abi.ABI_VERSION}")
        self.path = path

    def check(self, status, what):
        if status != 0:
            raise Error(what, status,
                        self.c.archrt_last_error().decode(errors="replace"))

    def set_num_threads(self, n):
        """The kernels' thread pool: 0 is one per core."""
        self.c.archrt_set_num_threads(int(n))


class Tokenizer:
    """A tokenizer file the runtime reads: Hugging Face tokenizer.json or
    llama2.c tokenizer.bin (told apart by their first bytes)."""

    def __init__(self, lib, path, vocab_size):
        self._lib, self._t = lib, C.c_void_p()
        lib.check(lib.c.archrt_tokenizer_load(os.fsencode(path), vocab_size,
                                              C.byref(self._t)),
                  "tokenizer_load")
        self.vocab_size = vocab_size

    def encode(self, text, bos=True, eos=False, max_tokens=None):
        """Token ids of UTF-8 `text` (a str or bytes). Special-token text
        ("</s>", "<end_of_turn>") is that token, as llama.cpp and Hugging
        Face tokenize it."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        if b"\0" in data:
            raise Error("tokenizer_encode", 1, "text holds a NUL byte (the "
                                               "C API takes a C string)")
        # Usually at most a token per byte and the special tokens around
        # them; the encoder reports the count it needs when that is not
        # room enough (invalid bytes, NFC expansions, a SentencePiece space
        # before each run of text between special tokens), and is asked
        # again with it.
        cap = len(data) + 16 if max_tokens is None else int(max_tokens)
        for _ in range(2):
            buf, n = (C.c_int32 * cap)(), C.c_int32()
            status = self._lib.c.archrt_tokenizer_encode(
                self._t, data, int(bos), int(eos), buf, cap, C.byref(n))
            if status == 0 or max_tokens is not None or n.value <= cap:
                break
            cap = n.value
        self._lib.check(status, "tokenizer_encode")
        return list(buf[:n.value])

    def is_stop(self, token):
        """Whether generation ends at `token` (its EOS and the like)."""
        return bool(self._lib.c.archrt_tokenizer_is_stop(self._t, int(token)))

    def decode_bytes(self, prev, token):
        """The bytes of `token` following `prev` (a byte token alone may be
        part of a UTF-8 character)."""
        s = self._lib.c.archrt_tokenizer_decode(self._t, prev, token)
        return s if s is not None else b""

    def close(self):
        if getattr(self, "_t", None):
            self._lib.c.archrt_tokenizer_free(self._t)
            self._t = C.c_void_p()

    __del__ = close


class Sequence:
    """One sequence's caches and position: prefill a prompt, decode tokens,
    read the logits of the last one."""

    def __init__(self, model, max_tokens=0):
        self.model, self._lib = model, model.lib
        self._s = C.c_void_p()
        self._lib.check(self._lib.c.archrt_seq_create(
            model._m, int(max_tokens), C.byref(self._s)), "seq_create")

    def __len__(self):
        return self._lib.c.archrt_seq_length(self._s)

    def prefill(self, tokens):
        """Appends `tokens` (ids); returns the last one's logits."""
        arr = np.ascontiguousarray(tokens, dtype=np.int32)
        if arr.ndim != 1 or arr.size == 0:
            raise Error("prefill", 1, "tokens must be a non-empty 1-D list "
                                      "of token ids")
        self._lib.check(self._lib.c.archrt_prefill(
            self._s, arr.ctypes.data_as(C.POINTER(C.c_int32)), arr.size),
            "prefill")
        return self.logits()

    def decode(self, token):
        """Appends one token; returns its logits."""
        self._lib.check(self._lib.c.archrt_decode(self._s, int(token)),
                        "decode")
        return self.logits()

    def logits(self):
        """A copy of the last appended token's logits, float32 [vocab]."""
        p = self._lib.c.archrt_logits(self._s)
        if not p:
            raise Error("logits", 6, "no logits yet: prefill first")
        return np.ctypeslib.as_array(p, (self.model.vocab_size,)).copy()

    def set_profiling(self, on=True):
        """Profile this sequence's kernel calls from now on (zeroing what
        was gathered), or stop (keeping it to read)."""
        self._lib.check(self._lib.c.archrt_seq_set_profiling(
            self._s, int(bool(on))), "seq_set_profiling")

    def profile(self):
        """Per kernel call site of the forward function, in its text order:
        dicts of kernel, op, calls and seconds gathered while profiling,
        and the rows, FLOPs and bytes its calls did and read: a matmul's
        token rows and weights, an attention's query-key pairs and cache
        rows (0 for other kernels)."""
        n = C.c_int32()
        c = self._lib.c
        self._lib.check(c.archrt_seq_profile(self._s, None, 0, C.byref(n)),
                        "seq_profile")
        sites = (_abi.ProfileSite * n.value)()
        self._lib.check(c.archrt_seq_profile(self._s, sites, n.value,
                                             C.byref(n)), "seq_profile")
        return [{"kernel": s.kernel.decode(), "op": s.op.decode(),
                 "calls": s.calls, "seconds": s.seconds, "rows": s.rows,
                 "flops": s.flops, "bytes": s.bytes}
                for s in sites]

    def reset(self):
        """Back to an empty sequence (linear attention's states zeroed)."""
        self._lib.check(self._lib.c.archrt_seq_reset(self._s), "seq_reset")

    def truncate(self, n):
        """Keep the first n positions (archrt_seq_truncate: refused where a
        linear-attention state or a sliding window's ring cannot go back
        that far)."""
        self._lib.check(self._lib.c.archrt_seq_truncate(self._s, n),
                        "seq_truncate")

    def close(self):
        if getattr(self, "_s", None):
            self._lib.c.archrt_seq_free(self._s)
            self._s = C.c_void_p()

    __del__ = close


class Model:
    """A model of a library with its weights: from a checkpoint (`weights`:
    safetensors file, directory or index, or llama2.c .bin) or seeded
    random (`random_seed`), and optionally a tokenizer."""

    def __init__(self, lib, weights=None, tokenizer=None, random_seed=None):
        self.lib = lib if isinstance(lib, Library) else Library(lib)
        self._m = C.c_void_p()
        self.lib.check(self.lib.c.archrt_model_create(C.byref(self._m)),
                       "model_create")
        info = _abi.ModelInfo()
        self.lib.check(self.lib.c.archrt_model_info_get(self._m,
                                                        C.byref(info)),
                       "model_info_get")
        self.info = {name: getattr(info, name) for name, _ in info._fields_}
        for key in ("name", "spec_toml"):
            self.info[key] = (self.info[key] or b"").decode()
        self.vocab_size = info.vocab_size
        self.max_seq_len = info.max_seq_len
        if weights is not None:
            self.lib.check(self.lib.c.archrt_load_weights(
                self._m, os.fsencode(weights)), "load_weights")
        elif random_seed is not None:
            self.lib.check(self.lib.c.archrt_init_random(
                self._m, C.c_uint64(random_seed)), "init_random")
        self.tokenizer = (Tokenizer(self.lib, tokenizer, self.vocab_size)
                          if tokenizer is not None else None)

    def params(self):
        """The parameter table: (name, shape, checkpoint source) each."""
        out, p = [], _abi.ParamInfo()
        for i in range(self.info["n_tensors"]):
            self.lib.check(self.lib.c.archrt_param_info_get(
                self._m, i, C.byref(p)), "param_info_get")
            out.append((p.name.decode(), tuple(p.shape[:p.ndim]),
                        (p.source or b"").decode()))
        return out

    def sequence(self, max_tokens=0):
        """A new sequence (max_tokens 0: max_seq_len positions)."""
        return Sequence(self, max_tokens)

    def generate_ids(self, prompt, n, temperature=0.0, top_p=1.0, seed=0,
                     stop=()):
        """Token ids after `prompt` (ids), at most `n` and within the
        model's context, sampled as `archc run` samples (temperature 0:
        greedy; else softmax(logits / T) with nucleus top_p; seeded); ends
        before a token in `stop` (ids, or a function of the id)."""
        stops = stop if callable(stop) else (lambda t, s=tuple(stop): t in s)
        prompt = list(prompt)
        sampler = C.c_void_p()
        self.lib.check(self.lib.c.archrt_sampler_create(
            self.vocab_size, float(temperature), float(top_p),
            C.c_uint64(seed), C.byref(sampler)), "sampler_create")
        seq = None
        try:
            seq = self.sequence()
            logits = seq.prefill(prompt)
            total = min(int(n), self.max_seq_len - len(prompt))
            nxt = C.c_int32()
            for i in range(total):
                self.lib.check(self.lib.c.archrt_sample(
                    sampler, logits.ctypes.data_as(C.POINTER(C.c_float)),
                    C.byref(nxt)), "sample")
                if stops(nxt.value):
                    return
                yield nxt.value
                if i + 1 < total:
                    logits = seq.decode(nxt.value)
        finally:
            self.lib.c.archrt_sampler_free(sampler)
            if seq is not None:
                seq.close()

    def generate(self, prompt, n, temperature=0.0, top_p=1.0, seed=0):
        """Text after `prompt` (text, encoded with BOS), as a stream of
        str pieces, one per token (a character split across byte tokens
        comes whole with its last byte); stops where the tokenizer says
        generation ends (EOS: a tokenizer.json's special tokens,
        tokenizer.bin's ids 1 and 2), as `archc run` does."""
        if self.tokenizer is None:
            raise Error("generate", 6, "no tokenizer: load the model with "
                                       "tokenizer=PATH, or use "
                                       "generate_ids")
        ids = self.tokenizer.encode(prompt, bos=True)
        prev, pending = ids[-1], b""
        for t in self.generate_ids(ids, n, temperature, top_p, seed,
                                   stop=self.tokenizer.is_stop):
            pending += self.tokenizer.decode_bytes(prev, t)
            prev = t
            text, pending = _complete_utf8(pending)
            if text:
                yield text
        if pending:
            yield pending.decode(errors="replace")

    def close(self):
        if getattr(self, "tokenizer", None) is not None:
            self.tokenizer.close()
        if getattr(self, "_m", None):
            self.lib.c.archrt_model_free(self._m)
            self._m = C.c_void_p()

    __del__ = close


def _complete_utf8(data):
    """(the text of data's complete UTF-8 characters, the bytes after them:
    a character's first bytes, waiting for the rest)."""
    cut = len(data)
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 == 0x80:  # a continuation byte: look further back
            continue
        need = 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else \
            4 if b & 0xF8 == 0xF0 else 1
        if need > back:
            cut = len(data) - back
        break
    return data[:cut].decode(errors="replace"), data[cut:]


def load(library, weights=None, tokenizer=None, threads=0, random_seed=None):
    """A Model of the library at `library` (threads: 0 is one per core)."""
    lib = Library(library)
    lib.set_num_threads(threads)
    return Model(lib, weights=weights, tokenizer=tokenizer,
                 random_seed=random_seed)
