"""Launches repeated in a loop reuse what the previous launch computed (the kernel's cache
key, its launch plan, the command when its arguments are the same): every such shortcut
must still see what changed between launches."""

from __future__ import annotations

import types
from collections.abc import Callable

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels import plans
from vksycl.kernels.launch import build_launch

N = 256
SCALE = np.float32(1.0)  # a module global the kernel reads; rebound between launches


ZERO = 0.0  # rebound to -0.0: a compiled-in number keyed by its exact value
FACTOR = 3  # rebound to 3.0: the same value as another type compiles other code
CONSTANTS = types.ModuleType("launch_constants")  # a user's module of constants
CONSTANTS.K = 1.0


class Settings:  # a user's class of constants
    SCALE = 1.0


@syclexp.nd_range_kernel(1)
def add_scaled(x: sycl.ptr[sycl.float32], v: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    x[i] = x[i] + v * SCALE


@syclexp.single_task_kernel
def add_one(x: sycl.ptr[sycl.int32]):
    x[0] = x[0] + 1


def test_a_changing_captured_number_reaches_every_launch(q):
    out = sycl.malloc_shared(N, sycl.float32, q)
    rng = sycl.range(N)
    for k in range(5):
        step = np.float32(k)

        def body(i):
            out[i] = step + sycl.float32(i)  # noqa: B023 (launched at once)

        q.parallel_for(rng, body).wait()
        np.testing.assert_array_equal(np.asarray(out), np.arange(N, dtype=np.float32) + k)
    sycl.free(out, q)


def test_a_rebound_global_reaches_the_next_launch(q):
    global SCALE
    out = sycl.malloc_shared(N, sycl.float32, q)
    rng = sycl.range(N)

    def body(i):
        out[i] = SCALE * sycl.float32(i)

    try:
        for k in (1.0, 2.0, 2.0, -3.0):
            SCALE = np.float32(k)
            q.parallel_for(rng, body).wait()
            np.testing.assert_array_equal(np.asarray(out),
                                          np.float32(k) * np.arange(N, dtype=np.float32))
    finally:
        SCALE = np.float32(1.0)
    sycl.free(out, q)


def test_rebound_attributes_of_a_users_class_and_module_reach_the_next_launch(q):
    """A number read as an attribute of a class or module of the user's is compiled in
    for the value it holds at each launch, like a module global."""
    out = sycl.malloc_shared(2, sycl.float32, q)

    def body(i):
        if i == 0:
            out[i] = Settings.SCALE
        else:
            out[i] = CONSTANTS.K

    try:
        for scale, k in ((1.0, 1.0), (2.0, 5.0), (2.0, 5.0), (-3.0, 0.5)):
            Settings.SCALE, CONSTANTS.K = scale, k
            q.parallel_for(2, body).wait()
            assert np.asarray(out).tolist() == [scale, k]
    finally:
        Settings.SCALE, CONSTANTS.K = 1.0, 1.0
    sycl.free(out, q)


def test_compiled_in_numbers_tell_negative_zero_and_an_int_from_a_float_apart(q):
    """Numbers compiled into a kernel key it by type and exact value: -0.0 is not 0.0,
    and 3.0 times an int32 is float arithmetic where 3 times it wraps in int32."""
    global ZERO, FACTOR
    out = sycl.malloc_shared(1, sycl.float32, q)
    big = sycl.malloc_shared(1, sycl.int32, q)
    big[0] = 1_000_000_000
    wrapped = np.float32(-1294967296)  # 3 * 10**9 in int32

    def store_zero(i):
        out[i] = ZERO

    def times_factor(i):
        out[i] = FACTOR * big[i]

    try:
        for z in (0.0, -0.0, 0.0):
            ZERO = z
            q.parallel_for(1, store_zero).wait()
            assert np.signbit(out[0]) == np.signbit(z)
        for f, want in ((3, wrapped), (3.0, np.float32(3e9)), (3, wrapped)):
            FACTOR = f
            q.parallel_for(1, times_factor).wait()
            assert out[0] == want, (f, out[0])
    finally:
        ZERO, FACTOR = 0.0, 3
    for t, want in (((3,), wrapped), ((3.0,), np.float32(3e9))):
        def captured_tuple(i):
            out[i] = t[0] * big[i]  # noqa: B023 (launched at once)
        q.parallel_for(1, captured_tuple).wait()
        assert out[0] == want, (t, out[0])
    sycl.free(out, q)
    sycl.free(big, q)


class Limits:  # a user's class whose class method the kernel calls
    TOP = 7.0

    @classmethod
    def top(cls) -> float:
        return cls.TOP


def test_a_class_method_reads_its_class_afresh_at_each_launch(q):
    out = sycl.malloc_shared(1, sycl.float32, q)

    def body(i):
        out[i] = Limits.top()

    try:
        for top in (7.0, 11.0, 11.0, -2.0):
            Limits.TOP = top
            q.parallel_for(1, body).wait()
            assert out[0] == top
    finally:
        Limits.TOP = 7.0
    sycl.free(out, q)


def test_values_compiled_in_are_keyed_once_per_change_and_compile_once(q, monkeypatch):
    """A kernel compiled for captured values (a class's numbers, a list) finds its first
    variant without compiling again, and launches bringing the very same values again skip
    keying them; a tuple of lists or arrays, which keys nothing, still launches."""
    compiles, keyed = [], []
    real_compile, real_key = plans.load_or_compile, plans.value_key
    monkeypatch.setattr(plans, "load_or_compile",
                        lambda *a: compiles.append(a[2]) or real_compile(*a))
    monkeypatch.setattr(plans, "value_key", lambda v: keyed.append(v) or real_key(v))
    out = sycl.malloc_shared(2, sycl.float32, q)

    def scaled(i):
        out[i] = sycl.float32(i) * Settings.SCALE

    for _ in range(5):
        q.parallel_for(2, scaled).wait()
    assert np.asarray(out).tolist() == [0.0, 1.0]
    assert len(compiles) == 1 and len(keyed) == 1  # the first launch's, once
    Settings.SCALE = 3.0
    try:
        q.parallel_for(2, scaled).wait()
    finally:
        Settings.SCALE = 1.0
    assert np.asarray(out).tolist() == [0.0, 3.0] and len(compiles) == 2
    steps = [1.0, 2.0]
    tables = ([4.0, 5.0], np.array([6.0]))

    def from_lists(i):
        out[i] = steps[1] + tables[0][1]

    del compiles[:]
    q.parallel_for(2, from_lists).wait()
    assert np.asarray(out).tolist() == [7.0, 7.0] and len(compiles) == 1
    sycl.free(out, q)


def test_a_fresh_allocation_each_launch_is_the_one_written(q):
    rng = sycl.range(N)
    kept = []
    for k in range(4):
        out = sycl.malloc_shared(N, sycl.int32, q)
        np.asarray(out)[:] = -1

        def body(i):
            out[i] = i * 10 + k  # noqa: B023 (launched before the loop rebinds them)

        q.parallel_for(rng, body).wait()
        kept.append((out, k))
    for out, k in kept:
        np.testing.assert_array_equal(np.asarray(out), np.arange(N) * 10 + k)
        sycl.free(out, q)


def test_launches_alternating_between_two_pointers_write_each_in_turn(q):
    """A launch that captures the very objects of an earlier one (A, then B, then A
    again) runs with A's arguments, not with those of the launch just before."""
    rng = sycl.range(N)
    a = sycl.malloc_shared(N, sycl.int32, q)
    b = sycl.malloc_shared(N, sycl.int32, q)
    np.asarray(a)[:] = 0
    np.asarray(b)[:] = 0

    def launcher(out, step):
        def body(i):
            out[i] = out[i] + step
        return body

    for _ in range(3):
        q.parallel_for(rng, launcher(a, 1))
        q.parallel_for(rng, launcher(b, 10))
    q.wait()
    np.testing.assert_array_equal(np.asarray(a)[:N], np.full(N, 3))
    np.testing.assert_array_equal(np.asarray(b)[:N], np.full(N, 30))
    sycl.free(a, q)
    sycl.free(b, q)


def test_a_pointer_of_another_element_type_compiles_another_kernel(q):
    rng = sycl.range(N)
    results = []
    for dtype in (sycl.float32, sycl.int32, sycl.float32, sycl.uint8):
        out = sycl.malloc_shared(N, dtype, q)

        def body(i):
            out[i] = 3  # noqa: B023

        q.parallel_for(rng, body).wait()
        results.append(np.asarray(out).copy())
        sycl.free(out, q)
    for r, dtype in zip(results, (np.float32, np.int32, np.float32, np.uint8), strict=True):
        assert r.dtype == dtype
        np.testing.assert_array_equal(r, np.full(N, 3, dtype))


def test_the_same_launch_object_on_a_freed_pointer_is_refused(q):
    out = sycl.malloc_shared(N, sycl.float32, q)
    rng = sycl.range(N)

    def body(i):
        out[i] = 1.0

    q.parallel_for(rng, body).wait()
    q.parallel_for(rng, body).wait()
    sycl.free(out, q)
    with pytest.raises(sycl.exception) as err:
        q.parallel_for(rng, body)
    assert err.value.code() == sycl.errc.invalid
    assert "freed" in str(err.value)


def test_alternating_launch_shapes_each_cover_their_own_range(q):
    out = sycl.malloc_shared(4 * N, sycl.int32, q)
    small, large = sycl.range(N), sycl.nd_range((4 * N,), (64,))

    def plain(i):
        out[i] = out[i] + 1

    def grouped(it):
        i = it.get_global_id(0)
        out[i] = out[i] + 100

    np.asarray(out)[:] = 0
    for _ in range(3):
        q.parallel_for(small, plain).wait()
        q.parallel_for(large, grouped).wait()
        q.parallel_for(sycl.range(2 * N), plain).wait()
    expect = np.full(4 * N, 300)
    expect[:N] += 3
    expect[:2 * N] += 3
    np.testing.assert_array_equal(np.asarray(out), expect)
    sycl.free(out, q)


def test_repeated_identical_launches_accumulate(ordered_q):
    q = ordered_q
    out = sycl.malloc_shared(N, sycl.float32, q)
    np.asarray(out)[:] = 0
    rng = sycl.range(N)

    def body(i):
        out[i] = out[i] + 0.5

    events = [q.parallel_for(rng, body) for _ in range(64)]
    sycl.event.wait(events)
    np.testing.assert_array_equal(np.asarray(out), np.full(N, 32.0, np.float32))
    sycl.free(out, q)


def test_repeated_free_function_launches_with_the_same_arguments_accumulate(q):
    x = sycl.malloc_shared(N, sycl.float32, q)
    np.asarray(x)[:] = 0
    ndr = sycl.nd_range((N,), (64,))
    v = 0.25
    for _ in range(20):
        syclexp.nd_launch(q, ndr, add_scaled, x, v).wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 5.0, np.float32))
    sycl.free(x, q)


