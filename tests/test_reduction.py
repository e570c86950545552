"""sycl::reduction (SYCL 2020 section 4.9.2) on USM pointers and spans: every combiner over
the types it applies to, with and without initialize_to_identity, several reductions in
one kernel, range and nd_range kernels (with barriers, local memory and group algorithms
beside the reducers), early returns and loops in the body, user-function combiners, span
(array) reductions, dependencies, in-order and out-of-order queues, USM device, shared and
host targets, command graphs, errors, and repeated launches. Every value is computed on
the device and checked against numpy: integers exactly (wrapping as the device does),
floats within 1e-5 of numpy's float64 result (float16: 1e-2), minimum and maximum
exactly."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "float32", "float64"]
ARITHMETIC = ("plus", "multiplies", "minimum", "maximum")
BITWISE = ("bit_and", "bit_or", "bit_xor")
LOGICAL = ("logical_and", "logical_or")


def init_to_identity() -> list:
    return [sycl.property.reduction.initialize_to_identity()]


def props(reset: bool) -> list | None:
    """The property list of a reduction: initialize_to_identity when `reset`."""
    return init_to_identity() if reset else None


def combiner(name: str):
    return getattr(sycl, name)()


# -- numpy's side ----------------------------------------------------------------------------

NUMPY_OPS = {"plus": np.add, "multiplies": np.multiply, "minimum": np.minimum,
             "maximum": np.maximum, "bit_and": np.bitwise_and, "bit_or": np.bitwise_or,
             "bit_xor": np.bitwise_xor, "logical_and": np.logical_and,
             "logical_or": np.logical_or}


def bits_as(value: int, dtype) -> np.generic:
    """The integer of `dtype` whose bits are the low bits of `value`."""
    dt = np.dtype(dtype)
    u = np.dtype(f"uint{8 * dt.itemsize}")
    return np.array([value & int(np.iinfo(u).max)], u).view(dt)[0]


def identity_of(name: str, dtype) -> np.generic:
    """SYCL 2020's known identities (Table 'identities of the known combiners')."""
    dt = np.dtype(dtype)
    if name == "logical_and":
        return np.True_
    if name == "logical_or":
        return np.False_
    if name in ("plus", "bit_or", "bit_xor"):
        return dt.type(0)
    if name == "multiplies":
        return dt.type(1)
    if name == "bit_and":
        return bits_as(-1, dt)
    if dt.kind == "f":
        return dt.type(np.inf if name == "minimum" else -np.inf)
    info = np.iinfo(dt)
    return dt.type(info.max if name == "minimum" else info.min)


def reference(name: str, x: np.ndarray):
    """x reduced by the combiner: integers in x's dtype (wrapping, as the device does),
    float sums and products in float64, minimum and maximum exactly."""
    if x.size == 0:
        return identity_of(name, x.dtype)
    if x.dtype.kind == "f" and name in ("plus", "multiplies"):
        x = x.astype(np.float64)
    return NUMPY_OPS[name].reduce(x, dtype=x.dtype)


