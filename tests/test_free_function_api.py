"""Free function kernels (seed 004): definition rules, properties, traits, enqueue
functions, argument conversion, and every error a user can cause."""

from __future__ import annotations

import enum
import typing

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item


@pytest.fixture
def alloc(mem):
    """Shared USM filled with one value: alloc(n, dtype, fill=0)."""
    return lambda n, dtype, fill=0: mem.of(np.full(n, fill, dtype))


def view(p, n):
    return np.asarray(p)[:n].copy()


# -- kernels of this module ---------------------------------------------------------------------

@syclexp.nd_range_kernel(1)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = start + sycl.float32(i)


@syclexp.nd_range_kernel(2)
def grid2(out: sycl.ptr[sycl.int32], width: sycl.int32):
    it = this_work_item.get_nd_item(2)
    out[it.get_global_id(0) * width + it.get_global_id(1)] = \
        sycl.int32(it.get_global_id(0) * 100 + it.get_global_id(1))


@syclexp.nd_range_kernel(3)
def grid3(out: sycl.ptr[sycl.int32]):
    it = this_work_item.get_nd_item(3)
    out[it.get_global_linear_id()] = sycl.int32(it.get_group_linear_id())


@syclexp.single_task_kernel
def answer(out: sycl.ptr[sycl.int64], x: sycl.int64):
    out[0] = x * 2


T = typing.TypeVar("T")


@syclexp.nd_range_kernel(1)
def fill_t(value: T, ptr: sycl.ptr[T]):
    ptr[this_work_item.get_nd_item(1).get_global_id(0)] = value


class Op(enum.IntEnum):
    ADD = 1
    MUL = 2


class Scoped(enum.Enum):
    NEG = 7
    POS = 9


@sycl.struct
class Affine:
    scale: sycl.float32
    shift: sycl.int32


@syclexp.single_task_kernel
def convert(out: sycl.ptr[sycl.float64], a: sycl.float32, b: sycl.int64, c: sycl.uint8,
            d: sycl.int32, op: Op, s: Scoped, f: Affine, flag: sycl.bool_):
    out[0] = sycl.float64(a)
    out[1] = sycl.float64(b)
    out[2] = sycl.float64(c)
    out[3] = sycl.float64(d)
    out[4] = sycl.float64(op)
    out[5] = sycl.float64(s)
    out[6] = sycl.float64(f.scale) * sycl.float64(f.shift)
    out[7] = 1.0 if flag else 0.0


@syclexp.nd_range_kernel(1)
@syclexp.work_group_size(16)
def fixed_wg(out: sycl.ptr[sycl.int32]):
    it = this_work_item.get_nd_item(1)
    out[it.get_global_id(0)] = sycl.int32(it.get_local_range(0))


@syclexp.sub_group_size(8)
@syclexp.work_group_size_hint(64)
@syclexp.nd_range_kernel(1)
def hinted(out: sycl.ptr[sycl.int32]):
    out[this_work_item.get_nd_item(1).get_global_id(0)] = 5


@syclexp.nd_range_kernel(1)
def scratch_reverse(out: sycl.ptr[sycl.int32]):
    it = this_work_item.get_nd_item(1)
    lid = it.get_local_id(0)
    wg = it.get_local_range(0)
    s = syclexp.get_work_group_scratch_memory(sycl.int32)
    s[lid] = sycl.int32(it.get_global_id(0))
    sycl.group_barrier(it.get_group())
    out[it.get_global_id(0)] = s[wg - 1 - lid]


# -- 1. definition ---------------------------------------------------------------------------

def test_decorated_function_still_runs_as_python():
    out = np.zeros(2, np.int64)
    answer(out, 21)
    assert out[0] == 42


def test_properties_above_or_below_the_kernel_property():
    assert [type(p) for p in fixed_wg.properties] == [syclexp.work_group_size]
    assert fixed_wg.properties[0].sizes == (16,)
    kinds = {type(p) for p in hinted.properties}
    assert kinds == {syclexp.sub_group_size, syclexp.work_group_size_hint}


