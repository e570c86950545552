"""Launches with a new argument value each time run from their plan's argument ring: each
launch's value reaches the device whether it was waited for, is still in flight among
hundreds of others, is a command kept and launched again after its slot went to another
launch, or was recorded into a graph; the ring's memory goes back once its plan is gone."""

from __future__ import annotations

import gc
import threading

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.kernels import plans
from vksycl.kernels.argument_ring import RingLaunch
from vksycl.kernels.launch import RING_AFTER

N = 64


def _float32_sum(values: list[float]) -> np.float32:
    total = np.float32(0)
    for v in values:
        total = np.float32(total + np.float32(v))
    return total


def _stepper(x: sycl.ptr):
    """A kernel adding a captured time step, and how to set the step."""
    step = 0.0

    def body(i):
        x[i] = x[i] + step

    def set_step(value: float) -> None:
        nonlocal step
        step = value
    return body, set_step


def _plan_of(body, q: sycl.queue) -> plans.Plan:
    return plans._PLANS[(id(body.__code__), id(q.get_device()))]


def _zeros(q: sycl.queue) -> sycl.ptr:
    x = sycl.malloc_shared(N, sycl.float32, q)
    q.memset(x, 0, N * 4).wait()
    return x


def test_launches_in_flight_together_each_keep_their_value(q):
    """Hundreds of launches without a wait, many in flight at once: no slot is written
    again before the device read it (the sum is exact)."""
    x = _zeros(q)
    body, set_step = _stepper(x)
    values = [1.0 + (k % 97) / 128 for k in range(300)]
    for v in values:
        set_step(v)
        q.parallel_for(sycl.range(N), body)
    q.wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, _float32_sum(values)))
    assert type(_plan_of(body, q).last[2]) is RingLaunch
    sycl.free(x, q)


def test_a_kept_command_takes_a_slot_again_once_its_slot_went_to_another(q):
    """A value seen before comes again (a recent launch's command, or the last launch's
    repeated) after other values reused its slot: it writes its value again."""
    x = _zeros(q)
    body, set_step = _stepper(x)
    values = [0.25 * k for k in range(1, 2 * RING_AFTER + 2)]
    for v in values:
        set_step(v)
        q.parallel_for(N, body).wait()  # each waited: the ring reuses one slot
    ring = _plan_of(body, q).ring[1]
    newest, free = ring.slots[-1], len(ring.free)
    again = values[RING_AFTER + 1]  # a ring launch's value, kept among the recent ones
    set_step(again)
    q.parallel_for(N, body).wait()
    assert type(_plan_of(body, q).last[2]) is RingLaunch
    q.parallel_for(N, body).wait()  # the very same launch again
    expected = _float32_sum([*values, again, again])
    np.testing.assert_array_equal(np.asarray(x), np.full(N, expected))
    assert ring.slots[-1] is newest and len(ring.free) == free  # one slot, reused
    sycl.free(x, q)


def test_a_graph_records_the_value_of_its_launch(q):
    """A launch recorded into a graph while the ring serves eager launches: replays add
    the recorded value, whatever eager launches wrote into the ring since."""
    x = _zeros(q)
    body, set_step = _stepper(x)
    eager = [0.5 * k for k in range(1, RING_AFTER + 3)]
    for v in eager:
        set_step(v)
        q.parallel_for(N, body).wait()
    g = syclexp.command_graph(q)
    g.begin_recording(q)
    set_step(100.0)
    q.parallel_for(N, body)
    g.end_recording()
    graph = g.finalize()
    later = [1000.0, 2000.0]
    for v in later:
        set_step(v)
        q.parallel_for(N, body).wait()
    q.ext_oneapi_graph(graph).wait()
    q.ext_oneapi_graph(graph).wait()
    expected = _float32_sum([*eager, *later, 100.0, 100.0])
    np.testing.assert_array_equal(np.asarray(x), np.full(N, expected))
    sycl.free(x, q)