def sample(name: str, dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Data for a reduction by `name` whose result tells a right reduction from a wrong
    one: integers over their whole range (sums and products wrap), odd factors (a product
    of them never wraps to 0), bit patterns that leave some bits set and some clear."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.ones(n, np.bool_) if name == "logical_and" else np.zeros(n, np.bool_)
    if dt.kind == "f":
        if name == "plus":
            return rng.uniform(0, 1, n).astype(dt)
        if name == "multiplies":  # ±1 with a few 2s and 0.5s: exact in every float type
            mags = np.ones(n)
            k = min(n // 2, 6)
            idx = rng.permutation(n)
            mags[idx[:k]] = 2.0
            mags[idx[k:2 * k]] = 0.5
            return (rng.choice([-1.0, 1.0], n) * mags).astype(dt)
        return rng.uniform(-1000, 1000, n).astype(dt)
    bits = 8 * dt.itemsize
    u = np.dtype(f"uint{bits}")
    info = np.iinfo(dt)
    if name in ("minimum", "maximum"):  # away from the extremes, where the sentinels are
        lo, hi = (info.min // 2, info.max // 2) if info.min < 0 else (info.max // 4,
                                                                      info.max // 2)
        return rng.integers(lo, hi, n, dtype=dt, endpoint=True)
    raw = rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True)
    if name == "multiplies":
        raw |= u.type(1)
    elif name == "bit_and":  # every value has the alternating bits 0101...: the AND keeps them
        raw |= u.type(int("01" * (bits // 2), 2))
    elif name == "bit_or":  # one bit each, never bits 1 and bits-2
        allowed = [b for b in range(bits) if b not in (1, bits - 2)]
        raw = (u.type(1) << rng.choice(allowed, n).astype(u)).astype(u)
    return raw.view(dt)


def sentinel(name: str, dtype) -> np.generic:
    """An initial value of the target that changes the result when it is combined."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.False_ if name == "logical_and" else np.True_
    if dt.kind == "f":
        return dt.type({"plus": 3.5, "multiplies": -2.0, "minimum": -5000.0,
                        "maximum": 5000.0}[name])
    info = np.iinfo(dt)
    return {"plus": dt.type(3), "multiplies": dt.type(3),
            "minimum": dt.type(info.min + 1 if info.min < 0 else 1),
            "maximum": dt.type(info.max - 1),
            "bit_and": bits_as(~4, dt),             # clears bit 2, which every value has
            "bit_or": bits_as(2, dt),               # bit 1, which no value has
            "bit_xor": bits_as(0x5A, dt)}[name]


def check(got, want, dtype, exact: bool = False) -> None:
    dt = np.dtype(dtype)
    got = np.asarray(got)
    if dt.kind == "f" and not exact:
        rtol = 1e-2 if dt == np.float16 else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(want, np.float64),
                                   rtol=rtol)
    else:
        np.testing.assert_array_equal(got, np.asarray(want, dt))


def expected(name: str, x: np.ndarray, init, reset: bool):
    """The final value of a target holding `init` reduced over x."""
    return reference(name, x if reset else np.append(x, np.asarray(init, x.dtype)))


def combine_body(a):
    def body(i, s):
        s.combine(a[i])
    return body


def operator_body(name: str, a):
    """`s op= a[i]`, the operator SYCL gives the reducer of each known combiner."""
    if name == "plus":
        def body(i, s):
            s += a[i]
    elif name == "multiplies":
        def body(i, s):
            s *= a[i]
    elif name == "bit_and":
        def body(i, s):
            s &= a[i]
    elif name == "bit_or":
        def body(i, s):
            s |= a[i]
    elif name == "bit_xor":
        def body(i, s):
            s ^= a[i]
    else:
        raise AssertionError(name)
    return body


# -- every combiner over every type it applies to ----------------------------------------------

CASES = ([(c, t) for c in ARITHMETIC for t in INTS + FLOATS]
         + [(c, t) for c in BITWISE for t in INTS])


@pytest.mark.parametrize("reset", [False, True], ids=["initial", "identity"])
@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{c}-{t}" for c, t in CASES])
def test_every_combiner_and_type(q, mem, usm, name, dtype, reset):
    n = 1000
    x = sample(name, dtype, n, np.random.default_rng(CASES.index((name, dtype))))
    a = mem.of(x)
    init = sentinel(name, dtype)
    t = usm.of([init], dtype)
    red = sycl.reduction(t, combiner(name), property_list=props(reset))
    q.parallel_for(sycl.range(n), red, combine_body(a)).wait()
    check(usm.read(t), expected(name, x, init, reset), dtype,
          exact=name in ("minimum", "maximum"))


OPERATOR_CASES = ([("plus", t) for t in ("int8", "int32", "uint64", "float16", "float32",
                                         "float64")]
                  + [("multiplies", t) for t in ("int16", "uint32", "int64", "float32",
                                                 "float64")]
                  + [(c, t) for c in BITWISE for t in ("uint8", "int32", "int64")])


@pytest.mark.parametrize("name,dtype", OPERATOR_CASES,
                         ids=[f"{c}-{t}" for c, t in OPERATOR_CASES])
def test_reducer_operators(q, mem, usm, name, dtype):
    """`+=` for plus, `*=` multiplies, `&=` bit_and, `|=` bit_or, `^=` bit_xor."""
    n = 777
    x = sample(name, dtype, n, np.random.default_rng(3))
    a = mem.of(x)
    init = sentinel(name, dtype)
    t = usm.of([init], dtype)
    q.parallel_for(sycl.range(n), sycl.reduction(t, combiner(name)),
                   operator_body(name, a)).wait()
    check(usm.read(t), expected(name, x, init, False), dtype)


@pytest.mark.parametrize("reset", [False, True], ids=["initial", "identity"])
@pytest.mark.parametrize("name", LOGICAL)
def test_logical_combiners_on_bool(q, mem, usm, name, reset):
    n = 1000
    rng = np.random.default_rng(4)
    same = sample(name, "bool", n, rng)           # all True for and, all False for or
    odd_one = same.copy()
    odd_one[rng.integers(n)] = not same[0]        # one item changes the result
    for x in (same, odd_one):
        a = mem.of(x)
        for init in (np.True_, np.False_):
            t = usm.of([init], np.bool_)
            red = sycl.reduction(t, combiner(name), property_list=props(reset))
            q.parallel_for(sycl.range(n), red, combine_body(a)).wait()
            assert usm.read(t)[0] == expected(name, x, init, reset), (x.sum(), init)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32"])
def test_logical_combiners_take_values_as_truth(q, mem, usm, dtype):
    """A bool reducer combines a number as its truth value, as a store into bool memory and
    C++'s conversion to `bool` do: 2, 256, -1 and 0.5 are true, 0 is false."""
    n = 500
    values = {"int32": [2, 256, -1, 7], "uint8": [2, 255, 1, 128],
              "float32": [0.5, -2.5, 1e-3, 3.0]}[dtype]
    truthy = np.resize(np.array(values, dtype), n)
    with_zero = truthy.copy()
    with_zero[123] = 0
    results = []
    for x in (truthy, with_zero):
        a = mem.of(x)
        for name in LOGICAL:
            t = usm.of([name == "logical_or"], np.bool_)  # not the identity
            q.parallel_for(sycl.range(n), sycl.reduction(t, combiner(name),
                                                         property_list=init_to_identity()),
                           combine_body(a)).wait()
            results.append((name, bool(x.all()), usm.read(t).view(np.uint8)[0]))
    want = [("logical_and", True, 1), ("logical_or", True, 1),
            ("logical_and", False, 0), ("logical_or", False, 1)]
    assert results == want


def test_logical_or_of_comparisons(q, mem, usm):
    """`any(x > limit)` and `all(x >= 0)` as a user writes them."""
    n = 4099
    x = np.random.default_rng(5).uniform(0, 1, n).astype(np.float32)
    x[1234] = 7.0
    a = mem.of(x)
    hits = [usm.of([False], np.bool_) for _ in range(3)]
    alls = usm.of([True], np.bool_)

    def body(i, over1, over5, over9, nonneg):
        over1.combine(a[i] > 1.0)
        over5.combine(a[i] > 5.0)
        over9.combine(a[i] > 9.0)
        nonneg.combine(a[i] >= 0.0)

    reds = [sycl.reduction(p, sycl.logical_or()) for p in hits]
    q.parallel_for(sycl.range(n), *reds, sycl.reduction(alls, sycl.logical_and()),
                   body).wait()
    assert [usm.read(p)[0] for p in hits] == [True, True, False]
    assert usm.read(alls)[0]


# -- sizes -------------------------------------------------------------------------------------

SIZE_CASES = [("plus", "int32"), ("plus", "float32"), ("maximum", "float32"),
              ("bit_xor", "uint32")]


@pytest.mark.parametrize("n", [1, 7, 1000003])
@pytest.mark.parametrize("name,dtype", SIZE_CASES, ids=[f"{c}-{t}" for c, t in SIZE_CASES])
def test_sizes_that_are_multiples_of_nothing(q, mem, usm, name, dtype, n):
    x = sample(name, dtype, n, np.random.default_rng(n))
    a = mem.of(x)
    init = sentinel(name, dtype)
    t = usm.of([init], dtype)
    q.parallel_for(sycl.range(n), sycl.reduction(t, combiner(name)), combine_body(a)).wait()
    check(usm.read(t), expected(name, x, init, False), dtype, exact=name == "maximum")


def test_empty_range_leaves_the_initial_value_or_the_identity(q, usm):
    for name, dtype in (("plus", "int32"), ("minimum", "float32"), ("bit_and", "uint16"),
                        ("multiplies", "float64")):
        a = usm.of(np.arange(4), dtype)
        init = sentinel(name, dtype)
        kept = usm.of([init], dtype)
        reset = usm.of([init], dtype)
        q.parallel_for(sycl.range(0), sycl.reduction(kept, combiner(name)),
                       combine_body(a)).wait()
        q.parallel_for(sycl.range(0),
                       sycl.reduction(reset, combiner(name), property_list=init_to_identity()),
                       combine_body(a)).wait()
        check(usm.read(kept), init, dtype, exact=True)
        check(usm.read(reset), identity_of(name, dtype), dtype, exact=True)


# -- targets ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["device", "shared", "host"])
def test_usm_targets_of_every_kind(q, usm, kind):
    n = 4099
    x = np.random.default_rng(6).integers(-1000, 1000, n).astype(np.int32)
    a = usm.of(x, kind=kind)
    kept = usm.of([99], np.int32, kind=kind)
    reset = usm.of([-12345], np.int32, kind=kind)
    big = usm.of([-1.0], np.float64, kind=kind)

    def body(i, s, r, m):
        s += a[i]
        r += a[i]
        m.combine(a[i] * 0.5)

    q.parallel_for(sycl.range(n), sycl.reduction(kept, sycl.plus()),
                   sycl.reduction(reset, sycl.plus(), property_list=init_to_identity()),
                   sycl.reduction(big, sycl.maximum()), body).wait()
    assert usm.read(kept)[0] == x.sum() + 99
    assert usm.read(reset)[0] == x.sum()
    assert usm.read(big)[0] == max(x.max() * 0.5, -1.0)


def test_target_inside_an_array_leaves_its_neighbours(q, mem, usm):
    x = np.arange(1, 101, dtype=np.int64)
    a = mem.of(x)
    arr = usm.of(np.full(8, -7, np.int64))
    q.parallel_for(sycl.range(100), sycl.reduction(arr + 3, sycl.plus()),
                   combine_body(a)).wait()
    want = np.full(8, -7, np.int64)
    want[3] = 5050 - 7
    np.testing.assert_array_equal(usm.read(arr, 8), want)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "float16"])
def test_narrow_targets_side_by_side(q, mem, usm, dtype):
    """Reductions into neighbouring elements of one array of 1- and 2-byte elements (in one
    kernel, and in two kernels in flight at once), and a span between untouched
    neighbours: each writes its own element and nothing beside it."""
    n = 200
    x = (np.arange(n) % 3).astype(dtype)
    a = mem.of(x)
    init = np.full(16, 5, dtype)
    init[3] = 1
    arr = usm.of(init)

    def body(i, s, m):
        s += a[i]
        m.combine(a[i])

    q.parallel_for(sycl.range(n), sycl.reduction(arr + 2, sycl.plus()),
                   sycl.reduction(arr + 3, sycl.maximum()), body).wait()
    e1 = q.parallel_for(sycl.range(n), sycl.reduction(arr + 5, sycl.plus()),
                        combine_body(a))
    e2 = q.parallel_for(sycl.range(n), sycl.reduction(arr + 6, sycl.plus(),
                                                      property_list=init_to_identity()),
                        combine_body(a))
    sycl.event.wait([e1, e2])

    def hist(i, s):
        s[i % 4] += a[i]

    q.parallel_for(sycl.range(n), sycl.reduction(sycl.span(arr + 9, 4), sycl.plus()),
                   hist).wait()
    want = init.copy()
    total = reference("plus", x)
    want[2] = reference("plus", np.append(x, want[2]))
    want[3] = 2
    want[5] = reference("plus", np.append(x, want[5]))
    want[6] = total
    want[9:13] = [reference("plus", np.append(x[k::4], want[9 + k])) for k in range(4)]
    np.testing.assert_array_equal(usm.read(arr, 16), want)


def test_target_in_the_input_allocation(q, usm):
    """The target is the element after the inputs in the same allocation."""
    n = 1000
    x = np.arange(n, dtype=np.int32)
    buf = usm.of(np.append(x, np.int32(17)))
    q.parallel_for(sycl.range(n), sycl.reduction(buf + n, sycl.plus()),
                   combine_body(buf)).wait()
    got = usm.read(buf, n + 1)
    np.testing.assert_array_equal(got[:n], x)
    assert got[n] == x.sum() + 17


def test_identity_given_explicitly_for_a_known_combiner(q, mem, usm):
    """An explicit identity (as an int for a float target, and as a numpy scalar) works as
    the known one."""
    x = np.random.default_rng(8).uniform(-5, 5, 999).astype(np.float32)
    a = mem.of(x)
    s = usm.of([100.0], np.float32)
    m = usm.of([100.0], np.float32)
    q.parallel_for(sycl.range(999), sycl.reduction(s, 0, sycl.plus()),
                   sycl.reduction(m, np.float32(np.inf), sycl.minimum(),
                                  property_list=init_to_identity()),
                   lambda i, r1, r2: (r1.combine(a[i]), r2.combine(a[i]))).wait()
    check(usm.read(s), x.astype(np.float64).sum() + 100.0, np.float32)
    check(usm.read(m), x.min(), np.float32, exact=True)


def test_property_list_as_the_last_positional_argument(q, mem, usm):
    """`sycl.reduction(target, [identity,] combiner, property_list=None)`: the property
    list may follow the combiner positionally, as in C++."""
    a = mem.of(np.arange(10, dtype=np.int32))
    s = usm.of([100], np.int32)
    m = usm.of([100], np.int32)
    q.parallel_for(sycl.range(10), sycl.reduction(s, sycl.plus(), init_to_identity()),
                   sycl.reduction(m, 0, sycl.maximum(), init_to_identity()),
                   lambda i, r1, r2: (r1.combine(a[i]), r2.combine(a[i]))).wait()
    assert usm.read(s)[0] == 45 and usm.read(m)[0] == 9


@pytest.mark.parametrize("dtype", INTS + FLOATS)
def test_identity_as_a_python_number(q, mem, usm, dtype):
    """The identity written as a user writes it: a Python int (a float for floating
    targets), for a target of any type, unsigned ones included."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        cases = [(0, "plus"), (0.0, "plus"), (1.0, "multiplies"), (float("inf"), "minimum"),
                 (float("-inf"), "maximum")]
    else:
        info = np.iinfo(dt)
        cases = [(0, "plus"), (1, "multiplies"), (int(info.max), "minimum"),
                 (int(info.min), "maximum"), (0, "bit_or"), (0, "bit_xor")]
        if dt.kind == "u":
            cases.append((int(info.max), "bit_and"))
    rng = np.random.default_rng(34)
    for ident, name in cases:
        x = sample(name, dt, 11, rng)
        a = mem.of(x)
        init = sentinel(name, dt)
        t = usm.of([init], dt)
        q.parallel_for(sycl.range(11), sycl.reduction(t, ident, combiner(name)),
                       combine_body(a)).wait()
        check(usm.read(t), expected(name, x, init, False), dt,
              exact=name in ("minimum", "maximum"))


# -- several reductions in one kernel ----------------------------------------------------------

def test_sum_and_max_in_one_kernel(q, mem, usm):
    n = 100003
    x = np.random.default_rng(9).normal(0, 1, n).astype(np.float32)
    x = np.abs(x)
    a = mem.of(x)
    s = usm.of([0.0], np.float32)
    m = usm.of([0.0], np.float32)

    def body(i, total, biggest):
        v = a[i]
        total += v
        biggest.combine(v)

    q.parallel_for(sycl.range(n), sycl.reduction(s, sycl.plus()),
                   sycl.reduction(m, sycl.maximum()), body).wait()
    check(usm.read(s), x.astype(np.float64).sum(), np.float32)
    check(usm.read(m), x.max(), np.float32, exact=True)


def test_three_reductions_of_three_types_and_kinds(q, mem, usm):
    n = 5003
    rng = np.random.default_rng(10)
    x = rng.integers(-30000, 30000, n).astype(np.int16)
    a = mem.of(x)
    total = usm.of([10], np.int64, kind="device")
    low = usm.of([0], np.int16, kind="host")
    bits = usm.of([0], np.uint32, kind="shared")

    def body(i, s, lo, b):
        v = a[i]
        s += sycl.int64(v)
        lo.combine(v)
        b |= sycl.uint32(1) << sycl.uint32(i % 29)

    q.parallel_for(sycl.range(n), sycl.reduction(total, sycl.plus()),
                   sycl.reduction(low, sycl.minimum(), property_list=init_to_identity()),
                   sycl.reduction(bits, sycl.bit_or()), body).wait()
    assert usm.read(total)[0] == x.astype(np.int64).sum() + 10
    assert usm.read(low)[0] == x.min()
    assert usm.read(bits)[0] == (1 << 29) - 1


def test_the_same_data_reduced_into_many_targets(q, mem, usm):
    """Six reductions in one kernel, each of another combiner."""
    n = 3001
    x = np.random.default_rng(11).integers(1, 1 << 20, n).astype(np.int32)
    a = mem.of(x)
    names = ("plus", "minimum", "maximum", "bit_and", "bit_or", "bit_xor")
    ts = [usm.of([identity_of(c, np.int32)], np.int32) for c in names]

    def body(i, r0, r1, r2, r3, r4, r5):
        v = a[i]
        r0 += v
        r1.combine(v)
        r2.combine(v)
        r3 &= v
        r4 |= v
        r5 ^= v

    q.parallel_for(sycl.range(n), *[sycl.reduction(t, combiner(c))
                                    for t, c in zip(ts, names, strict=True)], body).wait()
    for t, c in zip(ts, names, strict=True):
        assert usm.read(t)[0] == reference(c, x), c


# -- nd_range kernels ---------------------------------------------------------------------------

@pytest.mark.parametrize("n,wg", [(7, 7), (7, 1), (256, 64), (49 * 5, 49), (128 * 333, 128)])
def test_nd_range(q, mem, usm, n, wg):
    x = np.random.default_rng(n).integers(-100, 100, n).astype(np.int32)
    a = mem.of(x)
    t = usm.of([99], np.int32)
    m = usm.of([0], np.int32)

    def body(it, s, mx):
        s += a[it.get_global_id(0)]
        mx.combine(sycl.int32(it.get_local_id(0)))

    q.parallel_for(sycl.nd_range((n,), (wg,)), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(m, sycl.maximum(), property_list=init_to_identity()),
                   body).wait()
    assert usm.read(t)[0] == x.sum() + 99
    assert usm.read(m)[0] == wg - 1


def test_nd_range_two_dimensions(q, mem, usm):
    g, lo = (12, 40), (4, 8)
    n = g[0] * g[1]
    x = np.random.default_rng(12).uniform(0, 1, n).astype(np.float64)
    a = mem.of(x)
    t = usm.of([0.0], np.float64)
    c = usm.of([0], np.int32)

    def body(it, s, count):
        s += a[it.get_global_linear_id()]
        count += 1

    q.parallel_for(sycl.nd_range(g, lo), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(c, sycl.plus()), body).wait()
    check(usm.read(t), x.sum(), np.float64)
    assert usm.read(c)[0] == n


def test_nd_range_with_local_memory_and_barriers(q, mem, usm):
    """Each item reads what another item of its group wrote to local memory before a
    barrier: the reduction's own machinery must not break the barrier or the tile."""
    n, wg = 64 * 50, 64
    x = np.random.default_rng(13).integers(0, 1000, n).astype(np.int32)
    a = mem.of(x)
    t = usm.of([0], np.int64)
    firsts = usm.of([0], np.int32)
    tile = syclexp.work_group_memory(np.int32, wg)

    def body(it, s, f):
        lid = it.get_local_id(0)
        tile[lid] = a[it.get_global_id(0)]
        sycl.group_barrier(it.get_group())
        s += tile[wg - 1 - lid] * (lid + 1)  # reversed: only right after the barrier
        sycl.group_barrier(it.get_group())
        if lid == 0:
            f += tile[0]

    q.parallel_for(sycl.nd_range((n,), (wg,)), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(firsts, sycl.plus()), body).wait()
    groups = x.reshape(-1, wg).astype(np.int64)
    want = (groups[:, ::-1] * np.arange(1, wg + 1)).sum()
    assert usm.read(t)[0] == want
    assert usm.read(firsts)[0] == groups[:, 0].sum()


def test_nd_range_with_group_algorithms(q, mem, usm):
    """reduce_over_group on the work-group and on the sub-group in the body beside
    reductions: the leaders add their group's totals; every item combines its maximum."""
    n, wg = 128 * 40, 128
    x = np.random.default_rng(14).uniform(0, 1, n).astype(np.float32)
    a = mem.of(x)
    t = usm.of([0.0], np.float32)
    m = usm.of([0.0], np.float32)
    sub = usm.of([0.0], np.float32)

    def body(it, s, mx, by_sub_group):
        v = a[it.get_global_id(0)]
        group_total = sycl.reduce_over_group(it.get_group(), v, sycl.plus())
        if it.get_local_id(0) == 0:
            s += group_total
        sg = it.get_sub_group()
        sub_total = sycl.reduce_over_group(sg, v, sycl.plus())
        if sg.leader():
            by_sub_group += sub_total
        mx.combine(v)

    q.parallel_for(sycl.nd_range((n,), (wg,)), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(m, sycl.maximum()), sycl.reduction(sub, sycl.plus()),
                   body).wait()
    check(usm.read(t), x.astype(np.float64).sum(), np.float32)
    check(usm.read(sub), x.astype(np.float64).sum(), np.float32)
    check(usm.read(m), x.max(), np.float32, exact=True)


# -- control flow in the body ------------------------------------------------------------------

def test_early_return_skips_the_item(q, mem, usm):
    n = 10007
    x = np.random.default_rng(15).integers(0, 100, n).astype(np.int32)
    a = mem.of(x)
    idx = mem.of(np.arange(n, dtype=np.int32))
    t = usm.of([0], np.int32)
    m = usm.of([0], np.int32)

    def body(i, s, mx):
        if i % 3 == 0:
            return
        s += a[i]
        mx.combine(idx[i])

    q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(m, sycl.maximum()), body).wait()
    keep = np.arange(n) % 3 != 0
    assert usm.read(t)[0] == x[keep].sum()
    assert usm.read(m)[0] == np.arange(n)[keep].max()


def test_return_after_combining_keeps_what_was_combined(q, mem, usm):
    n = 1001
    x = np.random.default_rng(16).integers(0, 100, n).astype(np.int32)
    a = mem.of(x)
    t = usm.of([0], np.int32)

    def body(i, s):
        s += a[i]
        if i % 2 == 1:
            return
        s += 1000

    q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()), body).wait()
    assert usm.read(t)[0] == x.sum() + 1000 * ((n + 1) // 2)


def test_early_return_in_nd_range(q, mem, usm):
    n, wg = 64 * 17, 64
    x = np.random.default_rng(17).uniform(0, 1, n).astype(np.float32)
    a = mem.of(x)
    t = usm.of([0.0], np.float32)

    def body(it, s):
        i = it.get_global_id(0)
        if it.get_local_id(0) >= 10:
            return
        s += a[i]

    q.parallel_for(sycl.nd_range((n,), (wg,)), sycl.reduction(t, sycl.plus()), body).wait()
    check(usm.read(t), x.reshape(-1, wg)[:, :10].astype(np.float64).sum(), np.float32)


def test_all_items_return_early(q, usm):
    t = usm.of([42], np.int32)
    r = usm.of([42], np.int32)

    def body(i, s, z):
        if i >= 0:
            return
        s += 1
        z += 1

    q.parallel_for(sycl.range(1000), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(r, sycl.plus(), property_list=init_to_identity()),
                   body).wait()
    assert usm.read(t)[0] == 42 and usm.read(r)[0] == 0


def test_loops_combine_several_values_per_item(q, mem, usm):
    n = 2503
    x = np.random.default_rng(18).uniform(0, 1, 4 * n).astype(np.float32)
    a = mem.of(x)
    t = usm.of([0.0], np.float32)
    c = usm.of([0], np.int64)
    m = usm.of([0], np.int32)

    def body(i, s, count, mx):
        for k in range(4):
            s += a[4 * i + k]
        j = 0
        while j < i % 5:
            count += 1
            mx.combine(sycl.int32(j))
            j += 1

    q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(c, sycl.plus()), sycl.reduction(m, sycl.maximum()),
                   body).wait()
    check(usm.read(t), x.astype(np.float64).sum(), np.float32)
    assert usm.read(c)[0] == (np.arange(n) % 5).sum()
    assert usm.read(m)[0] == 3


