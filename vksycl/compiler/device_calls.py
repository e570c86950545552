"""Calls of device functions, a part of `KernelModule`.

A device function is lowered once per signature (the types of its scalar arguments, the
memory its pointers reach, the shapes of its aggregates, the Python values it is passed)
and called from each site with that signature, so it is specialised the way a C++
template is. Aggregates cross the call as their leaves, pointers into module-scope memory
as their position alone, and a returned aggregate or pointer is rebuilt at the call site.
An accessor crosses as its pointer; the function is specialised for the accessor's path,
since its range and offsets are kernel arguments read where the code uses them.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from . import ir
from .frontend.describe import kind_of
from .frontend.lowering import FunctionLowering, source_of
from .reduction import ReducerV
from .typesys import BOOL, I32, VOID, PtrType, Scalar, TupleType, promote
from .values import AccessorV, AggV, FixedSlot, ItemV, ObjV, PtrV, PyV, RangeV, TupV


class DeviceCalls:
    """The device-function part of a kernel's compilation: instances by signature
    (`functions`), their names (`names`) and the call chain (`stack`, for recursion), and
    the kernel module's `lower_function` lowers each body."""

    functions: dict[tuple, ir.Function]
    names: dict[str, int]
    stack: list[Any]
    item_override: ir.Value | None

    def call_device_function(self, fl: FunctionLowering, pyfn: Any,
                             named: list[tuple[str, Any]], node: ast.AST,
                             fn_path: tuple | None = None) -> Any:
        if pyfn in self.stack:
            chain = " -> ".join(f.__name__ for f in self.stack[self.stack.index(pyfn):])
            raise fl.err(node, f"recursion is not supported in device code (SPIR-V forbids "
                         f"it): {chain} -> {pyfn.__name__}")
        sig: list[Any] = []
        params: list[ir.Param] = []
        call_args: list[Any] = []
        callee: list[tuple[str, Any]] = []
        for name, v in named:
            callee.append((name, self.flatten(fl, name, v, sig, params, call_args, node)))
        override = self.item_override
        item_id: ir.Param | None = None
        if override is not None and any(s[0] == "i" for s in sig):
            # A copy of the body (a grid-stride or coarsened one) numbers its work-item
            # with a local of the kernel: a function handed the item gets that id as a
            # parameter, so every copy calls one instance with its own id.
            item_id = ir.Param("item.id", override.ty)
            params.append(item_id)
            call_args.append(override)
            sig.append(("item_id",))
        key = (pyfn, tuple(sig))
        fn = self.functions.get(key)
        if fn is None:
            src = source_of(pyfn, node)
            base = pyfn.__name__
            n = self.names.get(base, 0)
            self.names[base] = n + 1
            self.stack.append(pyfn)
            self.item_override = None if item_id is None else ir.ArgRead(item_id)
            try:
                fn, cfl = self.lower_function(pyfn, src, f"{base}_{n}" if n else base, callee,
                                              fn_path=fn_path)
            finally:
                self.stack.pop()
                self.item_override = override
            fn.params = params
            self.finish_returns(cfl, fn)
            self.functions[key] = fn
        call = ir.Call(fn, call_args, fn.ret)
        if fn.ret == VOID:
            fl.emit(ir.Eval(call))
            return PyV(None)
        shape = getattr(fn, "ret_shape", None)
        if shape is None:
            return call
        if shape[0] == "p":
            return PtrV(shape[1], call)
        tmp = fl.new_local("ret", fn.ret)
        fl.emit(ir.Assign(tmp, call))
        leaves = [ir.Extract(ir.Read(tmp), i, t) for i, t in enumerate(fn.ret.items)]
        return _rebuild(shape, iter(leaves))

    def flatten(self, fl: FunctionLowering, name: str, v: Any, sig: list, params: list,
                call_args: list, node: ast.AST) -> Any:
        if isinstance(v, PyV) and isinstance(v.obj, bool | int | float | np.generic):
            v = fl.scalar(v, node)
        if isinstance(v, ir.Value):
            p = ir.Param(name, v.ty)
            params.append(p)
            call_args.append(v)
            sig.append(("s", v.ty))
            return ir.ArgRead(p)
        if isinstance(v, PtrV) and isinstance(v.root, ir.GlobalRoot | ir.SharedRoot):
            # module-scope memory (global memory, work-group arrays): the function is
            # specialised for the root and reaches it directly; only the position (an
            # address, or an element offset) is passed
            pos = ir.Param(name, v.offset.ty)
            params.append(pos)
            call_args.append(v.offset)
            sig.append(("b", id(v.root)))
            return PtrV(v.root, ir.ArgRead(pos))
        if isinstance(v, PtrV):
            shape = v.root.shape if isinstance(v.root, ir.ParamRoot) else v.root
            root = ir.ParamRoot(shape)
            pbase = ir.Param(name, PtrType(v.elem, v.root.space), root)
            root.param = pbase
            poff = ir.Param(name + ".offset", I32)
            params += [pbase, poff]
            call_args += [v.root, v.offset]
            sig.append(("p", _shape_key(shape)))
            return PtrV(root, ir.ArgRead(poff))
        if isinstance(v, AccessorV):
            sig.append(("acc", v.dims, v.mode, v.path, v.shape))
            ptr = self.flatten(fl, name, v.ptr, sig, params, call_args, node)
            return AccessorV(ptr, v.dims, v.mode, v.path, v.shape)
        if isinstance(v, RangeV):
            sig.append(("r", v.kind, len(v.items)))
            return RangeV(v.kind, [self.flatten(fl, f"{name}.{i}", x, sig, params, call_args,
                                                node) for i, x in enumerate(v.items)])
        if isinstance(v, ObjV):
            sig.append(("o", v.cls))
            return ObjV(v.cls, self.flatten(fl, name, v.ptr, sig, params, call_args, node))
        if isinstance(v, AggV):
            sig.append(("a", v.sty))
            return AggV(v.sty, [self.flatten(fl, f"{name}.{n}", f, sig, params, call_args, node)
                                for (n, _), f in zip(v.sty.fields, v.fields, strict=True)])
        if isinstance(v, TupV):
            sig.append(("t", len(v.items)))
            return TupV([self.flatten(fl, f"{name}.{i}", f, sig, params, call_args, node)
                         for i, f in enumerate(v.items)])
        if isinstance(v, ItemV):
            sig.append(("i", v.kind, v.dims))
            return FixedSlot(v)
        if isinstance(v, PyV):
            try:
                hash(v.obj)
                sig.append(("c", v.obj))
            except TypeError:
                sig.append(("c", id(v.obj)))
            return FixedSlot(v)
        if isinstance(v, ReducerV):
            raise fl.err(node, f"a reducer ({name}) is used in the kernel body only: combine "
                         "there the values a device function returns")
        raise fl.err(node, f"cannot pass {kind_of(v)} to a device function ({name})")

    def finish_returns(self, fl: FunctionLowering, fn: ir.Function) -> None:
        rets = fl.returns
        values = [v for _, _, v in rets if v is not None]
        if not values:
            fn.ret = VOID
            return
        pointer = next((v for v in values if isinstance(v, PtrV)), None)
        if pointer is not None:
            self.pointer_returns(fl, fn, pointer)
            return
        if len(values) != len(rets):
            raise fl.err(rets[0][0], f"{fn.name} returns a value on some paths only")
        first = values[0]
        if isinstance(first, AggV | TupV):
            shape = _shape(first, fl, rets[0][0])
            types: list[Scalar] | None = None
            flat_all = []
            for rnode, _, v in rets:
                if _shape(v, fl, rnode) != shape:
                    raise fl.err(rnode, "all returns must have the same structure")
                leaves = [fl.scalar(x, rnode) for x in _leaves(v)]
                flat_all.append(leaves)
                lt = [x.ty for x in leaves]
                types = lt if types is None else [promote(a, b) if a != b else a
                                                  for a, b in zip(types, lt, strict=True)]
            assert types is not None
            tt = TupleType(tuple(types))
            for (_, ret, _), leaves in zip(rets, flat_all, strict=True):
                ret.value = ir.Compose(tt, [fl.convert(x, t) for x, t in
                                            zip(leaves, types, strict=True)])
            fn.ret = tt
            fn.ret_shape = shape  # type: ignore[attr-defined]
            return
        runtime = [fl.scalar(v, n) for n, _, v in rets if not isinstance(v, PyV)]
        t = runtime[0].ty if runtime else fl.scalar(values[0], rets[0][0]).ty
        for r in runtime[1:]:
            if r.ty != t:
                t = BOOL if t.is_bool and r.ty.is_bool else promote(t, r.ty)
        for rnode, ret, v in rets:
            ret.value = fl.convert(fl.scalar(v, rnode, t), t, rnode)
        fn.ret = t

    def pointer_returns(self, fl: FunctionLowering, fn: ir.Function, first: PtrV) -> None:
        """A function returning a pointer returns its position; the call site rebuilds the
        pointer on the same root (returning None, or nothing, is the null pointer)."""
        root = _static_root(first, fl, fl.returns[0][0])
        for rnode, ret, v in fl.returns:
            if v is None and isinstance(root, ir.GlobalRoot):
                v = fl.null_pointer(root.elem)
            if not isinstance(v, PtrV) or v.root is not root:
                raise fl.err(rnode, f"{fn.name} returns a pointer to {first.elem!r} in "
                             f"{root.space} memory on one path and {kind_of(v)} on another")
            ret.value = v.offset
        fn.ret = first.offset.ty
        fn.ret_shape = ("p", root)  # type: ignore[attr-defined]



