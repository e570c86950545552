"""Every common spelling of a repeated launch takes the fast path: once a launch has been
built, repeating it (with a new range object, an int, a command group, a lambda, a free
function kernel, a kernel object, two buffers swapped) packs no arguments again, and each
change of what the kernel sees still reaches the device. A launch changing only a number
or a pointer (a new time step each launch, the other of two buffers) repacks that value
alone and looks no pipeline up."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels import cache_keys, free_function, marshal, plans
from vksycl.kernels.launch import RING_AFTER
from vksycl.runtime import engine

N = 64
data: sycl.ptr | None = None  # the module-level pointer of `bump_global`


def bump_global(i):
    data[i] = data[i] + 1


def add(x: sycl.ptr, i, v):
    x[i] = x[i] + v


@syclexp.nd_range_kernel(1)
def bump_free(x: sycl.ptr[sycl.int32]):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + 1


@syclexp.single_task_kernel
def bump_all(x: sycl.ptr[sycl.int32], n: sycl.int32):
    for i in range(n):
        x[i] = x[i] + 1


@syclexp.nd_range_kernel(1)
def add_value(x: sycl.ptr[sycl.float32], v: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + v


@syclexp.nd_range_kernel(1)
def add_step(x: sycl.ptr[sycl.float32], v: sycl.float32):
    """`add_value` for one test alone: its plan starts with no launches kept."""
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + v


@pytest.fixture
def built(monkeypatch):
    """What launches built the slow way: arguments packed in full, and dispatches looked
    up by pipeline (`dispatch`) or made from an earlier one's (`with_push`)."""
    counts = {"packed": 0, "dispatch": 0, "with_push": 0}

    def counting(cls, name):
        real = getattr(cls, name)

        def count(self, *a):
            counts["packed" if name == "arguments" else name] += 1
            return real(self, *a)
        monkeypatch.setattr(cls, name, count)

    counting(marshal.Prepared, "arguments")
    counting(engine.Engine, "dispatch")
    counting(engine.Engine, "with_push")
    return counts


@pytest.fixture
def recorded(q, monkeypatch):
    """The ops recorded into sequences, each eager command submitted on its own."""
    monkeypatch.setattr(q._scheduler.engine, "batch_window_s", 0.0)
    ops = []
    real = engine.kp.Sequence.record
    monkeypatch.setattr(engine.kp.Sequence, "record",
                        lambda seq, op: ops.append(op) or real(seq, op))
    return ops


@pytest.fixture
def packed(monkeypatch):
    """How many launches packed their arguments (the way a new launch is built)."""
    calls = []
    real = marshal.Prepared.arguments
    monkeypatch.setattr(marshal.Prepared, "arguments",
                        lambda self, *a: calls.append(1) or real(self, *a))
    return calls


def _spellings(q: sycl.queue, x: sycl.ptr) -> dict:
    in_order = sycl.queue(q.get_device(), property_list=[sycl.property.queue.in_order()])
    kobj = syclexp.get_kernel_bundle(q.get_context(), bump_free,
                                     sycl.bundle_state.executable).ext_oneapi_get_kernel(
                                         bump_free)
    events = [q.submit(lambda h: None)]

    def body(i):
        x[i] = x[i] + 1

    def nd_body(it):
        i = it.get_global_id(0)
        x[i] = x[i] + 1

    def after_last():
        e = events[-1]
        events.append(q.submit(lambda h: (h.depends_on(e),
                                          h.parallel_for(sycl.range(N), body))))
        return events[-1]

    return {
        "new sycl.range": lambda: q.parallel_for(sycl.range(N), body),
        "int": lambda: q.parallel_for(N, body),
        "tuple": lambda: q.parallel_for((N,), body),
        "new nd_range": lambda: q.parallel_for(sycl.nd_range((N,), (16,)), nd_body),
        "in-order queue": lambda: in_order.parallel_for(sycl.range(N), body),
        "q.submit": lambda: q.submit(lambda h: h.parallel_for(sycl.range(N), body)),
        "q.submit + depends_on": after_last,
        "lambda": lambda: q.parallel_for(N, lambda i: add(x, i, 1)),
        "module-level function": lambda: q.parallel_for(N, bump_global),
        "nd_launch": lambda: syclexp.nd_launch(q, sycl.nd_range((N,), (16,)), bump_free, x),
        "single_task": lambda: syclexp.single_task(q, bump_all, x, N),
        "kernel object + set_args": lambda: q.submit(
            lambda h: (h.set_args(x), h.parallel_for(sycl.nd_range((N,), (16,)), kobj))),
    }


