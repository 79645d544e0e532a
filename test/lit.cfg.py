# -*- Python -*-
import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "archc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".toml", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt",
                   "reference", "Inputs", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
# --param sanitize=1: every library the tests compile carries the runtime
# and glue built with ASan and UBSan (ARCHC_SANITIZE makes archc compile
# --sanitize the default), and every process starts with the sanitizer
# runtime preloaded but archc's commands other than run and bench
# (test/sanitize-bin/archc) and %archref, which open no library; leaks
# are left to the C host (Python and LLVM keep memory until exit). Its
# outputs live apart, so both runs can go at once.
sanitize = lit_config.params.get("sanitize", "0") == "1"
config.test_exec_root = os.path.join(config.archc_obj_root,
                                     "test-sanitize" if sanitize else "test")
if sanitize:
    import subprocess
    asan = subprocess.check_output(["cc", "-print-file-name=libasan.so"],
                                   text=True).strip()
    config.environment["ARCHC_SANITIZE"] = "1"
    config.environment["LD_PRELOAD"] = asan
    config.environment["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
    config.environment["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    config.available_features.add("sanitize")

# avx512: this CPU runs AVX-512 code, so tests may run libraries compiled
# for an explicit AVX-512 target (whose kernels differ from AVX2's).
# amx: its own target (host) has AMX tiles, so a bf16 GEMM in pairs runs
# the AMX ukernel: AMX-TILE and AMX-BF16, and AVX512-FP16, without which
# archc's host target drops avx512_sapphirerapids, and Linux grants the
# tiles' state (arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023,
# XFEATURE_XTILEDATA = 18); SYS_arch_prctl is 158 on x86-64) as archc asks
# (hostRunsAmx, lowering/HalideEmitter.cpp).
with open("/proc/cpuinfo") as cpuinfo:
    flags = next((set(line.split(":", 1)[1].split()) for line in cpuinfo
                  if line.startswith("flags")), set())
if "avx512f" in flags:
    config.available_features.add("avx512")
# avx512bf16, avx512fp16: the CPU's own 16-bit dot product and arithmetic
# (a bf16 dot product's kernel targets avx512_sapphirerapids, which
# assumes AVX512-FP16: built again without it where the CPU lacks it).
if "avx512_bf16" in flags:
    config.available_features.add("avx512bf16")
if "avx512_fp16" in flags:
    config.available_features.add("avx512fp16")
if {"amx_tile", "amx_bf16", "avx512_fp16"} <= flags:
    import ctypes
    if ctypes.CDLL(None, use_errno=True).syscall(158, 0x1023, 18) == 0:
        config.available_features.add("amx")

# clang19: clang-19 is on PATH, so archc compiles the glue with it
# (lowering/LibraryBuilder.cpp glueCompiler).
if shutil.which("clang-19"):
    config.available_features.add("clang19")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.archc_tools_dir, append_path=True)
# The sanitized run preloads the sanitizer runtime for the processes that
# open a compiled library; archc, but for `run` and `bench`, only writes
# files, so test/sanitize-bin/archc starts it without the preload (LLVM,
# Halide and gcc ran 2.6x slower under the intercepted allocator).
if sanitize:
    config.environment["ARCHC_BINARY"] = os.path.join(config.archc_tools_dir,
                                                      "archc")
    config.environment["PATH"] = os.pathsep.join(
        [os.path.join(config.archc_src_root, "test", "sanitize-bin"),
         config.environment["PATH"]])
# PyTorch in the tests must not spin OpenMP (or OpenBLAS) threads against
# Halide's pool: the reference's small float64 products need none.
config.environment["OMP_WAIT_POLICY"] = "passive"
config.environment["OPENBLAS_NUM_THREADS"] = "1"
for var in ["HOME", "ARCHC_CACHE", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]

root = config.archc_src_root
models = os.environ.get("ARCHC_CACHE",
                        os.path.join(os.path.expanduser("~"), ".cache", "archc"))
config.substitutions.append(("%specs", os.path.join(root, "specs")))
config.substitutions.append(("%{src_root}", root))
config.substitutions.append(("%{obj_root}", config.archc_obj_root))
config.substitutions.append(("%e2e", os.path.join(root, "test", "e2e")))
config.substitutions.append(("%models", models))
# Debian's python3 is the one with torch (TOOLCHAIN.md): first, since
# use_default_substitutions' %python (lit's own interpreter) would match
# before an appended one.
config.substitutions.insert(0, ("%python", "/usr/bin/python3"))
# The reference's own command line (seeded weights, greedy tokens): it
# opens no library, so the sanitized run starts it without the preload
# (PyTorch under the intercepted allocator imports in 3.6 s, not 1.4).
config.substitutions.append(
    ("%archref", ("env -u LD_PRELOAD " if sanitize else "") +
     "/usr/bin/python3 " +
     os.path.join(root, "test", "reference", "archref.py")))
# The runtime's tokenizer tool, over the sanitized runtime in that run.
config.substitutions.append(("%tokenize", "archrt-tokenize-san" if sanitize
                             else "archrt-tokenize"))
# The Python package as the build tree has it (CMakeLists.txt copies it).
config.substitutions.append(("%{pypath}", os.path.join(config.archc_obj_root,
                                                     "python")))
