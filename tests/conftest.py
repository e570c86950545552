"""Fixtures every test folder shares: queues, the context, USM arrays from numpy, and
work run on several threads at once."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl

# ci/test_wheel.sh runs tests against an installed wheel: not against this checkout's vksycl
if os.environ.get("VKSYCL_TESTS_AGAINST") == "installed":
    assert not Path(sycl.__file__).resolve().is_relative_to(Path(__file__).resolve().parents[1]), \
        f"the tests import the checkout's vksycl ({sycl.__file__}), not the installed one"

sys.path.append(str(Path(__file__).parent))  # the helper modules beside this file
from validation_hooks import (
    pytest_runtest_call,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)

__all__ = ["pytest_runtest_call", "pytest_runtest_setup", "pytest_runtest_teardown"]


@pytest.fixture(scope="session")
def q() -> sycl.queue:
    """An out-of-order queue on the default device (lavapipe where there is no GPU)."""
    return sycl.queue()


@pytest.fixture(scope="session")
def ordered_q() -> sycl.queue:
    return sycl.queue(property_list=[sycl.property.queue.in_order()])


@pytest.fixture
def ctx(q: sycl.queue) -> sycl.context:
    return q.get_context()


class Mem:
    """Shared allocations for one test, freed at its end."""

    def __init__(self, q: sycl.queue) -> None:
        self.q = q
        self.ptrs: list = []

    def of(self, array: np.ndarray) -> sycl.ptr:
        array = np.ascontiguousarray(array)
        p = sycl.malloc_shared(max(array.size, 1), array.dtype, self.q)
        np.asarray(p)[: array.size] = array.reshape(-1)
        self.ptrs.append(p)
        return p

    def zeros(self, n: int, dtype: object) -> sycl.ptr:
        return self.of(np.zeros(n, dtype))

    def view(self, p: sycl.ptr, n: int) -> np.ndarray:
        return np.asarray(p)[:n].copy()

    def free(self) -> None:
        for p in self.ptrs:
            sycl.free(p, self.q)


@pytest.fixture
def mem(q: sycl.queue):
    m = Mem(q)
    yield m
    q.wait()
    m.free()


ALLOC = {"device": sycl.malloc_device, "shared": sycl.malloc_shared, "host": sycl.malloc_host}


class Usm:
    """Targets and inputs in USM of any kind, written and read with memcpy (device memory is
    not host-accessible), freed when the test ends."""

    def __init__(self, q: sycl.queue) -> None:
        self.q = q
        self.ptrs: list = []

    def of(self, values, dtype=None, kind: str = "shared", q: sycl.queue | None = None):
        q = q or self.q
        a = np.ascontiguousarray(np.asarray(values, dtype=dtype).reshape(-1))
        p = ALLOC[kind](max(a.size, 1), a.dtype, q)
        if a.size:
            q.memcpy(p, a, a.nbytes).wait()
        self.ptrs.append((p, q))
        return p

    def read(self, p, n: int = 1) -> np.ndarray:
        out = np.empty(n, p.dtype)
        self.q.memcpy(out, p, out.nbytes).wait()
        return out

    def write(self, p, values) -> None:
        a = np.ascontiguousarray(np.asarray(values, p.dtype).reshape(-1))
        self.q.memcpy(p, a, a.nbytes).wait()

    def free(self) -> None:
        for p, q in self.ptrs:
            sycl.free(p, q)


@pytest.fixture
def usm(q: sycl.queue):
    u = Usm(q)
    yield u
    q.wait()
    u.free()


@pytest.fixture
def ordered_usm(ordered_q: sycl.queue):
    u = Usm(ordered_q)
    yield u
    ordered_q.wait()
    u.free()


def _diamond(iterations: int, a, b, c):
    """What the graph seed's example diamond (a += 1; b += a; c -= a; b -= 1; c -= 1)
    leaves in a, b and c after `iterations` runs, computed with numpy."""
    a, b, c = a.copy(), b.copy(), c.copy()
    for _ in range(iterations):
        a += 1
        b += a
        c -= a
        b -= 1
        c -= 1
    return a, b, c


@pytest.fixture(scope="session")
def diamond_reference():
    return _diamond


def _run_in_threads(work: Callable[[int], None], count: int) -> None:
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as err:  # raised in the test's thread below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.fixture
def in_threads() -> Callable[[Callable[[int], None], int], None]:
    """`in_threads(work, count)`: runs `work(i)` for each i below `count`, each on a thread
    of its own at once, and raises the first error any of them raised."""
    return _run_in_threads


def _float32_sum(values: Iterable[float]) -> np.float32:
    total = np.float32(0)
    for v in values:
        total = np.float32(total + np.float32(v))
    return total


@pytest.fixture(scope="session")
def float32_sum() -> Callable[[Iterable[float]], np.float32]:
    """`float32_sum(values)`: what a float32 accumulator holds after adding `values` in
    turn (what a kernel adding a new step each launch leaves)."""
    return _float32_sum