@pytest.mark.parametrize("spelling", ["new sycl.range", "int", "tuple", "new nd_range",
                                      "in-order queue", "q.submit", "q.submit + depends_on",
                                      "lambda", "module-level function", "nd_launch",
                                      "single_task", "kernel object + set_args"])
def test_a_repeated_launch_packs_its_arguments_once(q, packed, spelling):
    global data
    x = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(x, 0, N * 4).wait()
    data = x
    launch = _spellings(q, x)[spelling]
    launch().wait()
    first = len(packed)
    sycl.event.wait([launch() for _ in range(5)])  # each spelling returns its event
    assert len(packed) == first, f"{spelling}: {len(packed) - first} launches packed again"
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 6, np.int32))
    data = None
    sycl.free(x, q)


def zeroed_pair(q: sycl.queue) -> tuple[sycl.ptr, sycl.ptr]:
    """Two shared arrays of N zero int32s, ready when this returns."""
    a = sycl.malloc_shared(N, sycl.int32, q)
    b = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(a, 0, N * 4)
    q.memset(b, 0, N * 4).wait()
    return a, b

def test_two_buffers_swapped_each_launch_find_their_commands(q, packed):
    """Double buffering: each launch takes the other pointer. Both launches are kept by
    their arguments, so after one round neither packs again; each pointer is written by
    its own launches."""
    a, b = zeroed_pair(q)
    ndr = sycl.nd_range((N,), (16,))
    pair = [a, b]
    for _ in range(2):
        syclexp.nd_launch(q, ndr, bump_free, pair[0])
        pair.reverse()
    q.wait()
    first = len(packed)
    for _ in range(7):
        syclexp.nd_launch(q, ndr, bump_free, pair[0])
        pair.reverse()
    q.wait()
    assert len(packed) == first
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 5, np.int32))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 4, np.int32))
    sycl.free(b, q)
    with pytest.raises(sycl.exception, match="freed"):
        syclexp.nd_launch(q, ndr, bump_free, b)  # kept by its arguments, and freed
    syclexp.nd_launch(q, ndr, bump_free, a).wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 6, np.int32))
    sycl.free(a, q)


def test_a_kept_launch_that_repeats_is_found_first_from_then_on(q):
    """A free function launched over `a` once more after a launch over `b`: the kept
    launch over `a` repeats and becomes the last one, so the launches after it find it
    without looking among the kept ones (each such look cost every launch of a loop)."""
    a, b = zeroed_pair(q)
    ndr = sycl.nd_range((N,), (16,))
    for x in (a, b, a):
        syclexp.nd_launch(q, ndr, bump_free, x)
    looked = plans.WAYS.kept
    for _ in range(5):
        syclexp.nd_launch(q, ndr, bump_free, a)
    q.wait()
    assert plans.WAYS.kept == looked
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 7, np.int32))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 1, np.int32))
    sycl.free(a, q)
    sycl.free(b, q)


def test_closures_of_one_function_over_two_arrays_alternate_without_packing(q, packed):
    """A factory making one closure per array (the same code, other captured pointers):
    alternating between them finds each one's command again."""
    arrays = [sycl.malloc_shared(N, sycl.int32, q) for _ in range(2)]
    for x in arrays:
        q.memset(x, 0, N * 4)
    q.wait()

    def bump(x):
        def body(i):
            x[i] = x[i] + 1
        return body

    kernels = [bump(x) for x in arrays]
    for k in kernels:
        q.parallel_for(N, k)
    q.wait()
    first = len(packed)
    for _ in range(4):
        for k in kernels:
            q.parallel_for(N, k)
    q.wait()
    assert len(packed) == first
    for x in arrays:
        np.testing.assert_array_equal(np.asarray(x), np.full(N, 5, np.int32))
        sycl.free(x, q)


