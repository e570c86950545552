"""Loads of device_globals a kernel never writes, for codegen to issue once per function.

A device_global's address is a kernel argument. Where that argument is only ever the
address of loads (never stored through, updated atomically, offset, compared, kept in a
variable or passed to a function), no work-item of the kernel can write the variable, and
another kernel or the host writing it while the kernel runs is a data race. So each
distinct load (address argument, struct members, type) is issued once in the entry block
of each function that has it, and the loop that reads the variable costs what a loop
reading a kernel argument does, whether or not the driver would have hoisted it.

The other way to a variable's address is a pointer loaded from memory (an earlier kernel
may have stored the address there); a kernel that loads 64-bit values may write the
variable through one, so its loads stay where they are.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .typesys import U64


def load_key(load: ir.Load) -> tuple | None:
    """What makes two loads of a device_global's address the same load."""
    index = load.place.index
    if not isinstance(index, ir.PushField):
        return None
    return (index.index, load.place.members, load.place.ty)


def invariant_loads(functions: list[ir.Function], globals_: set[int],
                    children: Any) -> dict[int, dict[tuple, ir.Load]]:
    """Per function (by id), the loads of read-only device_globals it has, one per key.
    `globals_` are the push-field indices of device_global addresses; `children` walks
    an IR node's operands."""
    if not globals_:
        return {}
    found: dict[int, dict[tuple, ir.Load]] = {}
    escaped: set[int] = set()
    for fn in functions:
        mine: dict[tuple, ir.Load] = {}
        stack: list[Any] = [fn.body]
        for node in ir.each_once(stack):
            if isinstance(node, ir.Load):
                if node.ty == U64:  # perhaps a pointer, perhaps to a variable
                    return {}
                key = load_key(node)
                if key is not None and key[0] in globals_:
                    mine.setdefault(key, node)
                    continue
            elif isinstance(node, ir.PushField) and node.index in globals_:
                escaped.add(node.index)
            elif isinstance(node, ir.Function | ir.Local | ir.Param):
                continue
            stack.extend(children(node))
        found[id(fn)] = mine
    return {f: {k: v for k, v in loads.items() if k[0] not in escaped}
            for f, loads in found.items()}


__all__ = ["invariant_loads", "load_key"]
