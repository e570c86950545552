"""Debugging kernels: `print`, `syclexp.printf` and `assert` in device code.

The host writes what kernels print to `sys.stdout` once their command completes, so this
program captures it and checks it; a failed assertion is the `errc.runtime` error of the
next wait.

    .venv/bin/python examples/debugging.py
"""

import contextlib
import io
import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp


def main() -> int:
    q = sycl.queue()
    n = 8
    x = sycl.malloc_shared(n, sycl.float32, q)
    x[:] = np.linspace(0.0, 1.0, n, dtype=np.float32)

    def show(i):
        k = i[0]
        if k % 4 == 0:
            print(f"x[{k}] = {x[k]:.3f}", "squared:", x[k] * x[k], sep=" | ")
            syclexp.printf("printf: %2d -> %6.2f\n", k, x[k] * 100)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        q.parallel_for(sycl.range(n), show).wait()
    print(out.getvalue(), end="")
    x4 = np.float32(x[4])
    want = sorted([
        f"x[0] = 0.000 | squared: | {np.float32(0)!s}",
        f"x[4] = {x4:.3f} | squared: | {x4 * x4!s}",  # float32's shortest digits
        "printf:  0 ->   0.00",
        f"printf:  4 -> {x4 * 100:6.2f}",
    ])
    ok = sorted(out.getvalue().splitlines()) == want

    def check(i):
        assert x[i] <= 0.5, "x is past one half"

    try:
        q.parallel_for(sycl.range(n), check).wait()
        ok = False
    except sycl.exception as e:
        print("caught:", e)
        ok = ok and e.code() == sycl.errc.runtime and "x is past one half" in str(e) and \
            "4 work-items failed" in str(e)
    q.parallel_for(sycl.range(n), show).wait()  # the queue goes on
    sycl.free(x, q)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