def test_a_new_captured_number_each_launch_runs_the_same_kernel(q, monkeypatch):
    """A time step passed as a new float each launch: the kernel is not looked up again
    (no cache signature computed), and every launch sees its own value."""
    keyed = []
    real = cache_keys.signature
    monkeypatch.setattr(cache_keys, "signature", lambda *a: keyed.append(1) or real(*a))
    monkeypatch.setattr(plans, "signature", cache_keys.signature)
    out = sycl.malloc_shared(N, sycl.float32, q)
    step = 0.0

    def body(i):
        out[i] = out[i] + step

    q.memset(out, 0, N * 4).wait()
    q.parallel_for(N, body).wait()
    first = len(keyed)
    for k in range(1, 6):
        step = k * 0.5
        q.parallel_for(N, body)
    q.wait()
    assert len(keyed) == first
    np.testing.assert_array_equal(np.asarray(out), np.full(N, 7.5, np.float32))
    sycl.free(out, q)


def test_a_kernel_object_sees_each_new_argument(q):
    a, b = zeroed_pair(q)
    kobj = syclexp.get_kernel_bundle(q.get_context(), bump_free,
                                     sycl.bundle_state.executable).ext_oneapi_get_kernel(
                                         bump_free)
    ndr = sycl.nd_range((N,), (16,))
    for target in (a, a, b, a, b, b):
        q.submit(lambda h, t=target: (h.set_args(t), h.parallel_for(ndr, kobj)))
    q.wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 3, np.int32))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 3, np.int32))
    sycl.free(a, q)
    with pytest.raises(sycl.exception, match="freed"):
        q.submit(lambda h: (h.set_args(a), h.parallel_for(ndr, kobj)))
    with pytest.raises(sycl.exception, match="not set"):
        q.submit(lambda h: h.parallel_for(ndr, kobj))
    sycl.free(b, q)


class Particles:
    """A simulation with its kernels as methods: `q.parallel_for(n, self.step)`."""

    def __init__(self, x: sycl.ptr, v: float) -> None:
        self.x, self.v = x, v

    def step(self, i):
        self.x[i] = self.x[i] + self.v

    def scale(self, it, total):
        i = it.get_global_id(0)
        total += self.x[i] * 2.0


def test_a_bound_method_is_a_kernel_and_sees_its_attributes(q, packed):
    x = sycl.malloc_shared(N, sycl.float32, q)
    y = sycl.malloc_shared(N, sycl.float32, q)
    q.memset(x, 0, N * 4)
    q.memset(y, 0, N * 4).wait()
    sim = Particles(x, 1.0)
    q.parallel_for(N, sim.step).wait()
    first = len(packed)
    for _ in range(4):
        q.parallel_for(sycl.range(N), sim.step)  # a new bound method each time
    q.wait()
    assert len(packed) == first  # the very same attributes: the last command again
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 5, np.float32))
    sim.v = 0.5  # a new value, then a new pointer: each reaches the next launch
    q.parallel_for(N, sim.step).wait()
    sim.x = y
    q.parallel_for(N, sim.step).wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 5.5, np.float32))
    np.testing.assert_array_equal(np.asarray(y), np.full(N, 0.5, np.float32))
    other = Particles(x, 2.0)  # another object, the same method: its own attributes
    q.submit(lambda h: h.parallel_for(N, other.step)).wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 7.5, np.float32))
    total = sycl.malloc_shared(1, sycl.float32, q)
    q.parallel_for(sycl.nd_range((N,), (16,)),
                   sycl.reduction(total, sycl.plus(), property_list=[
                       sycl.property.reduction.initialize_to_identity()]),
                   sim.scale).wait()
    assert np.asarray(total)[0] == 2.0 * 0.5 * N  # sim.x is y now
    sycl.free(y, q)
    with pytest.raises(sycl.exception, match="freed"):
        q.parallel_for(N, sim.step)
    sycl.free(x, q)
    sycl.free(total, q)


