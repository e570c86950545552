"""A 256 MiB round trip between vksycl and torch on one GPU: with the memory shared
(DLPack, no copy) against the host copies a program makes without it.

One round trip: a vksycl kernel writes the buffer, torch reads it (a sum) and rewrites it
(in place), a vksycl kernel reads torch's result (and halves it). Shared, both work on
one allocation, which vksycl allocated (`syclexp.cuda_view`) or CUDA did
(`syclexp.cuda_exportable`); copied, vksycl's buffer goes to the host (memcpy to numpy),
to torch (`.cuda()`), back to the host (`.cpu()`) and back to vksycl (memcpy). Each side
waits for the other on the host in all three. Prints the median of each and their ratio;
needs an NVIDIA GPU, CUDA and torch, and says what is missing elsewhere.

`--csv FILE` writes the four medians for docs/plots.py (`record.py`), `--append` adding
another GPU's beside them.

    python benchmarks/interop.py [--mib 256] [--repeat 10] [--csv FILE [--append]]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import record

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

MIB = 1 << 20


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up: compiles, first touches
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


class Kernels:
    """vksycl's two kernels of the round trip over `x` (n float32)."""

    def __init__(self, q: sycl.queue, x: sycl.ptr, n: int) -> None:
        self.q, self.x, self.n = q, x, n

    def write(self) -> None:
        x = self.x

        def body(i):
            x[i] = sycl.float32(i % 4096)
        self.q.parallel_for(sycl.range(self.n), body).wait()

    def read(self) -> None:
        x = self.x

        def body(i):
            x[i] = x[i] * 0.5
        self.q.parallel_for(sycl.range(self.n), body).wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=10)
    record.add_arguments(parser)
    args = parser.parse_args()
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    try:
        ordinal = syclexp.cuda_device_of(q.get_device())
        import torch
    except (sycl.exception, ImportError) as err:
        print(f"interop benchmark skipped: {err}")
        return 0
    nbytes = args.mib * MIB
    n = nbytes // 4
    cuda = torch.device("cuda", ordinal)
    expected = float(((np.arange(4096, dtype=np.float64) + 1.0) * 0.5).sum() * (n // 4096))

    # shared: one allocation, vksycl's or CUDA's, seen by both
    fd = syclexp.external_mem_handle_type.opaque_fd
    x = syclexp.alloc_exportable_device_mem(0, nbytes, fd, q, dtype=sycl.float32)
    view = syclexp.cuda_view(x)
    owned = syclexp.cuda_exportable(n, q, dtype=sycl.float32)
    tensors = [torch.from_dlpack(view), torch.from_dlpack(owned)]  # dropped before closing

    def round_trip(kernels: Kernels, which: int) -> Callable[[], None]:
        def run() -> None:
            kernels.write()
            tensors[which].sum()  # torch reads
            tensors[which].add_(1.0)  # torch writes
            torch.cuda.synchronize()
            kernels.read()
        return run

    shared_kernels = Kernels(q, x, n)
    shared = round_trip(shared_kernels, 0)
    cuda_owned = round_trip(Kernels(q, owned.ptr, n), 1)

    # copied: vksycl's own device memory, through the host both ways
    d = sycl.malloc_device(n, sycl.float32, q)
    host = np.empty(n, np.float32)
    copied_kernels = Kernels(q, d, n)

    def copied() -> None:
        copied_kernels.write()
        q.memcpy(host, d, nbytes).wait()
        tt = torch.from_numpy(host).to(cuda)
        tt.sum()
        tt.add_(1.0)
        back = tt.cpu().numpy()
        q.memcpy(d, back, nbytes).wait()
        copied_kernels.read()

    shared_ms = median_ms(shared, args.repeat)
    owned_ms = median_ms(cuda_owned, args.repeat)
    copied_ms = median_ms(copied, args.repeat)
    check = np.zeros(n, np.float32)
    for ptr in (x, owned.ptr, d):  # each ended a round trip: (i % 4096 + 1) / 2
        q.memcpy(check, ptr, nbytes).wait()
        got = float(check.sum(dtype=np.float64))
        assert abs(got - expected) <= 1e-6 * expected, f"round trip gave {got}, not {expected}"
    kernels_ms = median_ms(lambda: (shared_kernels.write(), shared_kernels.read()),
                           args.repeat)

    name = q.get_device().get_info(sycl.info.device.name)
    print(f"{args.mib} MiB round trip vksycl -> torch -> vksycl on {name} (cuda:{ordinal}), "
          f"median of {args.repeat}")
    print(f"  shared memory (cuda_view + DLPack, no copy): {shared_ms:9.2f} ms")
    print(f"  CUDA's memory (cuda_exportable, no copy):    {owned_ms:9.2f} ms")
    print(f"  host copies (memcpy, .cuda(), .cpu(), memcpy): {copied_ms:7.2f} ms")
    print(f"  vksycl's two kernels alone:                   {kernels_ms:9.2f} ms")
    print(f"  host copies / shared: {copied_ms / shared_ms:.1f}x; the copies move "
          f"{4 * args.mib} MiB in {copied_ms - shared_ms:.2f} ms more "
          f"({4 * nbytes / max(copied_ms - shared_ms, 1e-9) / 1e6:.1f} GB/s)")
    gpu = name.removeprefix("NVIDIA ").split()[0]  # "NVIDIA H100 80GB HBM3": H100
    record.write(args, f"A {args.mib} MiB round trip vksycl -> torch -> vksycl, median of "
                 f"{args.repeat}, ms", [
                     {"gpu": gpu, "path": path, "ms": ms} for path, ms in (
                         ("shared memory (cuda_view + DLPack)", shared_ms),
                         ("CUDA's memory (cuda_exportable)", owned_ms),
                         ("host copies", copied_ms),
                         ("vksycl's two kernels alone", kernels_ms))],
                 q.get_device(), {"torch": torch.__version__})

    tensors.clear()
    view.close()
    owned.close()
    sycl.free(d, q)
    sycl.free(x, q)
    return 0


if __name__ == "__main__":
    sys.exit(main())
