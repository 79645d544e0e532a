"""Checks the first kernel's target line of an --emit=halide listing
against this CPU's /proc/cpuinfo flags (see host-target.test)."""
import re
import sys

flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
text = open(sys.argv[1]).read()
target = re.search(r"^// kernel \S+ \(target (\S+)\)", text, re.M).group(1)
features = set(target.split("-"))
want = {
    "avx512": "avx512f" in flags,
    "avx512_sapphirerapids": "avx512_fp16" in flags,
    "avx2": "avx2" in flags,
    "fma": "fma" in flags,
}
bad = [f"{f}: target {'has' if f in features else 'lacks'} it, the CPU "
       f"{'has' if v else 'lacks'} it"
       for f, v in want.items() if (f in features) != v]
print(f"target {target}")
if bad:
    print("MISMATCH: " + "; ".join(bad))
    sys.exit(1)
print("target matches the CPU")
