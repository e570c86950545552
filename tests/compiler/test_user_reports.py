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
    run = lambda: q.single_task(lambda: _store(out, 9))  # noqa: E731
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