def test_return_and_continue_inside_loops_of_the_body(q, mem, usm):
    """A `return` inside a loop ends that item's body only; `continue` and `break` act on
    the body's own loop; a captured scalar scales the values."""
    n = 3001
    scale = 3
    x = np.random.default_rng(35).integers(0, 50, n).astype(np.int32)
    a = mem.of(x)
    t = usm.of([0], np.int64)
    c = usm.of([0], np.int32)

    def body(i, s, count):
        for k in range(6):
            if k == 1:
                continue
            if k == 4:
                break
            if k == i % 5:
                return
            count += 1
        s += scale * sycl.int64(a[i])

    q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(c, sycl.plus()), body).wait()
    r = np.arange(n) % 5
    # k runs 0, 2, 3: the item returns at k == r when r is 0, 2 or 3
    counted = np.select([r == 0, r == 2, r == 3], [0, 1, 2], 3)
    finished = (r == 1) | (r == 4)
    assert usm.read(c)[0] == counted.sum()
    assert usm.read(t)[0] == scale * x[finished].astype(np.int64).sum()


def clamp10(v):
    if v > 10:
        return 10
    return v


def first_multiple_of_7(start):
    k = start
    while True:
        if k % 7 == 0:
            return k
        k += 1


def test_helper_functions_with_returns_and_nested_loops(q, mem, usm):
    """Device functions with their own returns called from the body, and a return from two
    loops deep in the body: each return leaves what it should and no more."""
    n = 2003
    x = np.random.default_rng(37).integers(0, 20, n).astype(np.int32)
    a = mem.of(x)
    t = usm.of([0], np.int32)
    c = usm.of([0], np.int32)

    def body(i, s, count):
        s += clamp10(a[i]) + first_multiple_of_7(a[i])
        for j in range(3):
            k = 0
            while k < 3:
                if j * 3 + k == a[i] % 11:
                    return
                count += 1
                k += 1

    q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(c, sycl.plus()), body).wait()
    mult7 = (x + 6) // 7 * 7
    assert usm.read(t)[0] == (np.minimum(x, 10) + mult7).sum()
    stop = x % 11
    assert usm.read(c)[0] == np.where(stop < 9, stop, 9).sum()


