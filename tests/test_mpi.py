"""MPI through mpi4py on lavapipe: several ranks under mpiexec (more ranks than cores),
each on its own device, exchanging USM; the Jacobi example's halo exchange across two and
four ranks equals its single-process run.

In CI (the CI variable set) a missing mpi4py or mpiexec fails these tests: ci/setup.sh
installs both (the `mpi` extra). Elsewhere they are skipped, saying why."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.vksycl import mpi as vkmpi

ROOT = Path(__file__).resolve().parents[1]
JACOBI = ROOT / "examples" / "mpi_jacobi.py"
EXCHANGE = Path(__file__).parent / "mpi_programs" / "usm_exchange.py"


def _launcher(ranks: int) -> None:
    """Nothing where mpi4py and mpiexec are there; else a skip (a failure in CI) saying
    what is missing."""
    problem = None
    if importlib.util.find_spec("mpi4py") is None:
        problem = "mpi4py is not installed"
    else:
        try:
            vkmpi.launch_command(ranks)
            return
        except sycl.exception as err:
            problem = str(err)
    message = f"{problem}: the MPI tests need it (pip install -e '.[mpi]')"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; ci/setup.sh installs it in CI")
    pytest.skip(message)


def _run(ranks: int, program: Path, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
    _launcher(ranks)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = vkmpi.run_ranks(ranks, [str(program), *args], {**(env or {}), "PYTHONPATH": path},
                           timeout=300)
    assert proc.returncode == 0, f"{program.name} on {ranks} ranks failed:\n" \
                                 f"{proc.stdout}\n{proc.stderr}"
    return proc


def _jacobi(ranks: int, *args: str) -> dict:
    lines = _run(ranks, JACOBI, "--json", *args).stdout.splitlines()
    return json.loads(next(line for line in lines if line.startswith("{")))


@pytest.fixture(scope="module")
def alone() -> dict[str, dict]:
    """The example on one rank, by memory kind (no mpiexec: MPI's singleton start)."""
    _launcher(1)
    return {memory: _jacobi_alone(memory) for memory in ("device", "shared")}


def _jacobi_alone(memory: str) -> dict:
    proc = subprocess.run([sys.executable, str(JACOBI), "--json", "--no-check", "--memory",
                           memory], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("memory", ["device", "shared"])
@pytest.mark.parametrize("ranks", [2, 4])
def test_the_halo_exchange_equals_the_single_process_run(alone, ranks, memory):
    """Rank 0 compares the gathered grid with its own single-rank run to the bit (and
    with numpy's); the mean temperature also equals a separate one-process run's."""
    result = _jacobi(ranks, "--memory", memory)
    assert result["ranks"] == ranks and result["checked"] and result["ok"]
    assert result["mean_temperature"] == alone[memory]["mean_temperature"] > 0.01
    assert 0 <= result["communication_share"] <= 1


def test_an_uneven_split_equals_the_single_process_run():
    """Rows that do not divide among the ranks: 37 rows over 4 ranks (10, 9, 9, 9)."""
    result = _jacobi(4, "--n", "37", "--m", "21", "--iters", "57")
    assert result["ok"] and result["n"] == 37


def test_usm_of_every_kind_goes_to_mpi_and_ranks_take_devices_by_local_rank():
    """Host and shared USM straight into comm.Sendrecv (np.asarray, memoryview, the
    pointer itself), MPI writing the allocation (a kernel reads it back); device USM
    through the staging helper; local rank r on device instance r % 2."""
    proc = _run(3, EXCHANGE, env={"VKSYCL_DEVICE_INSTANCES": "2",
                                  "VKSYCL_DEVICE_SELECTOR": "local_rank"})
    lines = sorted(line for line in proc.stdout.splitlines() if line.startswith("rank "))
    assert lines == ["rank 0 ok instance 0", "rank 1 ok instance 1", "rank 2 ok instance 0"]


@pytest.fixture(scope="module")
def mpi():
    """mpi4py's MPI in this process (one rank, MPI_COMM_SELF)."""
    _launcher(1)
    from mpi4py import MPI

    return MPI


@pytest.mark.parametrize("kind", ["device", "shared"])
def test_staging_exchanges_usm_of_any_kind_in_one_process(mpi, q, kind):
    """Two transfers to this rank itself through COMM_SELF, one of them also to
    MPI.PROC_NULL: what was sent arrives, the side facing PROC_NULL is left alone, and a
    repeated exchange reuses the staging memory."""
    alloc = sycl.malloc_device if kind == "device" else sycl.malloc_shared
    n = 300
    a, b, c = (alloc(n, sycl.int32, q) for _ in range(3))
    q.memcpy(a, np.arange(n, dtype=np.int32), 4 * n)
    q.memcpy(b, np.full(n, -1, np.int32), 4 * n)
    q.memcpy(c, np.full(n, -2, np.int32), 4 * n).wait()
    stage = vkmpi.staging(q)
    self_ = mpi.COMM_SELF
    for round_ in range(2):
        stage.exchange(self_, [(a + 10, 0, b, 0, 100), (a, mpi.PROC_NULL, c, mpi.PROC_NULL, n)])
        out = np.empty(n, np.int32)
        q.memcpy(out, b, 4 * n).wait()
        np.testing.assert_array_equal(out[:100], np.arange(10, 110))
        assert (out[100:] == -1).all()
        q.memcpy(out, c, 4 * n).wait()
        assert (out == -2).all()
        if round_ == 0:
            slots = dict(stage._slots)
    assert stage._slots == slots and (kind == "device") == bool(slots)
    stage.sendrecv(self_, a, 0, c + 1, 0, n - 1)
    q.memcpy(out, c, 4 * n).wait()
    np.testing.assert_array_equal(out, np.r_[-2, np.arange(n - 1)])
    for bad in (lambda: stage.outgoing(a, n + 1), lambda: stage.outgoing(np.zeros(3), 3)):
        with pytest.raises(sycl.exception) as err:
            bad()
        assert err.value.code() is sycl.errc.invalid
    stage.free()
    for p in (a, b, c):
        sycl.free(p, q)


def test_host_usm_goes_to_mpi_without_a_copy(mpi, q):
    """The pointer (DLPack), np.asarray and its memoryview all hand MPI the allocation's
    own bytes: a receive lands in USM that a kernel then reads."""
    n = 64
    src, dst, seen = (sycl.malloc_shared(n, sycl.float32, q) for _ in range(3))
    np.asarray(src)[:] = np.arange(n, dtype=np.float32) * 0.5
    for out, into in ((src, dst), (np.asarray(src), np.asarray(dst)),
                      (memoryview(np.asarray(src)), memoryview(np.asarray(dst)))):
        np.asarray(dst)[:] = 0
        mpi.COMM_SELF.Sendrecv(out, 0, 0, into, 0, 0)

        def read(i):
            seen[i] = dst[i]

        q.parallel_for(sycl.range(n), read).wait()
        np.testing.assert_array_equal(np.asarray(seen), np.arange(n) * 0.5)
    assert np.shares_memory(np.asarray(dst), dst.allocation.host_bytes())
    device = sycl.malloc_device(n, sycl.float32, q)
    with pytest.raises(sycl.exception, match="device USM is not accessible from the host"):
        mpi.COMM_SELF.Sendrecv(device, 0, 0, np.asarray(dst), 0, 0)
    for p in (src, dst, seen, device):
        sycl.free(p, q)