def test_free_function_arguments_changing_between_launches_each_reach_their_launch(q):
    a = sycl.malloc_shared(N, sycl.float32, q)
    b = sycl.malloc_shared(N, sycl.float32, q)
    np.asarray(a)[:] = 0
    np.asarray(b)[:] = 0
    ndr = sycl.nd_range((N,), (64,))
    for k in range(4):
        syclexp.nd_launch(q, ndr, add_scaled, a, 1.0).wait()
        syclexp.nd_launch(q, ndr, add_scaled, a, float(k)).wait()  # a new value object
        syclexp.nd_launch(q, ndr, add_scaled, b, 1.0).wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(N, 4 + 0 + 1 + 2 + 3, np.float32))
    np.testing.assert_array_equal(np.asarray(b), np.full(N, 4.0, np.float32))
    sycl.free(a, q)
    sycl.free(b, q)


def test_a_rebound_global_reaches_the_next_free_function_launch(q):
    global SCALE
    x = sycl.malloc_shared(N, sycl.float32, q)
    ndr = sycl.nd_range((N,), (64,))
    v = 1.0
    try:
        total = 0.0
        np.asarray(x)[:] = 0
        for k in (1.0, 2.0, 2.0, -3.0):
            SCALE = np.float32(k)
            syclexp.nd_launch(q, ndr, add_scaled, x, v).wait()
            total += k
            np.testing.assert_array_equal(np.asarray(x), np.full(N, total, np.float32))
    finally:
        SCALE = np.float32(1.0)
    sycl.free(x, q)


