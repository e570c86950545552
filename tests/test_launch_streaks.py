"""A run of launches each bringing a new number (a time step) in the same closure cell or
explicit argument is checked at that value alone once the plan's argument ring is
settled: no general repack (`new_captures`, `new_arguments`), no packing, every value
reaching the device in order; and any other change during the run (another pointer, a
rebound global, a number of another type, a freed pointer, a value that does not fit)
is still seen."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels import launch, marshal, plans
from vksycl.kernels.launch import RING_AFTER

N = 64
target: sycl.ptr | None = None  # the module-level pointer `add_to_target` writes


def add_to_target(i):
    target[i] = target[i] + 1.0


@syclexp.nd_range_kernel(1)
def add_value(x: sycl.ptr[sycl.float32], v: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + v


def _float32_sum(values: list[float]) -> np.float32:
    total = np.float32(0)
    for v in values:
        total = np.float32(total + np.float32(v))
    return total


@pytest.fixture
def general(monkeypatch):
    """How many launches took the general ways: the repack of changed captures or
    arguments, or the full packing of every argument."""
    counts = {"repacked": 0, "packed": 0}

    def counting(owner, name, key):
        real = getattr(owner, name)

        def count(*a):
            counts[key] += 1
            return real(*a)
        monkeypatch.setattr(owner, name, count)

    counting(launch, "new_captures", "repacked")
    counting(launch, "new_arguments", "repacked")
    counting(marshal.Prepared, "arguments", "packed")
    return counts


def _zeros(q: sycl.queue, n: int = N) -> sycl.ptr:
    x = sycl.malloc_shared(n, sycl.float32, q)
    q.memset(x, 0, n * 4).wait()
    return x


def _steps(count: int, start: int = 0) -> list[float]:
    return [1.0 + (start + k) / 64 for k in range(count)]


def _streaking(q: sycl.queue, wait_each: bool = False):
    """A closure adding a captured step to an array, launched with new steps until its
    streak runs: (the array, the kernel, how to set the step, the steps launched)."""
    x = _zeros(q)
    step = 0.0

    def body(i):
        x[i] = x[i] + step

    def set_step(value: float) -> None:
        nonlocal step
        step = value

    values = _steps(RING_AFTER + 3)
    for v in values:
        set_step(v)
        e = q.parallel_for(N, body)
        if wait_each:
            e.wait()
    q.wait()
    return x, body, set_step, values


def test_a_new_captured_number_each_launch_runs_the_streak(q, general):
    """After the ring settles, a new time step each launch takes neither general way,
    waited for one by one or hundreds in flight, and the sum is exact."""
    x, body, set_step, values = _streaking(q, wait_each=True)
    repacked, packed = general["repacked"], general["packed"]
    more = _steps(300, len(values))
    for v in more:
        set_step(v)
        q.parallel_for(sycl.range(N), body)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    np.testing.assert_array_equal(np.asarray(x), np.full(N, _float32_sum(values + more)))
    sycl.free(x, q)


def test_closures_made_anew_each_launch_continue_the_streak(q, general):
    """A factory making a new closure of the same code each launch, over the same array
    with a new step: the streak holds (the other captures are the very objects)."""
    x = _zeros(q)

    def make(step):
        def body(i):
            x[i] = x[i] + step
        return body

    values = _steps(RING_AFTER + 3)
    for v in values:
        q.parallel_for(N, make(v))
    q.wait()
    repacked = general["repacked"]
    more = _steps(20, len(values))
    for v in more:
        q.parallel_for(N, make(v))
    q.wait()
    assert general["repacked"] == repacked
    np.testing.assert_array_equal(np.asarray(x), np.full(N, _float32_sum(values + more)))
    sycl.free(x, q)


def test_a_streak_sees_another_array_a_rebound_global_and_another_type(q, monkeypatch):
    """During a run of new steps: the closure's array swapped for another, the module
    global a kernel reads rebound, and the step becoming an int (a kernel of its own,
    looked up by its signature rather than the float packed into the float's slot) each
    reach the device."""
    global target
    keyed = []
    real = plans.signature
    monkeypatch.setattr(plans, "signature", lambda v: keyed.append(type(v)) or real(v))
    a, b = _zeros(q), _zeros(q)
    x, step = a, 0.0

    def body(i):
        x[i] = x[i] + step

    sums = {id(a): [], id(b): []}
    for k, v in enumerate(_steps(3 * RING_AFTER)):
        if k == 2 * RING_AFTER:
            x = b
        if k == 2 * RING_AFTER + 2:
            v = 3  # an int: the kernel compiled for it, not the float slot
            keyed.clear()
        step = v
        sums[id(x)].append(v)
        q.parallel_for(N, body)
        if v == 3:
            assert int in keyed
    q.wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(N, _float32_sum(sums[id(a)])))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, _float32_sum(sums[id(b)])))
    target = a
    q.parallel_for(N, add_to_target).wait()
    target = b
    q.parallel_for(N, add_to_target).wait()
    np.testing.assert_array_equal(np.asarray(b), np.full(N, _float32_sum(sums[id(b)]) + 1))
    for p in (a, b):
        sycl.free(p, q)


def test_a_streak_refuses_a_freed_pointer_and_a_value_that_does_not_fit(q):
    """During a run of new steps: a float past float32's range, and an int step too large
    for its int32 slot, raise as a full launch does (the kernel argument's error code,
    not Python's OverflowError); the array freed, the next launch raises before anything
    runs."""
    x, body, set_step, _ = _streaking(q)
    set_step(1e39)
    with pytest.raises(sycl.exception) as e:
        q.parallel_for(N, body)
    assert e.value.code() == sycl.errc.kernel_argument
    sycl.free(x, q)
    set_step(9.0)
    with pytest.raises(sycl.exception, match="freed"):
        q.parallel_for(N, body)

    y = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(y, 0, N * 4).wait()
    count = 0

    def counter(i):
        y[i] = y[i] + count

    for k in range(1, RING_AFTER + 4):
        count = k  # the cell the kernel reads
        q.parallel_for(N, counter)
    q.wait()
    total = sum(range(1, RING_AFTER + 4))
    count = 2**40
    with pytest.raises(sycl.exception, match="does not fit") as e:
        q.parallel_for(N, counter)
    assert e.value.code() == sycl.errc.kernel_argument
    count = 5
    q.parallel_for(N, counter).wait()
    np.testing.assert_array_equal(np.asarray(y), np.full(N, total + 5, np.int32))
    sycl.free(y, q)


def test_a_new_argument_each_launch_runs_the_streak(q, general):
    """nd_launch and a kernel object's set_args with a new value each launch: after the
    ring settles neither takes a general way, and a pointer swapped during the run is
    seen."""
    a, b = _zeros(q), _zeros(q)
    nd = sycl.nd_range((N,), (N,))
    values = _steps(RING_AFTER + 3)
    for v in values:
        syclexp.nd_launch(q, nd, add_value, a, v)
    q.wait()
    repacked, packed = general["repacked"], general["packed"]
    more = _steps(50, len(values))
    for v in more:
        syclexp.nd_launch(q, nd, add_value, a, v)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    syclexp.nd_launch(q, nd, add_value, b, 2.0)
    syclexp.nd_launch(q, nd, add_value, b, 0.5)
    q.wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(N, _float32_sum(values + more)))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 2.5, np.float32))

    kernel = syclexp.get_kernel_bundle(q.get_context(), add_value,
                                       sycl.bundle_state.executable
                                       ).ext_oneapi_get_kernel(add_value)
    q.memset(b, 0, N * 4).wait()
    for k, v in enumerate(values + more):
        if k == len(values):
            q.wait()
            repacked, packed = general["repacked"], general["packed"]
        q.submit(lambda h, v=v: (h.set_args(b, v), h.parallel_for(nd, kernel)))
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    np.testing.assert_array_equal(np.asarray(b), np.full(N, _float32_sum(values + more)))
    for p in (a, b):
        sycl.free(p, q)


def test_an_unchanged_value_during_a_streak_repeats_the_last_command(q):
    """The same value launched again during a streak is a repeat: the last command comes
    back, no ring slot taken for it."""
    x, body, _, values = _streaking(q)
    plan = plans.known_plan(body, None, sycl.range(N), q.get_device())
    assert plan.streak is not None
    last = plan.last[2]
    assert launch.build_launch(q.get_device(), body, sycl.range(N), None,
                               q.get_context()) is last
    q.parallel_for(N, body).wait()
    np.testing.assert_array_equal(np.asarray(x),
                                  np.full(N, _float32_sum([*values, values[-1]])))
    sycl.free(x, q)


def test_numpy_steps_and_command_groups_run_the_streak(q, general):
    """numpy float32 steps, launched in `q.submit` command groups: the streak holds and
    every value arrives."""
    x = _zeros(q)
    step = np.float32(0)

    def body(i):
        x[i] = x[i] + step

    values = [np.float32(v) for v in _steps(RING_AFTER + 30)]
    for k, v in enumerate(values):
        if k == RING_AFTER + 3:
            q.wait()
            repacked = general["repacked"]
        step = v
        q.submit(lambda h: h.parallel_for(sycl.range(N), body))
    q.wait()
    assert general["repacked"] == repacked
    np.testing.assert_array_equal(np.asarray(x), np.full(N, _float32_sum(values)))
    sycl.free(x, q)

