"""Virtual dispatch (sycl_ext_oneapi_virtual_functions): polymorphic struct classes, their
type tags, sets of indirectly callable methods, and virtual calls lowered without
function pointers.

A polymorphic class (one with an `indirectly_callable` method in its hierarchy) stores a
hidden uint32 type tag first, its "vtable pointer". The tag is a hash of the class's
module and qualified name, so it is the same in every process: kernels in the disk cache
and objects constructed on the host agree with the kernels that read them. A virtual call
through `Base.at(ptr)` loads the tag once and switches on it (OpSwitch) over the tags of
the classes whose overrider is in a set the kernel declares, each case calling its
overrider statically: no function pointers, and a switch drivers optimise like any other.
A tag no declared overrider has (memory no `construct_at` wrote, or a class whose
overrider is outside the declared sets, which the spec leaves undefined) calls nothing and
gives zero.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import types as pytypes
import zlib
from typing import Any

import numpy as np

from ..exceptions import errc, exception, invalid
from . import ir
from .source import error, function_source
from .type_registry import element_type, type_of_annotation
from .typesys import BOOL, I32, U32, U64, PtrType, Scalar, Struct, layout, mem_type, promote
from .values import MethodV, ObjV, PtrV, PyV

MARK = "__vksycl_indirectly_callable__"  # on a method: the set it belongs to
OP = "__vksycl_class_op__"  # on `at` / `construct_at`: which one
STORAGE = "__vksycl_storage__"  # on a storage_for class: the classes it holds
TAG_FIELD = "_vtag"
_UNMARKED = object()

_CLASSES: list[type] = []  # polymorphic classes, in definition order
_VERSION = [0]  # bumped when a polymorphic class is defined: kernels with sets recompile


# -- classes ---------------------------------------------------------------------------------

def struct_base(cls: type) -> type | None:
    """The `@sycl.struct` base of a struct class, or None. Device structs have single
    inheritance, as the objects the spec calls: more than one base is an error."""
    bases = [b for b in cls.__bases__ if b is not object]
    if len(bases) > 1:
        names = ", ".join(b.__name__ for b in bases)
        raise invalid(f"struct {cls.__name__}: multiple inheritance ({names}) is not "
                      "supported; a device struct has at most one base")
    if not bases or not hasattr(bases[0], "__vksycl_struct__"):
        return None
    if STORAGE in bases[0].__dict__:
        raise invalid(f"struct {cls.__name__}: cannot derive from {bases[0].__name__}")
    return bases[0]


def declares_virtual(cls: type) -> bool:
    return any(getattr(f, MARK, _UNMARKED) is not _UNMARKED for f in cls.__dict__.values())


def is_polymorphic(cls: Any) -> bool:
    st = getattr(cls, "__vksycl_struct__", None)
    return st is not None and bool(st.fields) and st.fields[0][0] == TAG_FIELD


def tag_of(cls: type) -> int:
    """The class's type tag: stable across processes, never 0 (zeroed memory)."""
    return zlib.crc32(f"{cls.__module__}.{cls.__qualname__}".encode()) & 0x7FFFFFFF or 1


def _root(cls: type) -> type:
    while True:
        base = next((b for b in cls.__bases__ if is_polymorphic(b)), None)
        if base is None:
            return cls
        cls = base


def register(cls: type) -> None:
    """Records a polymorphic class (a class redefined under the same name in the same
    hierarchy replaces the old one) and gives it its tag."""
    name = (cls.__module__, cls.__qualname__)
    root = _root(cls)
    _CLASSES[:] = [c for c in _CLASSES
                   if not ((c.__module__, c.__qualname__) == name and _root(c) is root)]
    tag = tag_of(cls)
    for c in _CLASSES:
        if tag_of(c) == tag and _root(c) is root:
            raise invalid(f"struct {cls.__name__}: its type tag equals that of "
                          f"{c.__qualname__}; rename one of them")
    cls._vtag = np.uint32(tag)  # type: ignore[attr-defined]
    _CLASSES.append(cls)
    _VERSION[0] += 1


def version() -> int:
    return _VERSION[0]


# the version, read as `classes_version[0]` where a call to `version()` costs (the checks
# of every repeated launch)
classes_version = _VERSION


def set_name(s: Any) -> str:
    return "the default set" if s is None else getattr(s, "__qualname__", repr(s))


