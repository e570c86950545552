"""Kernel ids, kernel bundles and kernel objects of free function kernels (seed 004):
queries, `set_arg` enqueues, and each `errc.invalid` case where the spec says undefined."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item

ex = sycl.bundle_state.executable


@syclexp.nd_range_kernel(1)
def scale(a: sycl.float32, x: sycl.ptr[sycl.float32], y: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    y[i] = a * x[i]


@syclexp.nd_range_kernel(2)
def index2(out: sycl.ptr[sycl.int32]):
    it = this_work_item.get_nd_item(2)
    out[it.get_global_linear_id()] = sycl.int32(it.get_global_id(0) * 10 + it.get_global_id(1))


@syclexp.single_task_kernel
def store(out: sycl.ptr[sycl.int32], v: sycl.int32):
    out[0] = v


@syclexp.work_group_size(8, 4)
@syclexp.nd_range_kernel(2)
def with_local(out: sycl.ptr[sycl.int32]):
    it = this_work_item.get_nd_item(2)
    mem = syclexp.work_group_memory(sycl.int32, 64)
    mem[it.get_local_linear_id()] = sycl.int32(it.get_local_linear_id())
    sycl.group_barrier(it.get_group())
    out[it.get_global_linear_id()] = mem[31 - it.get_local_linear_id()]


@syclexp.sub_group_size(3)  # no device has sub-groups of 3
@syclexp.nd_range_kernel(1)
def odd_sub_group(out: sycl.ptr[sycl.int32]):
    out[0] = 1


U = typing.TypeVar("U")


@syclexp.single_task_kernel
def put(out: sycl.ptr[U], v: U):
    out[0] = v


@pytest.fixture
def dev(q):
    return q.get_device()


@pytest.fixture
def shared(mem):
    """Zeroed shared USM: shared(n, dtype)."""
    return mem.zeros


# -- 3. ids and bundles ------------------------------------------------------------------------

def test_kernel_ids(ctx):
    kid = syclexp.get_kernel_id(scale)
    assert kid is syclexp.get_kernel_id(scale) and kid.get_name() == "scale"
    ids = sycl.get_kernel_ids()
    for f in (scale, index2, store, with_local):
        assert syclexp.get_kernel_id(f) in ids
    inst = syclexp.get_kernel_id(put[sycl.int16])
    assert inst in sycl.get_kernel_ids() and inst.get_name() == "put_int16"
    with pytest.raises(sycl.exception) as ei:
        syclexp.get_kernel_id(put)
    assert ei.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception):
        syclexp.get_kernel_id(print)


def test_bundle_of_one_kernel(ctx, dev):
    b = syclexp.get_kernel_bundle(ctx, scale, ex)
    assert b.get_kernel_ids() == [syclexp.get_kernel_id(scale)]
    assert b.get_context() is ctx and b.get_devices() == ctx.get_devices()
    assert b.state is ex and not b.empty()
    assert b.ext_oneapi_has_kernel(scale) and b.ext_oneapi_has_kernel(scale, dev)
    assert not b.ext_oneapi_has_kernel(store)
    assert b.has_kernel(syclexp.get_kernel_id(scale), dev)
    k = b.ext_oneapi_get_kernel(scale)
    assert k is b.get_kernel(syclexp.get_kernel_id(scale))
    assert k.get_kernel_bundle() is b and k.get_context() is ctx
    assert b.ext_oneapi_get_raw_kernel_name("scale") == "__sycl_kernel_scale"
    with pytest.raises(sycl.exception) as ei:
        b.ext_oneapi_get_kernel(store)
    assert ei.value.code() == sycl.errc.invalid
    b2 = syclexp.get_kernel_bundle(ctx, store, [dev], sycl.bundle_state.input)
    assert b2.get_devices() == [dev] and b2.ext_oneapi_has_kernel(store)


def test_kernel_objects_show_their_spirv(ctx, dev):
    k = syclexp.get_kernel_bundle(ctx, scale, ex).ext_oneapi_get_kernel(scale)
    binary = k.spirv()
    assert binary[:4] == b"\x03\x02\x23\x07" and binary == k.spirv(dev)
    asm = k.spirv_asm()
    assert 'OpEntryPoint GLCompute %' in asm and '"__sycl_kernel_scale"' in asm
    src = syclexp.build(syclexp.create_kernel_bundle_from_source(
        ctx, syclexp.source_language.glsl,
        "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"))
    main = src.ext_oneapi_get_kernel("main")
    assert main.spirv()[:4] == binary[:4] and "OpEntryPoint GLCompute" in main.spirv_asm()


def test_bundle_of_all_kernels(ctx, dev):
    b = sycl.get_kernel_bundle(ctx, ex)
    for f in (scale, index2, store, with_local):
        assert b.ext_oneapi_has_kernel(f)
    assert not b.ext_oneapi_has_kernel(odd_sub_group)
    assert not syclexp.is_compatible(odd_sub_group, dev)
    assert not syclexp.has_kernel_bundle(ctx, odd_sub_group, ex)
    with pytest.raises(sycl.exception) as ei:
        syclexp.get_kernel_bundle(ctx, odd_sub_group, ex)
    assert ei.value.code() == sycl.errc.invalid and "sub-groups of 3" in str(ei.value)
    assert set(b.get_kernel_ids()) <= set(sycl.get_kernel_ids())
    assert sycl.has_kernel_bundle(ctx, ex) and sycl.has_kernel_bundle(ctx, [dev], ex)
    assert syclexp.has_kernel_bundle(ctx, scale, ex)
    assert syclexp.has_kernel_bundle(ctx, scale, [dev], ex)
    ids = [syclexp.get_kernel_id(scale), syclexp.get_kernel_id(store)]
    b3 = sycl.get_kernel_bundle(ctx, ids, ex)
    assert b3.get_kernel_ids() == ids


def test_bundle_state_transitions(ctx, dev):
    inp = syclexp.get_kernel_bundle(ctx, scale, sycl.bundle_state.input)
    with pytest.raises(sycl.exception) as ei:
        inp.ext_oneapi_get_kernel(scale)
    assert ei.value.code() == sycl.errc.invalid
    obj = sycl.compile(inp)
    assert obj.state is sycl.bundle_state.object
    exe = sycl.link([obj])
    assert exe.state is ex and exe.ext_oneapi_get_kernel(scale).get_info(
        sycl.info.kernel.num_args) == 3
    assert sycl.build(inp).state is ex
    for bad in (lambda: sycl.compile(exe), lambda: sycl.link(inp), lambda: sycl.build(exe)):
        with pytest.raises(sycl.exception) as ei:
            bad()
        assert ei.value.code() == sycl.errc.invalid


def test_bad_bundle_requests(ctx):
    other = sycl.context()  # a context of its own devices
    cases = [
        lambda: syclexp.get_kernel_bundle(ctx, scale),            # no state
        lambda: syclexp.get_kernel_bundle(ctx, scale, [], ex),    # no devices
        lambda: syclexp.get_kernel_bundle(ctx, scale, sycl.bundle_state.ext_oneapi_source),
        lambda: syclexp.get_kernel_bundle(ctx, scale, ["dev"], ex),
    ]
    for case in cases:
        with pytest.raises(sycl.exception) as ei:
            case()
        assert ei.value.code() == sycl.errc.invalid
    assert other.get_devices()


def _module(tmp_path, name, source):
    """A fresh module of kernels (kernels compile from their source file)."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text("import vksycl as sycl\n"
                    "from vksycl.ext.oneapi import experimental as syclexp\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_is_compatible_follows_the_aspects_a_kernel_uses(dev, tmp_path, monkeypatch):
    mod = _module(tmp_path, "fp64_kernels",
                  "@syclexp.single_task_kernel\n"
                  "def uses_fp64(out: sycl.ptr[sycl.float64], x: sycl.float64):\n"
                  "    out[0] = x * 2.0\n\n"
                  "@syclexp.single_task_kernel\n"
                  "def also_fp64(out: sycl.ptr[sycl.float64]):\n"
                  "    out[0] = 0.5\n")
    assert syclexp.is_compatible(mod.uses_fp64, dev) == dev.has(sycl.aspect.fp64)
    assert syclexp.is_compatible(store, dev)
    assert sycl.is_compatible([syclexp.get_kernel_id(store)], dev)

    real_has = type(dev).has
    monkeypatch.setattr(type(dev), "has", lambda self, a: False if a is sycl.aspect.fp64
                        else real_has(self, a))
    k2 = mod.also_fp64
    assert not syclexp.is_compatible(k2, dev)
    ctx = sycl.context([dev])
    assert not syclexp.has_kernel_bundle(ctx, k2, ex)
    with pytest.raises(sycl.exception) as ei:
        syclexp.get_kernel_bundle(ctx, k2, ex)
    assert ei.value.code() == sycl.errc.invalid and "fp64" in str(ei.value)


