"""MPI over USM, for programs running one MPI rank per device (through mpi4py, imported
only by the calls that take one of its communicators).

Host and shared USM is host memory: a pointer to it goes to mpi4py as it is
(`comm.Sendrecv(p, ...)` reads it through DLPack; `np.asarray(p)` and its memoryview do
too), and MPI reads and writes the allocation itself, with no copy on the Python side.
Device USM is not host-accessible: `staging` carries it through host USM of its own,
allocated once per slot and reused, so an exchange repeated every iteration allocates
nothing; `staging.exchange` makes a halo exchange's copies with one wait each way.
`launch_command` is the mpiexec line that starts ranks on this host, for tests and
benchmarks.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from .event import event
from .malloc import free, malloc_host
from .queue import queue
from .usm import alloc, ptr


class staging:
    """Host USM on a queue's device that carries device USM to and from MPI. Each slot
    is a region of its own, grown as needed; transfer k of an `exchange` uses slots 2k
    (outgoing) and 2k + 1 (incoming)."""

    def __init__(self, q: queue) -> None:
        self._queue = q
        self._slots: dict[int, ptr] = {}

    def outgoing(self, p: ptr, count: int, slot: int = 0) -> np.ndarray:
        """`count` elements from `p` as host memory for MPI to send: `p`'s own memory
        when the host can reach it, else a copy in staging slot `slot`, complete when this
        returns."""
        return self._outgoing([(p, count, slot)])[0]

    def incoming(self, p: ptr, count: int, slot: int = 1) -> np.ndarray:
        """Host memory for MPI to receive `count` elements of `p` into: `p`'s own memory
        when the host can reach it, else staging slot `slot`; `deliver` then moves what
        arrived into `p`."""
        stage = self._stage(p, count, slot)
        return _view(p if stage is None else stage.astype(p.dtype), count)

    def deliver(self, p: ptr, count: int, slot: int = 1) -> None:
        """Copies `count` elements received into staging slot `slot` into device USM `p`
        (nothing to do for memory the host reaches); returns once they are there."""
        self._deliver([(p, count, slot)])

    def sendrecv(self, comm: Any, send: ptr, dest: int, recv: ptr, source: int,
                 count: int, sendtag: int = 0, recvtag: int | None = None) -> None:
        """`comm.Sendrecv` of `count` elements from `send` to rank `dest` and into `recv`
        from rank `source`, USM of any kind on either side; MPI.PROC_NULL on a side
        leaves that side's memory alone (nothing is staged or delivered for it)."""
        self.exchange(comm, [(send, dest, recv, source, count)], sendtag,
                      sendtag if recvtag is None else recvtag)

    def exchange(self, comm: Any, transfers: list[tuple[ptr, int, ptr, int, int]],
                 sendtag: int = 0, recvtag: int = 0) -> None:
        """Several `sendrecv`s, each (send, dest, recv, source, count), transfer k tagged
        with the tags plus k, as a halo exchange makes them: device USM is staged out
        with one wait for every copy, and delivered with one more."""
        from mpi4py import MPI  # the communicator given is one of mpi4py's

        null = MPI.PROC_NULL
        sending = [k for k, t in enumerate(transfers) if t[1] != null]
        views = dict(zip(sending, self._outgoing(
            [(transfers[k][0], transfers[k][4], 2 * k) for k in sending]), strict=True))
        for k, (send, dest, recv, source, count) in enumerate(transfers):
            out = views.get(k, np.empty(0, send.dtype))
            into = np.empty(0, recv.dtype) if source == null else \
                self.incoming(recv, count, 2 * k + 1)
            comm.Sendrecv(out, dest, sendtag + k, into, source, recvtag + k)
        self._deliver([(recv, count, 2 * k + 1) for k, (_, _, recv, source, count)
                       in enumerate(transfers) if source != null])

    def _outgoing(self, items: list[tuple[ptr, int, int]]) -> list[np.ndarray]:
        """Host views of (pointer, count, slot) items, the staged ones copied with one
        wait for all."""
        views, copies = [], []
        for p, count, slot in items:
            stage = self._stage(p, count, slot)
            if stage is None:
                views.append(_view(p, count))
                continue
            copies.append(self._queue.memcpy(stage, p, count * p.dtype.itemsize))
            views.append(_view(stage.astype(p.dtype), count))
        event.wait(copies)
        return views

    def _deliver(self, items: list[tuple[ptr, int, int]]) -> None:
        copies = []
        for p, count, slot in items:
            stage = self._stage(p, count, slot)
            if stage is not None:
                copies.append(self._queue.memcpy(p, stage, count * p.dtype.itemsize))
        event.wait(copies)

    def free(self) -> None:
        """Frees the staging memory (after the queue's work)."""
        self._queue.wait()
        for p in self._slots.values():
            free(p, self._queue)
        self._slots.clear()

    def _stage(self, p: ptr, count: int, slot: int) -> ptr | None:
        """Staging slot `slot` with room for `count` elements of `p`, or None when `p`
        is memory the host reaches."""
        if not isinstance(p, ptr):
            raise exception(errc.invalid, f"staging carries USM pointers, got "
                            f"{type(p).__name__}")
        if count < 0 or count > p.count:
            raise exception(errc.invalid, f"{count} elements from a pointer with {p.count} "
                            "to the end of its allocation")
        if p.allocation.kind is not alloc.device:
            return None
        nbytes = max(count * p.dtype.itemsize, 1)
        stage = self._slots.get(slot)
        if stage is None or stage.allocation.nbytes < nbytes:
            if stage is not None:
                self._queue.wait()
                free(stage, self._queue)
            stage = self._slots[slot] = malloc_host(nbytes, self._queue)
        return stage


def _view(p: ptr, count: int) -> np.ndarray:
    """The first `count` elements of host-reachable USM, as the allocation's own memory."""
    return np.asarray(p)[:count]


def launch_command(ranks: int, mpiexec: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The `mpiexec` command line that starts `ranks` processes on this host, and the
    environment variables it needs, whichever MPI is installed: the `mpiexec` beside this
    Python (the `mpi` extra's MPICH) or on PATH, or `mpiexec` when given. Open MPI refuses
    more ranks than cores without `--oversubscribe`, and root without its two consent
    variables; MPICH needs neither. Raises errc.runtime when there is no mpiexec."""
    found = mpiexec or shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    if found is None:
        raise exception(errc.runtime, "no mpiexec: install an MPI (pip install -e '.[mpi]', "
                        "or apt-get install openmpi-bin)")
    try:
        version = subprocess.run([found, "--version"], capture_output=True, text=True,
                                 timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        raise exception(errc.runtime, f"{found} --version failed: {err}") from None
    command, env = [found], {}
    if "Open MPI" in version or "OpenRTE" in version:
        command.append("--oversubscribe")
        if os.geteuid() == 0:
            env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    return [*command, "-n", str(ranks)], env


def run_ranks(ranks: int, args: list[str], env: dict[str, str] | None = None,
              timeout: float | None = None, mpiexec: str | None = None
              ) -> subprocess.CompletedProcess:
    """Runs `python -m mpi4py *args` (this Python) on `ranks` ranks and returns its
    output. mpi4py's runner aborts every rank when one raises; the job runs in a session
    of its own, killed whole past `timeout` (ranks outlive an mpiexec killed alone), and
    the timeout raises subprocess.TimeoutExpired."""
    command, mpi_env = launch_command(ranks, mpiexec)
    proc = subprocess.Popen([*command, sys.executable, "-m", "mpi4py", *args],
                            env={**os.environ, **mpi_env, **(env or {})}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
