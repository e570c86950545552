"""`for i in sycl.unroll(range(...), factor)`: unrolling a range loop on request.

Without a factor, a loop of a compile-time trip count of at most `FULL_UNROLL` whose body
neither breaks nor continues is unrolled here, in the frontend: one copy of the body per
iteration, the counter a constant in each (so it indexes private arrays and folds as a
literal does); any other loop asks the driver to unroll it (SPIR-V `Unroll` loop
control). A factor of 1 asks it not to (`DontUnroll`). A larger factor on a loop of a
constant step and no break or continue is applied here too: a loop of `factor` copies
of the body, then one for the iterations left over. SPIR-V's `PartialCount` loop control
would say the same to the driver, but needs SPIR-V 1.4, and modules are emitted at 1.3
(`codegen.SPIRV_VERSION`); elsewhere the factor falls back to the `Unroll` request.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import device as dev
from . import ir
from .typesys import BOOL, Scalar
from .values import FixedSlot, PyV

FULL_UNROLL = 64  # the most iterations a loop is unrolled into copies of its body


@dataclass(frozen=True)
class Request:
    """How a loop asks to be unrolled: fully (factor None) or by a factor."""

    factor: int | None = None


def request(fl: Any, call: ast.Call) -> tuple[ast.Call, Request]:
    """The `range(...)` call that `sycl.unroll(range(...), factor)` wraps, and the
    request."""
    args = list(call.args)
    kw = {k.arg: k.value for k in call.keywords}
    if set(kw) - {"factor"} or not 1 <= len(args) + len(kw) <= 2:
        raise fl.err(call, "unroll() takes a range(...) and an optional factor")
    inner = args[0] if args else None
    if not (isinstance(inner, ast.Call) and isinstance(fn := fl.expr(inner.func), PyV)
            and fn.obj is builtins.range):
        raise fl.err(call, "unroll() takes a range(...) call: for i in unroll(range(n))")
    factor_node = args[1] if len(args) > 1 else kw.get("factor")
    if factor_node is None:
        return inner, Request()
    factor = fl.m.intr.const(fl, fl.expr(factor_node), call)
    if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1:
        raise fl.err(call, f"unroll()'s factor is a positive integer, got {factor!r}")
    return inner, Request(factor)


def is_unroll(fn: Any) -> bool:
    return isinstance(fn, PyV) and fn.obj is dev.unroll


def exits(body: list[ast.stmt]) -> bool:
    """Whether a loop body breaks or continues (outside loops nested in it)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break | ast.Continue):
            return True
        if isinstance(node, ast.For | ast.While | ast.FunctionDef | ast.Lambda):
            stack.extend(getattr(node, "orelse", []))
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def full(fl: Any, s: ast.For, values: range, ty: Scalar) -> None:
    """The body once per value, the counter a constant in each copy; after the loop, a
    Python loop variable keeps its last value."""
    name = s.target.id if isinstance(s.target, ast.Name) else None
    assigned = name is not None and any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        for b in s.body for n in ast.walk(b))
    constant = name is not None and not assigned and \
        isinstance(fl.env.get(name), FixedSlot | None)
    fl.loop_depth += 1  # each copy is an iteration: its names are variables
    for value in values:
        if constant:
            fl.env[name] = FixedSlot(ir.Const(ty, value))
        else:
            fl.store_target(s.target, ir.Const(ty, value))
        fl.out.extend(fl.sub(s.body))
    fl.loop_depth -= 1
    if constant and values:
        del fl.env[name]
        fl.bind(name, ir.Const(ty, values[-1]), s)


def partial(fl: Any, s: ast.For, factor: int, counter: ir.Local, limit: ir.Local,
            step: int, ty: Scalar, lowered: Callable[[ir.Value], list[ir.Stmt]]) -> None:
    """A loop of `factor` copies of the body while that many iterations remain, then
    one of single copies for the rest."""
    cmp = ("OpSLessThan" if ty.is_signed else "OpULessThan") if step > 0 else \
        ("OpSGreaterThan" if ty.is_signed else "OpUGreaterThan")
    # more than factor - 1 steps remain: the distance to the limit, which may wrap only
    # where it is too large to be held, and then reads as no room (the rest loop runs)
    ahead = [ir.Read(limit), ir.Read(counter)] if step > 0 else \
        [ir.Read(counter), ir.Read(limit)]
    room = fl.m.intr.compare(fl, ast.Gt(), ir.Op("OpISub", ty, ahead),
                             ir.Const(ty, (factor - 1) * abs(step)), s)
    main: list[ir.Stmt] = []
    for j in range(factor):
        at = ir.Read(counter) if j == 0 else ir.Op(
            "OpIAdd", ty, [ir.Read(counter), ir.Const(ty, j * step)])
        main.extend(lowered(at))
    fl.emit(ir.Loop([], ir.Op("OpLogicalAnd", BOOL, [
        ir.Op(cmp, BOOL, [ir.Read(counter), ir.Read(limit)]), room]), main,
        [ir.Assign(counter, ir.Op("OpIAdd", ty, [ir.Read(counter),
                                                 ir.Const(ty, factor * step)]))]))
    fl.emit(ir.Loop([], ir.Op(cmp, BOOL, [ir.Read(counter), ir.Read(limit)]),
                    lowered(ir.Read(counter)),
                    [ir.Assign(counter, ir.Op("OpIAdd", ty, [ir.Read(counter),
                                                             ir.Const(ty, step)]))]))