def test_the_same_free_function_arguments_on_a_freed_pointer_are_refused(q):
    x = sycl.malloc_shared(1, sycl.int32, q)
    np.asarray(x)[:] = 0
    for _ in range(3):
        syclexp.single_task(q, add_one, x).wait()
    assert int(np.asarray(x)[0]) == 3
    sycl.free(x, q)
    with pytest.raises(sycl.exception) as err:
        syclexp.single_task(q, add_one, x)
    assert err.value.code() == sycl.errc.invalid
    assert "freed" in str(err.value)


@pytest.mark.parametrize("dims", [1, 2])
def test_a_new_size_each_launch_reuses_the_plan_s_variants(q, dims):
    """Sizes that change at every launch, and sizes that come back (A, B, A, B: each
    launch's command has its own work-group counts and range arguments), run the last
    plan's command with their sizes, under no plan of their own; a size launched twice
    running gets a plan made from the last one's variants and prepared kernel, and then
    repeats. Each launch writes its own range (the kernel reads it) over exactly its
    items, a guard cutting rounded work-groups."""
    side = 70
    out = sycl.malloc_shared(side * side, sycl.int32, q)

    def write(it):
        k = it.get_linear_id()
        out[k] = it.get_range(0) * 1000 + k % 7

    sizes = [(n,) for n in (1000, 1001, 1002, 1001, 1000, 999)] if dims == 1 else \
        [(n, 50) for n in (40, 41, 42, 41, 40, 39)]
    q.parallel_for(sycl.range(*sizes[0]), write).wait()
    resized, made = plans.WAYS.resized, plans.WAYS.plans
    new_sizes = plans.WAYS.new_sizes

    def launch(size: tuple) -> None:
        count = int(np.prod(size))
        out[:side * side] = -1
        q.parallel_for(sycl.range(*size), write).wait()
        got = np.asarray(out)[:side * side]
        np.testing.assert_array_equal(got[:count], size[0] * 1000 + np.arange(count) % 7)
        assert (got[count:] == -1).all()

    for size in sizes:
        launch(size)
    # the first size is the plan's, which stays the kernel's: it repeats; the others
    # run its command resized
    assert plans.WAYS.plans == made and plans.WAYS.resized == resized
    assert plans.WAYS.new_sizes - new_sizes == sum(s != sizes[0] for s in sizes)
    new_sizes = plans.WAYS.new_sizes
    for _ in range(3):  # resized, resized with a plan made, then a repeat of that plan
        launch(sizes[1])
    assert plans.WAYS.plans == made and plans.WAYS.resized - resized == 1
    assert plans.WAYS.new_sizes - new_sizes == 2


