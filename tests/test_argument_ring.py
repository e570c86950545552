"""Launches with a new argument value each time run from their plan's argument ring: each
launch's value reaches the device whether it was waited for, is still in flight among
hundreds of others, is a command kept and launched again after its slot went to another
launch, or was recorded into a graph; the ring's memory goes back once its plan is gone.

Once the ring is settled, a run of launches each bringing a new number in the same
closure cell or explicit argument (a streak) is checked at that value alone: no general
repack (`new_captures`, `new_arguments`), no packing; and any other change during the run
(another pointer, a rebound global, a number of another type, a freed pointer, a value
that does not fit) is still seen."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels import launch, marshal, plans
from vksycl.kernels.argument_ring import COUNTS, RingLaunch
from vksycl.kernels.launch import RING_AFTER, build_launch

N = 64
target: sycl.ptr | None = None  # the module-level pointer `add_to_target` writes


def add_to_target(i):
    target[i] = target[i] + 1.0


@syclexp.nd_range_kernel(1)
def add_value(x: sycl.ptr[sycl.float32], v: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + v


@syclexp.nd_range_kernel(1)
def add_scaled(x: sycl.ptr[sycl.float32], v: sycl.float32, scale: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + v * scale


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


def _steps(count: int, start: int = 0) -> list[float]:
    return [1.0 + (start + k) / 64 for k in range(count)]


def _ringing(q: sycl.queue, count: int = RING_AFTER + 3):
    """An array and a kernel stepping it, launched (each waited for) with `count` new
    steps, enough for its plan's ring to settle: (the array, the kernel, how to set the
    step, the steps launched)."""
    x = _zeros(q)
    body, set_step = _stepper(x)
    values = _steps(count)
    for v in values:
        set_step(v)
        q.parallel_for(N, body).wait()
    return x, body, set_step, values


@pytest.fixture
def general(monkeypatch):
    """How many launches took the general ways so far: the repack of changed captures or
    arguments (tried), or the full packing of every argument."""
    packed = []
    real = marshal.Prepared.arguments
    monkeypatch.setattr(marshal.Prepared, "arguments",
                        lambda self, *a: packed.append(1) or real(self, *a))

    class Counts:
        def __getitem__(self, way: str) -> int:
            return plans.WAYS.repacks if way == "repacked" else len(packed)
    return Counts()


def test_launches_in_flight_together_each_keep_their_value(q, float32_sum):
    """Hundreds of launches without a wait, many in flight at once: no slot is written
    again before the device read it (the sum is exact). A slot remembers which claim its
    bytes are by number, not by the launch: once done, only the few commands the plan
    keeps are alive (a ring holding every launch until it came round kept them for the
    cyclic collector to scan, in a process with a large heap a full collection every few
    thousand launches)."""
    x = _zeros(q)
    body, set_step = _stepper(x)
    values = [1.0 + (k % 97) / 128 for k in range(400)]
    for v in values:
        set_step(v)
        q.parallel_for(sycl.range(N), body)
    q.wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values)))
    plan = _plan_of(body, q)
    assert isinstance(plan.last[2], RingLaunch)
    ring = plan.ring[1]
    assert ring.made >= 64  # many slots were in flight
    alive = sum(1 for o in gc.get_objects() if type(o) is RingLaunch and o.ring is ring)
    assert 1 <= alive <= launch._RECENT + 1
    sycl.free(x, q)


@pytest.mark.parametrize("wait", [True, False])
def test_launches_of_new_sizes_run_from_the_ring_each_over_its_own_range(q, wait):
    """A range of another size each launch (same launch facts) settles the kernel's ring
    and then runs from its slots, whose dispatches read the work-group counts written
    beside the arguments: each launch covers exactly its own items, whether waited for
    one by one (one slot, one recording) or all in flight together; a launch of the
    first size among them, and then a streak of new steps at the last size, keep theirs."""
    n = 4096
    out = sycl.malloc_shared(n, sycl.int32, q)
    q.memset(out, 0, n * 4).wait()

    def count(it):
        k = it.get_linear_id()
        out[k] = out[k] + 1

    sizes = [n - 64 * k for k in range(24)] + [n, 3000]
    for size in sizes:
        ev = q.parallel_for(sycl.range(size), count)
        if wait:
            ev.wait()
    q.wait()
    expected = np.zeros(n, np.int32)
    for size in sizes:
        expected[:size] += 1
    np.testing.assert_array_equal(np.asarray(out), expected)
    plan = plans._PLANS[(id(count.__code__), id(q.get_device()))]
    ring = plan.ring[1]  # settled by the first sizes: the last size's launch ran from it
    newest = ring.newest  # the last claim's slot, holding the counts of 3000 items
    assert newest.claim == ring.claims
    groups = COUNTS.unpack(bytes(newest.memory[newest.counts]))
    first = ring.first.groups
    assert groups == (-(-3000 * first[0] // n), 1, 1) and groups != first

    x = sycl.malloc_shared(n, sycl.float32, q)
    q.memset(x, 0, n * 4).wait()
    body, set_step = _stepper(x)
    for size in (n, 2500):  # a plan, then one of another size with a ring to settle
        for k in range(2 * RING_AFTER):
            set_step(1.0 + k)
            q.parallel_for(sycl.range(size), body)
    q.wait()
    total = sum(1.0 + k for k in range(2 * RING_AFTER))
    got = np.asarray(x)
    assert (got[:2500] == 2 * total).all() and (got[2500:] == total).all()
    sycl.free(out, q)
    sycl.free(x, q)


def test_a_kept_command_takes_a_slot_again_once_its_slot_went_to_another(q, float32_sum):
    """A ring launch's command submitted again after a later launch took its slot (as a
    command kept by its bytes or function is, outside a streak) writes its own value
    again; the very same launch repeated at once reuses its slot."""
    x, body, set_step, values = _ringing(q, 2 * RING_AFTER + 1)  # the ring reuses one slot
    plan = _plan_of(body, q)
    ring, kept = plan.ring[1], plan.last[2]
    assert isinstance(kept, RingLaunch)
    newest, free = ring.slots[-1], len(ring.free)
    set_step(0.125)
    q.parallel_for(N, body).wait()  # its slot goes to this launch
    q.execute(kept, []).wait()
    q.parallel_for(N, body).wait()  # the very same launch again
    expected = float32_sum([*values, 0.125, values[-1], 0.125])
    np.testing.assert_array_equal(np.asarray(x), np.full(N, expected))
    assert ring.slots[-1] is newest and len(ring.free) == free  # one slot, reused
    sycl.free(x, q)


def test_a_graph_records_the_value_of_its_launch(q, float32_sum):
    """A launch recorded into a graph while the ring serves eager launches: replays add
    the recorded value, whatever eager launches wrote into the ring since."""
    x, body, set_step, eager = _ringing(q)
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
    expected = float32_sum([*eager, *later, 100.0, 100.0])
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


def test_closures_of_one_code_taking_turns_keep_the_ring(q, float32_sum):
    """A closure of the same code over another array and size, launched in between, takes
    the kernel's plan over, and the next launch of the first closure takes it back: each
    plan made from the last one takes its ring along, so the first closure's launches of
    new sizes run from the ring its new values settled, not from push constants until a
    ring is made anew."""
    n, m = 1000, 600  # sizes of the same launch facts
    x = sycl.malloc_shared(n, sycl.float32, q)
    y = sycl.malloc_shared(n, sycl.float32, q)
    x[:], y[:] = 0, 0
    body_x, set_x = _stepper(x)
    body_y, set_y = _stepper(y)
    steps = _steps(RING_AFTER + 3)
    for v in steps:
        set_x(v)
        q.parallel_for(n, body_x).wait()
    ring = _plan_of(body_x, q).ring[1]
    assert ring
    set_y(5.0)
    q.parallel_for(m, body_y).wait()
    set_x(2.0)
    sizes = (n, 900, 800, 700)
    for size in sizes:
        command = build_launch(q.get_device(), body_x, sycl.range(size), None,
                               q.get_context())
        if size != n:  # the first one takes the plan back in full
            assert isinstance(command, RingLaunch) and command.ring is ring
        q.execute(command, []).wait()
    expected = np.full(n, float32_sum(steps), np.float32)
    for size in sizes:
        expected[:size] += np.float32(2.0)
    np.testing.assert_array_equal(np.asarray(x), expected)
    np.testing.assert_array_equal(np.asarray(y)[:m], 5.0)
    assert (np.asarray(y)[m:] == 0).all()
    sycl.free(x, q)
    sycl.free(y, q)


def test_the_ring_lies_in_memory_the_host_only_writes(q, float32_sum):
    """The ring's slots are memory the host writes and the device reads as its own where
    it maps it (a resizable BAR; all of lavapipe's memory): each launch reads its value
    there."""
    x, body, _, values = _ringing(q)
    buffers = _plan_of(body, q).ring[1].buffers
    assert buffers and {b.tensor.tensor_type().name for b in buffers} == {"host_device_local"}
    assert np.array_equal(x[:N], np.full(N, float32_sum(values), np.float32))
    sycl.free(x, q)


def test_threads_launching_one_kernel_with_new_values_keep_each_value(q, float32_sum):
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
        np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(steps)))
        sycl.free(x, q)


def test_a_launch_finding_every_slot_in_flight_uses_the_plans_pipeline(q, monkeypatch, float32_sum):
    """Once every slot is in flight and no more may be made, a launch dispatches its push
    constants through the plan's pipeline (no dispatch looked up and cached by its
    bytes), and its value still reaches the device."""
    from vksycl.kernels import argument_ring

    x, body, set_step, warm = _ringing(q, RING_AFTER + 1)
    ring = _plan_of(body, q).ring[1]
    monkeypatch.setattr(argument_ring, "_MOST_SLOTS", ring.made)
    slots = [*ring.slots, *ring.free]
    ring.slots.extend(ring.free)
    ring.free.clear()
    for slot in slots:  # as if each were in a submission not known to be finished
        slot.dispatch.part = argument_ring._PENDING
    cached = dict(ring.engine._ops)  # dispatches looked up by their bytes
    set_step(3.0)
    q.parallel_for(sycl.range(N), body).wait()
    for slot in slots:
        slot.dispatch.part = argument_ring._NEVER_SUBMITTED
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum([*warm, 3.0])))
    command = _plan_of(body, q).last[2]
    engine, dispatched = command._dispatched
    assert engine is ring.engine and dispatched.algo is ring.like[1].algo
    assert ring.engine._ops == cached and all(d is not dispatched for d in cached.values())
    sycl.free(x, q)


def test_a_kernel_compiled_anew_for_other_types_gets_a_ring_of_its_own(q, float32_sum):
    """Closures of one code capturing values of other types run another compiled kernel
    under the same plan: their new values go through that kernel, not the ring made for
    the first one."""
    x, body, _, steps = _ringing(q)
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
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(steps)))
    assert _plan_of(body, q).ring[1] is not first_ring
    sycl.free(counts, q)
    sycl.free(x, q)


def test_a_new_captured_number_each_launch_runs_the_streak(q, general, float32_sum):
    """After the ring settles, a new time step each launch takes neither general way,
    waited for one by one or hundreds in flight, and the sum is exact."""
    x, body, set_step, values = _ringing(q)
    repacked, packed = general["repacked"], general["packed"]
    more = _steps(300, len(values))
    for v in more:
        set_step(v)
        q.parallel_for(sycl.range(N), body)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values + more)))
    sycl.free(x, q)


def test_closures_made_anew_each_launch_continue_the_streak(q, general, float32_sum):
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
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values + more)))
    sycl.free(x, q)


def test_a_streak_sees_another_array_a_rebound_global_and_another_type(q, monkeypatch, float32_sum):
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
    np.testing.assert_array_equal(np.asarray(a), np.full(N, float32_sum(sums[id(a)])))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, float32_sum(sums[id(b)])))
    target = a
    q.parallel_for(N, add_to_target).wait()
    target = b
    q.parallel_for(N, add_to_target).wait()
    np.testing.assert_array_equal(np.asarray(b), np.full(N, float32_sum(sums[id(b)]) + 1))
    for p in (a, b):
        sycl.free(p, q)


def test_a_streak_refuses_a_freed_pointer_and_a_value_that_does_not_fit(q):
    """During a run of new steps: a float past float32's range, and an int step too large
    for its int32 slot, raise as a full launch does (the kernel argument's error code,
    not Python's OverflowError); the array freed, the next launch raises before anything
    runs."""
    x, body, set_step, _ = _ringing(q)
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


def test_a_new_argument_each_launch_runs_the_streak(q, general, float32_sum):
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
    np.testing.assert_array_equal(np.asarray(a), np.full(N, float32_sum(values + more)))
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
    np.testing.assert_array_equal(np.asarray(b), np.full(N, float32_sum(values + more)))
    for p in (a, b):
        sycl.free(p, q)


def test_an_unchanged_value_during_a_streak_repeats_the_last_command(q, float32_sum):
    """The same value launched again during a streak is a repeat: the last command comes
    back, no ring slot taken for it."""
    x, body, _, values = _ringing(q)
    plan = plans.known_plan(body, None, sycl.range(N), q.get_device())
    assert plan.streak is not None
    last = plan.last[2]
    assert launch.build_launch(q.get_device(), body, sycl.range(N), None,
                               q.get_context()) is last
    q.parallel_for(N, body).wait()
    np.testing.assert_array_equal(np.asarray(x),
                                  np.full(N, float32_sum([*values, values[-1]])))
    sycl.free(x, q)


def test_numpy_steps_and_command_groups_run_the_streak(q, general, float32_sum):
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
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values)))
    sycl.free(x, q)


def test_two_changing_values_and_a_bool_run_the_streak(q, general, float32_sum):
    """A step and a count changing together each launch, and a bool flag flipping each
    launch: after the ring settles neither takes a general way, and every launch's values
    arrive, in flight together."""
    x = _zeros(q)
    counts = sycl.malloc_shared(N, sycl.int32, q)
    flags = sycl.malloc_shared(N, sycl.int32, q)
    for p in (counts, flags):
        q.memset(p, 0, N * 4).wait()
    step, count, on = 0.0, 0, False

    def body(i):
        x[i] = x[i] + step
        counts[i] = counts[i] + count
        if on:
            flags[i] = flags[i] + 1

    values = _steps(RING_AFTER + 40)
    for k, v in enumerate(values):
        if k == RING_AFTER + 3:
            q.wait()
            repacked, packed = general["repacked"], general["packed"]
        step, count, on = v, k + 1, k % 2 == 1
        q.parallel_for(N, body)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values)))
    n = len(values)
    np.testing.assert_array_equal(np.asarray(counts), np.full(N, n * (n + 1) // 2, np.int32))
    np.testing.assert_array_equal(np.asarray(flags), np.full(N, n // 2, np.int32))
    for p in (x, counts, flags):
        sycl.free(p, q)


def test_a_streak_value_that_comes_back_the_same_object_is_a_repeat(q, general):
    """A small int that is the very object of the launch before (Python keeps one object
    per small int) launches as a repeat: the last command itself. The streak goes on
    after it: the next new values take no general way."""
    y = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(y, 0, N * 4).wait()
    count = 0

    def counter(i):
        y[i] = y[i] + count

    first = list(range(1, RING_AFTER + 6))
    for count in first:  # noqa: B007 (the cell the kernel reads)
        q.parallel_for(N, counter)
    q.wait()
    plan = _plan_of(counter, q)
    assert plan.streak is not None
    repacked, packed = general["repacked"], general["packed"]
    last = plan.last[2]
    assert launch.build_launch(q.get_device(), counter, sycl.range(N), None,
                               q.get_context()) is last
    q.parallel_for(N, counter)  # the same value again
    rest = list(range(RING_AFTER + 6, 40))
    for count in rest:  # noqa: B007
        q.parallel_for(N, counter)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    total = sum(first) + first[-1] + sum(rest)
    np.testing.assert_array_equal(np.asarray(y), np.full(N, total, np.int32))
    sycl.free(y, q)


def test_a_streak_where_one_of_its_values_comes_back_goes_on(q, general, float32_sum):
    """A step new at each launch beside a count new at every other one (left as it was
    in between, the very int object): after the ring settles, no launch takes a general
    way, and every value arrives."""
    x = _zeros(q)
    counts = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(counts, 0, N * 4).wait()
    step, count = 0.0, 0

    def body(i):
        x[i] = x[i] + step
        counts[i] = counts[i] + count

    values = _steps(RING_AFTER + 60)
    launched = []
    for k, v in enumerate(values):
        if k == RING_AFTER + 4:
            q.wait()
            repacked, packed = general["repacked"], general["packed"]
        step = v
        if k % 2 == 0:
            count = 1000 + k  # past the ints Python keeps one object of
        launched.append(count)
        q.parallel_for(N, body)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values)))
    np.testing.assert_array_equal(np.asarray(counts), np.full(N, sum(launched), np.int32))
    for p in (x, counts):
        sycl.free(p, q)


def test_a_numpy_bool_in_a_streak_packs_as_an_int(q, general, float32_sum):
    """A numpy bool beside a step new at each launch (struct packs no numpy bool into a
    32-bit slot; two in a row are the very object): after the ring settles no launch
    takes a general way, and each launch sees its own values."""
    x = _zeros(q)
    y = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(y, 0, N * 4).wait()
    step, on = 0.0, np.False_

    def body(i):
        x[i] = x[i] + step
        if on:
            y[i] = y[i] + 1

    values = _steps(RING_AFTER + 60)
    flags = [np.bool_(k % 3 != 0) for k in range(len(values))]
    for k, (v, flag) in enumerate(zip(values, flags, strict=True)):
        if k == RING_AFTER + 4:
            q.wait()
            repacked, packed = general["repacked"], general["packed"]
        step, on = v, flag
        q.parallel_for(N, body)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values)))
    np.testing.assert_array_equal(np.asarray(y), np.full(N, sum(map(bool, flags)), np.int32))
    for p in (x, y):
        sycl.free(p, q)


def test_arguments_where_one_of_a_streak_comes_back_go_on(q, general):
    """nd_launch with a step new at each launch and a scale new at every other one (the
    same float object in between): after the ring settles no launch takes a general way,
    and the sum is exact (steps and scales chosen so that every product and sum is)."""
    x = _zeros(q)
    nd = sycl.nd_range((N,), (N,))
    values = _steps(RING_AFTER + 60)
    total = 0.0
    scale = 1.0
    for k, v in enumerate(values):
        if k == RING_AFTER + 4:
            q.wait()
            repacked, packed = general["repacked"], general["packed"]
        if k % 2 == 0:
            scale = 2.0 if k % 4 else 0.5
        total += v * scale
        syclexp.nd_launch(q, nd, add_scaled, x, v, scale)
    q.wait()
    assert (general["repacked"], general["packed"]) == (repacked, packed)
    np.testing.assert_array_equal(np.asarray(x), np.full(N, total, np.float32))
    sycl.free(x, q)
