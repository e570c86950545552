"""IR passes that run before codegen."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from . import ir

_SIMPLE = (ir.Const, ir.Read, ir.ArgRead, ir.PushField, ir.Builtin)


def locals_read(node: Any, out: set[int]) -> None:
    """Adds to `out` the ids of the locals `node` reads (private arrays included)."""
    stack = [node]
    for x in ir.each_once(stack):
        if isinstance(x, ir.Read | ir.PrivateRoot):
            out.add(id(x.local))
        elif isinstance(x, ir.Call):
            stack.extend(x.args)
            continue
        if isinstance(x, list | tuple):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, ir.Function | ir.Local):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x)
                         if f.name not in ("ty", "fn", "param", "shape"))


def remove_dead_stores(fn: ir.Function) -> None:
    """Drop assignments to variables nothing reads (their values have no side effects), so
    an argument bound to an unused parameter costs no push constant."""
    read: set[int] = set()
    locals_read(fn.body, read)
    fn.body = _kept(fn.body, lambda s: not (isinstance(s, ir.Assign) and id(s.local) not in
                                            read and straight(s.value)))


def _kept(body: list[ir.Stmt], keep: Callable[[ir.Stmt], bool]) -> list[ir.Stmt]:
    """`body` without the statements `keep` refuses, in the ifs, switches and loops it
    keeps too."""
    out = []
    for s in body:
        if not keep(s):
            continue
        if isinstance(s, ir.If):
            s.then, s.orelse = _kept(s.then, keep), _kept(s.orelse, keep)
        elif isinstance(s, ir.Switch):
            s.cases = [(literals, _kept(case, keep)) for literals, case in s.cases]
        elif isinstance(s, ir.Loop):
            s.pre, s.body, s.step = (_kept(part, keep) for part in (s.pre, s.body, s.step))
        out.append(s)
    return out


def remove_dead_code(fn: ir.Function) -> None:
    """Drop what nothing needs: assignments to locals that no needed statement reads,
    then `if`s and loops left with nothing needed inside. An adjoint's forward sweep
    recomputes the kernel whole, loops included, where its reverse sweep may read none of
    their values (an accumulator whose derivative is linear)."""
    needed: set[int] = set()

    def live(s: ir.Stmt) -> bool:
        if isinstance(s, ir.Assign):
            return id(s.local) in needed or not straight(s.value, loads=True)
        if isinstance(s, ir.If):
            return any(map(live, s.then)) or any(map(live, s.orelse))
        if isinstance(s, ir.Switch):
            return any(live(x) for _, body in s.cases for x in body)
        if isinstance(s, ir.Loop):
            return any(map(live, (*s.pre, *s.body, *s.step)))
        return True  # stores, evaluations, break, continue, return

    def mark(body: list[ir.Stmt]) -> None:
        for s in body:
            if not live(s):
                continue
            if isinstance(s, ir.Assign):
                locals_read(s.value, needed)
            elif isinstance(s, ir.If):
                locals_read(s.cond, needed)
                mark(s.then)
                mark(s.orelse)
            elif isinstance(s, ir.Switch):
                locals_read(s.selector, needed)
                for _, case in s.cases:
                    mark(case)
            elif isinstance(s, ir.Loop):
                if s.cond is not None:
                    locals_read(s.cond, needed)
                for part in (s.pre, s.body, s.step):
                    mark(part)
            else:
                locals_read(s, needed)

    while True:
        known = len(needed)
        mark(fn.body)
        if len(needed) == known:
            break

    fn.body = _kept(fn.body, live)


def straight(v: ir.Value, loads: bool = False) -> bool:
    """Whether evaluating v needs no control flow and has no side effects (so it may be
    evaluated speculatively by OpSelect). With `loads`: whether it has no effect but its
    value, reading memory and choosing between values included (so one nobody needs may
    go)."""
    stack = [v]
    for x in ir.each_once(stack):
        if isinstance(x, _SIMPLE):
            continue
        if isinstance(x, ir.Op):
            if x.opname.startswith(ir.COLLECTIVE_OPS):
                return False
            stack.extend(a for a in x.args if isinstance(a, ir.Value))
        elif isinstance(x, ir.Ext):
            stack.extend(x.args)
        elif not loads:
            return False
        elif isinstance(x, ir.Load):
            stack.append(x.place.index)
        elif isinstance(x, ir.Cond) and not x.pre_a and not x.pre_b:
            stack.extend((x.cond, x.a, x.b))
        elif isinstance(x, ir.Compose):
            stack.extend(x.parts)
        elif isinstance(x, ir.Extract):
            stack.append(x.base)
        else:
            return False
    return True
