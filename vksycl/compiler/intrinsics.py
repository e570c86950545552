"""Calls in device code, and `Intrinsics`, which lowers the parts of the kernel language
that map onto SPIR-V instructions rather than onto Python syntax.

A call is sent by what it calls: a cast, a Python builtin, a math function, a device-API
function (work-item queries and group algorithms are `workitem`'s), `atomic_ref`, a struct
constructor, a method, or a device function. `Intrinsics` composes this dispatch with its
parts `Operators`, `MathFunctions` and `Atomics`, which reach each other through `self`,
as the frontend's parts do.
"""

from __future__ import annotations

import ast
import builtins
import types as pytypes
from typing import Any

import numpy as np

from . import accessors, if_device, ir, matrix_code, printing, reduction, vector_code, virtual
from . import device as dev
from . import device_global_code as dgc
from .atomics import Atomics
from .math_functions import MATH_NAMES, MathFunctions, round_even
from .operators import Operators
from .structs import field_default
from .typesys import BOOL, I32, PtrType, Scalar, Struct, mem_type, promote, scalar_of
from .values import AccessorV, AggV, AtomicV, ItemV, MethodV, ObjV, PtrV, PyV, RangeV, TupV


class Intrinsics(Operators, MathFunctions, Atomics):
    """Stateless lowering of operators and calls; `fl` is the FunctionLowering."""

    def __init__(self, module: Any) -> None:
        self.m = module

    # == calls ========================================================================
    def call(self, fl: Any, fn: Any, args: list[Any], kwargs: dict[str, Any],
             node: ast.AST) -> Any:
        if isinstance(fn, MethodV):
            return self.method(fl, fn, args, kwargs, node)
        if not isinstance(fn, PyV):
            raise fl.err(node, f"{_what(fn)} is not callable")
        obj = fn.obj
        target = scalar_of(obj) if isinstance(obj, type | np.dtype) else None
        if target is not None:
            return self.cast(fl, obj, target, args, node)
        name = MATH_NAMES.get(id(obj)) or getattr(obj, "__vksycl_math__", None)
        if name is not None:
            if any(vector_code.is_vec(a) for a in args):
                return vector_code.elementwise(fl, name, args, node,
                                               lambda xs: self.math(fl, name, xs, node))
            return self.math(fl, name, args, node)
        if vector_code.is_vec_class(obj):
            st = getattr(obj, "__vksycl_struct__", None)
            if st is None:  # sycl.vec(T, N): the type
                return PyV(obj(*(self.const(fl, a, node) for a in args)))
            return vector_code.construct(fl, st, args, kwargs, node)
        dev_name = getattr(obj, "__vksycl_device__", None)
        if dev_name is not None:
            return self.device_call(fl, dev_name, args, kwargs, node)
        if getattr(obj, if_device.MARKER, None) is not None:
            return if_device.call(fl, obj, args, kwargs, node)
        if obj is dev.atomic_ref:
            return self.atomic_ref(fl, args, kwargs, node)
        if obj is dev.work_group_memory:
            shape = kwargs.get("shape", args[1] if len(args) > 1 else PyV(()))
            return self.m.shared_array(fl, self.const(fl, args[0], node),
                                       self.const(fl, shape, node), node)
        if obj in (np.zeros, np.empty):
            return self.private_array(fl, args, kwargs, node, zeroed=obj is np.zeros)
        if isinstance(obj, type) and hasattr(obj, "__vksycl_struct__"):
            return self.construct(fl, obj.__vksycl_struct__, args, kwargs, node)
        if isinstance(obj, type) and issubclass(obj, dev.BinaryOp):
            return PyV(obj())
        if isinstance(obj, pytypes.BuiltinFunctionType) and getattr(builtins, obj.__name__,
                                                                    None) is obj:
            return self.builtin(fl, obj.__name__, args, kwargs, node)
        if isinstance(obj, pytypes.FunctionType):
            return fl.call_function(obj, args, kwargs, node, fn_path=fn.path)
        op = getattr(getattr(obj, "__func__", None), virtual.OP, None)
        if op is not None and isinstance(obj.__self__, type):
            return virtual.class_op(fl, op, obj.__self__, args, kwargs, node)
        if isinstance(obj, pytypes.MethodType) and isinstance(obj.__func__,
                                                              pytypes.FunctionType):
            owner = fn.path[:-1] if fn.path else None
            return fl.call_function(obj.__func__, args, kwargs, node,
                                    PyV(obj.__self__, owner),
                                    (*fn.path, "__func__") if fn.path else None)
        raise fl.err(node, f"calling {_what(fn)} is not supported in device code")

    def print_call(self, fl: Any, fn: Any, node: ast.Call) -> Any:
        """`print(...)` or `syclexp.printf(...)`, from the call's syntax: f-strings and
        strings are no device values."""
        if fn is builtins.print:
            return printing.print_call(fl, node)
        return printing.lower_printf(fl, node)

    def assertion(self, fl: Any, node: ast.Assert) -> None:
        printing.assertion(fl, node)

    def const(self, fl: Any, v: Any, node: ast.AST) -> Any:
        if isinstance(v, PyV):
            return v.obj
        if isinstance(v, TupV):
            return tuple(self.const(fl, x, node) for x in v.items)
        found = self.m.specialize(v)
        if found is None:
            raise fl.err(node, "this argument must be a compile-time constant: a literal, a "
                         "module-level value or an expression of them, or a number the "
                         "kernel captures used as it is (captured numbers are kernel "
                         "arguments, so an expression of them is computed on the device: "
                         "compute it outside the kernel and capture the result)")
        return found

    def cast(self, fl: Any, obj: Any, target: Scalar, args: list[Any], node: ast.AST) -> Any:
        if obj not in (int, float, bool):
            self.m.use_type(target)  # even a folded constant of the type uses its aspect
        if len(args) != 1:
            if not args:
                return ir.Const(target, False if target.is_bool else 0)
            raise fl.err(node, f"{_what(PyV(obj))}() takes one argument")
        v = args[0]
        if isinstance(v, PyV) and obj in (int, float, bool) and \
                isinstance(v.obj, int | float | bool):
            return PyV(obj(v.obj))
        if target.is_bool:
            return fl.truth(v, node)
        if isinstance(v, PyV) and isinstance(v.obj, float) and target.is_float:
            return ir.Const(target, v.obj)
        return fl.convert(fl.scalar(v, node), target, node)

    def builtin(self, fl: Any, name: str, args: list[Any], kwargs: dict[str, Any],
                node: ast.AST) -> Any:
        if name in ("abs", "min", "max") and any(vector_code.is_vec(a) for a in args):
            return vector_code.elementwise(fl, name, args, node, lambda xs: self.builtin(
                fl, name, xs, kwargs, node))
        if name == "len" and args and vector_code.is_vec(args[0]):
            return PyV(args[0].sty.count)
        if name in ("abs",):
            return self.math(fl, "abs", args, node)
        if name in ("min", "max"):
            if len(args) == 1 and isinstance(args[0], TupV):
                args = args[0].items
            if len(args) < 2:
                raise fl.err(node, f"{name}() needs two or more values in device code")
            out = args[0]
            for b in args[1:]:
                out = self.minmax(fl, name, out, b, node)
            return out
        if name == "round":
            if len(args) != 1:
                raise fl.err(node, "round() with ndigits is not supported in device code")
            x = fl.scalar(args[0], node)
            if not x.ty.is_float:
                return x
            return fl.convert(round_even(x, x.ty), I32, node)
        if name == "len":
            v = args[0]
            if isinstance(v, TupV):
                return PyV(len(v.items))
            if isinstance(v, PtrV) and hasattr(v.root, "length"):
                return PyV(v.root.length)
            if isinstance(v, AccessorV):
                return accessors.length(fl, v, node)
            if isinstance(v, PyV):
                return PyV(len(v.obj))
        if name == "divmod":
            return TupV([fl.binop(ast.FloorDiv(), args[0], args[1], node),
                         fl.binop(ast.Mod(), args[0], args[1], node)])
        if name == "pow":
            return fl.binop(ast.Pow(), args[0], args[1], node)
        if name == "range":
            raise fl.err(node, "range() can only be used in a for loop in device code")
        if name == "isinstance":
            raise fl.err(node, "isinstance() is not supported in device code")
        raise fl.err(node, f"the builtin {name}() is not supported in device code")

    def minmax(self, fl: Any, name: str, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(a, PyV) and isinstance(b, PyV):
            return PyV(min(a.obj, b.obj) if name == "min" else max(a.obj, b.obj))
        x, y = fl.weak_pair(a, b, node)
        t = BOOL if x.ty.is_bool and y.ty.is_bool else promote(x.ty, y.ty)
        if t.is_bool:
            t = I32
        # Python: min(a, b) is b if b < a else a; max(a, b) is b if a < b else a, with `<`
        # comparing the values before they take the common type (as it does for a signed
        # and an unsigned value: min(-1, uint32(5)) is -1, as the common type 0xffffffff)
        cond = self.compare(fl, ast.Lt(), *((y, x) if name == "min" else (x, y)), node)
        return ir.Op("OpSelect", t, [cond, fl.convert(y, t), fl.convert(x, t)])

    # == memory =======================================================================
    def private_array(self, fl: Any, args: list[Any], kwargs: dict[str, Any],
                      node: ast.AST, zeroed: bool = False) -> PtrV:
        shape = self.const(fl, args[0] if args else kwargs.get("shape"), node)
        dtype = self.const(fl, args[1] if len(args) > 1 else kwargs.get("dtype",
                                                                          PyV(np.float64)), node)
        ptr = self.m.private_array(fl, dtype, shape, node)
        if zeroed and (fl.loop_depth or fl.inlined is not None):
            # np.zeros makes new zeros each time it runs; the array's initializer zeroes
            # it once, when the function starts
            i = fl.new_local("zeros.i", I32)
            saved, fl.out = fl.out, []
            fl.store(fl.index_place(ptr, ir.Read(i), node), _zero(ptr.root.elem), node)
            body, fl.out = fl.out, saved
            fl.emit(ir.Assign(i, ir.Const(I32, 0)))
            fl.emit(ir.Loop([], ir.Op("OpSLessThan", BOOL, [
                ir.Read(i), ir.Const(I32, ptr.root.length)]), body,
                [ir.Assign(i, ir.Op("OpIAdd", I32, [ir.Read(i), ir.Const(I32, 1)]))]))
        return ptr

    def construct(self, fl: Any, sty: Struct, args: list[Any], kwargs: dict[str, Any],
                  node: ast.AST) -> AggV:
        names = [n for n, _ in sty.fields if n != virtual.TAG_FIELD]
        values = dict(zip(names, args, strict=False))
        values.update(kwargs)
        fields = []
        for n, t in sty.fields:
            if n not in values:
                default = field_default(sty.pyclass, n)
                if default is None:
                    raise fl.err(node, f"{sty.name}: field '{n}' is not set")
                values[n] = PyV(default)
            v = values[n]
            if isinstance(t, Scalar):
                v = fl.convert(fl.scalar(v, node, t), t, node)
            elif isinstance(t, PtrType):
                v = PtrV(self.m.global_root(t.elem),
                         fl.address(v, t.elem, node, f"{sty.name}.{n}"))
            fields.append(v)
        return AggV(sty, fields)

    def device_call(self, fl: Any, name: str, args: list[Any], kwargs: dict[str, Any],
                    node: ast.AST) -> Any:
        if name in ("get_nd_item", "get_work_group", "get_sub_group"):
            return self.m.free_query(fl, name, args, node)
        if name == "get_work_group_scratch_memory":
            dtype = self.const(fl, args[0], node) if args else np.uint8
            return self.m.scratch_memory(fl, dtype, node)
        if matrix_code.is_matrix_function(name):
            return matrix_code.call(fl, name, args, kwargs, node)
        if name == "private_array":
            return self.m.private_array(fl, self.const(fl, args[0], node),
                                        self.const(fl, args[1], node), node)
        return self.m.groups.call(fl, name, args, kwargs, node)

    # == methods ======================================================================
    def method(self, fl: Any, m: MethodV, args: list[Any], kwargs: dict[str, Any],
               node: ast.AST) -> Any:
        base = m.base
        if isinstance(base, ItemV):
            return self.m.queries.call(fl, base, m.name, args, node)
        if isinstance(base, AtomicV):
            return self.atomic(fl, base, m.name, args, kwargs, node)
        if isinstance(base, AccessorV):
            return accessors.method(fl, base, m.name, args, node)
        if isinstance(base, RangeV):
            return accessors.range_method(fl, base, m.name, args, node)
        if isinstance(base, reduction.ReducerV):
            return reduction.method(fl, base, m.name, args, node)
        if vector_code.is_vec(base):
            return vector_code.method(fl, m, args, node)
        if isinstance(base, AggV):
            fn = getattr(base.sty.pyclass, m.name)
            return fl.call_function(fn, args, kwargs, node, base)
        if isinstance(base, ObjV):
            return virtual.method(fl, base, m.name, args, kwargs, node)
        if isinstance(base, dgc.GlobalV):
            return dgc.method(fl, base, m.name, args, kwargs, node)
        if isinstance(base, PtrV):
            place = ir.Place(base.root, base.offset, (), mem_type(base.elem))
            if m.name == "get":
                return fl.load(place, node)
            fl.store(place, args[0], node)
            return PyV(None)
        raise fl.err(node, f"{_what(base)} has no method {m.name}")


def _zero(t: Any) -> Any:
    """A value of type `t` that is all zeros."""
    if isinstance(t, Struct):
        return AggV(t, [_zero(ft) for _, ft in t.fields])
    if isinstance(t, PtrType):
        return PyV(None)
    return ir.Const(t, False if t.is_bool else 0)


def _what(v: Any) -> str:
    if isinstance(v, PyV):
        o = v.obj
        return getattr(o, "__qualname__", None) or getattr(o, "__name__", None) or repr(o)
    return type(v).__name__