# -- kernel information ------------------------------------------------------------------------

def test_kernel_info(q, ctx, dev):
    k = syclexp.get_kernel_bundle(ctx, with_local, ex).ext_oneapi_get_kernel(with_local)
    ds = sycl.info.kernel_device_specific
    assert k.get_info(sycl.info.kernel.num_args) == 1
    assert k.get_info(sycl.info.kernel.attributes) == "reqd_work_group_size(8,4)"
    assert k.get_info(sycl.info.kernel.function_name) == "with_local"
    assert tuple(k.get_info(ds.compile_work_group_size, dev)) == (8, 4, 0)
    assert k.get_info(ds.work_group_size, dev) == 32
    sub = dev.get_info(sycl.info.device.sub_group_sizes)[0]
    assert k.get_info(ds.preferred_work_group_size_multiple, dev) == sub
    assert k.get_info(ds.max_sub_group_size, dev) == sub
    assert k.get_info(ds.max_num_sub_groups, dev) == -(-32 // sub)
    assert k.get_info(ds.compile_sub_group_size, dev) == 0
    assert k.get_info(ds.ext_vksycl_local_mem_size, dev) == 64 * 4
    assert k.get_info(ds.private_mem_size, dev) >= 0
    plain = syclexp.get_kernel_bundle(ctx, scale, ex).ext_oneapi_get_kernel(scale)
    assert plain.get_info(ds.work_group_size, dev) == dev.get_info(
        sycl.info.device.max_work_group_size)
    assert plain.get_info(ds.ext_vksycl_local_mem_size, dev) == 0
    assert plain.get_info(sycl.info.kernel.attributes) == ""
    for bad in (lambda: k.get_info(ds.work_group_size), lambda: k.get_info(ds.global_work_size,
                                                                           dev),
                lambda: k.get_info(sycl.info.device.name)):
        with pytest.raises(sycl.exception) as ei:
            bad()
        assert ei.value.code() == sycl.errc.invalid


def test_get_kernel_info_free_functions(q, ctx, dev):
    assert syclexp.get_kernel_info(scale, sycl.info.kernel.num_args, ctx) == 3
    assert syclexp.get_kernel_info(scale, sycl.info.kernel.num_args, q) == 3
    ds = sycl.info.kernel_device_specific
    assert syclexp.get_kernel_info(with_local, ds.work_group_size, ctx, dev) == 32
    assert syclexp.get_kernel_info(with_local, ds.work_group_size, q) == 32
    with pytest.raises(sycl.exception) as ei:
        syclexp.get_kernel_info(with_local, ds.work_group_size, ctx)
    assert ei.value.code() == sycl.errc.invalid


# -- 4. enqueue through kernel objects ---------------------------------------------------------

def test_set_arg_and_parallel_for(q, ctx, shared):
    k = syclexp.get_kernel_bundle(ctx, scale, ex).ext_oneapi_get_kernel(scale)
    x, y = shared(64, np.float32), shared(64, np.float32)
    np.asarray(x)[:64] = np.arange(64)

    def cgf(h):
        h.set_arg(0, np.float32(3))
        h.set_arg(1, x)
        h.set_arg(2, y)
        h.parallel_for(sycl.nd_range((64,), (16,)), k)

    q.submit(cgf).wait()
    np.testing.assert_array_equal(np.asarray(y)[:64], 3 * np.arange(64, dtype=np.float32))

    def cgf2(h):
        h.set_args(0.5, x, y)
        h.parallel_for(sycl.nd_range((32,), (8,)), k)

    q.submit(cgf2).wait()
    np.testing.assert_array_equal(np.asarray(y)[:32], 0.5 * np.arange(32, dtype=np.float32))


def test_set_args_and_set_arg_mixed_in_one_command_group(q, ctx, shared):
    """`set_args` sets arguments 0, 1, ... and leaves any later one as it was; `set_arg`
    then replaces one by index; either order, and `set_args` twice."""
    k = syclexp.get_kernel_bundle(ctx, scale, ex).ext_oneapi_get_kernel(scale)
    x, y, z = shared(8, np.float32), shared(8, np.float32), shared(8, np.float32)
    np.asarray(x)[:8] = np.arange(8)
    nd = sycl.nd_range((8,), (8,))

    def result(cgf):
        np.asarray(y)[:8] = 0
        np.asarray(z)[:8] = 0
        q.submit(lambda h: (cgf(h), h.parallel_for(nd, k))).wait()
        return np.asarray(y)[:8].copy(), np.asarray(z)[:8].copy()

    ramp = np.arange(8, dtype=np.float32)
    got_y, got_z = result(lambda h: (h.set_args(2.0, x, y), h.set_arg(2, z)))
    np.testing.assert_array_equal(got_z, 2 * ramp)
    assert not got_y.any()
    got_y, got_z = result(lambda h: (h.set_arg(2, z), h.set_args(3.0, x)))
    np.testing.assert_array_equal(got_z, 3 * ramp)
    assert not got_y.any()
    got_y, got_z = result(lambda h: (h.set_args(1.0, x, y), h.set_args(4.0)))
    np.testing.assert_array_equal(got_y, 4 * ramp)
    assert not got_z.any()


def test_kernel_objects_in_two_dimensions_and_single_task(q, ctx, shared):
    b = sycl.get_kernel_bundle(ctx, [syclexp.get_kernel_id(index2),
                                     syclexp.get_kernel_id(store)], ex)
    out = shared(6 * 8, np.int32)
    k2 = b.ext_oneapi_get_kernel(index2)
    q.submit(lambda h: (h.set_args(out), h.parallel_for(sycl.nd_range((6, 8), (2, 4)), k2)))
    q.wait()
    i, j = np.meshgrid(np.arange(6), np.arange(8), indexing="ij")
    np.testing.assert_array_equal(np.asarray(out)[:48].reshape(6, 8), i * 10 + j)
    ks = b.ext_oneapi_get_kernel(store)
    q.submit(lambda h: (h.set_args(out, 77), h.single_task(ks))).wait()
    assert np.asarray(out)[0] == 77


def test_work_group_memory_kernel_through_a_kernel_object(q, ctx, shared):
    k = syclexp.get_kernel_bundle(ctx, with_local, ex).ext_oneapi_get_kernel(with_local)
    out = shared(16 * 8, np.int32)
    q.submit(lambda h: (h.set_arg(0, out), h.parallel_for(sycl.nd_range((16, 8), (8, 4)), k)))
    q.wait()
    got = np.asarray(out)[:128].reshape(16, 8)
    lin = (np.arange(16)[:, None] % 8) * 4 + (np.arange(8)[None, :] % 4)
    np.testing.assert_array_equal(got, 31 - lin)


@pytest.mark.parametrize(("setup", "needle"), [
    (lambda h, x, y, KS: (h.set_args(1.0, x), h.parallel_for(sycl.nd_range((8,), (8,)), KS)),
     "argument 2 (y) of scale is not set"),
    (lambda h, x, y, KS: (h.set_args(1.0, x, y, 4), h.parallel_for(sycl.nd_range((8,), (8,)), KS)),
     "set index 3"),
    (lambda h, x, y, KS: (h.set_args(1, x, y), h.parallel_for(sycl.nd_range((8,), (8,)), KS)),
     "is a float32, got int"),
    (lambda h, x, y, KS: (h.set_args(np.float64(1), x, y),
                      h.parallel_for(sycl.nd_range((8,), (8,)), KS)), "got float64"),
    (lambda h, x, y, KS: (h.set_args(1.0, y, 5), h.parallel_for(sycl.nd_range((8,), (8,)), KS)),
     "pointer to float32"),
    (lambda h, x, y, KS: (h.set_args(1.0, x, y), h.parallel_for(sycl.nd_range((2, 4), (2, 4)), KS)),
     "2-dimensional"),
    (lambda h, x, y, KS: (h.set_args(1.0, x, y), h.parallel_for(sycl.range(8), KS)),
     "not with a sycl.range"),
    (lambda h, x, y, KS: (h.set_args(1.0, x, y), h.single_task(KS)), "not single_task"),
    (lambda h, x, y, KS: h.set_arg(-1, 1.0), "non-negative"),
])
def test_undefined_enqueues_raise_invalid(q, ctx, shared, setup, needle):
    k = syclexp.get_kernel_bundle(ctx, scale, ex).ext_oneapi_get_kernel(scale)
    x = shared(8, np.float32)
    y = shared(8, np.int32)
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: setup(h, x, y, k))
    assert ei.value.code() == sycl.errc.invalid
    assert needle in str(ei.value)


