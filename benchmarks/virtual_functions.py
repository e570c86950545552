"""Virtual calls against the same computation written by hand, in the same run: device
time (Vulkan timestamps) of `area()` over N objects of three classes (rectangles, circles,
triangles in random order), called through `Shape.at(store + i).area()` (an OpSwitch on
the stored type tag), against structs of the same size with a `kind` field and an explicit
`if`/`elif` on it. Both results are checked against numpy.

    .venv/bin/python benchmarks/virtual_functions.py [--n 16777216] [--small] [--repeat 10]

`--small` runs 256K objects (for lavapipe).
"""

from __future__ import annotations

import abc
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import vksycl as sycl
from vksycl import info
from vksycl.ext.oneapi import experimental as syclexp


@sycl.struct
class Shape:
    @syclexp.indirectly_callable()
    @abc.abstractmethod
    def area(self): ...


@sycl.struct
class Rect(Shape):
    w: sycl.float32
    h: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return self.w * self.h


@sycl.struct
class Circle(Shape):
    r: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return 3.14159265 * self.r * self.r


@sycl.struct
class Tri(Shape):
    b: sycl.float32
    h: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return 0.5 * self.b * self.h


@sycl.struct
class Tagged:
    """The hand-written alternative: the same 12 bytes, a kind field instead of a tag."""

    kind: sycl.int32
    a: sycl.float32
    b: sycl.float32


def expected(kinds: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    pi = np.float32(3.14159265)
    return np.select([kinds == 0, kinds == 1], [a * b, pi * a * a],
                     np.float32(0.5) * a * b).astype(np.float32)


def device_us(q: sycl.queue, submit, repeat: int) -> float:
    """The best device time of `repeat` runs after a warm-up, in microseconds."""
    submit().wait()
    best = float("inf")
    for _ in range(repeat):
        e = submit()
        e.wait()
        best = min(best, e.get_profiling_info(info.event_profiling.command_end) -
                   e.get_profiling_info(info.event_profiling.command_start))
    return best / 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16 << 20)
    ap.add_argument("--small", action="store_true", help="256K objects (for lavapipe)")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    n = (256 << 10) if args.small else args.n
    q = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
    rng = np.random.default_rng(0)
    kinds = rng.integers(0, 3, n).astype(np.int32)
    a = rng.uniform(0.5, 2.0, n).astype(np.float32)
    b = rng.uniform(0.5, 2.0, n).astype(np.float32)
    want = expected(kinds, a, b)

    d_kinds = sycl.malloc_device(n, sycl.int32, q)
    d_a = sycl.malloc_device(n, sycl.float32, q)
    d_b = sycl.malloc_device(n, sycl.float32, q)
    q.copy(kinds, d_kinds, n)
    q.copy(a, d_a, n)
    q.copy(b, d_b, n)
    store = sycl.malloc_device(n, syclexp.storage_for(Rect, Circle, Tri), q)
    tagged = sycl.malloc_device(n, Tagged, q)
    out = sycl.malloc_device(n, sycl.float32, q)
    q.wait()

    def construct(i):
        k = d_kinds[i]
        if k == 0:
            Rect.construct_at(store + i, w=d_a[i], h=d_b[i])
        elif k == 1:
            Circle.construct_at(store + i, r=d_a[i])
        else:
            Tri.construct_at(store + i, b=d_a[i], h=d_b[i])
        tagged[i] = Tagged(kind=k, a=d_a[i], b=d_b[i])

    def virtual_area(i):
        out[i] = Shape.at(store + i).area()

    def explicit_area(i):
        t = tagged[i]
        if t.kind == 0:
            area = t.a * t.b
        elif t.kind == 1:
            area = 3.14159265 * t.a * t.a
        else:
            area = 0.5 * t.a * t.b
        out[i] = area

    q.parallel_for(sycl.range(n), construct).wait()
    props = [syclexp.assume_indirect_calls]
    r = sycl.range(n)
    runs = {
        "virtual area()": lambda: q.parallel_for(r, virtual_area, properties=props),
        "if/elif on a kind field": lambda: q.parallel_for(r, explicit_area),
    }
    print(f"{q.get_device().get_info(info.device.name)}; {n} objects of 3 classes, "
          f"best device time of {args.repeat}")
    times = {}
    got = np.empty(n, np.float32)
    for name, submit in runs.items():
        times[name] = device_us(q, submit, args.repeat)
        q.copy(out, got, n).wait()
        ok = np.allclose(got, want, rtol=1e-5)
        print(f"  {name:26s} {times[name]:10.1f} us  {12 * n / times[name] / 1e3:7.1f} GB/s "
              f"of objects  {'ok' if ok else 'WRONG'}")
        if not ok:
            raise SystemExit(f"{name} computed wrong areas")
    ratio = times["virtual area()"] / times["if/elif on a kind field"]
    print(f"  virtual / explicit: {ratio:.3f}x")
    for p in (d_kinds, d_a, d_b, store, tagged, out):
        sycl.free(p, q)


if __name__ == "__main__":
    main()
