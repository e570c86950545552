"""Control flow, variables, device functions, structs, private arrays and tuples."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vksycl as sycl


def collatz_steps(x: int) -> int:
    steps = 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


def test_while_loop_and_conditional_expression(q, mem):
    n = 100
    out = mem.zeros(n, np.int32)

    def body(i):
        out[i] = collatz_steps(i + 1)

    q.parallel_for(sycl.range(n), body).wait()
    np.testing.assert_array_equal(mem.view(out, n), [collatz_steps(k + 1) for k in range(n)])


def test_nested_loops_with_break_and_continue(q, mem):
    n = 40
    out = mem.zeros(n, np.int32)

    def body(i):
        total = 0
        for a in range(i):
            if a % 3 == 0:
                continue
            for b in range(a, 50, 7):
                if b > i + 10:
                    break
                if (a + b) % 5 == 0:
                    continue
                total += a * b
        out[i] = total

    def ref(i):
        total = 0
        for a in range(i):
            if a % 3 == 0:
                continue
            for b in range(a, 50, 7):
                if b > i + 10:
                    break
                if (a + b) % 5 == 0:
                    continue
                total += a * b
        return total

    q.parallel_for(sycl.range(n), body).wait()
    np.testing.assert_array_equal(mem.view(out, n), [ref(i) for i in range(n)])


def first_index_above(data, n, limit):
    for k in range(n):
        if data[k] > limit:
            return k
    return -1


def test_early_return_inside_loops(q, mem):
    values = np.array([3, 9, 1, 12, 5, 30, 2, 8], np.int32)
    limits = np.array([0, 4, 10, 11, 29, 30, 100], np.int32)
    data, lim = mem.of(values), mem.of(limits)
    out = mem.zeros(len(limits), np.int32)

    def body(i):
        out[i] = first_index_above(data, 8, lim[i])

    q.parallel_for(sycl.range(len(limits)), body).wait()
    want = [next((k for k, v in enumerate(values) if v > m), -1) for m in limits]
    np.testing.assert_array_equal(mem.view(out, len(limits)), want)


def test_descending_and_variable_step_ranges(q, mem):
    n = 12
    out = mem.zeros(n, np.int32)

    def body(i):
        s = 0
        for k in range(20, 0, -3):
            s += k * i
        step = i % 4 + 1
        for k in range(0, 30, step):
            s -= k
        if i % 2 == 0:
            for _k in range(10, -5, -(i % 3 + 1)):
                s += 1
        out[i] = s

    def ref(i):
        s = sum(k * i for k in range(20, 0, -3))
        s -= sum(range(0, 30, i % 4 + 1))
        if i % 2 == 0:
            s += len(range(10, -5, -(i % 3 + 1)))
        return s

    q.parallel_for(sycl.range(n), body).wait()
    np.testing.assert_array_equal(mem.view(out, n), [ref(i) for i in range(n)])


def test_short_circuit_protects_out_of_bounds_reads(q, mem):
    n = 64
    m = 10
    data = mem.of(np.arange(m, dtype=np.float32) + 1)
    out = mem.zeros(n, np.float32)

    def body(i):
        ok = i < m and data[i] > 3.0
        out[i] = data[i] if i < m and ok else (-1.0 if i >= m or data[i] < 2.0 else 0.0)

    q.parallel_for(sycl.range(n), body).wait()
    want = [k + 1 if k < m and k + 1 > 3 else (-1 if k >= m or k + 1 < 2 else 0)
            for k in range(n)]
    np.testing.assert_array_equal(mem.view(out, n), want)


def test_comparison_chains_and_bool_values(q, mem):
    n = 30
    out = mem.zeros(n, np.int32)

    def body(i):
        a = 5 < i <= 20
        b = i % 2 == 0 or i % 3 == 0
        c = not (a and b)
        out[i] = a * 1 + b * 2 + c * 4 + (3 < i < 9 != 7) * 8

    q.parallel_for(sycl.range(n), body).wait()
    want = []
    for i in range(n):
        a, b = 5 < i <= 20, i % 2 == 0 or i % 3 == 0
        want.append(a + 2 * b + 4 * (not (a and b)) + 8 * (3 < i < 9 != 7))
    np.testing.assert_array_equal(mem.view(out, n), want)


def test_variables_widen_to_the_types_assigned(q, mem):
    n = 16
    x = mem.of(np.linspace(0, 1, n).astype(np.float32))
    out = mem.zeros(n, np.float32)

    def body(i):
        acc = 0
        for k in range(i + 1):
            acc += x[k]
        out[i] = acc

    q.parallel_for(sycl.range(n), body).wait()
    want = np.cumsum(np.linspace(0, 1, n).astype(np.float32))
    np.testing.assert_allclose(mem.view(out, n), want, rtol=1e-6)


def test_tuples_unpacking_swap_and_divmod(q, mem):
    n = 20
    out = mem.zeros(3 * n, np.int32)

    def body(i):
        a, b = i, 100 - i
        a, b = b, a
        qd, r = divmod(a, 7)
        t = (qd, r, b)
        out[3 * i] = t[0]
        out[3 * i + 1] = t[1]
        out[3 * i + 2] = t[2]

    q.parallel_for(sycl.range(n), body).wait()
    want = [v for i in range(n) for v in (*divmod(100 - i, 7), i)]
    np.testing.assert_array_equal(mem.view(out, 3 * n), want)


# -- device functions --------------------------------------------------------------------


def scale_add(p, n, s, offset=1.0):
    for k in range(n):
        p[k] = p[k] * s + offset


def min_max(p, n):
    lo = p[0]
    hi = p[0]
    for k in range(1, n):
        lo = min(lo, p[k])
        hi = max(hi, p[k])
    return lo, hi


def clamp01(x):
    if x < 0:
        return 0.0
    if x > 1:
        return 1.0
    return x


def test_device_functions_with_pointers_defaults_and_tuple_returns(q, mem):
    rows, cols = 8, 5
    host = np.random.default_rng(1).uniform(-2, 2, (rows, cols)).astype(np.float32)
    a = mem.of(host)
    stats = mem.zeros(3 * rows, np.float32)

    def body(i):
        row = a + i * cols
        scale_add(row, cols, 0.5)
        lo, hi = min_max(row, cols)
        stats[3 * i] = lo
        stats[3 * i + 1] = hi
        stats[3 * i + 2] = clamp01(hi - lo)

    q.parallel_for(sycl.range(rows), body).wait()
    scaled = host * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_allclose(mem.view(a, rows * cols).reshape(rows, cols), scaled, rtol=1e-6)
    got = mem.view(stats, 3 * rows).reshape(rows, 3)
    np.testing.assert_allclose(got[:, 0], scaled.min(1), rtol=1e-6)
    np.testing.assert_allclose(got[:, 1], scaled.max(1), rtol=1e-6)
    np.testing.assert_allclose(got[:, 2], np.clip(scaled.max(1) - scaled.min(1), 0, 1),
                               rtol=1e-6)


@sycl.struct
class Particle:
    x: sycl.float32
    y: sycl.float32
    mass: sycl.float32
    alive: sycl.int32


@sycl.struct
class Params:
    gravity: sycl.float32
    steps: sycl.int32
    out: sycl.ptr[sycl.float32]


def step(p, dt, g):
    if p.alive != 0:
        p.y = p.y - g * dt * p.mass
        p.x = p.x + dt
    return p


def energy(p: Particle) -> float:
    return p.mass * p.y


def test_structs_in_memory_by_value_and_with_pointer_fields(q, mem):
    n = 10
    host = np.zeros(n, Particle.dtype)
    host["x"] = np.arange(n)
    host["y"] = 100
    host["mass"] = np.arange(n) * 0.5 + 1
    host["alive"] = np.arange(n) % 3 != 0
    parts = mem.of(host)
    out = mem.zeros(n, np.float32)
    params = Params(gravity=9.5, steps=4, out=out)

    def body(i):
        p = parts[i]
        for _ in range(params.steps):
            p = step(p, 0.25, params.gravity)
        parts[i] = p
        params.out[i] = energy(p)
        parts[i].mass = parts[i].mass + 1.0

    q.parallel_for(sycl.range(n), body).wait()
    got = np.asarray(parts)[:n].copy()
    alive = host["alive"] != 0
    y = np.where(alive, 100 - 4 * 9.5 * 0.25 * host["mass"], 100).astype(np.float32)
    np.testing.assert_allclose(got["y"], y, rtol=1e-5)
    np.testing.assert_allclose(got["x"], host["x"] + np.where(alive, 1.0, 0.0))
    np.testing.assert_allclose(got["mass"], host["mass"] + 1)
    np.testing.assert_allclose(mem.view(out, n), host["mass"] * y, rtol=1e-5)


def test_struct_constructed_in_kernel(q, mem):
    n = 8
    out = mem.zeros(n, np.float32)

    def body(i):
        p = Particle(sycl.float32(i), 2.0, 3.0, 1)
        p.mass = p.mass * 2
        out[i] = energy(step(p, 1.0, 0.5))

    q.parallel_for(sycl.range(n), body).wait()
    np.testing.assert_allclose(mem.view(out, n), np.full(n, 6.0 * (2.0 - 0.5 * 6.0)))


def test_private_arrays(q, mem):
    n = 16
    out = mem.zeros(n, np.int32)

    def body(i):
        fib = np.zeros(12, np.int32)
        fib[0] = 0
        fib[1] = 1
        for k in range(2, 12):
            fib[k] = fib[k - 1] + fib[k - 2]
        grid = sycl.private_array(sycl.int32, (3, 4))
        for r in range(3):
            for c in range(4):
                grid[r, c] = r * 10 + c
        out[i] = fib[i % 12] + grid[i % 3, i % 4] + fib[-1] - 89

    q.parallel_for(sycl.range(n), body).wait()
    fib = [0, 1]
    for _ in range(10):
        fib.append(fib[-1] + fib[-2])
    np.testing.assert_array_equal(mem.view(out, n),
                                  [fib[i % 12] + (i % 3) * 10 + i % 4 for i in range(n)])


def test_multidimensional_ranges_round_up_and_guard(q, mem):
    rows, cols = 13, 37
    out = mem.zeros(rows * cols, np.int32)

    def body(it):
        r = it.get_id(0)
        c = it[1]
        out[r * it.get_range(1) + c] = r * 1000 + c + it.get_linear_id() * 0

    q.parallel_for(sycl.range(rows, cols), body).wait()
    want = np.add.outer(np.arange(rows) * 1000, np.arange(cols))
    np.testing.assert_array_equal(mem.view(out, rows * cols).reshape(rows, cols), want)


def test_three_dimensional_range(q, mem):
    shape = (3, 5, 9)
    out = mem.zeros(int(np.prod(shape)), np.int32)

    def body(it):
        out[it.get_linear_id()] = it[0] * 100 + it[1] * 10 + it[2]

    q.parallel_for(sycl.range(*shape), body).wait()
    i, j, k = np.indices(shape)
    np.testing.assert_array_equal(mem.view(out, out_n := int(np.prod(shape))),
                                  (i * 100 + j * 10 + k).reshape(out_n))


def test_single_task_and_captured_scalars(q, mem):
    out = mem.zeros(4, np.float64)
    scale = 2.5
    count = np.int64(7)
    flag = True

    def task():
        out[0] = scale * count
        out[1] = sycl.float64(count) / 2
        out[2] = 1.0 if flag else 0.0
        out[3] = math.pi

    q.single_task(task).wait()
    np.testing.assert_array_equal(mem.view(out, 4), [17.5, 3.5, 1.0, math.pi])


def test_captured_scalars_change_without_recompiling(q, mem):
    from vksycl.compiler import kernel

    out = mem.zeros(4, np.float32)
    before = len(kernel._MEMORY)
    for k in range(3):
        factor = float(k)

        def body(i):
            out[i] = i * factor  # noqa: B023 - launched before the next iteration

        q.parallel_for(sycl.range(4), body).wait()
        np.testing.assert_array_equal(mem.view(out, 4), np.arange(4) * float(k))
    assert len(kernel._MEMORY) == before + 1


def test_large_1d_range_is_split_over_y(q, mem, monkeypatch):
    from vksycl.kernels import device_checks, plans, variants

    real = q.get_device().vulkan.max_compute_work_group_count
    limit = min(real[0], 4096)  # split at 4096 groups, whatever the device allows
    monkeypatch.setattr(device_checks, "_limits", lambda device: (limit, real[1], real[2]))
    plans._PREPARED.clear()
    wg = variants.launch_shape(sycl.range(1), q.get_device())[2][0]
    n = limit * wg * 3 + 1000
    out = sycl.malloc_device(n, np.int32, q)
    check = mem.zeros(4, np.int32)

    def body(i):
        out[i] = i

    def verify():
        check[0] = out[0]
        check[1] = out[n - 1]
        check[2] = out[limit * wg]
        check[3] = out[n // 2]

    q.parallel_for(sycl.range(n), body).wait()
    q.single_task(verify).wait()
    sycl.free(out, q)
    np.testing.assert_array_equal(mem.view(check, 4), [0, n - 1, limit * wg, n // 2])


@pytest.mark.parametrize("dtype", ["int8", "uint16", "float16", "bool"])
def test_narrow_types_in_memory(q, mem, dtype):
    n = 50
    x = (np.arange(n) % 7).astype(dtype)
    a = mem.of(x)
    out = mem.zeros(n, dtype)

    def body(i):
        out[i] = a[i] if i % 2 == 0 else a[n - 1 - i]

    q.parallel_for(sycl.range(n), body).wait()
    want = np.where(np.arange(n) % 2 == 0, x, x[::-1])
    np.testing.assert_array_equal(mem.view(out, n), want)


def fill_squares(arr, n, base):
    for k in range(n):
        arr[k] = (base + k) * (base + k)


def total(arr, n):
    s = 0
    for k in range(n):
        s += arr[k]
    return s


@sycl.struct
class Flagged:
    value: sycl.int32
    on: sycl.bool_


def test_private_and_local_pointers_passed_to_device_functions(q, mem):
    from vksycl.compiler import work_group_memory

    n, wg = 64, 16
    out = mem.zeros(2 * n, np.int32)

    def body(it):
        i = it.get_global_id(0)
        priv = np.zeros(6, np.int32)
        fill_squares(priv, 6, i)
        shared = work_group_memory(np.int32, 16)
        lid = it.get_local_id(0)
        fill_squares(shared + lid, 1, lid)
        sycl.group_barrier(it.get_group())
        out[2 * i] = total(priv, 6)
        out[2 * i + 1] = total(shared, 16)

    q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
    got = mem.view(out, 2 * n).reshape(n, 2)
    np.testing.assert_array_equal(got[:, 0], [sum((i + k) ** 2 for k in range(6))
                                              for i in range(n)])
    np.testing.assert_array_equal(got[:, 1], sum(k * k for k in range(16)))


def test_struct_with_bool_field_in_memory(q, mem):
    n = 10
    host = np.zeros(n, Flagged.dtype)
    host["value"] = np.arange(n)
    host["on"] = np.arange(n) % 3 == 0
    items = mem.of(host)
    out = mem.zeros(n, np.int32)

    def body(i):
        f = items[i]
        out[i] = f.value * 10 if f.on else -f.value
        items[i].on = not f.on

    q.parallel_for(sycl.range(n), body).wait()
    on = np.arange(n) % 3 == 0
    np.testing.assert_array_equal(mem.view(out, n), np.where(on, np.arange(n) * 10,
                                                             -np.arange(n)))
    np.testing.assert_array_equal(np.asarray(items)[:n]["on"], ~on)


@sycl.struct
class Vec:
    x: sycl.float32
    y: sycl.float32

    def dot(self, other):
        return self.x * other.x + self.y * other.y

    def scaled(self, k):
        return Vec(self.x * k, self.y * k)


@sycl.struct
class Buffers:
    src: sycl.ptr[sycl.float32]
    dst: sycl.ptr[sycl.float32]
    bias: sycl.float32


def apply(bufs, i):
    v = Vec(bufs.src[2 * i], bufs.src[2 * i + 1])
    w = v.scaled(2.0)
    bufs.dst[i] = v.dot(w) + bufs.bias


def test_struct_methods_and_decomposed_struct_arguments(q, mem):
    n = 12
    src = mem.of(np.arange(2 * n, dtype=np.float32))
    dst = mem.zeros(n, np.float32)
    bufs = Buffers(src=src, dst=dst, bias=0.5)

    def body(i):
        apply(bufs, i)

    q.parallel_for(sycl.range(n), body).wait()
    x, y = np.arange(0, 2 * n, 2.0), np.arange(1, 2 * n, 2.0)
    np.testing.assert_allclose(mem.view(dst, n), 2 * (x * x + y * y) + 0.5)


GLOBAL_BUF = None
GLOBAL_SCALE = 2


def global_kernel(i):
    GLOBAL_BUF[i] = GLOBAL_BUF[i] * GLOBAL_SCALE


def test_module_globals_are_tracked(q, mem):
    global GLOBAL_BUF, GLOBAL_SCALE
    GLOBAL_BUF = mem.of(np.arange(8, dtype=np.float32))
    q.parallel_for(sycl.range(8), global_kernel).wait()
    np.testing.assert_array_equal(mem.view(GLOBAL_BUF, 8), np.arange(8) * 2)
    GLOBAL_BUF, GLOBAL_SCALE = mem.of(np.arange(8, dtype=np.int64)), 3
    q.parallel_for(sycl.range(8), global_kernel).wait()
    np.testing.assert_array_equal(mem.view(GLOBAL_BUF, 8), np.arange(8) * 3)
