"""The state of one function's lowering, which every part of the frontend reads and
extends through `self`, and the primitives they all use: diagnostics and emission."""

from __future__ import annotations

import ast
from typing import Any

from ...exceptions import errc
from .. import ir
from ..source import Source, error
from ..typesys import Type


class LoweringState:
    """What lowering one Python function (with fixed argument values/types) to an
    ir.Function keeps. Each part of `FunctionLowering` derives from it and reaches the
    other parts' methods through `self`."""

    def __init__(self, module: Any, pyfn: Any, src: Source, name: str,
                 hints: dict[str, Type] | None = None, fn_path: tuple | None = None) -> None:
        self.m = module
        self.pyfn = pyfn
        self.fn_path = fn_path  # how the kernel reaches this device function, if it does
        self.src = src
        self.fn = ir.Function(name, [], None)  # type: ignore[arg-type]
        self.env: dict[str, Any] = {}
        self.hints: dict[str, Type] = hints if hints is not None else {}
        self.out: list[ir.Stmt] = self.fn.body
        self.returns: list[tuple[ast.AST, ir.Return, Any]] = []
        self.loop_depth = 0
        self.inlined: Any = None  # the if_device body being inlined: where `return` goes
        self.assigned_once = _assigned_once(src.node)
        code = pyfn.__code__
        cells = pyfn.__closure__ or ()
        self.cells = dict(zip(code.co_freevars, cells, strict=False))
        self.globals = pyfn.__globals__

    # -- diagnostics ------------------------------------------------------------------
    def err(self, node: ast.AST | None, message: str, code: errc = errc.build) -> Exception:
        return error(self.src.filename, node, message, code)

    # -- emission helpers -------------------------------------------------------------
    def emit(self, stmt: ir.Stmt) -> None:
        self.out.append(stmt)

    def new_local(self, name: str, ty: Type) -> ir.Local:
        local = ir.Local(name, ty)
        self.fn.locals.append(local)
        return local


def _assigned_once(fn: ast.AST) -> dict[str, int]:
    """How often each name is a store target in the function (loop targets count twice)."""
    counts: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
        elif isinstance(node, ast.For):
            for t in ast.walk(node.target):
                if isinstance(t, ast.Name):
                    counts[t.id] = counts.get(t.id, 0) + 2
    return counts
