#!/usr/bin/env python3
"""archc ended by a signal leaves no temporaries and no output: for SIGINT,
SIGTERM and SIGHUP, `archc compile --no-cache` (its archc-build-* directory
under $TMPDIR, the linker or compiler it runs) and `archc run` of a spec
with an empty kernel cache (its archc-run-* directory beside the build's)
get the signal once their temporary directories hold files (and, once
more, compile gets SIGTERM while it runs a child: the compiler of the
glue or the linker, which must not outlive it), and must end
by that signal, leave $TMPDIR empty, write no -o file and no cache entry
half-way (every cache file is a whole .o or .key).

  check_signals.py --archc ARCHC --spec SPEC --weights CHECKPOINT --dir DIR
"""
import argparse
import os
import signal
import subprocess
import sys
import time

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def default_signals():
    # A shell may start background jobs with SIGINT ignored, which archc
    # keeps ignored (as under nohup): give it the default disposition.
    for sig in HANDLED:
        signal.signal(sig, signal.SIG_DFL)


def ready(tmp, present):
    """Whether an archc-build-* directory under tmp holds a file, and each
    prefix in `present` names an entry there."""
    names = os.listdir(tmp)
    if not all(any(n.startswith(p) for n in names) for p in present):
        return False
    for n in names:
        d = os.path.join(tmp, n)
        try:
            if n.startswith("archc-build-") and os.listdir(d):
                return True
        except OSError:  # removed meanwhile
            pass
    return False


def check(args, sig, kind):
    base = os.path.join(args.dir, "%s-%s" % (kind, sig.name))
    tmp, cache = os.path.join(base, "tmp"), os.path.join(base, "cache")
    out = os.path.join(base, "m.so")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp, ARCHC_CACHE=cache)
    if kind in ("compile", "child"):
        cmd = [args.archc, "compile", args.spec, "-o", out, "--no-cache",
               "--quiet"]
        present = []
    else:
        cmd = [args.archc, "run", args.spec, "--weights", args.weights,
               "--prompt", "1,2", "-n", "4", "--quiet"]
        present = ["archc-run-"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, preexec_fn=default_signals)
    deadline = time.monotonic() + 120
    children = "/proc/%d/task/%d/children" % (p.pid, p.pid)

    def child_runs():
        try:
            return open(children).read().strip() != ""
        except OSError:
            return False

    while p.poll() is None and not (ready(tmp, present) and
                                    (kind != "child" or child_runs())):
        if time.monotonic() > deadline:
            p.kill()
            return "FAIL %s %s: no temporary files in 120 s" % (kind, sig.name)
        time.sleep(0.005)
    if p.poll() is not None:
        return "FAIL %s %s: archc ended (%d) before its temporaries held " \
               "files" % (kind, sig.name, p.returncode)
    kids = open(children).read().split() if kind == "child" else []

    p.send_signal(sig)
    rc = p.wait(timeout=60)
    alive = [k for k in kids if os.path.exists("/proc/" + k)]
    if alive:
        return "FAIL %s %s: its child %s outlived it" % (kind, sig.name,
                                                           alive)
    err = p.stderr.read().decode(errors="replace")
    if rc != -sig:
        return "FAIL %s %s: status %d, not the signal's; stderr: %s" % (
            kind, sig.name, rc, err[-300:])
    left = os.listdir(tmp)
    if left:
        return "FAIL %s %s: left in TMPDIR: %s" % (kind, sig.name, left)
    if os.path.exists(out):
        return "FAIL %s %s: wrote %s" % (kind, sig.name, out)
    for root, _, files in os.walk(cache):
        for f in files:
            if not (f.endswith(".o") or f.endswith(".key") or
                    f.endswith(".lock")):
                return "FAIL %s %s: a partial cache file %s" % (
                    kind, sig.name, os.path.join(root, f))
    return "ok %s %s: ended by the signal, TMPDIR empty, no output%s" % (
        kind, sig.name, ", its child ended" if kids else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--archc", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    failed = 0
    for kind in ("compile", "run", "child"):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if kind == "child" and sig != signal.SIGTERM:
                continue
            line = check(args, sig, kind)
            print(line, flush=True)
            failed += line.startswith("FAIL")
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
