"""Work-item queries (`item`, `nd_item`, `group`, `sub_group`) and group algorithms.

SYCL dimension d of an N-dimensional range is Vulkan component N-1-d, so the last SYCL
dimension varies fastest, as in DPC++. One-dimensional kernels compute their group id as
`x + y * num_groups_x`, which lets the runtime split dispatches wider than the device's
maxComputeWorkGroupCount over y.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ..access import fence_space
from ..exceptions import errc
from . import ir
from .device import memory_scope
from .typesys import BOOL, I32, U32, U64, VOID, Scalar
from .values import ItemV, PyV

_INDEX_KIND_QUERY = {
    "id": "get_id", "item": "get_id", "range": "get_range", "global_id": "get_global_id",
    "local_id": "get_local_id", "group_id": "get_group_id", "global_range": "get_global_range",
    "local_range": "get_local_range", "group_range": "get_group_range",
}
# AcquireRelease, over UniformMemory (global) and WorkgroupMemory (local)
_BARRIER_SEM = {fence_space.global_and_local: 0x8 | 0x40 | 0x100,
                fence_space.global_space: 0x8 | 0x40, fence_space.local_space: 0x8 | 0x100}


def builtin(name: str, comp: int = 0) -> ir.Value:
    return ir.Builtin(name, comp, I32)


class Queries:
    def __init__(self, module: Any) -> None:
        self.m = module

    # building blocks -------------------------------------------------------------------
    def comp(self, d: int) -> int:
        return self.m.dims - 1 - d

    def local_id(self, d: int) -> ir.Value:
        return builtin("LocalInvocationId", self.comp(d))

    def local_range(self, d: int) -> ir.Value:
        return ir.Const(I32, self.m.local[d])

    def group_id(self, d: int) -> ir.Value:
        if self.m.dims == 1:
            return ir.Op("OpIAdd", I32, [builtin("WorkgroupId", 0), ir.Op("OpIMul", I32, [
                builtin("WorkgroupId", 1), builtin("NumWorkgroups", 0)])])
        if self.m.spec.fold_groups:
            return self.folded_group_id(self.comp(d))
        return builtin("WorkgroupId", self.comp(d))

    def folded_group_id(self, comp: int) -> ir.Value:
        """Component `comp` of the group id when the dispatch numbers work-groups
        linearly over x and y (more groups in one dimension than the device takes)."""
        linear = ir.Op("OpIAdd", I32, [builtin("WorkgroupId", 0), ir.Op("OpIMul", I32, [
            builtin("WorkgroupId", 1), builtin("NumWorkgroups", 0)])])
        for c in range(comp):
            linear = ir.Op("OpSDiv", I32, [linear, self.group_count(c)])
        if comp == self.m.dims - 1:
            return linear
        n = self.group_count(comp)
        quotient = ir.Op("OpSDiv", I32, [linear, n])
        return ir.Op("OpISub", I32, [linear, ir.Op("OpIMul", I32, [quotient, n])])

    def group_count(self, comp: int) -> ir.Value:
        """Work-groups along Vulkan component `comp` (ranges are rounded up)."""
        d = self.m.dims - 1 - comp
        size = self.local_range(d)
        return ir.Op("OpSDiv", I32, [ir.Op("OpIAdd", I32, [
            self.global_range(d), ir.Const(I32, self.m.local[d] - 1)]), size])

    def global_id(self, d: int, offset: bool = True) -> ir.Value:
        if self.m.item_override is not None:  # a coarsened copy of the body
            return self.m.item_override
        gid = ir.Op("OpIAdd", I32, [ir.Op("OpIMul", I32, [self.group_id(d), self.local_range(d)]),
                                     self.local_id(d)])
        if offset and self.m.has_offset:
            gid = ir.Op("OpIAdd", I32, [gid, self.m.launch_value("offset", d)])
        return gid

    def global_range(self, d: int) -> ir.Value:
        return self.m.launch_value("range", d)

    def group_range(self, d: int) -> ir.Value:
        return ir.Op("OpSDiv", I32, [self.global_range(d), self.local_range(d)])

    def linear(self, part: Any, ranges: Any) -> ir.Value:
        out = part(0)
        for d in range(1, self.m.dims):
            out = ir.Op("OpIAdd", I32, [ir.Op("OpIMul", I32, [out, ranges(d)]), part(d)])
        return out

    def guard(self) -> ir.Value:
        """True for work-items outside the real range (range kernels are rounded up)."""
        cond: ir.Value | None = None
        for d in range(self.m.dims):
            c = ir.Op("OpSGreaterThanEqual", BOOL, [self.global_id(d, offset=False),
                                                     self.global_range(d)])
            cond = c if cond is None else ir.Op("OpLogicalOr", BOOL, [cond, c])
        assert cond is not None
        return cond

    # the query methods ---------------------------------------------------------------
    def call(self, fl: Any, obj: ItemV, name: str, args: list[Any], node: ast.AST) -> Any:
        kind = obj.kind
        if kind in ("group", "sub_group") or name not in _GLOBAL_ONLY:
            self.m.group_observed = True
        if kind in _INDEX_KIND_QUERY and name in ("get", "__getitem__"):
            return self.index(fl, obj, args[0], node)
        if kind in ("range", "local_range", "global_range", "group_range") and name == "size":
            q = _INDEX_KIND_QUERY[kind]
            out = self.scalar_query(fl, q, 0, node)
            for d in range(1, obj.dims):
                out = ir.Op("OpIMul", I32, [out, self.scalar_query(fl, q, d, node)])
            return out
        table = _METHODS.get(kind, {})
        target = table.get(name)
        if target is None:
            hint = " (it needs an nd_range kernel, whose work-item is an nd_item)" \
                if kind in ("item", "id") and name in _METHODS["nd_item"] else ""
            raise fl.err(node, f"{kind} has no method {name}(){hint}")
        if target == "barrier":
            fl.emit(ir.Eval(barrier(2, space=self.fence_space(fl, args, node))))
            return PyV(None)
        if target.startswith("obj:"):
            if args:
                return self.scalar_query(fl, "get_group_id",
                                         self.dim(fl, args[0], obj.dims, node), node)
            self.m.need_nd(fl, node, name)
            return ItemV(target[4:], obj.dims)
        if target.startswith("sg_"):
            v = self.sub_group_value(target)
            if "linear" not in name:  # an id<1> or range<1> in SYCL 2020: v[0] works too
                self.m.one_d[id(v)] = v
            return v
        if target.startswith("lin_"):
            return self.linear_query(fl, target[4:], node)
        if target == "leader":
            if kind == "sub_group":
                return ir.Op("OpGroupNonUniformElect", BOOL, [ir.ScopeId(3)])
            return ir.Op("OpIEqual", BOOL, [builtin("LocalInvocationIndex"), ir.Const(I32, 0)])
        if target == "max_local_range":
            return ir.Const(I32, int(np.prod(self.m.local)))
        if not args:
            if obj.dims == 1:
                return self.scalar_query(fl, target, 0, node)
            return ItemV(_QUERY_KIND[target], obj.dims)
        return self.scalar_query(fl, target, self.dim(fl, args[0], obj.dims, node), node)

    def dim(self, fl: Any, v: Any, dims: int, node: ast.AST) -> int:
        if not isinstance(v, PyV) or not isinstance(v.obj, int):
            raise fl.err(node, "the dimension must be a constant integer")
        if not 0 <= v.obj < dims:
            raise fl.err(node, f"dimension {v.obj} is out of range for {dims} dimensions")
        return v.obj

    def index(self, fl: Any, obj: ItemV, index: Any, node: ast.AST) -> Any:
        if obj.kind not in ("id", "item", "global_id", "global_range", "range"):
            self.m.group_observed = True
        q = _INDEX_KIND_QUERY.get(obj.kind)
        if q is None:
            raise fl.err(node, f"a {obj.kind} cannot be indexed")
        return self.scalar_query(fl, q, self.dim(fl, index, obj.dims, node), node)

    def fence_space(self, fl: Any, args: list[Any], node: ast.AST) -> fence_space:
        """The memory `it.barrier([space])` orders: a `sycl.access.fence_space`."""
        if len(args) > 1:
            raise fl.err(node, "barrier() takes at most one argument, a "
                         "sycl.access.fence_space")
        if not args:
            return fence_space.global_and_local
        space = self.m.intr.const(fl, args[0], node)
        if not isinstance(space, fence_space):
            raise fl.err(node, "barrier's argument must be a sycl.access.fence_space "
                         f"(local_space, global_space or global_and_local), got {space!r}")
        return space

    def scalar_query(self, fl: Any, q: str, d: int, node: ast.AST) -> ir.Value:
        if q in ("get_id", "get_global_id"):
            return self.global_id(d)
        if q in ("get_range", "get_global_range"):
            return self.global_range(d)
        self.m.need_nd(fl, node, q)
        if q == "get_local_id":
            return self.local_id(d)
        if q == "get_local_range":
            return self.local_range(d)
        if q == "get_group_id":
            return self.group_id(d)
        if q == "get_group_range":
            return self.group_range(d)
        raise fl.err(node, f"unknown query {q}")

    def linear_query(self, fl: Any, what: str, node: ast.AST) -> ir.Value:
        if what == "global_id":
            return self.linear(self.global_id, self.global_range)
        self.m.need_nd(fl, node, what)
        if what == "local_id":
            return builtin("LocalInvocationIndex")
        if what == "group_id":
            return self.linear(self.group_id, self.group_range)
        if what == "group_range":
            out = self.group_range(0)
            for d in range(1, self.m.dims):
                out = ir.Op("OpIMul", I32, [out, self.group_range(d)])
            return out
        if what == "local_range":
            return ir.Const(I32, int(np.prod(self.m.local)))
        raise fl.err(node, f"unknown query {what}")

    def sub_group_value(self, what: str) -> ir.Value:
        self.m.uses_subgroups = True
        if what == "sg_local_range":
            # the work-items of this sub-group: fewer than the device's sub-group size in
            # a work-group smaller than it (NVIDIA's 32 lanes, 16 items), or in its last
            # sub-group when the work-group is not a multiple of it
            size = builtin("SubgroupSize")
            rest = ir.Op("OpISub", I32, [ir.Const(I32, int(np.prod(self.m.local))), ir.Op(
                "OpIMul", I32, [builtin("SubgroupId"), size])])
            return ir.Op("OpSelect", I32, [ir.Op("OpSLessThan", BOOL, [rest, size]), rest,
                                           size])
        if what == "sg_group_range":
            return sub_groups(int(np.prod(self.m.local)))
        return builtin({"sg_local_id": "SubgroupLocalInvocationId", "sg_group_id": "SubgroupId",
                        "sg_max_local_range": "SubgroupSize"}[what])


def sub_groups(work_items: int) -> ir.Value:
    """The sub-groups of a work-group of `work_items`, counted rather than read from
    NumSubgroups: lavapipe leaves a last, partial sub-group out of it (4 for 33 work-items
    of 8-lane sub-groups, whose last has SubgroupId 4)."""
    size = builtin("SubgroupSize")
    return ir.Op("OpSDiv", I32, [ir.Op("OpIAdd", I32, [ir.Const(I32, work_items - 1), size]),
                                 size])


# queries that do not reveal how work-items are grouped
_GLOBAL_ONLY = {"get_id", "get_range", "get_linear_id", "get_global_id", "get_global_range",
                "get_global_linear_id", "__getitem__", "get"}
_QUERY_KIND = {v: k for k, v in _INDEX_KIND_QUERY.items()}
_QUERY_KIND["get_id"] = "id"
_QUERY_KIND["get_global_id"] = "global_id"

_METHODS: dict[str, dict[str, str]] = {
    "item": {"get_id": "get_id", "get_range": "get_range", "get_linear_id": "lin_global_id"},
    "nd_item": {
        "get_global_id": "get_global_id", "get_local_id": "get_local_id",
        "get_group": "obj:group", "get_group_range": "get_group_range",
        "get_local_range": "get_local_range", "get_global_range": "get_global_range",
        "get_global_linear_id": "lin_global_id", "get_local_linear_id": "lin_local_id",
        "get_group_linear_id": "lin_group_id", "get_group_linear_range": "lin_group_range",
        "get_sub_group": "obj:sub_group", "barrier": "barrier",
    },
    "group": {
        "get_group_id": "get_group_id", "get_local_id": "get_local_id",
        "get_local_range": "get_local_range", "get_group_range": "get_group_range",
        "get_group_linear_id": "lin_group_id", "get_local_linear_id": "lin_local_id",
        "get_group_linear_range": "lin_group_range", "get_local_linear_range":
            "lin_local_range", "leader": "leader", "get_max_local_range": "max_local_range",
    },
    "sub_group": {
        "get_local_id": "sg_local_id", "get_local_linear_id": "sg_local_id",
        "get_local_range": "sg_local_range", "get_local_linear_range": "sg_local_range",
        "get_max_local_range": "sg_max_local_range", "get_group_id": "sg_group_id",
        "get_group_linear_id": "sg_group_id", "get_group_range": "sg_group_range",
        "get_group_linear_range": "sg_group_range", "leader": "leader",
    },
}
_METHODS["id"] = _METHODS["item"]


def barrier(scope: int, memory_scope: int | None = None,
            space: fence_space = fence_space.global_and_local) -> ir.Op:
    """A control barrier of `scope` over the memory of `space` (work-group and global
    memory unless given), seen at `memory_scope` (the barrier's own scope unless given)."""
    seen = scope if memory_scope is None else memory_scope
    return ir.Op("OpControlBarrier", VOID, [ir.ScopeId(scope), ir.ScopeId(seen),
                                            ir.ScopeId(_BARRIER_SEM[space])])


# -- group algorithms -----------------------------------------------------------------------

_GROUP_OPS = {  # name -> (signed int, unsigned int, float, bool)
    "plus": ("IAdd", "IAdd", "FAdd", None), "multiplies": ("IMul", "IMul", "FMul", None),
    "minimum": ("SMin", "UMin", "FMin", None), "maximum": ("SMax", "UMax", "FMax", None),
    "bit_and": ("BitwiseAnd", "BitwiseAnd", None, "LogicalAnd"),
    "bit_or": ("BitwiseOr", "BitwiseOr", None, "LogicalOr"),
    "bit_xor": ("BitwiseXor", "BitwiseXor", None, "LogicalNotEqual"),
    "logical_and": (None, None, None, "LogicalAnd"), "logical_or": (None, None, None,
                                                                   "LogicalOr"),
}


def _identity(op: str, t: Scalar) -> Any:
    if op in ("plus", "bit_or", "bit_xor", "logical_or"):
        return False if t.is_bool else 0
    if op in ("multiplies",):
        return 1
    if op in ("bit_and", "logical_and"):
        return True if t.is_bool else (-1 if t.is_signed else (1 << t.bits) - 1)
    info = np.finfo(t.dtype) if t.is_float else np.iinfo(t.dtype)
    if op == "minimum":
        return float("inf") if t.is_float else int(info.max)
    return float("-inf") if t.is_float else int(info.min)


class Groups:
    """Group functions and algorithms over a `group` or a `sub_group`."""

    def __init__(self, module: Any) -> None:
        self.m = module

    def call(self, fl: Any, name: str, args: list[Any], kwargs: dict[str, Any],
             node: ast.AST) -> Any:
        if not args or not isinstance(args[0], ItemV) or args[0].kind not in ("group",
                                                                               "sub_group"):
            raise fl.err(node, f"{name} needs a group or sub_group as its first argument")
        g = args[0]
        self.m.group_observed = True
        self.m.need_nd(fl, node, name)
        sub = g.kind == "sub_group"
        if sub:
            self.m.uses_subgroups = True
        if name == "group_barrier":
            scope = 3 if sub else 2
            fl.emit(ir.Eval(barrier(scope, self.fence_scope(fl, scope, args[1:], kwargs,
                                                            node))))
            return PyV(None)
        if name in ("reduce_over_group", "inclusive_scan_over_group",
                    "exclusive_scan_over_group"):
            return self.algorithm(fl, g, name, args[1:], node)
        x = fl.scalar(args[1], node) if len(args) > 1 else None
        if name in ("any_of_group", "all_of_group", "none_of_group"):
            pred = fl.truth(args[1], node)
            op = "OpGroupNonUniformAll" if name == "all_of_group" else "OpGroupNonUniformAny"
            if sub:
                r = ir.Op(op, BOOL, [ir.ScopeId(3), pred])
            else:
                r = fl.convert(self.work_group(fl, "bit_and" if name == "all_of_group"
                                               else "bit_or", fl.convert(pred, I32), node,
                                               "reduce"), BOOL)
            return ir.Op("OpLogicalNot", BOOL, [r]) if name == "none_of_group" else r
        assert x is not None
        ty = x.ty
        if ty.is_bool:
            x = fl.convert(x, I32)
        if name in ("group_broadcast", "select_from_group"):
            idx = fl.convert(fl.scalar(args[2], node), I32) if len(args) > 2 else \
                ir.Const(I32, 0)
            if sub:
                r = ir.Op("OpGroupNonUniformShuffle", x.ty, [ir.ScopeId(3), x,
                                                              fl.convert(idx, U32)])
            else:
                r = self.broadcast(fl, x, idx)
            return fl.convert(r, ty) if ty.is_bool else r
        if not sub:
            raise fl.err(node, f"{name} works on a sub_group")
        delta = fl.convert(fl.scalar(args[2], node), U32)
        if name == "shift_group_right" and x.ty.bits == 64:
            # as two 32-bit halves: LLVM 15 (lavapipe) crashes compiling a 64-bit
            # ShuffleUp, or a 64-bit Shuffle from a lane computed from the lane's own id
            bits = ir.Op("OpBitcast", U64, [x])
            halves = [ir.Op("OpUConvert", U32, [b]) for b in (bits, ir.Op(
                "OpShiftRightLogical", U64, [bits, ir.Const(U64, 32)]))]
            lo, hi = (ir.Op("OpUConvert", U64, [ir.Op("OpGroupNonUniformShuffleUp", U32, [
                ir.ScopeId(3), h, delta])]) for h in halves)
            return ir.Op("OpBitcast", x.ty, [ir.Op("OpBitwiseOr", U64, [lo, ir.Op(
                "OpShiftLeftLogical", U64, [hi, ir.Const(U64, 32)])])])
        op = {"shift_group_left": "OpGroupNonUniformShuffleDown",
              "shift_group_right": "OpGroupNonUniformShuffleUp",
              "permute_group_by_xor": "OpGroupNonUniformShuffleXor"}[name]
        r = ir.Op(op, x.ty, [ir.ScopeId(3), x, delta])
        return fl.convert(r, ty) if ty.is_bool else r

    def fence_scope(self, fl: Any, scope: int, rest: list[Any], kwargs: dict[str, Any],
                    node: ast.AST) -> int:
        """The SPIR-V scope of `group_barrier(g[, fence_scope])`'s fence: the group's own
        unless a wider `sycl.memory_scope` is given (a narrower one fences the group's
        scope anyway, a stronger fence than asked for)."""
        given = list(rest)
        if "fence_scope" in kwargs:
            given.append(kwargs["fence_scope"])
        if len(given) > 1 or set(kwargs) - {"fence_scope"}:
            raise fl.err(node, "group_barrier(g[, fence_scope]) takes a group and a "
                         "sycl.memory_scope")
        if not given:
            return scope
        wanted = self.m.intr.const(fl, given[0], node)
        if not isinstance(wanted, memory_scope):
            raise fl.err(node, "group_barrier's fence_scope must be a sycl.memory_scope, "
                         f"got {wanted!r}")
        if wanted is memory_scope.system:
            raise fl.err(node, "group_barrier(g, memory_scope.system): a Vulkan kernel "
                         "fences at most device scope", errc.kernel_not_supported)
        return min(int(wanted), scope)

    def algorithm(self, fl: Any, g: ItemV, name: str, rest: list[Any], node: ast.AST) -> Any:
        if len(rest) == 2:
            x, opobj = rest
            init = None
        elif len(rest) == 3:
            x, init, opobj = rest
        else:
            raise fl.err(node, f"{name}(g, x, [init,] binary_op)")
        if not isinstance(opobj, PyV) or not hasattr(opobj.obj, "op"):
            raise fl.err(node, f"{name} needs a SYCL function object (sycl.plus(), ...)")
        op = opobj.obj.op
        v = fl.scalar(x, node)
        if init is not None:
            v = fl.convert(v, fl.scalar(init, node, v.ty).ty if not isinstance(
                init, PyV) else v.ty)
        kind = {"reduce_over_group": "reduce", "inclusive_scan_over_group": "inclusive",
                "exclusive_scan_over_group": "exclusive"}[name]
        if g.kind == "sub_group":
            r = self.sub_group_op(fl, op, v, kind, node)
        else:
            r = self.work_group(fl, op, v, node, kind)
        if init is not None:
            iv = fl.convert(fl.scalar(init, node, v.ty), v.ty)
            r = self.combine(fl, op, iv, r, node)
        return r

    def opname(self, fl: Any, op: str, t: Scalar, node: ast.AST) -> str:
        names = _GROUP_OPS[op]
        n = names[3] if t.is_bool else names[2] if t.is_float else names[0] if t.is_signed \
            else names[1]
        if n is None:
            raise fl.err(node, f"{op} does not apply to {t!r}")
        return n

    def combine(self, fl: Any, op: str, a: ir.Value, b: ir.Value, node: ast.AST) -> ir.Value:
        n = self.opname(fl, op, a.ty, node)
        if n in ("SMin", "UMin", "FMin", "SMax", "UMax", "FMax"):
            return ir.Ext(n, a.ty, [a, b])
        return ir.Op("Op" + n, a.ty, [a, b])

    def sub_group_op(self, fl: Any, op: str, v: ir.Value, kind: str, node: ast.AST) -> ir.Value:
        n = self.opname(fl, op, v.ty, node)
        group_op = {"reduce": "Reduce", "inclusive": "InclusiveScan",
                    "exclusive": "ExclusiveScan"}[kind]
        self.m.uses_subgroups = True
        return ir.Op("OpGroupNonUniform" + n, v.ty, [ir.ScopeId(3), ir.Lit(group_op), v])

    def broadcast(self, fl: Any, x: ir.Value, idx: ir.Value) -> ir.Value:
        scratch = self.m.group_scratch(x.ty)
        lid = builtin("LocalInvocationIndex")
        fl.emit(ir.If(ir.Op("OpIEqual", BOOL, [lid, idx]),
                      [ir.Store(ir.Place(scratch, ir.Const(I32, 0), (), x.ty), x)], []))
        fl.emit(ir.Eval(barrier(2)))
        out = fl.new_local("bcast", x.ty)
        fl.emit(ir.Assign(out, ir.Load(ir.Place(scratch, ir.Const(I32, 0), (), x.ty))))
        fl.emit(ir.Eval(barrier(2)))
        return ir.Read(out)

    def work_group(self, fl: Any, op: str, v: ir.Value, node: ast.AST, kind: str) -> ir.Value:
        """Work-group reduce/scan: sub-group results through work-group memory, where
        the sub-groups are known to be runs of the work-group's linear ids; else in
        work-group memory alone."""
        if not self.sub_groups_are_runs():
            return self.in_work_group_memory(fl, op, v, node, kind)
        t = v.ty
        self.m.uses_subgroups = True
        scratch = self.m.group_scratch(t)
        total = self.sub_group_op(fl, op, v, "reduce", node)
        part = None if kind == "reduce" else self.sub_group_op(fl, op, v, kind, node)
        tl = fl.new_local("wg.total", t)
        fl.emit(ir.Assign(tl, total))
        if part is not None:
            pl = fl.new_local("wg.part", t)
            fl.emit(ir.Assign(pl, part))
        sid, lane = builtin("SubgroupId"), builtin("SubgroupLocalInvocationId")
        fl.emit(ir.If(ir.Op("OpIEqual", BOOL, [lane, ir.Const(I32, 0)]),
                      [ir.Store(ir.Place(scratch, sid, (), t), ir.Read(tl))], []))
        fl.emit(ir.Eval(barrier(2)))
        # the sub-groups' results (those before this one's, for a scan): each of the
        # sub-group's lanes adds up every lanes-th of them, then the sub-group adds its
        # lanes' sums, so a work-item reads a few results, not all of them (a last,
        # partial sub-group has fewer lanes)
        acc = fl.new_local("wg.acc", t)
        i = fl.new_local("wg.i", I32)
        fl.emit(ir.Assign(acc, ir.Const(t, _identity(op, t))))
        fl.emit(ir.Assign(i, lane))
        size = int(np.prod(self.m.local))
        width = builtin("SubgroupSize")
        lanes = fl.new_local("wg.lanes", I32)
        fl.emit(ir.Assign(lanes, ir.Ext("SMin", I32, [width, ir.Op("OpISub", I32, [
            ir.Const(I32, size), ir.Op("OpIMul", I32, [sid, width])])])))
        limit = sub_groups(size) if kind == "reduce" else builtin("SubgroupId")
        body = [ir.Assign(acc, self.combine(fl, op, ir.Read(acc),
                                            ir.Load(ir.Place(scratch, ir.Read(i), (), t)),
                                            node))]
        step = [ir.Assign(i, ir.Op("OpIAdd", I32, [ir.Read(i), ir.Read(lanes)]))]
        fl.emit(ir.Loop([], ir.Op("OpSLessThan", BOOL, [ir.Read(i), limit]), body, step))
        fl.emit(ir.Assign(acc, self.sub_group_op(fl, op, ir.Read(acc), "reduce", node)))
        fl.emit(ir.Eval(barrier(2)))
        if part is None:
            return ir.Read(acc)
        return self.combine(fl, op, ir.Read(acc), ir.Read(pl), node)

    def sub_groups_are_runs(self) -> bool:
        """Whether the work-group's sub-groups are runs of its linear ids, numbered by
        SubgroupId: in one dimension, or rows a whole number of sub-groups wide. lavapipe
        makes each narrower row a sub-group of its own while numbering them as if they
        were full (a 4x4 work-group of 8-lane sub-groups: four sub-groups, ids 0, 0, 1, 1)."""
        local = self.m.local
        target = self.m.spec.matrix
        lanes = target.sub_group_size if target is not None else 0
        return len(local) == 1 or (lanes > 0 and local[-1] % lanes == 0)

    def in_work_group_memory(self, fl: Any, op: str, v: ir.Value, node: ast.AST,
                             kind: str) -> ir.Value:
        """Work-group reduce/scan without sub-groups: a scan by doubling distances (a
        barrier each), whose last element is the reduction."""
        t = v.ty
        scratch = self.m.group_scratch(t)
        n = int(np.prod(self.m.local))
        lid = builtin("LocalInvocationIndex")
        at = lambda i: ir.Place(scratch, i, (), t)
        mine = fl.new_local("wg.scan", t)
        fl.emit(ir.Assign(mine, v))
        fl.emit(ir.Store(at(lid), v))
        fl.emit(ir.Eval(barrier(2)))
        distance = 1
        while distance < n:
            before = ir.Op("OpISub", I32, [lid, ir.Const(I32, distance)])
            step = [ir.Assign(mine, self.combine(fl, op, ir.Load(at(before)), ir.Read(mine),
                                                 node))]
            fl.emit(ir.If(ir.Op("OpSGreaterThanEqual", BOOL, [lid, ir.Const(I32, distance)]),
                          step, []))
            fl.emit(ir.Eval(barrier(2)))
            fl.emit(ir.Store(at(lid), ir.Read(mine)))
            fl.emit(ir.Eval(barrier(2)))
            distance *= 2
        out = fl.new_local("wg.out", t)
        if kind == "inclusive":
            fl.emit(ir.Assign(out, ir.Read(mine)))
        elif kind == "reduce":
            fl.emit(ir.Assign(out, ir.Load(at(ir.Const(I32, n - 1)))))
        else:
            first = ir.Op("OpIEqual", BOOL, [lid, ir.Const(I32, 0)])
            fl.emit(ir.Assign(out, ir.Const(t, _identity(op, t))))
            fl.emit(ir.If(first, [], [ir.Assign(out, ir.Load(at(ir.Op(
                "OpISub", I32, [lid, ir.Const(I32, 1)]))))]))
        fl.emit(ir.Eval(barrier(2)))
        return ir.Read(out)

