#!/usr/bin/python3
"""The kernels' parallel loops (runtime/src/parallel.c, the library's
halide_do_par_for): every iteration runs once, each thread's share is a
contiguous range, a task's error reaches the caller, and a model's logits
are bit for bit the same on any number of threads. The runtime's own
workers: they wake from sleep, a loop inside a task and loops started by
two host threads at once run every iteration once, a forked child runs
loops, and unloading the library (dlclose) stops them.

Each case prints "ok NAME" or "FAIL NAME: why"; exit status 1 on failure.
"""
import _ctypes
import ctypes as C
import os
import shutil
import tempfile
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import archref  # noqa: E402
import archrt  # noqa: E402

case = archrt.Cases()

TASK = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int, C.c_void_p)


def par_for(L, lo, extent, body):
    """halide_do_par_for over [lo, lo + extent) with `body(i)` as the task
    (its return value the task's status); returns the call's status and
    the (index, thread) pairs in the order they ran."""
    ran, lock = [], threading.Lock()

    def task(_uc, i, _closure):
        with lock:
            ran.append((i, threading.get_ident()))
        return body(i)

    fn = TASK(task)
    status = L.halide_do_par_for(None, fn, lo, extent, None)
    return status, ran


def main():
    args = archrt.script_args(__doc__)
    spec = archref.Spec(args.spec)
    lib = archrt.Lib(args.lib)
    L = lib.lib
    L.halide_do_par_for.restype = C.c_int
    L.halide_do_par_for.argtypes = [C.c_void_p, TASK, C.c_int, C.c_int,
                                    C.c_void_p]

    for threads in (1, 2, 3, 8):
        L.archrt_set_num_threads(threads)
        for lo, extent in ((0, 0), (5, 1), (-3, 2), (0, 3), (7, 5), (0, 64),
                           (-100, 1000)):
            status, ran = par_for(L, lo, extent, lambda i: 0)
            got = sorted(i for i, _ in ran)
            case(f"{threads} threads, [{lo}, {lo + extent}): each once",
                 status == 0 and got == list(range(lo, lo + extent)),
                 f"status {status}, ran {len(got)} of {extent}: {got[:20]}")

    # One thread: in order.
    L.archrt_set_num_threads(1)
    _, ran = par_for(L, 0, 50, lambda i: 0)
    case("1 thread: in order", [i for i, _ in ran] == list(range(50)),
         str([i for i, _ in ran]))

    # Two threads, both taking part (every task waits, up to 10 s, until
    # a second thread has run one, then 1 ms): along the indices the
    # thread changes at most twice (range 0's front, its back and range
    # 1's front, range 1's back: a thread steals only after its own
    # range). Halide's own pool, one iteration at a time, alternates them.
    L.archrt_set_num_threads(2)
    seen, two = set(), threading.Event()

    def body(_i):
        seen.add(threading.get_ident())
        if len(seen) > 1:
            two.set()
        two.wait(10)
        time.sleep(0.001)
        return 0

    _, ran = par_for(L, 0, 64, body)
    by_index = dict(ran)
    order = [by_index[i] for i in range(64)]
    switches = sum(a != b for a, b in zip(order, order[1:]))
    case("2 threads: both take part", len(set(order)) == 2,
         f"{len(set(order))} thread(s) ran the loop")
    case("2 threads: contiguous ranges", switches <= 2,
         f"{switches} changes of thread along the indices")

    # The same after the workers have slept (longer than they spin).
    time.sleep(0.05)
    seen.clear()
    two.clear()
    _, ran = par_for(L, 0, 16, body)
    case("2 threads: both take part after a sleep",
         len({t for _, t in ran}) == 2,
         f"{len({t for _, t in ran})} thread(s) ran the loop")

    # A loop inside a task (Halide's pool runs it): every inner and outer
    # iteration once.
    inner = []

    def outer(i):
        status, ran = par_for(L, 100 * i, 7, lambda j: 0)
        inner.extend(j for j, _ in ran)
        return status

    status, ran = par_for(L, 0, 6, outer)
    case("2 threads: a loop inside a task",
         status == 0 and sorted(i for i, _ in ran) == list(range(6))
         and sorted(inner) == [100 * i + j for i in range(6)
                               for j in range(7)],
         f"status {status}, {len(ran)} outer and {len(inner)} inner ran")

    # Two host threads starting loops at once (one gets the workers, the
    # other Halide's pool, in turns): each loop's iterations once.
    L.archrt_set_num_threads(2)
    bad = []

    def host(seed):
        for k in range(150):
            extent = 1 + (seed * 7 + k) % 23
            status, ran = par_for(L, k, extent, lambda i: 0)
            if status or sorted(i for i, _ in ran) != list(range(k, k + extent)):
                bad.append((seed, k, status, len(ran)))

    hosts = [threading.Thread(target=host, args=(s,)) for s in (1, 2)]
    for h in hosts:
        h.start()
    for h in hosts:
        h.join()
    case("2 host threads' loops at once: each iteration once", not bad,
         str(bad[:5]))

    # A forked child (none of the parent's workers: it starts its own)
    # runs a loop on two threads; the parent waits up to 20 s.
    pid = os.fork()
    if pid == 0:
        seen.clear()
        two.clear()
        status, ran = par_for(L, 0, 16, body)
        os._exit(0 if status == 0 and sorted(i for i, _ in ran)
                 == list(range(16)) and len({t for _, t in ran}) == 2
                 else 1)
    deadline, code = time.monotonic() + 20, None
    while code is None and time.monotonic() < deadline:
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(wait_status)
        else:
            time.sleep(0.01)
    if code is None:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    case("a forked child's loop, on two threads", code == 0,
         "it hung" if code is None else f"exit status {code}")

    # A task's error is the call's status; on one thread the loop ends
    # there.
    runs = {}
    for threads in (1, 2):
        L.archrt_set_num_threads(threads)
        status, runs[threads] = par_for(L, 0, 40,
                                        lambda i: -7 if i == 13 else 0)
        case(f"{threads} threads: a task's error is the call's",
             status == -7, f"status {status}")
    case("1 thread: no task after the error",
         [i for i, _ in runs[1]] == list(range(14)),
         str([i for i, _ in runs[1]]))
    # ... from the worker's range too (its second half: each task waits
    # for both threads to take part, so the worker reaches 33 before the
    # caller can steal it).
    L.archrt_set_num_threads(2)
    seen.clear()
    two.clear()
    status, ran = par_for(L, 0, 40,
                          lambda i: body(i) or (-9 if i == 33 else 0))
    by = dict(ran)
    case("2 threads: the worker's task's error is the call's",
         status == -9 and by.get(33) not in (None, threading.get_ident()),
         f"status {status}, "
         f"33 ran on {'the caller' if by.get(33) == threading.get_ident() else 'a worker'}")

    # 8 threads, then 2: the 6 surplus workers end.
    L.archrt_set_num_threads(8)
    par_for(L, 0, 64, lambda i: 0)
    with_8 = len(os.listdir("/proc/self/task"))
    L.archrt_set_num_threads(2)
    par_for(L, 0, 64, lambda i: 0)
    with_2 = len(os.listdir("/proc/self/task"))
    case("8 threads then 2: the surplus workers end", with_8 - with_2 == 6,
         f"{with_8} threads with 8, {with_2} with 2")

    # A copy of the library, its workers started, then unloaded: its
    # workers end before its code is unmapped (a worker left spinning or
    # sleeping in it would crash the process, or leak a thread).
    threads_before = len(os.listdir("/proc/self/task"))
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "copy.so")
        shutil.copy(args.lib, copy)
        other = C.CDLL(copy)
        other.archrt_set_num_threads(2)
        other.halide_do_par_for.restype = C.c_int
        other.halide_do_par_for.argtypes = L.halide_do_par_for.argtypes
        status, ran = par_for(other, 0, 32, lambda i: 0)
        handle = other._handle
        del other
        _ctypes.dlclose(handle)
        time.sleep(0.05)
        unmapped = copy not in open("/proc/self/maps").read()
    threads_after = len(os.listdir("/proc/self/task"))
    case("an unloaded copy's loop ran, its workers ended",
         status == 0 and len(ran) == 32 and unmapped
         and threads_after == threads_before,
         f"status {status}, ran {len(ran)}, "
         f"{'unmapped' if unmapped else 'still mapped'}, "
         f"{threads_before} threads before, {threads_after} after")

    # A model's logits are the same bit for bit on 1, 2, 3 and 5 threads
    # (the kernels' parallel loops go through the ranges: parallel.test
    # checks that they call this halide_do_par_for).
    model = lib.model()
    lib.check(L.archrt_init_random(model, 11), "init_random")
    prompt = [(7 * i + 3) % spec.vocab for i in range(21)]
    logits = {}
    for threads in (1, 2, 3, 5):
        L.archrt_set_num_threads(threads)
        seq = lib.seq(model)
        lib.prefill(seq, prompt)
        lib.decode(seq, 1)
        logits[threads] = lib.logits(seq, spec.vocab)
        L.archrt_seq_free(seq)
    L.archrt_model_free(model)
    for threads in (2, 3, 5):
        case(f"logits on {threads} threads == on 1",
             logits[threads] == logits[1],
             f"largest difference "
             f"{max(abs(a - b) for a, b in zip(logits[threads], logits[1]))}")
    case("logits are not all zero", any(logits[1]), "all zero")

    sys.exit(case.summary())


if __name__ == "__main__":
    main()
