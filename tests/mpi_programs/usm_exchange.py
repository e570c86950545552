"""Run under mpiexec by tests/test_mpi.py: each rank exchanges USM with its neighbours
in a ring and checks what arrived is in its own USM, read back by a kernel.

- host and shared USM go to `comm.Sendrecv` as they are: `np.asarray(p)`, its
  memoryview and the pointer itself (DLPack), MPI writing into the allocation;
- device USM goes through `vksycl.ext.vksycl.mpi.staging`;
- with VKSYCL_DEVICE_INSTANCES=2 and VKSYCL_DEVICE_SELECTOR=local_rank, rank r runs on
  instance r % 2.

Prints one line per rank, "rank R ok instance I", and exits non-zero on any mismatch.
"""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

import vksycl as sycl
from vksycl.ext.vksycl import mpi as vkmpi

N = 1000


def fill(q: sycl.queue, send: sycl.ptr, rank: int) -> None:
    """What rank `rank` sends: i + 1000 * rank."""
    def body(i):
        send[i] = i + 1000.0 * rank

    q.parallel_for(sycl.range(N), body).wait()


def main() -> int:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    q = sycl.queue()
    got = sycl.malloc_shared(N, sycl.float32, q)
    failures = []

    def check(what: str, recv: sycl.ptr) -> None:
        """A kernel copies what MPI wrote into `recv` to `got`: MPI wrote the USM."""
        def read(i):
            got[i] = recv[i]

        q.parallel_for(sycl.range(N), read).wait()
        expected = np.arange(N, dtype=np.float32) + 1000 * left
        if not np.array_equal(np.asarray(got), expected):
            failures.append(what)

    for kind in ("shared", "host"):
        alloc = sycl.malloc_shared if kind == "shared" else sycl.malloc_host
        send, recv = alloc(N, sycl.float32, q), alloc(N, sycl.float32, q)
        fill(q, send, rank)
        view = np.asarray(recv)
        if not np.shares_memory(view, recv.allocation.host_bytes()):
            failures.append(f"np.asarray of {kind} USM is a copy")
        for spelling, out, into in (
                ("np.asarray", np.asarray(send), view),
                ("memoryview", memoryview(np.asarray(send)), memoryview(view)),
                ("the pointer (DLPack)", send, recv)):
            view[:] = -1
            comm.Sendrecv(out, right, 0, into, left, 0)
            check(f"{kind} USM through {spelling}", recv)
        for p in (send, recv):
            sycl.free(p, q)

    send, recv = (sycl.malloc_device(N, sycl.float32, q) for _ in range(2))
    fill(q, send, rank)
    stage = vkmpi.staging(q)
    for _ in range(2):  # the second exchange reuses the staging memory
        q.memset(recv, 0, 4 * N).wait()
        stage.sendrecv(comm, send, right, recv, left, N)
        check("device USM through staging", recv)
    stage.free()
    for p in (send, recv, got):
        sycl.free(p, q)
    instance = q.get_device().vulkan.instance
    line = f"rank {rank} {'ok' if not failures else 'FAILED: ' + '; '.join(failures)} " \
        f"instance {instance}"
    # one process prints every rank's line: lines printed by several ranks can interleave
    for report in comm.gather(line, root=0) or []:
        print(report, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