def _shape_key(root: ir.Root) -> tuple:
    if isinstance(root, ir.SharedRoot):
        return ("local", root.elem, root.length)
    if isinstance(root, ir.PrivateRoot):
        return ("private", root.elem, root.length)
    raise TypeError(root)


def _static_root(p: PtrV, fl: FunctionLowering, node: ast.AST) -> ir.Root:
    """The root of a pointer a device function returns: global or work-group memory (a
    private array, or memory a pointer parameter carries, ends with the call)."""
    if not isinstance(p.root, ir.GlobalRoot | ir.SharedRoot):
        raise fl.err(node, f"a device function cannot return a pointer into "
                     f"{p.root.space} memory; it can return pointers to global or "
                     "work-group memory")
    return p.root


def _shape(v: Any, fl: FunctionLowering, node: ast.AST) -> Any:
    if isinstance(v, AggV):
        return ("a", v.sty, tuple(_shape(f, fl, node) for f in v.fields))
    if isinstance(v, TupV):
        return ("t", tuple(_shape(f, fl, node) for f in v.items))
    if isinstance(v, PtrV):
        return ("p", _static_root(v, fl, node))
    return "s"


def _leaves(v: Any) -> list[Any]:
    if isinstance(v, AggV):
        return [x for f in v.fields for x in _leaves(f)]
    if isinstance(v, TupV):
        return [x for f in v.items for x in _leaves(f)]
    if isinstance(v, PtrV):
        return [v.offset]
    return [v]


def _rebuild(shape: Any, leaves: Any) -> Any:
    if shape == "s":
        return next(leaves)
    if shape[0] == "p":
        return PtrV(shape[1], next(leaves))
    if shape[0] == "a":
        return AggV(shape[1], [_rebuild(s, leaves) for s in shape[2]])
    return TupV([_rebuild(s, leaves) for s in shape[1]])
