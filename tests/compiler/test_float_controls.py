"""Floating-point controls as kernel properties: `fp_contract("off")` rounds every
operation (NoContraction on each, so a*b - (a*b rounded) is exactly 0), `fp_contract`
"fast" is the default (no decoration), `fast_math()` drops the request to keep NaNs,
infinities and signed zeros; on closures and on free function kernels."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi import this_work_item
from vksycl.kernels.launch import compiled

N = 64


def operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    a = rng.uniform(1, 2, N).astype(np.float32)
    b = rng.uniform(1, 2, N).astype(np.float32)
    return a, b


@syclexp.fp_contract("off")
@syclexp.nd_range_kernel(1)
def residual(a: sycl.ptr[sycl.float32], b: sycl.ptr[sycl.float32],
             p: sycl.ptr[sycl.float32], out: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    out[i] = a[i] * b[i] - p[i]


def test_contraction_off_rounds_every_operation(q, mem):
    a, b = operands()
    pa, pb, pp = mem.of(a), mem.of(b), mem.of(a * b)  # the rounded products
    out = mem.zeros(N, np.float32)

    def body(i):
        out[i] = pa[i] * pb[i] - pp[i]

    off = [syclexp.fp_contract("off")]
    asm = compiled(q.get_device(), body, sycl.range(N), off).spirv_asm()
    mul = re.search(r"(%\w+) = OpFMul", asm).group(1)
    sub = re.search(r"(%\w+) = OpFSub", asm).group(1)
    assert f"OpDecorate {mul} NoContraction" in asm and \
        f"OpDecorate {sub} NoContraction" in asm, asm
    assert "NoContraction" not in compiled(q.get_device(), body, sycl.range(N)).spirv_asm()
    q.parallel_for(sycl.range(N), body, properties=off).wait()
    assert (mem.view(out, N) == 0).all()
    # the same as a free function kernel's own property
    out2 = mem.zeros(N, np.float32)
    syclexp.nd_launch(q, sycl.nd_range((N,), (16,)), syclexp.kernel_function(residual),
                      pa, pb, pp, out2)
    q.wait()
    assert (mem.view(out2, N) == 0).all()


def test_contraction_is_allowed_by_default(q, mem):
    a, b = operands()
    pa, pb, pp = mem.of(a), mem.of(b), mem.of(a * b)
    out = mem.zeros(N, np.float32)

    def body(i):
        out[i] = pa[i] * pb[i] - pp[i]

    q.parallel_for(sycl.range(N), body).wait()
    # fused or not, as the driver chooses: at most the product's rounding error
    exact = a.astype(np.float64) * b - (a * b)
    got = mem.view(out, N).astype(np.float64)
    assert np.all((got == 0) | (got == exact.astype(np.float32)))


def test_fast_math_drops_the_ieee_request(q, mem):
    out = mem.zeros(4, np.float32)

    def body(i):
        out[i] = out[i] * 2.0 + 1.0

    default = compiled(q.get_device(), body, sycl.range(4)).spirv_asm()
    fast = compiled(q.get_device(), body, sycl.range(4), [syclexp.fast_math()]).spirv_asm()
    if q.get_device().vulkan.properties.get("shaderSignedZeroInfNanPreserveFloat32"):
        assert "SignedZeroInfNanPreserve 32" in default
    assert "SignedZeroInfNanPreserve" not in fast
    q.parallel_for(sycl.range(4), body, properties=[syclexp.fast_math()]).wait()
    assert mem.view(out, 4).tolist() == [1.0] * 4


def test_bad_values_are_refused():
    with pytest.raises(sycl.exception) as info:
        syclexp.fp_contract("on")
    assert info.value.code() == sycl.errc.invalid
