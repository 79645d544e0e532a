#!/usr/bin/python3
"""The kernels' parallel loops (runtime/src/parallel.c, the library's
halide_do_par_for): every iteration runs once, each thread's share is a
contiguous range, a task's error reaches the caller, and a model's logits
are bit for bit the same on any number of threads.

Each case prints "ok NAME" or "FAIL NAME: why"; exit status 1 on failure.
"""
import ctypes as C
import os
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
