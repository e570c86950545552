"""Kernels as Python functions against the same algorithms in hand-written CUDA (cupy
`RawKernel`, benchmarks/kernels_cuda.py) and torch, in one run on one GPU, and against
hand-written GLSL (benchmarks/kernels_glsl.py) built by vksycl and run on the same Vulkan
driver: the CUDA ratio mixes vksycl's compiler with the Vulkan driver, the GLSL ratio
leaves the compiler alone.

- Mandelbrot: one work-item per pixel, the escape loop as written;
- tiled fp32 matmul: benchmarks/matmul.py's 16 x 16 local-memory kernel;
- register-blocked fp32 matmul: examples/matrix_gemm_fp32.py (4 x 4 blocks, float4 loads,
  double-buffered local tiles), against torch.mm too;
- n-body step: all pairs, positions and velocities as `sycl.float4` (mass in w) read with
  vector loads;
- 5-point stencil: 0.2 x (the cell and its four neighbours, zero outside), against torch's
  conv2d of that cross;
- softmax over rows: a work-group per row, two group reductions, against torch.softmax.

Each implementation is timed as launch + wait, `--repeat` times after one warm-up; the
best and the median count, and each ratio is vksycl's best time over its peer's. Each is
also timed back to back (10 launches, one wait), whose time per launch is the kernel's
own: launch + wait adds the host's round trip, which moves by tens of microseconds
between processes on NVIDIA's Vulkan driver and would otherwise count against a short
kernel's code. Every
result, the peers' too, is checked against numpy on a sample of rows. The GLSL peers run
everywhere; without cupy or torch (lavapipe) they are vksycl's only peers. `--csv FILE`
writes the figures (`record.py`).

    python3 benchmarks/kernels.py [--small] [--only NAME ...] [--repeat 10] [--csv FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import kernels_cuda
import kernels_glsl
import matmul
import numpy as np
import record
from timing import seconds

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import matrix_gemm_fp32

SAMPLE = 16  # rows of each result checked against numpy
BACK_TO_BACK = 10  # launches timed together, waited for once
WG = 256  # work-items per work-group of the one-dimensional kernels


@dataclass
class Entry:
    """One implementation of a case: `launch` launches it, `sync` waits for everything
    launched, `result` reads its output back to the host."""
    implementation: str
    launch: Callable[[], object]
    result: Callable[[], np.ndarray]
    sync: Callable[[], object]

    def run(self) -> None:
        """One launch + wait."""
        self.launch()
        self.sync()

    def back_to_back(self) -> None:
        """`BACK_TO_BACK` launches, then one wait: the device's time per launch, without
        the host's round trip."""
        for _ in range(BACK_TO_BACK):
            self.launch()
        self.sync()


@dataclass
class Case:
    """A kernel at one size: its implementations, the check each result must pass, and
    what frees the memory they share."""
    kernel: str
    check: Callable[[np.ndarray], None]
    entries: list[Entry]
    free: Callable[[], None]


@dataclass
class Peers:
    """cupy and torch on the CUDA device, where they import."""
    cp: ModuleType | None
    torch: ModuleType | None

    @staticmethod
    def find() -> Peers:
        def load(name: str) -> ModuleType | None:
            try:
                module = __import__(name)
            except ImportError:
                return None
            return module if module.cuda.is_available() else None

        return Peers(load("cupy"), load("torch"))

    def cuda(self, source: str, name: str, grid: tuple[int, ...], block: tuple[int, ...],
             args: tuple, out) -> Entry:
        """A RawKernel launch and wait, reading `out` back."""
        cp = self.cp
        kernel = cp.RawKernel(source, name)

        return Entry("hand CUDA (cupy RawKernel)", lambda: kernel(grid, block, args),
                     lambda: cp.asnumpy(out), cp.cuda.Device().synchronize)

    def torch_entry(self, label: str, fn: Callable[[], object]) -> Entry:
        """A torch call and wait; the result is what the last call returned."""
        torch = self.torch
        last: list = [None]

        def launch() -> None:
            last[0] = fn()

        return Entry(f"torch ({label})", launch, lambda: last[0].cpu().numpy(),
                     torch.cuda.synchronize)


