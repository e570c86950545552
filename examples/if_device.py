"""One helper for both sides (sycl_ext_oneapi_if_device): the same Python function clamps
values in a kernel and on the host, and logs only when it runs on the host. The host body
may hold any Python; the compiler never reads it.

    .venv/bin/python examples/if_device.py
"""

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

host_log: list[str] = []


def clamp(x, lo, hi):
    out = min(max(x, lo), hi)

    def note():
        if out != x:
            host_log.append(f"clamped {x} to {out}")  # a list, an f-string: host only

    syclexp.if_host(note)
    return out


def main() -> int:
    q = sycl.queue()
    data = np.array([-5.0, 0.5, 3.0, 12.0], dtype=np.float32)
    buf = sycl.malloc_shared(len(data), sycl.float32, q)
    np.asarray(buf)[:] = data

    def kernel(i):
        buf[i] = clamp(buf[i], 0.0, 10.0)

    q.parallel_for(sycl.range(len(data)), kernel).wait()
    on_device = np.asarray(buf).copy()
    on_host = np.array([clamp(float(x), 0.0, 10.0) for x in data], dtype=np.float32)
    ok = np.array_equal(on_device, on_host) and on_device.tolist() == [0.0, 0.5, 3.0, 10.0]
    print("device:", on_device, "host:", on_host, "host log:", host_log)
    ok = ok and host_log == ["clamped -5.0 to 0.0", "clamped 12.0 to 10.0"]
    print("matches" if ok else "MISMATCH")
    sycl.free(buf, q)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
