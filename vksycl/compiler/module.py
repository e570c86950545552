"""One kernel's compilation: kernel arguments, memory roots, device-function instances,
feature use, then the passes (call tree, dead arguments, layout) and codegen.

Kernel arguments are created lazily, the first time kernel code reads a captured value or
parameter, so arguments a kernel never uses cost nothing. A USM pointer argument is its
64-bit device address; scalars are push-constant fields of their own width (at least 32
bits); a kernel variant compiled with `args_in_memory` reads the same fields from an
argument block in device memory whose address is its one push constant.
"""

from __future__ import annotations

import ast
import enum
import sys
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from . import coarsen as coarsening
from . import device as dev
from . import ir, virtual
from .device_global import device_global
from .device_global_code import GlobalV
from .frontend.describe import kind_of
from .frontend.lowering import FunctionLowering, source_of
from .frontend.names import Restart
from .intrinsics import Intrinsics
from .type_registry import element_type
from .typesys import (
    BOOL,
    F32,
    I32,
    U32,
    U64,
    VOID,
    ArrayType,
    PtrType,
    Scalar,
    Struct,
    TupleType,
    Type,
    dtype_of,
    mem_type,
    promote,
    scalar_of,
)
from .values import AggV, FixedSlot, ItemV, ObjV, PtrV, PyV, TupV
from .workitem import Groups, Queries

MAX_RESTARTS = 32
# the aspects of optional features the compiler sees a kernel use
OPTIONAL_FEATURES = ("fp64", "fp16", "atomic64")


@dataclass(frozen=True)
class KernelSpec:
    """What a kernel is compiled for (everything that changes the generated code)."""

    name: str
    kind: str  # "single_task", "range", "nd_range"
    dims: int
    local: tuple[int, ...]  # SYCL order
    has_offset: bool = False
    params: tuple[Any, ...] | None = None  # device types of explicit parameters
    scratch_bytes: int = 0
    # 2-/3-dimensional launches with more work-groups in a dimension than the device
    # dispatches: work-groups are numbered linearly over x and y and decomposed
    fold_groups: bool = False
    # the arguments in a block in device memory, for kernels whose arguments outgrow the
    # device's push constants: the push constants hold the block's address
    args_in_memory: bool = False
    # the sets of virtual methods the kernel declares (assume_indirect_calls_to; None is
    # the default set), and a digest of the polymorphic classes its calls dispatch over
    indirect_sets: tuple | None = None
    virtual_digest: str = ""
    # the aspects a device_has property lists (names), or None without one
    device_has: tuple[str, ...] | None = None


@dataclass
class ArgSlot:
    """One kernel argument the generated code reads, and where it goes."""

    path: tuple
    kind: str  # "scalar", "ptr", "launch", "device_global" (its address, from the runtime)
    dtype: Any  # storage dtype (scalar), element dtype (ptr)
    push_index: int = -1  # index into the push-constant members
    push_offset: int = -1  # byte offset in the packed arguments


@dataclass
class Lowered:
    kernel: ir.Function
    functions: list[ir.Function]
    args: list[ArgSlot]
    push_types: list[Scalar]
    shared: list[ir.SharedRoot]
    aspects: set[str] = field(default_factory=set)
    uses_subgroups: bool = False
    specialized: list[tuple] = field(default_factory=list)
    coarsen: int = 1
    device_globals: dict[tuple, Any] = field(default_factory=dict)


def _is_usm_ptr(obj: Any) -> bool:
    return hasattr(obj, "allocation") and hasattr(obj, "byte_offset") and hasattr(obj, "dtype")


def frozen(v: Any) -> Any:
    """A captured list as the tuple it holds now: lists are compiled in by value, and a
    kernel is compiled again when the value changes."""
    if isinstance(v, list):
        return tuple(frozen(x) for x in v)
    if isinstance(v, tuple) and any(isinstance(x, list | tuple) for x in v):
        return tuple(frozen(x) for x in v)
    return v


