"""Buffers and accessors, as SYCL 2020 programs are written: a vector add whose result is
written back when the buffers are released, a producer/consumer chain ordered by its
accessors alone, and a matrix transpose through work-group tiles (`local_accessor`).

    .venv/bin/python examples/buffers.py
"""

import sys

import numpy as np

import vksycl as sycl


def vector_add(q: sycl.queue) -> bool:
    n = 1 << 16
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2.0, np.float32)
    c = np.zeros(n, np.float32)
    with sycl.buffer(a) as buf_a, sycl.buffer(b) as buf_b, sycl.buffer(c) as buf_c:
        def cgf(h: sycl.handler) -> None:
            x = sycl.accessor(buf_a, h, sycl.read_only)
            y = sycl.accessor(buf_b, h, sycl.read_only)
            z = sycl.accessor(buf_c, h, sycl.write_only, sycl.no_init)

            def add(i):
                z[i] = x[i] + y[i]
            h.parallel_for(sycl.range(n), add)
        q.submit(cgf)
    # leaving the `with` waited for the kernel and wrote c back
    ok = np.array_equal(c, a + b)
    print(f"vector add of {n}: {'ok' if ok else 'WRONG'}")
    return ok


def producer_consumer(q: sycl.queue) -> bool:
    n = 1024
    data = sycl.buffer(sycl.range(n), np.int32)
    total = sycl.buffer(sycl.range(1), np.int32)

    def produce(h: sycl.handler) -> None:
        out = sycl.accessor(data, h, sycl.write_only, sycl.no_init)

        def k(i):
            out[i] = i * i
        h.parallel_for(sycl.range(n), k)

    def consume(h: sycl.handler) -> None:
        src = sycl.accessor(data, h, sycl.read_only)
        acc = sycl.accessor(total, h, sycl.write_only, sycl.no_init)

        def k():
            s = 0
            for i in range(n):
                s += src[i] % 1000
            acc[0] = s
        h.single_task(k)
    q.submit(produce)
    q.submit(consume)  # no depends_on: the accessors order it after produce
    with sycl.host_accessor(total, sycl.read_only) as t:
        got = int(t[0])
    want = int((np.arange(n) ** 2 % 1000).sum())
    print(f"producer/consumer: {got} ({'ok' if got == want else f'WRONG, want {want}'})")
    return got == want


def transpose(q: sycl.queue) -> bool:
    rows, cols, tile = 96, 64, 16
    m = np.random.default_rng(3).random((rows, cols), dtype=np.float32)
    t = np.zeros((cols, rows), np.float32)
    with sycl.buffer(m) as src, sycl.buffer(t) as dst:
        def cgf(h: sycl.handler) -> None:
            a = sycl.accessor(src, h, sycl.read_only)
            b = sycl.accessor(dst, h, sycl.write_only, sycl.no_init)
            block = sycl.local_accessor(np.float32, sycl.range(tile, tile + 1), h)

            def k(it):
                gi, gj = it.get_group(0), it.get_group(1)
                li, lj = it.get_local_id(0), it.get_local_id(1)
                block[li, lj] = a[gi * tile + li, gj * tile + lj]
                it.barrier()
                b[gj * tile + li, gi * tile + lj] = block[lj, li]
            h.parallel_for(sycl.nd_range(sycl.range(rows, cols), sycl.range(tile, tile)), k)
        q.submit(cgf)
    ok = np.array_equal(t, m.T)
    print(f"transpose of {rows}x{cols} through {tile}x{tile} tiles: {'ok' if ok else 'WRONG'}")
    return ok


def main() -> int:
    q = sycl.queue()
    print("device:", q.get_device().get_info(sycl.info.device.name))
    results = [vector_add(q), producer_consumer(q), transpose(q)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