def test_initial_value_is_read_when_the_kernel_runs(q, mem, usm):
    """Without initialize_to_identity the target's value when the reduction runs counts:
    a host task it depends on writes it late."""
    n = 1000
    x = np.arange(n, dtype=np.int32)
    a = mem.of(x)
    t = usm.of([1], np.int32)
    gate = threading.Event()

    def late():
        gate.wait(5)
        np.asarray(t)[0] = 1000

    e0 = q.submit(lambda h: h.host_task(late))
    e1 = q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()), combine_body(a),
                        depends_on=e0)
    time.sleep(0.05)
    gate.set()
    e1.wait()
    assert usm.read(t)[0] == 1000 + x.sum()


@pytest.mark.parametrize("shape", [(1000003,), (1031, 33), (7, 9, 1029)])
def test_every_item_runs_once(q, mem, usm, shape):
    """The body's side effects happen once for each item, beside the reduction."""
    n = int(np.prod(shape))
    hits = mem.zeros(n, np.int32)
    t = usm.of([0], np.int64)

    def body(it, s):
        k = it.get_linear_id()
        hits[k] = hits[k] + 1
        s += sycl.int64(k)

    q.parallel_for(sycl.range(*shape), sycl.reduction(t, sycl.plus()), body).wait()
    assert np.all(mem.view(hits, n) == 1)
    assert usm.read(t)[0] == n * (n - 1) // 2


def test_two_dimensional_range_with_item_queries(q, mem, usm):
    rows, cols = 13, 37
    x = np.random.default_rng(19).integers(0, 50, rows * cols).astype(np.int32)
    a = mem.of(x)
    t = usm.of([0], np.int32)
    d = usm.of([0], np.int32)

    def body(it, s, diag):
        s += a[it.get_linear_id()]
        if it.get_id(0) == it.get_id(1):
            diag += a[it.get_id(0) * it.get_range(1) + it.get_id(1)]

    q.parallel_for(sycl.range(rows, cols), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(d, sycl.plus()), body).wait()
    assert usm.read(t)[0] == x.sum()
    assert usm.read(d)[0] == np.trace(x.reshape(rows, cols))


# -- user-function combiners -------------------------------------------------------------------

def absmax(a, b):
    return a if abs(a) > abs(b) else b


def hypot_of(a, b):
    return sycl.sqrt(a * a + b * b)


def add(a, b):
    return a + b


@pytest.mark.parametrize("reset", [False, True], ids=["initial", "identity"])
def test_user_function_combiner(q, mem, usm, reset):
    n = 20011
    x = np.random.default_rng(20).uniform(-1, 1, n).astype(np.float32)
    x[777] = -7.25
    a = mem.of(x)
    t = usm.of([0.5], np.float32)
    big = usm.of([9.0], np.float32)
    norm = usm.of([3.0], np.float32)
    q.parallel_for(sycl.range(n),
                   sycl.reduction(t, 0.0, absmax, property_list=props(reset)),
                   sycl.reduction(big, np.float32(0), absmax, property_list=props(reset)),
                   sycl.reduction(norm, 0.0, hypot_of, property_list=props(reset)),
                   lambda i, s, b, h: (s.combine(a[i]), b.combine(a[i]),
                                       h.combine(a[i]))).wait()
    assert usm.read(t)[0] == -7.25
    assert usm.read(big)[0] == (-7.25 if reset else 9.0)
    sq = (x.astype(np.float64) ** 2).sum() + (0 if reset else 9.0)
    check(usm.read(norm), np.sqrt(sq), np.float32)


def test_user_function_combiner_on_integers_in_nd_range(q, mem, usm):
    n, wg = 96 * 31, 96
    x = np.random.default_rng(21).integers(-(1 << 40), 1 << 40, n).astype(np.int64)
    a = mem.of(x)
    t = usm.of([5], np.int64)
    q.parallel_for(sycl.nd_range((n,), (wg,)), sycl.reduction(t, 0, add),
                   lambda it, s: s.combine(a[it.get_global_id(0)])).wait()
    assert usm.read(t)[0] == x.sum() + 5


def pick_larger_magnitude(a, b):
    return a if abs(a) > abs(b) else b


def absmax_through_a_helper(a, b):
    return pick_larger_magnitude(a, b)


def builtin_max(a, b):
    return max(a, b)


def test_user_combiners_calling_functions_and_shared_by_types(q, mem, usm):
    """A combiner that calls another device function, one that calls the builtin max, and
    one combiner used by two reductions of different types in one kernel."""
    n = 3001
    x = np.random.default_rng(40).uniform(-5, 5, n).astype(np.float32)
    x[2000] = -9.5
    xi = (x * 10).astype(np.int32)
    a, ai = mem.of(x), mem.of(xi)
    big = usm.of([0.0], np.float32)
    top = usm.of([-1e9], np.float32)
    top_i = usm.of([-(1 << 30)], np.int32)
    total = usm.of([0.0], np.float64)
    total_i = usm.of([0], np.int64)

    def body(i, b, t, ti, s, si):
        b.combine(a[i])
        t.combine(a[i])
        ti.combine(ai[i])
        s.combine(a[i])
        si.combine(ai[i])

    q.parallel_for(sycl.range(n), sycl.reduction(big, 0.0, absmax_through_a_helper),
                   sycl.reduction(top, float("-inf"), builtin_max),
                   sycl.reduction(top_i, int(np.iinfo(np.int32).min), builtin_max),
                   sycl.reduction(total, 0.0, add), sycl.reduction(total_i, 0, add),
                   body).wait()
    assert usm.read(big)[0] == -9.5
    assert usm.read(top)[0] == x.max() and usm.read(top_i)[0] == xi.max()
    check(usm.read(total), x.astype(np.float64).sum(), np.float64)
    assert usm.read(total_i)[0] == xi.astype(np.int64).sum()


# -- span (array) reductions -------------------------------------------------------------------

@pytest.mark.parametrize("reset", [False, True], ids=["initial", "identity"])
def test_span_histogram(q, mem, usm, reset):
    n = 100003
    x = np.random.default_rng(22).integers(0, 1 << 20, n).astype(np.int32)
    a = mem.of(x)
    init = np.arange(100, 116, dtype=np.int32)
    h = usm.of(init)

    def body(i, s):
        s[a[i] % 16] += 1

    q.parallel_for(sycl.range(n), sycl.reduction(sycl.span(h, 16), sycl.plus(),
                                                 property_list=props(reset)), body).wait()
    want = np.bincount(x % 16, minlength=16) + (0 if reset else init)
    np.testing.assert_array_equal(usm.read(h, 16), want)


def test_span_of_one_element_is_still_a_span(q, mem, usm):
    """`sycl.span(p, 1)` makes an array reduction of one element: its reducer is indexed
    (`s[0] += v`), as for any span."""
    a = mem.of(np.arange(10, dtype=np.int32))
    t = usm.of([5], np.int32)
    m = usm.of([5], np.int32)

    def body(i, s, mx):
        s[0] += a[i]
        mx[0].combine(a[i])

    q.parallel_for(sycl.range(10), sycl.reduction(sycl.span(t, 1), sycl.plus()),
                   sycl.reduction(sycl.span(m, 1), sycl.maximum()), body).wait()
    assert usm.read(t)[0] == 50 and usm.read(m)[0] == 9


def test_byte_histogram_of_256_bins(q, mem, usm):
    """A span of 256 counters indexed by a byte, as a user counts bytes."""
    n = 20011
    x = np.random.default_rng(36).integers(0, 256, n).astype(np.uint8)
    a = mem.of(x)
    h = usm.of(np.full(256, 7, np.uint32))

    def body(i, s):
        s[a[i]] += 1

    q.parallel_for(sycl.range(n), sycl.reduction(sycl.span(h, 256), sycl.plus()), body).wait()
    np.testing.assert_array_equal(usm.read(h, 256), 7 + np.bincount(x, minlength=256))


