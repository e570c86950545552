"""Coarsening of one-dimensional range kernels: each work-item runs the body for COARSEN
ids, their loads batched before their stores.

SYCL leaves the order of different work-items' memory operations unspecified (a kernel
whose items touch each other's data without atomics has a data race), so interleaving the
copies is a valid execution as long as each copy keeps its own order. It applies to
straight-line bodies whose loads all come before their first store (so moving stores
later changes nothing a copy reads), with no calls, atomics, or group operations. More
bytes in flight per work-item is what memory-bound kernels need on GPUs: a copy kernel
went from 57% to 100% of torch's bandwidth on an H200 when written this way by hand.
"""

from __future__ import annotations

from typing import Any

from . import ir

COARSEN = 4
_VALUES = (ir.Const, ir.Read, ir.ArgRead, ir.PushField, ir.Builtin, ir.Load, ir.Op, ir.Ext)


def _expr_ok(v: Any, loads: list[int]) -> bool:
    stack = [v]
    for x in ir.each_once(stack):
        if not isinstance(x, _VALUES):
            return False
        if isinstance(x, ir.Op):
            if x.opname.startswith(ir.COLLECTIVE_OPS):
                return False
            stack.extend(a for a in x.args if isinstance(a, ir.Value))
        elif isinstance(x, ir.Ext):
            stack.extend(x.args)
        elif isinstance(x, ir.Load):
            loads.append(1)
            stack.append(x.place.index)
    return True


def eligible(body: list[ir.Stmt]) -> bool:
    """Straight-line code whose loads all precede its first store."""
    stored = False
    for s in body:
        loads: list[int] = []
        if isinstance(s, ir.Assign):
            ok = _expr_ok(s.value, loads)
        elif isinstance(s, ir.Store):
            ok = _expr_ok(s.value, loads) and _expr_ok(s.place.index, loads)
        elif isinstance(s, ir.Eval):
            ok = _expr_ok(s.value, loads)
        elif isinstance(s, ir.Return) and s.value is None and s is body[-1]:
            continue
        else:
            return False
        if not ok or (loads and stored):
            return False
        stored = stored or isinstance(s, ir.Store)
    return True


def split(body: list[ir.Stmt], fn: ir.Function) -> tuple[list[ir.Stmt], list[ir.Stmt]]:
    """(everything but the stores, with store indexes and values computed into
    temporaries; the stores)."""
    first: list[ir.Stmt] = []
    stores: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, ir.Store):
            ti = ir.Local("st.index", s.place.index.ty)
            tv = ir.Local("st.value", s.value.ty)
            fn.locals += [ti, tv]
            first += [ir.Assign(ti, s.place.index), ir.Assign(tv, s.value)]
            place = ir.Place(s.place.root, ir.Read(ti), s.place.members, s.place.ty,
                             s.place.align)
            stores.append(ir.Store(place, ir.Read(tv)))
        elif not isinstance(s, ir.Return):
            first.append(s)
    return first, stores


def interleave(parts: list[list[ir.Stmt]]) -> list[ir.Stmt]:
    out: list[ir.Stmt] = []
    for k in range(max(len(p) for p in parts)):
        out += [p[k] for p in parts if k < len(p)]
    return out