def path_getter(path: tuple, pyfn: Any) -> Callable[[Any, tuple], Any]:
    """How to read a capture path from (kernel function, arguments): built once, called
    at every launch. A path starts at a closure cell of the kernel, a module global, an
    explicit argument, or a closure cell of a device function (`("fncell", path of the
    function, name)`), then reads attributes."""
    fields = path[2:] if path[0] in ("cell", "param") else path[3:]
    if path[0] == "cell":
        i = pyfn.__code__.co_freevars.index(path[1])
        base = lambda fn, args: fn.__closure__[i].cell_contents
    elif path[0] == "fncell":
        outer, name = path_getter(path[1], pyfn), path[2]

        def base(fn: Any, args: tuple) -> Any:
            f = outer(fn, args)
            return f.__closure__[f.__code__.co_freevars.index(name)].cell_contents
    elif path[0] == "param":
        i = path[1]
        base = lambda fn, args: args[i]
    else:
        mod, name = path[1], path[2]
        if mod == pyfn.__module__:
            base = lambda fn, args: fn.__globals__[name]
        else:
            base = lambda fn, args: sys.modules[mod].__dict__[name]
    if not fields:
        return base

    def get(fn: Any, args: tuple) -> Any:
        v = base(fn, args)
        for f in fields:
            v = getattr(v, f)
        return v

    return get


def captured_value(pyfn: Any, path: tuple) -> Any:
    """The value a capture path holds now, lists frozen."""
    return frozen(path_getter(path, pyfn)(pyfn, ()))


def path_name(path: tuple) -> str:
    """How the user spells a capture path: `cfg.scale`."""
    return ".".join(str(p) for p in path[1 if path[0] == "cell" else 2:])


def _data(v: Any) -> bool:
    """Numbers, None and tuples of them: values a kernel can be compiled for."""
    if isinstance(v, tuple):
        return all(_data(x) for x in v)
    return v is None or isinstance(v, bool | int | float | complex | np.generic)


def plain_object(obj: Any) -> bool:
    """A user's own mutable object (not a module, class, function, enum or vksycl or
    numpy value): its attributes are read at each launch, as captured locals are."""
    t = type(obj)
    return hasattr(obj, "__dict__") and not callable(obj) and not isinstance(
        obj, type | pytypes.ModuleType | enum.Enum) and \
        t.__module__.split(".")[0] not in ("vksycl", "numpy", "builtins")


def push_storage(t: Scalar) -> Scalar:
    """Push constants hold 8/16-bit values and bools widened to 32 bits."""
    if t.is_bool:
        return U32
    if t.bits < 32:
        return Scalar(t.kind, 32)
    return t


