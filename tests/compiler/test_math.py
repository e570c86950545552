"""`math`, numpy and `sycl` math functions in kernels, against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vksycl as sycl

N = 64
X = np.linspace(-3.0, 3.0, N)
POS = np.linspace(0.01, 9.0, N)
UNIT = np.linspace(-0.99, 0.99, N)


def k_unary(fn, a, c):
    def body(i):
        c[i] = fn(a[i])
    return body


def k_binary(fn, a, b, c):
    def body(i):
        c[i] = fn(a[i], b[i])
    return body


UNARY = [
    (math.sqrt, np.sqrt, POS), (math.sin, np.sin, X), (math.cos, np.cos, X),
    (math.tan, np.tan, UNIT), (math.asin, np.arcsin, UNIT), (math.acos, np.arccos, UNIT),
    (math.atan, np.arctan, X), (math.sinh, np.sinh, X), (math.cosh, np.cosh, X),
    (math.tanh, np.tanh, X), (math.asinh, np.arcsinh, X), (math.acosh, np.arccosh, POS + 1),
    (math.atanh, np.arctanh, UNIT), (math.exp, np.exp, X), (math.exp2, np.exp2, X),
    (math.expm1, np.expm1, X * 1e-3), (math.log, np.log, POS), (math.log2, np.log2, POS),
    (math.log10, np.log10, POS), (math.log1p, np.log1p, POS * 1e-4),
    (math.fabs, np.fabs, X), (math.floor, np.floor, X), (math.ceil, np.ceil, X),
    (math.trunc, np.trunc, X), (math.degrees, np.degrees, X), (math.radians, np.radians, X),
    (np.sqrt, np.sqrt, POS), (sycl.rsqrt, lambda v: 1 / np.sqrt(v), POS),
    (sycl.cbrt, np.cbrt, X), (sycl.round, lambda v: np.copysign(np.floor(np.abs(v) + 0.5), v),
                              np.round(X * 2) / 2), (sycl.rint, np.rint, np.round(X * 2) / 2),
    (sycl.fract, lambda v: v - np.floor(v), X), (sycl.sign, np.sign, X),
    (sycl.native.exp, np.exp, X),
]
BINARY = [
    (math.atan2, np.arctan2, X, X[::-1]), (math.pow, np.power, POS, X),
    (math.fmod, np.fmod, X * 3, UNIT + 2), (math.copysign, np.copysign, X, X[::-1]),
    (math.hypot, np.hypot, X, X[::-1]), (sycl.fmin, np.fmin, X, X[::-1]),
    (sycl.fmax, np.fmax, X, X[::-1]), (sycl.fdim, lambda a, b: np.maximum(a - b, 0), X,
                                       X[::-1]),
    (min, np.minimum, X, X[::-1]), (max, np.maximum, X, X[::-1]),
]


def _name(f):
    return getattr(f, "__name__", str(f))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,ref,xs", UNARY, ids=[_name(u[0]) for u in UNARY])
def test_unary_math(q, mem, fn, ref, xs, dtype):
    x = xs.astype(dtype)
    a, c = mem.of(x), mem.zeros(N, dtype)
    q.parallel_for(sycl.range(N), k_unary(fn, a, c)).wait()
    # GLSL.std.450 precision for float32; float64 functions GLSL lacks are computed by
    # exact formulations in float64 (see test_float64_precision)
    np.testing.assert_allclose(mem.view(c, N), ref(x.astype(np.float64)), rtol=2e-5,
                               atol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,ref,xs,ys", BINARY, ids=[_name(b[0]) for b in BINARY])
def test_binary_math(q, mem, fn, ref, xs, ys, dtype):
    x, y = xs.astype(dtype), ys.astype(dtype)
    a, b, c = mem.of(x), mem.of(y), mem.zeros(N, dtype)
    q.parallel_for(sycl.range(N), k_binary(fn, a, b, c)).wait()
    np.testing.assert_allclose(mem.view(c, N), ref(x.astype(np.float64), y.astype(np.float64)),
                               rtol=2e-5, atol=2e-6)


def k_predicates(a, c):
    def body(i):
        x = a[i]
        c[i] = math.isnan(x) * 1 + math.isinf(x) * 2 + math.isfinite(x) * 4 + (x != x) * 8


    return body


def test_float_predicates(q, mem):
    x = np.array([0.0, np.nan, np.inf, -np.inf, 1.5, -2.0], np.float32)
    a, c = mem.of(x), mem.zeros(len(x), np.int32)
    q.parallel_for(sycl.range(len(x)), k_predicates(a, c)).wait()
    want = np.isnan(x) * 1 + np.isinf(x) * 2 + np.isfinite(x) * 4 + np.isnan(x) * 8
    np.testing.assert_array_equal(mem.view(c, len(x)), want)


def k_int_math(a, b, c):
    def body(i):
        x, y = a[i], b[i]
        c[5 * i] = abs(x)
        c[5 * i + 1] = min(x, y, 3)
        c[5 * i + 2] = max(x, y)
        c[5 * i + 3] = sycl.clamp(x, -5, 5)
        c[5 * i + 4] = sycl.popcount(sycl.uint32(y))
    return body


def test_integer_math(q, mem):
    x = np.arange(-20, 20, dtype=np.int32)
    y = x[::-1].copy() * 3
    a, b, c = mem.of(x), mem.of(y), mem.zeros(5 * len(x), np.int32)
    q.parallel_for(sycl.range(len(x)), k_int_math(a, b, c)).wait()
    got = mem.view(c, 5 * len(x)).reshape(-1, 5)
    np.testing.assert_array_equal(got[:, 0], np.abs(x))
    np.testing.assert_array_equal(got[:, 1], np.minimum(np.minimum(x, y), 3))
    np.testing.assert_array_equal(got[:, 2], np.maximum(x, y))
    np.testing.assert_array_equal(got[:, 3], np.clip(x, -5, 5))
    np.testing.assert_array_equal(got[:, 4], [bin(int(v) & 0xFFFFFFFF).count("1") for v in y])


def test_math_constants_fold(q, mem):
    c = mem.zeros(3, np.float64)

    def task():
        c[0] = math.pi * 2
        c[1] = math.sqrt(2.0)
        c[2] = math.inf if math.e > 2 else 0.0

    q.single_task(task).wait()
    np.testing.assert_array_equal(mem.view(c, 3), [math.pi * 2, math.sqrt(2.0), math.inf])


F64_CASES = [
    (math.exp, np.exp, np.linspace(-700, 700, 257)), (math.log, np.log, np.geomspace(1e-300,
                                                                                    1e300, 257)),
    (math.sin, np.sin, np.linspace(-100, 100, 257)), (math.cos, np.cos, np.linspace(-100, 100,
                                                                                   257)),
    (math.tan, np.tan, np.linspace(-1.5, 1.5, 257)), (math.atan, np.arctan,
                                                      np.linspace(-50, 50, 257)),
    (math.exp2, np.exp2, np.linspace(-60, 60, 257)), (math.log2, np.log2,
                                                      np.geomspace(1e-20, 1e20, 257)),
    (math.tanh, np.tanh, np.linspace(-5, 5, 257)), (math.sinh, np.sinh, np.linspace(-5, 5, 257)),
    (math.asin, np.arcsin, np.linspace(-1, 1, 257)),
]


@pytest.mark.parametrize("fn,ref,xs", F64_CASES, ids=[f[0].__name__ for f in F64_CASES])
def test_float64_precision(q, mem, fn, ref, xs):
    """Float64 transcendentals are float64-accurate, not float32 results widened."""
    n = len(xs)
    a, c = mem.of(xs), mem.zeros(n, np.float64)
    q.parallel_for(sycl.range(n), k_unary(fn, a, c)).wait()
    np.testing.assert_allclose(mem.view(c, n), ref(xs), rtol=1e-13, atol=1e-15)


def test_float64_special_values(q, mem):
    xs = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 5e-324, 1e-310])
    a, c = mem.of(xs), mem.zeros(2 * len(xs), np.float64)

    def body(i):
        c[2 * i] = math.exp(a[i])
        c[2 * i + 1] = math.log(a[i])

    q.parallel_for(sycl.range(len(xs)), body).wait()
    got = mem.view(c, 2 * len(xs)).reshape(-1, 2)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got[:, 0], np.exp(xs), rtol=1e-13)
        np.testing.assert_allclose(got[:, 1], np.log(xs), rtol=1e-13)
