"""Reverse-mode automatic differentiation (`vksycl.ext.vksycl.autodiff`): gradients of
kernels launched under a tape, computed on the device by their adjoint kernels, against
central finite differences of the same kernels in float64 (relative error at most 1e-6)
and against gradients worked out with numpy: elementwise kernels, every differentiable
math function, branches, static loops (with and without values carried between
iterations), device functions, free function kernels, structs, gathers (whose adjoints
are atomic scatter-adds), in-place updates, nd_range kernels with local memory and
barriers, sum reductions, a 2-D stencil over 100 time steps, captured scalars; an error
naming the line of each construct that has no adjoint; what zero(), reset() and free()
clear; a command graph replaying forward and backward passes as the eager loop runs them."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import spirv_gen
import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.ext.vksycl import autodiff as ad
from vksycl.kernels.autodiff import _ADJOINTS

F64 = np.float64


@pytest.fixture(scope="module")
def q():
    return sycl.queue()


def shared(q, values, dtype=F64):
    values = np.asarray(values, dtype)
    p = sycl.malloc_shared(values.size, dtype, q)
    p[: values.size] = values
    return p


def gradcheck(q, forward, inputs, out_sizes, check=None, h=1e-6, **tape_options):
    """The tape's gradients of sum(seed * outputs) with respect to each input against
    central finite differences (of the elements `check` lists, else all); returns the
    gradients. `tape_options` go to `ad.Tape`."""
    rng = np.random.default_rng(1)
    ins = [shared(q, a) for a in inputs]
    outs = [shared(q, np.zeros(n)) for n in out_sizes]
    seeds = [rng.uniform(0.5, 1.5, n) for n in out_sizes]

    def loss():
        for o, n in zip(outs, out_sizes, strict=True):
            o[:n] = np.zeros(n)
        forward(q, *ins, *outs)
        q.wait()
        return sum(float(np.dot(s, o[: len(s)])) for s, o in zip(seeds, outs, strict=True))

    tape = ad.Tape(q, **tape_options)
    with tape:
        forward(q, *ins, *outs)
    tape.backward({o: s for o, s in zip(outs, seeds, strict=True)})
    grads = []
    for a, p in zip(inputs, ins, strict=True):
        a = np.asarray(a, F64)
        g = np.array(tape.gradient(p)[: a.size])
        which = range(a.size) if check is None else check
        fd = []
        for j in which:
            step = h * max(1.0, abs(a[j]))
            p[j] = a[j] + step
            up = loss()
            p[j] = a[j] - step
            down = loss()
            p[j] = a[j]
            fd.append((up - down) / (2 * step))
        fd = np.array(fd)
        err = np.max(np.abs(g[list(which)] - fd)) / max(np.max(np.abs(fd)), 1e-300)
        assert err <= 1e-6, f"relative error {err}: {g[list(which)]} vs {fd}"
        grads.append(g)
    return grads


X = np.linspace(0.3, 0.9, 8)
W = np.linspace(1.2, 2.5, 8)


def test_elementwise(q):
    def forward(q, x, w, y):
        def k(i):
            y[i] = x[i] * x[i] * w[i] + x[i] / w[i] - w[i] * 3.0

        q.parallel_for(sycl.range(8), k)

    gx, gw = gradcheck(q, forward, [X, W], [8])
    rng = np.random.default_rng(1)
    seed = rng.uniform(0.5, 1.5, 8)
    np.testing.assert_allclose(gx, seed * (2 * X * W + 1 / W), rtol=1e-12)
    np.testing.assert_allclose(gw, seed * (X * X - X / W**2 - 3), rtol=1e-12)


UNARY = {
    "sqrt": (math.sqrt, X), "rsqrt": (sycl.rsqrt, X), "sin": (math.sin, X * 3),
    "cos": (math.cos, X * 3), "tan": (math.tan, X), "asin": (math.asin, X - 0.5),
    "acos": (math.acos, X - 0.5), "atan": (math.atan, X * 2 - 1),
    "sinh": (math.sinh, X), "cosh": (math.cosh, X), "tanh": (math.tanh, X - 0.5),
    "asinh": (math.asinh, X), "acosh": (math.acosh, X + 1.5),
    "atanh": (math.atanh, X - 0.5), "exp": (math.exp, X), "exp2": (sycl.exp2, X),
    "exp10": (sycl.exp10, X), "expm1": (math.expm1, X - 0.5), "log": (math.log, X),
    "log2": (math.log2, X), "log10": (math.log10, X), "log1p": (math.log1p, X),
    "cbrt": (sycl.cbrt, X - 0.5), "fabs": (math.fabs, X - 0.6), "abs": (abs, X - 0.6),
    "floor": (math.floor, X * 4), "ceil": (math.ceil, X * 4), "trunc": (math.trunc, X * 4),
    "round": (sycl.round, X * 4 + 0.1), "rint": (sycl.rint, X * 4 + 0.1),
    "fract": (sycl.fract, X * 4 + 0.1), "sign": (sycl.sign, X - 0.6),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_math_unary(q, name):
    fn, values = UNARY[name]

    def forward(q, x, y):
        def k(i):
            y[i] = fn(x[i]) * 1.5

        q.parallel_for(sycl.range(8), k)

    gradcheck(q, forward, [values], [8])


BINARY = {
    "atan2": math.atan2, "pow": math.pow, "hypot": math.hypot, "fmod": math.fmod,
    "copysign": math.copysign, "min": min, "max": max, "fmin": sycl.fmin,
    "fmax": sycl.fmax, "fdim": sycl.fdim, "powr": sycl.powr, "step": sycl.step,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_math_binary(q, name):
    fn = BINARY[name]
    a = np.array([0.3, 0.7, 1.9, 0.45, 2.2, 0.8, 1.3, 0.61])
    b = np.array([0.5, 0.4, 0.7, 1.1, 0.3, 1.4, 0.9, 0.2]) * (-1 if name == "copysign" else 1)

    def forward(q, x, w, y):
        def k(i):
            y[i] = fn(x[i], w[i])

        q.parallel_for(sycl.range(8), k)

    gradcheck(q, forward, [a, b], [8])


@pytest.mark.parametrize("name", ["fma", "mix", "clamp", "mad"])
def test_math_ternary(q, name):
    fn = getattr(sycl, name)

    def forward(q, x, w, y):
        def k(i):  # clamp bounds 0.31-0.64 to 0.5-0.83: x below, between and above
            y[i] = fn(x[i], w[i] * 0.25 + 0.01, w[i] * 0.25 + 0.2)

        q.parallel_for(sycl.range(8), k)

    gradcheck(q, forward, [X, W], [8])


def test_integer_power_and_where(q):
    def forward(q, x, y):
        def k(i):
            v = x[i] - 0.6
            y[i] = v**3 + (math.sqrt(v) if v > 0.0 else 0.0) + x[i] ** 2.5

        q.parallel_for(sycl.range(8), k)

    (g,) = gradcheck(q, forward, [X], [8])
    assert np.all(np.isfinite(g))  # the branch not taken is not differentiated


def test_branches(q):
    def forward(q, x, w, y):
        def k(i):
            v = x[i]
            t = 0.0
            if v > 0.55:
                t = v * v * w[i]
            elif v > 0.4:
                t = math.exp(v)
            else:
                y[i] = math.sin(v)
                return
            y[i] = t * w[i]

        q.parallel_for(sycl.range(8), k)

    gradcheck(q, forward, [X, W], [8])


def test_static_loops(q):
    def forward(q, x, w, y):
        m = 4

        def k(i):
            s = 0.0
            for j in range(m):  # Horner: the reverse needs the carried value
                s = s * x[i] + w[j]
            acc = 0.0
            for j in range(1, 8, 2):  # a sum: nothing carried is needed
                acc += math.sin(x[j] * w[i])
            y[i] = s + acc

        q.parallel_for(sycl.range(8), k)

    gradcheck(q, forward, [X, W], [8])


def test_single_task_sum(q):
    n = 64
    values = np.linspace(-1, 1, n)

    def forward(q, x, loss):
        def k():
            s = 0.0
            for j in range(n):
                s += (x[j] - 0.25) ** 2
            loss[0] = s

        q.single_task(k)

    (g,) = gradcheck(q, forward, [values], [1], check=range(0, n, 9))
    seed = np.random.default_rng(1).uniform(0.5, 1.5, 1)[0]
    np.testing.assert_allclose(g, seed * 2 * (values - 0.25), rtol=1e-12)


def _square(a):
    return a * a


def _blend(a, b):
    if a > b:
        return _square(a) - b
    return a * math.cos(b)


def _piecewise(a):
    r = a
    if a > 0.5:
        if a > 0.7:
            return a * a  # a return on one path of an if only
        r = a * 3.0
    return r + 1.0


def test_device_functions(q):
    def forward(q, x, w, y):
        def k(i):
            y[i] = _blend(x[i] * 2.0, w[i] - 1.0) + _square(w[i]) + _piecewise(x[i])

        q.parallel_for(sycl.range(8), k)

    gradcheck(q, forward, [X, W], [8])


@sycl.struct
class Particle:
    pos: sycl.float64
    vel: sycl.float64


def test_structs(q):
    n = 6
    init = np.zeros(n, dtype=[("pos", F64), ("vel", F64)])
    init["pos"], init["vel"] = np.linspace(0, 1, n), np.linspace(1, 2, n)
    ps = sycl.malloc_shared(n, init.dtype, q)
    ps[:n] = init
    out = sycl.malloc_shared(n, F64, q)

    def k(i):
        p = ps[i]
        out[i] = p.pos * p.vel + math.sin(ps[i].vel)

    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.range(n), k).wait()
    tape.backward({out: 1.0})
    g = np.array(tape.gradient(ps)[:n])
    np.testing.assert_allclose(g["pos"], init["vel"], rtol=1e-12)
    np.testing.assert_allclose(g["vel"], init["pos"] + np.cos(init["vel"]), rtol=1e-12)


def test_gathers(q):
    index = np.array([3, 3, 0, 7, 1, 3, 6, 0], dtype=np.int32)

    def forward(q, x, w, y):
        idx = sycl.malloc_shared(8, np.int32, q)
        idx[:8] = index

        def k(i):
            y[i] = x[idx[i]] * w[(i + 1) % 8] + x[i]

        q.parallel_for(sycl.range(8), k)

    gx, _ = gradcheck(q, forward, [X, W], [8])
    seed = np.random.default_rng(1).uniform(0.5, 1.5, 8)
    expect = seed.copy()
    np.add.at(expect, index, seed * np.roll(W, -1))
    np.testing.assert_allclose(gx, expect, rtol=1e-12)


def _adjoint_instructions(before: set) -> set[str]:
    """The opcodes of the adjoint kernels compiled since the adjoints `before`."""
    names = set()
    for key, (ck, _) in _ADJOINTS.items():
        if key not in before:
            names |= {i.info.opname for i in spirv_gen.read(ck.spirv()).instructions
                      if i.info}
    return names


@pytest.mark.parametrize("hidden", ["", "atomic_float32_add,atomic_float64_add,"
                                    "subgroup_extended_types"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scatters_shared_by_a_sub_group(q, dtype, hidden, monkeypatch):
    """Every work-item reads x[j] in one loop (one address across a sub-group: summed,
    then added once) and x[i * 7 % n] (addresses that differ: each work-item adds its
    own), into float32 gradients with the device's float atomics where it has them; with
    those aspects hidden (VKSYCL_HIDE_ASPECTS), by compare-and-swap, one by one."""
    monkeypatch.setenv("VKSYCL_HIDE_ASPECTS", hidden)
    n = 96
    hx = np.linspace(0.1, 1.0, n)
    x, y = shared(q, hx, dtype), shared(q, np.zeros(n), dtype)
    before = set(_ADJOINTS)

    def k(i):
        s = x[(i * 7) % n] * x[(i * 7) % n]
        for j in range(n):
            s += x[j] * x[i]
        y[i] = s

    with ad.Tape(q) as tape:
        q.parallel_for(sycl.range(n), k)
    q.wait()
    seed = np.random.default_rng(3).uniform(0.5, 1.5, n)
    tape.backward({y: seed})
    expect = seed * hx.sum() + np.dot(seed, hx)
    np.add.at(expect, np.arange(n) * 7 % n, 2 * seed * hx[np.arange(n) * 7 % n])
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(tape.gradient(x))[:n], expect, rtol=rtol)
    ops = _adjoint_instructions(before)
    d = q.get_device()
    assert ("OpGroupNonUniformAllEqual" in ops) == ({"vote", "arithmetic"} <= \
        d.vulkan.subgroup_operations and d.has(sycl.aspect.subgroup_extended_types))
    bits = np.dtype(dtype).itemsize * 8
    assert ("OpAtomicFAddEXT" in ops) == d.has(sycl.aspect[f"atomic_float{bits}_add"])
    if hidden:
        assert "OpAtomicFAddEXT" not in ops and "OpGroupNonUniformAllEqual" not in ops
    tape.free()


def test_a_loop_reverse_split_over_parts_of_the_launch(q):
    """The reverse of a loop that only sums runs as 1, 3 or 8 slices, on as many parts of
    the launch (work-groups along z): what the rest of the kernel adds (through x[i]
    before and after the loop, a captured scalar, the branch without the loop) counts
    once, and a temporary read after the loop (`d`) flows into the last iteration only.
    Against finite differences in float64."""
    n, rate = 70, 0.7
    hx = np.linspace(0.2, 1.1, n)

    def forward(q, x, w, y):
        def k(i):
            xi = x[i] * rate
            v = xi * w[i]
            if i % 5 != 0:
                s = xi * xi
                for j in range(n):
                    d = x[j] - xi
                    s += math.sin(d) * w[j]
                v = math.exp(s * 0.1) + xi + d
            y[i] = v

        q.parallel_for(sycl.range(n), k)

    before = set(_ADJOINTS)
    for parts in (1, 3, 8):
        gradcheck(q, forward, [hx, np.linspace(0.5, 1.5, n)], [n], check=range(0, n, 3),
                  loop_parts=parts)
    (ck, _), = (v for key, v in _ADJOINTS.items() if key not in before)
    assert ck.split_loop


@pytest.mark.parametrize("bounds", [(1, 14, 3), (13, 0, -2), (5, 5, 1), (9, 2, 4),
                                    (-3, 12, 5), (12, -1, -5)])
def test_loop_counts_worked_out_before_the_loop(q, bounds):
    """The adjoint works out a `range` loop's count from its bounds (not by running it):
    up and down, empty, and crossing zero, from bounds captured at launch."""
    start, stop, step = bounds
    n = 16
    hx = np.linspace(0.5, 2.0, n)
    x, y = shared(q, hx), shared(q, np.zeros(n))

    def k(i):
        s = x[i] * 0.5
        for j in range(start, stop, step):
            s += x[abs(j)] * x[i]
        y[i] = s

    with ad.Tape(q) as tape:
        q.parallel_for(sycl.range(n), k)
    tape.backward({y: 1.0})
    js = [abs(j) for j in range(start, stop, step)]
    expect = np.full(n, 0.5) + hx[js].sum()
    np.add.at(expect, js, hx.sum())
    np.testing.assert_allclose(np.asarray(tape.gradient(x))[:n], expect, rtol=1e-12)
    tape.free()


@pytest.mark.parametrize("parts", [0, -2, 2.5, True, "4"])
def test_loop_parts_must_be_a_whole_number_of_at_least_one(parts):
    with pytest.raises(sycl.exception) as err:
        ad.Tape(loop_parts=parts)
    assert err.value.code() == sycl.errc.invalid and "loop_parts" in str(err.value)


def test_a_loop_carrying_a_product_is_not_split(q):
    """A loop carrying a product has iterations whose reverse needs the ones before: its
    reverse stays whole, whatever `loop_parts` asks."""
    def forward(q, x, y):
        def k(i):
            p = x[i]
            for j in range(8):
                p *= x[j]
            y[i] = p

        q.parallel_for(sycl.range(8), k)

    before = set(_ADJOINTS)
    gradcheck(q, forward, [X], [8], loop_parts=4)
    (ck, _), = (v for key, v in _ADJOINTS.items() if key not in before)
    assert not ck.split_loop


def test_scatters_whose_address_only_looks_shared(q):
    """Addresses built from constants and loop counters alone, yet different across a
    sub-group: a loop whose count depends on the work-item (its reverse runs different
    iterations side by side) and a variable set in a branch on the work-item's id. Each
    work-item adds its own adjoint (a vote tells); where the address is the same by
    construction (`x[0]`), the sub-group adds up with no vote."""
    n = 64
    hx = np.linspace(0.5, 2.0, n)
    x, y = shared(q, hx), shared(q, np.zeros(n))

    def k(i):
        s = x[0] * 0.5
        for j in range(i % 5 + 1):
            s += x[j] * 2.0
        m = 3
        if i % 2 == 0:
            m = 7
        y[i] = s + x[m]

    with ad.Tape(q) as tape:
        q.parallel_for(sycl.range(n), k)
    seed = np.random.default_rng(4).uniform(0.5, 1.5, n)
    tape.backward({y: seed})
    expect = np.zeros(n)
    for i in range(n):
        expect[0] += 0.5 * seed[i]
        expect[: i % 5 + 1] += 2.0 * seed[i]
        expect[7 if i % 2 == 0 else 3] += seed[i]
    np.testing.assert_allclose(np.asarray(tape.gradient(x))[:n], expect, rtol=1e-12)
    tape.free()


def test_forward_sweep_drops_what_the_reverse_sweep_does_not_read(q):
    """`s` only adds up, so the reverse sweep needs no value of it: the adjoint evaluates
    exp once per iteration (in its reverse loop), not in a forward loop too."""
    n = 16
    hx = np.linspace(-1.0, 1.0, n)
    x, y = shared(q, hx, np.float32), shared(q, np.zeros(n), np.float32)
    before = set(_ADJOINTS)

    def k(i):
        s = sycl.float32(0.0)
        for j in range(n):
            s += sycl.exp(x[j])
        y[i] = s + x[i]

    with ad.Tape(q) as tape:
        q.parallel_for(sycl.range(n), k)
    q.wait()
    tape.backward({y: 1.0})
    np.testing.assert_allclose(np.asarray(tape.gradient(x))[:n], n * np.exp(hx) + 1,
                               rtol=1e-5)
    (ck,) = [ck for key, (ck, _) in _ADJOINTS.items() if key not in before]
    text = spirv_gen.disassemble(ck.spirv())
    assert text.count(" Exp ") == 1, text
    tape.free()


def test_adjoint_arguments_outgrowing_push_constants(q):
    """A gradient pointer for each of nine arrays: 72 bytes of pointers forward, 144
    backward, past lavapipe's 128 bytes of push constants; the adjoint reads its
    arguments from device memory."""
    xs = [shared(q, X + k) for k in range(9)]
    y = shared(q, np.zeros(8))
    x0, x1, x2, x3, x4, x5, x6, x7, x8 = xs

    def k(i):
        y[i] = x0[i] * x1[i] + x2[i] * x3[i] + x4[i] * x5[i] + x6[i] * x7[i] + \
            math.sin(x8[i])

    with ad.Tape(q) as tape:
        q.parallel_for(sycl.range(8), k)
    q.wait()
    seed = np.linspace(0.5, 1.5, 8)
    tape.backward({y: seed})
    v = [X + k for k in range(9)]
    expect = [v[1], v[0], v[3], v[2], v[5], v[4], v[7], v[6], np.cos(v[8])]
    for x, e in zip(xs, expect, strict=True):
        np.testing.assert_allclose(np.asarray(tape.gradient(x))[:8], seed * e, rtol=1e-12)
    tape.free()


def test_device_memory_has_device_gradients(q):
    """Device USM gets device gradient memory: seeded with a number and with an array,
    zeroed by zero(), read with memcpy."""
    n = 8
    x, y = sycl.malloc_device(n, F64, q), sycl.malloc_device(n, F64, q)
    q.memcpy(x, X, X.nbytes).wait()

    def k(i):
        y[i] = x[i] * x[i] * x[(i + 1) % n]

    with ad.Tape(q) as tape:
        q.parallel_for(sycl.range(n), k)
    q.wait()
    g = tape.gradient(x)
    assert g.allocation.kind == sycl.usm.alloc.device
    i = np.arange(n)
    for seed in (1.5, np.linspace(0.5, 1.5, n)):
        tape.zero()
        tape.backward({y: seed})
        s = np.broadcast_to(seed, (n,))
        expect = 2 * s * X * X[(i + 1) % n]
        np.add.at(expect, (i + 1) % n, s * X * X)
        got = np.zeros(n)
        q.memcpy(got, g, got.nbytes).wait()
        np.testing.assert_allclose(got, expect, rtol=1e-12)
    tape.free()
    sycl.free(x, q)
    sycl.free(y, q)


def test_update_in_place_and_two_kernels(q):
    def forward(q, x, w, y):
        def square(i):
            y[i] = x[i] * x[i]

        def add(i):
            y[i] += w[i] * x[i]

        q.parallel_for(sycl.range(8), square)
        q.parallel_for(sycl.range(8), add)

    gx, gw = gradcheck(q, forward, [X, W], [8])
    seed = np.random.default_rng(1).uniform(0.5, 1.5, 8)
    np.testing.assert_allclose(gx, seed * (2 * X + W), rtol=1e-12)
    np.testing.assert_allclose(gw, seed * X, rtol=1e-12)


def test_overwrites_in_a_kernel(q):
    def forward(q, x, w, y):
        def k(i):
            y[i] = x[i] * 5.0  # overwritten below: no gradient
            for j in range(3):  # each iteration overwrites the last
                y[i] = w[i] * x[i] * (j + 1.0)

        q.parallel_for(sycl.range(8), k)

    gx, _ = gradcheck(q, forward, [X, W], [8])
    seed = np.random.default_rng(1).uniform(0.5, 1.5, 8)
    np.testing.assert_allclose(gx, seed * 3 * W, rtol=1e-12)


def test_nd_range(q):
    def forward(q, x, y):
        def k(it):
            i = it.get_global_id(0)
            y[i] = math.tanh(x[i]) * x[(i + 1) % 8]

        q.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)), k)

    gradcheck(q, forward, [X], [8])


@syclexp.nd_range_kernel(1)
def _scaled_exp(src: sycl.ptr[sycl.float64], dst: sycl.ptr[sycl.float64], s: sycl.float64):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    dst[i] = math.exp(src[i]) * s


@syclexp.single_task_kernel
def _squares(src: sycl.ptr[sycl.float64], out: sycl.ptr[sycl.float64], n: sycl.int32):
    s = 0.0
    for j in range(n):
        s += src[j] * src[j]
    out[0] = s


def test_free_function_kernels(q):
    def forward(q, x, out):
        y = sycl.malloc_shared(8, F64, q)
        syclexp.nd_launch(q, sycl.nd_range(sycl.range(8), sycl.range(4)), _scaled_exp, x, y,
                          3.0)
        q.submit(lambda h: syclexp.single_task(h, _squares, y, out, 8))

    (g,) = gradcheck(q, forward, [X], [1])
    seed = np.random.default_rng(1).uniform(0.5, 1.5, 1)[0]
    np.testing.assert_allclose(g, seed * 18 * np.exp(2 * X), rtol=1e-12)


def test_local_memory_and_barriers(q):
    n, wg = 16, 8

    def forward(q, x, y):
        tile = syclexp.work_group_memory(sycl.float64, wg)

        def k(it):
            i, lid = it.get_global_id(0), it.get_local_id(0)
            tile[lid] = x[i] * x[i]
            sycl.group_barrier(it.get_group())
            y[i] = tile[lid] * math.sin(tile[(lid + 1) % wg]) + tile[wg - 1 - lid]

        q.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

    (g,) = gradcheck(q, forward, [np.linspace(0.2, 1.0, n)], [n])
    assert np.all(g != 0)


def test_float16(q):
    """float16 memory has float16 gradients: gathers whose neighbouring elements are
    added into at once (a compare-and-swap of the word holding two of them), work-group
    memory (float32 gradients inside) and a captured float16 scalar; against the same
    adjoints worked out in float64."""
    n, wg = 64, 16
    rng = np.random.default_rng(5)
    hx = rng.uniform(0.2, 1.0, n).astype(np.float16)
    index = rng.integers(0, n, n).astype(np.int32)
    x, y = shared(q, hx, np.float16), shared(q, np.zeros(n), np.float16)
    idx = sycl.malloc_shared(n, np.int32, q)
    idx[:n] = index
    rate = np.float16(0.75)
    tile = syclexp.work_group_memory(sycl.float16, wg)

    def k(it):
        i, lid = it.get_global_id(0), it.get_local_id(0)
        tile[lid] = x[i] * x[i]
        sycl.group_barrier(it.get_group())
        y[i] = tile[(lid + 1) % wg] * rate + math.sin(x[idx[i]]) + x[i ^ 1]

    with ad.Tape(q) as tape:
        q.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)
    q.wait()
    seed = rng.uniform(0.5, 1.5, n)
    tape.backward({y: seed.astype(np.float16)})
    s, xs, r = seed.astype(np.float16).astype(F64), hx.astype(F64), float(rate)
    i = np.arange(n)
    neighbour = (i // wg) * wg + (i % wg + 1) % wg
    expect = np.zeros(n)
    np.add.at(expect, neighbour, s * r * 2 * xs[neighbour])
    np.add.at(expect, index, s * np.cos(xs[index]))
    np.add.at(expect, i ^ 1, s)
    got = np.asarray(tape.gradient(x))[:n].astype(F64)
    np.testing.assert_allclose(got, expect, rtol=4e-3, atol=4e-3)
    np.testing.assert_allclose(tape.gradient_of("rate"), np.dot(s, xs[neighbour] ** 2),
                               rtol=1e-2)
    tape.free()
    sycl.free(idx, q)


def test_buffers_and_accessors(q):
    """Accessors are differentiated as pointers are: the gradient of a buffer is that of
    its device memory (`tape.gradient(buf)`), a ranged accessor's elements land at their
    offset in it, and a buffer can be seeded."""
    n = 12
    hx = np.linspace(0.2, 1.3, n)
    xb, wb, yb = sycl.buffer(hx.copy()), sycl.buffer(W.copy()), sycl.buffer(np.zeros(n))

    def step(h):
        x = sycl.accessor(xb, h, sycl.read_only)
        w = sycl.accessor(wb, h, sycl.range(4), sycl.id(2), sycl.read_only)  # w[2:6]
        y = sycl.accessor(yb, h, sycl.write_only)

        def k(i):
            y[i] = math.exp(x[i]) * w[i % 4] + x[(i + 5) % n] * x[i]

        h.parallel_for(sycl.range(n), k)

    with ad.Tape(q) as tape:
        q.submit(step)
    q.wait()
    seed = np.linspace(0.5, 1.5, n)
    tape.backward({yb: seed})
    i = np.arange(n)
    w = W[2:6][i % 4]
    gx = seed * (np.exp(hx) * w + hx[(i + 5) % n])
    np.add.at(gx, (i + 5) % n, seed * hx)
    gw = np.zeros(len(W))
    np.add.at(gw, 2 + i % 4, seed * np.exp(hx))
    got_x, got_w = np.zeros(n), np.zeros(len(W))
    q.memcpy(got_x, tape.gradient(xb), got_x.nbytes)
    q.memcpy(got_w, tape.gradient(wb), got_w.nbytes).wait()
    np.testing.assert_allclose(got_x, gx, rtol=1e-12)
    np.testing.assert_allclose(got_w, gw, rtol=1e-12, atol=1e-300)
    assert tape.gradient(xb).allocation.kind == sycl.usm.alloc.device
    with pytest.raises(sycl.exception, match="takes a USM pointer, a buffer or an accessor"):
        tape.gradient(hx)
    tape.free()


def test_reductions(q):
    n = 40
    values = np.linspace(-1, 1, n)

    def forward(q, x, w, out):
        def k(it, s, t):
            i = it.get_global_id(0)
            s += math.sin(x[i]) * w[i % 8]
            t.combine(x[i] * x[i])

        # a sum into a target holding 0, and one into out[1] keeping its value
        q.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(8)),
                       sycl.reduction(out, sycl.plus(), property_list=[
                           sycl.property.reduction.initialize_to_identity()]),
                       sycl.reduction(out + 1, sycl.plus()), k)

    gx, _ = gradcheck(q, forward, [values, W], [2])
    s0, s1 = np.random.default_rng(1).uniform(0.5, 1.5, 2)
    np.testing.assert_allclose(gx, s0 * np.cos(values) * np.tile(W, 5) + s1 * 2 * values,
                               rtol=1e-12)


def test_error_reduction_product(q):
    x, out = shared(q, X), shared(q, np.ones(1))

    def k(i, p):  # product
        p.combine(x[i])

    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.range(8), sycl.reduction(out, sycl.multiplies()), k).wait()
    with pytest.raises(sycl.exception, match="a reduction of <f8 with combiner multiplies") \
            as info:
        tape.backward({out: 1.0})
    assert f"{__file__}:{_line('# product')}:" in str(info.value)


def test_stencil_100_steps(q):
    side, steps = 6, 100

    def heat(src, dst):
        def step(item):
            i, j = item[0], item[1]
            c = src[i * side + j]
            up = src[max(i - 1, 0) * side + j]
            down = src[min(i + 1, side - 1) * side + j]
            left = src[i * side + max(j - 1, 0)]
            right = src[i * side + min(j + 1, side - 1)]
            dst[i * side + j] = c + 0.1 * (up + down + left + right - 4.0 * c) \
                + 0.01 * math.sin(c)

        return step

    def forward(q, u0, out):
        grids = [u0] + [sycl.malloc_shared(side * side, F64, q) for _ in range(steps - 1)]
        grids.append(out)
        for t in range(steps):  # one array per step: the tape keeps no copies
            q.parallel_for(sycl.range(side, side), heat(grids[t], grids[t + 1]))

    u0 = np.cos(np.arange(side * side) * 0.37)
    gradcheck(q, forward, [u0], [side * side], check=[0, 7, 14, 21, 35])


class _Params:
    def __init__(self, shift: float) -> None:
        self.shift = shift


def test_captured_scalars(q):
    x, y1, y2 = shared(q, X), shared(q, np.zeros(8)), shared(q, np.zeros(8))
    seed = np.linspace(0.5, 1.5, 8)

    def run(rate, shift, y, tape=None):
        params = _Params(np.float64(shift))

        def k(i):
            y[i] = math.exp(rate * x[i]) + params.shift * x[i]

        if tape is None:
            q.parallel_for(sycl.range(8), k).wait()
            return float(np.dot(seed, y[:8]))
        with tape:
            q.parallel_for(sycl.range(8), k).wait()
        return None

    rate, shift, h = np.float64(1.7), 0.25, 1e-6
    tape = ad.Tape(q)
    run(rate, shift, y1, tape)
    run(rate * 2, shift, y2, tape)  # another launch: its adjoint adds into the same name
    tape.backward({y1: seed, y2: seed})
    fd_rate = (run(rate + h, shift, y1) - run(rate - h, shift, y1)) / (2 * h) + \
        (run(2 * rate + h, shift, y2) - run(2 * rate - h, shift, y2)) / (2 * h)
    fd_shift = 2 * (run(rate, shift + h, y1) - run(rate, shift - h, y1)) / (2 * h)
    assert abs(tape.gradient_of("rate") - fd_rate) <= 1e-6 * abs(fd_rate)
    assert abs(tape.gradient_of("params.shift") - fd_shift) <= 1e-6 * abs(fd_shift)
    tape.zero()
    assert tape.gradient_of("rate") == 0.0
    with pytest.raises(sycl.exception, match="captures a float scalar named 'nothing'"):
        tape.gradient_of("nothing")


def test_a_later_launch_overwrites(q):
    def forward(q, x, w, y):
        def first(i):
            y[i] = x[i] * x[i]  # overwritten by the next launch: no gradient for x

        def second(i):
            y[i] = w[i] * 3.0

        def third(i):
            y[i] += x[i] * w[i]

        q.parallel_for(sycl.range(8), first)
        q.parallel_for(sycl.range(8), second)
        q.parallel_for(sycl.range(8), third)

    gx, gw = gradcheck(q, forward, [X, W], [8])
    seed = np.random.default_rng(1).uniform(0.5, 1.5, 8)
    np.testing.assert_allclose(gx, seed * W, rtol=1e-12)
    np.testing.assert_allclose(gw, seed * (3 + X), rtol=1e-12)


def _line(marker: str) -> int:
    lines = inspect.getsource(inspect.getmodule(_line)).splitlines()
    return next(k for k, text in enumerate(lines, 1) if text.rstrip().endswith(marker))


def _raises_at(q, kernel, marker, what, n=4, dtype=F64):
    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.range(n), kernel).wait()
    with pytest.raises(sycl.exception) as info:
        tape.backward({})
    assert info.value.code() == sycl.errc.build
    assert f"{__file__}:{_line(marker)}:" in str(info.value)
    assert what in str(info.value)


def test_error_atomic_max_and_exchange(q):
    x = shared(q, np.ones(4), np.float32)
    y = shared(q, np.zeros(1), np.float32)

    def swap(i):
        sycl.atomic_ref(y[0]).exchange(x[i])  # atomic exchange

    _raises_at(q, swap, "# atomic exchange", "atomic Exchange on differentiable memory")
    if not q.get_device().has(sycl.aspect.atomic_float32_minmax):
        return  # the forward kernel itself needs the feature (NVIDIA has none)

    def k(i):
        sycl.atomic_ref(y[0]).fetch_max(x[i])  # atomic max

    _raises_at(q, k, "# atomic max", "atomic FMax on differentiable memory")


def test_error_atomic_result(q):
    x = shared(q, np.ones(4), np.float32)
    y = shared(q, np.zeros(1), np.float32)
    z = shared(q, np.zeros(4), np.float32)

    def k(i):
        z[i] = sycl.atomic_ref(y[0]).fetch_add(x[i])  # atomic result

    _raises_at(q, k, "# atomic result", "the result of an atomic operation")


def test_error_int_to_float(q):
    x, y = shared(q, X[:4] * 10), shared(q, np.zeros(4))

    def k(i):
        whole = int(x[i])
        y[i] = float(whole) * x[i]  # int to float

    _raises_at(q, k, "# int to float", "integer-to-float conversion")


def test_error_data_dependent_loop(q):
    x, y = shared(q, X[:4] * 10), shared(q, np.zeros(4))

    def k(i):
        s = 0.0
        for _ in range(int(x[i])):  # float count
            s += x[i]
        y[i] = s

    _raises_at(q, k, "# float count", "a loop whose count depends on float values")


def test_error_while_loop(q):
    x, y = shared(q, X[:4]), shared(q, np.zeros(4))

    def k(i):
        j = 0
        s = x[i]
        while j < 3:  # while
            s = s * s
            j += 1
        y[i] = s

    _raises_at(q, k, "# while", "a while loop")


def test_error_value_overwritten(q):
    x, y = shared(q, X[:4]), shared(q, X[:4])

    def k(i):
        y[i] = y[i] * x[i]  # overwritten

    _raises_at(q, k, "# overwritten", "a value read from memory the kernel also writes")


def test_error_later_launch_overwrites(q):
    x, y = shared(q, X[:4]), shared(q, np.zeros(4))

    def square(i):
        y[i] = x[i] * x[i]

    def overwrite(i):
        x[i] = 2.0 * y[i]

    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.range(4), square)
        q.parallel_for(sycl.range(4), overwrite).wait()
    with pytest.raises(sycl.exception, match="kernel overwrite writes 'x', which kernel "
                       "square read earlier on this tape") as info:
        tape.backward({x: 1.0})
    assert info.value.code() == sycl.errc.invalid


def test_error_local_memory_written_in_a_loop(q):
    x, y = shared(q, X[:4]), shared(q, np.zeros(4))
    tile = syclexp.work_group_memory(sycl.float64, 4)

    def k(it):
        lid = it.get_local_id(0)
        for r in range(2):
            tile[lid] = x[lid] * r  # tile again
            sycl.group_barrier(it.get_group())
        y[lid] = tile[3 - lid]

    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(4)), k).wait()
    with pytest.raises(sycl.exception, match="local memory written after it is read, or in "
                       "a loop") as info:
        tape.backward({y: 1.0})
    assert f"{__file__}:{_line('# tile again')}:" in str(info.value)


def test_error_pointer_arithmetic(q):
    x, w, y = shared(q, X[:4]), shared(q, W[:4]), shared(q, np.zeros(4))

    def k(i):
        d = w - x
        y[i] = (x + d)[i]  # pointer arithmetic

    _raises_at(q, k, "# pointer arithmetic", "pointer arithmetic mixing differentiable")


def test_forward_results_and_no_float_memory(q):
    x, y = shared(q, X), shared(q, np.zeros(8))
    counts = shared(q, np.zeros(8, np.int32), np.int32)

    def count(i):
        counts[i] = i * 2

    def k(i):
        y[i] = x[i] * 2.0

    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.range(8), count)
        q.submit(lambda h: h.parallel_for(sycl.range(8), k)).wait()
    np.testing.assert_allclose(y[:8], X * 2)  # the forward pass ran as ever
    assert list(counts[:8]) == list(range(0, 16, 2))
    tape.backward({y: 1.0})
    np.testing.assert_allclose(tape.gradient(x)[:8], np.full(8, 2.0))


def test_command_graph_replays_forward_and_backward():
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    n = 8
    x, t = shared(q, np.linspace(1, 2, n)), shared(q, np.linspace(0, 1, n))
    y, loss = shared(q, np.zeros(n)), shared(q, np.zeros(1))

    def model(i):
        y[i] = x[i] * x[i]

    def total():
        s = 0.0
        for j in range(n):
            s += (y[j] - t[j]) ** 2
        loss[0] = s

    def descend(tape):
        grad = tape.gradient(x)

        def step(i):
            x[i] -= 0.05 * grad[i]

        return step

    graph_tape = ad.Tape(q)
    g = syclexp.command_graph(q)
    with g.recording(q):
        with graph_tape:
            q.parallel_for(sycl.range(n), model)
            q.single_task(total)
        graph_tape.backward({loss: 1.0})  # recorded: zeroing, seeding, adjoints
        q.parallel_for(sycl.range(n), descend(graph_tape))
    exe = g.finalize()
    replayed = []
    for _ in range(30):
        q.ext_oneapi_graph(exe).wait()
        replayed.append(loss[0])

    x[:n] = np.linspace(1, 2, n)  # the same descent, eagerly
    eager, tape = [], ad.Tape(q)
    for _ in range(30):
        tape.reset()
        with tape:
            q.parallel_for(sycl.range(n), model)
            q.single_task(total).wait()
        eager.append(loss[0])
        tape.backward({loss: 1.0})
        q.parallel_for(sycl.range(n), descend(tape)).wait()
    assert replayed == eager
    assert replayed[-1] < replayed[0] / 1000


def test_adjoint_kernels_are_validated_and_cached(q):
    x, y = shared(q, X), shared(q, np.zeros(8))

    def k(i):
        y[i] = math.cos(x[i]) * x[i]

    tapes = [ad.Tape(q), ad.Tape(q)]
    for tape in tapes:
        with tape:
            q.parallel_for(sycl.range(8), k).wait()
        tape.backward({y: 1.0})
        np.testing.assert_allclose(tape.gradient(x)[:8], np.cos(X) - X * np.sin(X),
                                   rtol=1e-12)
    first, second = (t._launches[0] for t in tapes)
    assert first.spirv is second.spirv  # one compiled adjoint, from the cache
    spirv_gen.validate(first.spirv, "vulkan1.1")
    assert "__sycl_kernel_k" in spirv_gen.disassemble(first.spirv)


def test_zero_and_reset(q):
    x, y = shared(q, X), shared(q, np.zeros(8))

    def k(i):
        y[i] = x[i] * x[i]

    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.range(8), k).wait()
    gx = tape.gradient(x)
    assert tape.gradient(x + 2).byte_offset == gx.byte_offset + 16  # one per allocation
    tape.backward({y: 1.0})
    np.testing.assert_allclose(gx[:8], 2 * X)
    tape.backward({y: 1.0})  # gradients accumulate
    np.testing.assert_allclose(gx[:8], 4 * X)
    tape.zero()
    np.testing.assert_allclose(gx[:8], np.zeros(8))
    np.testing.assert_allclose(tape.gradient(y)[:8], np.zeros(8))
    tape.backward({y: np.arange(8.0)})
    np.testing.assert_allclose(gx[:8], 2 * X * np.arange(8))
    tape.reset()
    np.testing.assert_allclose(gx[:8], np.zeros(8))
    tape.backward({y: 1.0})  # nothing recorded: only the seed is set
    np.testing.assert_allclose(gx[:8], np.zeros(8))
    np.testing.assert_allclose(tape.gradient(y)[:8], np.ones(8))
    q.parallel_for(sycl.range(8), k).wait()  # outside the tape: not recorded
    tape.backward({y: 1.0})
    np.testing.assert_allclose(gx[:8], np.zeros(8))


def test_free(q):
    x, y = shared(q, X), shared(q, np.zeros(8))

    def k(i):
        y[i] = x[i] * x[i]

    tape = ad.Tape(q)
    with tape:
        q.parallel_for(sycl.range(8), k)
    tape.backward({y: 1.0})
    gx = tape.gradient(x)
    np.testing.assert_allclose(gx[:8], 2 * X)
    tape.free()  # the gradients' memory goes, and the recording with it
    assert gx.allocation.freed and not x.allocation.freed
    fresh = tape.gradient(x)  # a new, zeroed gradient
    assert fresh.allocation is not gx.allocation
    tape.backward({y: 1.0})
    np.testing.assert_allclose(fresh[:8], np.zeros(8))
