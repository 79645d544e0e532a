#!/usr/bin/env python3
"""archc ended by a signal leaves no temporaries, no output and no child:

  compile  `archc compile --no-cache` gets SIGINT, SIGTERM, SIGHUP and
           SIGQUIT once its archc-build-* directory under $TMPDIR holds
           files;
  run      `archc run` of a spec with an empty kernel cache gets SIGINT,
           SIGTERM and SIGHUP likewise (its archc-run-* directory beside);
  child    `archc compile` gets SIGTERM while its glue compiler runs: a
           fake clang-19 (and cc) first on PATH that writes a file into its own
           $TMPDIR (as gcc writes ccXXXXXX.s), starts a grandchild (as a
           driver starts cc1 and as), says so and sleeps.

Each must end by its signal, leave the private $TMPDIR empty, write no -o
file and no partial cache entry (every cache file is a whole .o or .key),
and, in the child case, leave neither the child nor the grandchild
running.

  check_signals.py --archc ARCHC --spec SPEC --weights CHECKPOINT --dir DIR
"""
import argparse
import os
import resource
import signal
import subprocess
import sys
import time

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

FAKE_CC = """#!/bin/sh
# A glue compiler that never finishes: a temporary of its own, a child.
echo partial > "$TMPDIR/ccFAKE.s"
sleep 300 &
echo "$$ $!" > "%s.tmp" && mv "%s.tmp" "%s"
wait
"""


def start_state():
    # A shell may start background jobs with SIGINT ignored, which archc
    # keeps ignored (as under nohup): give it the default disposition; and
    # no core file for SIGQUIT.
    for sig in HANDLED:
        signal.signal(sig, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


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
    name = "%s %s" % (kind, sig.name)
    base = os.path.join(args.dir, "%s-%s" % (kind, sig.name))
    tmp, cache = os.path.join(base, "tmp"), os.path.join(base, "cache")
    out = os.path.join(base, "m.so")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp, ARCHC_CACHE=cache)
    env.pop("ARCHC_KEEP_TEMPS", None)
    pids_file = os.path.join(base, "fake-cc.pids")
    if kind == "child":
        bindir = os.path.join(base, "bin")
        os.makedirs(bindir)
        # (Both names: a sanitized build compiles its glue with cc.)
        for cc in ("clang-19", "cc"):
            with open(os.path.join(bindir, cc), "w") as f:
                f.write(FAKE_CC % (pids_file, pids_file, pids_file))
            os.chmod(os.path.join(bindir, cc), 0o755)
        env["PATH"] = bindir + os.pathsep + env["PATH"]
    if kind == "run":
        cmd = [args.archc, "run", args.spec, "--weights", args.weights,
               "--prompt", "1,2", "-n", "4", "--quiet"]
        present = ["archc-run-"]
    else:
        cmd = [args.archc, "compile", args.spec, "-o", out, "--no-cache",
               "--quiet"]
        present = []
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, preexec_fn=start_state)
    deadline = time.monotonic() + 300
    while p.poll() is None and not (
            os.path.exists(pids_file) if kind == "child" else
            ready(tmp, present)):
        if time.monotonic() > deadline:
            p.kill()
            p.wait()
            return "FAIL %s: not at its moment in 300 s" % name
        time.sleep(0.005)
    if p.poll() is not None:
        return "FAIL %s: archc ended (%d) before its moment; stderr: %s" % (
            name, p.returncode, p.stderr.read().decode(errors="replace")[-300:])
    kids = open(pids_file).read().split() if kind == "child" else []
    p.send_signal(sig)
    try:
        rc = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return "FAIL %s: archc still running 120 s after the signal" % name
    err = p.stderr.read().decode(errors="replace")
    if rc != -sig:
        return "FAIL %s: status %d, not the signal's; stderr: %s" % (
            name, rc, err[-300:])
    alive = []
    for k in kids:
        try:
            state = open("/proc/%s/stat" % k).read().rsplit(")", 1)[1].split()
            if state[0] != "Z":
                alive.append(k)
        except OSError:
            pass
    if alive:
        for k in alive:
            os.kill(int(k), signal.SIGKILL)
        return "FAIL %s: its child or grandchild %s outlived it" % (name,
                                                                     alive)
    left = os.listdir(tmp)
    if left:
        return "FAIL %s: left in TMPDIR: %s" % (name, left)
    if os.path.exists(out):
        return "FAIL %s: wrote %s" % (name, out)
    for root, _, files in os.walk(cache):
        for f in files:
            if not (f.endswith(".o") or f.endswith(".key") or
                    f.endswith(".lock")):
                return "FAIL %s: a partial cache file %s" % (
                    name, os.path.join(root, f))
    return "ok %s: ended by the signal, TMPDIR empty, no output%s" % (
        name, ", its child and grandchild ended" if kids else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--archc", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    failed = 0
    cases = [("compile", s) for s in HANDLED]
    cases += [("run", s) for s in HANDLED[:3]] + [("child", signal.SIGTERM)]
    for kind, sig in cases:
        line = check(args, sig, kind)
        print(line, flush=True)
        failed += line.startswith("FAIL")
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
