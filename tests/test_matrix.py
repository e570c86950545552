"""joint_matrix (sycl_ext_oneapi_matrix): results against numpy for every combination the
device reports, in each layout, from USM, local memory and accessors; the tiled GEMM
example; the cooperative-matrix SPIR-V of the same kernels, validated; and each error."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

import vksycl as sycl
from vksycl.compiler.kernel import compile_kernel
from vksycl.compiler.matrix_code import MatrixTarget
from vksycl.compiler.module import KernelSpec
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi.experimental import matrix as jm
from vksycl.runtime.context import optional_extensions

sys.path.insert(0, str(Path(__file__).parent.parent / "examples"))
import matrix_gemm

NVIDIA_LIKE = MatrixTarget(True, 32, (
    ("float16", "float16", "float32", "float32", 16, 16, 16),
    ("float16", "float16", "float16", "float16", 16, 16, 16),
    ("float16", "float16", "float32", "float32", 16, 8, 16),
    ("int8", "int8", "int32", "int32", 16, 16, 32),
    ("uint8", "uint8", "uint32", "uint32", 16, 16, 32),
))


def _sub_group(q) -> int:
    return q.get_device().get_info(sycl.info.device.sub_group_sizes)[0]


def mad_kernel(a, b, c, d, ta, tb, tc, td, m, n, k, la, lb, lc, ld, lda, ldb, ldc, ldd):
    """d = a * b + c for one tile, each operand in its own layout and stride."""
    def body(it):
        sg = it.get_sub_group()
        ma = jm.joint_matrix(sg, ta, jm.use.a, m, k, la)
        mb = jm.joint_matrix(sg, tb, jm.use.b, k, n, lb)
        mc = jm.joint_matrix(sg, tc, jm.use.accumulator, m, n)
        md = jm.joint_matrix(sg, td, jm.use.accumulator, m, n)
        jm.joint_matrix_load(sg, ma, a, lda)
        jm.joint_matrix_load(sg, mb, b, ldb)
        jm.joint_matrix_load(sg, mc, c, ldc, lc)
        jm.joint_matrix_mad(sg, md, ma, mb, mc)
        jm.joint_matrix_store(sg, md, d, ldd, ld)
    return body


def _operand(rng, dtype, rows, cols):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal((rows, cols)).astype(dtype)
    lo, hi = (-128, 128) if dtype.kind == "i" else (0, 256)
    return rng.integers(lo, hi, (rows, cols)).astype(dtype)


def _in_layout(x: np.ndarray, lay: jm.layout, ld: int) -> np.ndarray:
    """x's elements as memory holds them: rows (or columns) `ld` elements apart."""
    rows, cols = x.shape
    if lay is jm.layout.row_major:
        out = np.zeros((rows, ld), x.dtype)
        out[:, :cols] = x
    else:
        out = np.zeros((cols, ld), x.dtype)
        out[:, :rows] = x.T
    return out.ravel()


def _from_layout(flat: np.ndarray, lay: jm.layout, ld: int, rows: int, cols: int):
    if lay is jm.layout.row_major:
        return flat[: rows * ld].reshape(rows, ld)[:, :cols]
    return flat[: cols * ld].reshape(cols, ld)[:, :rows].T


def _reference(a, b, c, dtype):
    wide = np.float64 if np.dtype(dtype).kind == "f" else np.int64
    return (a.astype(wide) @ b.astype(wide) + c.astype(wide)).astype(dtype)


def _check(got, want, dtype):
    if np.dtype(dtype).kind == "f":
        tol = 2e-2 if np.dtype(dtype) == np.float16 else 1e-4
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol * 4)
    else:
        np.testing.assert_array_equal(got, want)  # integer multiply-adds are exact


