"""Reductions: a sum, a maximum and a histogram in one kernel, then a user combiner and an
nd_range reduction beside work-group memory, each checked against numpy.

    .venv/bin/python examples/reduction.py
"""

import sys

import numpy as np

import vksycl as sycl


def main() -> int:
    q = sycl.queue()
    print("device:", q.get_device().get_info(sycl.info.device.name))

    n = 100_003  # not a multiple of any work-group size
    data = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    y = sycl.malloc_device(n, sycl.float32, q)
    q.memcpy(y, data, data.nbytes).wait()

    total, peak = (sycl.malloc_shared(1, sycl.float32, q) for _ in range(2))
    peak[0] = -1e30  # without initialize_to_identity, combined with the result
    hist = sycl.malloc_shared(8, sycl.int32, q)
    q.memset(hist, 0, 8 * 4).wait()
    init = [sycl.property.reduction.initialize_to_identity()]

    def stats(i, s, m, h):
        v = y[i]
        s += v
        m.combine(v)
        h[sycl.int32(min(max(v + 4.0, 0.0), 7.0))] += 1

    q.parallel_for(sycl.range(n), sycl.reduction(total, sycl.plus(), property_list=init),
                   sycl.reduction(peak, sycl.maximum()),
                   sycl.reduction(sycl.span(hist, 8), sycl.plus()), stats).wait()
    expected_hist = np.bincount(np.clip(data + 4.0, 0.0, 7.0).astype(np.int32), minlength=8)
    ok = abs(total[0] - data.astype(np.float64).sum()) <= 1e-5 * np.abs(data).sum()
    ok &= peak[0] == data.max() and np.array_equal(np.asarray(hist), expected_hist)
    print(f"sum {total[0]:.4f}, max {peak[0]:.4f}, histogram {np.asarray(hist).tolist()}")

    def absmax(a, b):
        return a if abs(a) > abs(b) else b

    far = sycl.malloc_shared(1, sycl.float32, q)
    q.parallel_for(n, sycl.reduction(far, 0.0, absmax, property_list=init),
                   lambda i, r: r.combine(y[i])).wait()
    ok &= far[0] == data[np.argmax(np.abs(data))]
    print(f"largest magnitude {far[0]:.4f}")

    groups, local = 64, 128
    count = sycl.malloc_shared(1, sycl.int32, q)

    def positives(it, c):
        i = it.get_global_id(0)
        if i < n and y[i] > 0.0:
            c += 1

    q.parallel_for(sycl.nd_range((groups * local,), (local,)),
                   sycl.reduction(count, sycl.plus(), property_list=init), positives).wait()
    ok &= count[0] == np.count_nonzero(data[: groups * local] > 0)
    print(f"positives among the first {groups * local}: {count[0]}")

    print("ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
