"""Device time of STREAM kernels as the compiler emits them, from profiling events, for a
range launch (rounded up and guarded) and nd_range launches of two work-group sizes."""

import numpy as np

import vksycl as sycl

q = sycl.queue(property_list=[sycl.property.queue.enable_profiling(),
                              sycl.property.queue.in_order()])
n = 1 << 26
a, b, c = (sycl.malloc_device(n, np.float32, q) for _ in range(3))
s = np.float32(3.0)


def copy(i):
    c[i] = a[i]


def triad(i):
    a[i] = b[i] + s * c[i]


def copy_nd(it):
    i = it.get_global_id(0)
    c[i] = a[i]


def triad_nd(it):
    i = it.get_global_id(0)
    a[i] = b[i] + s * c[i]


cases = [("copy", copy, sycl.range(n), 2), ("triad", triad, sycl.range(n), 3)]
for wg in (128, 256, 1024):
    cases += [("copy", copy_nd, sycl.nd_range((n,), (wg,)), 2),
              ("triad", triad_nd, sycl.nd_range((n,), (wg,)), 3)]
for name, k, launch, arrays in cases:
    q.parallel_for(launch, k).wait()
    best = 1e18
    for _ in range(10):
        ev = q.parallel_for(launch, k)
        ev.wait()
        t = ev.get_profiling_info(sycl.info.event_profiling.command_end) - \
            ev.get_profiling_info(sycl.info.event_profiling.command_start)
        best = min(best, t)
    print(f"{name:6} {launch!r:40} {arrays * n * 4 / best:8.1f} GB/s (device time)")


def copy4(it):
    i = it.get_global_id(0)
    g = it.get_global_range(0)
    x0 = a[i]
    x1 = a[i + g]
    x2 = a[i + 2 * g]
    x3 = a[i + 3 * g]
    c[i] = x0
    c[i + g] = x1
    c[i + 2 * g] = x2
    c[i + 3 * g] = x3


for wg in (256, 512):
    launch = sycl.nd_range((n // 4,), (wg,))
    q.parallel_for(launch, copy4).wait()
    best = 1e18
    for _ in range(10):
        ev = q.parallel_for(launch, copy4)
        ev.wait()
        best = min(best, ev.get_profiling_info(sycl.info.event_profiling.command_end)
                   - ev.get_profiling_info(sycl.info.event_profiling.command_start))
    print(f"copy4  wg {wg:4}: {2 * n * 4 / best:8.1f} GB/s (device time, 4 loads then 4 stores)")
