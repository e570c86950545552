"""One kernel's compilation: kernel arguments, memory roots, device-function instances
(the `DeviceCalls` part), feature use, then the passes (call tree, dead arguments, layout)
and codegen.

Kernel arguments are created lazily, the first time kernel code reads a captured value or
parameter, so arguments a kernel never uses cost nothing. A USM pointer argument is its
64-bit device address; scalars are push-constant fields of their own width (at least 32
bits); a kernel variant compiled with `args_in_memory` reads the same fields from an
argument block in device memory whose address is its one push constant.
"""

from __future__ import annotations

import ast
import types as pytypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..access import access_mode
from ..config import CHECKS
from ..exceptions import errc, exception
from ..types import as_dtype
from . import checking, ir, printing, virtual
from . import coarsen as coarsening
from . import device as dev
from .captures import (
    ROOT_LENGTH,
    frozen,
    is_data,
    is_usm_ptr,
    namespace,
    path_name,
    plain_object,
    runtime_number,
)
from .device_calls import DeviceCalls
from .device_global import device_global
from .device_global_code import GlobalV
from .frontend.lowering import FunctionLowering, source_of
from .frontend.names import Restart
from .intrinsics import Intrinsics
from .matrix_code import MatrixTarget
from .reduction import KernelReductions, ReductionSpec, reducers
from .type_registry import element_type
from .typesys import (
    BOOL,
    F32,
    I32,
    U32,
    U64,
    VOID,
    AccessorType,
    ArrayType,
    LocalAccessorType,
    PtrType,
    Scalar,
    Struct,
    Type,
    dtype_of,
    mem_type,
    scalar_of,
)
from .values import AccessorV, AggV, FixedSlot, ItemV, PtrV, PyV
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
    # the reductions whose reducers follow the work-item parameter (reduction.py)
    reductions: tuple[ReductionSpec, ...] = ()
    # how joint_matrix lowers on the device (None: portably, any sub-group size)
    matrix: MatrixTarget | None = None
    # whether the device's sub-groups add, multiply, ... (reductions then combine a
    # work-group's values with them rather than with a tree of barriers)
    group_arithmetic: bool = False
    # whether a one-dimensional kernel of independent work-items may run COARSEN ids
    # per work-item: not for launches smaller than one work-group's chunk, whose
    # copies past the range's end only add masked work (on lavapipe's SIMD lanes a
    # 64-item launch's work-group ran 3x the instructions of the kernel uncoarsened)
    coarsenable: bool = True
    # the float widths whose infinities, NaNs and signed zeros the device keeps when a
    # module asks (SignedZeroInfNanPreserve), as Python and SYCL keep them: without it
    # Vulkan lets a driver assume none occur, and lavapipe then turned 0 * 2**44 in
    # float16, reassociated past the overflow, into NaN
    ieee_floats: tuple[int, ...] = ()
    # whether the driver may contract float operations (fuse a multiply and an add): the
    # `fp_contract` kernel property; where not, each one is decorated NoContraction
    fp_contract: bool = True
    # the kernel's adjoint (`adjoint`), gradient pointers after its arguments: "keep"
    # leaves the gradient of what the kernel writes as it is, "zero" zeroes it once read
    # (a launch overwriting what an earlier one wrote); "" is the kernel itself
    adjoint: str = ""
    # for an adjoint, how it adds into gradients that several work-items share: the float
    # widths the device adds atomically in memory reached by address, used in place of a
    # compare-and-swap loop on the float's bits, and whether a sub-group whose work-items
    # add into one address adds up first and scatters once (an n-body step's every
    # work-item reads body j at once)
    buffer_float_adds: tuple[int, ...] = ()
    subgroup_scatter: bool = False


@dataclass
class ArgSlot:
    """One kernel argument the generated code reads, and where it goes."""

    path: tuple
    # "scalar", "ptr", "launch", "device_global" (its address, from the runtime),
    # "accessor" (its address), "accessor_piece" (a component of its range, offset or
    # memory range: `piece`)
    kind: str
    dtype: Any  # storage dtype (scalar, accessor_piece), element dtype (ptr, accessor)
    push_index: int = -1  # index into the push-constant members
    push_offset: int = -1  # byte offset in the packed arguments
    piece: tuple[str, int] = ("", 0)  # ("range" | "offset" | "memory_range", dimension)
    # the alignment the code assumes of a pointer's address beyond its element type's (the
    # vectors it reads through it: `alignment`), which the launch checks
    align: int = 1


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
    # what its prints and assertions write, by record id (`printing`)
    debug_records: dict[int, dict[str, Any]] = field(default_factory=dict)
    # an adjoint's: whether a launch may split the reverse of a loop over work-groups along
    # z (`Adjoint.choose_split`)
    split_loop: bool = False


