"""device_global (seed 001): variables declared at module scope, used in kernels, copied
to and from on the host; the metadata kernels record; device_image_scope per device image
(kernel bundle); every error path. Values are computed on the default device (lavapipe)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels.launch import compiled

scope = syclexp.device_image_scope


@sycl.struct
class Particle:
    x: sycl.float32
    n: sycl.int32


# -- ports of sycl/test-e2e/DeviceGlobal ---------------------------------------------------
# each scenario runs on a variable without and with device_image_scope, as DPC++ builds each
# test twice (TestProperties)

only = syclexp.device_global(sycl.int32, shape=(4,))
only_img = syclexp.device_global(sycl.int32, shape=(4,), properties=[scope])
sub = syclexp.device_global(sycl.int32, shape=(4,))
sub_img = syclexp.device_global(sycl.int32, shape=(4,), properties=[scope])
passthrough = syclexp.device_global(sycl.int32)
passthrough_img = syclexp.device_global(sycl.int32, properties=[scope])
unused_memcpy = syclexp.device_global(sycl.int32)
unused_copy = syclexp.device_global(sycl.int32)
unused_memcpy_img = syclexp.device_global(sycl.int32, properties=[scope])
unused_copy_img = syclexp.device_global(sycl.int32, properties=[scope])


def read_back(q, g, dtype=np.int32):
    out = np.zeros(g.count, dtype)
    q.copy(g, out).wait()
    return out


@pytest.mark.parametrize("g", [only, only_img], ids=["usm", "image_scope"])
def test_device_only_write_then_read_in_another_kernel(q, mem, g):
    """device_global_device_only: one kernel writes get()[0], a later kernel reads it."""
    out = mem.zeros(1, np.int32)

    def write():
        g.get()[0] = 42

    def read():
        out[0] = g.get()[0]

    q.single_task(write).wait()
    q.single_task(read).wait()
    assert mem.view(out, 1)[0] == 42


@pytest.mark.parametrize("g", [sub, sub_img], ids=["usm", "image_scope"])
def test_subscript(q, mem, g):
    """device_global_subscript: g[2] = 1234 in one kernel, read in another."""
    out = mem.zeros(2, np.int32)

    def write():
        g[2] = 1234
        g[1] = g[2] + 1

    def read():
        out[0] = g[2]
        out[1] = g[1]

    q.single_task(write).wait()
    q.single_task(read).wait()
    assert list(mem.view(out, 2)) == [1234, 1235]


@pytest.mark.parametrize("g", [passthrough, passthrough_img], ids=["usm", "image_scope"])
def test_operator_passthrough(q, mem, g):
    """device_global_operator_passthrough: the value through get()/set()."""
    out = mem.zeros(1, np.int32)

    def arith():
        g.set(2)
        g.set(g.get() + 3)
        g.set(g.get() * g.get())
        g.set(g.get() - 3)
        g.set(25 - g.get())

    def read():
        out[0] = g.get()

    q.single_task(arith).wait()
    q.single_task(read).wait()
    assert mem.view(out, 1)[0] == 3


@pytest.mark.parametrize("m, c", [(unused_memcpy, unused_copy),
                                  (unused_memcpy_img, unused_copy_img)],
                         ids=["usm", "image_scope"])
def test_copies_of_variables_no_kernel_uses(q, m, c):
    """device_global_device_image_scope_unused: zero before any write, then what was
    written (image-scope variables no image holds live in the host instance)."""
    mread, cread = np.ones(1, np.int32), np.full(1, 2, np.int32)
    q.memcpy(mread, m)
    q.copy(c, cread)
    q.wait()
    assert mread[0] == 0 and cread[0] == 0
    q.memcpy(m, np.array([42], np.int32))
    q.copy(np.array([24], np.int32), c)
    q.wait()
    q.memcpy(mread, m)
    q.copy(c, cread)
    q.wait()
    assert mread[0] == 42 and cread[0] == 24


# -- element types, shapes, atomics --------------------------------------------------------

@sycl.struct
class Window:  # not test_pointers' Span layout: structs of one layout share a dtype
    base: sycl.ptr[sycl.float32]
    size: sycl.int32


counter = syclexp.device_global(sycl.int32)
window = syclexp.device_global(Window)
hist = syclexp.device_global(sycl.uint32, shape=(8,))
grid = syclexp.device_global(sycl.float32, shape=(3, 4))
particle = syclexp.device_global(Particle)
fscale = syclexp.device_global(sycl.float64)


def test_atomics_on_a_scalar_and_on_array_elements(q, mem):
    n = 1000
    data = mem.of(np.arange(n, dtype=np.int32) % 8)
    q.copy(np.zeros(8, np.uint32), hist).wait()
    q.copy(np.zeros(1, np.int32), counter).wait()

    def k(i):
        sycl.atomic_ref(counter).fetch_add(1)
        sycl.atomic_ref(hist + data[i]).fetch_add(1)

    q.parallel_for(sycl.range(n), k).wait()
    assert read_back(q, counter)[0] == n
    expected = np.bincount(np.arange(n) % 8, minlength=8)
    assert np.array_equal(read_back(q, hist, np.uint32), expected)


def test_two_dimensional_shape(q, mem):
    out = mem.zeros(12, np.float32)

    def fill(it):
        i, j = it[0], it[1]
        grid[i, j] = i * 10.0 + j

    def flat(i):
        out[i] = grid[i // 4, i % 4]

    q.parallel_for(sycl.range(3, 4), fill).wait()
    q.parallel_for(sycl.range(12), flat).wait()
    expected = np.array([i * 10 + j for i in range(3) for j in range(4)], np.float32)
    assert np.array_equal(mem.view(out, 12), expected)
    assert np.array_equal(read_back(q, grid, np.float32), expected)


def test_struct_element_fields_and_host_copy(q, mem):
    host = np.zeros(1, Particle.dtype)
    host["x"], host["n"] = 1.5, 7
    q.copy(host, particle).wait()
    out = mem.zeros(2, np.float32)

    def k():
        p = particle.get()
        out[0] = p.x
        out[1] = sycl.float32(particle.get().n)
        particle.set(Particle(x=p.x * 2.0, n=p.n + 1))

    q.single_task(k).wait()
    assert list(mem.view(out, 2)) == [1.5, 7.0]
    back = np.zeros(1, Particle.dtype)
    q.copy(particle, back).wait()
    assert back["x"][0] == 3.0 and back["n"][0] == 8


def test_struct_with_a_pointer_member(q, mem):
    """device_global_arrow: the variable's struct reaches memory through its pointer."""
    data = mem.of(np.arange(4, dtype=np.float32))
    host = np.zeros(1, Window.dtype)
    host["base"], host["size"] = data.address, 4
    q.copy(host, window).wait()

    def k():
        w = window.get()
        for i in range(w.size):
            w.base[i] = w.base[i] * 3.0
        window.set(Window(base=w.base + 1, size=w.size - 1))

    q.single_task(k).wait()
    assert list(mem.view(data, 4)) == [0.0, 3.0, 6.0, 9.0]
    back = np.zeros(1, Window.dtype)
    q.copy(window, back).wait()
    assert int(back["base"][0]) == (data + 1).address and back["size"][0] == 3