def _build_error(fn_source: str, where: dict | None = None) -> sycl.exception:
    ns = {"sycl": sycl, "syclexp": syclexp, **(where or {})}
    with pytest.raises(sycl.exception) as ei:
        exec(compile(fn_source, "<kernels>", "exec"), ns)
    assert ei.value.code() == sycl.errc.build
    return ei.value


@pytest.mark.parametrize(("source", "needle"), [
    ("@syclexp.nd_range_kernel(1)\ndef k(x: sycl.int32) -> sycl.int32:\n    pass\n",
     "return type"),
    ("@syclexp.nd_range_kernel(1)\ndef k(*xs: sycl.int32):\n    pass\n", "variadic"),
    ("@syclexp.single_task_kernel\ndef k(**kw: sycl.int32):\n    pass\n", "variadic"),
    ("@syclexp.nd_range_kernel(1)\ndef k(x: sycl.int32 = 3):\n    pass\n", "default"),
    ("@syclexp.nd_range_kernel(1)\ndef k(*, x: sycl.int32):\n    pass\n", "keyword-only"),
    ("@syclexp.nd_range_kernel(1)\ndef k(r: 'reducer'):\n    pass\n", "reducer"),
    ("@syclexp.single_task_kernel\ndef k(h: 'kernel_handler'):\n    pass\n", "kernel_handler"),
    ("@syclexp.nd_range_kernel(1)\n@syclexp.nd_range_kernel(2)\ndef k(x: sycl.int32):\n"
     "    pass\n", "at most one"),
    ("@syclexp.single_task_kernel\n@syclexp.nd_range_kernel(1)\ndef k(x: sycl.int32):\n"
     "    pass\n", "at most one"),
    ("@syclexp.work_group_size(8)\n@syclexp.nd_range_kernel(1)\n@syclexp.work_group_size(16)"
     "\ndef k(x: sycl.int32):\n    pass\n", "same arguments"),
    ("@syclexp.nd_range_kernel(1)\n@syclexp.sub_group_size(8)\n@syclexp.sub_group_size(16)\n"
     "def k(x: sycl.int32):\n    pass\n", "same arguments"),
    ("@syclexp.nd_range_kernel(1)\n@syclexp.work_group_size(8, 8)\ndef k(x: sycl.int32):\n"
     "    pass\n", "2-dimensional property"),
    ("@syclexp.work_group_size_hint(4, 4, 4)\n@syclexp.nd_range_kernel(2)\n"
     "def k(x: sycl.int32):\n    pass\n", "3-dimensional property"),
])
def test_ill_formed_definitions_are_diagnosed(source, needle):
    err = _build_error(source)
    assert needle in str(err)
    assert "free function kernel k" in str(err)


