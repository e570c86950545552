"""Compiler bugs found by users: each test runs the reported program on the device."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vksycl as sycl
from vksycl.exceptions import errc

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
    q.single_task(both[1]).wait()
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
