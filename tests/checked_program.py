"""Kernels with the bugs checked mode catches, and kernels without any: run in a process
of its own with VKSYCL_CHECK set (tests/test_checked_mode.py), it prints, as one JSON
object, what each case's wait raised (None: nothing) and what memory held after."""

from __future__ import annotations

import json
import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

q = sycl.queue()
ALLOC = {"device": sycl.malloc_device, "shared": sycl.malloc_shared, "host": sycl.malloc_host}
results: dict[str, object] = {}


def outcome(name: str, run) -> None:
    try:
        run()
        q.wait()
        results[name] = None
    except sycl.exception as e:
        results[name] = [str(e), e.code() == sycl.errc.runtime]


def past_the_end(kind: str, write: bool) -> None:
    x = ALLOC[kind](16, sycl.float32, q)
    out = sycl.malloc_shared(16, sycl.float32, q)

    def reads(i):
        out[i] = x[i + 1]  # READ-PAST

    def writes(i):
        x[i + 1] = 1.0  # WRITE-PAST

    outcome(f"{'write' if write else 'read'}-{kind}",
            lambda: q.parallel_for(sycl.range(16), writes if write else reads))
    sycl.free(x, q)
    sycl.free(out, q)


def before_the_start() -> None:
    """An index one below the first element, and how many comparisons the checks of a
    triad take: one per access where the offset from the pointer is proven not
    negative, two where it is not."""
    x = sycl.malloc_shared(16, sycl.float32, q)
    out = sycl.malloc_shared(16, sycl.float32, q)

    def reads(i):
        out[i] = x[i - 1]  # BEFORE-START

    outcome("before-start", lambda: q.parallel_for(sycl.range(16), reads))

    def triad(it):
        i = it.get_global_id(0)
        out[i] = x[i] + 2.0 * out[i]

    def shifted(it):
        i = it.get_global_id(0)
        out[i] = x[i - 1]

    results["triad-compares"] = spirv_count(triad, 178, 1, (64,))  # OpULessThanEqual
    results["shifted-compares"] = spirv_count(shifted, 178, 1, (64,))
    sycl.free(x, q)
    sycl.free(out, q)


def off_by_one_2d() -> None:
    y = sycl.malloc_shared(20, sycl.int32, q)

    def body(i):
        y[i[0] * 5 + i[1] + 1] = 1  # OFF-BY-ONE

    outcome("off-by-one-2d", lambda: q.parallel_for(sycl.range(4, 5), body))
    sycl.free(y, q)