class Device:
    """vksycl's device memory for one case, freed together."""

    def __init__(self, q: sycl.queue) -> None:
        self.q = q
        self.pointers: list[sycl.ptr] = []

    def array(self, host: np.ndarray) -> sycl.ptr:
        p = sycl.malloc_device(host.size, host.dtype.type, self.q)
        self.q.copy(np.ascontiguousarray(host).ravel(), p, host.size).wait()
        self.pointers.append(p)
        return p

    def empty(self, shape: tuple[int, ...], dtype: type) -> sycl.ptr:
        return self.array(np.zeros(shape, dtype))

    def reader(self, p: sycl.ptr, shape: tuple[int, ...], dtype: type
               ) -> Callable[[], np.ndarray]:
        def read() -> np.ndarray:
            out = np.empty(shape, dtype)
            self.q.copy(p, out.ravel(), out.size).wait()
            return out
        return read

    def free(self) -> None:
        for p in self.pointers:
            sycl.free(p, self.q)


def glsl(mem: Device, source: str, ndr: sycl.nd_range, args: tuple, out: sycl.ptr,
         shape: tuple[int, ...], dtype: type) -> Entry:
    """A hand GLSL kernel built from `source`, launched over `ndr` with `args` (storage
    buffers, then push constants) and waited for, reading `out` back."""
    q = mem.q
    bundle = syclexp.create_kernel_bundle_from_source(
        q.get_context(), syclexp.source_language.glsl, {"main": source})
    kernel = syclexp.build(bundle).ext_oneapi_get_kernel("main")

    def cgf(h) -> None:
        h.set_args(*args)
        h.parallel_for(ndr, kernel)

    return Entry("hand GLSL (same driver)", lambda: q.submit(cgf),
                 mem.reader(out, shape, dtype), q.wait)


def sampled(rows: np.ndarray, want: Callable[[np.ndarray], np.ndarray], rtol: float,
            atol: float) -> Callable[[np.ndarray], None]:
    """A check of a result's `rows` against `want(rows)`."""
    expected = want(rows)
    return lambda got: np.testing.assert_allclose(got[rows], expected, rtol=rtol, atol=atol)


# -- the cases -------------------------------------------------------------------------------

