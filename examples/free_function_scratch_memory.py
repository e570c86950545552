"""Seed 004, "Using scratch work-group local memory": a launch property
(`work_group_scratch_size`) passed through `launch_config`.

The original kernel takes no arguments and only obtains the pointer; this port adds an
output pointer so the program can check what the work-group memory held: each work-item
writes its id there, and after a barrier reads its mirror's.
"""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

NUM = 1024
WGSIZE = 16


@syclexp.nd_range_kernel(1)
def mykernel(out: sycl.ptr[sycl.int32]):
    # Gets a pointer to WGSIZE int's
    ptr = syclexp.get_work_group_scratch_memory(sycl.int32)
    it = this_work_item.get_nd_item(1)
    lid = it.get_local_id(0)
    ptr[lid] = sycl.int32(it.get_global_id(0))
    sycl.group_barrier(it.get_group())
    out[it.get_global_id(0)] = ptr[WGSIZE - 1 - lid]


def main() -> int:
    q = sycl.queue()
    out = sycl.malloc_shared(NUM, sycl.int32, q)

    cfg = syclexp.launch_config(
        sycl.nd_range((NUM,), (WGSIZE,)),
        syclexp.properties(syclexp.work_group_scratch_size(WGSIZE * np.dtype(np.int32).itemsize)),
    )
    syclexp.nd_launch(q, cfg, syclexp.kernel_function(mykernel), out)

    q.wait()

    expect = np.arange(NUM, dtype=np.int32).reshape(-1, WGSIZE)[:, ::-1].reshape(-1)
    ok = np.array_equal(np.asarray(out)[:NUM], expect)
    sycl.free(out, q)
    print("free_function_scratch_memory:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