def test_single_task_kernel_enqueued_over_an_nd_range(q, ctx, shared):
    k = syclexp.get_kernel_bundle(ctx, store, ex).ext_oneapi_get_kernel(store)
    out = shared(1, np.int32)
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: (h.set_args(out, 1), h.parallel_for(sycl.nd_range((8,), (8,)), k)))
    assert ei.value.code() == sycl.errc.invalid and "single_task_kernel" in str(ei.value)


def test_work_group_size_property_through_a_kernel_object(q, ctx, shared):
    k = syclexp.get_kernel_bundle(ctx, with_local, ex).ext_oneapi_get_kernel(with_local)
    out = shared(64, np.int32)
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: (h.set_arg(0, out), h.parallel_for(sycl.nd_range((8, 8), (4, 4)), k)))
    assert ei.value.code() == sycl.errc.nd_range



def test_kernel_objects_check_the_queue_context(q, ctx):
    ks = sycl.get_kernel_bundle(ctx, [syclexp.get_kernel_id(store)], ex) \
        .ext_oneapi_get_kernel(store)
    other = sycl.queue(sycl.context(q.get_device()), q.get_device())
    foreign = sycl.malloc_shared(4, sycl.int32, other)
    with pytest.raises(sycl.exception) as err:
        q.submit(lambda h: (h.set_args(foreign, 5), h.single_task(ks)))
    assert err.value.code() == sycl.errc.invalid
    sycl.free(foreign, other)
