"""What a SYCL programmer porting code tries first, end to end on the default device:
the API as DESIGN.md spells it, every USM kind in kernels, dependencies, odd and large
ranges, and the errors users cause."""

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


def test_depends_on_rejects_what_is_not_an_event(q):
    out = sycl.malloc_shared(8, sycl.int32, q)

    def body(i):
        out[i] = 1

    for bad in (1, "e", None, [None]):
        if bad is None:
            _raises(sycl.errc.invalid, q.submit,
                    lambda h: (h.depends_on(None), h.parallel_for(sycl.range(8), body)))
        else:
            _raises(sycl.errc.invalid, q.parallel_for, sycl.range(8), body, depends_on=bad)
    assert not np.asarray(out).any()  # nothing ran
    sycl.free(out, q)


def test_submit_needs_a_command_group_function(q):
    _raises(sycl.errc.invalid, q.submit, 5)
    _raises(sycl.errc.invalid, q.submit, sycl.range(4))


# -- USM ---------------------------------------------------------------------------------------

def test_copy_between_different_element_types_is_invalid(q):
    d = sycl.malloc_device(16, sycl.float32, q)
    q.copy(np.arange(16, dtype=np.float32), d, 16).wait()
    wide = np.zeros(16, np.float64)
    msg = _raises(sycl.errc.invalid, q.copy, d, wide, 16)
    assert "float32" in msg and "float64" in msg
    ints = sycl.malloc_shared(16, sycl.int32, q)
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
    k = syclexp.kernel_function(iota)
    ndr = sycl.nd_range((16,), (16,))
    for bad in ("x", "1.5", None, [1.0]):
        _raises(sycl.errc.invalid, syclexp.nd_launch, q, ndr, k, bad, out)
    assert not np.asarray(out).any()
    syclexp.nd_launch(q, ndr, k, np.float64(0.25), out).wait()
    assert np.array_equal(np.asarray(out), np.arange(16, dtype=np.float32) + 0.25)
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
