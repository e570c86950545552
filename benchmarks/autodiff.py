"""Reverse-mode automatic differentiation (`vksycl.ext.vksycl.autodiff`): the time of a
tape's backward pass against the forward pass it differentiates, and against torch's
autograd on the same computation, in float32.

- heat: a 2-D heat equation on a side x side grid, `--steps` explicit steps of the
  5-point stencil with clamped edges and a source term 0.01 sin(u), each step a
  `parallel_for` over `range(side, side)` from one device array into the next (the tape
  keeps no copies, so each step writes an array of its own), then the loss
  sum((u - target)^2) as a `sycl.reduction`; gradients with respect to the initial grid;
- n-body: one all-pairs gravity step over `--bodies` bodies, positions, velocities and
  masses in separate float32 arrays, a work-item per body summing the softened
  accelerations over all bodies, then the loss sum((new position - target)^2) as a
  reduction; gradients with respect to every position, velocity and mass.

The forward pass is the launches and a wait, with no tape. The backward pass is
`tape.backward(seeds={loss: 1.0})` over one recorded forward pass: it sets the seed on
the host, runs each launch's adjoint kernel in reverse order and waits. Gradients add up
over the timed repeats (zeroing them is not part of a backward pass), so they are zeroed
and computed once more afterwards for the check. torch (CUDA where it has it, else CPU,
labelled) runs the same computation with autograd: its forward pass records its graph,
as one followed by a backward pass must, and its backward pass is
`loss.backward(retain_graph=True)` on one recorded graph, each synchronised on CUDA.
Each pass is timed `--repeat` times after one warm-up; the best and the median count.
The ratios are backward over forward (the target being at most 2.5) and vksycl's
backward over torch's. vksycl's loss and gradients are checked against torch's on a
sample (relative 1e-3, absolute 1e-3 of the largest gradient); a mismatch exits nonzero.
`--csv FILE` writes the figures (`record.py`).

    python3 benchmarks/autodiff.py [--small] [--only heat nbody] [--repeat 10] [--csv FILE]
    .venv/bin/python benchmarks/autodiff.py --small --repeat 3     # lavapipe
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import record
from timing import seconds

import vksycl as sycl
from vksycl.ext.vksycl import autodiff as ad

SAMPLE = 64  # elements of each gradient checked against torch's
RTOL = 1e-3
CHUNK = 2048  # rows of torch's n-body pair matrices at a time
F32 = np.float32
# the n-body step's time step and softening: module globals are compiled into kernels,
# where captured float scalars would be arguments with gradients of their own (every
# work-item adding into one cell, n^2 times)
DT, EPS2 = 0.01, 0.01


@dataclass
class Torch:
    """The computation in torch: `loss()` runs it with autograd, `inputs` by name."""
    device: str
    loss: Callable[[], object]
    inputs: dict[str, object]


@dataclass
class Problem:
    """A computation in vksycl: `launch()` submits its kernels, `loss` is where the last
    one sums, `inputs` the pointers (by name and size) whose gradients are checked."""
    name: str
    q: sycl.queue
    launch: Callable[[], None]
    loss: sycl.ptr
    inputs: dict[str, tuple[sycl.ptr, int]]
    torch: Torch | None
    pointers: list[sycl.ptr] = field(default_factory=list)

    def free(self) -> None:
        for p in self.pointers:
            sycl.free(p, self.q)


class Device:
    """Device USM filled from the host, remembered to be freed."""

    def __init__(self, q: sycl.queue) -> None:
        self.q = q
        self.pointers: list[sycl.ptr] = []

    def array(self, host: np.ndarray) -> sycl.ptr:
        host = np.ascontiguousarray(host, F32).ravel()
        p = sycl.malloc_device(host.size, F32, self.q)
        self.q.copy(host, p, host.size).wait()
        self.pointers.append(p)
        return p

    def empty(self, n: int) -> sycl.ptr:
        return self.array(np.zeros(n, F32))


def read(q: sycl.queue, p: sycl.ptr, n: int) -> np.ndarray:
    out = np.empty(n, F32)
    q.copy(p, out, n).wait()
    return out


def sum_of_squares(q: sycl.queue, pairs: list[tuple[sycl.ptr, sycl.ptr]], n: int,
                   loss: sycl.ptr) -> None:
    """loss = sum over the pairs (a, b) of sum((a - b)^2), a reduction over n items."""
    red = sycl.reduction(loss, sycl.plus(), property_list=[
        sycl.property.reduction.initialize_to_identity()])
    if len(pairs) == 1:
        (a, b), = pairs

        def body(i, s):
            d = a[i] - b[i]
            s += d * d
    else:
        (a, b), (c, e), (f, g) = pairs

        def body(i, s):
            d0 = a[i] - b[i]
            d1 = c[i] - e[i]
            d2 = f[i] - g[i]
            s += d0 * d0 + d1 * d1 + d2 * d2

    q.parallel_for(sycl.range(n), red, body)


def torch_device(torch) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


# -- the computations ------------------------------------------------------------------------

def heat(q: sycl.queue, torch, side: int, steps: int) -> Problem:
    n = side * side
    rng = np.random.default_rng(3)
    u0 = rng.uniform(0, 1, n).astype(F32)
    target = rng.uniform(0, 1, n).astype(F32)
    mem = Device(q)
    grids = [mem.array(u0)] + [mem.empty(n) for _ in range(steps)]
    goal = mem.array(target)
    loss = mem.empty(1)

    def step(src, dst):
        def body(item):
            i, j = item[0], item[1]
            c = src[i * side + j]
            up = src[max(i - 1, 0) * side + j]
            down = src[min(i + 1, side - 1) * side + j]
            left = src[i * side + max(j - 1, 0)]
            right = src[i * side + min(j + 1, side - 1)]
            dst[i * side + j] = c + 0.1 * (up + down + left + right - 4.0 * c) \
                + 0.01 * math.sin(c)

        return body

    kernels = [step(grids[t], grids[t + 1]) for t in range(steps)]

    def launch() -> None:
        for k in kernels:
            q.parallel_for(sycl.range(side, side), k)
        sum_of_squares(q, [(grids[-1], goal)], n, loss)

    peer = None
    if torch is not None:
        dev = torch_device(torch)
        tu0 = torch.tensor(u0.reshape(side, side), device=dev, requires_grad=True)
        tt = torch.tensor(target.reshape(side, side), device=dev)
        pad = torch.nn.functional.pad

        def torch_loss():
            u = tu0
            for _ in range(steps):
                p = pad(u[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]
                u = u + 0.1 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]
                               - 4.0 * u) + 0.01 * torch.sin(u)
            return ((u - tt) ** 2).sum()

        peer = Torch(dev, torch_loss, {"u0": tu0})
    return Problem(f"heat {side}^2 x {steps} steps", q, launch, loss, {"u0": (grids[0], n)},
                   peer, mem.pointers)


def nbody(q: sycl.queue, torch, n: int) -> Problem:
    rng = np.random.default_rng(2)
    host = {k: rng.uniform(-1, 1, n).astype(F32) for k in ("x", "y", "z")}
    host["m"] = rng.uniform(0.5, 1.5, n).astype(F32)
    host |= {k: rng.uniform(-0.1, 0.1, n).astype(F32) for k in ("vx", "vy", "vz")}
    targets = {k: rng.uniform(-1, 1, n).astype(F32) for k in ("x", "y", "z")}
    mem = Device(q)
    x, y, z, m, vx, vy, vz = (mem.array(host[k]) for k in host)
    tx, ty, tz = (mem.array(targets[k]) for k in targets)
    nx, ny, nz, nvx, nvy, nvz = (mem.empty(n) for _ in range(6))
    loss = mem.empty(1)

    def step(i):
        xi, yi, zi = x[i], y[i], z[i]
        sx = sycl.float32(0.0)
        sy = sycl.float32(0.0)
        sz = sycl.float32(0.0)
        for j in range(n):
            dx = x[j] - xi
            dy = y[j] - yi
            dz = z[j] - zi
            inv = sycl.rsqrt(dx * dx + dy * dy + dz * dz + EPS2)
            s = m[j] * inv * inv * inv
            sx += dx * s
            sy += dy * s
            sz += dz * s
        wx, wy, wz = vx[i] + sx * DT, vy[i] + sy * DT, vz[i] + sz * DT
        nvx[i], nvy[i], nvz[i] = wx, wy, wz
        nx[i], ny[i], nz[i] = xi + wx * DT, yi + wy * DT, zi + wz * DT

    def launch() -> None:
        q.parallel_for(sycl.range(n), step)
        sum_of_squares(q, [(nx, tx), (ny, ty), (nz, tz)], n, loss)

    peer = None
    if torch is not None:
        dev = torch_device(torch)
        t = {k: torch.tensor(v, device=dev, requires_grad=True) for k, v in host.items()}
        tt = {k: torch.tensor(v, device=dev) for k, v in targets.items()}

        def torch_loss():
            total = 0.0
            for r in range(0, n, CHUNK):
                rows = slice(r, r + CHUNK)
                d = [t[k][None, :] - t[k][rows, None] for k in ("x", "y", "z")]
                inv = torch.rsqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2)
                s = t["m"][None, :] * inv * inv * inv
                for k, dk in zip(("x", "y", "z"), d, strict=True):
                    w = t["v" + k][rows] + (dk * s).sum(1) * DT
                    total = total + ((t[k][rows] + w * DT - tt[k][rows]) ** 2).sum()
            return total

        peer = Torch(dev, torch_loss, t)
    inputs = dict(zip(host, ((p, n) for p in (x, y, z, m, vx, vy, vz)), strict=True))
    return Problem(f"n-body step, {n} bodies", q, launch, loss, inputs, peer, mem.pointers)


# -- the measures ----------------------------------------------------------------------------

def figures(name: str, implementation: str, fw: list[float], bw: list[float]
            ) -> dict[str, object]:
    return {"computation": name, "implementation": implementation,
            "forward_best_ms": min(fw) * 1e3,
            "forward_median_ms": statistics.median(fw) * 1e3,
            "backward_best_ms": min(bw) * 1e3,
            "backward_median_ms": statistics.median(bw) * 1e3,
            "backward_over_forward": min(bw) / min(fw)}


def check(problem: Problem, tape: ad.Tape) -> str:
    """vksycl's loss and gradients against torch's on a sample; raises on a mismatch."""
    peer = problem.torch
    q = problem.q
    tape.zero()
    tape.backward(seeds={problem.loss: 1.0})
    for t in peer.inputs.values():
        t.grad = None
    loss = peer.loss()
    loss.backward()
    ours = float(read(q, problem.loss, 1)[0])
    want = float(loss.detach().cpu())
    worst = abs(ours - want) / abs(want)
    if worst > RTOL:
        raise SystemExit(f"{problem.name}: loss {ours} against torch's {want}")
    rng = np.random.default_rng(7)
    for name, (p, n) in problem.inputs.items():
        got = read(q, tape.gradient(p), n)
        expected = peer.inputs[name].grad.detach().cpu().numpy().ravel()
        picked = rng.choice(n, min(SAMPLE, n), replace=False)
        atol = RTOL * float(np.max(np.abs(expected)))
        bad = ~np.isclose(got[picked], expected[picked], rtol=RTOL, atol=atol)
        if bad.any():
            k = picked[np.argmax(bad)]
            raise SystemExit(f"{problem.name}: d loss/d {name}[{k}] is {got[k]}, torch "
                             f"has {expected[k]} ({bad.sum()} of {len(picked)} sampled "
                             "differ)")
        err = np.abs(got[picked] - expected[picked]) / (np.abs(expected[picked]) + atol)
        worst = max(worst, float(err.max()))
    return f"checked against torch, worst relative difference {worst:.1e}"


def measure(problem: Problem, torch, repeat: int) -> list[dict[str, object]]:
    q = problem.q
    rows = []
    tape = ad.Tape(q)
    try:
        def forward() -> None:
            problem.launch()
            q.wait()

        fw = seconds(forward, repeat)
        with tape:
            problem.launch()
        q.wait()
        bw = seconds(lambda: tape.backward(seeds={problem.loss: 1.0}), repeat)
        rows.append(figures(problem.name, "vksycl", fw, bw))
        peer = problem.torch
        if peer is not None:
            sync = torch.cuda.synchronize if peer.device == "cuda" else (lambda: None)
            last: list = [None]

            def torch_forward() -> None:
                last[0] = peer.loss()
                sync()

            tfw = seconds(torch_forward, repeat)
            graph = peer.loss()

            def torch_backward() -> None:
                graph.backward(retain_graph=True)
                sync()

            tbw = seconds(torch_backward, repeat)
            del graph, last[0]
            rows.append(figures(problem.name, f"torch autograd ({peer.device})", tfw, tbw))
            rows[0]["vksycl_over_torch_backward"] = rows[0]["backward_best_ms"] / \
                rows[1]["backward_best_ms"]
            verdict = check(problem, tape)
        else:
            verdict = "unchecked: no torch"
    finally:
        tape.free()
        problem.free()
    print(f"{problem.name} ({verdict}):")
    for row in rows:
        ratio = (f"; backward {row['vksycl_over_torch_backward']:.2f}x torch's"
                 if "vksycl_over_torch_backward" in row else "")
        print(f"  {row['implementation']:<24} forward best {row['forward_best_ms']:9.3f} ms "
              f"median {row['forward_median_ms']:9.3f} | backward best "
              f"{row['backward_best_ms']:9.3f} ms median {row['backward_median_ms']:9.3f} "
              f"| backward/forward {row['backward_over_forward']:.2f}x{ratio}")
    return rows


SMALL = {"side": 64, "bodies": 256}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", type=int, default=2048, help="side of the heat grid")
    ap.add_argument("--steps", type=int, default=10, help="time steps of the heat equation")
    ap.add_argument("--bodies", type=int, default=16384)
    ap.add_argument("--only", nargs="+", choices=("heat", "nbody"), default=None)
    ap.add_argument("--repeat", type=int, default=10)
    record.add_arguments(ap)
    args = record.parse(ap, SMALL)
    try:
        import torch
    except ImportError:
        torch = None
    q = sycl.queue()
    peer = f"torch {torch.__version__} on {torch_device(torch)}" if torch else "none"
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; peer: {peer}")
    todo = {"heat": lambda: heat(q, torch, args.side, args.steps),
            "nbody": lambda: nbody(q, torch, args.bodies)}
    rows = []
    for name, make in todo.items():
        if args.only is None or name in args.only:
            rows += measure(make(), torch, args.repeat)
    record.write(args, "Reverse-mode autodiff: forward and backward passes in ms, vksycl's "
                 "tape against torch autograd", rows, q.get_device(),
                 {"torch": torch.__version__} if torch else None)


if __name__ == "__main__":
    main()