def _run_mad(q, mem, combo, la, lb, lc, ld, pad=0):
    ta, tb, tc, td, m, n, k = combo
    rng = np.random.default_rng(m * n + k)
    a, b = _operand(rng, ta, m, k), _operand(rng, tb, k, n)
    c = _operand(rng, tc, m, n)
    if np.dtype(tc).kind != "f":
        c //= 4
    lda = (k if la is jm.layout.row_major else m) + pad
    ldb = (n if lb is jm.layout.row_major else k) + pad
    ldc = (n if lc is jm.layout.row_major else m) + pad
    ldd = (n if ld is jm.layout.row_major else m) + pad
    pa, pb, pc = (mem.of(_in_layout(x, lay, ldx)) for x, lay, ldx in
                  ((a, la, lda), (b, lb, ldb), (c, lc, ldc)))
    pd = mem.zeros(ldd * max(m, n), td)
    body = mad_kernel(pa, pb, pc, pd, getattr(sycl, ta), getattr(sycl, tb),
                      getattr(sycl, tc), getattr(sycl, td), m, n, k, la, lb, lc, ld, lda, ldb,
                      ldc, ldd)
    s = _sub_group(q)
    q.parallel_for(sycl.nd_range((s,), (s,)), body).wait()
    got = _from_layout(mem.view(pd, ldd * max(m, n)), ld, ldd, m, n)
    _check(got, _reference(a, b, c, td), td)


_REPORTED = [(c.atype.value, c.btype.value, c.ctype.value, c.dtype.value, c.msize, c.nsize,
              c.ksize) for c in sycl.device().get_info(syclexp.info.device.matrix_combinations)]


@pytest.mark.parametrize("combo", _REPORTED, ids=[f"{a}x{b}+{c}-{m}x{n}x{k}" for a, b, c, _,
                                                  m, n, k in _REPORTED])
def test_every_reported_combination_row_major(q, mem, combo):
    r = jm.layout.row_major
    _run_mad(q, mem, combo, r, r, r, r)


@pytest.mark.parametrize("la", [jm.layout.row_major, jm.layout.col_major])
@pytest.mark.parametrize("lb", [jm.layout.row_major, jm.layout.col_major])
@pytest.mark.parametrize("lc", [jm.layout.row_major, jm.layout.col_major])
def test_layouts_and_strides(q, mem, la, lb, lc):
    _run_mad(q, mem, ("float16", "float16", "float32", "float32", 16, 8, 16), la, lb, lc,
             jm.layout.col_major if lc is jm.layout.row_major else jm.layout.row_major, pad=8)


def test_int8_is_bit_exact_at_the_extremes(q, mem):
    """-128 * -128 summed 32 times overflows int16 but not int32: the accumulation is wide."""
    a = np.full((16, 32), -128, np.int8)
    b = np.full((32, 16), -128, np.int8)
    c = np.full((16, 16), 2**31 - 1 - 16384 * 32, np.int32)
    pa, pb, pc, pd = mem.of(a), mem.of(b), mem.of(c), mem.zeros(256, np.int32)
    r = jm.layout.row_major
    body = mad_kernel(pa, pb, pc, pd, sycl.int8, sycl.int8, sycl.int32, sycl.int32, 16, 16, 32,
                      r, r, r, r, 32, 16, 16, 16)
    s = _sub_group(q)
    q.parallel_for(sycl.nd_range((s,), (s,)), body).wait()
    assert (mem.view(pd, 256) == 2**31 - 1).all()


def test_fill_apply_copy(q, mem):
    out16 = mem.zeros(256, np.float16)
    out32 = mem.zeros(256, np.float32)
    bias = 0.5

    def twice(x):
        return x * 2.0

    def body(it):
        sg = it.get_sub_group()
        m = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        h = jm.joint_matrix(sg, sycl.float16, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, m, 1.5)
        jm.joint_matrix_apply(sg, m, lambda x: x * 3.0 + bias)
        jm.joint_matrix_apply(sg, m, twice)
        jm.joint_matrix_copy(sg, m, h)
        jm.joint_matrix_store(sg, m, out32, 16, jm.layout.row_major)
        jm.joint_matrix_store(sg, h, out16, 16, jm.layout.col_major)

    s = _sub_group(q)
    q.parallel_for(sycl.nd_range((2 * s,), (2 * s,)), body).wait()
    assert (mem.view(out32, 256) == 10.0).all()
    assert (mem.view(out16, 256) == np.float16(10.0)).all()


