"""Checked mode (`VKSYCL_CHECK=bounds[,nan]`): every load, store and atomic that kernel
code makes through a USM pointer, an accessor or work-group memory is checked before it
happens.

A global access must lie in the allocation that holds its pointer's base. Where the
address was computed from a kernel argument, the launch passes that allocation's
[start, end) beside it (hidden arguments), so pointer arithmetic landing in another
allocation is caught with two comparisons, or with the end's alone where the offsets
are proven not negative (`intervals`). Otherwise (a pointer loaded from memory or kept
in a variable) the address itself is looked up in the table of live allocations the
launch passes (a hidden argument: a count, then the sorted [start, end) of each). An
accessor's element is checked against the accessor's range, index by index. A work-group
memory access is checked against the array's length. A failing access does nothing (a
load gives zero), counts itself in the debug buffer and, the first time, records its
site, work-item, address, size and base there (`printing` has the layout); the host
reports it at the next wait. With `nan`, every float stored is checked for NaN and Inf
too.

The frontend notes each access's source position (`KernelModule.note_access`); accesses
the compiler makes on its own (reductions' partials, group algorithms) are not checked.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import ir, printing
from .intervals import Ranges
from .printing import (
    ACCESSOR_RANGE,
    LOCAL_OUT_OF_BOUNDS,
    NOT_FINITE,
    OUT_OF_BOUNDS,
    VIOLATION_ADDRESS,
    VIOLATION_BASE,
    VIOLATION_ID,
    VIOLATION_ITEM,
    VIOLATION_KIND,
    VIOLATION_SIZE,
    VIOLATIONS,
)
from .typesys import (
    BOOL,
    F32,
    U32,
    U64,
    VOID,
    Scalar,
    Struct,
    VecType,
    field_offsets,
    layout,
    mem_type,
)

# the table of live allocations as global memory: a root of its own, which kernel fusion
# does not count among the kernel's accesses
TABLE_ROOT = ir.GlobalRoot(U64)


def _member_offset(elem: Any, members: tuple[int, ...]) -> int:
    off, t = 0, mem_type(elem)
    for k in members:
        assert isinstance(t, Struct)
        off += field_offsets(t)[k]
        t = mem_type(t.fields[k][1])
    return off


def _add(a: ir.Value, k: int) -> ir.Value:
    return a if not k else ir.Op("OpIAdd", U64, [a, ir.Const(U64, k)])


def _zero(t: Any) -> ir.Value:
    """What a load stopped by a check gives: zero (a vector of zeros for a vector)."""
    if isinstance(t, VecType):
        return ir.Compose(t, [ir.Const(t.elem, 0)] * t.count)
    return ir.Const(t, False if t.is_bool else 0)


def _base(address: ir.Value) -> ir.Value | None:
    """The kernel argument a global address was computed from by adding offsets, if it
    was (arguments are live pointers, checked at launch)."""
    while isinstance(address, ir.Op) and address.opname in ("OpIAdd", "OpISub") and \
            address.ty == U64:
        address = address.args[0]
    return address if isinstance(address, ir.PushField) else None


def _offsets(address: ir.Value) -> list[ir.Value] | None:
    """What is added to the kernel argument an address was computed from, or None where
    something is subtracted."""
    found = []
    while isinstance(address, ir.Op) and address.ty == U64 and address.opname == "OpIAdd":
        found.append(address.args[1])
        address = address.args[0]
    return found if isinstance(address, ir.PushField) else None


class Checker:
    """The checks of one kernel: its check and report functions, made on first use."""

    def __init__(self, m: Any, nan: bool, ranges: Ranges) -> None:
        self.m = m
        self.nan = nan
        self.ranges = ranges
        self._report: ir.Function | None = None
        self._check: ir.Function | None = None

    # -- the device functions ----------------------------------------------------------
    def report(self) -> ir.Function:
        """report(kind, site, address, size, base): counts a violation and records the
        first one."""
        if self._report is None:
            names = ("kind", "site", "address", "size", "base")
            params = [ir.Param(n, t) for n, t in zip(names, (U32, U32, U64, U32, U64),
                                                      strict=True)]
            kind, site, address, size, base = (ir.ArgRead(p) for p in params)
            buf = self.m.debug_buffer()
            first = ir.Atomic("OpAtomicIAdd", _word(buf, VIOLATIONS), [ir.Const(U32, 1)],
                              U32, 1, 0)
            note = [ir.Store(_word(buf, VIOLATION_KIND), kind),
                    ir.Store(_word(buf, VIOLATION_ID), site),
                    ir.Store(_word(buf, VIOLATION_SIZE), size),
                    *_store64(buf, VIOLATION_ADDRESS, address),
                    *_store64(buf, VIOLATION_BASE, base)]
            note += [ir.Store(_word(buf, VIOLATION_ITEM + d), ir.Op("OpBitcast", U32, [g]))
                     for d, g in enumerate(self.m.debug_item_ids())]
            body: list[ir.Stmt] = [
                ir.If(ir.Op("OpIEqual", BOOL, [first, ir.Const(U32, 0)]), note, []),
                ir.Return(None)]
            self._report = ir.Function("vksycl_report", params, VOID, body)
        return self._report

    def check(self) -> ir.Function:
        """check(base, address, size, site) -> bool: whether [address, address + size)
        lies in the live allocation holding `base`; reports it where not."""
        if self._check is None:
            params = [ir.Param(n, t) for n, t in (("base", U64), ("address", U64),
                                                  ("size", U32), ("site", U32))]
            base, address, size, site = (ir.ArgRead(p) for p in params)
            table = self.m.check_table()
            lo, hi, mid = (ir.Local(n, U32) for n in ("lo", "hi", "mid"))
            count = ir.Op("OpUConvert", U32, [ir.Load(ir.Place(TABLE_ROOT, table, (), U64))])

            def entry(k: ir.Value, end: int) -> ir.Value:  # start (0) or end (1) of entry k
                at = ir.Op("OpIAdd", U64, [table, ir.Op("OpIMul", U64, [
                    ir.Op("OpUConvert", U64, [k]), ir.Const(U64, 16)])])
                return ir.Load(ir.Place(TABLE_ROOT, _add(at, 8 + 8 * end), (), U64))

            search = ir.Loop([], ir.Op("OpULessThan", BOOL, [ir.Read(lo), ir.Read(hi)]), [
                ir.Assign(mid, ir.Op("OpShiftRightLogical", U32, [
                    ir.Op("OpIAdd", U32, [ir.Read(lo), ir.Read(hi)]), ir.Const(U32, 1)])),
                ir.If(ir.Op("OpULessThanEqual", BOOL, [entry(ir.Read(mid), 0), base]),
                      [ir.Assign(lo, ir.Op("OpIAdd", U32, [ir.Read(mid), ir.Const(U32, 1)]))],
                      [ir.Assign(hi, ir.Read(mid))])], [])
            last = ir.Op("OpISub", U32, [ir.Read(lo), ir.Const(U32, 1)])
            end = entry(last, 1)
            inside = ir.Op("OpLogicalAnd", BOOL, [
                ir.Op("OpLogicalAnd", BOOL, [
                    ir.Op("OpULessThanEqual", BOOL, [entry(last, 0), address]),
                    ir.Op("OpULessThan", BOOL, [base, end])]),
                ir.Op("OpULessThanEqual", BOOL, [
                    ir.Op("OpIAdd", U64, [address, ir.Op("OpUConvert", U64, [size])]), end])])
            ok = ir.Local("ok", BOOL)
            body: list[ir.Stmt] = [
                ir.Assign(lo, ir.Const(U32, 0)), ir.Assign(hi, count), search,
                ir.Assign(ok, ir.Cond(ir.Op("OpUGreaterThan", BOOL, [ir.Read(lo), ir.Const(
                    U32, 0)]), inside, ir.Const(BOOL, False), BOOL)),
                ir.If(ir.Op("OpLogicalNot", BOOL, [ir.Read(ok)]), [ir.Eval(ir.Call(
                    self.report(), [ir.Const(U32, OUT_OF_BOUNDS), site, address, size, base],
                    VOID))], []),
                ir.Return(ir.Read(ok))]
            self._check = ir.Function("vksycl_check", params, BOOL, body,
                                      [lo, hi, mid, ok])
        return self._check

    # -- one access ----------------------------------------------------------------------
    def guard(self, x: Any, site: int) -> tuple[ir.Value, list[ir.Stmt]] | None:
        """(whether access `x` may go ahead, what to do where it may not), or None for
        memory that is not checked."""
        place = x.place
        size = layout(place.ty)[0]
        limits = self.m.element_limits(place)
        if limits is not None:
            return self._within_range(place, limits, size, site)
        if isinstance(place.root, ir.GlobalRoot):
            address = _add(place.index, _member_offset(place.root.elem, place.members))
            base = _base(place.index)
            if base is None:
                ok = ir.Call(self.check(), [address, address, ir.Const(U32, size),
                                            ir.Const(U32, site)], BOOL)
                return ok, []
            # a kernel argument's allocation comes with the launch: two comparisons, or
            # one where the offsets are proven not negative (the argument itself lies in
            # [start, end], or the span is empty and the end fails any access)
            start, end = self.m.check_bounds(base)
            ok = ir.Op("OpULessThanEqual", BOOL, [_add(address, size), end])
            offsets = _offsets(place.index)
            if offsets is None or not self.ranges.proves_nonnegative(x, offsets):
                ok = ir.Op("OpLogicalAnd", BOOL, [
                    ir.Op("OpULessThanEqual", BOOL, [start, address]), ok])
            return ok, [ir.Eval(ir.Call(self.report(), [
                ir.Const(U32, OUT_OF_BOUNDS), ir.Const(U32, site), address,
                ir.Const(U32, size), base], VOID))]
        if isinstance(place.root, ir.SharedRoot):
            if self.ranges.proves_within(x, place.root.length):
                return ir.Const(BOOL, True), []
            index = ir.Op("OpBitcast", U32, [place.index])
            ok = ir.Op("OpULessThan", BOOL, [index, ir.Const(U32, place.root.length)])
            stride = layout(mem_type(place.root.elem))[0]
            offset = ir.Op("OpIMul", U64, [ir.Op("OpUConvert", U64, [index]),
                                           ir.Const(U64, stride)])
            offset = _add(offset, _member_offset(place.root.elem, place.members))
            report = ir.Eval(ir.Call(self.report(), [
                ir.Const(U32, LOCAL_OUT_OF_BOUNDS), ir.Const(U32, site), offset,
                ir.Const(U32, size), ir.Const(U64, place.root.length * stride)], VOID))
            return ok, [report]
        return None

    def _within_range(self, place: ir.Place, limits: list[tuple[ir.Value, ir.Value]],
                      size: int, site: int) -> tuple[ir.Value, list[ir.Stmt]]:
        """An accessor's element: each index below the range in its dimension (unsigned:
        a negative one fails too). The report names the first dimension that fails, its
        index and range packed where a pointer's base goes (range << 32 | index)."""
        fits = [ir.Op("OpULessThan", BOOL, [_u32(i), _u32(r)]) for i, r in limits]
        ok = fits[0]
        for f in fits[1:]:
            ok = ir.Op("OpLogicalAnd", BOOL, [ok, f])
        kind: ir.Value = ir.Const(U32, ACCESSOR_RANGE + len(limits) - 1)
        packed: ir.Value = _pack(*limits[-1])
        for d in reversed(range(len(limits) - 1)):
            kind = ir.Cond(fits[d], kind, ir.Const(U32, ACCESSOR_RANGE + d), U32)
            packed = ir.Cond(fits[d], packed, _pack(*limits[d]), U64)
        address = _add(place.index, _member_offset(place.root.elem, place.members))
        return ok, [ir.Eval(ir.Call(self.report(), [
            kind, ir.Const(U32, site), address, ir.Const(U32, size), packed], VOID))]

    def finite(self, s: ir.Store, site: int) -> list[ir.Stmt]:
        """The NaN / Inf check of a float stored (with `nan`)."""
        v = s.value
        if not (self.nan and isinstance(v.ty, Scalar) and v.ty.is_float):
            return []
        bad = ir.Op("OpLogicalOr", BOOL, [ir.Op("OpIsNan", BOOL, [v]),
                                           ir.Op("OpIsInf", BOOL, [v])])
        place = s.place
        address = _add(place.index, _member_offset(place.root.elem, place.members)) \
            if isinstance(place.root, ir.GlobalRoot) else ir.Const(U64, 0)
        bits = ir.Op("OpBitcast", U32 if v.ty.bits == 32 else U64, [
            v if v.ty.bits >= 32 else ir.Op("OpFConvert", F32, [v])])
        shown = bits if bits.ty == U64 else ir.Op("OpUConvert", U64, [bits])
        return [ir.If(bad, [ir.Eval(ir.Call(self.report(), [
            ir.Const(U32, NOT_FINITE), ir.Const(U32, site), address,
            ir.Const(U32, layout(place.ty)[0]), shown], VOID))], [])]


