"""What a SYCL programmer porting code tries first, end to end on the default device:
the API as DESIGN.md spells it, every USM kind in kernels, dependencies, odd and large
ranges, and the errors users cause."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item


def _raises(code: sycl.errc, fn, *args, **kwargs) -> str:
    with pytest.raises(sycl.exception) as err:
        fn(*args, **kwargs)
    assert err.value.code() is code, str(err.value)
    return str(err.value)


# -- kernels that bind no buffer --------------------------------------------------------------

def test_nd_range_kernel_with_an_empty_body_runs(ordered_q):
    out = sycl.malloc_shared(1024, sycl.int32, ordered_q)

    def write(i):
        out[i] = i * 3

    ordered_q.parallel_for(sycl.range(1024), write)
    e = ordered_q.parallel_for(sycl.nd_range((1024,), (64,)), lambda it: ...)
    ordered_q.parallel_for(sycl.range(1024), lambda i: None)
    ordered_q.single_task(lambda: None)
    ordered_q.wait()
    assert e.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete
    assert np.array_equal(np.asarray(out), np.arange(1024) * 3)
    sycl.free(out, ordered_q)


def test_kernel_using_only_work_group_memory_runs(q):
    def body(it):
        tile = syclexp.work_group_memory(sycl.int32, (64,))
        tile[it.get_local_id(0)] = it.get_local_id(0)
        sycl.group_barrier(it.get_group())

    e = q.parallel_for(sycl.nd_range((256,), (64,)), body)
    e.wait_and_throw()
    assert e.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete


# -- events ------------------------------------------------------------------------------------

def test_default_constructed_event_is_complete():
    e = sycl.event()
    e.wait()
    e.wait_and_throw()
    assert e.get_info(sycl.info.event.command_execution_status) is \
        sycl.info.event_command_status.complete
    sycl.event.wait([e, sycl.event()])


def test_static_event_wait_and_throw_takes_a_list(q):
    out = sycl.malloc_shared(256, sycl.float32, q)

    def body(i):
        out[i] = i * 0.5

    e1 = q.parallel_for(sycl.range(256), body)
    e2 = q.submit(lambda h: (h.depends_on(e1), h.host_task(lambda: None)))
    sycl.event.wait_and_throw([e1, e2])
    assert np.array_equal(np.asarray(out), np.arange(256, dtype=np.float32) * 0.5)

    def fail():
        raise ValueError("host task failed")

    own = sycl.queue(async_handler=lambda errors: None)  # keeps the error out of q
    bad = own.submit(lambda h: h.host_task(fail))
    with pytest.raises(ValueError, match="host task failed"):
        sycl.event.wait_and_throw([e1, bad])
    sycl.free(out, q)


def test_an_asynchronous_error_is_reported_once():
    def fail():
        raise ValueError("host task failed")

    q = sycl.queue()
    e = q.submit(lambda h: h.host_task(fail))
    with pytest.raises(ValueError):
        e.wait_and_throw()
    q.wait_and_throw()  # the event reported it already
    e.wait_and_throw()

    caught = []
    q = sycl.queue(async_handler=lambda errors: caught.extend(errors))
    e = q.submit(lambda h: h.host_task(fail))
    q.wait_and_throw()
    assert [str(err) for err in caught] == ["host task failed"]
    e.wait_and_throw()  # the queue's handler had it
    q.wait_and_throw()
    assert len(caught) == 1


def test_queue_takes_async_handler_and_properties_in_sycl_order():
    caught = []

    def handler(errors):
        caught.extend(errors)

    def fail():
        raise ValueError("host task failed")

    in_order = [sycl.property.queue.in_order()]
    queues = [sycl.queue(sycl.default_selector_v, handler, in_order),
              sycl.queue(sycl.device(), handler),
              sycl.queue(sycl.context(), sycl.device(), handler, in_order)]
    for q in queues:
        q.submit(lambda h: h.host_task(fail))
        q.wait_and_throw()
    assert len(caught) == 3 and all(str(e) == "host task failed" for e in caught)
    assert [q.is_in_order() for q in queues] == [True, False, True]
    assert sycl.queue(in_order).is_in_order()
    _raises(sycl.errc.invalid, sycl.queue, sycl.device(), 5)
    _raises(sycl.errc.invalid, sycl.queue, sycl.device(), handler, handler)


def test_queues_without_a_handler_use_their_contexts():
    caught = []
    ctx = sycl.context(sycl.device(), async_handler=lambda errors: caught.extend(errors))

    def fail():
        raise ValueError("host task failed")

    q = sycl.queue(ctx, sycl.device())
    q.submit(lambda h: h.host_task(fail))
    q.wait_and_throw()
    assert [str(e) for e in caught] == ["host task failed"]
    own = []
    q = sycl.queue(ctx, sycl.device(), async_handler=lambda errors: own.extend(errors))
    q.submit(lambda h: h.host_task(fail))
    q.wait_and_throw()
    assert len(own) == 1 and len(caught) == 1


def test_depends_on_rejects_what_is_not_an_event(q):
    out = sycl.malloc_shared(8, sycl.int32, q)
    np.asarray(out)[:] = 0

    def body(i):
        out[i] = 1

    for bad in (1, "e", [None], [q]):
        _raises(sycl.errc.invalid, q.parallel_for, sycl.range(8), body, depends_on=bad)
    _raises(sycl.errc.invalid, q.submit,
            lambda h: (h.depends_on(None), h.parallel_for(sycl.range(8), body)))
    assert not np.asarray(out).any()  # nothing ran
    q.parallel_for(sycl.range(8), body, depends_on=None).wait()  # None: no dependencies
    assert np.all(np.asarray(out) == 1)
    sycl.free(out, q)


def test_dependencies_before_the_kernel_in_sycl_order(q):
    a = sycl.malloc_shared(16, sycl.int32, q)
    np.asarray(a)[:] = 0

    def inc(i):
        a[i] = a[i] + 1

    def first_times_ten():
        a[0] = a[0] * 10

    e1 = q.parallel_for(sycl.range(16), inc)
    e2 = q.parallel_for(sycl.range(16), e1, inc)
    e3 = q.parallel_for(16, [e1, e2], inc)
    q.single_task(e3, first_times_ten).wait()
    q.single_task([], first_times_ten).wait()
    assert a[0] == 300 and np.all(np.asarray(a)[1:] == 3)
    sycl.free(a, q)


def test_submit_needs_a_command_group_function(q):
    _raises(sycl.errc.invalid, q.submit, 5)
    _raises(sycl.errc.invalid, q.submit, sycl.range(4))


def test_every_object_reports_the_same_backend(q):
    got = []
    q.submit(lambda h: h.host_task(lambda ih: got.append(ih.get_backend()))).wait()
    bundle = sycl.get_kernel_bundle(q.get_context(), sycl.bundle_state.executable)
    backends = [q.get_backend(), q.get_device().get_backend(), q.get_context().get_backend(),
                q.get_device().get_platform().get_backend(), bundle.get_backend(), *got]
    assert all(b is sycl.backend.vulkan for b in backends), backends
    assert sycl.backend.vulkan == "vulkan"


# -- USM ---------------------------------------------------------------------------------------

def test_copy_between_different_element_types_is_invalid(q):
    d = sycl.malloc_device(16, sycl.float32, q)
    q.copy(np.arange(16, dtype=np.float32), d, 16).wait()
    wide = np.zeros(16, np.float64)
    msg = _raises(sycl.errc.invalid, q.copy, d, wide, 16)
    assert "float32" in msg and "float64" in msg
    ints = sycl.malloc_shared(16, sycl.int32, q)
    np.asarray(ints)[:] = 0
    _raises(sycl.errc.invalid, q.copy, d, ints, 16)
    assert not wide.any() and not np.asarray(ints).any()
    # the same element type in any container copies as before
    out = np.zeros(16, np.float32)
    q.copy(d, out, 16).wait()
    assert np.array_equal(out, np.arange(16, dtype=np.float32))
    # memcpy counts bytes and takes any types
    raw = np.zeros(64, np.uint8)
    q.memcpy(raw, d, 64).wait()
    assert np.array_equal(raw.view(np.float32), out)
    sycl.free(d, q)
    sycl.free(ints, q)


def test_sizes_of_memory_operations_are_integers(q):
    d = sycl.malloc_device(16, sycl.int32, q)
    src = np.arange(16, dtype=np.int32)
    for call in (lambda: q.copy(src, d, 2.5), lambda: q.memcpy(d, src, 8.0),
                 lambda: q.memset(d, 1, 4.5), lambda: q.fill(d, np.int32(3), "4"),
                 lambda: q.prefetch(d, 1.5), lambda: q.mem_advise(d, None, 0)):
        _raises(sycl.errc.invalid, call)
    q.memset(d, 0, 64)
    q.copy(src, d, np.int64(5)).wait()
    out = np.full(16, -1, np.int32)
    q.copy(d, out, 16).wait()
    assert np.array_equal(out[:5], src[:5]) and not out[5:].any()
    sycl.free(d, q)


def test_malloc_rejects_element_types_kernels_cannot_hold(q):
    for bad in (object, str, "U4", "datetime64[s]", None, "no such type"):
        _raises(sycl.errc.invalid, sycl.malloc_shared, 4, bad, q)
    _raises(sycl.errc.invalid, sycl.malloc_device, 2.5, sycl.float32, q)
    _raises(sycl.errc.invalid, sycl.malloc_device, "8", sycl.float32, q)
    p = sycl.malloc_device(np.int64(8), np.dtype(np.float32), q)
    assert p.count == 8
    layout = np.dtype([("x", np.float32), ("n", np.int32)])
    s = sycl.malloc_shared(3, layout, q)
    s[1] = (2.5, 7)
    assert s[1]["x"] == 2.5 and s[1]["n"] == 7 and s.count == 3
    sycl.free(p, q)
    sycl.free(s, q)


def test_numpy_views_kept_past_free_stay_readable(q):
    n = 1 << 16
    a = sycl.malloc_shared(n, sycl.float32, q)
    h = sycl.malloc_host(n, sycl.int32, q)
    view, part = np.asarray(a), np.asarray(h + 8)[:100]
    view[:] = 3.0
    part[:] = 7
    sycl.free(a, q)
    sycl.free(h, q)
    assert view.sum() == 3.0 * n and np.all(part == 7)  # the memory is still mapped
    view[:] = 4.0
    assert view[5] == 4.0
    del view, part
    b = sycl.malloc_shared(n, sycl.float32, q)  # without views, free releases at once
    np.asarray(b)[:] = 1.0
    sycl.free(b, q)


def test_every_usm_kind_in_one_kernel(q):
    n = 1000
    dev = sycl.malloc_device(n, sycl.float32, q)
    host = sycl.malloc_host(n, sycl.float32, q)
    shared = sycl.malloc_shared(n, sycl.float32, q)
    generic = sycl.malloc(n, sycl.float32, q, sycl.usm.alloc.shared)
    x = np.linspace(-1, 1, n, dtype=np.float32)
    q.copy(x, dev, n).wait()
    np.asarray(host)[:] = 2 * x

    def body(i):
        shared[i] = dev[i] + host[i]
        generic[i] = dev[i] * host[i]

    q.parallel_for(sycl.range(n), body).wait()
    np.testing.assert_allclose(np.asarray(shared), 3 * x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(generic), 2 * x * x, rtol=1e-6)
    for p in (dev, host, shared, generic):
        sycl.free(p, q)


# -- free function kernels ---------------------------------------------------------------------

@syclexp.nd_range_kernel(1)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = start + sycl.float32(i)


def test_nd_launch_rejects_arguments_that_are_not_numbers(q):
    out = sycl.malloc_shared(16, sycl.float32, q)
    np.asarray(out)[:] = 0
    k = syclexp.kernel_function(iota)
    ndr = sycl.nd_range((16,), (16,))
    for bad in ("x", "1.5", None, [1.0]):
        _raises(sycl.errc.invalid, syclexp.nd_launch, q, ndr, k, bad, out)
    assert not np.asarray(out).any()
    syclexp.nd_launch(q, ndr, k, np.float64(0.25), out).wait()
    assert np.array_equal(np.asarray(out), np.arange(16, dtype=np.float32) + 0.25)
    sycl.free(out, q)


def test_kernel_properties_of_closure_kernels_are_checked(q):
    out = sycl.malloc_shared(128, sycl.int32, q)
    np.asarray(out)[:] = 0

    def body(it):
        out[it.get_global_id(0)] = it.get_local_range(0)

    ndr = sycl.nd_range((128,), (32,))
    _raises(sycl.errc.nd_range, q.parallel_for, ndr, body,
            properties=syclexp.properties(syclexp.work_group_size(64)))
    sizes = q.get_device().get_info(sycl.info.device.sub_group_sizes)
    missing = next(s for s in (4, 8, 16, 32, 64, 128) if s not in sizes)
    _raises(sycl.errc.kernel_not_supported, q.parallel_for, ndr, body,
            properties=[syclexp.sub_group_size(missing)])
    _raises(sycl.errc.invalid, q.parallel_for, ndr, body, properties=5)
    _raises(sycl.errc.invalid, q.parallel_for, ndr, body, properties=["work_group_size"])
    assert not np.asarray(out).any()
    q.parallel_for(ndr, body, properties=syclexp.properties(
        syclexp.work_group_size(32), syclexp.sub_group_size(sizes[0]))).wait()
    assert np.all(np.asarray(out) == 32)
    sycl.free(out, q)


# -- ranges ------------------------------------------------------------------------------------

def test_range_and_id_arithmetic_is_elementwise(q):
    r = sycl.range(1024, 4)
    assert r * 2 == (2048, 8) and type(r * 2) is sycl.range
    assert 2 * r == (2048, 8)
    assert r + sycl.range(1, 2) == (1025, 6)
    assert r - 1 == (1023, 3)
    assert r // 4 == (256, 1) and r % 3 == (1, 1)
    i = sycl.id(1, 2) + sycl.id(3, 4)
    assert i == (4, 6) and type(i) is sycl.id
    assert (sycl.range(8) * 2).size() == 16
    _raises(sycl.errc.invalid, lambda: sycl.range(4) + sycl.range(4, 4))
    _raises(sycl.errc.invalid, lambda: sycl.range(4) - 5)
    _raises(sycl.errc.invalid, lambda: sycl.range(4) / 2)
    out = sycl.malloc_shared(64, sycl.int32, q)
    np.asarray(out)[:] = 0

    def body(i):
        out[i] = 1

    q.parallel_for(sycl.range(16) * 2, body).wait()  # one dimension of 32, not (16, 16)
    assert np.asarray(out).sum() == 32 and np.all(np.asarray(out)[:32] == 1)
    sycl.free(out, q)


# -- the API at a glance, as DESIGN.md spells it -----------------------------------------------

def test_api_at_a_glance():
    cpu = any(d.is_cpu() for d in sycl.device.get_devices())
    q = sycl.queue(sycl.cpu_selector_v if cpu else sycl.gpu_selector_v,
                   property_list=[sycl.property.queue.in_order()])
    dev = q.get_device()
    assert dev.get_info(sycl.info.device.name) and isinstance(dev.has(sycl.aspect.fp64), bool)
    a = sycl.malloc_shared(1024, sycl.float32, q)
    d = sycl.malloc_device(1024, np.float32, q)
    np.asarray(a)[:] = np.arange(1024)
    q.memcpy(d, a, 1024 * 4).wait()
    np.asarray(a)[:] = 0
    q.copy(d, a, 1024).wait()
    assert np.array_equal(np.asarray(a), np.arange(1024))
    q.fill(d, np.float32(1.5), 1024)
    q.memset(d + 512, 0, 2048)
    q.copy(d, a, 1024).wait()
    assert np.all(np.asarray(a)[:512] == 1.5) and not np.asarray(a)[512:].any()
    assert a[3] == 1.5 and (a + 16)[0] == 1.5 and isinstance(a, sycl.ptr)
    assert sycl.get_pointer_type(a, q.get_context()) is sycl.usm.alloc.shared

    def body(i):
        a[i] = a[i] * 2.0

    e0 = q.parallel_for(sycl.range(1024), body)
    q.parallel_for(sycl.nd_range((1024,), (64,)), lambda it: ...)

    def k():
        a[0] = 42.0

    q.single_task(k, depends_on=[e0], properties=[]).wait()
    n = 1024
    q.submit(lambda h: (h.depends_on(e0), h.parallel_for(sycl.range(n), body))).wait()
    assert a[0] == 84.0 and np.all(np.asarray(a)[1:512] == 6.0)
    syclexp.nd_launch(q, sycl.nd_range((1024,), (16,)), syclexp.kernel_function(iota), 3.25, a)
    q.wait()
    assert np.array_equal(np.asarray(a), np.arange(1024, dtype=np.float32) + 3.25)

    bins = sycl.malloc_shared(16, sycl.int32, q)
    data = sycl.malloc_device(1000, sycl.int32, q)
    q.memset(bins, 0, 64)
    values = (np.arange(1000) * 7 % 16).astype(np.int32)
    q.copy(values, data, 1000)

    def hist(it):
        sycl.atomic_ref(bins + data[it.get_global_id(0)]).fetch_add(1)

    q.parallel_for(sycl.nd_range((1000,), (8,)), hist).wait()
    assert np.array_equal(np.asarray(bins), np.bincount(values, minlength=16))
    for p in (a, d, bins, data):
        sycl.free(p, q)


# -- ranges of every shape ---------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(1,), (7,), (257,), (4999,), (3, 5), (17, 33), (1000, 1),
                                   (2, 3, 5), (3, 17, 9), (1, 1, 300), (10, 11, 12)])
def test_ranges_that_are_multiples_of_nothing(q, shape):
    n = int(np.prod(shape))
    out = sycl.malloc_shared(n + 64, sycl.int32, q)
    np.asarray(out)[:] = -1
    dims = len(shape)

    if dims == 1:
        def body(it):
            out[it.get_linear_id()] = it.get_id(0)
    elif dims == 2:
        def body(it):
            out[it.get_linear_id()] = it.get_id(0) * 1000 + it.get_id(1)
    else:
        def body(it):
            out[it.get_linear_id()] = it.get_id(0) * 10000 + it.get_id(1) * 100 + it.get_id(2)

    q.parallel_for(sycl.range(*shape), body).wait()
    weights = {1: (1,), 2: (1000, 1), 3: (10000, 100, 1)}[dims]
    expected = sum(w * g for w, g in zip(weights, np.indices(shape), strict=True)).ravel()
    got = np.asarray(out)
    assert np.array_equal(got[:n], expected) and np.all(got[n:] == -1)
    sycl.free(out, q)


def test_nd_range_2d_and_3d_local_ids(q):
    out = sycl.malloc_shared(96, sycl.int32, q)

    def body(it):
        out[it.get_global_linear_id()] = it.get_local_linear_id() * 100 + it.get_group_linear_id()

    q.parallel_for(sycl.nd_range((8, 12), (4, 4)), body).wait()
    r, c = np.indices((8, 12))
    expected = ((r % 4) * 4 + c % 4) * 100 + (r // 4) * 3 + c // 4
    assert np.array_equal(np.asarray(out).reshape(8, 12), expected)
    q.parallel_for(sycl.nd_range((4, 4, 6), (2, 2, 3)), body).wait()
    x, y, z = np.indices((4, 4, 6))
    local = ((x % 2) * 2 + y % 2) * 3 + z % 3
    group = ((x // 2) * 2 + y // 2) * 2 + z // 3
    assert np.array_equal(np.asarray(out).reshape(4, 4, 6), local * 100 + group)
    sycl.free(out, q)


def test_more_than_65535_work_groups_in_x(q):
    n = 65535 * 256 + 1000  # a range kernel's groups exceed maxComputeWorkGroupCount[0]
    big = sycl.malloc_device(n, sycl.int32, q)

    def body(i):
        big[i] = i

    q.parallel_for(sycl.range(n), body).wait()
    host = np.empty(n, np.int32)
    q.copy(big, host, n).wait()
    assert np.array_equal(host, np.arange(n, dtype=np.int32))

    groups = 70000

    def by_group(it):
        big[it.get_global_id(0)] = it.get_group(0)

    q.parallel_for(sycl.nd_range((groups * 8,), (8,)), by_group).wait()
    q.copy(big, host, groups * 8).wait()
    assert np.array_equal(host[: groups * 8], np.arange(groups * 8) // 8)
    sycl.free(big, q)


def test_launches_past_32_bit_work_item_ids_are_refused(q):
    count = sycl.malloc_shared(1, sycl.int64, q)
    count[0] = 0

    def body(it):
        sycl.atomic_ref(count).fetch_add(1)

    for launch in (sycl.range(1 << 31), sycl.range(65536, 32768), sycl.range(2, 1 << 15, 1 << 15),
                   sycl.nd_range(((1 << 31) + 1024,), (1024,))):
        msg = _raises(sycl.errc.nd_range, q.parallel_for, launch, body)
        assert "2**31 - 1" in msg
    k = syclexp.kernel_function(iota)
    out = sycl.malloc_shared(16, sycl.float32, q)
    np.asarray(out)[:] = 0
    _raises(sycl.errc.nd_range, syclexp.nd_launch, q, sycl.nd_range((1 << 31,), (256,)), k,
            1.0, out)
    q.wait()
    assert count[0] == 0 and not np.asarray(out).any()
    sycl.free(count, q)
    sycl.free(out, q)


def test_zero_size_ranges_and_copies_do_nothing(q):
    out = sycl.malloc_shared(16, sycl.int32, q)
    d = sycl.malloc_device(16, sycl.int32, q)
    np.asarray(out)[:] = 5

    def body(it):
        out[0] = 99

    for launch in (sycl.range(0), sycl.range(0, 4), sycl.range(3, 0, 2),
                   sycl.nd_range((0,), (4,))):
        q.parallel_for(launch, body).wait()
    for e in (q.memcpy(d, out, 0), q.copy(out + 16, d + 16, 0), q.fill(d, np.int32(1), 0),
              q.memset(out, 0, 0), q.memcpy(None, None, 0)):
        e.wait()
    assert sycl.malloc_device(0, sycl.int32, q) is None
    assert np.all(np.asarray(out) == 5)
    sycl.free(out, q)
    sycl.free(d, q)


# -- dependencies, host tasks and profiling ----------------------------------------------------

@pytest.mark.parametrize("in_order", [False, True])
def test_host_tasks_between_kernels(in_order):
    props = [sycl.property.queue.in_order()] if in_order else []
    q = sycl.queue(property_list=props)
    x = sycl.malloc_shared(256, sycl.int32, q)
    np.asarray(x)[:] = 0
    seen = []

    def add1(i):
        x[i] = x[i] + 1

    def on_host():
        seen.append(int(x[7]))
        np.asarray(x)[:] *= 10

    e1 = q.parallel_for(sycl.range(256), add1)
    e2 = q.submit(lambda h: (h.depends_on(e1), h.host_task(on_host)))
    q.submit(lambda h: (h.depends_on(e2), h.parallel_for(sycl.range(256), add1))).wait()
    assert seen == [1] and np.all(np.asarray(x) == 11)
    sycl.free(x, q)


def test_kernel_profiling_events_are_ordered():
    q = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
    n = 1 << 18
    v = sycl.malloc_device(n, sycl.float32, q)
    q.fill(v, np.float32(3), n).wait()

    def body(i):
        v[i] = v[i] * v[i] + 1.0

    e = q.parallel_for(sycl.range(n), body)
    ev = sycl.info.event_profiling
    submit = e.get_profiling_info(ev.command_submit)
    start = e.get_profiling_info(ev.command_start)
    end = e.get_profiling_info(ev.command_end)
    assert 0 < submit <= start < end
    out = np.empty(n, np.float32)
    q.copy(v, out, n).wait()
    assert np.all(out == 10.0)
    sycl.free(v, q)


# -- errors users cause ------------------------------------------------------------------------

def test_memory_errors_name_what_went_wrong(q):
    a = sycl.malloc_shared(16, sycl.float32, q)
    d = sycl.malloc_device(16, sycl.float32, q)
    assert "overrun" in _raises(sycl.errc.invalid, q.memcpy, d, a, 17 * 4)
    assert "overrun" in _raises(sycl.errc.invalid, q.copy, np.zeros(17, np.float32), d, 17)
    _raises(sycl.errc.invalid, q.memcpy, d - 1, a, 4)
    _raises(sycl.errc.invalid, q.fill, d + 8, np.float32(0), 9)
    freed = sycl.malloc_shared(16, sycl.float32, q)

    def body(i):
        freed[i] = 1.0

    q.parallel_for(sycl.range(16), body).wait()
    assert freed[3] == 1.0
    sycl.free(freed, q)
    assert "freed" in _raises(sycl.errc.invalid, q.memcpy, d, freed, 4)
    _raises(sycl.errc.invalid, q.parallel_for, sycl.range(16), body)
    _raises(sycl.errc.invalid, lambda: freed[0])
    _raises(sycl.errc.invalid, sycl.free, freed, q)
    _raises(sycl.errc.invalid, lambda: d[0])  # device memory has no host view
    sycl.free(a, q)
    sycl.free(d, q)


def test_unsupported_python_in_a_kernel_names_file_line_and_construct(q):
    out = sycl.malloc_shared(4, sycl.int32, q)
    np.asarray(out)[:] = 0

    def body(i):
        out[i] = 1
        print(i)

    line = body.__code__.co_firstlineno + 2
    msg = _raises(sycl.errc.build, q.parallel_for, sycl.range(4), body)
    assert f"{__file__}:{line}:" in msg and "print" in msg
    assert not np.asarray(out).any()
    sycl.free(out, q)


def test_hidden_fp64_makes_float64_kernels_unsupported(q, monkeypatch):
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", "fp64")
    assert not q.get_device().has(sycl.aspect.fp64)
    x = sycl.malloc_shared(8, sycl.float64, q)
    np.asarray(x)[:] = 1.0

    def twice_plus_one(i):
        x[i] = x[i] * 2.0 + sycl.float64(1.0)

    msg = _raises(sycl.errc.kernel_not_supported, q.parallel_for, sycl.range(8),
                  twice_plus_one)
    assert "fp64" in msg
    assert np.all(np.asarray(x) == 1.0)
    q.fill(x, np.float64(2.0), 8).wait()  # copies and fills move bytes: no fp64 needed
    assert np.all(np.asarray(x) == 2.0)
    sycl.free(x, q)


# -- leaving -----------------------------------------------------------------------------------

def test_a_script_may_exit_with_kernels_in_flight(tmp_path):
    script = tmp_path / "exit_early.py"  # kernels need a source file
    script.write_text(textwrap.dedent("""
        import vksycl as sycl
        q = sycl.queue()
        a = sycl.malloc_shared(1 << 20, sycl.float32, q)
        a[0] = 1.0
        def k(i):
            a[i] = a[i] * 2.0 + 1.0
        q.parallel_for(sycl.range(1 << 20), k).wait()
        print(a[0])
        for _ in range(20):
            q.parallel_for(sycl.range(1 << 20), k)
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3.0"]