def test_span_of_floats_with_combine_and_max(q, mem, usm):
    n = 30011
    x = np.random.default_rng(23).uniform(0, 1, n).astype(np.float32)
    a = mem.of(x)
    sums = usm.of(np.zeros(8, np.float32))
    tops = usm.of(np.full(5, -1.0, np.float32))

    def body(i, s, top):
        s[i % 8].combine(a[i])
        top[i % 5].combine(a[i])

    q.parallel_for(sycl.range(n), sycl.reduction(sycl.span(sums, 8), sycl.plus()),
                   sycl.reduction(sycl.span(tops, 5), sycl.maximum()), body).wait()
    bins8 = np.array([x[k::8].astype(np.float64).sum() for k in range(8)])
    check(usm.read(sums, 8), bins8, np.float32)
    check(usm.read(tops, 5), [x[k::5].max() for k in range(5)], np.float32, exact=True)


def test_span_inside_an_array_leaves_its_neighbours(q, usm):
    arr = usm.of(np.full(24, -7, np.int32), kind="device")
    idx = usm.of(np.arange(160, dtype=np.int32), kind="device")

    def body(i, s):
        s[i % 16] += idx[i]

    q.parallel_for(sycl.range(160), sycl.reduction(sycl.span(arr + 3, 16), sycl.plus(),
                                                   property_list=init_to_identity()),
                   body).wait()
    want = np.full(24, -7, np.int32)
    want[3:19] = [sum(range(k, 160, 16)) for k in range(16)]
    np.testing.assert_array_equal(usm.read(arr, 24), want)


@pytest.mark.parametrize("name,dtype", [(c, "int32") for c in ARITHMETIC + BITWISE]
                         + [(c, "float32") for c in ARITHMETIC]
                         + [(c, "bool") for c in LOGICAL])
def test_known_identities(q, usm, name, dtype):
    """initialize_to_identity on a span whose elements 1.. no item touches: they end as
    the combiner's known identity (+inf for minimum and -inf for maximum of floats)."""
    one = usm.of(np.ones(1, dtype))
    t = usm.of(np.full(4, sentinel(name, dtype), dtype))
    q.parallel_for(sycl.range(1), sycl.reduction(sycl.span(t, 4), combiner(name),
                                                 property_list=init_to_identity()),
                   lambda i, s: s[0].combine(one[i])).wait()
    got = usm.read(t, 4)
    check(got[1:], [identity_of(name, dtype)] * 3, dtype, exact=True)
    check(got[:1], [reference(name, np.append(np.ones(1, dtype), identity_of(name, dtype)))],
          dtype, exact=True)


def test_span_and_scalar_in_one_kernel_nd_range(q, mem, usm):
    n, wg = 32 * 8, 32
    x = np.random.default_rng(24).integers(0, 1000, n).astype(np.int32)
    a = mem.of(x)
    count = usm.of([0], np.int32)
    bins = usm.of(np.ones(16, np.int64))

    def body(it, c, s):
        c += 1
        s[a[it.get_global_id(0)] % 16] *= 2

    q.parallel_for(sycl.nd_range((n,), (wg,)), sycl.reduction(count, sycl.plus()),
                   sycl.reduction(sycl.span(bins, 16), sycl.multiplies()), body).wait()
    assert usm.read(count)[0] == n
    np.testing.assert_array_equal(usm.read(bins, 16),
                                  2 ** np.bincount(x % 16, minlength=16).astype(np.int64))


def test_span_with_user_function_combiner(q, mem, usm):
    n = 4000
    x = np.random.default_rng(25).uniform(-1, 1, n).astype(np.float32)
    a = mem.of(x)
    t = usm.of(np.zeros(4, np.float32))
    q.parallel_for(sycl.range(n), sycl.reduction(sycl.span(t, 4), 0.0, absmax),
                   lambda i, s: s[i % 4].combine(a[i])).wait()
    want = [x[k::4][np.argmax(np.abs(x[k::4]))] for k in range(4)]
    check(usm.read(t, 4), want, np.float32, exact=True)


# -- command groups, dependencies, queues ------------------------------------------------------

def test_reduction_in_a_command_group_with_depends_on(q, mem, usm):
    n = 5000
    x = np.random.default_rng(26).integers(0, 100, n).astype(np.int32)
    a = mem.zeros(n, np.int32)
    t1 = usm.of([1], np.int32)
    t2 = usm.of([2], np.int32)
    gate = threading.Event()

    def slow_writer():
        gate.wait(5)
        np.asarray(a)[:n] = x  # the host writes the input shared memory late

    e0 = q.submit(lambda h: h.host_task(slow_writer))
    r = sycl.range(n)
    e1 = q.submit(lambda h: (h.depends_on(e0),
                             h.parallel_for(r, sycl.reduction(t1, sycl.plus()),
                                            sycl.reduction(t2, sycl.maximum()),
                                            lambda i, s, m: (s.combine(a[i]),
                                                             m.combine(a[i])))))
    e2 = q.parallel_for(r, sycl.reduction(t1, sycl.plus()), combine_body(a), depends_on=e1)
    time.sleep(0.05)
    assert not e1.is_complete() and not e2.is_complete()
    gate.set()
    e2.wait()
    assert usm.read(t1)[0] == 1 + 2 * x.sum()
    assert usm.read(t2)[0] == max(2, x.max())


def test_event_completes_after_the_result_is_written(q, usm):
    """A copy that depends only on the reduction's event reads the final value."""
    n = 300007
    a = usm.of(np.ones(n, np.int32), kind="device")
    t = usm.of([0], np.int32, kind="device")
    host = np.full(1, -1, np.int32)
    for _ in range(3):
        e = q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus(),
                                                         property_list=init_to_identity()),
                           combine_body(a))
        q.memcpy(host, t, 4, depends_on=e).wait()
        assert host[0] == n


def test_out_of_order_queue_chains_reductions_by_events(q, mem, usm):
    n = 2000
    x = np.arange(n, dtype=np.int64)
    a = mem.of(x)
    t = usm.of([7], np.int64)
    red = sycl.reduction(t, sycl.plus())
    e = None
    for _ in range(5):
        e = q.parallel_for(sycl.range(n), red, combine_body(a), depends_on=e)
    e.wait()
    assert usm.read(t)[0] == 7 + 5 * x.sum()


def test_in_order_queue(ordered_q, ordered_usm):
    q = ordered_q
    u = ordered_usm
    n = 3001
    x = np.random.default_rng(27).uniform(0, 1, n).astype(np.float32)
    a = u.of(x, kind="device")
    t = u.of([0.0], np.float32, kind="device")
    m = u.of([-1.0], np.float32, kind="shared")
    for _ in range(4):  # no events: the queue orders them
        q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()),
                       sycl.reduction(m, sycl.maximum()),
                       lambda i, s, mx: (s.combine(a[i]), mx.combine(a[i])))
    q.fill(a, np.float32(2.0), n)
    q.parallel_for(sycl.nd_range((3000,), (100,)), sycl.reduction(t, sycl.plus()),
                   lambda it, s: s.combine(a[it.get_global_id(0)]))
    q.wait()
    check(u.read(t), 4 * x.astype(np.float64).sum() + 6000.0, np.float32)
    check(u.read(m), x.max(), np.float32, exact=True)


def test_independent_reductions_in_flight_at_once(q, mem, usm):
    """Eight launches of one kernel shape into eight targets, nothing waited between them
    on an out-of-order queue: each keeps its own partial results."""
    n = 50021
    rng = np.random.default_rng(28)
    xs = [rng.integers(0, 1000, n).astype(np.int32) for _ in range(8)]
    inputs = [mem.of(x) for x in xs]
    ts = [usm.of([k], np.int32) for k in range(8)]
    events = [q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()), combine_body(a))
              for t, a in zip(ts, inputs, strict=True)]
    sycl.event.wait(events)
    for k, (t, x) in enumerate(zip(ts, xs, strict=True)):
        assert usm.read(t)[0] == x.sum() + k, k


# -- repeated launches --------------------------------------------------------------------------

def test_one_kernel_launched_many_times(q, mem, usm):
    """The same body and reduction objects launched again and again (the launch cache's
    fast path): each result is right, nothing stale carries over."""
    n = 10001
    rng = np.random.default_rng(29)
    a = mem.zeros(n, np.int32)
    acc = usm.of([0], np.int32)
    fresh = usm.of([0], np.int32)
    r = sycl.range(n)
    accumulate = sycl.reduction(acc, sycl.plus())
    reset = sycl.reduction(fresh, sycl.plus(), property_list=init_to_identity())

    def body(i, s1, s2):
        s1 += a[i]
        s2 += a[i]

    total = 0
    for k in range(25):
        x = rng.integers(0, 100, n).astype(np.int32)
        np.asarray(a)[:n] = x
        usm.write(fresh, [-1])
        q.parallel_for(r, accumulate, reset, body).wait()
        total += int(x.sum())
        assert usm.read(acc)[0] == total, k
        assert usm.read(fresh)[0] == x.sum(), k


def test_one_body_with_other_reductions(q, mem, usm):
    """One body function launched with reductions of other targets and combiners."""
    n = 999
    x = np.random.default_rng(30).integers(1, 100, n).astype(np.int32)
    a = mem.of(x)
    body = combine_body(a)
    for name in ("plus", "maximum", "minimum", "bit_or", "plus", "maximum"):
        for init in (identity_of(name, np.int32), np.int32(50)):
            t = usm.of([init], np.int32)
            q.parallel_for(sycl.range(n), sycl.reduction(t, combiner(name)), body).wait()
            assert usm.read(t)[0] == expected(name, x, init, False), (name, init)