RESIZED_SCALE = 1.0  # a module global rebound between sizes (compiled in: a new kernel)


@pytest.mark.parametrize("change", ["nothing", "scalar", "pointer", "global", "freed"])
def test_a_new_size_after_a_change_sees_the_change(q, change):
    """A launch of a new size takes the last launch's command with its sizes packed in
    only while its captures are the very objects of that launch: a new number, another
    array, a rebound global each reach the kernel, and a freed pointer raises."""
    global RESIZED_SCALE
    RESIZED_SCALE = 1.0
    n, m = 1000, 600  # sizes of the same launch facts (work-group size, no coarsening)
    a = sycl.malloc_shared(n, sycl.float32, q)
    b = sycl.malloc_shared(n, sycl.float32, q)
    a[:], b[:] = 0, 0
    target, step = a, 1.0

    def bump(i):
        target[i] = target[i] + step * RESIZED_SCALE

    q.parallel_for(sycl.range(n), bump).wait()
    new_sizes = plans.WAYS.new_sizes
    if change == "scalar":
        step = 2.0
    elif change == "pointer":
        target = b
    elif change == "global":
        RESIZED_SCALE = 5.0
    elif change == "freed":
        sycl.free(a, q)
        with pytest.raises(sycl.exception, match="freed"):
            q.parallel_for(sycl.range(m), bump)
        sycl.free(b, q)
        return
    q.parallel_for(sycl.range(m), bump).wait()
    added = {"nothing": 1.0, "scalar": 2.0, "pointer": 0.0, "global": 5.0}[change]
    expected = np.ones(n, np.float32)
    expected[:m] += added
    np.testing.assert_array_equal(np.asarray(a), expected)
    if change == "pointer":
        np.testing.assert_array_equal(np.asarray(b)[:m], 1.0)
        assert (np.asarray(b)[m:] == 0).all()
    assert plans.WAYS.new_sizes - new_sizes == (change == "nothing")
    RESIZED_SCALE = 1.0
    sycl.free(a, q)
    sycl.free(b, q)


