"""Quick start: USM memory, a Python kernel, and a copy back, checked against numpy.

    .venv/bin/python examples/quickstart.py
"""

import sys

import numpy as np

import vksycl as sycl


def main() -> int:
    q = sycl.queue()
    print("device:", q.get_device().get_info(sycl.info.device.name))

    n = 1 << 16
    x = np.linspace(0.0, 1.0, n, dtype=np.float32)
    a = sycl.malloc_device(n, sycl.float32, q)
    y = sycl.malloc_shared(n, sycl.float32, q)
    q.memcpy(a, x, x.nbytes).wait()
    q.fill(y, np.float32(1.0), n).wait()

    alpha = np.float32(2.5)

    def saxpy(i):
        y[i] = alpha * a[i] + y[i]

    q.parallel_for(sycl.range(n), saxpy).wait()

    expected = alpha * x + 1.0
    ok = np.allclose(np.asarray(y), expected)
    print(f"saxpy over {n} elements: y[:4] = {np.asarray(y)[:4]}, "
          f"{'matches numpy' if ok else 'MISMATCH'}")
    sycl.free(a, q)
    sycl.free(y, q)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