def test_combined_values_convert_to_the_target_type(q, mem, usm):
    """As C++'s `combine(const T&)`: an int32 into an int64 or a float32 target, a float32
    into a float64 one, Python literals into any, the work-item's index into an int32."""
    n = 1000
    x = np.random.default_rng(33).integers(-50, 50, n).astype(np.int32)
    a = mem.of(x)
    wide = usm.of([0], np.int64)
    as_float = usm.of([0.0], np.float32)
    dbl = usm.of([0.0], np.float64)
    lit = usm.of([0], np.uint8)
    half = usm.of([0.0], np.float16)
    index = usm.of([0], np.int32)

    def body(i, w, f, d, c, h, k):
        w += a[i]
        f += a[i]
        d += sycl.float32(a[i]) * sycl.float32(0.5)
        c += 1
        h.combine(0.25)
        k.combine(i)

    q.parallel_for(sycl.range(n), sycl.reduction(wide, sycl.plus()),
                   sycl.reduction(as_float, sycl.plus()), sycl.reduction(dbl, sycl.plus()),
                   sycl.reduction(lit, sycl.plus()), sycl.reduction(half, sycl.plus()),
                   sycl.reduction(index, sycl.maximum()), body).wait()
    assert usm.read(wide)[0] == x.sum()
    assert usm.read(as_float)[0] == x.sum()
    assert usm.read(dbl)[0] == x.sum() * 0.5
    assert usm.read(lit)[0] == n % 256
    assert usm.read(half)[0] == n * 0.25
    assert usm.read(index)[0] == n - 1


def test_no_memory_grows_with_launches(q, mem, usm):
    """After a few launches, more launches of the same kernel allocate no more USM."""
    n = 49 * 5
    a = mem.of(np.ones(n, np.int32))
    t = usm.of([0], np.int32)
    launch = sycl.nd_range((n,), (49,))

    def run():
        q.parallel_for(launch, sycl.reduction(t, 0, sycl.plus()),
                       lambda it, s: s.combine(a[it.get_global_linear_id()])).wait()

    for _ in range(5):
        run()
    before = sycl.usm_memory_stats(q)["in_use"]
    for _ in range(50):
        run()
    assert sycl.usm_memory_stats(q)["in_use"] == before
    assert usm.read(t)[0] == 55 * n



def test_the_last_work_group_of_thousands_combines_wide_values(q, mem, usm):
    """One dispatch: of 4093 work-groups the one that finishes last combines the partials,
    which it reads as 32-bit words. 64-bit sums that carry into their high words, a uint64
    maximum whose low word is smaller than another value's, and a float64 sum, each right
    launch after launch of one command (its counter back at zero each time) and of new
    commands beside it."""
    groups, wg = 4093, 8
    n = groups * wg
    rng = np.random.default_rng(40)
    big = rng.integers(1 << 40, 1 << 41, n, dtype=np.int64)
    top = rng.integers(0, 1 << 32, n, dtype=np.uint64) | np.uint64(0xFFFF_FFF0 << 32)
    top[n // 3] = np.uint64(0xFFFF_FFFF_0000_0001)  # the maximum, by its high word
    frac = rng.uniform(0, 1, n)
    a, b, c = mem.of(big), mem.of(top), mem.of(frac)
    total, highest = usm.of([0], np.int64), usm.of([0], np.uint64)
    fsum = usm.of([0.0], np.float64)
    launch = sycl.nd_range((n,), (wg,))

    def body(it, s, m, f):
        i = it.get_global_linear_id()
        s += a[i]
        m.combine(b[i])
        f += c[i]

    reductions = (sycl.reduction(total, sycl.plus(), property_list=init_to_identity()),
                  sycl.reduction(highest, sycl.maximum(), property_list=init_to_identity()),
                  sycl.reduction(fsum, sycl.plus(), property_list=init_to_identity()))
    for k in range(12):
        if k % 3 == 2:  # a new command over the same data: a counter of its own
            q.parallel_for(sycl.nd_range((n,), (wg,)), *(
                sycl.reduction(t, sycl.plus() if t is not highest else sycl.maximum(),
                               property_list=init_to_identity())
                for t in (total, highest, fsum)), body).wait()
        else:
            q.parallel_for(launch, *reductions, body).wait()
        assert usm.read(total)[0] == big.sum(), k
        assert usm.read(highest)[0] == np.uint64(0xFFFF_FFFF_0000_0001), k
        np.testing.assert_allclose(usm.read(fsum)[0], frac.sum(), rtol=1e-12)


def test_counters_are_reused_when_commands_go(q, mem, usm):
    """A reduction command takes a counter from its device's pool and gives it back when
    it goes: a thousand commands (a new target each) fill no new slab of counters, and
    every result is right."""
    from vksycl.kernels import reduction as host_side

    n = 300
    a = mem.of(np.arange(n, dtype=np.int32))
    targets = [usm.of([k], np.int32) for k in range(4)]

    def body(i, s):
        s += a[i]

    q.parallel_for(sycl.range(n), sycl.reduction(targets[0], sycl.plus()), body).wait()
    pools = [p for (dev, ctx), p in host_side._COUNTERS.items() if ctx is q.get_context()]
    slabs = sum(len(p.slabs) for p in pools)
    start = [int(usm.read(t)[0]) for t in targets]
    for k in range(1000):
        q.parallel_for(sycl.range(n), sycl.reduction(targets[k % 4], sycl.plus()), body)
        if k % 50 == 49:
            q.wait()
    assert sum(len(p.slabs) for p in pools) == slabs
    for t, s0 in zip(targets, start, strict=True):
        assert usm.read(t)[0] == s0 + 250 * (n * (n - 1) // 2)


def test_reductions_launched_from_several_threads(q, mem, usm):
    """Commands made on four threads at once take counters from one pool: each thread's
    results are its own."""
    n = 777
    a = mem.of(np.arange(n, dtype=np.int32))
    targets = [usm.of([0], np.int32) for _ in range(4)]
    errors: list[BaseException] = []

    def body(i, s):
        s += a[i]

    def run(t) -> None:
        try:
            for _ in range(40):
                q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()), body).wait()
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for t in targets:
        assert usm.read(t)[0] == 40 * (n * (n - 1) // 2)

# -- command graphs -----------------------------------------------------------------------------

@pytest.fixture
def rq(q):
    """A queue of its own to record from, so that a failing test leaves `q` eager."""
    return sycl.queue(q.get_context(), q.get_device())


@pytest.mark.parametrize("how", ["record", "explicit"])
@pytest.mark.parametrize("reset", [False, True], ids=["accumulate", "identity"])
def test_graph_replays(q, rq, mem, usm, how, reset):
    n = 4097
    rng = np.random.default_rng(31)
    a = mem.zeros(n, np.int32)
    t = usm.of([5], np.int32)
    m = usm.of([0], np.int32)
    red = sycl.reduction(t, sycl.plus(), property_list=props(reset))
    top = sycl.reduction(m, sycl.maximum(), property_list=init_to_identity())

    def body(i, s, mx):
        s += a[i]
        mx.combine(a[i])

    g = syclexp.command_graph(q)
    if how == "record":
        g.begin_recording(rq)
        rq.parallel_for(sycl.range(n), red, top, body)
        g.end_recording(rq)
    else:
        g.add(lambda h: h.parallel_for(sycl.range(n), red, top, body))
    assert usm.read(t)[0] == 5  # nothing ran while building
    exe = g.finalize()
    total = 5
    for k in range(4):
        x = rng.integers(0, 1000, n).astype(np.int32)
        np.asarray(a)[:n] = x
        if reset:
            usm.write(t, [-99])
        elif k == 3:  # the value the target holds when the replay runs is combined
            usm.write(t, [100000])
            total = 100000
        q.ext_oneapi_graph(exe).wait()
        total += int(x.sum())
        assert usm.read(t)[0] == (x.sum() if reset else total), k
        assert usm.read(m)[0] == x.max(), k


def test_graph_replays_in_flight_and_beside_eager_launches(q, mem, usm):
    """Ten replays submitted without waiting accumulate ten times; eager launches of the
    same kernel into another target between them keep their own partial results."""
    n = 30011
    x = np.random.default_rng(38).integers(0, 1 << 20, n).astype(np.int64)
    a = mem.of(x)
    t = usm.of([3], np.int64)
    other = usm.of([0], np.int64)
    body = combine_body(a)
    g = syclexp.command_graph(q)
    g.add(lambda h: h.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()), body))
    exe = g.finalize()
    events = []
    for _ in range(10):
        q.ext_oneapi_graph(exe)
        events.append(q.parallel_for(sycl.range(n), sycl.reduction(
            other, sycl.plus(), property_list=init_to_identity()), body, depends_on=events))
    q.wait()
    assert usm.read(t)[0] == 3 + 10 * x.sum()
    assert usm.read(other)[0] == x.sum()


def test_graph_update_of_the_range_of_a_reduction_node(q, mem, usm):
    n = 5000
    x = np.random.default_rng(39).integers(0, 100, n).astype(np.int32)
    a = mem.of(x)
    t = usm.of([0], np.int32)
    red = sycl.reduction(t, sycl.plus(), property_list=init_to_identity())
    g = syclexp.command_graph(q)
    node = g.add(lambda h: h.parallel_for(sycl.range(n), red, combine_body(a)))
    g2 = syclexp.command_graph(q)
    node2 = g2.add(lambda h: h.parallel_for(sycl.nd_range((4096,), (64,)), red,
                                            lambda it, s: s.combine(a[it.get_global_id(0)])))
    exe = g.finalize([syclexp.property.graph.updatable()])
    exe2 = g2.finalize([syclexp.property.graph.updatable()])
    for m in (n, 7, 4999, 1):
        node.update_range(sycl.range(m))
        exe.update(node)
        q.ext_oneapi_graph(exe).wait()
        assert usm.read(t)[0] == x[:m].sum(), m
    for m, wg in ((4096, 64), (96, 32), (1024, 1)):
        node2.update_nd_range(sycl.nd_range((m,), (wg,)))
        exe2.update(node2)
        q.ext_oneapi_graph(exe2).wait()
        assert usm.read(t)[0] == x[:m].sum(), (m, wg)