def test_a_new_size_on_a_queue_of_another_context_checks_its_pointers(q):
    """The last launch's pointers were checked against its context only: a launch of a
    new size through a queue of another context takes the full way, which refuses memory
    of the first context, rather than that launch's command resized."""
    n, m = 1000, 600
    a = sycl.malloc_shared(n, sycl.float32, q)
    a[:] = 0

    def bump(i):
        a[i] = a[i] + 1.0

    q.parallel_for(sycl.range(n), bump).wait()
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    new_sizes = plans.WAYS.new_sizes
    with pytest.raises(sycl.exception, match="another context") as err:
        other.parallel_for(sycl.range(m), bump)
    assert err.value.code() == sycl.errc.invalid
    assert plans.WAYS.new_sizes == new_sizes
    q.parallel_for(sycl.range(m), bump).wait()  # its own context
    expected = np.ones(n, np.float32)
    expected[:m] += 1
    np.testing.assert_array_equal(np.asarray(a), expected)
    sycl.free(a, q)


RESIZED_OFFSET = syclexp.device_global(sycl.float32)


def test_a_new_size_of_a_kernel_using_a_device_global_reads_its_new_value(q):
    """A kernel using a device_global packs its arguments at every launch (its address is
    looked up per device and bundle), so it never runs the last launch's command
    resized: a value copied in between reaches the launch of the new size."""
    n, m = 1000, 600
    out = sycl.malloc_shared(n, sycl.float32, q)
    out[:] = -1
    q.copy(np.array([5.0], np.float32), RESIZED_OFFSET).wait()

    def offset(i):
        out[i] = RESIZED_OFFSET.get() + i

    q.parallel_for(sycl.range(n), offset).wait()
    np.testing.assert_array_equal(np.asarray(out), 5.0 + np.arange(n))
    q.copy(np.array([100.0], np.float32), RESIZED_OFFSET).wait()
    new_sizes = plans.WAYS.new_sizes
    q.parallel_for(sycl.range(m), offset).wait()
    got = np.asarray(out)
    np.testing.assert_array_equal(got[:m], 100.0 + np.arange(m))
    np.testing.assert_array_equal(got[m:], 5.0 + np.arange(m, n))
    assert plans.WAYS.new_sizes == new_sizes
    sycl.free(out, q)


def test_new_sizes_of_an_nd_range_with_an_offset_and_of_a_free_function(q):
    """nd_ranges of new global sizes (the same work-group size and offset): each launch's
    ids, offset and range reach the kernel, closure and free function kernel alike (the
    same arguments tuple each launch)."""
    out = sycl.malloc_shared(4 * 64, sycl.int32, q)

    def write(it):
        g = it.get_global_id(0)
        out[g] = it.get_global_range(0) * 1000 + g % 7

    new_sizes = plans.WAYS.new_sizes
    for n in (64, 96, 32, 96):  # under 4 work-groups' items: none coarsened
        out[:] = -1
        q.parallel_for(sycl.nd_range((n,), (32,), (16,)), write).wait()
        got = np.asarray(out)
        np.testing.assert_array_equal(got[16:16 + n], n * 1000 + np.arange(16, 16 + n) % 7)
        assert (got[:16] == -1).all() and (got[16 + n:] == -1).all()
    assert plans.WAYS.new_sizes - new_sizes == 3

    x = sycl.malloc_shared(64, sycl.float32, q)
    x[:] = 0
    args = (x, np.float32(1.0))
    new_sizes = plans.WAYS.new_sizes
    for n in (48, 32, 16, 32):
        syclexp.nd_launch(q, sycl.nd_range((n,), (16,)), add_scaled, *args)
    q.wait()
    assert plans.WAYS.new_sizes - new_sizes == 3  # the free function layer's tuple kept
    expected = np.zeros(64, np.float32)
    for n in (48, 32, 16, 32):
        expected[:n] += 1
    np.testing.assert_array_equal(np.asarray(x), expected)
    sycl.free(out, q)
    sycl.free(x, q)