class KernelModule:
    def __init__(self, pyfn: Any, spec: KernelSpec) -> None:
        self.pyfn = pyfn
        self.spec = spec
        self.kind = spec.kind
        self.dims = spec.dims
        self.local = spec.local
        self.has_offset = spec.has_offset
        self.intr = Intrinsics(self)
        self.queries = Queries(self)
        self.groups = Groups(self)
        self.args: list[ArgSlot] = []
        self.device_globals: dict[tuple, device_global] = {}  # by argument path
        self.push_types: list[Scalar] = []
        self.captures: dict[tuple, Any] = {}
        self.functions: dict[tuple, ir.Function] = {}
        self.shared: dict[Any, ir.SharedRoot] = {}
        self.global_roots: dict[Type, ir.GlobalRoot] = {}
        self.stack: list[Any] = []
        self.aspects: set[str] = set()
        self.uses_subgroups = False
        self.kernel_fl: FunctionLowering | None = None
        self.origins: dict[int, tuple[tuple, Any, Any]] = {}
        self.specialized: list[tuple] = []
        self.item_override: ir.Value | None = None
        self.group_observed = False  # local ids, groups, barriers, local memory used
        self.names: dict[str, int] = {}
        # sub-group ids and ranges: scalars that can also be indexed with [0]
        self.one_d: dict[int, ir.Value] = {}

    # -- entry ---------------------------------------------------------------------------
    def lower(self) -> Lowered:
        src = source_of(self.pyfn)
        node = src.node
        params = [a.arg for a in node.args.args]
        spec = self.spec
        if spec.params is not None:
            if len(params) != len(spec.params):
                raise exception(errc.build, f"{src.filename}:{node.lineno}: kernel "
                                f"{src.name} has {len(params)} parameters, "
                                f"{len(spec.params)} types given")
            bound = [(p, self.materialize(("param", i), t, node))
                     for i, (p, t) in enumerate(zip(params, spec.params, strict=True))]
        else:
            want = 0 if spec.kind == "single_task" else 1
            if len(params) != want:
                what = "no parameter" if want == 0 else "one parameter (the work-item)"
                raise exception(errc.build, f"{src.filename}:{node.lineno}: a "
                                f"{spec.kind} kernel takes {what}, {src.name} takes "
                                f"{len(params)}")
            bound = []
            if want:
                kind = "nd_item" if spec.kind == "nd_range" else "item"
                bound = [(params[0], FixedSlot(ItemV(kind, spec.dims)))]
        virtual.check_kernel(self.pyfn)
        self.stack.append(self.pyfn)
        fn, fl = self.lower_function(self.pyfn, src, "kernel", bound, kernel=True)
        if spec.indirect_sets is not None:
            virtual.collect_set_aspects(fl, node)
            self.aspects.add("ext_oneapi_virtual_functions")
        self.stack.pop()
        if spec.device_has is not None:
            self.check_device_has(src, node)
        for rnode, _, value in fl.returns:
            if value is not None:
                raise fl.err(rnode, "a kernel cannot return a value")
        fn.ret = VOID
        coarsen = 1
        # nd_range items are independent too when the code never looks at their groups
        independent = spec.kind == "range" or (
            spec.kind == "nd_range" and not spec.has_offset and not self.group_observed)
        if independent and spec.dims == 1 and coarsening.eligible(fn.body):
            fn = self.coarsened(fn, src, bound)
            coarsen = coarsening.COARSEN
        elif spec.kind == "range" or (spec.kind == "nd_range" and spec.dims == 1) or \
                spec.fold_groups:
            fn.body.insert(0, ir.If(self.queries.guard(), [ir.Return(None)], []))
        return Lowered(fn, [], self.args, self.push_types, list(self.shared.values()),
                       self.aspects, self.uses_subgroups,
                       [p for p in self.specialized], coarsen, self.device_globals)

    def coarsened(self, fn: ir.Function, src: Any, bound: list) -> ir.Function:
        """The kernel running its straight-line body for COARSEN ids per work-item:
        batched (loads before stores) when the whole work-group chunk is in range,
        one by one with the range check otherwise."""
        k_count = coarsening.COARSEN
        local = self.local[0]
        out = ir.Function("kernel", [], VOID)
        ids = [ir.Local(f"id{k}", I32) for k in range(k_count)]
        group, lid = self.queries.group_id(0), self.queries.local_id(0)
        chunk = local * k_count
        base = ir.Op("OpIAdd", I32, [ir.Op("OpIMul", I32, [group, ir.Const(I32, chunk)]), lid])
        n = self.queries.global_range(0)
        out.locals += ids
        out.body += [ir.Assign(ids[k], ir.Op("OpIAdd", I32, [base, ir.Const(I32, k * local)]))
                     for k in range(k_count)]
        bodies = []
        for k in range(k_count):
            self.item_override = ir.Read(ids[k])
            self.stack.append(self.pyfn)
            copy, _ = self.lower_function(self.pyfn, src, "kernel", bound, kernel=True)
            self.stack.pop()
            out.locals += copy.locals
            bodies.append(copy.body)
        self.item_override = None
        firsts, stores = zip(*(coarsening.split(b, out) for b in bodies), strict=True)
        fast = coarsening.interleave(list(firsts)) + coarsening.interleave(list(stores))
        slow = [ir.If(ir.Op("OpSLessThan", BOOL, [ir.Read(ids[k]), n]),
                      [s for s in bodies[k] if not isinstance(s, ir.Return)], [])
                for k in range(k_count)]
        end = ir.Op("OpIMul", I32, [ir.Op("OpIAdd", I32, [group, ir.Const(I32, 1)]),
                                     ir.Const(I32, chunk)])
        out.body.append(ir.If(ir.Op("OpSLessThanEqual", BOOL, [end, n]), fast, slow))
        return out

    def lower_function(self, pyfn: Any, src: Any, name: str, params: list[tuple[str, Any]],
                       kernel: bool = False, fn_path: tuple | None = None,
                       ) -> tuple[ir.Function, FunctionLowering]:
        hints: dict[str, Type] = {}
        for _ in range(MAX_RESTARTS):
            fl = FunctionLowering(self, pyfn, src, name, hints, fn_path)
            if kernel:
                self.kernel_fl = fl
            try:
                fn = fl.lower(params)
            except Restart:
                continue
            return fn, fl
        raise fl.err(src.node, "variable types do not settle")

    # -- kernel arguments ------------------------------------------------------------------
    def push_field(self, t: Scalar) -> ir.Value:
        st = push_storage(t)
        self.push_types.append(st)
        return ir.PushField(len(self.push_types) - 1, st)

    def scalar_arg(self, path: tuple, t: Scalar) -> ir.Value:
        pf = self.push_field(t)
        self.args.append(ArgSlot(path, "scalar", push_storage(t).dtype, pf.index))
        if t.is_bool:
            return ir.Op("OpINotEqual", BOOL, [pf, ir.Const(U32, 0)])
        if t == pf.ty:
            return pf
        self.use_type(t)
        if t.is_float:
            return ir.Op("OpFConvert", t, [pf])
        return ir.Op("OpSConvert" if t.is_signed else "OpUConvert", t, [pf])

    def ptr_arg(self, path: tuple, elem: Type) -> PtrV:
        pf = self.push_field(U64)
        self.args.append(ArgSlot(path, "ptr", dtype_of(elem), pf.index))
        return PtrV(self.global_root(elem), pf)

    def device_global(self, decl: device_global) -> GlobalV:
        """A device_global the kernel uses: a hidden pointer argument that the launch
        fills from the device-global database, one per variable however it is reached
        (module global, class attribute, closure cell, device function)."""
        key = ("device_global", decl.unique_id)
        hit = self.captures.get(key)
        if hit is None:
            pf = self.push_field(U64)
            self.args.append(ArgSlot(key, "device_global", decl.dtype, pf.index))
            self.device_globals[key] = decl
            elem = element_type(decl.dtype)
            hit = self.captures[key] = GlobalV(PtrV(self.global_root(elem), pf), decl)
        return hit

    def launch_value(self, what: str, d: int) -> ir.Value:
        key = ("launch", what, d)
        v = self.captures.get(key)
        if v is None:
            pf = self.push_field(U32)
            self.args.append(ArgSlot(key, "launch", np.dtype(np.uint32), pf.index))
            v = self.captures[key] = ir.Op("OpBitcast", I32, [pf])
        return v

    def materialize(self, path: tuple, t: Any, node: ast.AST) -> Any:
        """A kernel argument of a declared type (free function kernel parameters)."""
        if isinstance(t, Scalar):
            return self.scalar_arg(path, t)
        if isinstance(t, PtrType):
            return self.ptr_arg(path, t.elem)
        if isinstance(t, Struct):
            return AggV(t, [self.materialize((*path, n), ft, node) for n, ft in t.fields])
        raise exception(errc.build, f"unsupported kernel parameter type {t!r}")

    def captured(self, fl: FunctionLowering, path: tuple, obj: Any, node: ast.AST) -> Any:
        """The device value of a name captured from a closure cell or module global. Cells
        of the kernel, and of device functions it reaches by a path, are arguments read
        at each launch; cells of a function reached otherwise (passed around as a value)
        are compiled in."""
        if isinstance(obj, device_global):
            return self.device_global(obj)
        if path[0] == "cell" and fl is not self.kernel_fl:
            if _is_usm_ptr(obj) or hasattr(type(obj), "__vksycl_struct__"):
                raise fl.err(node, f"a device function captures '{path[-1]}' from its "
                             "enclosing scope, and the kernel reaches the function only as "
                             "a value; pass it as an argument")
            return PyV(obj)
        hit = self.captures.get(path)
        if hit is not None:
            return hit
        value = self.classify(fl, path, obj, node, runtime=path[0] in ("cell", "fncell"))
        self.captures[path] = value
        return value

    def classify(self, fl: FunctionLowering, path: tuple, obj: Any, node: ast.AST,
                 runtime: bool) -> Any:
        if isinstance(obj, device_global):
            return self.device_global(obj)
        if _is_usm_ptr(obj):
            return self.ptr_arg(path, element_type(obj.dtype))
        st = getattr(type(obj), "__vksycl_struct__", None)
        if st is not None:
            fields = []
            for name, ft in st.fields:
                sub = (*path, name)
                if isinstance(ft, Scalar):
                    fields.append(self.scalar_arg(sub, ft))
                else:
                    fields.append(self.classify(fl, sub, getattr(obj, name), node, True))
            return AggV(st, fields)
        if isinstance(obj, dev.work_group_memory):
            return self.shared_array(fl, obj.dtype, obj.shape, node, key=path)
        if isinstance(obj, np.ndarray):
            raise fl.err(node, f"'{path[-1]}' is a numpy array: kernels read memory through "
                         "USM pointers (sycl.malloc_shared / malloc_device)")
        if runtime and isinstance(obj, bool | int | float | np.generic):
            t = scalar_of(obj.dtype) if isinstance(obj, np.generic) else scalar_of(type(obj))
            if t is None:
                raise fl.err(node, f"'{path[-1]}' has an unsupported type {type(obj)}")
            value = self.scalar_arg(path, t)
            self.origins[id(value)] = (path, obj, value)
            return value
        if isinstance(obj, dict | set | bytearray):
            raise fl.err(node, f"'{path_name(path)}' is a {type(obj).__name__}, which can "
                         "change after the kernel is compiled; capture a tuple, or a USM "
                         "pointer for data")
        if plain_object(obj):
            return PyV(obj, path)
        # numbers and tuples compiled in, and the kernel compiled again for each value
        # they have at launch: lists, attributes, and globals of device functions (the
        # kernel's own globals and cells are keyed by value already)
        if isinstance(obj, list):
            obj = frozen(obj)
            if not _data(obj):
                raise fl.err(node, f"'{path_name(path)}' is a list of values that cannot be "
                             "compiled in; capture a tuple, or a USM pointer for data")
            if path not in self.specialized:
                self.specialized.append(path)
        elif _data(obj) and path not in self.specialized and (
                len(path) > (2 if path[0] == "cell" else 3) or (
                    path[0] == "global" and fl is not self.kernel_fl)):
            self.specialized.append(path)
        if isinstance(obj, pytypes.MethodType) and plain_object(obj.__self__):
            return PyV(obj, path)  # a method of a captured object: `self` keeps its path
        if isinstance(obj, pytypes.FunctionType) and obj.__closure__:
            return PyV(obj, path)  # a closure: its cells are read through the path
        return PyV(obj)

    def attribute(self, fl: FunctionLowering, base: PyV, attr: str, node: ast.AST) -> Any:
        """An attribute of a captured plain object: a kernel argument read at each launch
        (a number or pointer), or a constant the kernel is compiled for."""
        assert base.path is not None
        path = (*base.path, attr)
        hit = self.captures.get(path)
        if hit is not None:
            return hit
        try:
            obj = getattr(base.obj, attr)
        except AttributeError:
            raise fl.err(node, f"{path_name(base.path)} has no attribute '{attr}'") from None
        value = self.classify(fl, path, obj, node, runtime=True)
        self.captures[path] = value
        return value

    def specialize(self, v: Any) -> Any:
        """The host value behind a captured scalar used where a constant is needed; the
        kernel is then compiled for that value (and again for others)."""
        hit = self.origins.get(id(v))
        if hit is None:
            return None
        path, obj, _ = hit
        if path not in self.specialized:
            self.specialized.append(path)
        return obj

    # -- memory ----------------------------------------------------------------------------
    def global_root(self, elem: Type) -> ir.GlobalRoot:
        """Global memory seen as `elem`s: one root per element type, so pointers to the same
        type compare, subtract, and share variables whatever allocation they point into."""
        root = self.global_roots.get(elem)
        if root is None:
            root = self.global_roots[elem] = ir.GlobalRoot(elem)
        return root

    def shared_array(self, fl: FunctionLowering, dtype: Any, shape: Any, node: ast.AST,
                     key: Any = None) -> PtrV:
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        elem = element_type(np.dtype(dtype))
        if key is None:
            key = ("site", fl.src.filename, node.lineno, node.col_offset)
        self.group_observed = True
        root = self.shared.get(key)
        if root is None:
            length = int(np.prod(shape)) if shape else 1
            root = ir.SharedRoot(elem, length, f"local{len(self.shared)}", shape=shape or (1,))
            self.shared[key] = root
        return PtrV(root, ir.Const(I32, 0))

    def private_array(self, fl: FunctionLowering, dtype: Any, shape: Any,
                      node: ast.AST) -> PtrV:
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        length = int(np.prod(shape))
        if length <= 0:
            raise fl.err(node, "a private array needs a positive constant size")
        elem = element_type(np.dtype(dtype))
        local = fl.new_local("array", ArrayType(mem_type(elem), length))
        return PtrV(ir.PrivateRoot(elem, length, local, shape=shape), ir.Const(I32, 0))

    def scratch_memory(self, fl: FunctionLowering, dtype: Any, node: ast.AST) -> PtrV:
        self.group_observed = True
        elem = element_type(np.dtype(dtype))
        size = np.dtype(dtype).itemsize
        if self.spec.scratch_bytes < size:
            raise fl.err(node, "get_work_group_scratch_memory needs the kernel property "
                         "work_group_scratch_size(bytes)")
        root = self.shared.get("scratch")
        if root is None:
            root = ir.SharedRoot(elem, self.spec.scratch_bytes // size, "scratch",
                                 shape=(self.spec.scratch_bytes // size,))
            self.shared["scratch"] = root
        elif root.elem != elem:
            raise fl.err(node, "work-group scratch memory is used with two element types")
        return PtrV(root, ir.Const(I32, 0))

    def group_scratch(self, t: Scalar) -> ir.SharedRoot:
        key = ("group", t)
        root = self.shared.get(key)
        if root is None:
            n = int(np.prod(self.local))
            root = self.shared[key] = ir.SharedRoot(t, n, f"group_{t!r}", shape=(n,))
        return root

    # -- queries and features --------------------------------------------------------------
    def need_nd(self, fl: FunctionLowering, node: ast.AST, what: str) -> None:
        if self.kind != "nd_range":
            raise fl.err(node, f"{what} needs an nd_range kernel (an nd_item); this is a "
                         f"{self.kind} kernel")

    def free_query(self, fl: FunctionLowering, name: str, args: list[Any],
                   node: ast.AST) -> ItemV:
        if name != "get_nd_item":
            self.group_observed = True
        if name == "get_sub_group":
            self.need_nd(fl, node, name)
            return ItemV("sub_group", 1)
        dims = fl.m.intr.const(fl, args[0], node) if args else self.dims
        if dims != self.dims:
            raise fl.err(node, f"{name}({dims}) in a {self.dims}-dimensional kernel")
        if name == "get_nd_item":
            self.need_nd(fl, node, name)
            return ItemV("nd_item", dims)
        self.need_nd(fl, node, name)
        return ItemV("group", dims)

    def use_type(self, t: Type) -> None:
        if isinstance(t, Scalar):
            if t.is_float and t.bits == 64:
                self.aspects.add("fp64")
            elif t.is_float and t.bits == 16:
                self.aspects.add("fp16")

    def use_storage(self, root: ir.Root, t: Type) -> None:
        self.use_type(t)

    def check_device_has(self, src: Any, node: ast.AST) -> None:
        """The optional features the kernel uses (its sets' methods included) must be
        among those its device_has lists; the listed ones become its requirements."""
        listed = self.spec.device_has or ()
        extra = sorted(a for a in self.aspects if a in OPTIONAL_FEATURES and a not in listed)
        if extra:
            sets = self.spec.indirect_sets
            via = "" if not sets else " (with the methods of the sets it declares: " + \
                ", ".join(virtual.set_name(s) for s in sets) + ")"
            raise exception(errc.build, f"{src.filename}:{node.lineno}: kernel {src.name} "
                            f"uses {', '.join(extra)}{via}, which its device_has"
                            f"({', '.join(listed)}) does not list")
        self.aspects.update(listed)

    def use_atomic(self, t: Scalar, name: str, node: ast.AST) -> None:
        if t.bits == 64:
            self.aspects.add("atomic64")
        if t.is_float and name in ("fetch_add", "fetch_sub", "fetch_min", "fetch_max"):
            what = "add" if name in ("fetch_add", "fetch_sub") else "minmax"
            self.aspects.add(f"atomic_float{t.bits}_{what}")

    # -- device functions ------------------------------------------------------------------
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
        key = (pyfn, tuple(sig))
        fn = self.functions.get(key)
        if fn is None:
            src = source_of(pyfn, node)
            base = pyfn.__name__
            n = self.names.get(base, 0)
            self.names[base] = n + 1
            self.stack.append(pyfn)
            try:
                fn, cfl = self.lower_function(pyfn, src, f"{base}_{n}" if n else base, callee,
                                              fn_path=fn_path)
            finally:
                self.stack.pop()
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
        raise fl.err(node, f"cannot pass this value to a device function ({name})")

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


__all__ = ["F32", "KernelModule", "KernelSpec", "Lowered"]