def test_loads_from_local_memory_and_accessors(q):
    """A tile staged in local memory, from an accessor into an accessor."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    out = np.zeros((16, 16), np.float32)
    s = _sub_group(q)
    with sycl.buffer(a) as ba, sycl.buffer(b) as bb, sycl.buffer(out) as bo:
        def group(h):
            acc_a = sycl.accessor(ba, h, sycl.read_only)
            acc_b = sycl.accessor(bb, h, sycl.read_only)
            acc_o = sycl.accessor(bo, h, sycl.write_only, sycl.no_init)

            def body(it):
                sg = it.get_sub_group()
                staged = syclexp.work_group_memory(sycl.float16, (256,))
                for e in range(it.get_local_linear_id(), 256, s):
                    staged[e] = acc_b[e // 16, e % 16]
                sycl.group_barrier(it.get_group())
                ma = jm.joint_matrix(sg, sycl.float16, jm.use.a, 16, 16, jm.layout.row_major)
                mb = jm.joint_matrix(sg, sycl.float16, jm.use.b, 16, 16, jm.layout.row_major)
                mc = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, mc, 0)
                jm.joint_matrix_load(sg, ma, acc_a, 16)
                jm.joint_matrix_load(sg, mb, staged, 16)
                jm.joint_matrix_mad(sg, mc, ma, mb, mc)
                jm.joint_matrix_store(sg, mc, acc_o, 16, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((s,), (s,)), body)

        q.submit(group)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)


def test_the_gemm_example_with_bias_and_relu(q, mem):
    z = matrix_gemm.tiles_for(q.get_device())
    m, n, k = 2 * z.BM, z.BN, 3 * z.BK
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    pa, pb, pbias, pc = mem.of(a), mem.of(b), mem.of(bias), mem.zeros(m * n, np.float32)
    matrix_gemm.gemm_bias_relu(q, pa, pb, pbias, pc, m, n, k).wait()
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)
    np.testing.assert_allclose(mem.view(pc, m * n).reshape(m, n), want, rtol=1e-4, atol=1e-4)
    assert (want == 0).any() and (want > 0).any()


def test_fragments_from_global_memory_over_a_long_k_loop(q, mem):
    """2x2 accumulators of a sub-group loaded with a bias (stride 0), 256 k-steps of two A
    and two B tiles from global memory, then ReLU.
    lavapipe stops a work-item's loops once they have run 65535 iterations together: a
    portable loop per call and element spent them within 31 steps, and loops that either
    join calls or handle several elements each, but not both, within 125."""
    t, k = 16, 4096
    rng = np.random.default_rng(9)
    a = rng.integers(-2, 3, (2 * t, k)).astype(np.float16)  # sums of products stay exact
    b = rng.integers(-2, 3, (k, 2 * t)).astype(np.float16)
    bias = rng.integers(-8, 9, 2 * t).astype(np.float32)
    pa, pb, pbias = mem.of(a), mem.of(b), mem.of(bias)
    pc = mem.zeros(4 * t * t, np.float32)
    f16, f32, rm = sycl.float16, sycl.float32, jm.layout.row_major

    def body(it):
        sg = it.get_sub_group()
        c00 = jm.joint_matrix(sg, f32, jm.use.accumulator, t, t)
        c01 = jm.joint_matrix(sg, f32, jm.use.accumulator, t, t)
        c10 = jm.joint_matrix(sg, f32, jm.use.accumulator, t, t)
        c11 = jm.joint_matrix(sg, f32, jm.use.accumulator, t, t)
        jm.joint_matrix_load(sg, c00, pbias, 0, rm)
        jm.joint_matrix_load(sg, c01, pbias + t, 0, rm)
        jm.joint_matrix_load(sg, c10, pbias, 0, rm)
        jm.joint_matrix_load(sg, c11, pbias + t, 0, rm)
        a0 = jm.joint_matrix(sg, f16, jm.use.a, t, t, rm)
        a1 = jm.joint_matrix(sg, f16, jm.use.a, t, t, rm)
        b0 = jm.joint_matrix(sg, f16, jm.use.b, t, t, rm)
        b1 = jm.joint_matrix(sg, f16, jm.use.b, t, t, rm)
        for k0 in range(0, k, t):
            jm.joint_matrix_load(sg, a0, pa + k0, k)
            jm.joint_matrix_load(sg, a1, pa + t * k + k0, k)
            jm.joint_matrix_load(sg, b0, pb + k0 * 2 * t, 2 * t)
            jm.joint_matrix_load(sg, b1, pb + k0 * 2 * t + t, 2 * t)
            jm.joint_matrix_mad(sg, c00, a0, b0, c00)
            jm.joint_matrix_mad(sg, c01, a0, b1, c01)
            jm.joint_matrix_mad(sg, c10, a1, b0, c10)
            jm.joint_matrix_mad(sg, c11, a1, b1, c11)
        for m, at in ((c00, 0), (c01, t), (c10, 2 * t * t), (c11, 2 * t * t + t)):
            jm.joint_matrix_apply(sg, m, lambda x: max(x, 0.0))
            jm.joint_matrix_store(sg, m, pc + at, 2 * t, rm)

    s = _sub_group(q)
    q.parallel_for(sycl.nd_range((s,), (s,)), body).wait()
    want = np.maximum(a.astype(np.float64) @ b.astype(np.float64) + bias, 0)
    np.testing.assert_array_equal(mem.view(pc, 4 * t * t).reshape(2 * t, 2 * t), want)
    assert (want == 0).any() and (want > 0).any()


# -- the cooperative form: SPIR-V compiled for a device with cooperative matrices ------------

def _cooperative(body, local=(32,), target=NVIDIA_LIKE):
    return compile_kernel(body, KernelSpec("k", "nd_range", 1, local, matrix=target))


@pytest.mark.parametrize("combo", NVIDIA_LIKE.combinations,
                         ids=[f"{a}-{m}x{n}x{k}" for a, _, _, _, m, n, k in
                              NVIDIA_LIKE.combinations])
@pytest.mark.parametrize("la", [jm.layout.row_major, jm.layout.col_major])
def test_cooperative_spirv_validates(mem, combo, la):
    """compile_kernel runs spirv-val: the cooperative form of each combination is valid."""
    ta, tb, tc, td, m, n, k = combo
    p = [mem.zeros(1024, t) for t in (ta, tb, tc, td)]
    r = jm.layout.row_major
    ck = _cooperative(mad_kernel(*p, getattr(sycl, ta), getattr(sycl, tb), getattr(sycl, tc),
                                 getattr(sycl, td), m, n, k, la, r, r, la, 32, 32, 32, 32))
    asm = ck.spirv_asm()
    assert "OpCooperativeMatrixMulAddKHR" in asm and "OpMemoryModel PhysicalStorageBuffer64 " \
        "Vulkan" in asm
    assert "ext_oneapi_cooperative_matrix" in ck.aspects
    signed = "MatrixASignedComponentsKHR" in asm
    assert signed == (ta == "int8")


def test_cooperative_gemm_and_epilogue_validate(mem):
    p = [mem.zeros(64, t) for t in (np.float16, np.float16, np.float32, np.float32)]
    ck = _cooperative(matrix_gemm.gemm_kernel(*p, 256, 256, 256, matrix_gemm.WIDE),
                      (matrix_gemm.WIDE.WORK_ITEMS,))
    asm = ck.spirv_asm()
    assert asm.count("OpCooperativeMatrixMulAddKHR") == 16  # a sub-group's 4 x 4 block
    assert "OpCooperativeMatrixLengthKHR" in asm  # the ReLU over each work-item's share
    assert "Workgroup" in asm
    # the copy loops and the fragment loop have constant counts: the driver unrolls them
    unrolled = [line for line in asm.splitlines() if "OpLoopMerge" in line and "Unroll" in line]
    assert len(unrolled) == 7


def test_cooperative_unsupported_combination_is_kernel_not_supported(mem):
    p = [mem.zeros(64, np.float32) for _ in range(4)]
    r = jm.layout.row_major
    body = mad_kernel(*p, sycl.float32, sycl.float32, sycl.float32, sycl.float32, 16, 16, 8,
                      r, r, r, r, 16, 16, 16, 16)
    with pytest.raises(sycl.exception) as e:
        _cooperative(body)
    assert e.value.code() == sycl.errc.kernel_not_supported
    assert "float16x" in str(e.value) and "test_matrix.py:" in str(e.value)


def test_cooperative_needs_whole_sub_groups(mem):
    p = [mem.zeros(256, np.float16) for _ in range(2)] + \
        [mem.zeros(256, np.float32) for _ in range(2)]
    r = jm.layout.row_major
    body = mad_kernel(*p, sycl.float16, sycl.float16, sycl.float32, sycl.float32, 16, 16, 16,
                      r, r, r, r, 16, 16, 16, 16)
    with pytest.raises(sycl.exception, match="multiple of this device's sub-group size 32"):
        _cooperative(body, (48,))


def test_hiding_the_aspect_is_accepted():
    import os
    os.environ["VKSYCL_HIDE_ASPECTS"] = "ext_oneapi_cooperative_matrix"
    try:
        assert not sycl.device().has(sycl.aspect.ext_oneapi_cooperative_matrix)
        assert sycl.device().get_info(syclexp.info.device.matrix_combinations)
    finally:
        del os.environ["VKSYCL_HIDE_ASPECTS"]


# -- errors ----------------------------------------------------------------------------------

def _build_error(q, body, nd=True):
    s = _sub_group(q)
    with pytest.raises(sycl.exception) as e:
        if nd:
            q.parallel_for(sycl.nd_range((s,), (s,)), body).wait()
        else:
            q.parallel_for(sycl.range(s), body).wait()
    return e.value


def test_errors(q, mem):
    f32 = mem.zeros(256, np.float32)
    r = jm.layout.row_major

    def not_a_group(it):
        jm.joint_matrix(it, sycl.float16, jm.use.a, 16, 16, r)

    def wrong_use(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, sycl.float16, jm.use.a, 16, 16, r)
        c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_mad(sg, c, a, a, c)

    def wrong_shape(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, sycl.float16, jm.use.a, 16, 16, r)
        b = jm.joint_matrix(sg, sycl.float16, jm.use.b, 16, 8, r)
        c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_mad(sg, c, a, b, c)

    def wrong_pointer(it):
        sg = it.get_sub_group()
        a = jm.joint_matrix(sg, sycl.float16, jm.use.a, 16, 16, r)
        jm.joint_matrix_load(sg, a, f32, 16)

    def no_layout(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_load(sg, c, f32, 16)

    def dynamic_a(it):
        jm.joint_matrix(it.get_sub_group(), sycl.float16, jm.use.a, 16, 16)

    def runtime_rows(it):
        sg = it.get_sub_group()
        jm.joint_matrix(sg, sycl.float16, jm.use.a, it.get_global_id(0), 16, r)

    def two_argument_lambda(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_apply(sg, c, lambda x, y: x)

    cases = [
        (not_a_group, "takes the sub_group first"),
        (wrong_use, "joint_matrix_mad's b must be a use.b matrix"),
        (wrong_shape, "a is MxK, b KxN"),
        (wrong_pointer, "points to float32; a 16x16 float16 joint_matrix"),
        (no_layout, "of an accumulator needs its layout"),
        (dynamic_a, "needs layout.row_major or layout.col_major"),
        (runtime_rows, "compile-time constant"),
        (two_argument_lambda, "must take 1 argument"),
    ]
    for body, message in cases:
        err = _build_error(q, body)
        assert err.code() == sycl.errc.build, (body.__name__, err)
        assert message in str(err), (body.__name__, str(err))
        assert "test_matrix.py:" in str(err)


def test_range_kernels_and_host_calls_are_refused(q):
    def body(i):
        jm.joint_matrix(None, sycl.float16, jm.use.a, 16, 16, jm.layout.row_major)

    err = _build_error(q, body, nd=False)
    assert "needs an nd_range kernel" in str(err)
    with pytest.raises(sycl.exception) as e:
        jm.joint_matrix_fill(None, None, 0)
    assert e.value.code() == sycl.errc.feature_not_supported


def test_work_group_not_a_multiple_of_the_sub_group(q, mem):
    s = _sub_group(q)
    out = mem.zeros(256, np.float32)

    def body(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, c, 1)
        jm.joint_matrix_store(sg, c, out, 16, jm.layout.row_major)

    with pytest.raises(sycl.exception, match="needs whole sub-groups"):
        q.parallel_for(sycl.nd_range((s + 1,), (s + 1,)), body).wait()


def _fill_one(sg, m):
    jm.joint_matrix_fill(sg, m, 1.0)


def test_matrices_stay_in_the_kernel_body(q, mem):
    out = mem.zeros(256, np.float32)

    def body(it):
        sg = it.get_sub_group()
        c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        _fill_one(sg, c)
        jm.joint_matrix_store(sg, c, out, 16, jm.layout.row_major)

    err = _build_error(q, body)
    assert "cannot pass a 16x16 float32 joint_matrix (use.accumulator) to a device " \
        "function (m)" in str(err)


def test_storing_through_a_read_only_accessor(q):
    s = _sub_group(q)
    with sycl.buffer(np.zeros(256, np.float32)) as buf:
        def group(h):
            acc = sycl.accessor(buf, h, sycl.read_only)

            def body(it):
                sg = it.get_sub_group()
                c = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
                jm.joint_matrix_fill(sg, c, 1.0)
                jm.joint_matrix_store(sg, c, acc, 16, jm.layout.row_major)

            h.parallel_for(sycl.nd_range((s,), (s,)), body)

        with pytest.raises(sycl.exception, match="a read_only accessor cannot be written"):
            q.submit(group).wait()


def test_loads_through_packed_words(q, mem):
    """A tile read through uint32 and uint64 pointers that pack halves (column major too),
    and a store through one refused."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    pa, pb = mem.of(a), mem.of(np.ascontiguousarray(b.T))
    out = mem.zeros(256, np.float32)
    words_a, words_b = pa.astype(sycl.uint64), pb.astype(sycl.uint32)

    def body(it):
        sg = it.get_sub_group()
        ma = jm.joint_matrix(sg, sycl.float16, jm.use.a, 16, 16, jm.layout.row_major)
        mb = jm.joint_matrix(sg, sycl.float16, jm.use.b, 16, 16, jm.layout.col_major)
        mc = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, mc, 0)
        jm.joint_matrix_load(sg, ma, words_a, 4)
        jm.joint_matrix_load(sg, mb, words_b, 8)
        jm.joint_matrix_mad(sg, mc, ma, mb, mc)
        jm.joint_matrix_store(sg, mc, out, 16, jm.layout.row_major)

    s = _sub_group(q)
    q.parallel_for(sycl.nd_range((s,), (s,)), body).wait()
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(mem.view(out, 256).reshape(16, 16), want, rtol=1e-3,
                               atol=1e-3)

    out_words = out.astype(sycl.uint64)

    def packed_store(it):
        sg = it.get_sub_group()
        mc = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_store(sg, mc, out_words, 8, jm.layout.row_major)

    assert "it must point to float32" in str(_build_error(q, packed_store))