def test_sizes_coming_again_in_turn_see_every_change(q):
    """Sizes launched in turn, round after round (a shrinking active set each step), find
    the launch of their size worked out in the first round, as long as the captures are
    the very objects of the last launch: a new number or another array between rounds
    reaches every size after it, and a freed pointer raises for a size seen before."""
    n, sizes = 1000, (1000, 900, 800, 700)
    a = sycl.malloc_shared(n, sycl.float32, q)
    b = sycl.malloc_shared(n, sycl.float32, q)
    a[:], b[:] = 0, 0
    target, step = a, 1.0

    def bump(i):
        target[i] = target[i] + step

    expected = {"a": np.zeros(n, np.float32), "b": np.zeros(n, np.float32)}
    new_sizes = plans.WAYS.new_sizes
    for name, value in (("a", 1.0), ("a", 1.0), ("a", 2.0), ("b", 2.0), ("b", 3.0)):
        target, step = (a if name == "a" else b), value
        for s in sizes:
            q.parallel_for(sycl.range(s), bump)
            expected[name][:s] += value
        q.wait()
    np.testing.assert_array_equal(np.asarray(a), expected["a"])
    np.testing.assert_array_equal(np.asarray(b), expected["b"])
    assert plans.WAYS.new_sizes - new_sizes == 5 * (len(sizes) - 1)
    sycl.free(b, q)
    with pytest.raises(sycl.exception, match="freed"):
        q.parallel_for(sycl.range(sizes[2]), bump)
    sycl.free(a, q)


def add_to(out, i):
    out[i] = out[i] + 1.0


def test_a_size_coming_again_names_the_closure_launched(q):
    """A new closure of the same code each launch (a lambda in a loop) runs a size seen
    before from what was worked out for it, under its own name: the command's origin is
    that closure, not the one launched when the size came first."""
    n = 1000
    out = sycl.malloc_shared(n, sycl.float32, q)
    out[:] = 0
    device, context = q.get_device(), q.get_context()
    sizes = (1000, 900, 800, 700, 900, 800, 700)  # the plan's size, then others in turn
    new_sizes = plans.WAYS.new_sizes
    for s in sizes:
        fn = lambda i: add_to(out, i)  # a new closure each launch
        command = build_launch(device, fn, sycl.range(s), None, context)
        assert command.origin.pyfn is fn
        q.execute(command, []).wait()
    assert plans.WAYS.new_sizes - new_sizes == len(sizes) - 1
    expected = np.zeros(n, np.float32)
    for s in sizes:
        expected[:s] += 1
    np.testing.assert_array_equal(np.asarray(out), expected)
    sycl.free(out, q)


