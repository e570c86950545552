"""Device-scope global variables (sycl_ext_oneapi_device_global): a lookup table the host
copies in once and every kernel reads, a counter kernels bump with atomics, and a
variable with device_image_scope whose instance belongs to a kernel bundle.

    .venv/bin/python examples/device_global.py
"""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

# one zero-initialised instance per device, shared by every kernel that names it
table = syclexp.device_global(sycl.float32, shape=(16,))
calls = syclexp.device_global(sycl.int32, properties=[syclexp.host_access_read])
# one instance per device image (a kernel bundle, or the kernels launched without one)
seed = syclexp.device_global(sycl.uint32, properties=[syclexp.device_image_scope])


@syclexp.single_task_kernel
def next_random(out: sycl.ptr[sycl.uint32]):
    x = seed.get() * sycl.uint32(1664525) + sycl.uint32(1013904223)  # an LCG step
    seed.set(x)
    out[0] = x


def lookup(x):
    return table[x % 16]


def main() -> int:
    q = sycl.queue()
    n = 64
    squares = np.arange(16, dtype=np.float32) ** 2
    q.copy(squares, table).wait()  # count defaults to the whole variable

    out = sycl.malloc_shared(n, sycl.float32, q)

    def kernel(i):
        out[i] = lookup(i) + 0.5
        sycl.atomic_ref(calls).fetch_add(1)

    q.parallel_for(sycl.range(n), kernel).wait()
    got = np.asarray(out)[:n].copy()
    ok = np.array_equal(got, squares[np.arange(n) % 16] + 0.5)

    count = np.zeros(1, np.int32)
    q.copy(calls, count).wait()
    ok = ok and count[0] == n

    # the bundle's instance of `seed` starts from what the host copied in
    q.copy(np.array([7], np.uint32), seed).wait()
    bundle = syclexp.get_kernel_bundle(q.get_context(), next_random,
                                       sycl.bundle_state.executable)
    k = bundle.ext_oneapi_get_kernel(next_random)
    r = sycl.malloc_shared(1, sycl.uint32, q)
    draws = []
    for _ in range(3):
        q.submit(lambda h: (h.set_args(r), h.single_task(k))).wait()
        draws.append(int(np.asarray(r)[0]))
    x, expected = 7, []
    for _ in range(3):
        x = (x * 1664525 + 1013904223) % (1 << 32)
        expected.append(x)
    ok = ok and draws == expected
    print("table lookups:", got[:4], "calls:", count[0], "draws:", draws)
    print("matches" if ok else "MISMATCH")
    print("metadata:", syclexp.get_device_globals(k, q))
    sycl.free(out, q)
    sycl.free(r, q)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