def push_storage(t: Scalar) -> Scalar:
    """Push constants hold 8/16-bit values and bools widened to 32 bits."""
    if t.is_bool:
        return U32
    if t.bits < 32:
        return Scalar(t.kind, 32)
    return t


class KernelModule(DeviceCalls):
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
        self.debug_records: dict[int, dict[str, Any]] = {}
        # checked mode (`checking`): what it checks, the site record of each access kernel
        # code makes, and each buffer accessor element's place with its (index, range) per
        # dimension, by the place's id (the place kept: no other may take its id)
        self.checks = CHECKS
        self.access_sites: dict[int, int] = {}
        self.accessor_limits: dict[int, tuple[ir.Place, list[tuple[ir.Value, ir.Value]]]] = {}
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
        # where each IR node comes from, by id (node, file, line), for an adjoint's errors
        self.sites: dict[int, tuple] | None = {} if spec.adjoint else None

    # -- entry ---------------------------------------------------------------------------
    def lower(self) -> Lowered:
        src = source_of(self.pyfn)
        node = src.node
        params = [a.arg for a in node.args.args]
        receiver = []  # a kernel method's `self`: its attributes are read at each launch
        if isinstance(self.pyfn, pytypes.MethodType) and params:
            receiver = [(params[0], FixedSlot(PyV(self.pyfn.__self__, ("self",))))]
            params = params[1:]
        spec = self.spec
        if spec.params is not None:
            if len(params) != len(spec.params):
                raise exception(errc.build, f"{src.filename}:{node.lineno}: kernel "
                                f"{src.name} has {len(params)} parameters, "
                                f"{len(spec.params)} types given")
            bound = [(p, self.materialize(("param", i), t, node))
                     for i, (p, t) in enumerate(zip(params, spec.params, strict=True))]
        else:
            want = (0 if spec.kind == "single_task" else 1) + len(spec.reductions)
            if len(params) != want:
                what = "no parameter" if want == 0 else "one parameter (the work-item)" \
                    if want == 1 else f"{want} parameters (the work-item and a reducer for " \
                    f"each of its {want - 1} reductions)"
                raise exception(errc.build, f"{src.filename}:{node.lineno}: a "
                                f"{spec.kind} kernel takes {what}, {src.name} takes "
                                f"{len(params)}")
            bound = []
            if want:
                kind = "nd_item" if spec.kind == "nd_range" else "item"
                bound = [(params[0], FixedSlot(ItemV(kind, spec.dims)))]
        bound = receiver + bound
        reductions = None
        # an adjoint's reducers are the body's accumulators alone: what the body combines
        # is all the adjoint needs (`adjoint`)
        self.adjoint_reducers = reducers(spec.reductions) if spec.adjoint else []
        bound += [(p, FixedSlot(r)) for p, r in zip(params[1:], self.adjoint_reducers,
                                                    strict=False)]
        if spec.reductions and not spec.adjoint:
            reductions = KernelReductions(self, spec.reductions, params[1:],
                                          spec.kind == "range" and spec.dims == 1,
                                          spec.group_arithmetic)
        virtual.check_kernel(self.pyfn)
        self.stack.append(self.pyfn)
        if reductions is None:
            fn, fl = self.lower_function(self.pyfn, src, "kernel", bound, kernel=True)
        else:
            fn, fl = reductions.lower_bodies(src, bound)
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
        guarded = spec.kind == "range" or (spec.kind == "nd_range" and spec.dims == 1) or \
            spec.fold_groups
        if reductions is not None:
            fn = reductions.kernel(fl, fn, guarded, node)
        elif independent and spec.dims == 1 and spec.coarsenable and not spec.adjoint and \
                not self.checks and \
                coarsening.eligible(fn.body):
            fn = self.coarsened(fn, src, bound)
            coarsen = coarsening.COARSEN
        elif guarded:
            fn.body.insert(0, ir.If(self.queries.guard(), [ir.Return(None)], []))
        if self.access_sites and not spec.adjoint:  # (an adjoint runs unchecked)
            checking.instrument(self, fn, self.access_sites, "nan" in self.checks)
        return Lowered(fn, [], self.args, self.push_types, list(self.shared.values()),
                       self.aspects, self.uses_subgroups,
                       [p for p in self.specialized], coarsen, self.device_globals,
                       self.debug_records)

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

    def debug_buffer(self) -> ir.Value:
        """The device address of the debug buffer prints and assertions write to: a
        hidden argument of the kernels that have them alone."""
        return self._hidden_address("debug", np.dtype(np.uint32))

    def check_table(self) -> ir.Value:
        """The device address of the table of live allocations checked mode looks
        addresses up in: a hidden argument of checked kernels."""
        return self._hidden_address("check_table", np.dtype(np.uint64))

    def _hidden_address(self, kind: str, dtype: np.dtype) -> ir.Value:
        """A 64-bit hidden argument of `kind`, added on first use."""
        key = (kind,)
        v = self.captures.get(key)
        if v is None:
            pf = self.push_field(U64)
            self.args.append(ArgSlot(key, kind, dtype, pf.index))
            v = self.captures[key] = pf
        return v

    def check_bounds(self, base: ir.PushField) -> tuple[ir.Value, ir.Value]:
        """The [start, end) of the allocation a pointer argument points into, which the
        launch passes beside it in checked mode (hidden arguments)."""
        key = ("check_bounds", base.index)
        v = self.captures.get(key)
        if v is None:
            fields = []
            for piece in ("start", "end"):
                pf = self.push_field(U64)
                self.args.append(ArgSlot(key, "check_bounds", np.dtype(np.uint64), pf.index,
                                         piece=(piece, base.index)))
                fields.append(pf)
            v = self.captures[key] = tuple(fields)
        return v

    def note_access(self, fl: FunctionLowering, place: ir.Place, node: ast.AST,
                    what: str) -> None:
        """In checked mode, where kernel code accesses `place`, for its check's report."""
        if not self.checks:
            return
        record = {"kind": "check", "pieces": [], "access": what, "kernel": self.spec.name,
                  "site": f"{fl.src.filename}:{getattr(node, 'lineno', 0)}:"
                          f"{getattr(node, 'col_offset', -1) + 1}",
                  "dims": 0 if self.kind == "single_task" else self.dims}
        rid = printing.record_id(record)
        self.debug_records[rid] = record
        self.access_sites[id(place)] = rid

    def element_limits(self, place: ir.Place) -> list[tuple[ir.Value, ir.Value]] | None:
        """The (index, range) per dimension of the accessor element at `place`, if it is
        one."""
        hit = self.accessor_limits.get(id(place))
        return hit[1] if hit is not None and hit[0] is place else None

    def member_of(self, element: ir.Place, member: ir.Place) -> None:
        """`member` is a field of the element at `element`: an accessor's range bounds it
        too."""
        limits = self.element_limits(element)
        if limits is not None:
            self.accessor_limits[id(member)] = member, limits

    def debug_item_ids(self) -> list[ir.Value]:
        """The work-item's global id (int32 per dimension; none in a single_task)."""
        if self.kind == "single_task":
            return []
        return [self.queries.global_id(d) for d in range(self.dims)]

    def launch_value(self, what: str, d: int) -> ir.Value:
        key = ("launch", what, d)
        v = self.captures.get(key)
        if v is None:
            pf = self.push_field(U32)
            self.args.append(ArgSlot(key, "launch", np.dtype(np.uint32), pf.index))
            v = self.captures[key] = ir.Op("OpBitcast", I32, [pf])
        return v

    def global_accessor(self, path: tuple, elem: Type, dims: int,
                        mode: access_mode) -> AccessorV:
        """A global accessor the launch finds at `path`: its address now, its pieces when
        the code reads them."""
        pf = self.push_field(U64)
        self.args.append(ArgSlot(path, "accessor", dtype_of(elem), pf.index))
        return AccessorV(PtrV(self.global_root(elem), pf), dims, mode, path)

    def accessor_piece(self, path: tuple, what: str, d: int) -> ir.Value:
        """Component `d` of the range, offset or memory range of the accessor at `path`,
        one kernel argument however often the code reads it."""
        key = ("accessor", path, what, d)
        v = self.captures.get(key)
        if v is None:
            pf = self.push_field(U32)
            self.args.append(ArgSlot(path, "accessor_piece", np.dtype(np.uint32), pf.index,
                                     piece=(what, d)))
            v = self.captures[key] = ir.Op("OpBitcast", I32, [pf])
        return v

    def local_accessor(self, path: tuple, dtype: Any, dims: int, shape: Any,
                       node: ast.AST) -> AccessorV:
        """A local accessor: work-group memory of its shape, one array per path."""
        ptr = self.shared_array(None, dtype, shape, node, key=path)
        return AccessorV(ptr, dims, access_mode.read_write, None, tuple(int(s) for s in shape))

    def check_local(self, filename: str, path: tuple, node: ast.AST) -> None:
        """SYCL 2020 4.7.6.11: a kernel using a local accessor is an nd_range kernel;
        submitting a single_task or a parallel_for over a range throws kernel_argument."""
        if self.kind != "nd_range":
            raise exception(errc.kernel_argument, f"{filename}:{getattr(node, 'lineno', 0)}: "
                            f"'{path_name(path)}' is a local_accessor, work-group memory: "
                            f"only an nd_range kernel may use one, not a {self.kind} kernel")

    def accessor(self, path: tuple, obj: Any, node: ast.AST) -> AccessorV:
        """The device value of an accessor object (its class says which kind)."""
        if type(obj).__vksycl_accessor__ == "local":
            return self.local_accessor(path, obj.dtype, obj.dims, obj.shape, node)
        return self.global_accessor(path, element_type(obj.dtype), obj.dims, obj.access_mode)

    def materialize(self, path: tuple, t: Any, node: ast.AST) -> Any:
        """A kernel argument of a declared type (free function kernel parameters)."""
        if isinstance(t, Scalar):
            return self.scalar_arg(path, t)
        if isinstance(t, PtrType):
            return self.ptr_arg(path, t.elem)
        if isinstance(t, AccessorType):
            return self.global_accessor(path, t.elem, t.dims, t.mode)
        if isinstance(t, LocalAccessorType):
            # until a launch gives the shape (a bundle's representative compile), one
            # element per dimension
            return self.local_accessor(path, dtype_of(t.elem), t.dims,
                                       t.shape or (1,) * t.dims, node)
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
            if is_usm_ptr(obj) or hasattr(type(obj), "__vksycl_struct__") or \
                    hasattr(type(obj), "__vksycl_accessor__"):
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
        if hasattr(type(obj), "__vksycl_accessor__"):
            if type(obj).__vksycl_accessor__ == "local":
                self.check_local(fl.src.filename, path, node)
            return self.accessor(path, obj, node)
        host_only = getattr(type(obj), "__vksycl_host_only__", None)
        if host_only is not None:
            raise fl.err(node, f"'{path_name(path)}' is {host_only}")
        if is_usm_ptr(obj):
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
        if runtime and runtime_number(obj):
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
            if not is_data(obj):
                raise fl.err(node, f"'{path_name(path)}' is a list of values that cannot be "
                             "compiled in; capture a tuple, or a USM pointer for data")
            if path not in self.specialized:
                self.specialized.append(path)
        elif is_data(obj) and path not in self.specialized and (
                len(path) > ROOT_LENGTH.get(path[0], 3) or (
                    path[0] == "global" and fl is not self.kernel_fl)):
            self.specialized.append(path)
        if namespace(obj):
            return PyV(obj, path)  # its numbers are looked up through the path at launch
        if isinstance(obj, pytypes.MethodType) and (plain_object(obj.__self__) or
                                                   namespace(obj.__self__)):
            return PyV(obj, path)  # a method of a captured object or a class method: `self`
            # or `cls` keeps its path
        if isinstance(obj, pytypes.FunctionType) and obj.__closure__:
            return PyV(obj, path)  # a closure: its cells are read through the path
        return PyV(obj)

    def attribute(self, fl: FunctionLowering, base: PyV, attr: str, node: ast.AST) -> Any:
        """An attribute of a captured plain object: a kernel argument read at each launch
        (a number or pointer), or a constant the kernel is compiled for; of a user's
        module or class (`namespace`), a constant the kernel is compiled for, again for
        each value it holds at launch."""
        assert base.path is not None
        path = (*base.path, attr)
        hit = self.captures.get(path)
        if hit is not None:
            return hit
        try:
            obj = getattr(base.obj, attr)
        except AttributeError:
            raise fl.err(node, f"{path_name(base.path)} has no attribute '{attr}'") from None
        value = self.classify(fl, path, obj, node, runtime=not namespace(base.obj))
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

    def shared_array(self, fl: FunctionLowering | None, dtype: Any, shape: Any,
                     node: ast.AST, key: Any = None) -> PtrV:
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(int(s) for s in shape)
        elem = element_type(as_dtype(dtype))
        if key is None:
            assert fl is not None
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
        elem = element_type(as_dtype(dtype))
        local = fl.new_local("array", ArrayType(mem_type(elem), length))
        return PtrV(ir.PrivateRoot(elem, length, local, shape=shape), ir.Const(I32, 0))

    def scratch_memory(self, fl: FunctionLowering, dtype: Any, node: ast.AST) -> PtrV:
        self.group_observed = True
        elem = element_type(as_dtype(dtype))
        size = as_dtype(dtype).itemsize
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


__all__ = ["F32", "KernelModule", "KernelSpec", "Lowered"]