class Broken:
    def __init__(self, x: sycl.ptr) -> None:
        self.x = x

    def step(self, i):
        self.x[i] = {"a": 1}  # a dict in device code: refused at this line


def test_an_error_in_a_kernel_method_names_its_line(q):
    x = sycl.malloc_shared(N, sycl.float32, q)
    with pytest.raises(sycl.exception) as err:
        q.parallel_for(N, Broken(x).step)
    assert err.value.code() == sycl.errc.build
    line = Broken.step.__code__.co_firstlineno + 1
    assert f"test_launch_spellings.py:{line}" in str(err.value)
    sycl.free(x, q)


def test_a_reduction_made_anew_each_launch_repeats_its_command(q, packed):
    """`q.parallel_for(sycl.range(n), sycl.reduction(...), body)` as users write it, a new
    range and reduction every call: after the first, no launch packs its arguments, and
    each sums anew (initialize_to_identity) or onto the target (without it)."""
    x = sycl.malloc_shared(N, sycl.int32, q)
    out = sycl.malloc_shared(1, sycl.int32, q)
    np.asarray(x)[:] = np.arange(N)
    init = sycl.property.reduction.initialize_to_identity()

    def body(i, s):
        s += x[i]

    def launch(props):
        return q.parallel_for(sycl.range(N), sycl.reduction(out, sycl.plus(),
                                                            property_list=props), body)
    launch([init]).wait()
    first = len(packed)
    for _ in range(3):
        launch([init]).wait()
        assert np.asarray(out)[0] == N * (N - 1) // 2
    assert len(packed) == first
    launch([]).wait()
    assert np.asarray(out)[0] == N * (N - 1)
    sycl.free(x, q)
    sycl.free(out, q)


def test_a_reduction_target_made_anew_each_launch_repeats_its_command(q, packed):
    """A target spelled `out + k` each call is a new pointer object at the same address:
    the launch still repeats its command; another address is another command, and each
    result lands at its own address."""
    x = sycl.malloc_shared(N, sycl.int32, q)
    out = sycl.malloc_shared(2, sycl.int32, q)
    np.asarray(x)[:] = np.arange(N)
    np.asarray(out)[:] = 0

    def body(i, s):
        s += x[i]

    def launch(k: int):
        return q.parallel_for(sycl.range(N), sycl.reduction(out + k, sycl.plus()), body)

    launch(0).wait()
    first = len(packed)
    for _ in range(3):
        launch(0).wait()
    assert len(packed) == first
    launch(1).wait()
    assert len(packed) > first  # another address: packed anew
    np.testing.assert_array_equal(np.asarray(out), [4 * (N * (N - 1) // 2), N * (N - 1) // 2])
    sycl.free(x, q)
    sycl.free(out, q)


def test_a_new_scalar_each_launch_repacks_it_alone(q, built, recorded, float32_sum):
    """A time step captured anew each launch: the launches after the first repack it
    alone, and once a few launches brought new values, a launch packs nothing, looks no
    pipeline up and makes no dispatch (its value goes to the plan's argument ring), and
    one waited for before the next records nothing; each sees its own value, then a new
    pointer, a freed one, and a number its slot cannot hold are each seen too."""
    x = sycl.malloc_shared(N, sycl.float32, q)
    y = sycl.malloc_shared(N, sycl.float32, q)
    q.memset(x, 0, N * 4)
    q.memset(y, 0, N * 4).wait()
    step = 0.5
    count = 1

    def body(i):
        x[i] = x[i] + step * count

    q.parallel_for(N, body).wait()
    steps = [0.5 + k / 8 for k in range(1, 13)]
    start = dict(built)
    for value in steps[:RING_AFTER]:
        step = value  # the kernel reads the cell
        q.parallel_for(sycl.range(N), body).wait()
    # the launches before the ring repack the value alone: nothing packed, no pipeline
    # looked up but the one the ring's slots are made from
    assert built["packed"] == start["packed"] and built["dispatch"] - start["dispatch"] <= 1
    first, records = dict(built), len(recorded)
    for value in steps[RING_AFTER:]:
        step = value
        q.parallel_for(sycl.range(N), body).wait()
    assert built == first and len(recorded) == records
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum([0.5, *steps])))
    x, count = y, 2  # a new pointer and a new int: repacked too
    q.parallel_for(N, body).wait()
    np.testing.assert_array_equal(np.asarray(y), np.full(N, np.float32(steps[-1] * 2)))
    assert built["packed"] == first["packed"]
    sycl.free(y, q)
    with pytest.raises(sycl.exception, match="freed"):
        q.parallel_for(N, body)
    x = sycl.malloc_shared(N, sycl.float32, q)
    count = 2**70
    with pytest.raises(sycl.exception, match="does not fit"):
        q.parallel_for(N, body)
    sycl.free(x, q)


def test_two_pointers_alternating_in_a_closure_build_nothing_after_one_round(q, built):
    """Double buffering in a closure: each launch reads the buffer the last one wrote.
    After the first launch of each pair, launches get the command of the launch before
    last back: no packing, no new dispatch."""
    a, b = zeroed_pair(q)
    src, dst = a, b

    def step(i):
        dst[i] = src[i] + 1

    for _ in range(2):
        q.parallel_for(N, step)
        src, dst = dst, src
    q.wait()
    first = dict(built)
    for _ in range(6):
        q.parallel_for(N, step)
        src, dst = dst, src
    q.wait()
    assert built == first
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 8, np.int32))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 7, np.int32))
    sycl.free(b, q)
    with pytest.raises(sycl.exception, match="freed"):
        q.parallel_for(N, step)  # src is b
    sycl.free(a, q)


