"""The ranges of a kernel's integer values, as far as its IR proves them: checked mode
skips the check of a work-group memory access whose index provably lies in the array,
such as a tiled kernel's `tile[local_id * T + k]` for `k in range(T)`, so the hot loops
of such kernels run as fast checked as unchecked.

A local's range is the union of the ranges of every value assigned to it, except a
`range` loop's counter inside its loop's body, where it lies in [start, stop - 1] (the
frontend assigns the counter only its start and its own sum with a positive step). Work-
item local ids lie below the local size the kernel is compiled for, and a captured number
the kernel is compiled for anyway (a tile size that also shapes work-group memory) is its
value. Anything else is unknown (None), as is any result that could wrap around its
type.
"""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any

from . import ir
from .typesys import Scalar

Interval = tuple[int, int] | None
# the most work-items a launch of a Python kernel has (`ranges.check_work_items`): group
# ids are bounded by it
MAX_WORK_ITEMS = (1 << 31) - 1
# the ranges of loop counters inside the loops around a point of the code
Context = tuple[tuple[int, Any], ...]


def _bounds(ty: Any) -> tuple[int, int] | None:
    if not isinstance(ty, Scalar) or not ty.is_int:
        return None
    if ty.is_signed:
        return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1
    return 0, (1 << ty.bits) - 1


def _fits(r: Interval, ty: Any) -> Interval:
    b = _bounds(ty)
    if r is None or b is None or r[0] < b[0] or r[1] > b[1]:
        return None
    return r


def is_group_linear(v: ir.Op) -> bool:
    """`WorkgroupId.x + WorkgroupId.y * NumWorkgroups.x`: a 1-D kernel's group id."""
    if v.opname != "OpIAdd" or len(v.args) != 2:
        return False
    x, rest = v.args
    return (isinstance(x, ir.Builtin) and x.name == "WorkgroupId" and x.component == 0 and
            isinstance(rest, ir.Op) and rest.opname == "OpIMul" and
            [(getattr(a, "name", None), getattr(a, "component", None)) for a in rest.args]
            == [("WorkgroupId", 1), ("NumWorkgroups", 0)])