def test_host_code_cannot_read_or_write_a_variable_directly():
    for call in (lambda: counter.get(), lambda: counter.set(1), lambda: hist[0]):
        with pytest.raises(sycl.exception) as ei:
            call()
        assert ei.value.code() == sycl.errc.invalid and "q.copy" in str(ei.value)


def test_float64_variable_where_the_device_has_fp64(q, mem):
    if not q.get_device().has(sycl.aspect.fp64):
        pytest.skip("the device has no fp64")
    q.copy(np.array([0.25], np.float64), fscale).wait()
    out = mem.zeros(4, np.float64)

    def k(i):
        out[i] = fscale.get() * i

    q.parallel_for(sycl.range(4), k).wait()
    assert list(mem.view(out, 4)) == [0.0, 0.25, 0.5, 0.75]


# -- where device code uses variables ------------------------------------------------------

total = syclexp.device_global(sycl.int32)
ff_value = syclexp.device_global(sycl.float32)


class Config:
    """A variable as a class attribute: its unique id names the class."""

    gain = syclexp.device_global(sycl.float32, properties=[syclexp.implement_in_csr])


def add_to_total(v):
    total.set(total.get() + v)


def scaled(p, v):
    return p.get() * v


def test_device_functions_closures_and_class_attributes(q, mem):
    q.copy(np.array([3], np.int32), total).wait()
    q.copy(np.array([2.5], np.float32), Config.gain).wait()
    g = Config.gain  # captured in a closure cell
    out = mem.zeros(2, np.float32)

    def k():
        add_to_total(4)
        out[0] = scaled(g, 2.0)
        out[1] = Config.gain.get()

    q.single_task(k).wait()
    assert read_back(q, total)[0] == 7
    assert list(mem.view(out, 2)) == [5.0, 2.5]
    assert Config.gain.unique_id == f"{__name__}.Config.gain"


