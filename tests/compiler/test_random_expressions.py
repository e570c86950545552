"""Property-based tests: random arithmetic expressions compiled as kernels and compared
with numpy, element by element, with zero mismatches.

Integer expressions wrap at 32 bits (as numpy's int32 does); float expressions use
dyadic values small enough that every intermediate is exact in float32, so any
difference at all is a compiler bug, not rounding.
"""

from __future__ import annotations

import importlib.util
import itertools
import zlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vksycl as sycl

N = 32
_COUNTER = itertools.count()


def _binary(children, ops):
    return st.tuples(st.sampled_from(ops), children, children)


def int_tree():
    leaves = st.one_of(st.sampled_from(["a", "b"]), st.integers(-20, 20))

    def extend(children):
        return st.one_of(
            _binary(children, ["+", "-", "*", "&", "|", "^", "//", "%", "min", "max"]),
            st.tuples(st.sampled_from(["<<", ">>"]), children, st.integers(0, 7)),
            st.tuples(st.sampled_from(["neg", "abs"]), children),
            st.tuples(st.just("if"), children, children, children, children),
        )

    return st.recursive(leaves, extend, max_leaves=10)


def float_tree():
    leaves = st.one_of(st.sampled_from(["x", "y", "a"]),
                       st.integers(-8, 8).map(lambda k: k / 2))

    def extend(children):
        return st.one_of(
            _binary(children, ["+", "-", "*", "min", "max"]),
            st.tuples(st.sampled_from(["neg", "abs"]), children),
            st.tuples(st.just("if"), children, children, children, children),
        )

    return st.recursive(leaves, extend, max_leaves=8)


def is_const(t) -> bool:
    if isinstance(t, int | float):
        return True
    if isinstance(t, str):
        return False
    return all(is_const(c) for c in t[1:] if not isinstance(c, int) or t[0] not in "<<>>")


def render(t, flt: bool) -> tuple[str, str]:
    """(kernel source, numpy source) of a tree."""
    if isinstance(t, str):
        arr = t.upper() if t != "a" or not flt else "A.astype(np.float32)"
        return t, arr
    if isinstance(t, int | float):
        return repr(t), (f"np.float32({t!r})" if flt else f"np.int32({t!r})")
    op = t[0]
    if op in ("<<", ">>"):
        k, n = render(t[1], flt)
        return f"({k} {op} {t[2]})", f"({n} {op} {t[2]})"
    if op in ("neg", "abs"):
        k, n = render(t[1], flt)
        return (f"(-{k})", f"(-{n})") if op == "neg" else (f"abs({k})", f"np.abs({n})")
    if op == "if":
        parts = [render(c, flt) for c in t[1:]]
        (k1, n1), (k2, n2), (k3, n3), (k4, n4) = parts
        return f"({k3} if {k1} < {k2} else {k4})", f"np.where({n1} < {n2}, {n3}, {n4})"
    left, right = t[1], t[2]
    if is_const(left) and is_const(right):
        left = "a" if not flt else "x"  # no constant-only arithmetic: Python folds it exactly
    (kl, nl), (kr, nr) = render(left, flt), render(right, flt)
    if op in ("min", "max"):
        return f"{op}({kl}, {kr})", f"np.{op}imum({nl}, {nr})"
    if op in ("//", "%"):
        kd, nd = f"(abs({kr}) % 5 + 1)", f"(np.abs({nr}) % np.int32(5) + np.int32(1))"
        return f"({kl} {op} {kd})", f"({nl} {op} {nd})"
    return f"({kl} {op} {kr})", f"({nl} {op} {nr})"


def load_kernel(tmp_path, kernel_expr: str):
    source = (
        "def make(pa, pb, px, py, out):\n"
        "    def body(i):\n"
        "        a, b, x, y = pa[i], pb[i], px[i], py[i]\n"
        f"        out[i] = {kernel_expr}\n"
        "    return body\n"
    )
    path = tmp_path / f"expr_{next(_COUNTER)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make


def run(q, tmp_path, tree, flt: bool) -> None:
    kexpr, nexpr = render(tree, flt)
    rng = np.random.default_rng(zlib.crc32(kexpr.encode()))
    arrays = {
        "A": rng.integers(-1000, 1000, N).astype(np.int32) if not flt else
        rng.integers(-8, 9, N).astype(np.int32),
        "B": rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32),
        "X": (rng.integers(-8, 9, N) / 2).astype(np.float32),
        "Y": (rng.integers(-8, 9, N) / 2).astype(np.float32),
    }
    with np.errstate(all="ignore"):
        want = eval(nexpr, {"np": np, **arrays})
    want = np.broadcast_to(np.asarray(want), (N,))
    out_dtype = np.float32 if flt else np.int32
    ptrs = {k: sycl.malloc_shared(N, v.dtype, q) for k, v in arrays.items()}
    for k, v in arrays.items():
        np.asarray(ptrs[k])[:N] = v
    out = sycl.malloc_shared(N, out_dtype, q)
    try:
        make = load_kernel(tmp_path, kexpr)
        body = make(ptrs["A"], ptrs["B"], ptrs["X"], ptrs["Y"], out)
        q.parallel_for(sycl.range(N), body).wait()
        got = np.asarray(out)[:N].copy()
    finally:
        for p in [*ptrs.values(), out]:
            sycl.free(p, q)
    mismatches = np.flatnonzero(got != want.astype(out_dtype))
    assert mismatches.size == 0, (kexpr, mismatches[:5], got[mismatches[:5]],
                                  want[mismatches[:5]])


SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@SETTINGS
@given(tree=int_tree())
def test_random_int32_expressions(q, tmp_path, tree):
    run(q, tmp_path, tree, flt=False)


@SETTINGS
@given(tree=float_tree())
def test_random_float32_expressions(q, tmp_path, tree):
    run(q, tmp_path, tree, flt=True)
