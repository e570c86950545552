"""A float32 matrix multiply C = A @ B written the way fast hand kernels are: register
blocking, 16-byte loads, local-memory double buffering and unrolled inner loops.

A work-group of 16 x 16 work-items computes a 64 x 64 tile of C, each work-item a 4 x 4
block of it held in four `sycl.float4` accumulators (registers). Per step of BK = 16 along
K, every work-item copies one `sycl.float4` of A's 64 x 16 tile and one of B's 16 x 64
tile from global memory (single 16-byte loads, since the pointers are the kernel's own)
into local memory of float4. Two copies of each local tile alternate: while the
work-group multiplies out of one, the next step's float4s are already in registers and go
into the other, so each step needs one barrier rather than two. The barriers order local
memory alone (`it.barrier(sycl.access.fence_space.local_space)`): global memory is only
read until the end. The multiply over the
step is unrolled (`sycl.unroll`): each quarter of it reads four rows of B and four of A
as float4s and updates 16 sums, eight local loads for 64 multiply-adds.

n must be a multiple of 64.
"""

from __future__ import annotations

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi.experimental import work_group_memory

BM = BN = 64  # the work-group's tile of C
BK = 16  # the step along K
WG = 16  # work-items along each side of the work-group; each computes 4 x 4
BK4, BN4 = BK // 4, BN // 4  # float4s per row of the local tiles of A and B
# the barriers guard the local tiles alone: ordering global memory too (group_barrier's
# fence) costs the tiled kernels a tenth of their speed on NVIDIA's Vulkan driver
LOCAL = sycl.access.fence_space.local_space


def step(acc: sycl.float4, a: sycl.float4, b0: sycl.float4, b1: sycl.float4,
         b2: sycl.float4, b3: sycl.float4) -> sycl.float4:
    """One row of the 4 x 4 block after four steps along K: a holds the row's four
    elements of A, b0..b3 four rows of B."""
    return acc + a.x * b0 + a.y * b1 + a.z * b2 + a.w * b3


def gemm_kernel(a: sycl.ptr, b: sycl.ptr, c: sycl.ptr, n: int):
    """c = a @ b for n x n float32 matrices, over `nd_range_for(n)`."""
    def body(it):
        ta = work_group_memory(sycl.float4, (2 * BM * BK4,))  # two tiles of A, row-major
        tb = work_group_memory(sycl.float4, (2 * BK * BN4,))  # two tiles of B, row-major
        ty, tx = it.get_local_id(0), it.get_local_id(1)
        by, bx = it.get_group(0), it.get_group(1)
        tid = ty * WG + tx
        n4 = n // 4
        ar, ac = tid // BK4, tid % BK4  # this work-item's float4 of A's tile
        br, bc = tid // BN4, tid % BN4  # and of B's
        ga = sycl.float4()
        gb = sycl.float4()
        ga.load((by * BM + ar) * n4 + ac, a)
        gb.load(br * n4 + bx * BN4 + bc, b)
        ta[ar * BK4 + ac] = ga
        tb[br * BN4 + bc] = gb
        it.barrier(LOCAL)
        c0 = sycl.float4(0.0)
        c1 = sycl.float4(0.0)
        c2 = sycl.float4(0.0)
        c3 = sycl.float4(0.0)
        steps = n // BK
        for s in range(steps):
            cur = s % 2
            if s + 1 < steps:  # the next step's share, into registers while this one runs
                k4 = (s + 1) * BK4
                ga.load((by * BM + ar) * n4 + k4 + ac, a)
                gb.load(((s + 1) * BK + br) * n4 + bx * BN4 + bc, b)
            oa = cur * BM * BK4 + ty * 4 * BK4
            ob = cur * BK * BN4 + tx
            for q in sycl.unroll(range(BK4)):
                b0 = tb[ob + (4 * q) * BN4]
                b1 = tb[ob + (4 * q + 1) * BN4]
                b2 = tb[ob + (4 * q + 2) * BN4]
                b3 = tb[ob + (4 * q + 3) * BN4]
                c0 = step(c0, ta[oa + q], b0, b1, b2, b3)
                c1 = step(c1, ta[oa + BK4 + q], b0, b1, b2, b3)
                c2 = step(c2, ta[oa + 2 * BK4 + q], b0, b1, b2, b3)
                c3 = step(c3, ta[oa + 3 * BK4 + q], b0, b1, b2, b3)
            if s + 1 < steps:  # into the other copy, last read before the previous barrier
                nxt = 1 - cur
                ta[nxt * BM * BK4 + ar * BK4 + ac] = ga
                tb[nxt * BK * BN4 + br * BN4 + bc] = gb
            it.barrier(LOCAL)
        row = by * BM + ty * 4
        col = bx * BN4 + tx
        c0.store(row * n4 + col, c)
        c1.store((row + 1) * n4 + col, c)
        c2.store((row + 2) * n4 + col, c)
        c3.store((row + 3) * n4 + col, c)

    return body


def nd_range_for(n: int) -> sycl.nd_range:
    """One work-item per 4 x 4 block of C, 16 x 16 work-items per work-group."""
    if n % BM:
        raise ValueError(f"n = {n} is not a multiple of {BM}")
    return sycl.nd_range((n // 4, n // 4), (WG, WG))


def gemm(q: sycl.queue, a: sycl.ptr, b: sycl.ptr, c: sycl.ptr, n: int) -> sycl.event:
    """Launches c = a @ b for n x n float32 matrices in device memory."""
    return q.parallel_for(nd_range_for(n), gemm_kernel(a, b, c, n))


def main() -> None:
    n = 128
    rng = np.random.default_rng(3)
    ha = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    hb = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    q = sycl.queue()
    a = sycl.malloc_device(n * n, sycl.float32, q)
    b = sycl.malloc_device(n * n, sycl.float32, q)
    c = sycl.malloc_device(n * n, sycl.float32, q)
    q.copy(ha, a, n * n)
    q.copy(hb, b, n * n).wait()
    gemm(q, a, b, c, n).wait()
    out = np.empty((n, n), np.float32)
    q.copy(c, out, n * n).wait()
    for p in (a, b, c):
        sycl.free(p, q)
    np.testing.assert_allclose(out, ha @ hb, rtol=1e-4, atol=1e-4)
    print(f"{n} x {n} float32 GEMM, 4 x 4 blocks per work-item: matches numpy")


if __name__ == "__main__":
    main()
