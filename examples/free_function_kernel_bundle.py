"""Seed 004, "New kernel bundle member functions" and "Enqueuing a free function kernel and
setting parameter values": a kernel object from a bundle, its arguments set by index."""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

NUM = 1024
WGSIZE = 16


@syclexp.nd_range_kernel(1)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    id = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[id] = start + sycl.float32(id)


@syclexp.single_task_kernel
def total(ptr: sycl.ptr[sycl.float32], n: sycl.int32, out: sycl.ptr[sycl.float32]):
    s = sycl.float32(0)
    for i in range(n):
        s += ptr[i]
    out[0] = s


def main() -> int:
    q = sycl.queue()
    ctxt = q.get_context()
    dev = q.get_device()

    # Kernel ids of free function kernels are among the application's kernel ids.
    ok = syclexp.get_kernel_id(iota) in sycl.get_kernel_ids()
    ok = ok and syclexp.is_compatible(iota, dev)

    exe_bndl = syclexp.get_kernel_bundle(ctxt, iota, sycl.bundle_state.executable)
    ok = ok and exe_bndl.ext_oneapi_has_kernel(iota, dev)
    k_iota = exe_bndl.ext_oneapi_get_kernel(iota)
    ok = ok and k_iota.get_info(sycl.info.kernel.num_args) == 2

    ptr = sycl.malloc_shared(NUM, sycl.float32, q)

    def iota_cgf(h):
        h.set_arg(0, 3.14)   # a Python float matches the float32 parameter
        h.set_arg(1, ptr)
        h.parallel_for(sycl.nd_range((NUM,), (WGSIZE,)), k_iota)

    q.submit(iota_cgf).wait()

    # Every kernel of the application, in one bundle.
    everything = sycl.get_kernel_bundle(ctxt, sycl.bundle_state.executable)
    k_total = everything.ext_oneapi_get_kernel(total)
    out = sycl.malloc_shared(1, sycl.float32, q)
    q.submit(lambda h: (h.set_args(ptr, 8, out), h.single_task(k_total))).wait()

    expect = np.float32(3.14) + np.arange(NUM, dtype=np.float32)
    ok = ok and np.array_equal(np.asarray(ptr)[:NUM], expect)
    ok = ok and np.isclose(np.asarray(out)[0], expect[:8].sum())

    # Setting fewer arguments than the kernel has is an error, not undefined behaviour.
    try:
        q.submit(lambda h: (h.set_arg(0, 1.0), h.parallel_for(sycl.nd_range((16,), (16,)),
                                                              k_iota)))
        ok = False
    except sycl.exception as e:
        ok = ok and e.code() == sycl.errc.invalid
        print("unset argument:", e)
    sycl.free(ptr, q)
    sycl.free(out, q)
    print("free_function_kernel_bundle:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
