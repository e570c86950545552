"""Seed 004, "Free function kernels which are templates or overloaded".

A template is a kernel annotated with a `typing.TypeVar`; `iota[sycl.float32]` names one
instantiation, as `iota<float>` does in C++. Python has no overloads: the two `ping`
overloads of the original become one template, and `ping[sycl.float32]` picks what the
cast `(void(*)(float*))ping` picks. (The original enqueues the single-task `ping` with
`nd_launch`, which its own rules forbid; here it is enqueued with `single_task`.)
"""

from __future__ import annotations  # sycl.ptr[T] is read when the template is instantiated

import sys
import typing

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

NUM = 1024
WGSIZE = 256

T = typing.TypeVar("T")


@syclexp.nd_range_kernel(1)
def iota(start: T, ptr: sycl.ptr[T]):
    id = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[id] = start + id


@syclexp.single_task_kernel
def ping(x: sycl.ptr[T]):
    x[0] = x[0] + 1


def main() -> int:
    q = sycl.queue()

    fptr = sycl.malloc_shared(NUM, sycl.float32, q)
    iptr = sycl.malloc_shared(NUM, sycl.int32, q)
    ndr = sycl.nd_range((NUM,), (WGSIZE,))

    # When the free function kernel is a template, pass a specific instantiation.
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(iota[sycl.float32]), 3.14, fptr)
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(iota[sycl.int32]), 3, iptr)
    q.wait()

    # One "overload" per element type.
    syclexp.single_task(q, syclexp.kernel_function(ping[sycl.float32]), fptr)
    syclexp.single_task(q, syclexp.kernel_function(ping[sycl.int32]), iptr)
    q.wait()

    f = np.float32(3.14) + np.arange(NUM, dtype=np.float32)
    i = 3 + np.arange(NUM, dtype=np.int32)
    f[0] += 1
    i[0] += 1
    ok = np.array_equal(np.asarray(fptr)[:NUM], f) and np.array_equal(np.asarray(iptr)[:NUM], i)
    ids = {syclexp.get_kernel_id(iota[sycl.float32]), syclexp.get_kernel_id(iota[sycl.int32])}
    ok = ok and len(ids) == 2
    sycl.free(fptr, q)
    sycl.free(iptr, q)
    print("free_function_templates:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
