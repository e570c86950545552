"""Seed 004, "Basic invocation": define a free function kernel and enqueue it with
`nd_launch`. Exits non-zero if the device computed anything else."""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

NUM = 1024
WGSIZE = 16


@syclexp.nd_range_kernel(1)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    # Get the ID of this kernel iteration.
    id = this_work_item.get_nd_item(1).get_global_linear_id()

    ptr[id] = start + sycl.float32(id)


def main() -> int:
    q = sycl.queue()
    ctxt = q.get_context()  # noqa: F841 - as in the original example

    ptr = sycl.malloc_shared(NUM, sycl.float32, q)

    ndr = sycl.nd_range((NUM,), (WGSIZE,))
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(iota), 3.14, ptr)

    q.wait()

    expect = np.float32(3.14) + np.arange(NUM, dtype=np.float32)
    ok = np.array_equal(np.asarray(ptr)[:NUM], expect)
    sycl.free(ptr, q)
    print("free_function_basic:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
