"""What the compiler knows of a device address's alignment, for vector accesses: an
address is tracked as `r` modulo `g` (a power of two up to the vector's alignment), from
its constants and strides, taking the pointer arguments it starts from as aligned to the
vector, which the launch then checks (`ArgSlot.align`), as it checks element alignment."""

from __future__ import annotations

from typing import Any

from . import ir


def _pow2(x: int, cap: int) -> int:
    """The largest power of two dividing `x`, at most `cap` (0 divides by anything)."""
    if x == 0:
        return cap
    return min(cap, x & -x)


def _known(v: Any, m: int, bases: list[ir.PushField], args: list[Any]) -> tuple[int, int]:
    """(g, r): `v` is r modulo g, g a power of two dividing m."""
    if isinstance(v, ir.Const) and type(v.value) is int:
        return m, v.value % m
    if isinstance(v, ir.PushField):
        if any(a.push_index == v.index and a.kind == "ptr" for a in args):
            bases.append(v)
            return m, 0
        return 1, 0
    if not isinstance(v, ir.Op):
        return 1, 0
    name = v.opname
    if name in ("OpUConvert", "OpSConvert", "OpBitcast"):
        return _known(v.args[0], m, bases, args)
    if name in ("OpIAdd", "OpISub", "OpIMul"):
        (g1, r1), (g2, r2) = (_known(a, m, bases, args) for a in v.args)
        if name == "OpIMul":
            g = min(m, g1 * g2, _pow2(r1, m) * g2, _pow2(r2, m) * g1)
            return g, (r1 * r2) % g
        g = min(g1, g2)
        return g, ((r1 + r2) if name == "OpIAdd" else (r1 - r2)) % g
    if name == "OpShiftLeftLogical" and isinstance(v.args[1], ir.Const):
        g, r = _known(v.args[0], m, bases, args)
        k = 1 << v.args[1].value
        return min(m, g * k), (r * k) % min(m, g * k)
    return 1, 0


def vector_alignment(module: Any, address: ir.Value, want: int, elem_align: int,
                     ) -> tuple[int, bool]:
    """(alignment, misaligned): the alignment an access of `want` bytes at `address` may
    assume, and whether the address is provably never aligned to `want` (a constant
    offset from an aligned start, whatever the strides)."""
    bases: list[ir.PushField] = []
    g, r = _known(address, want, bases, module.args)
    if g < want:
        return max(elem_align, _pow2(r, g) if r else g) if not bases else elem_align, False
    if r:
        return elem_align, True
    for a in module.args:
        if a.kind == "ptr" and any(a.push_index == b.index for b in bases):
            a.align = max(a.align, want)
    return want, False
