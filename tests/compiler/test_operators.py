"""Every binary operator over a spread of type combinations, against numpy."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import vksycl as sycl

N = 64


def cpp_promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """C++ usual arithmetic conversions, written independently of the compiler."""
    if a.kind == "f" or b.kind == "f":
        return max((t for t in (a, b) if t.kind == "f"), key=lambda t: t.itemsize)

    def prom(t: np.dtype) -> np.dtype:
        return np.dtype(np.int32) if t.itemsize < 4 or t.kind == "b" else t

    a, b = prom(a), prom(b)
    if a == b:
        return a
    if a.kind == b.kind:
        return a if a.itemsize > b.itemsize else b
    s, u = (a, b) if a.kind == "i" else (b, a)
    return u if u.itemsize >= s.itemsize else s


def k_add(a, b, c):
    def body(i):
        c[i] = a[i] + b[i]
    return body


def k_sub(a, b, c):
    def body(i):
        c[i] = a[i] - b[i]
    return body


def k_mul(a, b, c):
    def body(i):
        c[i] = a[i] * b[i]
    return body


def k_truediv(a, b, c):
    def body(i):
        c[i] = a[i] / b[i]
    return body


def k_floordiv(a, b, c):
    def body(i):
        c[i] = a[i] // b[i]
    return body


def k_mod(a, b, c):
    def body(i):
        c[i] = a[i] % b[i]
    return body


def k_and(a, b, c):
    def body(i):
        c[i] = a[i] & b[i]
    return body


def k_or(a, b, c):
    def body(i):
        c[i] = a[i] | b[i]
    return body


def k_xor(a, b, c):
    def body(i):
        c[i] = a[i] ^ b[i]
    return body


def k_lshift(a, b, c):
    def body(i):
        c[i] = a[i] << b[i]
    return body


def k_rshift(a, b, c):
    def body(i):
        c[i] = a[i] >> b[i]
    return body


def k_pow(a, b, c):
    def body(i):
        c[i] = a[i] ** b[i]
    return body


ARITH = {"add": (k_add, np.add), "sub": (k_sub, np.subtract), "mul": (k_mul, np.multiply),
         "floordiv": (k_floordiv, np.floor_divide), "mod": (k_mod, np.mod)}
BITS = {"and": (k_and, np.bitwise_and), "or": (k_or, np.bitwise_or),
        "xor": (k_xor, np.bitwise_xor)}
INT_PAIRS = [("int32", "int32"), ("int8", "int16"), ("uint32", "int32"), ("int64", "int32"),
             ("uint8", "uint8"), ("uint64", "uint32"), ("int16", "uint16"), ("int32", "uint64")]
FLOAT_PAIRS = [("float32", "float32"), ("float32", "int32"), ("float64", "float32"),
               ("float16", "float16"), ("int8", "float64"), ("float16", "float32")]


def operands(ta: str, tb: str, nonzero: bool, small_b: bool = False):
    rng = np.random.default_rng(zlib.crc32(f"{ta},{tb}".encode()))

    def draw(t: str, positive: bool, small: bool) -> np.ndarray:
        dt = np.dtype(t)
        if dt.kind == "f":
            v = rng.uniform(-50, 50, N)
            if nonzero:
                v = np.where(np.abs(v) < 0.5, 1.5, v)
            return v.astype(dt)
        lo = 0 if (dt.kind == "u" or positive) else -100
        hi = 6 if small else 100
        v = rng.integers(lo, hi, N)
        if nonzero:
            v = np.where(v == 0, 3, v)
        return v.astype(dt)

    return draw(ta, False, False), draw(tb, small_b, small_b)


@pytest.mark.parametrize("op", list(ARITH))
@pytest.mark.parametrize("ta,tb", INT_PAIRS + FLOAT_PAIRS)
def test_arithmetic(q, mem, op, ta, tb):
    kernel, ref = ARITH[op]
    x, y = operands(ta, tb, nonzero=op in ("floordiv", "mod"))
    rt = cpp_promote(x.dtype, y.dtype)
    a, b, c = mem.of(x), mem.of(y), mem.zeros(N, rt)
    q.parallel_for(sycl.range(N), kernel(a, b, c)).wait()
    with np.errstate(all="ignore"):
        want = ref(x.astype(rt), y.astype(rt))
    got = mem.view(c, N)
    if rt.kind == "f":
        rtol = 2e-3 if rt.itemsize == 2 else 1e-6
        # Vulkan computes a float remainder as x - y * trunc(x / y): its error scales with x
        atol = rtol * 100 if op == "mod" else 0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ta,tb", INT_PAIRS + FLOAT_PAIRS)
def test_true_division(q, mem, ta, tb):
    x, y = operands(ta, tb, nonzero=True)
    rt = cpp_promote(x.dtype, y.dtype)
    if rt.kind != "f":
        rt = np.dtype(np.float64 if rt.itemsize == 8 else np.float32)
    a, b, c = mem.of(x), mem.of(y), mem.zeros(N, rt)
    q.parallel_for(sycl.range(N), k_truediv(a, b, c)).wait()
    want = x.astype(np.float64) / y.astype(np.float64)
    np.testing.assert_allclose(mem.view(c, N), want, rtol=2e-3 if rt.itemsize == 2 else 1e-6)


@pytest.mark.parametrize("op", list(BITS))
@pytest.mark.parametrize("ta,tb", INT_PAIRS)
def test_bitwise(q, mem, op, ta, tb):
    kernel, ref = BITS[op]
    x, y = operands(ta, tb, nonzero=False)
    rt = cpp_promote(x.dtype, y.dtype)
    a, b, c = mem.of(x), mem.of(y), mem.zeros(N, rt)
    q.parallel_for(sycl.range(N), kernel(a, b, c)).wait()
    np.testing.assert_array_equal(mem.view(c, N), ref(x.astype(rt), y.astype(rt)))


@pytest.mark.parametrize("kernel,ref", [(k_lshift, np.left_shift), (k_rshift, np.right_shift)])
@pytest.mark.parametrize("ta", ["int32", "uint32", "int64", "int8", "uint16"])
def test_shifts(q, mem, kernel, ref, ta):
    x, y = operands(ta, "int32", nonzero=False, small_b=True)
    rt = cpp_promote(x.dtype, x.dtype)
    a, b, c = mem.of(x), mem.of(y), mem.zeros(N, rt)
    q.parallel_for(sycl.range(N), kernel(a, b, c)).wait()
    np.testing.assert_array_equal(mem.view(c, N), ref(x.astype(rt), y.astype(rt)))


@pytest.mark.parametrize("ta,tb", [("int32", "int32"), ("int64", "int32"), ("uint32", "uint32"),
                                   ("float32", "int32"), ("float32", "float32"),
                                   ("float64", "float64")])
def test_power(q, mem, ta, tb):
    x, y = operands(ta, tb, nonzero=False, small_b=True)
    if np.dtype(tb).kind == "f":
        x = np.abs(x) % 5
        y = np.abs(y) % 3
    else:
        x = x % 13
    rt = cpp_promote(x.dtype, y.dtype)
    a, b, c = mem.of(x), mem.of(y), mem.zeros(N, rt)
    q.parallel_for(sycl.range(N), k_pow(a, b, c)).wait()
    want = np.power(x.astype(rt), y.astype(rt))
    if rt.kind == "f":
        np.testing.assert_allclose(mem.view(c, N), want, rtol=1e-5)
    else:
        np.testing.assert_array_equal(mem.view(c, N), want)


def k_compare(a, b, c):
    def body(i):
        x = a[i]
        y = b[i]
        c[i] = (x < y) + 2 * (x <= y) + 4 * (x > y) + 8 * (x >= y) + 16 * (x == y) \
            + 32 * (x != y)
    return body


@pytest.mark.parametrize("ta,tb", INT_PAIRS + FLOAT_PAIRS + [("int32", "uint32"),
                                                            ("int64", "uint64")])
def test_comparisons_are_mathematical(q, mem, ta, tb):
    """Mixed signed/unsigned comparisons compare values, as Python does (not C++)."""
    x, y = operands(ta, tb, nonzero=False)
    if np.dtype(tb).kind == "f" and np.dtype(ta).kind == "f":
        y[:8] = x[:8]
        x[8] = np.nan
    a, b, c = mem.of(x), mem.of(y), mem.zeros(N, np.int32)
    q.parallel_for(sycl.range(N), k_compare(a, b, c)).wait()
    xo, yo = x.astype(object), y.astype(object)
    if x.dtype.kind == "f" or y.dtype.kind == "f":
        xo, yo = x.astype(np.float64), y.astype(np.float64)
    want = ((xo < yo) * 1 + (xo <= yo) * 2 + (xo > yo) * 4 + (xo >= yo) * 8
            + (xo == yo) * 16 + (xo != yo) * 32).astype(np.int32)
    np.testing.assert_array_equal(mem.view(c, N), want)


def k_unary(a, c):
    def body(i):
        x = a[i]
        c[4 * i] = -x
        c[4 * i + 1] = +x
        c[4 * i + 2] = abs(x)
        c[4 * i + 3] = not x
    return body


def k_invert(a, c):
    def body(i):
        c[i] = ~a[i]
    return body


@pytest.mark.parametrize("t", ["int32", "int8", "int64", "float32", "float64", "float16"])
def test_unary(q, mem, t):
    x, _ = operands(t, t, nonzero=False)
    x[0] = 0
    rt = cpp_promote(x.dtype, x.dtype)
    a, c = mem.of(x), mem.zeros(4 * N, rt)
    q.parallel_for(sycl.range(N), k_unary(a, c)).wait()
    got = mem.view(c, 4 * N).reshape(N, 4)
    xr = x.astype(rt)
    np.testing.assert_array_equal(got[:, 0], -xr)
    np.testing.assert_array_equal(got[:, 1], xr)
    np.testing.assert_array_equal(got[:, 2], np.abs(xr))
    np.testing.assert_array_equal(got[:, 3], (x == 0).astype(rt))


@pytest.mark.parametrize("t", ["int32", "uint8", "int64", "uint32"])
def test_invert(q, mem, t):
    x, _ = operands(t, t, nonzero=False)
    rt = cpp_promote(x.dtype, x.dtype)
    a, c = mem.of(x), mem.zeros(N, rt)
    q.parallel_for(sycl.range(N), k_invert(a, c)).wait()
    np.testing.assert_array_equal(mem.view(c, N), ~x.astype(rt))


def k_casts(a, c):
    def body(i):
        x = a[i]
        c[8 * i] = sycl.int32(x)
        c[8 * i + 1] = sycl.uint8(sycl.int32(x))
        c[8 * i + 2] = sycl.int8(sycl.int32(x))
        c[8 * i + 3] = sycl.float16(x)
        c[8 * i + 4] = int(x)
        c[8 * i + 5] = float(x)
        c[8 * i + 6] = bool(x)
        c[8 * i + 7] = round(x)
    return body


def test_casts(q, mem):
    x = np.array([-300.7, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 255.9, 1000.25, 3.99], np.float64)
    a, c = mem.of(x), mem.zeros(8 * len(x), np.float64)
    q.parallel_for(sycl.range(len(x)), k_casts(a, c)).wait()
    got = mem.view(c, 8 * len(x)).reshape(-1, 8)
    t = np.trunc(x).astype(np.int32)
    np.testing.assert_array_equal(got[:, 0], t)
    np.testing.assert_array_equal(got[:, 1], t.astype(np.uint8))
    np.testing.assert_array_equal(got[:, 2], t.astype(np.int8))
    np.testing.assert_array_equal(got[:, 3], x.astype(np.float16))
    np.testing.assert_array_equal(got[:, 4], t)
    np.testing.assert_array_equal(got[:, 5], x.astype(np.float32))
    np.testing.assert_array_equal(got[:, 6], x != 0)
    np.testing.assert_array_equal(got[:, 7], np.round(x))


def k_literals(a, c):
    def body(i):
        x = a[i]
        c[4 * i] = x * 2.5
        c[4 * i + 1] = x / 4
        c[4 * i + 2] = 3 - x
        c[4 * i + 3] = 2 ** 10 + (7 // 2) * x
    return body


@pytest.mark.parametrize("t", ["float16", "float32", "float64", "int32", "int64"])
def test_python_literals_take_the_operand_type(q, mem, t):
    x = np.arange(-5, 11).astype(t)
    ft = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    a, c = mem.of(x), mem.zeros(4 * len(x), np.float64)
    q.parallel_for(sycl.range(len(x)), k_literals(a, c)).wait()
    got = mem.view(c, 4 * len(x)).reshape(-1, 4)
    np.testing.assert_array_equal(got[:, 0], (x.astype(ft) * ft.type(2.5)).astype(np.float64))
    np.testing.assert_allclose(got[:, 1], x / 4, rtol=1e-3)
    np.testing.assert_array_equal(got[:, 2], 3 - x.astype(np.float64))
    np.testing.assert_array_equal(got[:, 3], 1024 + 3 * x.astype(np.float64))


def k_by_powers_of_two(a, quotients, remainders):
    def body(i):
        x = a[i]
        for col, d in ((0, 1), (1, 2), (2, 8), (3, 1024)):  # shifts and masks
            quotients[i * 5 + col] = x // d
            remainders[i * 5 + col] = x % d
        quotients[i * 5 + 4] = x // 12  # not a power of two: a division
        remainders[i * 5 + 4] = x % 12
    return body


@pytest.mark.parametrize("ta", ["int32", "int64", "uint32", "uint64", "int8", "uint16"])
def test_floor_division_and_modulo_by_powers_of_two(q, mem, ta):
    """`x // 2**k` and `x % 2**k` compile to a shift and a mask: Python's results, negative
    x and each type's extremes included."""
    info = np.iinfo(ta)
    x = np.random.default_rng(3).integers(info.min, info.max, N, endpoint=True, dtype=ta)
    x[:4] = [info.min, info.max, 0, -1 if info.min < 0 else 1]
    rt = cpp_promote(x.dtype, x.dtype)
    a, quo, rem = mem.of(x), mem.zeros(5 * N, rt), mem.zeros(5 * N, rt)
    q.parallel_for(sycl.range(N), k_by_powers_of_two(a, quo, rem)).wait()
    wide = x.astype(rt)
    for col, d in enumerate((1, 2, 8, 1024, 12)):
        np.testing.assert_array_equal(mem.view(quo, 5 * N)[col::5], wide // rt.type(d))
        np.testing.assert_array_equal(mem.view(rem, 5 * N)[col::5], wide % rt.type(d))
