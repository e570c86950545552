"""IR passes that run before codegen."""

from __future__ import annotations

import dataclasses
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

    def clean(body: list[ir.Stmt]) -> list[ir.Stmt]:
        out = []
        for s in body:
            if isinstance(s, ir.Assign) and id(s.local) not in read and straight(s.value):
                continue
            if isinstance(s, ir.If):
                s.then, s.orelse = clean(s.then), clean(s.orelse)
            elif isinstance(s, ir.Switch):
                s.cases = [(literals, clean(body)) for literals, body in s.cases]
            elif isinstance(s, ir.Loop):
                s.pre, s.body, s.step = clean(s.pre), clean(s.body), clean(s.step)
            out.append(s)
        return out

    fn.body = clean(fn.body)


def straight(v: ir.Value) -> bool:
    """Whether evaluating v needs no control flow and has no side effects (so it may be
    evaluated speculatively by OpSelect)."""
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
        else:
            return False
    return True
