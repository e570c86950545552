"""Programs that tests/test_faults.py runs as processes of their own: a device that is
lost or runs a hung kernel stays so until its process ends, and some of these must show
that the process still ends. Each prints one JSON line saying what it saw.

    python tests/fault_child.py SCENARIO [ARGUMENTS]
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

import vksycl as sycl
from vksycl.compiler import kernel as kernel_cache
from vksycl.runtime import faults

# run with -P (tests/spirv_gen would shadow the package): the kernel beside it, appended
sys.path.append(str(Path(__file__).parent))
import busy_kernel

# lavapipe ends any one invocation's loops after 65535 iterations in all, so a kernel
# hangs there by being enormous: this many work-items of `hang` take over ten minutes
HANG_ITEMS = 1 << 24
# work-items of the busy kernel that keep lavapipe busy for about a second
LONG_ITEMS = 16384
N = 256


def hang_kernel(q: sycl.queue, flag: sycl.ptr, out: sycl.ptr) -> sycl.event:
    """Loops until `flag[0]` is 1, which nothing writes: the compiler cannot know."""
    def hang(i):
        k = sycl.uint32(0)
        while True:
            k += sycl.uint32(1)
            if sycl.atomic_ref(flag).load() == 1:  # atomic: read afresh every time
                break
        if i == 0:
            out[0] = k
    return q.parallel_for(sycl.range(HANG_ITEMS), hang)


def step(q: sycl.queue, x: sycl.ptr, k: int) -> sycl.event:
    """x = x * 3 + k + i, element-wise."""
    kk = np.uint32(k)

    def body(i):
        x[i] = x[i] * sycl.uint32(3) + kk + sycl.uint32(i)
    return q.parallel_for(sycl.range(N), body)


def steps(ks: list[int]) -> np.ndarray:
    x = np.zeros(N, np.uint32)
    i = np.arange(N, dtype=np.uint32)
    for k in ks:
        x = x * np.uint32(3) + np.uint32(k) + i
    return x


def kept(q: sycl.queue) -> tuple[sycl.ptr, np.ndarray]:
    """Shared memory no fault involves, and the bytes it must keep."""
    pattern = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8)
    p = sycl.malloc_shared(pattern.size, np.uint8, q)
    np.asarray(p)[:] = pattern
    return p, pattern


def attempt(call) -> dict:
    """What a call raised: its errc and message, or None for each."""
    try:
        call()
    except sycl.exception as err:
        return {"code": err.code().name, "message": str(err)}
    return {"code": None, "message": None}


def hang() -> dict:
    """A kernel that hangs: the wait raises once VKSYCL_WAIT_TIMEOUT_S passes, and the
    process ends, the kernel still running on a CPU device. A GPU driver (NVIDIA's) holds
    a process at exit until its kernels end, so there the kernel is released once the
    waits have timed out, and the process must end then."""
    q = sycl.queue()
    keep, pattern = kept(q)
    flag = sycl.malloc_shared(1, np.int32, q)
    out = sycl.malloc_shared(1, np.uint32, q)
    np.asarray(flag)[:] = 0
    e = hang_kernel(q, flag, out)
    started = time.monotonic()
    first = attempt(e.wait)
    waited = time.monotonic() - started
    seen = {"wait": first, "waited_s": waited, "queue_wait": attempt(q.wait),
            "kept": bool(np.array_equal(np.asarray(keep), pattern))}
    if not q.get_device().is_cpu():
        np.asarray(flag)[0] = 1
    return seen


def long() -> dict:
    """A long but finite kernel: waits time out until it completes, then the result and
    the queue are as usual."""
    q = sycl.queue()
    out = sycl.malloc_shared(1, np.uint32, q)
    x = sycl.malloc_shared(N, np.uint32, q)
    np.asarray(x)[:] = 0
    e = busy_kernel.busy(q, out, LONG_ITEMS)
    timeouts = []
    while len(timeouts) < 1000:
        seen = attempt(e.wait)
        if seen["code"] is None:
            break
        timeouts.append(seen)
    step(q, x, 5).wait()
    q.wait()
    return {"timeouts": timeouts[:2], "count": len(timeouts),
            "result": bool(np.asarray(out)[0] == busy_kernel.xorshift(busy_kernel.rounds(q))),
            "after": bool(np.array_equal(np.asarray(x)[:N], steps([5])))}


def lost(where: str) -> dict:
    """The device is lost while a long kernel runs and a command waits behind it: at a
    blocking wait, at a batch's submission, or at a launch's own submission."""
    reports: list = []
    q = sycl.queue(async_handler=reports.extend)
    keep, pattern = kept(q)
    out = sycl.malloc_shared(1, np.uint32, q)
    x = sycl.malloc_shared(N, np.uint32, q)
    dev = sycl.malloc_device(N, np.uint32, q)
    np.asarray(x)[:] = 0
    seen = {}
    if where == "launch":
        q.wait()  # an idle device: the launch is submitted at once
        with faults.inject("submit", "ErrorDeviceLost") as fault:
            seen["lost"] = attempt(lambda: step(q, x, 1))
        pending = []
    else:
        pending = [busy_kernel.busy(q, out, LONG_ITEMS), step(q, x, 1)]
        kind = "wait" if where == "wait" else "submit"
        with faults.inject(kind, "ErrorDeviceLost") as fault:
            seen["lost"] = attempt(pending[0].wait if kind == "wait" else q.wait)
    started = time.monotonic()
    for e in pending:
        e.wait()  # returns: nothing is left to wait for
    seen["pending_wait_s"] = time.monotonic() - started
    seen["wait_and_throw"] = attempt(q.wait_and_throw)  # the handler hears of them
    seen["handler"] = [(err.code().name, str(err)) for err in reports]
    seen["queue_wait"] = attempt(q.wait)
    seen["later_launch"] = attempt(lambda: step(q, x, 2))
    seen["later_memcpy"] = attempt(lambda: q.memcpy(dev, np.zeros(N, np.uint32), 4 * N))
    seen["fired"] = fault.fired
    seen["kept"] = bool(np.array_equal(np.asarray(keep), pattern))
    return seen


def compile_together(barrier: str, processes: str) -> dict:
    """Compiles and runs the same kernels as the other processes, starting when all are
    ready, into the cache VKSYCL_CACHE_DIR names."""
    compiled = []
    original = kernel_cache.compile_kernel
    kernel_cache.compile_kernel = lambda *a: compiled.append(a[1].name) or original(*a)
    warnings: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    logging.getLogger("vksycl").addHandler(Collect(logging.WARNING))
    q = sycl.queue()
    n = 1024
    a = sycl.malloc_shared(n, np.float32, q)
    b = sycl.malloc_shared(n, np.int32, q)
    c = sycl.malloc_shared(n, np.float64, q)
    d = sycl.malloc_shared(n, np.uint32, q)
    host_a = np.linspace(-2, 2, n, dtype=np.float32)
    np.asarray(a)[:] = host_a
    np.asarray(b)[:] = 0
    np.asarray(c)[:] = 0
    np.asarray(d)[:] = 0

    def poly(i):
        v = a[i]
        a[i] = ((v * 3.0 + 2.0) * v - 1.0) * v + 0.5

    def collatz(i):
        x = i + 1
        k = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            k += 1
        b[i] = k

    def harmonic(i):
        s = 0.0
        for j in range(1, i % 32 + 2):
            s += 1.0 / j
        c[i] = s

    def bits(i):
        x = sycl.uint32(i) * sycl.uint32(2654435761)
        d[i] = (x ^ (x >> sycl.uint32(15))) & sycl.uint32(0xFFFF)

    Path(barrier, f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while len(list(Path(barrier).iterdir())) < int(processes):
        if time.monotonic() > deadline:
            return {"error": "the other processes never came"}
        time.sleep(0.001)
    for kernel in (poly, collatz, harmonic, bits):
        q.parallel_for(sycl.range(n), kernel)
    q.wait()
    i = np.arange(n)
    v64 = host_a.astype(np.float64)
    expected_collatz = []
    for x in range(1, n + 1):
        k = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            k += 1
        expected_collatz.append(k)
    x = (i.astype(np.uint64) * 2654435761) & 0xFFFFFFFF
    ok = {
        # float32 rounding (and a device's fused multiply-adds) bound by the terms' size
        "poly": bool(np.all(np.abs(np.asarray(a) - (((v64 * 3 + 2) * v64 - 1) * v64 + 0.5))
                            <= 1e-6 * (3 * abs(v64) ** 3 + 2 * v64 ** 2 + abs(v64) + 0.5))),
        "collatz": np.array_equal(np.asarray(b), expected_collatz),
        "harmonic": np.allclose(np.asarray(c), [sum(1 / j for j in range(1, k % 32 + 2))
                                                for k in range(n)]),
        "bits": np.array_equal(np.asarray(d), (x ^ (x >> 15)) & 0xFFFF),
    }
    return {"compiled": sorted(compiled), "ok": {k: bool(v) for k, v in ok.items()},
            "warnings": warnings}


SCENARIOS = {"hang": hang, "long": long, "lost": lost, "compile": compile_together}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[sys.argv[1]](*sys.argv[2:])), flush=True)