@pytest.mark.parametrize("spelling", ["kernel object + set_args", "nd_launch"])
def test_a_new_scalar_argument_each_launch_repacks_it_alone(q, built, recorded, spelling,
                                                           float32_sum):
    """A kernel object given a new number with set_args each launch, or a free function
    launched with one: once a few launches brought new values, a launch packs nothing,
    looks no pipeline up and makes no dispatch, one waited for records nothing, and each
    adds its own value."""
    x = sycl.malloc_shared(N, sycl.float32, q)
    q.memset(x, 0, N * 4).wait()
    ndr = sycl.nd_range((N,), (16,))
    kobj = syclexp.get_kernel_bundle(q.get_context(), add_value,
                                     sycl.bundle_state.executable).ext_oneapi_get_kernel(
                                         add_value)

    def launch(v: float) -> sycl.event:
        if spelling == "nd_launch":
            return syclexp.nd_launch(q, ndr, add_value, x, v)
        return q.submit(lambda h: (h.set_args(x, v), h.parallel_for(ndr, kobj)))

    values = [0.25 * k for k in range(1, 13)]
    launch(values[0]).wait()
    start = dict(built)
    for v in values[1:RING_AFTER + 1]:
        launch(v).wait()
    # the launches before the ring repack the value alone: nothing packed, no pipeline
    # looked up but the one the ring's slots are made from
    assert built["packed"] == start["packed"] and built["dispatch"] - start["dispatch"] <= 1
    first, records = dict(built), len(recorded)
    for v in values[RING_AFTER + 1:]:
        launch(v).wait()
    assert built == first and len(recorded) == records
    np.testing.assert_array_equal(np.asarray(x), np.full(N, float32_sum(values)))
    sycl.free(x, q)
    with pytest.raises(sycl.exception, match="freed"):
        launch(1.0)


def test_two_commands_launched_in_turn_submit_their_recordings_again(q, monkeypatch):
    """Double buffering, each launch waited for: each of the two commands finds the
    sequence that recorded it, so after one round nothing is recorded again."""
    monkeypatch.setattr(q._scheduler.engine, "batch_window_s", 0.0)  # each on its own
    recorded = []
    real = engine.kp.Sequence.record
    monkeypatch.setattr(engine.kp.Sequence, "record",
                        lambda seq, op: recorded.append(op) or real(seq, op))
    a, b = zeroed_pair(q)
    ndr = sycl.nd_range((N,), (16,))
    pair = [a, b]
    for _ in range(2):
        syclexp.nd_launch(q, ndr, bump_free, pair[0]).wait()
        pair.reverse()
    first = len(recorded)
    for _ in range(6):
        syclexp.nd_launch(q, ndr, bump_free, pair[0]).wait()
        pair.reverse()
    assert len(recorded) == first
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 4, np.int32))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 4, np.int32))
    sycl.free(a, q)
    sycl.free(b, q)


