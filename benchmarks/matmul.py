"""Tiled matrix multiply (16x16 work-group tiles in local memory) as a Python kernel,
against the same algorithm hand-written in CUDA (cupy `RawKernel`) and against cuBLAS
(`torch.mm`) on the same GPU in the same run. Times are the best launch + wait of
`--repeat`; the result is checked against numpy on a sample of rows.

    python3 benchmarks/matmul.py [--n 2048] [--repeat 10]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import best_seconds

import vksycl as sycl
from vksycl.ext.oneapi.experimental import work_group_memory

TILE = 16

CUDA = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* c, int n) {
    __shared__ float ta[16][16];
    __shared__ float tb[16][16];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    int lr = threadIdx.y, lc = threadIdx.x;
    float acc = 0.0f;
    for (int kt = 0; kt < n; kt += 16) {
        ta[lr][lc] = a[row * n + kt + lc];
        tb[lr][lc] = b[(kt + lr) * n + col];
        __syncthreads();
        for (int kk = 0; kk < 16; ++kk) acc += ta[lr][kk] * tb[kk][lc];
        __syncthreads();
    }
    c[row * n + col] = acc;
}
"""


def vksycl_matmul(q: sycl.queue, ha: np.ndarray, hb: np.ndarray, repeat: int):
    n = ha.shape[0]
    a = sycl.malloc_device(n * n, sycl.float32, q)
    b = sycl.malloc_device(n * n, sycl.float32, q)
    c = sycl.malloc_device(n * n, sycl.float32, q)
    q.memcpy(a, ha, ha.nbytes)
    q.memcpy(b, hb, hb.nbytes).wait()

    def body(it):
        ta = work_group_memory(sycl.float32, (TILE, TILE))
        tb = work_group_memory(sycl.float32, (TILE, TILE))
        row, col = it.get_global_id(0), it.get_global_id(1)
        lr, lc = it.get_local_id(0), it.get_local_id(1)
        acc = sycl.float32(0.0)
        for kt in range(0, n, TILE):
            ta[lr, lc] = a[row * n + kt + lc]
            tb[lr, lc] = b[(kt + lr) * n + col]
            sycl.group_barrier(it.get_group())
            for kk in range(TILE):
                acc += ta[lr, kk] * tb[kk, lc]
            sycl.group_barrier(it.get_group())
        c[row * n + col] = acc

    ndr = sycl.nd_range((n, n), (TILE, TILE))
    secs = best_seconds(lambda: q.parallel_for(ndr, body).wait(), repeat)
    out = np.empty((n, n), np.float32)
    q.memcpy(out, c, out.nbytes).wait()
    for p in (a, b, c):
        sycl.free(p, q)
    return secs, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    n = args.n
    rng = np.random.default_rng(5)
    ha = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    hb = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    q = sycl.queue()
    flop = 2 * n ** 3
    secs, out = vksycl_matmul(q, ha, hb, args.repeat)
    rows = rng.choice(n, 16, replace=False)
    np.testing.assert_allclose(out[rows], ha[rows] @ hb, rtol=2e-3, atol=2e-3)
    ours = flop / secs / 1e9
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; {n}x{n} float32")
    print(f"vksycl tiled (16x16 local tiles): {ours:.0f} GFLOP/s (checked)")
    try:
        import cupy as cp
    except ImportError:
        return
    k = cp.RawKernel(CUDA, "matmul")
    da, db = cp.asarray(ha), cp.asarray(hb)
    dc = cp.empty((n, n), cp.float32)

    def cuda() -> None:
        k((n // TILE, n // TILE), (TILE, TILE), (da, db, dc, np.int32(n)))
        cp.cuda.Device().synchronize()

    csecs = best_seconds(cuda, args.repeat)
    np.testing.assert_allclose(cp.asnumpy(dc)[rows], ha[rows] @ hb, rtol=2e-3, atol=2e-3)
    theirs = flop / csecs / 1e9
    print(f"CUDA RawKernel, same algorithm: {theirs:.0f} GFLOP/s; vksycl / CUDA "
          f"{ours / theirs:.2f}")
    try:
        import torch
    except ImportError:
        return
    ta, tb = torch.as_tensor(ha, device="cuda"), torch.as_tensor(hb, device="cuda")
    tsecs = best_seconds(lambda: (torch.mm(ta, tb), torch.cuda.synchronize()), args.repeat)
    print(f"cuBLAS (torch.mm, TF32 {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}):"
          f" {flop / tsecs / 1e9:.0f} GFLOP/s")


if __name__ == "__main__":
    main()