def test_loads_through_packed_vectors(q, mem):
    """A tile read through vectors of words packing halves: 16-byte uint4 rows from USM,
    uint2 columns (column major), and uint4 rows staged in work-group memory, as a GEMM
    stages its tiles 16 bytes at a time; the strides count vectors."""
    rng = np.random.default_rng(10)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    d = rng.standard_normal((16, 16)).astype(np.float16)
    pa, pb, pd = mem.of(a), mem.of(np.ascontiguousarray(b.T)), mem.of(d)
    out = mem.zeros(256, np.float32)
    vecs_a, vecs_b, vecs_d = pa.astype(sycl.uint4), pb.astype(sycl.uint2), pd.astype(sycl.uint4)

    def body(it):
        sg = it.get_sub_group()
        lid = it.get_local_linear_id()
        tile = syclexp.work_group_memory(sycl.uint4, (32,))
        for i in range(lid, 32, it.get_local_range(0)):
            tile[i] = vecs_d[i]
        sycl.group_barrier(it.get_group())
        ma = jm.joint_matrix(sg, sycl.float16, jm.use.a, 16, 16, jm.layout.row_major)
        mb = jm.joint_matrix(sg, sycl.float16, jm.use.b, 16, 16, jm.layout.col_major)
        md = jm.joint_matrix(sg, sycl.float16, jm.use.b, 16, 16, jm.layout.row_major)
        mc = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, 16, 16)
        jm.joint_matrix_fill(sg, mc, 0)
        jm.joint_matrix_load(sg, ma, vecs_a, 2)
        jm.joint_matrix_load(sg, mb, vecs_b, 4)
        jm.joint_matrix_load(sg, md, tile, 2)
        jm.joint_matrix_mad(sg, mc, ma, mb, mc)
        jm.joint_matrix_mad(sg, mc, ma, md, mc)
        jm.joint_matrix_store(sg, mc, out, 16, jm.layout.row_major)

    s = _sub_group(q)
    q.parallel_for(sycl.nd_range((s,), (s,)), body).wait()
    want = a.astype(np.float32) @ (b.astype(np.float32) + d.astype(np.float32))
    np.testing.assert_allclose(mem.view(out, 256).reshape(16, 16), want, rtol=1e-3,
                               atol=1e-3)
    asm = _cooperative(body).spirv_asm()
    assert asm.count("OpCooperativeMatrixLoadKHR") == 3
    assert "%v4uint" in asm and "%v2uint" in asm


def test_the_cooperative_matrix_extensions_are_enabled_only_where_the_device_multiplies():
    """Device creation asks for VK_KHR_cooperative_matrix where the device lists
    combinations, NVIDIA's work-group-scope VK_NV_cooperative_matrix2 beside it where
    offered (it builds on the first), and neither elsewhere."""
    vk = sycl.device().vulkan
    both = frozenset({"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2",
                      "VK_KHR_external_memory_fd"})
    with_matrices = dataclasses.replace(vk, extensions=both,
                                        cooperative_matrices=NVIDIA_LIKE.combinations)
    assert optional_extensions(with_matrices) == (
        "VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2", "VK_KHR_external_memory_fd")
    without = dataclasses.replace(vk, extensions=both, cooperative_matrices=())
    assert optional_extensions(without) == ("VK_KHR_external_memory_fd",)
    only_khr = dataclasses.replace(with_matrices, extensions=both - {"VK_NV_cooperative_matrix2"})
    assert optional_extensions(only_khr) == ("VK_KHR_cooperative_matrix",
                                             "VK_KHR_external_memory_fd")
