"""Seed 004, "Restrictions for integration header implementations": the kinds of
parameters its forward declarations show (a pointer, a struct and an enum, a template
over a pointer type, a kernel in another namespace), launched and checked.

A C++ namespace becomes a class holding the kernel as a static method here.
"""

from __future__ import annotations

import enum
import sys
import typing

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item


@sycl.struct
class mystruct:
    scale: sycl.int32
    offset: sycl.int32


class myenum(enum.IntEnum):  # an unscoped enum with underlying type int
    twice = 2
    thrice = 3


T = typing.TypeVar("T")


@syclexp.nd_range_kernel(1)
def kernel1(p: sycl.ptr[sycl.int32]):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    p[i] = sycl.int32(i)


@syclexp.nd_range_kernel(1)
def kernel2(p: sycl.ptr[sycl.int32], s: mystruct, e: myenum):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    p[i] = p[i] * s.scale * e + s.offset


@syclexp.nd_range_kernel(1)
def kernel3(p: sycl.ptr[T]):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    p[i] = p[i] + p[i]


class ns:  # stands for `namespace ns`
    @syclexp.nd_range_kernel(1)
    @staticmethod
    def kernel4(p: sycl.ptr[sycl.int32]):
        i = this_work_item.get_nd_item(1).get_global_id(0)
        p[i] = p[i] - 1


def main() -> int:
    q = sycl.queue()
    n = 64
    ndr = sycl.nd_range((n,), (16,))
    p = sycl.malloc_shared(n, sycl.int32, q)
    f = sycl.malloc_shared(n, sycl.float64 if q.get_device().has(sycl.aspect.fp64)
                           else sycl.float32, q)
    np.asarray(f)[:n] = np.arange(n)

    syclexp.nd_launch(q, ndr, syclexp.kernel_function(kernel1), p)
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(kernel2), p, mystruct(scale=5, offset=1),
                      myenum.thrice)
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(kernel3[sycl.int32]), p)
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(ns.kernel4), p)
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(kernel3[f.dtype.type]), f)
    q.wait()

    i = np.arange(n)
    ok = np.array_equal(np.asarray(p)[:n], (i * 15 + 1) * 2 - 1)
    ok = ok and np.array_equal(np.asarray(f)[:n], 2 * i)
    sycl.free(p, q)
    sycl.free(f, q)
    print("free_function_parameter_types:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
