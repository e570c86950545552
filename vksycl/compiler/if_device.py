"""if_device / if_host (seed 002), the single-pass way, while device code is lowered.

The calls are markers. A kept body (if_device's function, or otherwise's after if_host) is
inlined where the marker is called, so it reads the enclosing function's variables as they
are at that point, writes through its pointers, and rebinds `nonlocal` names. A dropped
body is never looked at: it may hold any Python, and nothing it names reaches the kernel's
arguments, its call tree or its diagnostics.

A nested function or lambda in device code is a `Body` value until a marker inlines it;
anything else done with it is reported at its definition.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import ir
from .typesys import BOOL
from .values import FixedSlot, PyV

MARKER = "__vksycl_call_if__"  # "device", "host" (the markers), "keep"/"drop" (otherwise)
_NAMES = {"device": "if_device", "host": "if_host", "keep": "otherwise", "drop": "otherwise"}
_ONLY = "except as the function passed to if_device, if_host or otherwise"


class Body:
    """A nested function or lambda defined in device code."""

    __vksycl_call_if__ = "call"

    def __init__(self, owner: Any, node: ast.FunctionDef | ast.Lambda) -> None:
        self.owner = owner  # the FunctionLowering whose variables the body sees
        self.node = node

    def __repr__(self) -> str:
        return f"nested function {getattr(self.node, 'name', '<lambda>')}"

    def misuse(self) -> Exception:
        what = "a lambda" if isinstance(self.node, ast.Lambda) else \
            "nested function definition"
        return self.owner.err(self.node, f"{what} is not supported in device code {_ONLY}")


class _Otherwise:
    """The value of a marker call in device code: its `otherwise` keeps or drops."""

    def __init__(self, keep: bool) -> None:
        self.otherwise = _Marker("keep" if keep else "drop")


class _Marker:
    """`otherwise` in device code, recognised by its mode as the markers are."""

    def __init__(self, mode: str) -> None:
        self.__vksycl_call_if__ = mode


# -- frontend hooks -------------------------------------------------------------------------

def define(fl: Any, s: ast.FunctionDef) -> None:
    """`def name(): ...` in device code binds the name to the body, unlowered."""
    fl.env[s.name] = FixedSlot(PyV(Body(fl, s)))


def lambda_body(fl: Any, e: ast.Lambda) -> PyV:
    return PyV(Body(fl, e))


def nonlocal_stmt(fl: Any, s: ast.Nonlocal) -> None:
    """`nonlocal` in an inlined body: its names were shared with the enclosing scope."""
    if fl.inlined is None:
        raise fl.err(s, "nonlocal is not supported in device code")


def call(fl: Any, marker: Any, args: list[Any], kwargs: dict[str, Any],
         node: ast.AST) -> Any:
    """A call of if_device, if_host or otherwise (or of a body, which is an error)."""
    mode = getattr(marker, MARKER)
    if isinstance(marker, Body):
        raise marker.misuse()
    name = _NAMES.get(mode)
    if name is None:
        raise fl.err(node, f"unknown if_device marker {mode!r}")
    if kwargs or len(args) != 1:
        raise fl.err(node, f"{name}() takes one function")
    if mode in ("device", "keep"):
        run(fl, args[0], node, name)
    if mode in ("device", "host"):
        return PyV(_Otherwise(keep=mode == "host"))
    return PyV(None)


def run(fl: Any, fn: Any, node: ast.AST, name: str) -> None:
    """Lower `fn()` here: a body inline, anything else as an ordinary call."""
    if isinstance(fn, PyV) and isinstance(fn.obj, Body):
        inline(fl, fn.obj, node, name)
        return
    value = fl.m.intr.call(fl, fn, [], {}, node)
    if isinstance(value, ir.Value):
        fl.emit(ir.Eval(value))


def call_lambda(fl: Any, body: Body, args: list[Any], node: ast.AST, name: str) -> Any:
    """The value of a lambda called with `args` where it is defined (the element function
    of joint_matrix_apply)."""
    if body.owner is not fl:
        raise fl.err(node, f"{body!r} is passed to {name} outside the function that "
                     "defines it; pass it where it is defined")
    n = body.node
    if not isinstance(n, ast.Lambda):
        raise fl.err(n, f"pass {name} a lambda or a module-level function, not a nested "
                     "function definition")
    a = n.args
    if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or a.defaults or \
            len(a.args) != len(args):
        raise fl.err(n, f"the function passed to {name} must take {len(args)} argument"
                     f"{'s' if len(args) != 1 else ''}")
    with _scope(fl, n, {p.arg for p in a.args}, set()):
        for p, v in zip(a.args, args, strict=True):
            fl.env[p.arg] = FixedSlot(v)
        return fl.expr(n.body)


def inline(fl: Any, body: Body, node: ast.AST, name: str) -> None:
    if body.owner is not fl:
        raise fl.err(node, f"{body!r} is passed to {name} outside the function that "
                     "defines it; pass it where it is defined")
    n = body.node
    a = n.args
    if a.posonlyargs or a.args or a.kwonlyargs or a.vararg or a.kwarg:
        raise fl.err(n, f"the function passed to {name} takes arguments; it is called "
                     "with none")
    if isinstance(n, ast.Lambda):
        with _scope(fl, n, set(), set()):
            value = fl.expr(n.body)
            if isinstance(value, ir.Value):
                fl.emit(ir.Eval(value))
        return
    if n.decorator_list:
        raise fl.err(n, f"a decorated function cannot be passed to {name} in device code")
    own, shared = _scope_names(n)
    with _scope(fl, n, own, shared) as leave:
        stmts = fl.sub(n.body)
        if leave.flag is not None:
            stmts, _ = _route(stmts, leave, False)
            stmts.insert(0, ir.Assign(leave.flag, ir.Const(BOOL, False)))
    fl.out.extend(stmts)


class _Leave:
    """How `return` leaves an inlined body: it sets a flag and ends the block with a
    placeholder Return, which `_route` turns into skips and breaks."""

    def __init__(self) -> None:
        self.flag: ir.Local | None = None
        self.markers: set[int] = set()

    def stmt_Return(self, fl: Any, s: ast.Return) -> None:
        if s.value is not None:  # the body's result is discarded, its effects are not
            value = fl.expr(s.value)
            if isinstance(value, ir.Value):
                fl.emit(ir.Eval(value))
        if self.flag is None:
            self.flag = fl.new_local("body.returned", BOOL)
        fl.emit(ir.Assign(self.flag, ir.Const(BOOL, True)))
        marker = ir.Return(None)
        self.markers.add(id(marker))
        fl.emit(marker)


def _route(stmts: list[ir.Stmt], leave: _Leave, in_loop: bool) -> tuple[list[ir.Stmt], bool]:
    """The body's statements with each placeholder Return replaced: the rest of every
    enclosing block runs only while the flag is clear, and loops break. Returns the
    statements and whether they may return."""
    assert leave.flag is not None
    out: list[ir.Stmt] = []
    for k, s in enumerate(stmts):
        if id(s) in leave.markers:
            if in_loop:
                out.append(ir.Break())
            return out, True
        returns = False
        if isinstance(s, ir.If):
            s.then, a = _route(s.then, leave, in_loop)
            s.orelse, b = _route(s.orelse, leave, in_loop)
            returns = a or b
            # in a loop the branch broke out already: nothing after it needs a guard
            guard = returns and not in_loop
        elif isinstance(s, ir.Loop):
            s.body, returns = _route(s.body, leave, True)
            guard = returns
        else:
            guard = False
        out.append(s)
        if guard:
            rest, _ = _route(stmts[k + 1:], leave, in_loop)
            flag = ir.Read(leave.flag)
            if in_loop:
                out.append(ir.If(flag, [ir.Break()], rest))
            elif rest:
                out.append(ir.If(ir.Op("OpLogicalNot", BOOL, [flag]), rest, []))
            return out, True
        if returns:
            rest, _ = _route(stmts[k + 1:], leave, in_loop)
            return out + rest, True
    return out, False


class _Hints:
    """Variable types of a body kept apart from the enclosing function's, except for the
    names it shares through `nonlocal`. Kept in the enclosing hints, so they survive the
    restarts that widen a variable."""

    def __init__(self, outer: Any, node: ast.AST, shared: set[str]) -> None:
        self.outer = outer
        self.own = outer.setdefault(("body", node.lineno, node.col_offset), {})
        self.shared = shared

    def _of(self, name: Any) -> Any:
        return self.outer if name in self.shared else self.own

    def get(self, name: Any, default: Any = None) -> Any:
        return self._of(name).get(name, default)

    def __setitem__(self, name: Any, value: Any) -> None:
        self._of(name)[name] = value

    def setdefault(self, name: Any, default: Any) -> Any:
        return self.own.setdefault(name, default)


@contextmanager
def _scope(fl: Any, node: ast.AST, own: set[str], shared: set[str]) -> Iterator[_Leave]:
    """Lower inside the body's scope: its own names hide the enclosing ones, loops and
    returns start afresh; names declared nonlocal stay the enclosing function's."""
    saved = (fl.env, fl.hints, fl.loop_depth, fl.inlined)
    env = {k: v for k, v in fl.env.items() if k not in own}
    leave = _Leave()
    fl.env, fl.hints, fl.loop_depth, fl.inlined = env, _Hints(fl.hints, node, shared), 0, leave
    try:
        yield leave
    finally:
        outer = saved[0]
        for name in shared:
            if name in env:
                outer[name] = env[name]
        fl.env, fl.hints, fl.loop_depth, fl.inlined = saved


def _scope_names(fn: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """(the body's own names, the names it declares nonlocal), as Python scopes them."""
    bound: set[str] = set()
    shared: set[str] = set()
    stack: list[ast.AST] = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Nonlocal):
            shared.update(n.names)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(n.name)
            stack.extend(n.decorator_list)
        elif isinstance(n, ast.Lambda):
            stack.extend(n.args.defaults)
        else:
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del):
                bound.add(n.id)
            stack.extend(ast.iter_child_nodes(n))
    return bound - shared, shared