def set_functions(s: Any) -> list[tuple[type, str, Any]]:
    """The methods in a set: (class, name, function) for each marked definition."""
    return [(c, n, f) for c in _CLASSES for n, f in c.__dict__.items()
            if getattr(f, MARK, _UNMARKED) is not _UNMARKED and getattr(f, MARK) == s]


_NONEMPTY: dict[int, frozenset] = {}  # by version: the sets that hold a method


def nonempty_sets() -> frozenset:
    """The sets holding at least one method (computed once per set of classes, since
    launches ask)."""
    hit = _NONEMPTY.get(_VERSION[0])
    if hit is None:
        _NONEMPTY.clear()
        hit = _NONEMPTY[_VERSION[0]] = frozenset(
            getattr(f, MARK) for c in _CLASSES for f in c.__dict__.values()
            if getattr(f, MARK, _UNMARKED) is not _UNMARKED)
    return hit


def digest(sets: tuple) -> str:
    """What the virtual calls of a kernel declaring `sets` compile to depends on: the name,
    tag, fields and source of every polymorphic class with a method of those sets in its
    hierarchy (so the disk cache sees new classes and edited methods)."""
    h = hashlib.sha256(repr(sets).encode())
    for c in _CLASSES:
        if not any(getattr(f, MARK, _UNMARKED) in sets for k in c.__mro__
                   for f in k.__dict__.values()):
            continue
        h.update(repr((c.__module__, c.__qualname__, tag_of(c),
                       c.__vksycl_struct__.fields)).encode())
        try:
            h.update(inspect.getsource(c).encode())
        except (OSError, TypeError):
            h.update(b"nosrc")
    return h.hexdigest()


def _abstract(f: Any) -> bool:
    return bool(getattr(f, "__isabstractmethod__", False))


def _owner(cls: type, name: str, f: Any) -> type:
    return next(k for k in cls.__mro__ if k.__dict__.get(name) is f)


# -- storage -----------------------------------------------------------------------------------

def _holds(elem: Any, cls: type) -> bool:
    """Whether memory of element type `elem` (a struct, or storage for several) is for
    objects of `cls`'s hierarchy."""
    pyclass = getattr(elem, "pyclass", None) if isinstance(elem, Struct) else None
    if pyclass is None:
        return False
    held = pyclass.__dict__.get(STORAGE, (pyclass,))
    return any(c is cls or (is_polymorphic(c) and is_polymorphic(cls) and
                            _root(c) is _root(cls)) for c in held)


def _fits(elem: Struct, cls: type) -> bool:
    (size, align), (need, need_align) = layout(elem), layout(cls.__vksycl_struct__)
    return size >= need and align >= need_align


# -- device code -----------------------------------------------------------------------------

def class_op(fl: Any, op: str, cls: type, args: list[Any], kwargs: dict[str, Any],
             node: ast.AST) -> Any:
    """`Cls.at(ptr)` and `Cls.construct_at(ptr, **fields)` in device code."""
    if not args or not isinstance(args[0], PtrV) or not isinstance(args[0].root,
                                                                   ir.GlobalRoot):
        raise fl.err(node, f"{cls.__name__}.{op} needs a USM pointer to the object's "
                     "storage")
    ptr = args[0]
    if not _holds(ptr.elem, cls):
        raise fl.err(node, f"{cls.__name__}.{op}: a pointer to {ptr.elem!r} cannot point "
                     f"to a {cls.__name__} (use storage for it: syclexp.storage_for"
                     f"({cls.__name__}, ...))")
    sty = cls.__vksycl_struct__
    obj = ObjV(cls, PtrV(fl.m.global_root(sty), ptr.offset))
    if op == "at":
        if len(args) > 1 or kwargs:
            raise fl.err(node, f"{cls.__name__}.at takes one pointer")
        return obj
    if not _fits(ptr.elem, cls):
        raise fl.err(node, f"{cls.__name__}.construct_at: a {ptr.elem!r} is too small or "
                     f"not aligned for a {cls.__name__}")
    if TAG_FIELD in kwargs:
        raise fl.err(node, f"{cls.__name__}.construct_at sets the type tag itself")
    value = fl.m.intr.construct(fl, sty, args[1:], kwargs, node)
    fl.store(ir.Place(obj.ptr.root, obj.ptr.offset, (), sty), value, node)
    return obj


def _field(obj: ObjV, name: str) -> tuple[ir.Place, Any] | None:
    """The place of an object's field in memory, and the field's type."""
    sty = obj.cls.__vksycl_struct__
    i = sty.field_index(name)
    if i < 0:
        return None
    ft = sty.fields[i][1]
    return ir.Place(obj.ptr.root, obj.ptr.offset, (i,), mem_type(ft)), ft