def test_graph_with_a_fill_before_the_reduction_and_nd_range(q, rq, mem, usm):
    """A recorded fill resets the target, a span and a scalar reduction follow it in an
    nd_range kernel, a copy reads the result out: replayed three times."""
    n, wg = 64 * 20, 64
    x = np.random.default_rng(32).integers(0, 64, n).astype(np.int32)
    a = mem.of(x)
    t = usm.of([0.0], np.float64, kind="device")
    h = usm.of(np.zeros(8, np.int32), kind="device")
    out = usm.of(np.zeros(8, np.int32))

    def body(it, s, hist):
        v = a[it.get_global_id(0)]
        s += v * 0.5
        hist[v % 8] += 1

    g = syclexp.command_graph(q)
    with g.recording(rq):
        e0 = rq.fill(t, np.float64(1.0), 1)
        e1 = rq.fill(h, np.int32(10), 8)
        e2 = rq.parallel_for(sycl.nd_range((n,), (wg,)), sycl.reduction(t, sycl.plus()),
                             sycl.reduction(sycl.span(h, 8), sycl.plus()), body,
                             depends_on=[e0, e1])
        rq.memcpy(out, h, 32, depends_on=e2)
    exe = g.finalize()
    for _ in range(3):
        q.ext_oneapi_graph(exe).wait()
        check(usm.read(t), 1.0 + x.sum() * 0.5, np.float64)
        np.testing.assert_array_equal(np.asarray(out)[:8],
                                      10 + np.bincount(x % 8, minlength=8))


# -- errors --------------------------------------------------------------------------------------

def marker_line(marker: str) -> int:
    with open(__file__) as f:
        lines = [k for k, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(lines) == 1, marker
    return lines[0]


def raises(code, call) -> str:
    with pytest.raises(sycl.exception) as err:
        call()
    assert err.value.code() == code, err.value
    return str(err.value)


def test_user_function_needs_an_identity(usm):
    t = usm.of([1.0], np.float32)
    raises(sycl.errc.invalid, lambda: sycl.reduction(t, absmax))
    raises(sycl.errc.invalid, lambda: sycl.reduction(t, absmax,
                                                     property_list=init_to_identity()))
    raises(sycl.errc.invalid, lambda: sycl.reduction(sycl.span(t, 1), add))


def test_span_must_lie_inside_its_allocation(usm):
    p = usm.of(np.zeros(4, np.int32))
    raises(sycl.errc.invalid, lambda: sycl.reduction(sycl.span(p, 5), sycl.plus()))
    raises(sycl.errc.invalid, lambda: sycl.reduction(sycl.span(p + 2, 3), sycl.plus()))
    raises(sycl.errc.invalid, lambda: sycl.reduction(sycl.span(p, 0), sycl.plus()))


@pytest.mark.parametrize("target", [np.zeros(1, np.int32), 5, [1, 2], None],
                         ids=["ndarray", "int", "list", "None"])
def test_target_must_be_a_usm_pointer_or_span(target):
    raises(sycl.errc.invalid, lambda: sycl.reduction(target, sycl.plus()))
    raises(sycl.errc.invalid, lambda: sycl.reduction(target, 0, sycl.plus()))


@pytest.mark.parametrize("name", ["bit_and", "bit_or", "bit_xor", "logical_and",
                                  "logical_or"])
def test_bitwise_and_logical_combiners_refuse_floats(q, mem, usm, name):
    """C++ has no `bit_or<float>`: the reduction is refused (when it is made or when the
    kernel builds), and nothing runs."""
    a = mem.of(np.full(8, 1.5, np.float32))
    t = usm.of([2.5], np.float32)
    with pytest.raises(sycl.exception):
        q.parallel_for(sycl.range(8), sycl.reduction(t, combiner(name)),
                       combine_body(a)).wait()
    q.wait()
    assert usm.read(t)[0] == 2.5


def k_times_on_plus(a):
    def body(i, s):
        s *= a[i]  # E:times-on-plus
    return body


def k_plus_on_maximum(a):
    def body(i, s):
        s += a[i]  # E:plus-on-maximum
    return body


def k_or_on_and(a):
    def body(i, s):
        s |= a[i]  # E:or-on-and
    return body


def k_plus_on_user_function(a):
    def body(i, s):
        s += a[i]  # E:plus-on-user
    return body


def k_span_times_on_plus(a):
    def body(i, s):
        s[i % 4] *= a[i]  # E:span-times-on-plus
    return body


def k_host_reduction_in_body(a, red):
    def body(i, s):
        red.combine(a[i])  # E:host-reduction
    return body


def k_reducer_stored(a, out):
    def body(i, s):
        s += a[i]
        out[i] = s  # E:reducer-stored
    return body


def k_reducer_returned(a):
    def body(i, s):
        s += a[i]
        return s  # E:reducer-returned
    return body


def k_span_reducer_unindexed(a):
    def body(i, s):
        s += a[i]  # E:span-unindexed
    return body


def test_reducer_misuse_is_a_build_error_at_its_line(q, mem, usm):
    a = mem.of(np.arange(1, 9, dtype=np.int32))
    out = mem.zeros(8, np.int32)
    t = usm.of([5], np.int32)
    arr = usm.of(np.full(4, 5, np.int32))
    r = sycl.range(8)
    cases = [
        ("times-on-plus", sycl.reduction(t, sycl.plus()), k_times_on_plus(a)),
        ("plus-on-maximum", sycl.reduction(t, sycl.maximum()), k_plus_on_maximum(a)),
        ("or-on-and", sycl.reduction(t, sycl.bit_and()), k_or_on_and(a)),
        ("plus-on-user", sycl.reduction(t, 0, add), k_plus_on_user_function(a)),
        ("span-times-on-plus", sycl.reduction(sycl.span(arr, 4), sycl.plus()),
         k_span_times_on_plus(a)),
        ("host-reduction", sycl.reduction(t, sycl.plus()),
         k_host_reduction_in_body(a, sycl.reduction(t, sycl.plus()))),
        ("reducer-stored", sycl.reduction(t, sycl.plus()), k_reducer_stored(a, out)),
        ("reducer-returned", sycl.reduction(t, sycl.plus()), k_reducer_returned(a)),
        ("span-unindexed", sycl.reduction(sycl.span(arr, 4), sycl.plus()),
         k_span_reducer_unindexed(a)),
    ]
    for marker, red, body in cases:
        message = raises(sycl.errc.build,
                         lambda red=red, body=body: q.parallel_for(r, red, body).wait())
        assert f"{__file__}:{marker_line('E:' + marker)}:" in message, (marker, message)
    q.wait()
    assert usm.read(t)[0] == 5  # nothing ran
    np.testing.assert_array_equal(usm.read(arr, 4), 5)
    np.testing.assert_array_equal(mem.view(out, 8), 0)
    # and the next good launch is unaffected
    q.parallel_for(r, sycl.reduction(t, sycl.plus()), combine_body(a)).wait()
    assert usm.read(t)[0] == 5 + 36


def test_body_with_the_wrong_number_of_reducers(q, mem, usm):
    a = mem.of(np.ones(8, np.int32))
    t = usm.of([5], np.int32)
    u = usm.of([5], np.int32)
    red, red2 = sycl.reduction(t, sycl.plus()), sycl.reduction(u, sycl.plus())

    def none(i):
        a[i] = 2

    def two(i, s1, s2):
        s1 += a[i]
        s2 += a[i]

    def one_nd(it, s):
        s += 1

    attempts = [
        lambda: q.parallel_for(sycl.range(8), red, none),
        lambda: q.parallel_for(sycl.range(8), red, two),
        lambda: q.parallel_for(sycl.range(8), red, red2, combine_body(a)),
        lambda: q.parallel_for(sycl.nd_range((8,), (4,)), red, red2, one_nd),
        lambda: q.submit(lambda h: h.parallel_for(sycl.range(8), red, two)),
    ]
    for k, attempt in enumerate(attempts):
        with pytest.raises(sycl.exception):
            attempt()
            q.wait()
            raise AssertionError(f"attempt {k} raised nothing")
    q.wait()
    assert usm.read(t)[0] == 5 and usm.read(u)[0] == 5
    np.testing.assert_array_equal(mem.view(a, 8), 1)


@pytest.mark.parametrize("dtype, aspect", [("float64", "fp64"), ("float16", "fp16"),
                                           ("int64", "int64")])
def test_a_type_the_device_lacks_is_refused_before_anything_runs(q, usm, monkeypatch,
                                                                   dtype, aspect):
    """A reduction over a type whose aspect the device lacks (hidden here) raises
    errc.kernel_not_supported naming the aspect; the target keeps its value."""
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", aspect)
    t = usm.of([3], dtype)
    with pytest.raises(sycl.exception) as e:
        q.parallel_for(sycl.range(8), sycl.reduction(t, sycl.plus()),
                       lambda i, s: s.combine(i)).wait()
    assert e.value.code() == sycl.errc.kernel_not_supported and aspect in str(e.value)
    monkeypatch.delenv("VKSYCL_HIDE_ASPECTS")
    q.wait()
    assert usm.read(t)[0] == 3


# -- regressions -------------------------------------------------------------------------------

def three_reads_of(a, it):
    """A device function handed the work-item, which hands it on."""
    return a[it] + a_at_ids(a, it)


def a_at_ids(a, it):
    return a[it.get_linear_id()] + a[it.get_id(0)]


def count_visit(hits, it):
    hits[it] = hits[it] + 1


def test_device_functions_given_the_work_item_in_the_grid_stride_loop(q, mem, usm):
    """A one-dimensional range runs several copies of the body per trip of its grid-stride
    loop, each with its own item. A device function handed the item (and one it hands
    the item on to) must see the item of the copy that calls it: it was an internal
    compiler error (the function read another function's local), and one instance for
    all copies would give each trip's items the first copy's id. The range is long
    enough for the unrolled trips on a GPU's work-group count too."""
    n = 2_200_003
    x = np.random.default_rng(41).integers(0, 100, n).astype(np.int32)
    a = mem.of(x)
    hits = mem.zeros(n, np.int32)
    t = usm.of([0], np.int64)

    def body(i, s):
        count_visit(hits, i)
        s += three_reads_of(a, i)

    q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()), body).wait()
    assert np.all(mem.view(hits, n) == 1)
    assert usm.read(t)[0] == 3 * x.astype(np.int64).sum()


