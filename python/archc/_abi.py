"""The C ABI of an archc-compiled library (runtime/include/archrt.h) as
ctypes declarations: one table, used by the package and by the tests that
drive a library exactly as a C host would (test/e2e/archrt.py)."""
import ctypes as C

ABI_VERSION = 6  # ARCHRT_ABI_VERSION


class ModelInfo(C.Structure):
    """archrt_model_info."""
    _fields_ = [("name", C.c_char_p), ("spec_toml", C.c_char_p),
                ("vocab_size", C.c_int32), ("d_model", C.c_int32),
                ("n_layers", C.c_int32), ("n_heads", C.c_int32),
                ("n_kv_heads", C.c_int32), ("head_dim", C.c_int32),
                ("d_ff", C.c_int32), ("max_seq_len", C.c_int32),
                ("n_params", C.c_int64), ("n_tensors", C.c_int32),
                ("cache_bytes_per_token", C.c_int64),
                ("fixed_cache_bytes", C.c_int64)]


class ParamInfo(C.Structure):
    """archrt_param_info."""
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_char_p),
                ("ndim", C.c_int32), ("shape", C.c_int64 * 4),
                ("source", C.c_char_p)]


class ProfileSite(C.Structure):
    """archrt_profile_site."""
    _fields_ = [("kernel", C.c_char_p), ("op", C.c_char_p),
                ("calls", C.c_int64), ("seconds", C.c_double),
                ("rows", C.c_int64), ("flops", C.c_int64),
                ("bytes", C.c_int64)]


_vp, _i32, _st = C.c_void_p, C.c_int32, C.c_int
SIGNATURES = {
    "archrt_last_error": (C.c_char_p, []),
    "archrt_abi_version": (C.c_int, []),
    "archrt_model_create": (_st, [C.POINTER(_vp)]),
    "archrt_model_free": (None, [_vp]),
    "archrt_model_info_get": (_st, [_vp, C.POINTER(ModelInfo)]),
    "archrt_param_info_get": (_st, [_vp, _i32, C.POINTER(ParamInfo)]),
    "archrt_load_weights": (_st, [_vp, C.c_char_p]),
    "archrt_load_safetensors": (_st, [_vp, C.c_char_p]),
    "archrt_init_random": (_st, [_vp, C.c_uint64]),
    "archrt_set_num_threads": (None, [C.c_int]),
    "archrt_seq_create": (_st, [_vp, _i32, C.POINTER(_vp)]),
    "archrt_seq_free": (None, [_vp]),
    "archrt_seq_reset": (_st, [_vp]),
    "archrt_seq_truncate": (_st, [_vp, _i32]),
    "archrt_seq_length": (_i32, [_vp]),
    "archrt_prefill": (_st, [_vp, C.POINTER(_i32), _i32]),
    "archrt_decode": (_st, [_vp, _i32]),
    "archrt_logits": (C.POINTER(C.c_float), [_vp]),
    "archrt_seq_set_profiling": (_st, [_vp, C.c_int]),
    "archrt_seq_profile": (_st, [_vp, C.POINTER(ProfileSite), _i32,
                                 C.POINTER(_i32)]),
    "archrt_sampler_create": (_st, [_i32, C.c_float, C.c_float, C.c_uint64,
                                    C.POINTER(_vp)]),
    "archrt_sampler_free": (None, [_vp]),
    "archrt_sample": (_st, [_vp, C.POINTER(C.c_float), C.POINTER(_i32)]),
    "archrt_tokenizer_load": (_st, [C.c_char_p, _i32, C.POINTER(_vp)]),
    "archrt_tokenizer_free": (None, [_vp]),
    "archrt_tokenizer_encode": (_st, [_vp, C.c_char_p, C.c_int, C.c_int,
                                      C.POINTER(_i32), _i32,
                                      C.POINTER(_i32)]),
    "archrt_tokenizer_decode": (C.c_char_p, [_vp, _i32, _i32]),
    "archrt_tokenizer_is_stop": (C.c_int, [_vp, _i32]),
}


def bind(path):
    """The library at `path` with every archrt function declared."""
    lib = C.CDLL(path)
    for name, (res, args) in SIGNATURES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib
