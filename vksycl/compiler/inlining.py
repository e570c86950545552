"""Device function calls inlined, and `return`s turned into structured code, for the
adjoint of a kernel (`adjoint`), whose sweeps see one body of statements."""

from __future__ import annotations

import dataclasses
from typing import Any

from . import ir
from .typesys import BOOL, VOID


class Inlining:
    """Inlining, a part of `adjoint.Adjoint`, which keeps each new node's source line
    (`keep_site`) and names what it cannot inline (`error`)."""

    def inline_block(self, body: list[ir.Stmt]) -> list[ir.Stmt]:
        """The statements with device function calls inlined (their bodies before the
        statement that uses the result)."""
        out: list[ir.Stmt] = []
        for s in body:
            new: ir.Stmt = s
            if isinstance(s, ir.Assign):
                new = ir.Assign(s.local, self.lift(s.value, out, {}))
            elif isinstance(s, ir.Store):
                memo: dict[int, Any] = {}
                place = dataclasses.replace(s.place, index=self.lift(s.place.index, out, memo))
                new = ir.Store(place, self.lift(s.value, out, memo))
            elif isinstance(s, ir.Eval):
                new = ir.Eval(self.lift(s.value, out, {}))
            elif isinstance(s, ir.If):
                new = ir.If(self.lift(s.cond, out, {}), self.inline_block(s.then),
                            self.inline_block(s.orelse))
            elif isinstance(s, ir.Loop):
                if _has_call([s.pre, s.cond]):
                    raise self.error(s, "a device function call in a loop condition")
                new = ir.Loop(s.pre, s.cond, self.inline_block(s.body),
                              self.inline_block(s.step), s.control)
            out.append(self.keep_site(new, s))
        return out

    def lift(self, v: Any, out: list[ir.Stmt], memo: dict[int, Any]) -> Any:
        """`v` with each call replaced by a read of its inlined result."""
        if not isinstance(v, ir.Value) or id(v) in memo:
            return memo.get(id(v), v)
        r: Any = v
        if isinstance(v, ir.Call):
            r = self.inline_call(v, [self.lift(a, out, memo) for a in v.args], out)
        elif isinstance(v, ir.Op | ir.Ext):
            args = [self.lift(a, out, memo) for a in v.args]
            if any(a is not b for a, b in zip(args, v.args, strict=True)):
                r = ir.Op(v.opname, v.ty, args) if isinstance(v, ir.Op) else \
                    ir.Ext(v.name, v.ty, args)
        elif isinstance(v, ir.Load):
            index = self.lift(v.place.index, out, memo)
            if index is not v.place.index:
                r = ir.Load(dataclasses.replace(v.place, index=index))
        elif isinstance(v, ir.Cond) and _has_call([v.a, v.b, v.pre_a, v.pre_b]):
            raise self.error(v, "a device function call in a conditional expression")
        memo[id(v)] = self.keep_site(r, v)
        return r

    def inline_call(self, call: ir.Call, args: list[Any], out: list[ir.Stmt]) -> ir.Value:
        fn = call.fn
        params: dict[int, ir.Local] = {}
        for p, a in zip(fn.params, args, strict=True):
            if p.root is not None or isinstance(a, ir.Root):
                raise self.error(call, f"device function {fn.name} takes local or private "
                                 "memory")
            params[id(p)] = ir.Local(p.name, p.ty)
            out.append(ir.Assign(params[id(p)], a))
        ret = ir.Local(f"{fn.name}.ret", fn.ret) if fn.ret != VOID else None
        body = self.clone(fn.body, {}, params, {})
        out.extend(self.inline_block(strip_returns(self, body, ret)))
        return ir.Read(ret) if ret is not None else ir.Const(BOOL, False)

    def clone(self, x: Any, locs: dict[int, ir.Local], params: dict[int, ir.Local],
              memo: dict[int, Any]) -> Any:
        """A copy of a device function's statements or values with fresh locals, its
        parameters read from `params`."""
        if isinstance(x, list):
            return [self.clone(i, locs, params, memo) for i in x]
        if id(x) in memo:
            return memo[id(x)]
        r: Any
        if isinstance(x, ir.Local):
            r = locs.setdefault(id(x), ir.Local(x.name, x.ty))
        elif isinstance(x, ir.ArgRead):
            r = ir.Read(params[id(x.param)])
        elif isinstance(x, ir.Break | ir.Continue):
            r = type(x)()
        elif dataclasses.is_dataclass(x) and isinstance(x, ir.Value | ir.Stmt | ir.Place):
            r = type(x)(**{f.name: self.clone(getattr(x, f.name), locs, params, memo)
                           for f in dataclasses.fields(x) if f.init})
        else:
            return x
        memo[id(x)] = self.keep_site(r, x)
        return r


def strip_returns(owner: Inlining, body: list[ir.Stmt], ret: ir.Local | None
                  ) -> list[ir.Stmt]:
    """`body` without `return`s: what follows an `if` with a `return` in it goes into both
    of its branches (each then ends where it returned), a returned value is assigned to
    `ret`."""
    out: list[ir.Stmt] = []
    for k, s in enumerate(body):
        if isinstance(s, ir.Return):
            if s.value is not None and ret is not None:
                out.append(ir.Assign(ret, s.value))
            return out
        if isinstance(s, ir.If) and (_has_return(s.then) or _has_return(s.orelse)):
            rest = body[k + 1:]
            out.append(owner.keep_site(ir.If(s.cond, strip_returns(owner, s.then + rest, ret),
                                             strip_returns(owner, s.orelse + rest, ret)), s))
            return out
        if isinstance(s, ir.Loop) and _has_return(s.body):
            raise owner.error(s, "return inside a loop")
        out.append(s)
    return out


def _has_return(body: list[ir.Stmt]) -> bool:
    for s in body:
        if isinstance(s, ir.Return):
            return True
        if isinstance(s, ir.If) and (_has_return(s.then) or _has_return(s.orelse)):
            return True
        if isinstance(s, ir.Loop) and _has_return(s.body):
            return True
    return False


def _has_call(node: Any) -> bool:
    stack = [node]
    for x in ir.each_once(stack):
        if isinstance(x, ir.Call):
            return True
        if isinstance(x, list | tuple):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and isinstance(x, ir.Value | ir.Stmt | ir.Place):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x) if f.name != "ty")
    return False


__all__ = ["Inlining", "strip_returns"]
