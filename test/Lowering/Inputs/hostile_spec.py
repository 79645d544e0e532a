"""Prints a valid tiny spec whose comments hold text that would inject code
into a generated C file that did not escape it: comment terminators, a
constructor, trigraphs (??/ is a backslash under -std=c11), quotes,
backslashes, tabs and non-ASCII text."""
import sys

evil = [
    "# ??/",
    '# */ __attribute__((constructor)) static void pwn(void) { } /*',
    '# "; int pwned = 1; const char *x = "',
    "# \\\" \\\\ ??= ??( ??) ??' ??< ??> ??! ??- ?\\?/",
    "# \t tab, non-ASCII \u00e9 \u2603 (TOML forbids other control bytes)",
]
spec = """[model]
name = "hostile"
vocab_size = 16
d_model = 8
n_layers = 1
max_seq_len = 8
[attention]
n_heads = 2
[ffn]
d_ff = 8
"""
out = "\n".join(evil) + "\n" + spec
sys.stdout.buffer.write(out.encode("utf-8"))
