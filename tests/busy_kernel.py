"""A kernel that keeps the device busy for a while (xorshift32 in a loop no compiler
folds), and the value it computes, for tests that need work in flight."""

from __future__ import annotations

import numpy as np

import vksycl as sycl

# lavapipe ends any one invocation's loops after 65535 iterations in all; a GPU runs every
# work-item at once, so there each loops far longer
CPU_ROUNDS = 60000
GPU_ROUNDS = 20_000_000


def rounds(q: sycl.queue) -> int:
    return CPU_ROUNDS if q.get_device().is_cpu() else GPU_ROUNDS


def busy(q: sycl.queue, out: sycl.ptr, items: int, deps=None,
         iterations: int | None = None) -> sycl.event:
    """`items` work-items running xorshift32 for `iterations` rounds (`rounds(q)` by
    default); work-item 0 writes its result."""
    n = np.uint32(rounds(q) if iterations is None else iterations)

    def spin(i):
        x = sycl.uint32(2463534242) + sycl.uint32(i)
        k = sycl.uint32(0)
        while k < n:
            x = x ^ (x << sycl.uint32(13))
            x = x ^ (x >> sycl.uint32(17))
            x = x ^ (x << sycl.uint32(5))
            k += sycl.uint32(1)
        if i == 0:
            out[0] = x
    return q.parallel_for(sycl.range(items), spin, depends_on=deps)


def xorshift(iterations: int) -> int:
    """What work-item 0 of `busy` writes after `iterations` rounds."""
    x = 2463534242
    for _ in range(iterations):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
    return x
