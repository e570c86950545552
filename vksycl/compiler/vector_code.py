"""`sycl.vec` in device code. A vector value is a struct value (`AggV`) of its type's
`VecType`, so variables, device-function arguments and results, and struct fields hold it
element by element as they hold any struct; operations apply to each element, as SYCL
defines them, with the scalar operators and math functions; memory holds it as one
SPIR-V vector, read and written by single loads and stores (`Memory.load` / `store`).

`v.load(offset, ptr)` and `v.store(offset, ptr)` reach `ptr + offset * N` (the offset is
counted in vectors, as SYCL 2020's are). In global memory that is one vector access,
which may assume the vector's alignment where the compiler proves it (`alignment`): a
pointer argument that vectors are read through is then required to be aligned to the
vector at launch, and an access that is never aligned (a constant offset from such a
start, whatever the strides) is refused. Work-group and private memory of scalars are
accessed element by element (their logical arrays cannot be seen as vectors); memory of
vectors (`work_group_memory(sycl.float4, n)`) is accessed by vectors.
"""

from __future__ import annotations

import ast
from typing import Any

from . import ir
from .alignment import vector_alignment
from .typesys import BOOL, Scalar, VecType, layout
from .values import AccessorV, AggV, MethodV, PtrV, PyV
from .vectors import swizzle_indices, vec, vec_class

# SYCL's `size()` is `len(v)`: numpy arrays, which host vectors are, have a `size` already
METHODS = ("load", "store", "convert", "swizzle", "byte_size")


def is_vec(v: Any) -> bool:
    return isinstance(v, AggV) and isinstance(v.sty, VecType)


def vec_of(elem: Scalar, count: int) -> VecType:
    return vec_class(elem.dtype, count).__vksycl_struct__


def part(place: ir.Place, j: int) -> ir.Place:
    """Elements 4j to 4j + 3 of a vector of 8 or 16 in memory: Vulkan's SPIR-V has vectors
    of up to 4, so memory holds the longer ones as arrays of 4-element vectors."""
    vty = place.ty
    assert isinstance(vty, VecType)
    return ir.Place(place.root, place.index, (*place.members, j), vec_of(vty.elem, 4),
                    min(place.align, 16) if place.align else 0)


def element_members(vty: VecType, k: int) -> tuple[int, ...]:
    """The member indices of element `k` of a vector in memory."""
    return (k,) if vty.count <= 4 else (k // 4, k % 4)


def is_vec_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, vec)


def construct(fl: Any, vty: VecType, args: list[Any], kwargs: dict[str, Any],
              node: ast.AST) -> AggV:
    """`sycl.float4(a, b, c, d)`, `sycl.float4(x)` (every element x), `sycl.float4()`
    (zeros), or vectors and scalars that together give the elements, as SYCL allows."""
    if kwargs:
        raise fl.err(node, f"{vty.name}() takes no keyword arguments")
    items: list[Any] = []
    for a in args:
        if is_vec(a):
            if a.sty.elem != vty.elem:
                raise fl.err(node, f"{vty.name}() takes vectors of {vty.elem!r}, got a "
                             f"{a.sty.name}; convert it with .convert()")
            items.extend(a.fields)
        else:
            items.append(a)
    if not items:
        items = [PyV(0)]
    if len(items) == 1:
        items = items * vty.count
    if len(items) != vty.count:
        raise fl.err(node, f"{vty.name}() takes {vty.count} elements, got {len(items)}")
    return AggV(vty, [_element(fl, v, vty.elem, node) for v in items])


def _element(fl: Any, v: Any, elem: Scalar, node: ast.AST) -> ir.Value:
    if isinstance(v, AggV):
        raise fl.err(node, f"expected a scalar, got a {v.sty.name}")
    return fl.convert(fl.scalar(v, node, elem), elem, node)


def _operands(fl: Any, a: Any, b: Any, node: ast.AST) -> tuple[VecType, list, list]:
    """Both sides element by element: two vectors of one type, or a vector and a scalar
    converted to its element type (every element)."""
    vty = a.sty if is_vec(a) else b.sty
    sides = []
    for v in (a, b):
        if is_vec(v):
            if v.sty != vty:
                raise fl.err(node, f"an operation on a {a.sty.name if is_vec(a) else 'scalar'}"
                             f" and a {b.sty.name if is_vec(b) else 'scalar'}: vectors "
                             "combine with vectors of their type or with scalars")
            sides.append(v.fields)
        else:
            sides.append([_element(fl, v, vty.elem, node)] * vty.count)
    return vty, sides[0], sides[1]


def binop(fl: Any, op: ast.operator, a: Any, b: Any, node: ast.AST) -> AggV:
    """Element by element, each result converted to the element type (as C++ does)."""
    vty, xs, ys = _operands(fl, a, b, node)
    if isinstance(op, ast.Div) and not vty.elem.is_float:
        raise fl.err(node, f"/ on a {vty.name} is true division in Python and integer "
                     "division in SYCL: use // (floor division) or convert the vector")
    return AggV(vty, [fl.convert(fl.m.intr.arith(fl, op, x, y, node), vty.elem, node)
                      for x, y in zip(xs, ys, strict=True)])