def test_the_ring_memory_is_released_with_its_plan(q):
    """A plan replaced by one for another range lets its ring go: the ring's buffer is
    freed once the work that read it is done."""
    x = _zeros(q)
    body, set_step = _stepper(x)
    for k in range(RING_AFTER + 2):
        set_step(float(k))
        q.parallel_for(N, body)
    buffers = list(_plan_of(body, q).ring[1].buffers)
    assert buffers and not any(b.released for b in buffers)
    set_step(1.0)
    q.parallel_for(N // 2, body)  # a new plan takes the kernel's place
    gc.collect()
    sycl.usm_release_cached(q)  # waits for the device, then frees what it retired
    assert all(b.released for b in buffers)
    sycl.free(x, q)


def test_threads_launching_one_kernel_with_new_values_keep_each_value(q):
    """Two threads launch closures of one kernel with a new step each launch: the ring
    they share hands each claim a slot of its own."""
    arrays = [_zeros(q), _zeros(q)]
    values = [[1.0 + k / 64 for k in range(150)], [2.0 + k / 32 for k in range(150)]]

    def run(x: sycl.ptr, steps: list[float]) -> None:
        body, set_step = _stepper(x)
        for v in steps:
            set_step(v)
            q.parallel_for(sycl.range(N), body)

    threads = [threading.Thread(target=run, args=pair) for pair in zip(arrays, values,
                                                                         strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.wait()
    for x, steps in zip(arrays, values, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.full(N, _float32_sum(steps)))
        sycl.free(x, q)


def test_a_launch_finding_every_slot_in_flight_uses_the_plans_pipeline(q, monkeypatch):
    """Once every slot is in flight and no more may be made, a launch dispatches its push
    constants through the plan's pipeline (no dispatch looked up and cached by its
    bytes), and its value still reaches the device."""
    from vksycl.kernels import argument_ring

    x = _zeros(q)
    body, set_step = _stepper(x)
    warm = [0.5 * k for k in range(1, RING_AFTER + 2)]
    for v in warm:
        set_step(v)
        q.parallel_for(N, body).wait()
    ring = _plan_of(body, q).ring[1]
    monkeypatch.setattr(argument_ring, "_MOST_SLOTS", ring.made)
    slots = [*ring.slots, *ring.free]
    ring.slots.extend(ring.free)
    ring.free.clear()
    for slot in slots:  # as if each were in a submission not known to be finished
        slot.dispatch.part = argument_ring._PENDING
    engine = ring.engine
    looked_up, like_pipeline = [], []
    dispatch, with_push = engine.dispatch, engine.with_push
    monkeypatch.setattr(engine, "dispatch", lambda *a: looked_up.append(a) or dispatch(*a))
    monkeypatch.setattr(engine, "with_push", lambda d, push: like_pipeline.append(
        d is ring.like[1]) or with_push(d, push))
    set_step(3.0)
    q.parallel_for(sycl.range(N), body).wait()
    for slot in slots:
        slot.dispatch.part = argument_ring._NEVER_SUBMITTED
    np.testing.assert_array_equal(np.asarray(x), np.full(N, _float32_sum([*warm, 3.0])))
    assert not looked_up and like_pipeline == [True]
    sycl.free(x, q)


def test_a_kernel_compiled_anew_for_other_types_gets_a_ring_of_its_own(q):
    """Closures of one code capturing values of other types run another compiled kernel
    under the same plan: their new values go through that kernel, not the ring made for
    the first one."""
    x = _zeros(q)
    body, set_step = _stepper(x)
    steps = [0.5 * k for k in range(1, RING_AFTER + 3)]
    for v in steps:
        set_step(v)
        q.parallel_for(N, body).wait()
    first_ring = _plan_of(body, q).ring[1]
    assert first_ring
    counts = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(counts, 0, N * 4).wait()
    body_int, set_int = _stepper(counts)
    ints = list(range(3, RING_AFTER + 6))
    for v in ints:
        set_int(v)
        q.parallel_for(N, body_int).wait()
    np.testing.assert_array_equal(np.asarray(counts), np.full(N, sum(ints), np.int32))
    np.testing.assert_array_equal(np.asarray(x), np.full(N, _float32_sum(steps)))
    assert _plan_of(body, q).ring[1] is not first_ring
    sycl.free(counts, q)
    sycl.free(x, q)