@pytest.mark.parametrize("spelling", ["new range", "int", "tuple", "new nd_range"])
def test_a_new_launch_object_with_the_same_values_finds_the_plan(q, spelling):
    """`q.parallel_for(sycl.range(n), body)` with a new range each call (the common
    spelling), a plain int or tuple, or a new nd_range: one plan for every launch, found by
    the launch's values; a range of other values gets a plan of its own, or runs the last
    plan's command resized."""
    made, resized, new_sizes = plans.WAYS.plans, plans.WAYS.resized, plans.WAYS.new_sizes
    out = sycl.malloc_shared(N, sycl.int32, q)
    q.memset(out, 0, N * 4).wait()

    def by_id(i):
        out[i] = out[i] + 1

    def by_nd_item(it):
        g = it.get_global_id(0)
        out[g] = out[g] + 1

    body = by_nd_item if spelling == "new nd_range" else by_id

    launch = {"new range": lambda n: sycl.range(n), "int": lambda n: n,
              "tuple": lambda n: (n,), "new nd_range": lambda n: sycl.nd_range((n,), (16,))}
    for _ in range(5):
        q.parallel_for(launch[spelling](N), body).wait()
    assert plans.WAYS.plans - made == 1
    q.parallel_for(launch[spelling](N // 2), body).wait()
    assert plans.WAYS.plans - made + plans.WAYS.resized - resized + \
        plans.WAYS.new_sizes - new_sizes == 2
    expected = np.full(N, 5, np.int32)
    expected[: N // 2] += 1
    np.testing.assert_array_equal(np.asarray(out), expected)
    sycl.free(out, q)


def test_a_new_accessor_over_the_same_memory_reuses_the_last_command(q):
    """Command groups make a new accessor each time: one over the same buffer, region and
    mode packs the same arguments, so the launch returns its last command; another
    buffer, region or a released buffer is noticed."""
    first = sycl.buffer(np.zeros(64, np.float32))
    second = sycl.buffer(np.zeros(64, np.float32))
    commands = []

    def add_one(buf, **ranged):
        def cgf(h):
            a = sycl.accessor(buf, h, **ranged)

            def k(i):
                a[i] += 1.0
            h.parallel_for(sycl.range(8), k)
            commands.append(h.command)
        return cgf
    for _ in range(3):
        q.submit(add_one(first))
    assert commands[1] is commands[2]
    q.submit(add_one(second))
    q.submit(add_one(first, access_range=sycl.range(8), access_offset=sycl.id(8)))
    assert len({id(c) for c in commands[2:]}) == 3
    with sycl.host_accessor(first, sycl.read_only) as v:
        assert (v[:8] == 3).all() and (v[8:16] == 1).all() and (v[16:] == 0).all()
    with sycl.host_accessor(second, sycl.read_only) as v:
        assert (v[:8] == 1).all() and (v[8:] == 0).all()
    first.release()
    with pytest.raises(sycl.exception, match="released"):
        q.submit(add_one(first))


def test_a_loop_over_a_few_arrays_launches_their_commands_again(q):
    arrays = [sycl.malloc_device(16, np.float32, q) for _ in range(3)]
    for x in arrays:
        q.fill(x, np.float32(0), 16)
    q.wait()
    commands = []

    def add_one(x):
        def cgf(h):
            def k(i):
                x[i] += 1.0
            h.parallel_for(sycl.range(16), k)
            commands.append(h.command)
        return cgf
    for _ in range(3):
        for x in arrays:
            q.submit(add_one(x))
    q.wait()
    assert commands[0:3] == commands[3:6] == commands[6:9]
    assert len({id(c) for c in commands}) == 3
    for x in arrays:
        out = np.zeros(16, np.float32)
        q.memcpy(out, x, out.nbytes).wait()
        assert (out == 3).all()
        sycl.free(x, q)


def adding_one(buf: sycl.buffer, commands: list):
    """A command group adding 1 to each of the buffer's 16 floats, keeping its command."""
    def cgf(h):
        a = sycl.accessor(buf, h)

        def k(i):
            a[i] += 1.0
        h.parallel_for(sycl.range(16), k)
        commands.append(h.command)
    return cgf


def loop_over_buffers(q, rounds: int) -> tuple[list, list, Callable]:
    """Three buffers each added one to `rounds` times in turn: (buffers, the commands
    their command groups made, the command group function of a buffer)."""
    buffers = [sycl.buffer(np.zeros(16, np.float32)) for _ in range(3)]
    commands = []

    def add_one(buf):
        return adding_one(buf, commands)
    for _ in range(rounds):
        for buf in buffers:
            q.submit(add_one(buf))
    return buffers, commands, add_one


def test_a_loop_over_a_few_buffers_launches_their_commands_again(q):
    buffers, commands, add_one = loop_over_buffers(q, 3)
    assert [id(c) for c in commands[0:3]] == [id(c) for c in commands[6:9]]
    assert len({id(c) for c in commands}) == 3
    for buf in buffers:
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert (v == 3).all()
    buffers[1].release()
    with pytest.raises(sycl.exception, match="released"):
        q.submit(add_one(buffers[1]))


def test_a_chain_on_one_buffer_after_a_loop_over_others_repeats_at_once(q):
    """A loop over a few buffers finds each one's command by its accessor's launch key,
    and the command found becomes the plan's last launch: a chain of command groups on
    one buffer after the loop repeats it after identity checks alone, and a chain on
    another buffer still finds that buffer's command."""
    buffers, commands, add_one = loop_over_buffers(q, 2)
    found = plans.WAYS.by_accessors
    for _ in range(4):
        q.submit(add_one(buffers[0]))
    # the chain's first command group looks among them; the others repeat it
    assert plans.WAYS.by_accessors - found == 1
    assert all(c is commands[0] for c in commands[-4:])
    for _ in range(2):
        q.submit(add_one(buffers[1]))
    assert commands[-1] is commands[-2] is commands[1]
    for buf, want in zip(buffers, (6, 4, 2), strict=True):
        with sycl.host_accessor(buf, sycl.read_only) as v:
            assert (v == want).all()


def test_a_reinterpreted_buffer_runs_the_kernel_of_its_element_type(q):
    """A reinterpretation of a buffer to an element type of the same size has the
    buffer's memory and region, so its accessor's launch values are the same: the kernel
    compiled for the other element type must not run again (float + 1, then int + 1 on
    the float's bits)."""
    a = np.arange(16, dtype=np.float32)
    with sycl.buffer(a) as buf:
        for view in (buf, buf.reinterpret(np.int32), buf):
            def cgf(h, view=view):
                acc = sycl.accessor(view, h)

                def k(i):
                    acc[i] = acc[i] + 1
                h.parallel_for(sycl.range(16), k)
            q.submit(cgf)
    want = ((np.arange(16, dtype=np.float32) + 1).view(np.int32) + 1).view(np.float32) + 1
    np.testing.assert_array_equal(a.view(np.int32), want.view(np.int32))


@sycl.struct
class _Plus1:
    v: sycl.float32

    def bump(self):
        return self.v + 1.0


@sycl.struct
class _Plus100:
    v: sycl.float32

    def bump(self):
        return self.v + 100.0


def test_a_buffer_reinterpreted_as_a_struct_twin_runs_the_twins_kernel(q):
    """Two struct classes with the same fields are equal numpy dtypes but other kernels
    (their methods differ): a reinterpretation as the twin over the same memory and
    region must not repeat the first class's command."""
    data = np.zeros(8, _Plus1.dtype)

    def bump(acc):
        def k(i):
            e = acc[i]
            e.v = e.bump()
            acc[i] = e
        return k

    with sycl.buffer(data) as buf:
        for view in (buf, buf.reinterpret(_Plus100.dtype), buf):
            q.submit(lambda h, view=view: h.parallel_for(
                sycl.range(8), bump(sycl.accessor(view, h))))
    np.testing.assert_array_equal(data["v"], np.full(8, 102, np.float32))


@syclexp.nd_range_kernel(1)
def _add_to(x: sycl.ptr[sycl.float32], v: sycl.float32):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    x[i] = x[i] + v


@pytest.mark.parametrize("spelling", ["same range object", "new scalar each launch",
                                      "nd_launch, same arguments", "nd_launch, new scalar"])
def test_a_settled_launch_through_a_queue_of_another_context_is_refused(q, spelling):
    """However settled a launch is (its command repeated, a streak of new values, an
    argument ring), the same launch through a queue of another context takes the full
    way and refuses memory of the first context; the first context's launches go on."""
    n, launches = 256, 40
    a = sycl.malloc_shared(n, sycl.float32, q)
    a[:] = 0
    rng, r = sycl.range(n), sycl.nd_range((n,), (64,))
    args = (a, np.float32(1.0))
    delta = 1.0

    def bump(i):
        a[i] = a[i] + delta

    def launch(queue, k):
        nonlocal delta
        if spelling == "same range object":
            return queue.parallel_for(rng, bump)
        if spelling == "new scalar each launch":
            delta = 1.0 + k
            return queue.parallel_for(rng, bump)
        if spelling == "nd_launch, same arguments":
            return syclexp.nd_launch(queue, r, _add_to, *args)
        return syclexp.nd_launch(queue, r, _add_to, a, np.float32(1.0 + k))

    want = 0.0
    for k in range(launches):
        launch(q, k)
        want += 1.0 if spelling in ("same range object", "nd_launch, same arguments") \
            else 1.0 + k
    q.wait()
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    with pytest.raises(sycl.exception, match="another context") as err:
        launch(other, launches)
    assert err.value.code() == sycl.errc.invalid
    launch(q, launches).wait()
    want += 1.0 if spelling in ("same range object", "nd_launch, same arguments") \
        else 1.0 + launches
    np.testing.assert_array_equal(np.asarray(a), np.full(n, want, np.float32))
    sycl.free(a, q)
