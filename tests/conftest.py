"""Fixtures every test folder shares: queues, the context, and USM arrays from numpy."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl


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
