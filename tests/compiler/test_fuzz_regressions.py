"""What the differential fuzzer (`python -m fuzz`) found: wrong answers and refused
arguments, each reduced to a small kernel whose right values are written out by hand,
and a compile time that grew with the size of the kernel's file."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import vksycl as sycl


def test_min_and_max_compare_a_signed_with_an_unsigned_value_as_values(q, mem):
    """min(a, b) is b if b < a else a, and `<` compares the values: min(-1, uint32(2)) is
    -1 (0xffffffff as their common type), not 2."""
    a = mem.of(np.array([-1, 5, -7, 3], np.int32))
    b = mem.of(np.array([2, 3, 4, 5], np.uint32))
    out = mem.zeros(8, np.uint32)

    def body(i):
        out[2 * i] = min(a[i], b[i])
        out[2 * i + 1] = max(a[i], b[i])

    q.parallel_for(sycl.range(4), body).wait()
    got = mem.view(out, 8).reshape(4, 2)
    np.testing.assert_array_equal(got[:, 0], [2**32 - 1, 3, 2**32 - 7, 3])
    np.testing.assert_array_equal(got[:, 1], [2, 5, 4, 5])


def test_abs_of_a_narrow_integer_is_an_int(q, mem):
    """C++ integral promotion: abs(int8(-128)) is the int 128, not int8 -128."""
    x8 = mem.of(np.array([-128, -5, 7, 127], np.int8))
    x16 = mem.of(np.array([-32768, -3, 0, 32767], np.int16))
    out = mem.zeros(8, np.int32)

    def body(i):
        out[i] = abs(x8[i])
        out[4 + i] = abs(x16[i])

    q.parallel_for(sycl.range(4), body).wait()
    np.testing.assert_array_equal(mem.view(out, 8), [128, 5, 7, 127, 32768, 3, 0, 32767])


@sycl.struct
class Pair:
    small: sycl.uint8
    wide: sycl.int64


def test_a_struct_field_keeps_its_type_when_assigned_a_wider_value(q, mem):
    """`p.small = <int32>` converts to the field's uint8 (250 + 6 is 0), as a store to
    memory does; the field must not widen to the value's type."""
    out = mem.zeros(4, np.int32)

    def body(i):
        p = Pair(sycl.uint8(0), sycl.int64(0))
        p.small = 250 + i * 3
        out[i] = p.small + 1

    q.parallel_for(sycl.range(4), body).wait()
    np.testing.assert_array_equal(mem.view(out, 4), [251, 254, 1, 4])


def test_np_zeros_in_a_loop_makes_new_zeros_each_iteration(q, mem):
    out = mem.zeros(4, np.int32)

    def body(i):
        total = sycl.int32(0)
        for k in range(3):
            arr = np.zeros(4, np.int32)
            arr[k] = k + 1
            total += arr[0] + arr[1] + arr[2] + arr[3]
        out[i] = total + i

    q.parallel_for(sycl.range(4), body).wait()
    np.testing.assert_array_equal(mem.view(out, 4), [6, 7, 8, 9])


@sycl.struct
class Celsius:
    degrees: sycl.float32


@sycl.struct
class Kelvin:  # the same fields as Celsius: its memory is still Celsius memory
    degrees: sycl.float32


def test_two_structs_with_the_same_fields_stay_apart(q, mem):
    out = mem.of(np.zeros(4, Celsius.dtype))
    other = mem.of(np.zeros(4, Kelvin.dtype))

    def body(i):
        out[i] = Celsius(sycl.float32(i) * 1.5)
        other[i] = Kelvin(sycl.float32(i) + 273.0)

    q.parallel_for(sycl.range(4), body).wait()
    np.testing.assert_array_equal(np.asarray(out)[:4]["degrees"], [0.0, 1.5, 3.0, 4.5])
    np.testing.assert_array_equal(np.asarray(other)[:4]["degrees"], [273, 274, 275, 276])


def test_range_over_signed_and_unsigned_bounds_counts_as_python_does(q, mem):
    """range(n, -1, -1) with an unsigned n counts down to 0 (the -1 must not become
    0xffffffff), and range(-2, n) starts at -2."""
    n = mem.of(np.array([3, 0, 5], np.uint32))
    out = mem.zeros(9, np.int64)

    def body(i):
        down = sycl.int32(0)
        last = sycl.int64(-100)
        for k in range(n[i], -1, -1):
            down += 1
            last = k
        up = sycl.int64(0)
        for k in range(-2, n[i]):
            up += k
        out[3 * i] = down
        out[3 * i + 1] = last
        out[3 * i + 2] = up

    q.parallel_for(sycl.range(3), body).wait()
    got = mem.view(out, 9).reshape(3, 3)
    np.testing.assert_array_equal(got[:, 0], [4, 1, 6])
    np.testing.assert_array_equal(got[:, 1], [0, 0, 0])
    np.testing.assert_array_equal(got[:, 2], [sum(range(-2, m)) for m in (3, 0, 5)])


