"""Compiler bugs found by users: each test runs the reported program on the device."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vksycl as sycl
from vksycl.exceptions import errc
from vksycl.ext.oneapi import experimental as syclexp

HERE = __file__


def _build_error(excinfo: pytest.ExceptionInfo, construct: str) -> str:
    """The message of a build error that names this file's line and the construct."""
    ex = excinfo.value
    assert ex.code() == errc.build
    msg = str(ex)
    assert re.search(re.escape(HERE) + r":\d+", msg), msg
    assert construct in msg, msg
    return msg


def _store(p, v):
    p[0] = v


def test_two_lambdas_on_one_line_compile_the_kernel_lambda(q, mem) -> None:
    out = mem.zeros(2, np.int32)
    run = lambda: q.single_task(lambda: _store(out, 9))
    run().wait()
    both = (lambda: _store(out + 1, 5), lambda: _store(out + 1, 6))
    q.single_task(both[0]).wait()
    assert mem.view(out, 2).tolist() == [9, 5]
    q.single_task(both[1]).wait()  # the same source lines: cached apart all the same
    assert mem.view(out, 2).tolist() == [9, 6]


def test_async_kernel_is_a_build_error(q, mem) -> None:
    a = mem.zeros(4, np.int32)

    async def k(i):
        a[i] = 1

    with pytest.raises(sycl.exception) as ei:
        q.parallel_for(sycl.range(4), k).wait()
    _build_error(ei, "async def")
    assert (mem.view(a, 4) == 0).all()


def test_constant_tuple_unpacks(q, mem) -> None:
    o = mem.zeros(3, np.int32)

    def k():
        a, (b, c) = 3, (4, 5)
        o[0] = a
        o[1] = b
        o[2] = c

    q.single_task(k).wait()
    assert mem.view(o, 3).tolist() == [3, 4, 5]


BIG = 1 << 40


def test_int_constant_that_does_not_fit_is_a_build_error(q, mem) -> None:
    out = mem.zeros(1, np.int32)

    def k1():
        out[0] = BIG

    def k2():
        out[0] = 2 ** 31 - 1 + 1

    for k, value in ((k1, BIG), (k2, 2 ** 31)):
        with pytest.raises(sycl.exception) as ei:
            q.single_task(k).wait()
        msg = _build_error(ei, f"integer constant {value} does not fit int32")
        assert "internal compiler error" not in msg
    wide = mem.zeros(1, np.int64)

    def k3():
        wide[0] = BIG

    q.single_task(k3).wait()
    assert mem.view(wide, 1)[0] == BIG


def test_captured_list_is_read_by_value_at_each_launch(q, mem) -> None:
    out = mem.zeros(2, np.int32)
    coeffs = [1, [2, 3]]

    def k():
        out[0] = coeffs[0]
        out[1] = coeffs[1][1]

    q.single_task(k).wait()
    assert mem.view(out, 2).tolist() == [1, 3]
    coeffs[1][1] = 7
    q.single_task(k).wait()
    assert mem.view(out, 2).tolist() == [1, 7]
    coeffs[0] = 4
    q.single_task(k).wait()
    assert mem.view(out, 2).tolist() == [4, 7]


def test_captured_dict_is_a_build_error(q, mem) -> None:
    out = mem.zeros(1, np.int32)
    table = {"a": 1}

    def k():
        out[0] = table["a"]

    with pytest.raises(sycl.exception) as ei:
        q.single_task(k).wait()
    _build_error(ei, "'table' is a dict")


class _Config:
    scale = 3
    offsets = (1, 2)


def test_attributes_of_a_captured_object_are_read_at_each_launch(q, mem) -> None:
    out = mem.zeros(2, np.int32)
    cfg = _Config()

    def k():
        out[0] = cfg.scale
        out[1] = cfg.offsets[1]

    q.single_task(k).wait()
    assert mem.view(out, 2).tolist() == [3, 2]
    cfg.scale = 5
    cfg.offsets = (1, 9)
    q.single_task(k).wait()
    assert mem.view(out, 2).tolist() == [5, 9]
    cfg.scale = 2.75  # another type: compiled again for a float
    fout = mem.zeros(1, np.float32)

    def kf():
        fout[0] = cfg.scale * 2

    q.single_task(kf).wait()
    assert mem.view(fout, 1)[0] == np.float32(5.5)


class _Solver:
    def __init__(self, q: sycl.queue, mem) -> None:
        self.a = mem.zeros(8, np.int32)
        self.q = q
        self.step = 2

    def run(self) -> None:
        def k(i):
            self.a[i] = i * self.step

        self.q.parallel_for(sycl.range(8), k).wait()

    def put(self, i) -> None:
        self.a[i] = i + self.step

    def run_method(self) -> None:
        def k(i):
            self.put(i)

        self.q.parallel_for(sycl.range(8), k).wait()


def test_pointer_attribute_of_self_is_a_kernel_argument(q, mem) -> None:
    s = _Solver(q, mem)
    s.run()
    assert mem.view(s.a, 8).tolist() == [i * 2 for i in range(8)]
    s.a = mem.zeros(8, np.int32)
    s.step = 3
    s.run()
    assert mem.view(s.a, 8).tolist() == [i * 3 for i in range(8)]
    s.run_method()
    assert mem.view(s.a, 8).tolist() == [i + 3 for i in range(8)]
    s.step = 10
    s.run_method()
    assert mem.view(s.a, 8).tolist() == [i + 10 for i in range(8)]