def test_a_global_of_another_module_a_device_function_reads_is_seen(q, tmp_path,
                                                                     monkeypatch):
    """A kernel calling a device function of another module that reads a global of its
    own module: rebinding that global (`other.P = b`) reaches the next launch, which a
    repeat of the last command would miss."""
    (tmp_path / "spelling_other.py").write_text(
        "P = None\n\n\ndef bump(i):\n    P[i] = P[i] + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import spelling_other as other
    from spelling_other import bump

    a, b = zeroed_pair(q)

    def kernel(i):
        bump(i)

    other.P = a
    for _ in range(2):
        q.parallel_for(N, kernel).wait()
    other.P = b
    q.parallel_for(N, kernel).wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 2, np.int32))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 1, np.int32))
    sycl.free(a, q)
    sycl.free(b, q)


def _kernel_object(q: sycl.queue, f) -> sycl.kernel:
    return syclexp.get_kernel_bundle(q.get_context(), f, sycl.bundle_state.executable
                                     ).ext_oneapi_get_kernel(f)


def test_arguments_set_by_index_belong_to_their_command_group(q):
    """A command group that sets no argument has none, whatever earlier ones set (a handler
    shares an empty, read-only set of arguments until it sets one); set_args keeps the
    indices it does not set."""
    x = sycl.malloc_shared(N, sycl.float32, q)
    q.memset(x, 0, N * 4).wait()
    kadd = _kernel_object(q, add_value)
    ndr = sycl.nd_range((N,), (16,))
    q.submit(lambda h: (h.set_arg(1, 2.5), h.set_args(x), h.parallel_for(ndr, kadd)))
    q.submit(lambda h: (h.set_args(x, 0.5), h.parallel_for(ndr, kadd))).wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 3.0, np.float32))
    with pytest.raises(sycl.exception, match=r"argument 0 \(x\) of add_value is not set"):
        q.submit(lambda h: h.parallel_for(ndr, kadd))
    with pytest.raises(sycl.exception, match=r"argument 1 \(v\) of add_value is not set"):
        q.submit(lambda h: (h.set_arg(0, x), h.parallel_for(ndr, kadd)))
    with pytest.raises(sycl.exception, match="add_value has 2 arguments; set_arg set index 2"):
        q.submit(lambda h: (h.set_args(x, 1.0, 2.0), h.parallel_for(ndr, kadd)))
    with pytest.raises(sycl.exception, match="is a float32, got int"):
        q.submit(lambda h: (h.set_args(x, 1), h.parallel_for(ndr, kadd)))
    sycl.free(x, q)


def test_a_dynamic_parameter_is_refused_by_a_queue_command_group(q):
    """set_arg and set_args (which ask plain numbers and pointers nothing) both refuse a
    graph's dynamic_parameter in a command group submitted to a queue."""
    x = sycl.malloc_shared(N, sycl.float32, q)
    g = syclexp.command_graph(q)
    param = syclexp.dynamic_parameter(g, 1.0)
    for fill in (lambda h: h.set_arg(1, param), lambda h: h.set_args(x, param)):
        with pytest.raises(sycl.exception, match="dynamic_parameter") as err:
            q.submit(fill)
        assert err.value.code() == sycl.errc.invalid
    sycl.free(x, q)