def test_int64_from_an_int32_compares_with_a_constant(q, mem):
    """lavapipe (Mesa 22.3) folds `int64(x32) < c` to false (and `>` to true) for any
    constant c an int32 holds; vksycl compares 64-bit values so that it cannot."""
    x = np.array([-20, -8, -1, 0, 1, 5, 7], np.int32)
    a = mem.of(x)
    out = mem.zeros(4 * len(x), np.int32)

    def body(i):
        w = sycl.int64(a[i])
        out[4 * i] = w < 5
        out[4 * i + 1] = w >= -8
        out[4 * i + 2] = 0 > w  # noqa: SIM300 (the constant first, as the bug needs)
        out[4 * i + 3] = w <= sycl.int64(1)

    q.parallel_for(sycl.range(len(x)), body).wait()
    got = mem.view(out, 4 * len(x)).reshape(-1, 4)
    np.testing.assert_array_equal(got[:, 0], x < 5)
    np.testing.assert_array_equal(got[:, 1], x >= -8)
    np.testing.assert_array_equal(got[:, 2], x < 0)
    np.testing.assert_array_equal(got[:, 3], x <= 1)


def test_a_captured_numpy_bool_is_a_kernel_argument(q, mem):
    out = mem.zeros(4, np.int32)
    for flag in (np.bool_(True), np.bool_(False)):

        def body(i):
            out[i] = 10 if flag else 20  # noqa: B023

        q.parallel_for(sycl.range(4), body).wait()
        np.testing.assert_array_equal(mem.view(out, 4), [10 if flag else 20] * 4)