class Ranges:
    """The ranges of the values in a kernel's functions."""

    def __init__(self, functions: list[ir.Function], local_size_xyz: tuple[int, ...],
                 constants: dict[int, Any]) -> None:
        self.local_size = local_size_xyz
        self.constants = constants  # id of a value -> the number it is compiled for
        # each local's assignments, with the loop counters known where each happens
        self.assigns: dict[int, list[tuple[ir.Value, Context]]] = {}
        self.contexts: dict[int, Context] = {}  # id of an access -> its context
        self._locals: dict[int, Interval] = {}
        self._busy: set[int] = set()
        for fn in functions:
            self._walk(fn.body, ())

    # -- collecting ----------------------------------------------------------------------
    def _walk(self, stmts: list[Any], ctx: Context) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, ir.Assign):
                self.assigns.setdefault(id(s.local), []).append((s.value, ctx))
            elif isinstance(s, ir.Store):
                self.contexts[id(s)] = ctx
            if isinstance(s, ir.Loop):
                counter = self._counter(s, stmts[:i])
                self._walk(s.pre, ctx)
                self._values(s.cond, ctx)
                self._walk(s.body, ctx if counter is None else (*ctx, counter))
                self._walk(s.step, ctx)
            elif isinstance(s, ir.Switch):
                self._values(s.selector, ctx)
                for _, body in s.cases:
                    self._walk(body, ctx)
            elif dataclasses.is_dataclass(s):
                for f in dataclasses.fields(s):
                    x = getattr(s, f.name)
                    if isinstance(x, list) and all(isinstance(c, ir.Stmt) for c in x):
                        self._walk(x, ctx)
                    elif isinstance(x, ir.Value | ir.Place):
                        self._values(x, ctx)

    def _values(self, root: Any, ctx: Context) -> None:
        """Notes the context of each access in an expression, and walks the statements
        that its conditional values run."""
        stack = [root]
        for x in ir.each_once(stack):
            if isinstance(x, ir.Load | ir.Atomic):
                self.contexts[id(x)] = ctx
            elif isinstance(x, ir.Cond):
                self._walk(x.pre_a, ctx)
                self._walk(x.pre_b, ctx)
            if isinstance(x, list):
                stack.extend(x)
            elif isinstance(x, ir.Value | ir.Place):
                stack.extend(getattr(x, f.name) for f in dataclasses.fields(x)
                             if f.name not in ("ty", "fn", "local", "param", "root",
                                               "pre_a", "pre_b"))

    def _counter(self, loop: ir.Loop, before: list[Any]) -> tuple[int, Any] | None:
        """(the counter's local id, (start, stop local)) of a `range` loop counting up by
        a positive step, or None."""
        cond = loop.cond
        if not (isinstance(cond, ir.Op) and cond.opname in ("OpSLessThan", "OpULessThan")
                and all(isinstance(a, ir.Read) for a in cond.args)
                and len(loop.step) == 1 and isinstance(loop.step[0], ir.Assign)):
            return None
        counter, stop = cond.args[0].local, cond.args[1].local
        step = loop.step[0]
        add = step.value
        if not (step.local is counter and isinstance(add, ir.Op) and add.opname == "OpIAdd"
                and isinstance(add.args[0], ir.Read) and add.args[0].local is counter
                and isinstance(add.args[1], ir.Read)):
            return None
        start = next((s.value for s in reversed(before)
                      if isinstance(s, ir.Assign) and s.local is counter), None)
        return None if start is None else (id(counter), (start, stop, add.args[1].local))

    # -- ranges --------------------------------------------------------------------------
    def of(self, v: Any, ctx: Context) -> Interval:
        """The range of value `v` at a point inside the loops `ctx` describes."""
        if isinstance(v, ir.Const):
            return (int(v.value), int(v.value)) if isinstance(v.value, int | bool) else None
        if isinstance(v, ir.Builtin):
            if v.name == "LocalInvocationId":
                return 0, self.local_size[v.component] - 1
            if v.name == "WorkgroupId":
                return 0, self._groups(self.local_size[v.component])
            return None
        if isinstance(v, ir.Read):
            return self._read(v.local, ctx)
        number = self.constants.get(id(v))
        if isinstance(number, numbers.Integral) and not isinstance(number, bool):
            return int(number), int(number)
        if isinstance(v, ir.Cond):
            a, b = self.of(v.a, ctx), self.of(v.b, ctx)
            return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
        if isinstance(v, ir.Op):
            return _fits(self._op(v, ctx), v.ty)
        return None

    def _read(self, local: ir.Local, ctx: Context) -> Interval:
        for depth in reversed(range(len(ctx))):
            key, (start, stop, stride) = ctx[depth]
            if key == id(local):  # a counter inside its loop
                outer = ctx[:depth]
                lo, hi = self.of(start, outer), self._read(stop, outer)
                step, limit = self._read(stride, outer), _bounds(local.ty)
                # the step's sum must not wrap around: the counter would pass `stop`
                if lo is None or hi is None or step is None or limit is None or \
                        step[0] < 1 or hi[1] - 1 + step[1] > limit[1] or lo[0] > hi[1] - 1:
                    return None
                return lo[0], hi[1] - 1
        key = id(local)
        if key in self._locals:
            return self._locals[key]
        if key in self._busy or key not in self.assigns:
            return None
        self._busy.add(key)
        ranges = [self.of(value, where) for value, where in self.assigns[key]]
        self._busy.discard(key)
        found = None if any(r is None for r in ranges) else (
            min(r[0] for r in ranges), max(r[1] for r in ranges))  # type: ignore[index]
        self._locals[key] = found
        return found

    @staticmethod
    def _groups(local: int) -> int:
        """The highest group id along a dimension of `local` work-items (folded or not:
        a launch has no more groups than work-items over the work-group's size there)."""
        return -(-MAX_WORK_ITEMS // local) - 1

    def _op(self, v: ir.Op, ctx: Context) -> Interval:
        if is_group_linear(v):
            return 0, self._groups(self.local_size[0])
        args = [self.of(a, ctx) if isinstance(a, ir.Value) else None for a in v.args]
        if any(a is None for a in args):
            return None
        a = args[0]
        assert a is not None
        if v.opname in ("OpSConvert", "OpUConvert", "OpBitcast"):
            return a if a[0] >= 0 or v.opname == "OpSConvert" else None
        b = args[1] if len(args) > 1 else None
        if b is None:
            return None
        if v.opname == "OpIAdd":
            return a[0] + b[0], a[1] + b[1]
        if v.opname == "OpISub":
            return a[0] - b[1], a[1] - b[0]
        if v.opname == "OpIMul":
            products = [x * y for x in a for y in b]
            return min(products), max(products)
        if a[0] < 0 or b[0] < 1:  # the rest: non-negative operands, a positive divisor
            return None
        if v.opname in ("OpSDiv", "OpUDiv"):
            return a[0] // b[1], a[1] // b[0]
        if v.opname in ("OpSRem", "OpSMod", "OpUMod"):
            return 0, min(a[1], b[1] - 1)
        if v.opname == "OpBitwiseAnd":
            return 0, min(a[1], b[1])
        if v.opname in ("OpShiftRightLogical", "OpShiftRightArithmetic") and b[0] == b[1]:
            return a[0] >> b[0], a[1] >> b[0]
        if v.opname == "OpShiftLeftLogical" and b[0] == b[1]:
            return a[0] << b[0], a[1] << b[0]
        return None

    def proves_nonnegative(self, x: Any, offsets: list[ir.Value]) -> bool:
        """Whether the `offsets` added to a pointer at access `x` are none negative (nor
        near wrapping a 64-bit address)."""
        ctx = self.contexts.get(id(x), ())
        found = [self.of(v, ctx) for v in offsets]
        return all(r is not None and r[0] >= 0 and r[1] < 1 << 62 for r in found)

    def proves_within(self, x: Any, length: int) -> bool:
        """Whether access `x`'s index lies in [0, length)."""
        r = self.of(x.place.index, self.contexts.get(id(x), ()))
        return r is not None and r[0] >= 0 and r[1] < length