def mandelbrot(q: sycl.queue, peers: Peers, side: int, max_iter: int) -> Case:
    """Escape counts over [-2.2, 1] x [-1.2, 1.2], side x side pixels."""
    w = h = side
    mem = Device(q)
    counts = mem.empty((h, w), np.int32)

    def body(it):
        row, col = it.get_global_id(0), it.get_global_id(1)
        cr = -2.2 + 3.2 * sycl.float32(col) / w
        ci = -1.2 + 2.4 * sycl.float32(row) / h
        zr = sycl.float32(0.0)
        zi = sycl.float32(0.0)
        n = 0
        while n < max_iter and zr * zr + zi * zi < 4.0:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            n += 1
        counts[row * w + col] = n

    ndr = sycl.nd_range((h, w), (8, 32))
    entries = [Entry("vksycl", lambda: q.parallel_for(ndr, body),
                     mem.reader(counts, (h, w), np.int32), q.wait)]
    out = mem.empty((h, w), np.int32)
    entries.append(glsl(mem, kernels_glsl.MANDELBROT, ndr, (out, w, h, max_iter), out,
                        (h, w), np.int32))
    if peers.cp:
        out = peers.cp.zeros((h, w), peers.cp.int32)
        entries.append(peers.cuda(kernels_cuda.MANDELBROT, "mandelbrot", (w // 32, h // 8),
                                  (32, 8), (out, np.int32(w), np.int32(h),
                                            np.int32(max_iter)), out))
    rows = np.random.default_rng(1).choice(h, min(SAMPLE, h), replace=False)

    def want(rows: np.ndarray) -> np.ndarray:
        cr = np.float32(-2.2) + np.float32(3.2) * np.arange(w, dtype=np.float32) / w
        ci = np.float32(-1.2) + np.float32(2.4) * rows.astype(np.float32)[:, None] / h
        zr = np.zeros((len(rows), w), np.float32)
        zi = np.zeros_like(zr)
        n = np.zeros(zr.shape, np.int32)
        for _ in range(max_iter):
            live = zr * zr + zi * zi < 4
            n += live
            zr, zi = (np.where(live, zr * zr - zi * zi + cr, zr),
                      np.where(live, 2 * zr * zi + ci, zi))
        return n

    expected = want(rows)

    def check(got: np.ndarray) -> None:
        # fused multiply-adds move a few points on the set's edge by some iterations
        agree = np.mean(got[rows] == expected)
        assert agree >= 0.99, f"{agree:.3f} of the sampled pixels agree with numpy"

    return Case(f"Mandelbrot {side}^2 x {max_iter}", check, entries, mem.free)


def gemm_case(q: sycl.queue, peers: Peers, n: int, name: str, launch: Callable,
              cuda: Callable[[object, object, object], Entry] | None,
              glsl_peer: tuple[str, sycl.nd_range] | None = None) -> Case:
    """c = a @ b in float32 by `launch(a, b, c)`, against `glsl_peer` (a GLSL source and
    its nd_range), `cuda(a, b, c)` on cupy arrays and torch.mm (with TF32 off, so that it
    computes in float32 too)."""
    rng = np.random.default_rng(5)
    ha = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    hb = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    mem = Device(q)
    a, b, c = mem.array(ha), mem.array(hb), mem.empty((n, n), np.float32)
    entries = [Entry("vksycl", lambda: launch(a, b, c), mem.reader(c, (n, n), np.float32),
                     q.wait)]
    if glsl_peer:
        source, ndr = glsl_peer
        out = mem.empty((n, n), np.float32)
        entries.append(glsl(mem, source, ndr, (a, b, out, n), out, (n, n), np.float32))
    if peers.cp and cuda:
        cp = peers.cp
        entries.append(cuda(cp.asarray(ha), cp.asarray(hb), cp.empty((n, n), cp.float32)))
    if peers.torch:
        torch = peers.torch
        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tb = torch.as_tensor(ha, device="cuda"), torch.as_tensor(hb, device="cuda")
        entries.append(peers.torch_entry("torch.mm, TF32 off", lambda: torch.mm(ta, tb)))
    rows = rng.choice(n, min(SAMPLE, n), replace=False)
    return Case(f"{name} fp32 matmul {n}^3", sampled(rows, lambda r: ha[r] @ hb, 2e-3, 2e-3),
                entries, mem.free)


def tiled_matmul(q: sycl.queue, peers: Peers, n: int) -> Case:
    t = matmul.TILE
    ndr = sycl.nd_range((n, n), (t, t))

    def cuda(a, b, c) -> Entry:
        return peers.cuda(matmul.CUDA, "matmul", (n // t, n // t), (t, t),
                          (a, b, c, np.int32(n)), c)

    return gemm_case(q, peers, n, "tiled",
                     lambda a, b, c: q.parallel_for(ndr, matmul.tiled_kernel(a, b, c, n)),
                     cuda, (kernels_glsl.TILED_MATMUL, ndr))


def blocked_matmul(q: sycl.queue, peers: Peers, n: int) -> Case:
    g = matrix_gemm_fp32

    def cuda(a, b, c) -> Entry:
        return peers.cuda(kernels_cuda.REGISTER_BLOCKED, "gemm", (n // g.BN, n // g.BM),
                          (g.WG, g.WG), (a, b, c, np.int32(n)), c)

    return gemm_case(q, peers, n, "register-blocked",
                     lambda a, b, c: g.gemm(q, a, b, c, n), cuda,
                     (kernels_glsl.REGISTER_BLOCKED, g.nd_range_for(n)))


def nbody(q: sycl.queue, peers: Peers, n: int) -> Case:
    """One step of all-pairs gravity: positions (mass in w) and velocities as float4."""
    dt, eps2 = 0.01, 0.01
    rng = np.random.default_rng(2)
    hp = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    hp[:, 3] = rng.uniform(0.5, 1.5, n)
    hv = rng.uniform(-0.1, 0.1, (n, 4)).astype(np.float32)
    hv[:, 3] = 0
    mem = Device(q)
    pos, vel = mem.array(hp), mem.array(hv)
    pos_out, vel_out = mem.empty((n, 4), np.float32), mem.empty((n, 4), np.float32)

    def body(it):
        i = it.get_global_id(0)
        p = sycl.float4()
        p.load(i, pos)
        acc = sycl.float3(0.0)
        for j in range(n):
            other = sycl.float4()
            other.load(j, pos)
            d = other.xyz - p.xyz
            inv = sycl.rsqrt(d.x * d.x + d.y * d.y + d.z * d.z + eps2)
            acc += d * (other.w * inv * inv * inv)
        v = sycl.float4()
        v.load(i, vel)
        v.xyz = v.xyz + acc * dt
        p.xyz = p.xyz + v.xyz * dt
        v.store(i, vel_out)
        p.store(i, pos_out)

    ndr = sycl.nd_range((n,), (WG,))
    read = mem.reader(pos_out, (n, 4), np.float32)
    entries = [Entry("vksycl", lambda: q.parallel_for(ndr, body), read, q.wait)]
    gpos, gvel = mem.empty((n, 4), np.float32), mem.empty((n, 4), np.float32)
    entries.append(glsl(mem, kernels_glsl.NBODY, ndr, (pos, vel, gpos, gvel, n, dt, eps2),
                        gpos, (n, 4), np.float32))
    if peers.cp:
        cp = peers.cp
        cpos, cvel = cp.asarray(hp), cp.asarray(hv)
        cpos_out, cvel_out = cp.empty_like(cpos), cp.empty_like(cvel)
        entries.append(peers.cuda(kernels_cuda.NBODY, "nbody", (n // WG,), (WG,),
                                  (cpos, cvel, cpos_out, cvel_out, np.int32(n),
                                   np.float32(dt), np.float32(eps2)), cpos_out))

    def want(rows: np.ndarray) -> np.ndarray:
        d = hp[None, :, :3] - hp[rows, None, :3]
        inv = 1 / np.sqrt((d * d).sum(-1) + eps2)
        acc = (d * (hp[None, :, 3] * inv ** 3)[..., None]).sum(1)
        out = hp[rows].copy()
        out[:, :3] += (hv[rows, :3] + acc * dt) * dt
        return out

    rows = rng.choice(n, min(SAMPLE, n), replace=False)
    return Case(f"n-body step, {n} bodies", sampled(rows, want, 1e-4, 1e-5), entries,
                mem.free)


def stencil(q: sycl.queue, peers: Peers, side: int) -> Case:
    """0.2 x (a cell and its four neighbours), zero outside the grid."""
    h = w = side
    hs = np.random.default_rng(4).uniform(0, 1, (h, w)).astype(np.float32)
    mem = Device(q)
    src, dst = mem.array(hs), mem.empty((h, w), np.float32)

    def body(it):
        i, j = it.get_global_id(0), it.get_global_id(1)
        k = i * w + j
        s = src[k]
        if i > 0:
            s += src[k - w]
        if i + 1 < h:
            s += src[k + w]
        if j > 0:
            s += src[k - 1]
        if j + 1 < w:
            s += src[k + 1]
        dst[k] = 0.2 * s

    ndr = sycl.nd_range((h, w), (8, 32))
    entries = [Entry("vksycl", lambda: q.parallel_for(ndr, body),
                     mem.reader(dst, (h, w), np.float32), q.wait)]
    out = mem.empty((h, w), np.float32)
    entries.append(glsl(mem, kernels_glsl.STENCIL, ndr, (src, out, h, w), out, (h, w),
                        np.float32))
    if peers.cp:
        cp = peers.cp
        csrc, cdst = cp.asarray(hs), cp.empty((h, w), cp.float32)
        entries.append(peers.cuda(kernels_cuda.STENCIL, "stencil", (w // 32, h // 8), (32, 8),
                                  (csrc, cdst, np.int32(h), np.int32(w)), cdst))
    if peers.torch:
        torch = peers.torch
        torch.backends.cudnn.allow_tf32 = False
        cross = torch.tensor([[0, 0.2, 0], [0.2, 0.2, 0.2], [0, 0.2, 0]],
                             device="cuda").reshape(1, 1, 3, 3)
        ts = torch.as_tensor(hs, device="cuda").reshape(1, 1, h, w)
        entries.append(peers.torch_entry(
            "conv2d, TF32 off",
            lambda: torch.nn.functional.conv2d(ts, cross, padding=1).reshape(h, w)))

    def want(rows: np.ndarray) -> np.ndarray:
        padded = np.pad(hs, 1)
        r = rows + 1
        return 0.2 * (padded[r, 1:-1] + padded[r - 1, 1:-1] + padded[r + 1, 1:-1]
                      + padded[r, :-2] + padded[r, 2:])

    rows = np.random.default_rng(4).choice(h, min(SAMPLE, h), replace=False)
    rows[0] = 0  # an edge
    return Case(f"5-point stencil {side}^2", sampled(rows, want, 1e-5, 1e-6), entries,
                mem.free)


def softmax(q: sycl.queue, peers: Peers, rows: int, cols: int) -> Case:
    """softmax along each row of a rows x cols matrix."""
    hx = np.random.default_rng(6).normal(0, 2, (rows, cols)).astype(np.float32)
    mem = Device(q)
    x, y = mem.array(hx), mem.empty((rows, cols), np.float32)

    def body(it):
        g = it.get_group()
        base = it.get_group(0) * cols
        lid = it.get_local_id(0)
        m = sycl.float32(-3.4e38)
        for c in range(lid, cols, WG):
            m = sycl.fmax(m, x[base + c])
        m = sycl.reduce_over_group(g, m, sycl.maximum())
        s = sycl.float32(0.0)
        for c in range(lid, cols, WG):
            s += sycl.exp(x[base + c] - m)
        s = sycl.reduce_over_group(g, s, sycl.plus())
        inv = 1.0 / s
        for c in range(lid, cols, WG):
            y[base + c] = sycl.exp(x[base + c] - m) * inv

    ndr = sycl.nd_range((rows * WG,), (WG,))
    entries = [Entry("vksycl", lambda: q.parallel_for(ndr, body),
                     mem.reader(y, (rows, cols), np.float32), q.wait)]
    out = mem.empty((rows, cols), np.float32)
    entries.append(glsl(mem, kernels_glsl.SOFTMAX, ndr, (x, out, cols), out, (rows, cols),
                        np.float32))
    if peers.cp:
        cp = peers.cp
        cx, cy = cp.asarray(hx), cp.empty((rows, cols), cp.float32)
        entries.append(peers.cuda(kernels_cuda.SOFTMAX, "softmax", (rows,), (WG,),
                                  (cx, cy, np.int32(cols)), cy))
    if peers.torch:
        torch = peers.torch
        tx = torch.as_tensor(hx, device="cuda")
        entries.append(peers.torch_entry("torch.softmax", lambda: torch.softmax(tx, dim=1)))

    def want(r: np.ndarray) -> np.ndarray:
        e = np.exp(hx[r].astype(np.float64) - hx[r].max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    picked = np.random.default_rng(6).choice(rows, min(SAMPLE, rows), replace=False)
    return Case(f"softmax over rows, {rows} x {cols}", sampled(picked, want, 1e-4, 1e-7),
                entries, mem.free)


# -- the run ---------------------------------------------------------------------------------

SMALL = {"mandelbrot": [128, 50], "matmul": 128, "bodies": 512, "grid": 128,
         "softmax": [64, 512]}


def cases(args: argparse.Namespace) -> dict[str, Callable[[sycl.queue, Peers], Case]]:
    """Each case by name, at the sizes asked for."""
    return {
        "mandelbrot": lambda q, p: mandelbrot(q, p, *args.mandelbrot),
        "tiled": lambda q, p: tiled_matmul(q, p, args.matmul),
        "blocked": lambda q, p: blocked_matmul(q, p, args.matmul),
        "nbody": lambda q, p: nbody(q, p, args.bodies),
        "stencil": lambda q, p: stencil(q, p, args.grid),
        "softmax": lambda q, p: softmax(q, p, *args.softmax),
    }


def measure(case: Case, repeat: int) -> list[dict[str, object]]:
    """Each implementation's times, checked, with vksycl's best time over each peer's:
    launch + wait, and per launch of `BACK_TO_BACK` launched back to back (the kernel's
    own time, the host's round trip left out)."""
    found = []
    try:
        for entry in case.entries:
            times = seconds(entry.run, repeat)
            case.check(entry.result())
            piped = seconds(entry.back_to_back, max(3, repeat // BACK_TO_BACK))
            found.append({"kernel": case.kernel, "implementation": entry.implementation,
                          "best_ms": min(times) * 1e3,
                          "median_ms": statistics.median(times) * 1e3,
                          "back_to_back_ms": min(piped) * 1e3 / BACK_TO_BACK})
    finally:
        case.free()
    ours, ours_piped = found[0]["best_ms"], found[0]["back_to_back_ms"]
    print(f"{case.kernel}:")
    for row in found:
        if row is not found[0]:
            row["vksycl_time_ratio"] = ours / row["best_ms"]
            row["vksycl_back_to_back_ratio"] = ours_piped / row["back_to_back_ms"]
        ratio = (f"; vksycl takes {row['vksycl_time_ratio']:.2f}x its time, "
                 f"{row['vksycl_back_to_back_ratio']:.2f}x back to back"
                 if "vksycl_time_ratio" in row else "")
        print(f"  {row['implementation']}: best {row['best_ms']:.3f} ms, median "
              f"{row['median_ms']:.3f} ms, back to back {row['back_to_back_ms']:.3f} ms "
              f"(checked){ratio}")
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mandelbrot", type=int, nargs=2, default=[2048, 200],
                    metavar=("SIDE", "ITERATIONS"))
    ap.add_argument("--matmul", type=int, default=2048, help="n of the n x n matrices")
    ap.add_argument("--bodies", type=int, default=16384)
    ap.add_argument("--grid", type=int, default=8192, help="side of the stencil's grid")
    ap.add_argument("--softmax", type=int, nargs=2, default=[8192, 2048],
                    metavar=("ROWS", "COLS"))
    ap.add_argument("--only", nargs="+", default=None, help="run only these kernels")
    ap.add_argument("--repeat", type=int, default=10)
    record.add_arguments(ap)
    args = record.parse(ap, SMALL)
    todo = cases(args)
    unknown = set(args.only or ()) - set(todo)
    if unknown:
        ap.error(f"unknown kernels {sorted(unknown)}; there are {sorted(todo)}")
    q = sycl.queue()
    peers = Peers.find()
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; peers: "
          f"{', '.join(['hand GLSL'] + [n for n in ('cp', 'torch') if getattr(peers, n)])}")
    rows = []
    for name, make in todo.items():
        if args.only is None or name in args.only:
            rows += measure(make(q, peers), args.repeat)
    record.write(args, "Kernels as Python functions against hand GLSL on the same driver, "
                 "hand CUDA and torch: launch + wait in ms, vksycl's best time over each "
                 "peer's", rows, q.get_device(),
                 matmul.versions())


if __name__ == "__main__":
    main()
