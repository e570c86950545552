"""USM as device addresses, against torch on the same GPU in the same run:

- `malloc_device` + `free` of 256 KiB against `torch.empty` + `del`;
- a kernel launch (+ wait) whose output was freshly allocated, against one on buffers used
  before (64K float32; with device addresses both reuse one pipeline);
  these two are measured in alternating rounds and reported as medians (ratio: the median
  of the rounds' ratios);
- one kernel over an array of `--big-gib` GiB (past NVIDIA's 4 GiB maxStorageBufferRange),
  `x[i] = x[i] * 2 + 1`, against torch's one-pass `torch.addcmul(1, x, 2, out=x)`;
  bandwidth counts one read and one write of every element.

    python3 benchmarks/usm.py [--big-gib 6] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from timing import best_seconds, median_us

import vksycl as sycl


def alloc_free_us(q: sycl.queue, nbytes: int, n: int) -> float:
    return median_us(lambda: sycl.free(sycl.malloc_device(nbytes, sycl.uint8, q), q), n)


class Launches:
    """Launch + wait of `y[i] = x[i] + 1` over n floats, on a new output each time
    (allocated outside the timed part) or on the same one."""

    def __init__(self, q: sycl.queue, n: int) -> None:
        self.q, self.n, self.rng = q, n, sycl.range(n)
        self.x = sycl.malloc_device(n, sycl.float32, q)
        q.fill(self.x, np.float32(1.0), n).wait()
        self.y = sycl.malloc_device(n, sycl.float32, q)

    def median_us(self, fresh: bool, count: int) -> float:
        q, x = self.q, self.x
        times = []
        for _ in range(count):
            if fresh:
                sycl.free(self.y, q)
                self.y = sycl.malloc_device(self.n, sycl.float32, q)
            out = self.y

            def body(i):
                out[i] = x[i] + 1.0  # noqa: B023 (launched before the loop rebinds out)

            t0 = time.perf_counter()
            q.parallel_for(self.rng, body).wait()
            times.append(time.perf_counter() - t0)
        return float(np.median(times)) * 1e6

    def close(self) -> None:
        sycl.free(self.x, self.q)
        sycl.free(self.y, self.q)


def rounds(pair: tuple, count: int) -> tuple[float, float, float]:
    """Both measurements of `pair` taken in alternating rounds, so a change in the
    machine's load hits both alike: (median of the first, of the second, of the per-round
    ratios second / first)."""
    firsts, seconds = [], []
    for _ in range(count):
        firsts.append(pair[0]())
        seconds.append(pair[1]())
    ratio = statistics.median(b / a for a, b in zip(firsts, seconds, strict=True))
    return statistics.median(firsts), statistics.median(seconds), ratio


def big_kernel_gbs(q: sycl.queue, gib: float, repeat: int) -> tuple[float, float]:
    n = int(gib * (1 << 30)) // 4
    x = sycl.malloc_device(n, sycl.float32, q)
    q.fill(x, np.float32(1.0), n).wait()

    def body(i):
        x[i] = x[i] * 2.0 + 1.0

    rng = sycl.range(n)
    secs = best_seconds(lambda: q.parallel_for(rng, body).wait(), repeat)
    probe = np.zeros(4, np.float32)
    q.memcpy(probe, x + (n - 4), 16).wait()  # the last elements were reached
    expect = np.float32(1.0)
    for _ in range(repeat + 1):
        expect = expect * 2 + 1
    ok = bool(np.all(probe == expect))
    sycl.free(x, q)
    return 2 * n * 4 / secs / 1e9, ok


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big-gib", type=float, default=6.0)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--n", type=int, default=3000, help="timed calls of the small figures")
    ap.add_argument("--rounds", type=int, default=9,
                    help="alternating rounds the small figures are measured in")
    args = ap.parse_args()
    q = sycl.queue()
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}")
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False

    per_round = max(args.n // args.rounds, 50)
    ours = (lambda: alloc_free_us(q, 256 << 10, per_round))
    if cuda:
        theirs, ours_us, ratio = rounds((lambda: median_us(
            lambda: torch.empty(256 << 10, dtype=torch.uint8, device="cuda"), per_round),
            ours), args.rounds)
        print(f"malloc_device + free, 256 KiB: {ours_us:.2f} us; torch.empty + del "
              f"{theirs:.2f} us; ratio {ratio:.2f}x (target <= 2)")
    else:
        print(f"malloc_device + free, 256 KiB: {ours():.2f} us")

    launches = Launches(q, 1 << 16)
    launches.median_us(True, 20)  # warm-up: compile, pipeline, pooled sequences
    old, new, ratio = rounds((lambda: launches.median_us(False, per_round),
                              lambda: launches.median_us(True, per_round)), args.rounds)
    launches.close()
    print(f"launch + wait, 64K floats: old buffers {old:.1f} us, fresh output {new:.1f} us; "
          f"ratio {ratio:.2f}x (target <= 1.1)")

    free_bytes = None
    if cuda:
        free_bytes = torch.cuda.mem_get_info()[0]
    if args.big_gib > 0 and (free_bytes is None or free_bytes > 3 * args.big_gib * (1 << 30)):
        gbs, ok = big_kernel_gbs(q, args.big_gib, args.repeat)
        line = (f"x = x * 2 + 1 over {args.big_gib:g} GiB in one kernel: {gbs:.0f} GB/s "
                f"(values {'checked' if ok else 'WRONG'})")
        if cuda:
            t = torch.ones(int(args.big_gib * (1 << 30)) // 4, dtype=torch.float32,
                           device="cuda")

            def peer() -> None:
                torch.addcmul(torch.ones((), device="cuda"), t, torch.full((), 2.0,
                              device="cuda"), out=t)
                torch.cuda.synchronize()

            tsecs = best_seconds(peer, args.repeat)
            tgbs = 2 * t.numel() * 4 / tsecs / 1e9
            line += f"; torch addcmul(1, x, 2, out=x) {tgbs:.0f} GB/s; ratio {gbs / tgbs:.2f}"
            line += " (target >= 0.90)"
            del t
        print(line)


if __name__ == "__main__":
    main()
