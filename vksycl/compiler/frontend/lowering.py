"""`FunctionLowering`, the frontend's entry point: a Python function's AST to typed IR,
composed of its parts (statements, expressions, memory, names, scalars), plus calls of
device functions and the source a function is lowered from."""

from __future__ import annotations

import ast
from typing import Any

from .. import ir
from ..source import Source, error, function_source
from ..values import FixedSlot, PyV
from .expressions import Expressions
from .memory import Memory
from .names import Names
from .scalars import Scalars
from .statements import Statements


class FunctionLowering(Statements, Expressions, Memory, Names, Scalars):
    """Lowers one Python function (with fixed argument values/types) to an ir.Function."""

    def lower(self, params: list[tuple[str, Any]]) -> ir.Function:
        """The function, its parameters bound to `params` (values or fixed slots)."""
        node = self.src.node
        for pname, value in params:
            slot = self.new_slot(pname, value, node) if not isinstance(value, FixedSlot) \
                else value
            self.env[pname] = slot
            if not isinstance(slot, FixedSlot):
                self.assign_slot(pname, slot, value, node)
        if isinstance(node, ast.Lambda):
            value = self.expr(node.body)
            if self.m.kernel_fl is self:  # a kernel lambda's value is discarded
                if isinstance(value, ir.Value):
                    self.emit(ir.Eval(value))
                value = None
            self.do_return(node, value)
        else:
            self.block(node.body)
        return self.fn

    def call_function(self, pyfn: Any, args: list[Any], kwargs: dict[str, Any],
                      node: ast.AST, bound: Any = None, fn_path: tuple | None = None) -> Any:
        """A call of a device function; `fn_path` is how the kernel reaches the function
        object (so its closure cells can be read at launch), where it does."""
        code = pyfn.__code__
        if code.co_flags & 0x20:
            raise self.err(node, f"{pyfn.__name__} is a generator; generators are not "
                           "supported in device code")
        names = list(code.co_varnames[: code.co_argcount])
        values = ([bound] if bound is not None else []) + list(args)
        if len(values) > len(names):
            raise self.err(node, f"{pyfn.__name__}() takes {len(names)} arguments, "
                           f"got {len(values)}")
        bound_args = dict(zip(names, values, strict=False))
        for k, v in kwargs.items():
            if k not in names or k in bound_args:
                raise self.err(node, f"{pyfn.__name__}() got an unexpected argument '{k}'")
            bound_args[k] = v
        defaults = pyfn.__defaults__ or ()
        for name, d in zip(names[len(names) - len(defaults):], defaults, strict=True):
            bound_args.setdefault(name, PyV(d))
        missing = [n for n in names if n not in bound_args]
        if missing:
            raise self.err(node, f"{pyfn.__name__}() is missing argument '{missing[0]}'")
        return self.m.call_device_function(self, pyfn, [(n, bound_args[n]) for n in names],
                                           node, fn_path)


def source_of(fn: Any, node: ast.AST | None = None) -> Source:
    """The source a function is lowered from; coroutines are refused here, where the
    kernel or call that reaches them is known."""
    try:
        src = function_source(fn)
    except OSError as ex:
        raise error("<unknown>", node, f"no source for {fn!r}: {ex}") from None
    if isinstance(src.node, ast.AsyncFunctionDef):
        raise error(src.filename, src.node, f"async def {src.name}: coroutines are not "
                    "supported in device code (define the kernel with def)")
    return src

