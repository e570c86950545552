"""Virtual functions in kernels (sycl_ext_oneapi_virtual_functions): shapes of three
classes share one USM array; one kernel constructs them in place, another sums their
areas through the base class, dispatching on each object's stored type. A kernel that
makes virtual calls declares the sets of methods it may reach.

    .venv/bin/python examples/virtual_functions.py
"""

import abc
import math
import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp


class Extras:
    """A second set of virtual methods: only kernels that declare it may call them."""


@sycl.struct
class Shape:
    scale: sycl.float32

    @syclexp.indirectly_callable()
    @abc.abstractmethod
    def area(self): ...

    @syclexp.indirectly_callable_in(Extras)
    def corners(self):
        return 0


@sycl.struct
class Rect(Shape):
    w: sycl.float32
    h: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return self.scale * self.w * self.h

    @syclexp.indirectly_callable_in(Extras)
    def corners(self):
        return 4


@sycl.struct
class Circle(Shape):
    r: sycl.float32

    @syclexp.indirectly_callable()
    def area(self):
        return self.scale * math.pi * self.r * self.r


@sycl.struct
class Square(Rect):  # two levels: Square -> Rect -> Shape
    @syclexp.indirectly_callable()
    def area(self):
        return Rect.area(self)  # the base's version, called statically


def main() -> int:
    q = sycl.queue()
    n = 1000
    store = sycl.malloc_shared(n, syclexp.storage_for(Rect, Circle, Square), q)
    areas = sycl.malloc_shared(n, sycl.float32, q)
    corners = sycl.malloc_shared(1, sycl.int32, q)
    corners[0] = 0

    def construct(i):  # no virtual call: no property needed
        side = sycl.float32(i % 7 + 1)
        if i % 3 == 0:
            Rect.construct_at(store + i, scale=1.0, w=side, h=2.0)
        elif i % 3 == 1:
            Circle.construct_at(store + i, scale=0.5, r=side)
        else:
            Square.construct_at(store + i, scale=1.0, w=side, h=side)

    def area_of(i):
        areas[i] = Shape.at(store + i).area()

    def count_corners(i):
        sycl.atomic_ref(corners).fetch_add(Shape.at(store + i).corners())

    q.parallel_for(sycl.range(n), construct).wait()
    q.parallel_for(sycl.range(n), area_of, properties=[syclexp.assume_indirect_calls]).wait()
    q.parallel_for(sycl.range(n), count_corners,
                   properties=[syclexp.assume_indirect_calls_to(Extras)]).wait()

    i = np.arange(n)
    side = (i % 7 + 1).astype(np.float32)
    want = np.select([i % 3 == 0, i % 3 == 1], [side * 2, 0.5 * math.pi * side * side],
                     side * side)
    got = np.asarray(areas)
    want_corners = 4 * int(np.count_nonzero(i % 3 != 1))  # rectangles and squares
    print(f"total area {got.sum():.1f} (expected {want.sum():.1f}), "
          f"{corners[0]} corners (expected {want_corners})")
    ok = np.allclose(got, want, rtol=1e-5) and corners[0] == want_corners

    def forgot_the_property(i):
        areas[i] = Shape.at(store + i).area()

    try:
        q.parallel_for(sycl.range(n), forgot_the_property)
        ok = False
    except sycl.exception as ex:  # a build error at this file's line
        print("without the property:", str(ex).split(": ", 1)[1][:60], "...")
        ok = ok and ex.code() == sycl.errc.build
    for p in (store, areas, corners):
        sycl.free(p, q)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
