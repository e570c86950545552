"""Atomics in device code: `atomic_ref` on global or work-group memory and its operations,
as SPIR-V atomic instructions with the memory semantics of the reference's order."""

from __future__ import annotations

import ast
from typing import Any

from . import ir
from .typesys import BOOL, F32, I32, U32, Scalar
from .values import AtomicV, PtrV, PyV, TupV

_STORAGE_SEM = {"global": 0x40, "local": 0x100}


class Atomics:
    """`atomic_ref` and its methods, a part of `Intrinsics` (whose `const` reads an order
    or scope); the kernel module `m` records the atomic features used."""

    m: Any

    def atomic_ref(self, fl: Any, args: list[Any], kwargs: dict[str, Any],
                   node: ast.AST) -> AtomicV:
        if not args or not isinstance(args[0], PtrV):
            raise fl.err(node, "atomic_ref needs a pointer (e.g. atomic_ref(ptr + i))")
        p = args[0]
        order = self.const(fl, kwargs.get("order", args[1] if len(args) > 1 else PyV(0)), node)
        space = p.root.space
        if space == "private":
            raise fl.err(node, "atomic_ref on private memory is not supported")
        default_scope = 1 if space == "global" else 2
        scope = self.const(fl, kwargs.get("scope", args[2] if len(args) > 2 else
                                          PyV(default_scope)), node)
        t = p.elem
        if t not in (I32, U32, F32) and not (isinstance(t, Scalar) and t.bits == 64
                                             and not t.is_bool):
            raise fl.err(node, f"atomic_ref on {t!r} is not supported (32/64-bit int "
                         "and float only)")
        place = ir.Place(p.root, p.offset, (), t)
        self.m.note_access(fl, place, node, "atomic")
        return AtomicV(place, int(order), int(scope))

    def atomic(self, fl: Any, a: AtomicV, name: str, args: list[Any], kwargs: dict[str, Any],
               node: ast.AST) -> Any:
        t = a.place.ty
        space = a.place.root.space
        sem = (a.order | _STORAGE_SEM[space]) if a.order else 0
        self.m.use_atomic(t, name, node)

        def val(v: Any) -> ir.Value:
            return fl.convert(fl.scalar(v, node, t), t, node)

        if name == "load":
            return ir.Atomic("OpAtomicLoad", a.place, [], t, a.scope, sem)
        if name == "store":
            fl.emit(ir.Eval(ir.Atomic("OpAtomicStore", a.place, [val(args[0])], t, a.scope,
                                      sem)))
            return PyV(None)
        if name == "exchange":
            return ir.Atomic("OpAtomicExchange", a.place, [val(args[0])], t, a.scope, sem)
        if name in ("compare_exchange_strong", "compare_exchange_weak"):
            if t.is_float:
                raise fl.err(node, "compare_exchange on floats is not supported")
            expected, desired = val(args[0]), val(args[1])
            old = ir.Atomic("OpAtomicCompareExchange", a.place, [desired, expected], t,
                            a.scope, sem)
            return TupV([ir.Op("OpIEqual", BOOL, [old, expected]), old])
        ops = {"fetch_add": ("OpAtomicIAdd", "OpAtomicFAddEXT"),
               "fetch_sub": ("OpAtomicISub", "OpAtomicFAddEXT"),
               "fetch_and": ("OpAtomicAnd", None), "fetch_or": ("OpAtomicOr", None),
               "fetch_xor": ("OpAtomicXor", None),
               "fetch_min": ("OpAtomicSMin" if t.is_signed else "OpAtomicUMin",
                             "OpAtomicFMinEXT"),
               "fetch_max": ("OpAtomicSMax" if t.is_signed else "OpAtomicUMax",
                             "OpAtomicFMaxEXT")}
        if name not in ops:
            raise fl.err(node, f"atomic_ref has no method {name}")
        op = ops[name][t.is_float]
        if op is None:
            raise fl.err(node, f"atomic_ref.{name} needs an integer type, got {t!r}")
        v = val(args[0])
        if t.is_float and name == "fetch_sub":
            v = ir.Op("OpFNegate", t, [v])
        return ir.Atomic(op, a.place, [v], t, a.scope, sem)