def test_a_reducer_bound_to_another_name(q, mem, usm):
    """`t = s; t += v` combines into the reducer `s` names (as C++'s `auto &t = s`), and
    `e = s[j]` is the element `j` named then, whatever `j` names later. Both were build
    errors ('cannot hold ReducerV in a variable')."""
    n = 1000
    t = usm.of([0], np.int32)
    h = usm.of(np.zeros(4, np.int32))

    def body(i, s, hist):
        alias = s
        alias += 1
        alias.combine(2)
        j = i % 4
        e = hist[j]
        j = 3
        e += 1
        hist[j] += 10
        whole = hist
        whole[0].combine(100)

    q.parallel_for(sycl.range(n), sycl.reduction(t, sycl.plus()),
                   sycl.reduction(sycl.span(h, 4), sycl.plus()), body).wait()
    assert usm.read(t)[0] == 3 * n
    np.testing.assert_array_equal(usm.read(h, 4), [250 + 100 * n, 250, 250, 250 + 10 * n])


def both_true(a, b):
    return a and b


def either_true(a, b):
    return a or b


def larger_of(a, b):
    return a if a > b else b


@pytest.mark.parametrize("launch", [sycl.range(5003), sycl.nd_range((5000,), (100,))],
                         ids=["range", "nd_range"])
def test_user_function_combiners_on_bool_and_int8(q, mem, usm, launch):
    """User combiners accumulate in the target's own type: for bools that is bytes in
    memory, which combining wrote without converting (an internal compiler error)."""
    n = 5000
    flags = np.ones(n + 3, np.bool_)
    flags[1234] = False
    small = ((np.arange(n + 3) % 100) - 50).astype(np.int8)
    f, s8 = mem.of(flags), mem.of(small)
    every = usm.of([True], np.bool_)
    some = usm.of([False], np.bool_)
    top = usm.of([-100], np.int8)

    def body(k, e, o, m):
        e.combine(f[k])
        o.combine(not f[k])
        m.combine(s8[k])

    def nd_body(it, e, o, m):
        k = it.get_global_id(0)
        e.combine(f[k])
        o.combine(not f[k])
        m.combine(s8[k])

    q.parallel_for(launch, sycl.reduction(every, True, both_true),
                   sycl.reduction(some, False, either_true),
                   sycl.reduction(top, -128, larger_of),
                   nd_body if isinstance(launch, sycl.nd_range) else body).wait()
    assert not usm.read(every)[0]
    assert usm.read(some)[0]
    assert usm.read(top)[0] == 49


def test_values_become_the_target_type_before_combining(q, mem, usm):
    """As C++'s `combine(const T&)`: an int32 combined into an int8 or uint8 target wraps
    to the target's type first. The maximum of 300 and 100 into an int8 is 100 (300 wraps
    to 44); widening 300 into the accumulator gave 300, stored as 44."""
    x = np.tile(np.array([300, 100, -200, 5], np.int32), 250)
    a = mem.of(x)
    top = usm.of([-128], np.int8)
    low = usm.of([255], np.uint8)
    q.parallel_for(sycl.range(x.size), sycl.reduction(top, sycl.maximum()),
                   sycl.reduction(low, sycl.minimum()),
                   lambda i, m, lo: (m.combine(a[i]), lo.combine(a[i]))).wait()
    assert usm.read(top)[0] == x.astype(np.int8).max() == 100
    assert usm.read(low)[0] == x.astype(np.uint8).min() == 5


@pytest.mark.parametrize("dtype, identity", [
    ("int32", 0.0), ("int32", 1.5), ("int64", np.float32(1.0)), ("uint8", 300),
    ("uint64", -1), ("bool", 300), ("bool", 1.0), ("float16", 1e10), ("float32", 1e300),
    ("int32", "0"), ("float32", 1 + 2j)])
def test_an_identity_of_another_type_is_refused(usm, dtype, identity):
    """An identity is a value of the target's type (C++ deduces one type for both): a
    float for an integer or bool target, an integer the type does not hold, or a float
    that overflows the target's type is errc.invalid. 0.0 for an int32 target, 300 for a
    bool one and 1e10 for a float16 one were taken."""
    t = usm.of([0], dtype)
    raises(sycl.errc.invalid, lambda: sycl.reduction(t, identity, sycl.plus()))


def test_a_range_of_2_31_minus_1_items(q, usm):
    """The grid-stride loop's item steps past 2**31 - 1 after the last items of the
    largest range: compared as signed numbers it turned negative and the loop ran on
    (each item counted twice, negative indices read). Compared unsigned, every item runs
    once. Nothing is read, so this costs about a second on lavapipe."""
    n = (1 << 31) - 1
    count = usm.of([0], np.int64)
    low = usm.of([0], np.int32)
    high = usm.of([0], np.int32)
    q.parallel_for(sycl.range(n), sycl.reduction(count, sycl.plus()),
                   sycl.reduction(low, sycl.minimum()), sycl.reduction(high, sycl.maximum()),
                   lambda i, c, lo, hi: (c.combine(sycl.int64(1)), lo.combine(i),
                                         hi.combine(i))).wait()
    assert usm.read(count)[0] == n
    assert usm.read(low)[0] == 0 and usm.read(high)[0] == n - 1


def test_an_executable_graph_keeps_its_partials(q, rq, mem, usm):
    """A graph records a copy of a reduction's command with partials of its own, and must
    keep that copy while it may run: it was dropped once lowered, its partials went back
    to the allocator, and replays wrote them into memory allocated after finalize."""
    n, wg = 64 * 12, 64
    x = np.arange(n, dtype=np.int64)
    a = mem.of(x)
    t = usm.of([0], np.int64)
    g = syclexp.command_graph(q)
    g.add(lambda h: h.parallel_for(
        sycl.nd_range((n,), (wg,)), sycl.reduction(t, sycl.plus(), init_to_identity()),
        lambda it, s: s.combine(a[it.get_global_id(0)])))
    exe = g.finalize()
    q.wait()
    later = [usm.of(np.full(n // wg, -7, np.int64), kind="device") for _ in range(8)]
    for _ in range(2):
        q.ext_oneapi_graph(exe).wait()
        assert usm.read(t)[0] == x.sum()
    for p in later:
        np.testing.assert_array_equal(usm.read(p, n // wg), -7)


def test_more_partials_than_32_bit_indices_reach_are_refused(q, usm, monkeypatch):
    """The kernel indexes its partials (a work-group's for each element of a span) with
    32-bit integers: a launch needing more than 2**31 - 1 is errc.nd_range before any
    memory is taken, not partials written out of bounds. The work-group count of a huge
    range is stood in for."""
    from vksycl.kernels import reduction as host_side

    monkeypatch.setattr(host_side, "group_counts", lambda ck, launch, device: (65535, 20000, 1))
    h = usm.of([1, 2], np.int32)
    before = sycl.usm_memory_stats(q)["in_use"]
    message = raises(sycl.errc.nd_range, lambda: q.parallel_for(
        sycl.range(61, 67), sycl.reduction(sycl.span(h, 2), sycl.plus()),
        lambda it, s: s[0].combine(1)).wait())
    assert "2621400000 words of partial results" in message
    assert sycl.usm_memory_stats(q)["in_use"] <= before
    np.testing.assert_array_equal(usm.read(h, 2), [1, 2])


# -- buffer targets ----------------------------------------------------------------------------
def test_reduction_into_a_buffer_is_ordered_by_its_accessor(q):
    n = 10_007
    data = np.arange(n, dtype=np.int32) % 97
    result = np.array([3], np.int32)
    doubled = np.zeros(1, np.int32)
    with sycl.buffer(data) as src, sycl.buffer(result) as total, \
            sycl.buffer(doubled) as twice:
        def reduce(h):
            x = sycl.accessor(src, h, sycl.read_only)
            r = sycl.reduction(total, h, sycl.plus())

            def k(i, s):
                s += x[i]
            h.parallel_for(sycl.range(n), r, k)

        def double(h):  # reads the reduction's result: no depends_on, no wait
            t = sycl.accessor(total, h, sycl.read_only)
            out = sycl.accessor(twice, h, sycl.write_only)

            def k():
                out[0] = t[0] * 2
            h.single_task(k)
        q.submit(reduce)
        q.submit(double)
    assert result[0] == 3 + data.sum()
    assert doubled[0] == 2 * result[0]


def test_buffer_reduction_with_identity_and_initialize_to_identity(q):
    data = np.random.default_rng(2).standard_normal(5000).astype(np.float32)
    peak = np.array([1e9], np.float32)  # ignored: initialize_to_identity
    with sycl.buffer(data) as src, sycl.buffer(peak) as out:
        def cgf(h):
            x = sycl.accessor(src, h, sycl.read_only)
            r = sycl.reduction(out, h, -np.inf, sycl.maximum(), property_list=[
                sycl.property.reduction.initialize_to_identity()])

            def k(i, m):
                m.combine(x[i])
            h.parallel_for(sycl.range(data.size), r, k)
        q.submit(cgf)
    assert peak[0] == data.max()


@pytest.mark.parametrize("make, message", [
    (lambda buf, h: sycl.reduction(buf, sycl.plus()), "handler"),
    (lambda buf, h: sycl.reduction(sycl.buffer(np.zeros(2, np.float32)), h, sycl.plus()),
     "one element"),
])
def test_bad_buffer_reductions(q, make, message):
    with sycl.buffer(np.zeros(1, np.float32)) as buf:
        with pytest.raises(sycl.exception, match=message) as e:
            q.submit(lambda h: make(buf, h))
        assert e.value.code() == sycl.errc.invalid
