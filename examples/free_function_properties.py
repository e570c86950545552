"""Seed 004, "Defining a free function kernel" and "Interaction with kernel properties":
a 3-dimensional `iota`, and an `iota` decorated with `work_group_size(32)`, whose
properties are read back through `get_kernel_info`."""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item


@syclexp.nd_range_kernel(3)
def iota3(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    it = this_work_item.get_nd_item(3)
    id = it.get_global_linear_id()
    ptr[id] = start + sycl.float32(id)


@syclexp.nd_range_kernel(1)
@syclexp.work_group_size(32)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    id = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[id] = start + sycl.float32(id)


def main() -> int:
    q = sycl.queue()
    ok = syclexp.is_nd_range_kernel(iota3, 3) and syclexp.is_nd_range_kernel(iota, 1)
    ok = ok and not syclexp.is_single_task_kernel(iota) and syclexp.is_kernel(iota3)

    ptr = sycl.malloc_shared(8 * 8 * 8, sycl.float32, q)
    syclexp.nd_launch(q, sycl.nd_range((8, 8, 8), (2, 4, 8)), syclexp.kernel_function(iota3),
                      1.0, ptr)
    q.wait()
    ok = ok and np.array_equal(np.asarray(ptr)[:512], 1 + np.arange(512, dtype=np.float32))

    syclexp.nd_launch(q, sycl.nd_range((128,), (32,)), syclexp.kernel_function(iota), 0.5, ptr)
    q.wait()
    ok = ok and np.array_equal(np.asarray(ptr)[:128], 0.5 + np.arange(128, dtype=np.float32))

    ds = sycl.info.kernel_device_specific
    wg = syclexp.get_kernel_info(iota, ds.compile_work_group_size, q)
    attrs = syclexp.get_kernel_info(iota, sycl.info.kernel.attributes, q.get_context())
    nargs = syclexp.get_kernel_info(iota, sycl.info.kernel.num_args, q.get_context())
    print(f"iota: {nargs} arguments, attributes {attrs!r}, compile_work_group_size {tuple(wg)}")
    ok = ok and tuple(wg) == (32, 0, 0) and nargs == 2 and attrs == "reqd_work_group_size(32)"

    # another local range breaks the property: errc.nd_range
    try:
        syclexp.nd_launch(q, sycl.nd_range((128,), (16,)), syclexp.kernel_function(iota), 0.0,
                          ptr)
        ok = False
    except sycl.exception as e:
        ok = ok and e.code() == sycl.errc.nd_range
    sycl.free(ptr, q)
    print("free_function_properties:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