def test_kernels_reject_pointers_from_another_context(q):
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    foreign = sycl.malloc_shared(4, sycl.int32, other)

    def k(i):
        foreign[i] = 1
    with pytest.raises(sycl.exception) as err:
        q.parallel_for(sycl.range(4), k)
    assert err.value.code() == sycl.errc.invalid and "context" in str(err.value)

    @syclexp.single_task_kernel
    def store(p: sycl.ptr[sycl.int32]):
        p[0] = 7
    with pytest.raises(sycl.exception) as err:
        syclexp.single_task(q, syclexp.kernel_function(store), foreign)
    assert err.value.code() == sycl.errc.invalid
    syclexp.single_task(other, syclexp.kernel_function(store), foreign).wait()
    assert foreign[0] == 7
    sycl.free(foreign, other)


@pytest.mark.parametrize("make", [lambda: sycl.range(64.5), lambda: sycl.range("3"),
                                  lambda: sycl.id(2, 1.5), lambda: sycl.range(float("nan")),
                                  lambda: sycl.nd_range((64.5,), (8,)),
                                  lambda: sycl.nd_range((64,), (7.5,))])
def test_ranges_take_integer_sizes(make):
    """A size that is no integer is a mistake (one computed with `/`), not a size to
    truncate: refused, naming what it got. A float holding an integer is that integer."""
    with pytest.raises(sycl.exception, match="takes integer sizes, got") as e:
        make()
    assert e.value.code() == sycl.errc.invalid
    assert tuple(sycl.range(np.int64(5), True)) == (5, 1)  # numpy ints and bools are ints
    assert sycl.range(64.0) is sycl.range(64) and tuple(sycl.range(np.float32(3))) == (3,)


def test_ranges_and_ids_of_equal_sizes_are_made_once_per_class():
    """Equal sizes give the object made before, however they are spelled, but a range and
    an id of the same sizes stay objects of their own class; sizes in a list (not
    hashable) still make one."""
    r = sycl.range(4, 2)
    assert sycl.range((4, 2)) is r and sycl.range(np.int64(4), 2) is r
    i = sycl.id(4, 2)
    assert type(i) is sycl.id and type(r) is sycl.range and i is not r and i == r
    assert sycl.id(4, 2) is i
    listed = sycl.range([4, 2])
    assert type(listed) is sycl.range and tuple(listed) == (4, 2)
    assert sycl.nd_range([64], [8]).get_global_range() == sycl.range(64)
    with pytest.raises(sycl.exception, match="cannot be negative"):
        sycl.range([4, -2])
