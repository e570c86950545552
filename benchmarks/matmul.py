"""Matrix multiplies as Python kernels against their peers on the same GPU, in one run.

- float32: a tiled kernel (16x16 work-group tiles in local memory) against the same
  algorithm hand-written in CUDA (cupy `RawKernel`) and cuBLAS (`torch.mm`), at `--n`.
- float16 (float32 accumulation), at each of `--half`, bias + ReLU fused, on tensor cores
  through cooperative matrices: the joint_matrix GEMM of examples/matrix_gemm.py (128x128
  work-group tiles staged through local memory); against `torch.matmul` (cuBLAS), a
  Triton `tl.dot` kernel computing the same bias + ReLU, and the float32 tiled kernel.

Times are the best launch + wait of `--repeat`; every result is checked against numpy on
a sample of rows. `--csv FILE` writes the figures for docs/plots.py (`record.py`): GFLOP/s
per implementation, or with `--half` TFLOP/s per implementation and size.

    python3 benchmarks/matmul.py [--n 2048] [--half 4096 8192] [--repeat 10] [--csv FILE]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import record
from timing import best_seconds

import vksycl as sycl
from vksycl.ext.oneapi.experimental import work_group_memory

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import matrix_gemm

TILE = 16
# the tiles' barriers order local memory alone, as GLSL's barrier() and the tiles need
LOCAL = sycl.access.fence_space.local_space

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


def tiled_kernel(a: sycl.ptr, b: sycl.ptr, c: sycl.ptr, n: int,
                 fence: sycl.access.fence_space = LOCAL):
    """c = a @ b for n x n float32 matrices, 16x16 tiles staged in local memory (an
    nd_range of (n, n) over (TILE, TILE)); its barriers order the memory of `fence`
    (`global_and_local` is `group_barrier`'s)."""
    def body(it):
        ta = work_group_memory(sycl.float32, (TILE, TILE))
        tb = work_group_memory(sycl.float32, (TILE, TILE))
        row, col = it.get_global_id(0), it.get_global_id(1)
        lr, lc = it.get_local_id(0), it.get_local_id(1)
        acc = sycl.float32(0.0)
        for kt in range(0, n, TILE):
            ta[lr, lc] = a[row * n + kt + lc]
            tb[lr, lc] = b[(kt + lr) * n + col]
            it.barrier(fence)
            for kk in range(TILE):
                acc += ta[lr, kk] * tb[kk, lc]
            it.barrier(fence)
        c[row * n + col] = acc

    return body


def vksycl_matmul(q: sycl.queue, ha: np.ndarray, hb: np.ndarray, repeat: int):
    n = ha.shape[0]
    a = sycl.malloc_device(n * n, sycl.float32, q)
    b = sycl.malloc_device(n * n, sycl.float32, q)
    c = sycl.malloc_device(n * n, sycl.float32, q)
    q.memcpy(a, ha, ha.nbytes)
    q.memcpy(b, hb, hb.nbytes).wait()

    body = tiled_kernel(a, b, c, n)
    ndr = sycl.nd_range((n, n), (TILE, TILE))
    secs = best_seconds(lambda: q.parallel_for(ndr, body).wait(), repeat)
    out = np.empty((n, n), np.float32)
    q.memcpy(out, c, out.nbytes).wait()
    for p in (a, b, c):
        sycl.free(p, q)
    return secs, out


def half_gemm(q: sycl.queue, n: int, repeat: int, f32_tflops: float) -> dict[str, float]:
    """TFLOP/s of each implementation at n."""
    rng = np.random.default_rng(7)
    ha = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    hb = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    hbias = rng.uniform(-1, 1, n).astype(np.float32)
    rows = rng.choice(n, 8, replace=False)
    want = np.maximum(ha[rows].astype(np.float32) @ hb.astype(np.float32) + hbias, 0)
    flop = 2 * n ** 3
    a = sycl.malloc_device(n * n, sycl.float16, q)
    b = sycl.malloc_device(n * n, sycl.float16, q)
    bias = sycl.malloc_device(n, sycl.float32, q)
    c = sycl.malloc_device(n * n, sycl.float32, q)
    q.copy(ha, a, n * n)
    q.copy(hb, b, n * n)
    q.copy(hbias, bias, n).wait()
    coop = q.get_device().has(sycl.aspect.ext_oneapi_cooperative_matrix)
    print(f"{n}x{n}x{n} float16 -> float32, bias + ReLU "
          f"({'cooperative matrices' if coop else 'portable joint_matrix'}):")
    secs = best_seconds(lambda: matrix_gemm.gemm_bias_relu(q, a, b, bias, c, n, n, n).wait(),
                        repeat)
    out = np.empty((n, n), np.float32)
    q.copy(c, out, n * n).wait()
    np.testing.assert_allclose(out[rows], want, rtol=2e-2, atol=2e-2)
    best = flop / secs / 1e12
    z = matrix_gemm.tiles_for(q.get_device())
    print(f"  vksycl examples/matrix_gemm.py ({z.BM}x{z.BN}x{z.BK} tiles): {best:.1f} "
          f"TFLOP/s (checked); against the float32 "
          f"tiled kernel {best / f32_tflops:.1f}x")
    for p in (a, b, bias, c):
        sycl.free(p, q)
    found = {"vksycl joint_matrix (examples/matrix_gemm.py)": best}
    try:
        import torch
    except ImportError:
        return found
    ta, tb = torch.as_tensor(ha, device="cuda"), torch.as_tensor(hb, device="cuda")
    tbias = torch.as_tensor(hbias, device="cuda")
    cublas = flop / best_seconds(lambda: (torch.matmul(ta, tb), torch.cuda.synchronize()),
                                 repeat) / 1e12
    fused = flop / best_seconds(lambda: (torch.relu(torch.matmul(ta, tb).float() + tbias),
                                         torch.cuda.synchronize()), repeat) / 1e12
    print(f"  cuBLAS (torch.matmul, float16 out): {cublas:.1f} TFLOP/s; vksycl / cuBLAS "
          f"{best / cublas:.2f}")
    print(f"  torch relu(matmul + bias) as eager ops: {fused:.1f} TFLOP/s")
    triton = triton_gemm(ta, tb, tbias, rows, want, flop, repeat, best)
    if triton is not None:
        found["Triton tl.dot + bias + ReLU"] = triton
    return found | {"torch relu(matmul + bias) eager": fused, "cuBLAS (torch.matmul)": cublas}


def triton_gemm(ta, tb, tbias, rows, want, flop: int, repeat: int, best: float
                ) -> float | None:
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def gemm(a, b, bias, c, n, bm: tl.constexpr, bn: tl.constexpr, bk: tl.constexpr):
        pid = tl.program_id(0)
        pm, pn = pid // (n // bn), pid % (n // bn)
        rm = pm * bm + tl.arange(0, bm)
        rn = pn * bn + tl.arange(0, bn)
        rk = tl.arange(0, bk)
        acc = tl.zeros((bm, bn), tl.float32)
        for k0 in range(0, n, bk):
            x = tl.load(a + rm[:, None] * n + (k0 + rk)[None, :])
            y = tl.load(b + (k0 + rk)[:, None] * n + rn[None, :])
            acc += tl.dot(x, y)
        acc = tl.maximum(acc + tl.load(bias + rn)[None, :], 0.0)
        tl.store(c + rm[:, None] * n + rn[None, :], acc)

    n = ta.shape[0]
    tc = torch.empty((n, n), dtype=torch.float32, device="cuda")
    grid = ((n // 128) * (n // 128),)

    def run() -> None:
        gemm[grid](ta, tb, tbias, tc, n, 128, 128, 32, num_warps=8, num_stages=3)
        torch.cuda.synchronize()

    secs = best_seconds(run, repeat)
    np.testing.assert_allclose(tc.cpu().numpy()[rows], want, rtol=2e-2, atol=2e-2)
    tflops = flop / secs / 1e12
    print(f"  Triton tl.dot with the same bias + ReLU: {tflops:.1f} TFLOP/s; vksycl / Triton "
          f"{best / tflops:.2f}")
    return tflops


def versions() -> dict[str, str]:
    """The peers' versions, where they were imported."""
    return {name: sys.modules[name].__version__ for name in ("torch", "cupy", "triton")
            if name in sys.modules}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--half", type=int, nargs="*", default=[])
    ap.add_argument("--repeat", type=int, default=10)
    record.add_arguments(ap)
    args = ap.parse_args()
    if args.half:
        q = sycl.queue()
        rng = np.random.default_rng(5)
        n = args.n
        ha = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        hb = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        secs, _ = vksycl_matmul(q, ha, hb, args.repeat)
        f32 = 2 * n ** 3 / secs / 1e12
        print(f"vksycl float32 tiled at {n}: {f32:.2f} TFLOP/s")
        table = {"vksycl float32 tiled kernel": {"implementation": "vksycl float32 tiled kernel",
                                                 f"tflops_{n}": f32}}
        for size in args.half:
            for impl, tflops in half_gemm(q, size, args.repeat, f32).items():
                table.setdefault(impl, {"implementation": impl})[f"tflops_{size}"] = tflops
        record.write(args, "GEMM: float16 in, float32 accumulate, relu(A @ B + bias), "
                     "TFLOP/s; the float32 tiled kernel for comparison", list(table.values()),
                     q.get_device(), versions())
        return
    n = args.n
    rng = np.random.default_rng(5)
    ha = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    hb = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    q = sycl.queue()
    flop = 2 * n ** 3
    secs, out = vksycl_matmul(q, ha, hb, args.repeat)
    sample = rng.choice(n, 16, replace=False)
    np.testing.assert_allclose(out[sample], ha[sample] @ hb, rtol=2e-3, atol=2e-3)
    ours = flop / secs / 1e9
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; {n}x{n} float32")
    print(f"vksycl tiled (16x16 local tiles): {ours:.0f} GFLOP/s (checked)")
    rows: list[dict[str, float | str]] = [
        {"implementation": "vksycl (Python kernel)", "gflops": ours}]
    peers(args, ha, hb, sample, rows)
    record.write(args, f"float32 tiled matmul, {n} x {n}, 16x16 local tiles, GFLOP/s, "
                 "against the same algorithm as a hand-written CUDA kernel (cupy RawKernel) "
                 "and cuBLAS", rows, q.get_device(), versions())


def peers(args: argparse.Namespace, ha: np.ndarray, hb: np.ndarray, sample: np.ndarray,
          rows: list[dict[str, float | str]]) -> None:
    """The CUDA peers' GFLOP/s added to `rows`, where cupy and torch are."""
    n = args.n
    flop = 2 * n ** 3
    ours = rows[0]["gflops"]
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
    np.testing.assert_allclose(cp.asnumpy(dc)[sample], ha[sample] @ hb, rtol=2e-3,
                               atol=2e-3)
    theirs = flop / csecs / 1e9
    print(f"CUDA RawKernel, same algorithm: {theirs:.0f} GFLOP/s; vksycl / CUDA "
          f"{ours / theirs:.2f}")
    rows.append({"implementation": "CUDA RawKernel (hand-written)", "gflops": theirs})
    try:
        import torch
    except ImportError:
        return
    ta, tb = torch.as_tensor(ha, device="cuda"), torch.as_tensor(hb, device="cuda")
    tsecs = best_seconds(lambda: (torch.mm(ta, tb), torch.cuda.synchronize()), args.repeat)
    tf32 = "on" if torch.backends.cuda.matmul.allow_tf32 else "off"
    print(f"cuBLAS (torch.mm, TF32 {tf32}): {flop / tsecs / 1e9:.0f} GFLOP/s")
    rows.append({"implementation": f"cuBLAS (torch.mm, TF32 {tf32})",
                 "gflops": flop / tsecs / 1e9})


if __name__ == "__main__":
    main()