def test_pointer_from_another_context_is_invalid(q) -> None:
    from vksycl.kernels.launch import build_launch

    dev = q.get_device()
    q1 = sycl.queue(sycl.context(dev), dev)
    q2 = sycl.queue(sycl.context(dev), dev)
    a = sycl.malloc_shared(4, sycl.int32, q1)
    try:
        def k(i):
            a[i] = 5

        with pytest.raises(sycl.exception) as ei:
            build_launch(dev, k, sycl.range(4), context=q2.get_context())
        assert ei.value.code() == errc.invalid
        assert "kernel argument a: pointer from another context" in str(ei.value)
        q1.parallel_for(sycl.range(4), k).wait()
        assert np.asarray(a).tolist() == [5] * 4
    finally:
        sycl.free(a, q1)


@pytest.mark.parametrize("name,dtype", [("int64", np.int64), ("int16", np.int16),
                                        ("int8", np.int8)])
def test_hidden_integer_aspects_are_enforced(q, mem, monkeypatch, name, dtype) -> None:
    c = mem.zeros(1, dtype)

    def k():
        c[0] = dtype(3)

    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", name)
    with pytest.raises(sycl.exception) as ei:
        q.single_task(k).wait()
    assert ei.value.code() == errc.kernel_not_supported
    assert f"uses {name}" in str(ei.value)
    monkeypatch.delenv("VKSYCL_HIDE_ASPECTS")
    q.single_task(k).wait()
    assert mem.view(c, 1)[0] == 3


def test_2d_and_3d_ranges_past_65535_work_groups_in_x(q, mem) -> None:
    n = 65535 * 32 + 40  # 65537 work-groups of 32 along the fastest dimension
    out = mem.zeros(n, np.int32)

    def k(it):
        out[it[0] * n + it[1]] = it[1] + 1

    q.parallel_for(sycl.range(1, n), k).wait()
    assert (mem.view(out, n) == np.arange(1, n + 1)).all()

    shape = (2, 3, 65537)
    total = int(np.prod(shape))
    ids = mem.zeros(total, np.int32)
    groups = mem.zeros(total, np.int32)

    def k3(it):
        i = (it.get_global_id(0) * 3 + it.get_global_id(1)) * 65537 + it.get_global_id(2)
        ids[i] = i
        groups[i] = it.get_group(2) + it.get_group(1) * 100000 + it.get_group(0) * 1000000

    q.parallel_for(sycl.nd_range(shape, (1, 1, 1)), k3).wait()
    assert (mem.view(ids, total) == np.arange(total)).all()
    a, b, c = np.indices(shape).reshape(3, -1)
    assert (mem.view(groups, total) == c + b * 100000 + a * 1000000).all()


def test_sub_group_local_range_indexes_like_a_range(q, mem) -> None:
    o = mem.zeros(16, np.int32)

    def k(it):
        sg = it.get_sub_group()
        r = sg.get_local_range()
        o[it.get_global_id(0)] = r[0] * 100 + sg.get_local_id()[0] + sg.get_local_range()

    q.parallel_for(sycl.nd_range((16,), (16,)), k).wait()
    size = q.get_device().get_info(sycl.info.device.sub_group_sizes)[0]
    got = mem.view(o, 16)
    assert got.tolist() == [size * 101 + i % size for i in range(16)]


@syclexp.single_task_kernel()
def _doubled(out: sycl.ptr[sycl.int32], x: sycl.int32):
    out[0] = x * 2


def test_single_task_kernel_decorator_with_parentheses(q, mem) -> None:
    out = mem.zeros(1, np.int32)
    syclexp.single_task(q, syclexp.kernel_function(_doubled), out, 21)
    q.wait()
    assert mem.view(out, 1)[0] == 42


def test_messages_name_the_construct_once(q, mem) -> None:
    o = mem.zeros(2, np.int32)

    def lam():
        o[0] = (lambda: 1)

    def lst():
        o[0] = [1, 2][0]

    def scalar_index():
        x = o[1]
        o[0] = x[0]

    cases = ((lam, "a lambda is not supported in device code except as the function passed"),
             (lst, "a list (use a tuple) is not supported in device code"),
             (scalar_index, "an int32 value cannot be indexed"))
    for k, text in cases:
        with pytest.raises(sycl.exception) as ei:
            q.single_task(k).wait()
        msg = _build_error(ei, text)
        assert msg.count("not supported") <= 1 and "Body" not in msg, msg


def test_kernel_argument_overflow_names_the_argument(q, mem) -> None:
    o = mem.zeros(1, np.int32)
    small = np.int16(3)

    def k():
        o[0] = small

    q.single_task(k).wait()
    small = 1 << 40  # read by k at its next launch
    with pytest.raises(sycl.exception) as ei:
        q.single_task(k).wait()
    assert ei.value.code() == errc.kernel_argument
    assert "kernel argument small" in str(ei.value)


_OFFSET = 3


def _plus_offset(x):
    return x + _OFFSET


def test_global_read_by_a_device_function_is_not_stale(q, mem) -> None:
    global _OFFSET
    out = mem.zeros(1, np.int32)

    def k():
        out[0] = _plus_offset(10)

    try:
        q.single_task(k).wait()
        assert mem.view(out, 1)[0] == 13
        _OFFSET = 30
        q.single_task(k).wait()
        assert mem.view(out, 1)[0] == 40
    finally:
        _OFFSET = 3
