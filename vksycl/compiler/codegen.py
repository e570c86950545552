"""Codegen: typed IR to a SPIR-V module through spirv_gen's ModuleBuilder.

Before emitting, a pass walks the code reachable from the kernel: it orders device
functions callees-first (SPIR-V forbids recursion, so the call graph is a DAG), and finds
the push-constant fields and work-group arrays actually used, so unused kernel arguments
get no push-constant space.

Global memory is reached by address: a uint64 becomes a `PhysicalStorageBuffer` pointer
(OpConvertUToPtr) to the element's explicitly laid out type just before a load, store or
atomic, and every load and store through it says the alignment it may assume (Aligned).
Declaring the first such pointer switches the module to the PhysicalStorageBuffer64
addressing model; kernels that touch no global memory stay Logical. A `joint_matrix` is a
cooperative matrix (SPV_KHR_cooperative_matrix), which needs the Vulkan memory model: its
first use switches the module to it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from spirv_gen import ModuleBuilder

from . import ir
from .hoist import invariant_loads, load_key
from .passes import remove_dead_stores, straight
from .typesys import (
    BOOL,
    F64,
    U64,
    VOID,
    ArrayType,
    MatrixType,
    PtrType,
    Scalar,
    Struct,
    TupleType,
    Type,
    VecType,
    field_offsets,
    layout,
    mem_type,
    vec_type,
)

SPIRV_VERSION = (1, 3)
# the float operations a driver may contract (fuse) unless decorated NoContraction
_CONTRACTIBLE = frozenset(("OpFAdd", "OpFSub", "OpFMul", "OpFDiv", "OpFNegate"))


@dataclasses.dataclass
class Usage:
    functions: list[ir.Function]
    push: set[int]
    shared: list[ir.SharedRoot]


def _children(node: Any) -> Any:
    if isinstance(node, list | tuple):
        yield from node
    elif dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            if f.name in ("fn", "local", "param", "ty", "shape"):
                continue
            yield getattr(node, f.name)


def analyse(kernel: ir.Function) -> Usage:
    """The call tree (callees first) and the memory/arguments the code uses."""
    order: list[ir.Function] = []
    seen: set[int] = set()
    push: set[int] = set()
    shared: dict[int, ir.SharedRoot] = {}

    def visit_fn(fn: ir.Function) -> None:
        if id(fn) in seen:
            return
        seen.add(id(fn))
        remove_dead_stores(fn)
        stack: list[Any] = [fn.body]
        for node in ir.each_once(stack):
            if isinstance(node, ir.Call):
                visit_fn(node.fn)
            elif isinstance(node, ir.PushField):
                push.add(node.index)
            elif isinstance(node, ir.SharedRoot):
                shared.setdefault(id(node), node)
            elif isinstance(node, ir.ParamRoot):
                continue
            if isinstance(node, list | tuple) or dataclasses.is_dataclass(node):
                stack.extend(_children(node))
        order.append(fn)

    visit_fn(kernel)
    return Usage(order, push, list(shared.values()))


class Codegen:
    def __init__(self, entry_name: str, local_size: tuple[int, int, int],
                 args_in_memory: bool = False, ieee_floats: tuple[int, ...] = (),
                 contract: bool = True) -> None:
        self.b = ModuleBuilder(SPIRV_VERSION)
        self.ieee_floats = ieee_floats
        self.contract = contract
        self.b.capability("Shader")
        self.entry_name = entry_name
        self.local_size = local_size
        self.args_in_memory = args_in_memory
        self.addresses = False
        self.vulkan_model = False
        self.types: dict[Any, Any] = {}
        self.shared_vars: dict[int, Any] = {}
        self.fn_ids: dict[int, Any] = {}
        self.push_var: Any = None
        self.push_member: dict[int, int] = {}
        self.push_types: list[Scalar] = []

    # -- types ----------------------------------------------------------------------------
    def ty(self, t: Type, explicit: bool = False) -> Any:
        key = (t, explicit and isinstance(t, Struct | ArrayType))
        hit = self.types.get(key)
        if hit is not None:
            return hit
        b = self.b
        if isinstance(t, Scalar):
            if t.is_bool:
                r = b.type_bool()
            elif t.is_float:
                r = b.type_float(t.bits)
            else:
                r = b.type_int(t.bits, t.is_signed)
        elif t == VOID:
            r = b.type_void()
        elif isinstance(t, VecType) and t.count > 4:  # Vulkan's vectors hold up to 4
            stride = 4 * t.elem.nbytes if explicit else None
            r = b.type_array(self.ty(vec_type(t.elem, 4)), t.count // 4, stride)
        elif isinstance(t, VecType):
            r = b.type_vector(self.ty(t.elem), t.count)
        elif isinstance(t, Struct):
            members = [self.ty(self.mem(ft), explicit) for _, ft in t.fields]
            r = b.type_struct(members, offsets=field_offsets(t) if explicit else None,
                              name=t.name, member_names=[n for n, _ in t.fields])
        elif isinstance(t, ArrayType):
            stride = layout(t.elem)[0] if explicit else None
            r = b.type_array(self.ty(t.elem, explicit), t.length, stride)
        elif isinstance(t, TupleType):
            r = b.type_struct([self.ty(x) for x in t.items])
        elif isinstance(t, MatrixType):
            self.use_vulkan_model()
            r = b.op("TypeCooperativeMatrixKHR", self.ty(t.elem), b.u32(3), b.u32(t.rows),
                     b.u32(t.cols), b.u32(("a", "b", "accumulator").index(t.use)))
        else:
            raise TypeError(f"no SPIR-V type for {t!r}")
        self.types[key] = r
        return r

    @staticmethod
    def mem(t: Type) -> Type:
        return mem_type(t)

    def storage_caps(self, t: Type) -> None:
        if isinstance(t, VecType):
            self.storage_caps(t.elem)
        elif isinstance(t, Struct):
            for _, ft in t.fields:
                self.storage_caps(self.mem(ft))
        elif isinstance(t, Scalar) and t.bits == 8:
            self.b.capability("StorageBuffer8BitAccess")
            self.b.extension("SPV_KHR_8bit_storage")
        elif isinstance(t, Scalar) and t.bits == 16:
            self.b.capability("StorageBuffer16BitAccess")
            self.b.extension("SPV_KHR_16bit_storage")

    def physical_pointer(self, pointee: Any) -> Any:
        """The type of a PhysicalStorageBuffer pointer to `pointee` (declaring device
        addresses on first use)."""
        b = self.b
        if not self.addresses:
            self.addresses = True
            b.extension("SPV_KHR_physical_storage_buffer")
            b.capability("PhysicalStorageBufferAddresses")
            self.set_memory_model()
        return b.type_pointer("PhysicalStorageBuffer", pointee)

    def use_vulkan_model(self) -> None:
        """Cooperative matrices need the Vulkan memory model (and so device-scope atomics
        and barriers its device-scope capability)."""
        if not self.vulkan_model:
            self.vulkan_model = True
            self.b.capability("VulkanMemoryModel")
            self.b.capability("VulkanMemoryModelDeviceScope")
            self.set_memory_model()

    def set_memory_model(self) -> None:
        self.b.memory_model("PhysicalStorageBuffer64" if self.addresses else "Logical",
                            "Vulkan" if self.vulkan_model else "GLSL450")

    def root_pointer_type(self, root: ir.Root) -> Any:
        shape = root.shape if isinstance(root, ir.ParamRoot) else root
        arr = self.ty(ArrayType(self.mem(shape.elem), shape.length))
        sc = "Workgroup" if isinstance(shape, ir.SharedRoot) else "Function"
        return self.b.type_pointer(sc, arr)

    # -- module ---------------------------------------------------------------------------
    def module(self, kernel: ir.Function, usage: Usage, push_types: list[Scalar],
               globals_: frozenset[int] = frozenset()) -> bytes:
        """The module; `globals_` are the push fields holding device_global addresses."""
        b = self.b
        self.push_types = push_types
        self.invariant = invariant_loads(usage.functions, set(globals_), _children)
        used = sorted(usage.push)
        # the argument fields at their natural alignments: the push constants, or the
        # argument block whose address is then the one push constant
        offsets, off = [], 0
        for i in used:
            size = push_types[i].nbytes
            off = (off + size - 1) // size * size
            offsets.append(off)
            off += size
        self.push_offsets = dict(zip(used, offsets, strict=True))
        self.args_size = self.push_size = off
        self.push_member = {i: k for k, i in enumerate(used)}
        if used:
            st = b.type_struct([self.ty(push_types[i]) for i in used], offsets=offsets,
                               block=True, name="Args")
            if self.args_in_memory:
                for k in range(len(used)):
                    b.member_decorate(st, k, "NonWritable")
                self.block_pointer = self.physical_pointer(st)
                st = b.type_struct([self.ty(U64)], offsets=[0], block=True,
                                   name="ArgsAddress")
                self.push_size = 8
            self.push_var = b.variable(st, "PushConstant", name="args")
        for root in usage.shared:
            arr = self.ty(ArrayType(self.mem(root.elem), root.length))
            self.shared_vars[id(root)] = b.variable(arr, "Workgroup", name=root.name)
        for fn in usage.functions:
            self.function(fn, fn is kernel)
        self.keep_ieee_floats()
        return b.to_bytes()

    def keep_ieee_floats(self) -> None:
        """Asks the driver to keep infinities, NaNs and signed zeros of each float width
        the module uses, where the device can (`KernelSpec.ieee_floats`)."""
        used = sorted({t.bits for t, _ in self.types if isinstance(t, Scalar) and t.is_float})
        for bits in used:
            if bits in self.ieee_floats:
                self.b.execution_mode(self.entry_fn, "SignedZeroInfNanPreserve", bits)

    # -- functions ------------------------------------------------------------------------
    def function(self, fn: ir.Function, is_kernel: bool) -> None:
        b = self.b
        ptypes = []
        for p in fn.params:
            ptypes.append(self.root_pointer_type(p.root) if p.root is not None else self.ty(p.ty))
        f = b.begin_function(self.ty(fn.ret), ptypes, name=fn.name)
        self.fn_ids[id(fn)] = f.id
        self.params = {id(p): pid for p, pid in zip(fn.params, f.params, strict=True)}
        self.locals: dict[int, Any] = {}
        for local in fn.locals:
            t = self.ty(local.ty)
            init = b.constant_null(t) if isinstance(local.ty, ArrayType) else None
            self.locals[id(local)] = b.variable(t, "Function", initializer=init, name=local.name)
        self.scopes: list[dict[int, Any]] = [{}]
        self.loops: list[Any] = []
        self.ret_type = fn.ret
        if self.args_in_memory and self.push_member:
            # the argument block's pointer, in the entry block so every use sees it
            u64 = self.ty(U64)
            address = b.op("Load", u64, b.op("AccessChain", b.type_pointer(
                "PushConstant", u64), self.push_var, b.i32(0)))
            self.block = b.op("ConvertUToPtr", self.block_pointer, address)
            # and the arguments the function reads, loaded once: a driver cannot always
            # tell that the atomics and stores of a loop leave the block as it was
            self.block_args = {index: self.block_load(index) for index in sorted(
                {x.index for x in ir.walk(fn) if isinstance(x, ir.PushField)})}
        self.hoisted: dict[tuple, Any] = {}
        for key, load in self.invariant.get(id(fn), {}).items():
            ptr, aligned = self.chain(load.place)
            self.hoisted[key] = b.op("Load", self.ty(load.ty), ptr, *aligned)
        self.stmts(fn.body)
        if b.current_block is not None and fn.ret != VOID:
            b.ret(b.constant_null(self.ty(fn.ret)))
        b.end_function()
        if is_kernel:
            b.entry_point("GLCompute", f, self.entry_name)
            self.entry_fn = f
            b.execution_mode(f, "LocalSize", *self.local_size)

    def block_load(self, index: int) -> Any:
        """Argument `index` read from the argument block (`args_in_memory`)."""
        t = self.push_types[index]
        p = self.b.op("AccessChain", self.physical_pointer(self.ty(t)), self.block,
                      self.b.i32(self.push_member[index]))
        return self.b.op("Load", self.ty(t), p, "Aligned", t.nbytes)

    # -- statements -----------------------------------------------------------------------
    def stmts(self, body: list[ir.Stmt]) -> None:
        for s in body:
            if self.b.current_block is None:
                return
            self.stmt(s)

    def scoped(self, body: list[ir.Stmt]) -> None:
        self.scopes.append({})
        try:
            self.stmts(body)
        finally:
            self.scopes.pop()

    def stmt(self, s: ir.Stmt) -> None:
        b = self.b
        if isinstance(s, ir.Assign):
            b.op("Store", self.locals[id(s.local)], self.ev(s.value))
        elif isinstance(s, ir.Store):
            value = self.ev(s.value)
            ptr, aligned = self.chain(s.place)
            b.op("Store", ptr, value, *aligned)
        elif isinstance(s, ir.Eval):
            self.ev(s.value)
        elif isinstance(s, ir.MatrixStore):
            value = self.ev(s.value)
            ptr, aligned = self.chain(s.place)
            b.op("CooperativeMatrixStoreKHR", ptr, value, b.u32(s.layout), self.ev(s.stride),
                 *(aligned and ("Aligned", s.align)))
        elif isinstance(s, ir.If):
            c = self.ev(s.cond)
            with b.if_(c) as sel:
                self.scoped(s.then)
                if s.orelse:
                    sel.else_()
                    self.scoped(s.orelse)
        elif isinstance(s, ir.Switch):
            selector = self.ev(s.selector)
            with b.switch(selector) as sw:
                for literals, body in s.cases:
                    with sw.case(*literals):
                        self.scoped(body)
        elif isinstance(s, ir.Loop):
            self.loop(s)
        elif isinstance(s, ir.Break):
            self.loops[-1].break_()
        elif isinstance(s, ir.Continue):
            self.loops[-1].continue_()
        elif isinstance(s, ir.Return):
            if s.value is None:
                b.ret()
            else:
                b.ret(self.ev(s.value))
        else:
            raise TypeError(f"unknown statement {s!r}")

    def loop(self, s: ir.Loop) -> None:
        b = self.b
        with b.loop(s.control) as lp:
            self.loops.append(lp)
            self.scopes.append({})
            if s.cond is not None and not s.pre and straight(s.cond):
                lp.while_(self.ev(s.cond))
            else:
                self.stmts(s.pre)
                if s.cond is not None:
                    c = self.ev(s.cond)
                    with b.if_(b.op("LogicalNot", self.ty(s.cond.ty), c)):
                        lp.break_()
            self.stmts(s.body)
            self.scopes.pop()
            lp.continuing()
            self.scopes.append({})
            self.stmts(s.step)
            self.scopes.pop()
            self.loops.pop()

    # -- expressions ----------------------------------------------------------------------
    def ev(self, v: ir.Value) -> Any:
        key = id(v)
        for scope in reversed(self.scopes):
            hit = scope.get(key)
            if hit is not None:
                return hit[1]
        r = self.emit(v)
        self.scopes[-1][key] = (v, r)
        return r

    def emit(self, v: ir.Value) -> Any:
        b = self.b
        if isinstance(v, ir.Const):
            return self.const(v.ty, v.value)
        if isinstance(v, ir.Read):
            return b.op("Load", self.ty(v.ty), self.locals[id(v.local)])
        if isinstance(v, ir.ArgRead):
            return self.params[id(v.param)]
        if isinstance(v, ir.PushField):
            t = self.ty(v.ty)
            member = self.push_member[v.index]
            if not self.args_in_memory:
                p = b.op("AccessChain", b.type_pointer("PushConstant", t), self.push_var,
                         b.i32(member))
                return b.op("Load", t, p)
            return self.block_args[v.index]
        if isinstance(v, ir.Builtin):
            return self.builtin(v)
        if isinstance(v, ir.Op) and v.opname == "OpFRem" and v.ty == F64:
            # x - y * trunc(x / y), fused: lavapipe's float64 OpFRem loses doubles past
            # 2**31 as its Trunc does (`_rounded_f64`)
            x, y = v.args
            return self.ev(ir.Ext("Fma", F64, [ir.Op("OpFNegate", F64, [ir.Ext(
                "Trunc", F64, [ir.Op("OpFDiv", F64, [x, y])])]), y, x]))
        if isinstance(v, ir.Op):
            args = [self.operand(a) for a in v.args]
            if v.ty == VOID:
                return b.op(v.opname, *args)
            r = b.op(v.opname, self.ty(v.ty), *args)
            if not self.contract and v.opname in _CONTRACTIBLE:
                b.decorate(r, "NoContraction")
            return r
        if isinstance(v, ir.Ext):
            if v.name in ("Trunc", "Round") and v.ty == F64:
                return self.ev(_rounded_f64(v.name, v.args[0]))
            return b.glsl(v.name, self.ty(v.ty), *(self.ev(a) for a in v.args))
        if isinstance(v, ir.Cond):
            return self.cond(v)
        if isinstance(v, ir.Call):
            args = [self.root_id(a) if isinstance(a, ir.Root) else self.ev(a) for a in v.args]
            return b.op("FunctionCall", self.ty(v.ty), self.fn_ids[id(v.fn)], *args)
        if isinstance(v, ir.Extract):
            return b.op("CompositeExtract", self.ty(v.ty), self.ev(v.base), v.index)
        if isinstance(v, ir.Compose):
            return b.op("CompositeConstruct", self.ty(v.ty), *(self.ev(p) for p in v.parts))
        if isinstance(v, ir.Seq):
            self.stmts(v.stmts)
            return self.ev(v.value)
        if isinstance(v, ir.Load):
            hit = self.hoisted.get(load_key(v)) if self.hoisted else None
            if hit is not None:
                return hit
            ptr, aligned = self.chain(v.place)
            return b.op("Load", self.ty(v.ty), ptr, *aligned)
        if isinstance(v, ir.Atomic):
            return self.atomic(v)
        if isinstance(v, ir.MatrixLoad):
            ptr, aligned = self.chain(v.place)
            return b.op("CooperativeMatrixLoadKHR", self.ty(v.ty), ptr, b.u32(v.layout),
                        self.ev(v.stride), *(aligned and ("Aligned", v.align)))
        raise TypeError(f"unknown value {v!r}")

    def operand(self, a: Any) -> Any:
        if isinstance(a, ir.Lit):
            return a.value
        if isinstance(a, ir.ScopeId):
            return self.b.u32(a.value)
        if isinstance(a, ir.TypeRef):
            return self.ty(a.ty)
        return self.ev(a)

    def const(self, t: Type, value: Any) -> Any:
        assert isinstance(t, Scalar)
        b = self.b
        if t.is_bool:
            return b.constant(self.ty(t), bool(value))
        if t.is_float:
            return b.constant(self.ty(t), float(value))
        v = int(value)
        if not t.is_signed and v < 0:
            v += 1 << t.bits
        return b.constant(self.ty(t), v)

    def builtin(self, v: ir.Builtin) -> Any:
        b = self.b
        u32 = b.type_uint(32)
        if v.name in ("GlobalInvocationId", "LocalInvocationId", "WorkgroupId",
                      "NumWorkgroups"):
            vec = b.type_vector(u32, 3)
            raw = b.op("CompositeExtract", u32, b.load_builtin(v.name, vec), v.component)
        else:
            raw = b.load_builtin(v.name, u32)
        return b.op("Bitcast", self.ty(v.ty), raw)

    def cond(self, v: ir.Cond) -> Any:
        b = self.b
        c = self.ev(v.cond)
        if not v.pre_a and not v.pre_b and straight(v.a) and straight(v.b):
            return b.op("Select", self.ty(v.ty), c, self.ev(v.a), self.ev(v.b))
        with b.if_(c) as sel:
            self.scopes.append({})
            self.stmts(v.pre_a)
            ra = self.ev(v.a)
            self.scopes.pop()
            sel.else_()
            self.scopes.append({})
            self.stmts(v.pre_b)
            rb = self.ev(v.b)
            self.scopes.pop()
        return b.phi(self.ty(v.ty), (ra, sel.then_end), (rb, sel.else_end))

    def root_id(self, root: ir.Root) -> Any:
        if isinstance(root, ir.SharedRoot):
            return self.shared_vars[id(root)]
        if isinstance(root, ir.PrivateRoot):
            return self.locals[id(root.local)]
        if isinstance(root, ir.ParamRoot):
            return self.params[id(root.param)]
        raise TypeError(root)

    def chain(self, place: ir.Place) -> tuple[Any, tuple]:
        """A pointer to the place, and the memory operands an access through it needs."""
        b = self.b
        root = place.root
        members = [b.i32(m) for m in place.members]
        if isinstance(root, ir.GlobalRoot):
            elem = self.mem(root.elem)
            self.storage_caps(elem)
            ptr = b.op("ConvertUToPtr", self.physical_pointer(self.ty(elem, explicit=True)),
                       self.ev(place.index))
            if members:
                pt = self.physical_pointer(self.ty(place.ty, explicit=True))
                ptr = b.op("AccessChain", pt, ptr, *members)
            # an element (or member) is aligned to its type: pointer arguments are checked
            # at launch, and pointer arithmetic moves by whole elements; a vector read
            # through a pointer to its elements says what the address is known to be
            return ptr, ("Aligned", place.align or layout(place.ty)[1])
        shape = root.shape if isinstance(root, ir.ParamRoot) else root
        sc = "Workgroup" if isinstance(shape, ir.SharedRoot) else "Function"
        pt = b.type_pointer(sc, self.ty(place.ty))
        return b.op("AccessChain", pt, self.root_id(root), self.ev(place.index),
                    *members), ()

    def atomic(self, v: ir.Atomic) -> Any:
        b = self.b
        ptr, _ = self.chain(v.place)  # atomics take no memory operands
        scope, sem = b.u32(v.scope), b.u32(v.semantics)
        t = v.ty
        if isinstance(t, Scalar) and t.is_float and "EXT" in v.opname:
            if "FAdd" in v.opname:
                b.extension("SPV_EXT_shader_atomic_float_add")
                b.capability(f"AtomicFloat{t.bits}AddEXT")
            else:
                b.extension("SPV_EXT_shader_atomic_float_min_max")
                b.capability(f"AtomicFloat{t.bits}MinMaxEXT")
        if isinstance(t, Scalar) and t.bits == 64 and not t.is_float:
            b.capability("Int64Atomics")
        args = [self.ev(a) for a in v.args]
        if v.opname == "OpAtomicStore":
            return b.op("AtomicStore", ptr, scope, sem, *args)
        if v.opname == "OpAtomicCompareExchange":
            unequal = v.semantics & ~0xC
            if v.semantics & 0x8:
                unequal |= 0x2
            return b.op("AtomicCompareExchange", self.ty(t), ptr, scope, sem, b.u32(unequal),
                        *args)
        return b.op(v.opname, self.ty(t), ptr, scope, sem, *args)


__all__ = ["Codegen", "PtrType", "analyse"]


def _rounded_f64(name: str, x: ir.Value) -> ir.Value:
    """float64 Trunc and Round from Floor and Ceil: lavapipe (LLVM 15) returns doubles of
    2**31 and more unchanged from Trunc and Round (and OpFRem), halves and all."""
    negative = ir.Op("OpFOrdLessThan", BOOL, [x, ir.Const(F64, 0.0)])
    whole = ir.Op("OpSelect", F64, [negative, ir.Ext("Ceil", F64, [x]),
                                     ir.Ext("Floor", F64, [x])])
    if name == "Trunc":
        return whole
    half_or_more = ir.Op("OpFOrdGreaterThanEqual", BOOL, [
        ir.Ext("FAbs", F64, [ir.Op("OpFSub", F64, [x, whole])]), ir.Const(F64, 0.5)])
    return ir.Op("OpSelect", F64, [half_or_more, ir.Op("OpFAdd", F64, [
        whole, ir.Ext("FSign", F64, [x])]), whole])
