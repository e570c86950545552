"""`sycl.unroll`: full unrolling in the frontend (no loop left in the SPIR-V, the counter a
constant), the `Unroll` and `DontUnroll` loop controls, unrolling by a factor with its
remainder, the host meaning (the range itself), and the build errors (each naming this
file and the line, found by its marker comment)."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.kernels.launch import compiled


def marker_line(marker: str) -> int:
    with open(__file__) as f:
        lines = [n for n, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(lines) == 1, marker
    return lines[0]


def loop_controls(q, body, n: int = 4) -> list[str]:
    asm = compiled(q.get_device(), body, sycl.range(n)).spirv_asm()
    return [line.split()[-1] for line in asm.splitlines() if "OpLoopMerge" in line]


def test_a_short_constant_loop_is_unrolled_in_the_frontend(q, mem):
    out = mem.zeros(4, np.int32)

    def body(i):
        tile = sycl.private_array(np.int32, 8)
        for k in sycl.unroll(range(8)):
            tile[k] = k * (i + 1)
        acc = 0
        for k in sycl.unroll(range(7, -1, -2)):
            acc += tile[k]
        out[i] = acc + k  # the loop variable keeps its last value, as in Python

    assert loop_controls(q, body) == []
    q.parallel_for(sycl.range(4), body).wait()
    assert mem.view(out, 4).tolist() == [(7 + 5 + 3 + 1) * (i + 1) + 1 for i in range(4)]


def test_a_runtime_count_asks_the_driver_and_a_factor_of_1_forbids(q, mem):
    out = mem.zeros(4, np.int32)
    n = 10

    def body(i):
        acc = 0
        for k in sycl.unroll(range(n)):
            acc += k
        for k in sycl.unroll(range(8), 1):
            acc += k
        for _ in sycl.unroll(range(1000)):  # too long to copy: the driver is asked
            acc += 1
        for k in sycl.unroll(range(8)):
            if k == i:
                break  # a loop that exits early is the driver's to unroll
            acc += 100
        out[i] = acc

    assert loop_controls(q, body) == ["Unroll", "DontUnroll", "Unroll", "Unroll"]
    q.parallel_for(sycl.range(4), body).wait()
    assert mem.view(out, 4).tolist() == [45 + 28 + 1000 + 100 * i for i in range(4)]


@pytest.mark.parametrize("factor", [2, 3, 4])
def test_unrolling_by_a_factor_keeps_the_remainder(q, mem, factor):
    out = mem.zeros(8, np.int64)
    n = 13

    def body(i):
        acc = sycl.int64(0)
        for k in sycl.unroll(range(i, n + i), factor):
            acc += k * k
        for k in sycl.unroll(range(30, i, -4), factor):
            acc += k
        for k in sycl.unroll(range(i % 3), factor):  # fewer iterations than the factor
            acc += 1000 * (k + 1)
        out[i] = acc

    controls = loop_controls(q, body, 8)
    assert controls == ["None"] * 6  # a main loop of copies and a remainder, thrice
    q.parallel_for(sycl.range(8), body).wait()
    assert mem.view(out, 8).tolist() == [
        sum(k * k for k in range(i, 13 + i)) + sum(range(30, i, -4)) +
        sum(1000 * (k + 1) for k in range(i % 3)) for i in range(8)]


def test_unroll_is_the_range_on_the_host():
    assert list(sycl.unroll(range(3))) == [0, 1, 2]
    assert list(sycl.unroll(range(5), 2)) == list(range(5))


def test_misuse_is_refused(q):
    def not_a_range(i):
        for _ in sycl.unroll((1, 2, 3)):  # E:notrange
            pass

    def bad_factor(i):
        for _ in sycl.unroll(range(4), 0):  # E:factor
            pass

    for body, marker, text in ((not_a_range, "E:notrange", "takes a range(...)"),
                               (bad_factor, "E:factor", "positive integer")):
        with pytest.raises(sycl.exception) as info:
            q.parallel_for(sycl.range(4), body).wait()
        assert info.value.code() == sycl.errc.build
        assert f"test_unrolling.py:{marker_line(marker)}" in str(info.value)
        assert text in str(info.value)