def attribute(fl: Any, obj: ObjV, name: str, node: ast.AST) -> Any:
    """`obj.field` (a load through the object's address) or `obj.method` (to be called)."""
    found = _field(obj, name)
    if found is not None:
        return fl.load(found[0], node, found[1])
    if isinstance(getattr(obj.cls, name, None), pytypes.FunctionType):
        return MethodV(obj, name)
    raise fl.err(node, f"struct {obj.cls.__name__} has no field or method '{name}'")


def store_field(fl: Any, obj: ObjV, name: str, value: Any, node: ast.AST) -> Any:
    """`obj.field = value`, or the field's value when `value` is None."""
    found = _field(obj, name)
    if found is None:
        raise fl.err(node, f"struct {obj.cls.__name__} has no field '{name}'")
    if value is None:
        return fl.load(found[0], node, found[1])
    if name == TAG_FIELD:
        raise fl.err(node, "the type tag is set by construct_at only")
    fl.store(found[0], value, node, found[1])
    return None


def _is_virtual(cls: type, name: str) -> bool:
    root = _root(cls) if is_polymorphic(cls) else None
    return root is not None and any(
        issubclass(c, root) and getattr(c.__dict__.get(name), MARK, _UNMARKED)
        is not _UNMARKED for c in _CLASSES)


def method(fl: Any, obj: ObjV, name: str, args: list[Any], kwargs: dict[str, Any],
           node: ast.AST) -> Any:
    """A method call on an object in memory: virtual methods dispatch on its tag, others
    call the static class's method."""
    f = getattr(obj.cls, name)
    if not _is_virtual(obj.cls, name):
        return fl.call_function(f, args, kwargs, node, obj)
    return _dispatch(fl, obj, name, args, kwargs, node)


def _dispatch(fl: Any, obj: ObjV, name: str, args: list[Any], kwargs: dict[str, Any],
              node: ast.AST) -> Any:
    m = fl.m
    sets = m.spec.indirect_sets
    call = f"{obj.cls.__name__}.{name}()"
    if sets is None:
        raise fl.err(node, f"{call} is a virtual call: the kernel needs the property "
                     "syclexp.assume_indirect_calls or syclexp.assume_indirect_calls_to(...) "
                     "naming the sets of its overriders")
    targets: dict[Any, tuple[type, list[int]]] = {}
    for c in _CLASSES:
        if not issubclass(c, obj.cls):
            continue
        f = getattr(c, name, None)
        if not isinstance(f, pytypes.FunctionType) or _abstract(f) or \
                getattr(f, MARK, _UNMARKED) not in sets:
            continue
        targets.setdefault(f, (_owner(c, name, f), []))[1].append(tag_of(c))
    if not targets:
        declared = ", ".join(set_name(s) for s in sets)
        raise fl.err(node, f"{call}: no overrider is in the sets the kernel declares "
                     f"({declared})")
    addr = fl.snapshot(obj.ptr.offset)
    tag = fl.new_local(f"{name}.tag", U32)
    fl.emit(ir.Assign(tag, fl.load(ir.Place(obj.ptr.root, addr, (0,), U32), node, U32)))
    args = [fl.snapshot(a) for a in args]
    kwargs = {k: fl.snapshot(v) for k, v in kwargs.items()}
    branches = []
    for f, (owner, tags) in targets.items():
        this = ObjV(owner, PtrV(m.global_root(owner.__vksycl_struct__), addr))
        saved, fl.out = fl.out, []
        try:
            value = fl.call_function(f, args, kwargs, node, this)
        finally:
            body, fl.out = fl.out, saved
        branches.append((tags, body, None if isinstance(value, PyV) and value.obj is None
                         else value))
    result = _result(fl, branches, call, node)
    fl.emit(ir.Switch(ir.Read(tag), [(tuple(tags), body) for tags, body, _ in branches]))
    return PyV(None) if result is None else ir.Read(result)