def test_a_kernel_object_checks_each_new_launch_object(q):
    """A kernel object enqueued again with the nd_range it was accepted with asks nothing
    of it; another launch object is checked again."""
    x = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(x, 0, N * 4).wait()
    kobj = _kernel_object(q, bump_free)
    ndr = sycl.nd_range((N,), (16,))
    q.submit(lambda h: (h.set_args(x), h.parallel_for(ndr, kobj))).wait()
    with pytest.raises(sycl.exception, match="enqueue it with parallel_for"):
        q.submit(lambda h: (h.set_args(x), h.parallel_for(sycl.range(N), kobj)))
    with pytest.raises(sycl.exception, match="enqueued with a 2-dimensional nd_range"):
        q.submit(lambda h: (h.set_args(x),
                            h.parallel_for(sycl.nd_range((N, 1), (16, 1)), kobj)))
    with pytest.raises(sycl.exception, match="single_task"):
        q.submit(lambda h: (h.set_args(x), h.single_task(kobj)))
    q.submit(lambda h: (h.set_args(x), h.parallel_for(ndr, kobj))).wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 2, np.int32))
    sycl.free(x, q)


def test_a_free_function_converts_each_new_value(q):
    """nd_launch converts each new value as C++ would (a Python float as it is, a numpy
    number or an int to the float32 parameter), and still refuses what does not convert
    or fit, with its errc and message."""
    x = sycl.malloc_shared(N, sycl.float32, q)
    q.memset(x, 0, N * 4).wait()
    ndr = sycl.nd_range((N,), (16,))
    for v in (0.5, np.float64(0.25), 2, np.float32(0.125), True):
        syclexp.nd_launch(q, ndr, add_value, x, v)
    q.wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 3.875, np.float32))
    for bad, message in (("1.0", "is a float32, got str"), (None, "got NoneType"),
                         (1e300, "does not fit"), ([1.0], "got list")):
        with pytest.raises(sycl.exception, match=message) as err:
            syclexp.nd_launch(q, ndr, add_value, x, bad)
        assert err.value.code() == sycl.errc.invalid
    syclexp.nd_launch(q, ndr, add_value, x, float("inf")).wait()  # infinities convert
    assert np.isinf(np.asarray(x)).all()
    sycl.free(x, q)


def test_new_numbers_alone_convert_by_themselves_and_are_not_kept(q):
    """nd_launch bringing only new numbers against the launch before converts those
    alone, the other arguments keeping their converted objects, and leaves the plan's
    recent argument tuples (which two buffers launched in turn find theirs in) as they
    were; a new pointer is looked up there and kept as before."""
    x = sycl.malloc_shared(N, sycl.float32, q)
    y = sycl.malloc_shared(N, sycl.float32, q)
    q.memset(x, 0, N * 4).wait()
    q.memset(y, 0, N * 4).wait()
    ndr = sycl.nd_range((N,), (16,))
    p = free_function.plan(free_function.free_function_kernel(add_step))
    for pointer in (x, y, x, y, x):  # two buffers in turn: both found and kept
        syclexp.nd_launch(q, ndr, add_step, pointer, 0.5)
    kept = dict(p.last)
    assert sorted(id(entry[0][0]) for entry in kept.values()) == sorted([id(x), id(y)])
    pointer = p.latest[1][0]
    for v in (0.25, 0.125, 1.0, 2):
        syclexp.nd_launch(q, ndr, add_step, x, v)
        assert p.latest[1][0] is pointer and p.latest[0] == (x, v)
    assert p.last == kept
    q.wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 4.875, np.float32))
    np.testing.assert_array_equal(np.asarray(y), np.full(N, 1.0, np.float32))
    sycl.free(x, q)
    sycl.free(y, q)


def test_depends_on_a_plain_event_orders_the_command_group_after_it(q, packed):
    """A command group repeated with depends_on a plain event packs nothing again, and
    still runs after that event's work (a host task held back here)."""
    import threading

    x = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(x, 0, N * 4).wait()

    def body(i):
        x[i] = x[i] * 2

    done = q.submit(lambda h: h.parallel_for(N, body))
    done.wait()
    first = len(packed)
    gate = threading.Event()
    host = q.submit(lambda h: h.host_task(lambda: (gate.wait(10),
                                                     np.asarray(x).__setitem__(..., 5))))
    after = q.submit(lambda h: (h.depends_on(host), h.parallel_for(N, body)))
    gate.set()
    after.wait()
    assert len(packed) == first
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 10, np.int32))
    sycl.free(x, q)