def test_the_functions_of_one_file_are_found_from_one_walk_of_it(tmp_path, monkeypatch):
    """Finding a kernel's source walked the file's whole tree for every function: a
    module of many kernels (as the fuzzer writes them) compiled in time quadratic in its
    size. The file is now indexed once."""
    from vksycl.compiler import source

    path = tmp_path / "many_kernels.py"
    path.write_text("".join(f"def k{n}(x):\n    return x + {n}\n\n\n" for n in range(40)))
    spec = importlib.util.spec_from_file_location("many_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    walks = []
    walk = source.ast.walk
    monkeypatch.setattr(source.ast, "walk", lambda node: walks.append(node) or walk(node))
    found = [source.function_source(getattr(module, f"k{n}")) for n in range(40)]
    assert [f.name for f in found] == [f"k{n}" for n in range(40)]
    assert found[7].text == "def k7(x):\n    return x + 7\n"
    assert len(walks) == 1


def test_a_sub_groups_local_range_counts_its_work_items(q, mem):
    """Found on an NVIDIA GPU (32 lanes) with 16-item work-groups: get_local_range() of
    the sub-group is the number of its work-items, not the device's sub-group size
    (a work-group smaller than it, or its last sub-group when not a multiple)."""
    lanes = int(q.get_device().get_info(sycl.info.device.sub_group_sizes)[0])
    out = mem.zeros(4 * max(12, lanes + 4), np.int32)

    def body(it):
        g = it.get_global_id(0)
        out[g] = it.get_sub_group().get_local_range()[0]

    for wg in (4, 12, lanes // 2, lanes + 4):
        n = 4 * wg
        q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
        lid = np.arange(n) % wg
        want = np.minimum(lanes, wg - (lid // lanes) * lanes)
        np.testing.assert_array_equal(mem.view(out, n), want, err_msg=f"work-group {wg}")


def test_a_last_partial_sub_group_is_counted_and_reduced(q, mem):
    """Found with reductions over work-groups of 49 on lavapipe, whose NumSubgroups leaves
    out a last, partial sub-group (4 for 33 work-items of 8 lanes): get_group_range() of
    the sub-group counts it, and reduce_over_group over the work-group includes its
    work-items."""
    lanes = int(q.get_device().get_info(sycl.info.device.sub_group_sizes)[0])
    wg = lanes * 4 + 1
    n = 3 * wg
    x = mem.of(np.arange(1, n + 1, dtype=np.int32))
    ranges, sums = mem.zeros(n, np.int32), mem.zeros(n, np.int32)

    def body(it):
        g = it.get_global_id(0)
        ranges[g] = it.get_sub_group().get_group_range()[0]
        sums[g] = sycl.reduce_over_group(it.get_group(), x[g], sycl.plus())

    q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
    np.testing.assert_array_equal(mem.view(ranges, n), np.full(n, 5))
    want = np.repeat(np.arange(1, n + 1).reshape(3, wg).sum(axis=1), wg)
    np.testing.assert_array_equal(mem.view(sums, n), want)



@pytest.mark.parametrize("local", [(4, 4), (3, 5), (2, 2, 4)])
def test_group_algorithms_over_work_groups_of_narrow_rows(q, mem, local):
    """Found on lavapipe: a work-group whose rows are narrower than a sub-group gets a
    sub-group per row there, numbered as if sub-groups were full (a 4x4 work-group of
    8-lane sub-groups: ids 0, 0, 1, 1), so work-group reductions and scans through
    sub-groups mixed rows up. Each is checked against numpy per work-group."""
    groups = 2
    size = int(np.prod(local))
    launch = tuple(groups * e if d == 0 else e for d, e in enumerate(local))
    n = groups * size
    x = mem.of(np.arange(1, n + 1, dtype=np.int32) % 7)
    red, inc, exc = (mem.zeros(n, np.int32) for _ in range(3))

    def body(it):
        g = it.get_group_linear_id() * it.get_local_range().size() + \
            it.get_local_linear_id()
        v = x[g]
        red[g] = sycl.reduce_over_group(it.get_group(), v, sycl.plus())
        inc[g] = sycl.inclusive_scan_over_group(it.get_group(), v, sycl.plus())
        exc[g] = sycl.exclusive_scan_over_group(it.get_group(), v, sycl.maximum())

    q.parallel_for(sycl.nd_range(launch, local), body).wait()
    values = (np.arange(1, n + 1) % 7).reshape(groups, size)
    np.testing.assert_array_equal(mem.view(red, n).reshape(groups, size),
                                  np.repeat(values.sum(axis=1, keepdims=True), size, axis=1))
    np.testing.assert_array_equal(mem.view(inc, n).reshape(groups, size),
                                  np.cumsum(values, axis=1))
    running = np.maximum.accumulate(values, axis=1)
    lowest = np.iinfo(np.int32).min
    want = np.concatenate([np.full((groups, 1), lowest), running[:, :-1]], axis=1)
    np.testing.assert_array_equal(mem.view(exc, n).reshape(groups, size), want)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint64])
def test_shift_group_right_of_a_64_bit_value(q, mem, dtype):
    """Found on lavapipe: LLVM 15 crashed the process compiling a 64-bit ShuffleUp (and a
    64-bit shuffle from a lane computed from the lane's own id). shift_group_right moves
    a 64-bit value as two 32-bit halves; values whose halves differ check both."""
    lanes = int(q.get_device().get_info(sycl.info.device.sub_group_sizes)[0])
    n = 4 * lanes
    values = (np.arange(n, dtype=np.float64) * 2.0**33 + 0.5) if dtype == np.float64 else \
        np.arange(n, dtype=dtype) * (1 << 33) + 3
    x = mem.of(values.astype(dtype))
    out = mem.zeros(n, dtype)

    def body(it):
        i = it.get_global_id(0)
        out[i] = sycl.shift_group_right(it.get_sub_group(), x[i], 3)

    q.parallel_for(sycl.nd_range((n,), (2 * lanes,)), body).wait()
    got, lane = mem.view(out, n), np.arange(n) % lanes
    np.testing.assert_array_equal(got[lane >= 3], values.astype(dtype)[np.arange(n) - 3][
        lane >= 3])


def test_float64_remainder_trunc_and_round_past_2_to_31(q, mem):
    """Found with `a * a % 8.0` for a = 484830.0: lavapipe's float64 Trunc, Round and
    OpFRem return doubles of 2**31 and more unchanged, so the remainder was 0 (and a
    division by it inf). They are built from Floor and Ceil now."""
    import math
    values = np.array([484830.0**2, 29382516112.5, 2.0**31 - 0.5, -8589934592.25, 7.25,
                       -2.5, 1e15 + 0.5, 0.3], np.float64)
    n = len(values)
    x = mem.of(values)
    out = mem.zeros(4 * n, np.float64)

    def body(i):
        out[4 * i] = x[i] % 8.0
        out[4 * i + 1] = math.trunc(x[i])
        out[4 * i + 2] = sycl.round(x[i])
        out[4 * i + 3] = math.fmod(x[i], 8.0)

    q.parallel_for(sycl.range(n), body).wait()
    got = mem.view(out, 4 * n).reshape(n, 4)
    np.testing.assert_array_equal(got[:, 0], values % 8.0)
    np.testing.assert_array_equal(got[:, 1], np.trunc(values))
    np.testing.assert_array_equal(got[:, 2], np.sign(values) * np.floor(np.abs(values) + 0.5))
    np.testing.assert_array_equal(got[:, 3], np.fmod(values, 8.0))