def test_returning_a_value_is_diagnosed_at_its_line(tmp_path):
    path = tmp_path / "bad_kernel.py"
    path.write_text("import vksycl as sycl\n"
                    "from vksycl.ext.oneapi import experimental as syclexp\n\n"
                    "@syclexp.single_task_kernel\n"
                    "def k(x: sycl.int32):\n"
                    "    return x + 1\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    with pytest.raises(sycl.exception) as ei:
        spec.loader.exec_module(mod)
    assert ei.value.code() == sycl.errc.build
    assert f"{path}:4" in str(ei.value) and "returns a value" in str(ei.value)


def test_same_property_twice_with_the_same_argument_is_allowed():
    ns = {"sycl": sycl, "syclexp": syclexp}
    exec("@syclexp.nd_range_kernel(1)\n@syclexp.nd_range_kernel(1)\n"
         "@syclexp.work_group_size(8)\n@syclexp.work_group_size(8)\n"
         "def k(x: sycl.int32):\n    pass\n", ns)
    assert syclexp.is_nd_range_kernel(ns["k"], 1)
    assert ns["k"].properties == (syclexp.work_group_size(8),)


def test_captured_variables_are_diagnosed():
    scale = 2.0

    with pytest.raises(sycl.exception) as ei:
        @syclexp.single_task_kernel
        def k(p: sycl.ptr[sycl.float32]):
            p[0] = scale

    assert ei.value.code() == sycl.errc.build and "captures scale" in str(ei.value)


def test_a_parameter_without_device_type_is_diagnosed_when_launched(q, alloc):
    @syclexp.single_task_kernel
    def k(x: list):
        pass

    with pytest.raises(sycl.exception) as ei:
        syclexp.single_task(q, syclexp.kernel_function(k), [1])
    assert ei.value.code() == sycl.errc.build and "no device type" in str(ei.value)


def test_bad_property_arguments():
    for make in (lambda: syclexp.work_group_size(0), lambda: syclexp.work_group_size(1, 2, 3, 4),
                 lambda: syclexp.sub_group_size(-8), lambda: syclexp.nd_range_kernel(4)):
        with pytest.raises(sycl.exception) as ei:
            make()
        assert ei.value.code() == sycl.errc.invalid


# -- 2. traits, kernel_function, enqueue functions --------------------------------------------

def test_traits():
    assert syclexp.is_nd_range_kernel(iota, 1) and not syclexp.is_nd_range_kernel(iota, 2)
    assert syclexp.is_nd_range_kernel(grid3, 3)
    assert syclexp.is_single_task_kernel(answer) and not syclexp.is_single_task_kernel(iota)
    assert syclexp.is_kernel(iota) and syclexp.is_kernel(answer)
    assert syclexp.is_kernel(fill_t[sycl.int32])
    assert not syclexp.is_kernel(view) and not syclexp.is_kernel(3)
    kf = syclexp.kernel_function(iota)
    assert kf is syclexp.kernel_function(iota) and syclexp.is_nd_range_kernel(kf, 1)
    assert fill_t[sycl.float32] is fill_t[sycl.float32]
    with pytest.raises(sycl.exception) as ei:
        syclexp.kernel_function(view)
    assert ei.value.code() == sycl.errc.invalid


def test_nd_launch_on_a_queue_and_a_handler(q, alloc):
    a = alloc(64, np.float32)
    syclexp.nd_launch(q, sycl.nd_range((64,), (16,)), syclexp.kernel_function(iota), 3.5, a)
    q.wait()
    np.testing.assert_array_equal(view(a, 64), 3.5 + np.arange(64, dtype=np.float32))
    b = alloc(32, np.float32)
    q.submit(lambda h: syclexp.nd_launch(h, sycl.nd_range((32,), (8,)),
                                         syclexp.kernel_function(iota), -1.0, b)).wait()
    np.testing.assert_array_equal(view(b, 32), np.arange(32, dtype=np.float32) - 1)


def test_nd_launch_in_two_and_three_dimensions(q, alloc):
    out = alloc(8 * 12, np.int32)
    syclexp.nd_launch(q, sycl.nd_range((8, 12), (4, 4)), syclexp.kernel_function(grid2),
                      out, 12)
    q.wait()
    i, j = np.meshgrid(np.arange(8), np.arange(12), indexing="ij")
    np.testing.assert_array_equal(view(out, 96).reshape(8, 12), i * 100 + j)
    out3 = alloc(4 * 4 * 4, np.int32)
    syclexp.nd_launch(q, sycl.nd_range((4, 4, 4), (2, 2, 2)), syclexp.kernel_function(grid3),
                      out3)
    q.wait()
    z, y, x = np.meshgrid(np.arange(4), np.arange(4), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(view(out3, 64).reshape(4, 4, 4),
                                  (z // 2) * 4 + (y // 2) * 2 + x // 2)


def test_single_task_on_a_queue_and_a_handler(q, alloc):
    out = alloc(1, np.int64)
    syclexp.single_task(q, syclexp.kernel_function(answer), out, 2**40)
    q.wait()
    assert view(out, 1)[0] == 2**41
    q.submit(lambda h: syclexp.single_task(h, syclexp.kernel_function(answer), out, -5)).wait()
    assert view(out, 1)[0] == -10


def test_templates_instantiate_by_subscript(q, alloc):
    f = alloc(16, np.float32)
    i = alloc(16, np.int32)
    ndr = sycl.nd_range((16,), (8,))
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(fill_t[sycl.float32]), 2.5, f)
    syclexp.nd_launch(q, ndr, syclexp.kernel_function(fill_t[sycl.int32]), 7, i)
    q.wait()
    np.testing.assert_array_equal(view(f, 16), np.full(16, 2.5, np.float32))
    np.testing.assert_array_equal(view(i, 16), np.full(16, 7, np.int32))
    with pytest.raises(sycl.exception) as ei:
        syclexp.nd_launch(q, ndr, syclexp.kernel_function(fill_t), 1, i)
    assert ei.value.code() == sycl.errc.invalid and "template" in str(ei.value)


def test_launch_config_with_scratch_memory(q, alloc):
    out = alloc(64, np.int32)
    cfg = syclexp.launch_config(sycl.nd_range((64,), (16,)),
                                syclexp.properties(syclexp.work_group_scratch_size(16 * 4)))
    syclexp.nd_launch(q, cfg, syclexp.kernel_function(scratch_reverse), out)
    q.wait()
    expect = np.arange(64).reshape(4, 16)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(view(out, 64), expect)


def test_arguments_convert_as_cpp_converts(q, alloc):
    out = alloc(8, np.float64)
    syclexp.single_task(q, syclexp.kernel_function(convert), out,
                        0.1,                 # float -> float32
                        np.int8(-3),         # narrower int -> int64
                        300,                 # int -> uint8 wraps modulo 256
                        -7.9,                # float -> int32 truncates toward zero
                        Op.MUL,              # unscoped enum -> its value
                        Scoped.POS,          # scoped enum to its own parameter type
                        Affine(scale=1.5, shift=4),
                        3)                   # int -> bool
    q.wait()
    got = view(out, 8)
    np.testing.assert_array_equal(got, [np.float32(0.1), -3, 44, -7, 2, 9, 6, 1])
    for narrow in (np.float32(-7.9), np.float16(-7.5), np.longdouble(-7.9)):  # numpy floats
        syclexp.single_task(q, syclexp.kernel_function(convert), out, 0.1, 1, 1, narrow,
                            Op.MUL, Scoped.POS, Affine(scale=1.5, shift=4), 3)  # truncate too
        q.wait()
        assert view(out, 8)[3] == -7, narrow


def test_a_launch_converts_what_changed_and_every_mutable_value(q, alloc):
    """Values that are the very immutable objects of the launch before keep their
    conversion; a new number converts alone, a mutable one (a 0-d array) converts at
    every launch, whatever it holds then, and a new value that cannot convert still
    raises after a run of ones that did."""
    out = alloc(4, np.float32)
    step = np.array(1.0)  # mutable: the same object, another value each launch
    for k in range(6):
        step[()] = k + 0.5
        syclexp.nd_launch(q, sycl.nd_range((4,), (4,)), iota, step, out)
        q.wait()
        np.testing.assert_array_equal(view(out, 4), np.arange(4, dtype=np.float32) + k + 0.5)
    for k in range(6):  # new floats, the pointer the very object each time
        syclexp.nd_launch(q, sycl.nd_range((4,), (4,)), iota, 10.0 + k, out)
        q.wait()
        np.testing.assert_array_equal(view(out, 4), np.arange(4, dtype=np.float32) + 10 + k)
    with pytest.raises(sycl.exception) as ei:
        syclexp.nd_launch(q, sycl.nd_range((4,), (4,)), iota, "1.0", out)
    assert ei.value.code() == sycl.errc.invalid and "argument 0 (start)" in str(ei.value)
    kernel = syclexp.get_kernel_bundle(q.get_context(), iota, sycl.bundle_state.executable
                                       ).ext_oneapi_get_kernel(iota)
    for k in range(6):  # by index: the pointer set again each time, a new number
        q.submit(lambda h, k=k: (h.set_args(20.0 + k, out),
                                 h.parallel_for(sycl.nd_range((4,), (4,)), kernel))).wait()
        np.testing.assert_array_equal(view(out, 4), np.arange(4, dtype=np.float32) + 20 + k)
    with pytest.raises(sycl.exception) as ei:
        q.submit(lambda h: (h.set_args(np.int64(1), out),
                            h.parallel_for(sycl.nd_range((4,), (4,)), kernel)))
    assert ei.value.code() == sycl.errc.invalid and "got int64" in str(ei.value)


@pytest.mark.parametrize(("args", "needle"), [
    ((0.1, 1, 1, 1, Op.ADD, 9, Affine(1.0, 1), True), "is a Scoped"),
    ((0.1, 1, 1, 1, Op.ADD, Scoped.NEG, (1.0, 1), True), "is a Affine"),
    ((0.1, 1, 1, float("nan"), Op.ADD, Scoped.NEG, Affine(1.0, 1), True), "cannot convert"),
    ((1e300, 1, 1, 1, Op.ADD, Scoped.NEG, Affine(1.0, 1), True), "does not fit"),
    ((10**400, 1, 1, 1, Op.ADD, Scoped.NEG, Affine(1.0, 1), True), "does not fit"),
    ((0.1, 1, 1, 1, Op.ADD, Scoped.NEG, Affine(1.0, 1)), "takes 9 arguments"),
])
def test_arguments_that_do_not_convert(q, alloc, args, needle):
    out = alloc(8, np.float64)
    with pytest.raises(sycl.exception) as ei:
        syclexp.single_task(q, syclexp.kernel_function(convert), out, *args)
    assert ei.value.code() == sycl.errc.invalid and needle in str(ei.value)


def test_pointer_arguments_must_point_to_the_parameter_type(q, alloc):
    wrong = alloc(16, np.int32)
    with pytest.raises(sycl.exception) as ei:
        syclexp.nd_launch(q, sycl.nd_range((16,), (8,)), syclexp.kernel_function(iota), 1.0,
                          wrong)
    assert ei.value.code() == sycl.errc.invalid and "pointer to float32" in str(ei.value)
    with pytest.raises(sycl.exception):
        syclexp.nd_launch(q, sycl.nd_range((16,), (8,)), syclexp.kernel_function(iota), 1.0,
                          np.zeros(16, np.float32))


def test_mismatched_launches_raise_invalid(q, alloc):
    a = alloc(16, np.float32)
    out = alloc(1, np.int64)
    cases = [
        lambda: syclexp.nd_launch(q, sycl.nd_range((16,), (8,)),
                                  syclexp.kernel_function(answer), out, 1),
        lambda: syclexp.single_task(q, syclexp.kernel_function(iota), 1.0, a),
        lambda: syclexp.nd_launch(q, sycl.nd_range((4, 4), (2, 2)),
                                  syclexp.kernel_function(iota), 1.0, a),
        lambda: syclexp.nd_launch(q, sycl.range(16), syclexp.kernel_function(iota), 1.0, a),
        lambda: syclexp.nd_launch(object(), sycl.nd_range((16,), (8,)),
                                  syclexp.kernel_function(iota), 1.0, a),
    ]
    for case in cases:
        with pytest.raises(sycl.exception) as ei:
            case()
        assert ei.value.code() == sycl.errc.invalid


def test_work_group_size_property_is_enforced(q, alloc):
    out = alloc(32, np.int32)
    syclexp.nd_launch(q, sycl.nd_range((32,), (16,)), syclexp.kernel_function(fixed_wg), out)
    q.wait()
    np.testing.assert_array_equal(view(out, 32), np.full(32, 16))
    with pytest.raises(sycl.exception) as ei:
        syclexp.nd_launch(q, sycl.nd_range((32,), (8,)), syclexp.kernel_function(fixed_wg), out)
    assert ei.value.code() == sycl.errc.nd_range and "work_group_size(16,)" in str(ei.value)


def test_sub_group_size_property(q, alloc):
    sizes = q.get_device().get_info(sycl.info.device.sub_group_sizes)
    out = alloc(64, np.int32)
    if 8 in sizes:
        syclexp.nd_launch(q, sycl.nd_range((64,), (64,)), syclexp.kernel_function(hinted), out)
        q.wait()
        np.testing.assert_array_equal(view(out, 64), np.full(64, 5))
    missing = next(n for n in (3, 5, 7, 9) if n not in sizes)
    ns = {"sycl": sycl, "syclexp": syclexp, "this_work_item": this_work_item}
    exec(f"@syclexp.nd_range_kernel(1)\n@syclexp.sub_group_size({missing})\n"
         "def needs_odd(out: sycl.ptr[sycl.int32]):\n    out[0] = 1\n", ns)
    with pytest.raises(sycl.exception) as ei:
        syclexp.nd_launch(q, sycl.nd_range((8,), (8,)),
                          syclexp.kernel_function(ns["needs_odd"]), out)
    assert ei.value.code() == sycl.errc.kernel_not_supported