def _result(fl: Any, branches: list, call: str, node: ast.AST) -> ir.Local | None:
    """The variable every overrider's return value goes to (in its own type's common
    promotion), or None when they return nothing."""
    values = [v for _, _, v in branches if v is not None]
    if not values:
        return None
    if len(values) != len(branches):
        raise fl.err(node, f"{call}: some overriders return a value and others do not")
    for v in values:
        if not isinstance(v, ir.Value | PyV):
            raise fl.err(node, f"{call}: a virtual method returns a number or nothing; "
                         f"an overrider returns {type(v).__name__}")
    scalars = [fl.scalar(v, node) for v in values]
    ty = scalars[0].ty
    for s in scalars[1:]:
        if s.ty != ty:
            ty = BOOL if ty.is_bool and s.ty.is_bool else promote(ty, s.ty)
    result = fl.new_local("virtual.ret", ty)
    fl.emit(ir.Assign(result, ir.Const(ty, False if ty.is_bool else 0)))
    for (_, body, _), s in zip(branches, scalars, strict=True):
        body.append(ir.Assign(result, fl.convert(s, ty, node)))
    return result


def check_kernel(pyfn: Any) -> None:
    """`indirectly_callable` on a kernel is ill-formed."""
    if getattr(pyfn, MARK, _UNMARKED) is not _UNMARKED:
        src = function_source(pyfn)
        raise error(src.filename, src.node, f"{src.name} is a kernel and is marked "
                    "indirectly_callable; the property applies to virtual methods only")


def collect_set_aspects(fl: Any, node: ast.AST) -> None:
    """Compiles every method of the kernel's declared sets (those it does not call are not
    emitted), so the optional features they use become the kernel's, as the spec says.
    Parameters are taken at their annotated types (int32 without one); a method that does
    not compile so contributes the aspects of the calls that reach it."""
    m = fl.m
    for s in m.spec.indirect_sets or ():
        for cls, _, f in set_functions(s):
            if _abstract(f):
                continue
            this = ObjV(cls, PtrV(m.global_root(cls.__vksycl_struct__), ir.Const(U64, 0)))
            args = [_placeholder(m, p) for p in
                    list(inspect.signature(f).parameters.values())[1:]]
            saved, fl.out = fl.out, []
            try:
                fl.call_function(f, args, {}, node, this)
            except exception as ex:
                if ex.code() != errc.build:
                    raise
                # not the kernel's code: where a call reaches it, it compiles with the
                # real argument types and its errors are reported there
            finally:
                fl.out = saved


def _placeholder(m: Any, p: inspect.Parameter) -> Any:
    """A value of a parameter's annotated type (int32 when it has none)."""
    t = type_of_annotation(p.annotation) if p.annotation is not p.empty else None
    if isinstance(t, PtrType):
        return PtrV(m.global_root(t.elem), ir.Const(U64, 0))
    t = t if isinstance(t, Scalar) else I32
    m.use_type(t)
    return ir.Const(t, False if t.is_bool else 0)


# -- host side --------------------------------------------------------------------------------

def host_construct_at(cls: type, ptr: Any, fields: dict[str, Any]) -> None:
    """`Cls.construct_at(ptr, **fields)` on the host: writes the object, tag first, into
    host-accessible USM memory (the tags are those device code tests)."""
    if not hasattr(ptr, "allocation"):
        raise invalid(f"{cls.__name__}.construct_at needs a USM pointer, got "
                      f"{type(ptr).__name__}")
    elem = cls.dtype
    try:
        target = np.asarray(ptr).view(np.uint8)
    except exception as ex:
        raise exception(errc.invalid, f"{cls.__name__}.construct_at on the host needs "
                        f"host-accessible memory (malloc_shared / malloc_host): {ex}") from None
    holder = cls.__vksycl_struct__
    held = element_type(ptr.dtype)
    if not _holds(held, cls) or not _fits(held, cls):
        raise invalid(f"{cls.__name__}.construct_at: a pointer to {held!r} cannot hold a "
                      f"{cls.__name__}")
    obj = cls(**fields)
    rec = np.zeros((), elem)
    for name, _ in holder.fields:
        v = getattr(obj, name)
        rec[name] = getattr(v, "address", v)
    target[: elem.itemsize] = np.frombuffer(rec.tobytes(), np.uint8)


def class_ops(cls: type) -> None:
    """Gives a polymorphic class `at` and `construct_at`."""
    def at(c: type, ptr: Any) -> Any:
        raise exception(errc.feature_not_supported, f"{c.__name__}.at views memory as an "
                        "object in device code only")

    def construct_at(c: type, ptr: Any, **fields: Any) -> None:
        host_construct_at(c, ptr, fields)

    setattr(at, OP, "at")
    setattr(construct_at, OP, "construct_at")
    for f in (at, construct_at):
        if f.__name__ not in cls.__dict__:
            setattr(cls, f.__name__, classmethod(f))


__all__ = ["MARK", "OP", "class_op", "class_ops", "register"]