def into_another_allocation() -> None:
    a = sycl.malloc_shared(16, sycl.int32, q)
    b = sycl.malloc_shared(16, sycl.int32, q)
    b[:] = 7
    step = np.int64((b.allocation.address - a.allocation.address) // 4)

    def body(i):
        p = a + step  # lands in b
        p[i] = 1  # INTO-OTHER

    outcome("into-another", lambda: q.parallel_for(sycl.range(16), body))
    results["other-untouched"] = np.asarray(b)[:16].tolist() == [7] * 16
    sycl.free(a, q)
    sycl.free(b, q)


def use_after_free() -> None:
    table = sycl.malloc_shared(1, sycl.ptr[sycl.float32], q)
    gone = sycl.malloc_device(4096, sycl.float32, q)
    table[0] = gone
    sycl.free(gone, q)
    out = sycl.malloc_shared(1, sycl.float32, q)

    def body():
        p = table[0]
        out[0] = p[3]  # AFTER-FREE

    outcome("use-after-free", lambda: q.single_task(body))
    sycl.free(table, q)
    sycl.free(out, q)


def ranged_accessor() -> None:
    buf = sycl.buffer(np.zeros(16, np.float32))

    def cg(h):
        acc = sycl.accessor(buf, h, sycl.read_write, access_range=sycl.range(8),
                            access_offset=sycl.id(8))

        def body(i):
            acc[i[0] + 4] = 1.0  # RANGED

        h.parallel_for(sycl.range(8), body)

    outcome("ranged-accessor", lambda: q.submit(cg))
    with sycl.host_accessor(buf, sycl.read_only) as v:
        results["ranged-kept"] = np.asarray(v).tolist()


@sycl.struct
class Pair:
    a: sycl.float32
    b: sycl.int32


def accessor_range_inside_buffer() -> None:
    """Indices past a ranged accessor's range that still land in its buffer: a 1-D
    accessor over the buffer's first half, and a 2-D one whose column runs past its range
    into the row's next element."""
    flat = sycl.buffer(np.zeros(16, np.float32))
    grid = sycl.buffer(np.zeros((4, 8), np.float32))

    def first_half(h):
        acc = sycl.accessor(flat, h, sycl.write_only, access_range=sycl.range(8))

        def body(i):
            acc[i] = 1.0  # RANGE-1D

        h.parallel_for(sycl.range(12), body)

    def columns(h):
        acc = sycl.accessor(grid, h, sycl.read_write, access_range=sycl.range(4, 4),
                            access_offset=sycl.id(0, 2))

        def body(it):
            acc[it[0], it[1]] = 2.0  # RANGE-2D

        h.parallel_for(sycl.range(4, 5), body)

    pairs = sycl.buffer(np.zeros(8, Pair.dtype))

    def fields(h):
        acc = sycl.accessor(pairs, h, sycl.read_write, access_range=sycl.range(4))

        def body(i):
            acc[i].b = 3  # RANGE-FIELD

        h.parallel_for(sycl.range(6), body)

    outcome("accessor-range-field", lambda: q.submit(fields))
    outcome("accessor-range-1d", lambda: q.submit(first_half))
    outcome("accessor-range-2d", lambda: q.submit(columns))
    with sycl.host_accessor(flat, sycl.read_only) as v:
        results["range-1d-kept"] = np.asarray(v).tolist()
    with sycl.host_accessor(grid, sycl.read_only) as v:
        results["range-2d-kept"] = np.asarray(v).tolist()


def local_memory() -> None:
    out = sycl.malloc_shared(32, sycl.float32, q)

    def body(it):
        tile = syclexp.work_group_memory(np.float32, (16,))
        lid = it.get_local_id(0)
        tile[lid + 1] = 1.0  # LOCAL
        sycl.group_barrier(it.get_group())
        out[it.get_global_id(0)] = tile[lid]

    outcome("local", lambda: q.parallel_for(sycl.nd_range(sycl.range(32), sycl.range(16)),
                                            body))
    sycl.free(out, q)


def spirv_count(body, opcode: int, dims: int, local: tuple) -> int:
    """How many instructions of `opcode` the checked kernel `body` compiles to."""
    from vksycl.compiler.kernel import KernelSpec, compile_kernel
    words = np.frombuffer(compile_kernel(body, KernelSpec("k", "nd_range", dims, local))
                          .binary, np.uint32)
    found, at = 0, 5
    while at < len(words):
        found += int(words[at] & 0xFFFF) == opcode
        at += int(words[at] >> 16)
    return found


def local_memory_proofs() -> None:
    """Work-group memory indices the compiler proves in bounds go unchecked (the tiled
    kernel keeps the checks of its three global accesses only); indices it cannot prove
    stay checked, and their bugs are reported."""
    n, t = 32, 8
    a = sycl.malloc_shared(n * n, sycl.float32, q)
    c = sycl.malloc_shared(n * n, sycl.float32, q)
    a[:] = np.arange(n * n, dtype=np.float32) % 7

    def tiled(it):
        ta = syclexp.work_group_memory(np.float32, (t, t))
        tb = syclexp.work_group_memory(np.float32, (t, t))
        row, col = it.get_global_id(0), it.get_global_id(1)
        lr, lc = it.get_local_id(0), it.get_local_id(1)
        acc = sycl.float32(0.0)
        for kt in range(0, n, t):
            ta[lr, lc] = a[row * n + kt + lc]
            tb[lr, lc] = a[(kt + lr) * n + col]
            sycl.group_barrier(it.get_group())
            for kk in range(t):
                acc += ta[lr, kk] * tb[kk, lc]
            sycl.group_barrier(it.get_group())
        c[row * n + col] = acc

    results["tiled-report-calls"] = spirv_count(tiled, 57, 2, (t, t))  # OpFunctionCall
    outcome("tiled", lambda: q.parallel_for(sycl.nd_range((n, n), (t, t)), tiled))
    host = np.asarray(a).reshape(n, n).astype(np.float64)
    results["tiled-right"] = bool(np.allclose(np.asarray(c).reshape(n, n), host @ host))

    def one_too_far(it):
        tile = syclexp.work_group_memory(np.float32, (16,))
        for k in range(17):
            tile[k] = 1.0  # PAST-LOOP
        sycl.group_barrier(it.get_group())

    def bumped(it):
        tile = syclexp.work_group_memory(np.float32, (16,))
        j = it.get_local_id(0)
        if j == 15:
            j = j + 1
        tile[j] = 1.0  # BUMPED

    reach = 16

    def up_to_reach(it):
        tile = syclexp.work_group_memory(np.float32, (16,))
        for k in range(reach):
            tile[k] = 1.0  # REACH
        sycl.group_barrier(it.get_group())

    def launch_reach(value: int) -> None:
        nonlocal reach
        reach = value
        q.parallel_for(sycl.nd_range(sycl.range(16), sycl.range(16)), up_to_reach)

    # a captured loop bound proves nothing: only numbers the kernel is compiled for do
    outcome("reach-16", lambda: launch_reach(16))
    outcome("reach-17", lambda: launch_reach(17))
    for name, body in (("past-loop", one_too_far), ("bumped", bumped)):
        outcome(name, lambda body=body: q.parallel_for(
            sycl.nd_range(sycl.range(16), sycl.range(16)), body))
    sycl.free(a, q)
    sycl.free(c, q)


def atomics() -> None:
    counts = sycl.malloc_shared(4, sycl.int32, q)
    counts[:] = 0

    def body(i):
        sycl.atomic_ref(counts + (i[0] % 5)).fetch_add(1)  # ATOMIC

    outcome("atomic", lambda: q.parallel_for(sycl.range(20), body))
    results["atomic-counts"] = np.asarray(counts)[:4].tolist()
    sycl.free(counts, q)


def not_finite() -> None:
    x = sycl.malloc_shared(8, sycl.float32, q)
    x[:] = np.arange(8, dtype=np.float32) - 3

    def body(i):
        x[i] = np.float32(1) / x[i]  # NOT-FINITE

    outcome("nan", lambda: q.parallel_for(sycl.range(8), body))
    sycl.free(x, q)


def correct_kernels() -> None:
    """Kernels that stay in bounds: none may be reported."""
    n = 1000
    a = sycl.malloc_device(n, sycl.float32, q)
    b = sycl.malloc_shared(n, sycl.float32, q)
    c = sycl.malloc_host(n, sycl.float32, q)
    q.fill(a, np.float32(1), n).wait()
    b[:] = 2
    s = np.float32(3)

    def triad(i):
        c[i] = a[i] + s * b[i]

    def reverse_tiles(it):
        tile = syclexp.work_group_memory(np.float32, (50,))
        lid = it.get_local_id(0)
        tile[lid] = c[it.get_global_id(0)]
        sycl.group_barrier(it.get_group())
        b[it.get_global_id(0)] = tile[49 - lid]

    total = sycl.malloc_shared(1, sycl.float32, q)
    total[0] = 0

    def sums(i):
        sycl.atomic_ref(total).fetch_add(b[i])

    def last(i):
        p = b + (n - 1)
        a[i] = p[-i[0]]

    def run() -> None:
        q.parallel_for(sycl.range(n), triad).wait()
        q.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(50)), reverse_tiles).wait()
        q.parallel_for(sycl.range(n), sums).wait()
        q.parallel_for(sycl.range(n), last).wait()

    outcome("correct", run)
    results["correct-total"] = float(total[0])
    for p in (a, b, c, total):
        sycl.free(p, q)


def past_the_end_of_each_kind() -> None:
    for kind in ALLOC:
        past_the_end(kind, False)
        past_the_end(kind, True)


CASES = {f.__name__: f for f in (past_the_end_of_each_kind, before_the_start, off_by_one_2d,
                                 into_another_allocation, use_after_free, ranged_accessor,
                                 accessor_range_inside_buffer, local_memory,
                                 local_memory_proofs, atomics, not_finite, correct_kernels)}

if __name__ == "__main__":
    for name in sys.argv[1:] or CASES:
        CASES[name]()
    json.dump(results, sys.stdout)