def test_if_device_bodies(q, mem):
    q.copy(np.array([0], np.int32), total).wait()

    def on_device():
        total.set(11)

    def k():
        syclexp.if_device(on_device)

    q.single_task(k).wait()
    assert read_back(q, total)[0] == 11


@syclexp.nd_range_kernel(1)
def add_value(ptr: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = ptr[i] + ff_value.get()


def test_free_function_kernels(q, mem):
    q.copy(np.array([0.5], np.float32), ff_value).wait()
    p = mem.of(np.arange(8, dtype=np.float32))
    syclexp.nd_launch(q, sycl.nd_range((8,), (4,)), syclexp.kernel_function(add_value), p)
    q.wait()
    assert np.array_equal(mem.view(p, 8), np.arange(8, dtype=np.float32) + 0.5)


# -- sharing and device images -------------------------------------------------------------

shared_count = syclexp.device_global(sycl.int32)
image_count = syclexp.device_global(sycl.int32, properties=[scope])


@syclexp.single_task_kernel
def bump_shared(out: sycl.ptr[sycl.int32]):
    shared_count.set(shared_count.get() + 1)
    out[0] = shared_count.get()


@syclexp.single_task_kernel
def bump_image(out: sycl.ptr[sycl.int32]):
    image_count.set(image_count.get() + 1)
    out[0] = image_count.get()


def run_bundle_kernel(q, k, out):
    q.submit(lambda h: (h.set_args(out), h.single_task(k))).wait()


def test_one_allocation_per_device_shared_by_kernels_and_bundles(q, mem, ctx):
    q.copy(np.array([10], np.int32), shared_count).wait()
    out = mem.zeros(1, np.int32)
    syclexp.single_task(q, syclexp.kernel_function(bump_shared), out).wait()
    assert mem.view(out, 1)[0] == 11
    b = syclexp.get_kernel_bundle(ctx, bump_shared, sycl.bundle_state.executable)
    run_bundle_kernel(q, b.ext_oneapi_get_kernel(bump_shared), out)
    assert mem.view(out, 1)[0] == 12
    b2 = syclexp.get_kernel_bundle(ctx, bump_shared, sycl.bundle_state.executable)
    run_bundle_kernel(q, b2.ext_oneapi_get_kernel(bump_shared), out)
    assert mem.view(out, 1)[0] == 13
    assert read_back(q, shared_count)[0] == 13


def test_device_image_scope_one_instance_per_bundle(q, mem, ctx):
    """A bundle is a device image: its instance starts from the host instance and is its
    own; while two images hold the variable, host copies are refused."""
    q.copy(np.array([100], np.int32), image_count).wait()  # no image holds it yet
    b = syclexp.get_kernel_bundle(ctx, bump_image, sycl.bundle_state.executable)
    k = b.ext_oneapi_get_kernel(bump_image)
    out = mem.zeros(1, np.int32)
    run_bundle_kernel(q, k, out)
    run_bundle_kernel(q, k, out)
    assert mem.view(out, 1)[0] == 102
    assert read_back(q, image_count)[0] == 102  # one image: the bundle's instance
    q.copy(np.array([7], np.int32), image_count).wait()
    run_bundle_kernel(q, k, out)
    assert mem.view(out, 1)[0] == 8

    # launched without a bundle: the default image, a second instance
    syclexp.single_task(q, syclexp.kernel_function(bump_image), out).wait()
    assert mem.view(out, 1)[0] == 101
    for copy in (lambda: q.copy(np.zeros(1, np.int32), image_count),
                 lambda: q.memcpy(np.zeros(1, np.int32), image_count)):
        with pytest.raises(sycl.exception) as ei:
            copy()
        assert ei.value.code() == sycl.errc.invalid
        assert "image_count" in str(ei.value) and "2 device images" in str(ei.value)
    run_bundle_kernel(q, k, out)
    assert mem.view(out, 1)[0] == 9  # the bundle's instance is untouched by the other
    # the bundle goes (an exception's traceback would keep it), and its instance with it:
    # one image holds the variable
    del b, k, ei
    assert read_back(q, image_count)[0] == 101


late = syclexp.device_global(sycl.int32, properties=[scope])


def test_a_copy_waiting_on_a_host_task_reaches_the_first_instance(q, mem):
    """A copy into the host instance that is still waiting for its dependency when the
    first kernel (which depends on it) is submitted: that kernel's instance starts from
    the copied value, not from the value at submission."""
    out = mem.zeros(1, np.int32)
    gate = threading.Event()
    held = q.submit(lambda h: h.host_task(lambda: gate.wait(10)))
    copied = q.copy(np.array([9], np.int32), late, depends_on=held)

    def read():
        out[0] = late.get()

    threading.Timer(0.2, gate.set).start()
    q.single_task(read, depends_on=copied).wait()
    assert mem.view(out, 1)[0] == 9


# -- copies: defaults, offsets, events, handlers -------------------------------------------

arr = syclexp.device_global(sycl.int32, shape=(8,))
evens = syclexp.device_global(sycl.int32, shape=(3000,), properties=syclexp.properties(
    syclexp.init_mode_reprogram))
lone = syclexp.device_global(sycl.int32, properties=syclexp.device_image_scope)


def test_every_work_item_of_a_range_kernel_writes_its_element(q):
    """A straight-line range kernel (each work-item runs several ids) over a variable;
    properties given as syclexp.properties(...) or one property alone."""
    def k(i):
        evens[i] = i * 2

    assert compiled(q.get_device(), k, sycl.range(3000)).coarsen > 1
    q.parallel_for(sycl.range(3000), k).wait()
    assert np.array_equal(read_back(q, evens), np.arange(3000) * 2)
    assert evens.init_mode == "reprogram" and lone.image_scope
ro = syclexp.device_global(sycl.int32, properties=[syclexp.host_access_read])
wo = syclexp.device_global(sycl.int32, properties=[syclexp.host_access_write])
hidden = syclexp.device_global(sycl.int32, properties=[syclexp.host_access_none])
rw = syclexp.device_global(sycl.int32, properties=[syclexp.host_access_read_write,
                                                   syclexp.init_mode_reset])


def test_copy_defaults_count_and_start_index(q, mem):
    q.copy(np.arange(8, dtype=np.int32), arr).wait()  # count: all elements
    assert list(read_back(q, arr)) == list(range(8))
    q.copy(np.array([70, 71], np.int32), arr, 2, 5).wait()
    assert list(read_back(q, arr)) == [0, 1, 2, 3, 4, 70, 71, 7]
    part = np.zeros(3, np.int32)
    q.copy(arr, part, 3, 4).wait()
    assert list(part) == [4, 70, 71]
    q.memcpy(arr, np.array([-1], np.int32), 4, 4).wait()  # bytes 4..8: element 1
    whole = np.zeros(8, np.int32)
    q.memcpy(whole, arr).wait()  # num_bytes: sizeof
    assert list(whole) == [0, -1, 2, 3, 4, 70, 71, 7]
    dev = sycl.malloc_device(8, sycl.int32, q)
    try:
        q.copy(arr, dev, 8).wait()  # to and from device USM
        q.copy(dev, arr, 2, 6).wait()
        assert list(read_back(q, arr)) == [0, -1, 2, 3, 4, 70, 0, -1]
    finally:
        sycl.free(dev, q)


def test_copies_order_with_kernels_through_events(q, mem):
    out = mem.zeros(1, np.int32)

    def k():
        arr[0] = arr[0] + 1

    def read():
        out[0] = arr[0]

    e0 = q.copy(np.array([41], np.int32), arr, 1)
    e1 = q.single_task(k, depends_on=e0)
    result = np.zeros(1, np.int32)
    e2 = q.copy(arr, result, 1, depends_on=[e1])
    e2.wait()
    assert result[0] == 42

    def group(h):
        h.depends_on(e2)
        h.copy(np.array([5], np.int32), arr, 1, 0)

    e3 = q.submit(group)
    q.submit(lambda h: (h.depends_on(e3), h.single_task(read))).wait()
    assert mem.view(out, 1)[0] == 5
    q.submit(lambda h: h.memcpy(result, arr, 4)).wait()
    assert result[0] == 5


def test_host_access_properties(q):
    got = np.zeros(1, np.int32)
    q.copy(ro, got).wait()  # reading is allowed
    q.copy(np.array([3], np.int32), wo).wait()  # writing is allowed
    q.copy(np.array([4], np.int32), rw).wait()
    q.copy(rw, got).wait()
    assert got[0] == 4
    refused = [lambda: q.copy(np.array([1], np.int32), ro),
               lambda: q.memcpy(ro, np.array([1], np.int32)),
               lambda: q.copy(wo, got), lambda: q.memcpy(got, wo),
               lambda: q.copy(hidden, got), lambda: q.copy(np.array([1], np.int32), hidden)]
    for call in refused:
        with pytest.raises(sycl.exception) as ei:
            call()
        assert ei.value.code() == sycl.errc.invalid
        assert "host_access_" in str(ei.value) and "test_device_global.py" in str(ei.value)


def test_out_of_bounds_copies_do_nothing(q):
    q.copy(np.arange(8, dtype=np.int32), arr).wait()
    big = np.zeros(16, np.int32)
    bad = [lambda: q.copy(big, arr, 9), lambda: q.copy(big, arr, 2, 7),
           lambda: q.copy(arr, big, 1, 8), lambda: q.copy(big, arr, 1, -1),
           lambda: q.memcpy(arr, big, 33), lambda: q.memcpy(arr, big, 4, 29),
           lambda: q.memcpy(big, arr, 4, -4), lambda: q.memcpy(arr, big[:1], 8),
           lambda: q.copy(np.zeros(8, np.float32), arr),  # element types differ
           lambda: q.memcpy(arr, counter),  # two device_globals
           lambda: q.memcpy(arr, big, 1.5),
           lambda: q.copy(big, big + 0, 3, 1)]  # start_index without a device_global
    for call in bad:
        with pytest.raises(sycl.exception) as ei:
            call()
        assert ei.value.code() == sycl.errc.invalid
    assert list(read_back(q, arr)) == list(range(8))


def test_copies_cannot_be_recorded_in_a_graph(q):
    """A queue in the recording state (a command_graph sets `recording_graph`) refuses
    device_global copies before anything reaches the graph (graph spec 7.12.4)."""

    class Recorder:
        def _record_from_queue(self, *args):
            raise AssertionError("nothing may be recorded")

    rq = sycl.queue(q.get_device())
    rq.recording_graph = Recorder()
    for call in (lambda: rq.copy(np.zeros(8, np.int32), arr),
                 lambda: rq.memcpy(np.zeros(8, np.int32), arr)):
        with pytest.raises(sycl.exception) as ei:
            call()
        assert ei.value.code() == sycl.errc.invalid and "command_graph" in str(ei.value)


# -- metadata ------------------------------------------------------------------------------

def test_metadata_query_for_closures_and_bundle_kernels(q, ctx, mem):
    out = mem.zeros(1, np.int32)

    def k(i):
        out[0] = rw.get() + Config.gain.get()
        sycl.atomic_ref(counter).fetch_add(1)

    entries = syclexp.get_device_globals(k, q, sycl.range(4))
    by_id = {e["unique_id"]: e for e in entries}
    assert set(by_id) == {f"{__name__}.rw", f"{__name__}.Config.gain", f"{__name__}.counter"}
    e = by_id[f"{__name__}.rw"]
    assert (e["size"], e["host_access"], e["init_mode"], e["device_image_scope"]) == \
        (4, "read_write", "reset", False)
    assert by_id[f"{__name__}.Config.gain"]["implement_in_csr"] is True
    offsets = sorted(e["argument_offset"] for e in entries)
    assert len(set(offsets)) == 3 and all(o % 8 == 0 for o in offsets)
    b = syclexp.get_kernel_bundle(ctx, bump_image, sycl.bundle_state.executable)
    [entry] = syclexp.get_device_globals(b.ext_oneapi_get_kernel(bump_image), q)
    assert entry["unique_id"] == f"{__name__}.image_count" and entry["device_image_scope"]
    assert syclexp.get_device_globals(lambda: None, q) == []
    with pytest.raises(sycl.exception) as ei:
        syclexp.get_device_globals(k, "gpu")
    assert ei.value.code() == sycl.errc.invalid and "queue or a device" in str(ei.value)


def test_spirv_reaches_variables_by_address(q):
    def k():
        counter.set(1)

    ck = compiled(q.get_device(), k, None)
    asm = ck.spirv_asm()
    assert "PhysicalStorageBuffer" in asm and "HostAccessINTEL" not in asm
    assert ck.reflection()["device_globals"][0]["unique_id"] == f"{__name__}.counter"


loop_step = syclexp.device_global(sycl.float32)
loop_count = syclexp.device_global(sycl.int32)


def test_loads_of_read_only_variables_leave_loops_and_written_ones_stay(q, mem):
    """A kernel that never writes a variable loads it once (before its loops); one that
    writes it in its loop sees each write."""
    q.copy(np.array([0.5], np.float32), loop_step).wait()
    q.copy(np.array([0], np.int32), loop_count).wait()
    out = mem.zeros(4, np.float32)

    def reader(i):
        v = sycl.float32(i)
        for _ in range(6):
            v = v + loop_step.get()
        out[i] = v

    def writer():
        for _ in range(5):
            loop_count.set(loop_count.get() + 2)

    q.parallel_for(sycl.range(4), reader).wait()
    q.single_task(writer).wait()
    assert list(mem.view(out, 4)) == [3.0, 4.0, 5.0, 6.0]
    assert read_back(q, loop_count)[0] == 10

    def loop_body_of(kernel, launch):
        """The SPIR-V from the loop header to its merge block."""
        asm = compiled(q.get_device(), kernel, launch).spirv_asm()
        at = asm.index("OpLoopMerge")
        merge = asm[at:].split()[1]
        return asm[at: asm.index(f"{merge} = OpLabel")]

    assert "PhysicalStorageBuffer_float" not in loop_body_of(reader, sycl.range(4))
    assert "PhysicalStorageBuffer_int" in loop_body_of(writer, None)


aliased = syclexp.device_global(sycl.int32)


def test_a_variable_written_through_its_address_from_memory_is_read_again(q, mem):
    """An earlier kernel stores the variable's address; a later one writes through the
    stored pointer and reads the variable: its load is not moved before the write."""
    table = sycl.malloc_shared(1, sycl.ptr[sycl.int32], q)
    out = mem.zeros(2, np.int32)
    q.copy(np.array([1], np.int32), aliased).wait()

    def publish():
        table[0] = aliased

    def write_then_read():
        before = aliased.get()
        p = table[0]
        p[0] = 5
        out[0] = before
        out[1] = aliased.get()

    try:
        q.single_task(publish).wait()
        q.single_task(write_then_read).wait()
        assert list(mem.view(out, 2)) == [1, 5]
    finally:
        sycl.free(table, q)


block_gain = syclexp.device_global(sycl.float32)


def test_kernel_whose_arguments_live_in_an_argument_block(q, mem):
    """Sixteen pointers and a variable's address outgrow 128 bytes of push constants: the
    address travels in the argument block like any other argument."""
    q.copy(np.array([3.0], np.float32), block_gain).wait()
    ptrs = [mem.of(np.full(4, k, np.float32)) for k in range(16)]
    p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15 = ptrs
    out = mem.zeros(4, np.float32)

    def body(i):
        total = (p0[i] + p1[i] + p2[i] + p3[i] + p4[i] + p5[i] + p6[i] + p7[i] + p8[i] +
                 p9[i] + p10[i] + p11[i] + p12[i] + p13[i] + p14[i] + p15[i])
        for _ in range(2):
            total = total * block_gain.get()
        out[i] = total

    dev = q.get_device()
    refl = compiled(dev, body, sycl.range(4)).reflection()
    assert refl["args_size"] >= 17 * 8
    assert refl["args_in_memory"] == (dev.vulkan.max_push_constants_size < 17 * 8)
    q.parallel_for(sycl.range(4), body).wait()
    assert list(mem.view(out, 4)) == [120.0 * 9] * 4


# -- two processes, one disk cache ---------------------------------------------------------

SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import vksycl as sycl
    from vksycl.compiler import kernel as kernel_mod
    from vksycl.ext.oneapi import experimental as syclexp

    hits = syclexp.device_global(sycl.int32)
    table = syclexp.device_global(sycl.float32, shape=(4,),
                                  properties=[syclexp.device_image_scope])

    if sys.argv[1] == "load":
        def refuse(*args):
            raise AssertionError("compiled again: the disk cache was not used")
        kernel_mod.compile_kernel = refuse

    q = sycl.queue()
    out = sycl.malloc_shared(4, sycl.float32, q)
    q.copy(np.array([1, 2, 3, 4], np.float32), table).wait()

    def k(i):
        out[i] = table[i] * 10.0
        sycl.atomic_ref(hits).fetch_add(1)

    q.parallel_for(sycl.range(4), k).wait()
    got = np.zeros(1, np.int32)
    q.copy(hits, got).wait()
    assert list(np.asarray(out)[:4]) == [10.0, 20.0, 30.0, 40.0], np.asarray(out)[:4]
    assert got[0] == 4, got
    print("ok", syclexp.get_device_globals(k, q, sycl.range(4))[0]["unique_id"])
''')


def test_two_processes_share_the_disk_cache(tmp_path):
    script = tmp_path / "dg_two_processes.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "VKSYCL_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (
               str(os.path.dirname(os.path.dirname(sycl.__file__))),
               os.environ.get("PYTHONPATH")) if p)}
    for mode in ("compile", "load"):
        proc = subprocess.run([sys.executable, str(script), mode], capture_output=True,
                              text=True, timeout=300, env=env)
        assert proc.returncode == 0, f"{mode}:\n{proc.stdout}\n{proc.stderr}"
        assert "ok __main__.table" in proc.stdout
    assert list((tmp_path / "cache").rglob("*.kc"))


STALE = textwrap.dedent('''
    import os
    import vksycl as sycl
    from vksycl.ext.oneapi import experimental as syclexp

    class Settings:
        level = syclexp.device_global(sycl.int32, properties=(
            [syclexp.device_image_scope] if os.environ["IMAGE_SCOPE"] == "1" else []))

    def k():
        Settings.level.set(Settings.level.get() + 1)

    q = sycl.queue()
    q.single_task(k).wait()
    [entry] = syclexp.get_device_globals(k, q)
    print("image_scope", entry["device_image_scope"])
''')


def test_disk_cache_entry_with_changed_properties_is_compiled_again(tmp_path):
    """A class attribute's properties are outside the kernel's source: a cached kernel
    whose recorded metadata disagrees with the live declaration is not reused."""
    script = tmp_path / "dg_stale.py"
    script.write_text(STALE)
    env = {**os.environ, "VKSYCL_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (
               os.path.dirname(os.path.dirname(sycl.__file__)), os.environ.get("PYTHONPATH"))
               if p)}
    for flag in ("0", "1", "0"):
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=300, env={**env, "IMAGE_SCOPE": flag})
        assert proc.returncode == 0, proc.stderr
        assert f"image_scope {flag == '1'}" in proc.stdout


# -- errors --------------------------------------------------------------------------------

def test_creation_errors():
    def inside():
        return syclexp.device_global(sycl.int32)

    bad = [(inside, "not inside the function inside"),
           (lambda: syclexp.device_global(str), "element type"),
           (lambda: syclexp.device_global(sycl.int32, shape=(0,)), "size below 1"),
           (lambda: syclexp.device_global(sycl.int32, shape="x"), "shape"),
           (lambda: syclexp.device_global(sycl.int32, properties=[sycl.property.queue.in_order()]),
            "not a device_global property"),
           (lambda: syclexp.device_global(sycl.int32, properties=[
               syclexp.host_access_read, syclexp.host_access_write]), "two host_access"),
           (lambda: syclexp.device_global(sycl.int32, properties=3), "a list of properties")]
    for make, words in bad:
        with pytest.raises(sycl.exception) as ei:
            make()
        assert ei.value.code() == sycl.errc.invalid
        assert words in str(ei.value) and "test_device_global.py:" in str(ei.value)


def build_error(q, kernel, launch=None):
    with pytest.raises(sycl.exception) as ei:
        if launch is None:
            q.single_task(kernel)
        else:
            q.parallel_for(launch, kernel)
    assert ei.value.code() == sycl.errc.build
    return str(ei.value)


def test_device_code_errors_name_the_line(q):
    def attr():
        counter.value = 1

    def scalar_index():
        counter[0] = 1

    def too_many():
        arr[0, 1] = 1

    def constant_out_of_range():
        arr[8] = 1

    def set_array():
        arr.set(1)

    def get_args():
        counter.get(1)

    def unknown():
        counter.reset()

    cases = [(attr, "cannot assign"), (scalar_index, "holds one value"),
             (too_many, "2 indices"), (constant_out_of_range, "out of range"),
             (set_array, "assign its elements"), (get_args, "takes no arguments"),
             (unknown, "has no attribute 'reset'")]
    for kernel, words in cases:
        message = build_error(q, kernel)
        line = kernel.__code__.co_firstlineno + 1
        assert f"test_device_global.py:{line}:" in message, message
        assert words in message, message