def compare(fl: Any, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> AggV:
    """SYCL's vector comparison: -1 where it holds, 0 where not, as signed integers of
    the elements' width."""
    vty, xs, ys = _operands(fl, a, b, node)
    return _mask(vty, [fl.m.intr.compare(fl, op, x, y, node) for x, y in zip(xs, ys,
                                                                          strict=True)])


def _mask(vty: VecType, conds: list[ir.Value]) -> AggV:
    it = Scalar("i", vty.elem.bits)
    out = vec_of(it, vty.count)
    return AggV(out, [ir.Op("OpSelect", it, [c, ir.Const(it, -1), ir.Const(it, 0)])
                      for c in conds])


def unary(fl: Any, op: ast.unaryop, v: AggV, node: ast.AST) -> AggV:
    if isinstance(op, ast.Not):
        raise fl.err(node, f"'not' of a {v.sty.name}: a vector has no truth value; "
                     "compare its elements")
    if isinstance(op, ast.UAdd):
        return v
    if isinstance(op, ast.Invert) and v.sty.elem.is_float:
        raise fl.err(node, f"~ needs an integer vector, got a {v.sty.name}")
    t = v.sty.elem
    if isinstance(op, ast.Invert):
        return AggV(v.sty, [ir.Op("OpNot", t, [x]) for x in v.fields])
    return AggV(v.sty, [ir.Op("OpFNegate" if t.is_float else "OpSNegate", t, [x])
                        for x in v.fields])


def elementwise(fl: Any, name: str, args: list[Any], node: ast.AST, f: Any) -> AggV:
    """A function of scalars applied to each element of its vector arguments (scalar
    arguments go to every element); a truth result becomes SYCL's -1/0 mask."""
    vty = next(a.sty for a in args if is_vec(a))
    columns = []
    for a in args:
        if is_vec(a):
            if a.sty.count != vty.count:
                raise fl.err(node, f"{name}() of vectors of {vty.count} and {a.sty.count} "
                             "elements")
            columns.append(a.fields)
        else:
            columns.append([a] * vty.count)
    out = [fl.scalar(f(list(col)), node) for col in zip(*columns, strict=True)]
    t = out[0].ty
    if t.is_bool:
        return _mask(vty, out)
    return AggV(vec_of(t, vty.count), out)


def attribute(fl: Any, v: AggV, name: str, node: ast.AST) -> Any:
    """A swizzle (`v.x`, `v.zyx`, `v.rgba`, `v.s3`, `v.lo`) or a method."""
    if name in METHODS:
        return MethodV(v, name)
    idx = swizzle_indices(name, v.sty.count)
    if idx is None:
        raise fl.err(node, f"a {v.sty.name} has no swizzle or method '{name}'")
    return _swizzle(v, idx)


def _swizzle(v: AggV, idx: tuple[int, ...]) -> Any:
    if len(idx) == 1:
        return v.fields[idx[0]]
    return AggV(vec_of(v.sty.elem, len(idx)), [v.fields[k] for k in idx])


def index(fl: Any, v: AggV, i: Any, node: ast.Subscript) -> Any:
    """`v[i]`: an element, by a constant or a runtime index."""
    if isinstance(i, PyV) and isinstance(i.obj, int):
        if not -v.sty.count <= i.obj < v.sty.count:
            raise fl.err(node, f"index {i.obj} of a {v.sty.name}")
        return v.fields[i.obj]
    return fl.select_tuple(v.fields, fl.scalar(i, node.slice), node)


def assign(fl: Any, current: AggV, idx: tuple[int, ...], value: Any,
           node: ast.AST) -> AggV:
    """The vector with the elements at `idx` replaced by `value`'s (a vector of as many
    elements, or a scalar for each)."""
    if len(set(idx)) != len(idx):
        raise fl.err(node, "cannot assign to a swizzle that repeats an element")
    if is_vec(value):
        if value.sty.count != len(idx):
            raise fl.err(node, f"cannot assign a {value.sty.name} to {len(idx)} elements")
        items = value.fields
    else:
        items = [value] * len(idx)
    fields = list(current.fields)
    for k, x in zip(idx, items, strict=True):
        fields[k] = _element(fl, x, current.sty.elem, node)
    return AggV(current.sty, fields)


def swizzle_target(fl: Any, name: str, vty: VecType, node: ast.AST) -> tuple[int, ...]:
    idx = swizzle_indices(name, vty.count)
    if idx is None:
        raise fl.err(node, f"a {vty.name} has no swizzle '{name}'")
    return idx


def assign_index(fl: Any, current: AggV, i: Any, value: Any, node: ast.AST) -> AggV:
    """The vector with element `i` (a constant or a runtime index) replaced."""
    if isinstance(i, PyV) and isinstance(i.obj, int):
        return assign(fl, current, (i.obj % current.sty.count,), value, node)
    k = fl.convert(fl.scalar(i, node), Scalar("i", 32), node)
    x = _element(fl, value, current.sty.elem, node)
    return AggV(current.sty, [
        ir.Op("OpSelect", current.sty.elem, [
            ir.Op("OpIEqual", BOOL, [k, ir.Const(k.ty, j)]), x, old])
        for j, old in enumerate(current.fields)])


def memory_lvalue(fl: Any, place: ir.Place, name: str, node: ast.AST) -> Any:
    """The lvalue of a swizzle of a vector in memory (`p[i].x`, `p[i].xy`): its elements'
    places, each stored alone."""
    vty = place.ty
    idx = swizzle_target(fl, name, vty, node)
    places = [ir.Place(place.root, place.index, (*place.members, *element_members(vty, k)),
                       vty.elem) for k in idx]

    def store(v: Any) -> None:
        zeros = AggV(vty, [ir.Const(vty.elem, 0)] * vty.count)
        items = assign(fl, zeros, idx, v, node).fields
        for p, k in zip(places, idx, strict=True):
            fl.store(p, items[k], node, vty.elem)

    def load() -> Any:
        items = [fl.load(p, node, vty.elem) for p in places]
        return items[0] if len(items) == 1 else AggV(vec_of(vty.elem, len(items)), items)

    return lambda v: load() if v is None else store(v)


def method(fl: Any, m: MethodV, args: list[Any], node: ast.Call) -> Any:
    v: AggV = m.base
    vty = v.sty
    if m.name == "byte_size":
        if args:
            raise fl.err(node, "byte_size() takes no arguments")
        return PyV(layout(vty)[0])
    if m.name == "swizzle":
        idx = tuple(fl.m.intr.const(fl, a, node) for a in args)
        if not idx or not all(isinstance(k, int) and 0 <= k < vty.count for k in idx):
            raise fl.err(node, f"swizzle() takes element indices of a {vty.name}")
        return _swizzle(v, idx)
    if m.name == "convert":
        if len(args) != 1:
            raise fl.err(node, "convert() takes the element type to convert to")
        t = fl.m.intr.const(fl, args[0], node)
        to = vec_class(t, vty.count).__vksycl_struct__
        return AggV(to, [fl.convert(x, to.elem, node) for x in v.fields])
    if len(args) != 2:
        raise fl.err(node, f"{m.name}(offset, ptr) takes an offset (in vectors) and a "
                     "pointer")
    place = _places(fl, vty, args[0], args[1], node)
    if m.name == "store":
        if isinstance(place, ir.Place):
            fl.store(place, v, node)
        else:
            for p, x in zip(place, v.fields, strict=True):
                fl.store(p, x, node)
        return PyV(None)
    loaded = fl.load(place, node) if isinstance(place, ir.Place) else \
        AggV(vty, [fl.load(p, node) for p in place])
    target = node.func.value if isinstance(node.func, ast.Attribute) else None
    if target is None:
        raise fl.err(node, "load() reads into a vector variable: v.load(offset, ptr)")
    fl.store_target(target, loaded)
    return PyV(None)


def _places(fl: Any, vty: VecType, offset: Any, ptr: Any, node: ast.AST) -> Any:
    """Where `load`/`store` reach: one vector place, or one place per element where the
    memory is a logical array of scalars."""
    if isinstance(ptr, AccessorV):
        ptr = ptr.ptr
    if not isinstance(ptr, PtrV):
        raise fl.err(node, f"a {vty.name} loads from and stores to a pointer or an "
                     "accessor")
    if ptr.elem == vty:
        return fl.index_place(ptr, offset, node)
    if ptr.elem != vty.elem:
        raise fl.err(node, f"a {vty.name} loads from and stores to memory of "
                     f"{vty.elem!r}, not of {ptr.elem!r}")
    first = fl.binop(ast.Mult(), offset, PyV(vty.count), node)
    if not isinstance(ptr.root, ir.GlobalRoot):
        return [fl.index_place(ptr, fl.binop(ast.Add(), first, PyV(k), node), node)
                for k in range(vty.count)]
    i = fl.scalar(first, node)
    if not (i.ty.is_int or i.ty.is_bool):
        raise fl.err(node, f"an offset must be an integer, got {i.ty!r}")
    address = fl.element_address(ptr, i)
    want = layout(vty)[1]
    align, misaligned = vector_alignment(fl.m, address, want, vty.elem.nbytes)
    if misaligned:
        raise fl.err(node, f"this {vty.name} access is never aligned to {want} bytes: "
                     f"its address is a constant number of bytes past a multiple of {want} "
                     f"(the pointer it starts from is aligned to {want}, as vector "
                     "accesses need); use an offset that is a whole number of vectors")
    return ir.Place(fl.m.global_root(vty), address, (), vty, 0 if align == want else align)