def _u32(v: ir.Value) -> ir.Value:
    return ir.Op("OpBitcast", U32, [v])


def _pack(index: ir.Value, extent: ir.Value) -> ir.Value:
    """extent << 32 | index, as unsigned 32-bit halves."""
    return ir.Op("OpBitwiseOr", U64, [
        ir.Op("OpShiftLeftLogical", U64, [ir.Op("OpUConvert", U64, [_u32(extent)]),
                                          ir.Const(U64, 32)]),
        ir.Op("OpUConvert", U64, [_u32(index)])])


def _word(address: ir.Value, k: int) -> ir.Place:
    return ir.Place(printing.DEBUG_ROOT, _add(address, 4 * k), (), U32)


def _store64(address: ir.Value, k: int, v: ir.Value) -> list[ir.Stmt]:
    return [ir.Store(_word(address, k), ir.Op("OpUConvert", U32, [v])),
            ir.Store(_word(address, k + 1), ir.Op("OpUConvert", U32, [
                ir.Op("OpShiftRightLogical", U64, [v, ir.Const(U64, 32)])]))]


def instrument(m: Any, kernel: ir.Function, sites: dict[int, int], nan: bool) -> None:
    """Puts the checks around the accesses of `kernel` and its device functions whose
    places `sites` maps to their site record ids."""
    memo: dict[int, Any] = {}
    functions: list[ir.Function] = []
    todo = [kernel]
    while todo:
        fn = todo.pop()
        if any(f is fn for f in functions):
            continue
        functions.append(fn)
        stack: list[Any] = [fn.body]
        for x in ir.each_once(stack):
            if isinstance(x, ir.Call):
                todo.append(x.fn)
            if isinstance(x, list) or (dataclasses.is_dataclass(x) and not isinstance(
                    x, ir.Function | ir.Local | ir.Param | ir.Root | type)):
                stack.extend(x if isinstance(x, list) else (
                    getattr(x, f.name) for f in dataclasses.fields(x)
                    if f.name not in ("ty", "fn", "local", "param")))

    # the local size in Vulkan's x, y, z (SYCL's last dimension is x)
    # the captured numbers the kernel is compiled for (`KernelModule.specialize`)
    constants = {key: obj for key, (path, obj, _) in m.origins.items()
                 if path in m.specialized}
    checker = Checker(m, nan, Ranges(functions, (*reversed(m.local), 1, 1, 1)[:3], constants))

    def visit(x: Any) -> Any:
        key = id(x)
        if key in memo:
            return memo[key]
        memo[key] = x
        if isinstance(x, list):
            for i, c in enumerate(x):
                x[i] = visit(c)
            return x
        if not dataclasses.is_dataclass(x) or isinstance(
                x, ir.Function | ir.Local | ir.Param | ir.Root | type) or \
                x.__dataclass_params__.frozen:  # literals and type operands
            return x
        for f in dataclasses.fields(x):
            if f.name not in ("ty", "fn", "local", "param"):
                setattr(x, f.name, visit(getattr(x, f.name)))
        site = sites.get(id(x.place)) if isinstance(x, ir.Load | ir.Store | ir.Atomic) \
            else None
        found = checker.guard(x, site) if site is not None else None
        if found is None:
            return x
        ok, otherwise = found
        proven = isinstance(ok, ir.Const)
        if isinstance(x, ir.Store):
            finite = checker.finite(x, site)
            if proven and not finite:
                return x
            new: Any = ir.If(ok, [*finite, x], otherwise)
        elif proven:
            return x
        else:
            new = ir.Cond(ok, x, _zero(x.ty), x.ty, [], otherwise)
        memo[key] = new
        return new

    for fn in functions:
        fn.body[:] = visit(fn.body)

__all__ = ["TABLE_ROOT", "instrument"]
