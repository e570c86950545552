"""What a compute module asks of its caller, read from the SPIR-V itself: entry points,
local size, storage-buffer bindings, the push-constant block's layout, capabilities, and
the bytes of work-group and private memory it declares.

Kernels built from GLSL or SPIR-V take their arguments by index: first the storage
buffers in binding order, then the members of the push-constant block in declaration
order (each a scalar, or a vector/array/struct given as a sequence of its scalars).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import spirv_gen

from ..exceptions import errc, exception


@dataclass(frozen=True)
class Leaf:
    """One scalar of a push-constant member: its byte offset and type."""

    offset: int
    dtype: np.dtype


@dataclass
class Argument:
    """One kernel argument: a storage buffer (bound to `binding`) or a push constant."""

    index: int
    name: str
    kind: str  # "buffer" or "scalar"
    binding: int = -1
    element: np.dtype | None = None  # a buffer holding one array of scalars: their type
    leaves: tuple[Leaf, ...] = ()
    type_name: str = ""

    def describe(self) -> str:
        if self.kind == "buffer":
            return f"{self.name}: buffer (binding {self.binding}" + (
                f", {self.element} elements)" if self.element is not None else ")")
        return f"{self.name}: {self.type_name} (push constant at {self.leaves[0].offset})"


@dataclass
class EntryPoint:
    name: str
    function: int
    local_size: tuple[int, int, int]  # x, y, z


@dataclass
class Reflection:
    entry_points: list[EntryPoint]
    args: list[Argument]
    push_size: int
    num_buffers: int
    capabilities: tuple[str, ...]
    workgroup_bytes: int
    private_bytes: int
    problems: list[str] = field(default_factory=list)


_SCALAR_NAMES = {("i", 1): "int8", ("i", 2): "int16", ("i", 4): "int32", ("i", 8): "int64",
                 ("u", 1): "uint8", ("u", 2): "uint16", ("u", 4): "uint32",
                 ("u", 8): "uint64", ("f", 2): "float16", ("f", 4): "float32",
                 ("f", 8): "float64"}


class _Types:
    """The module's types, constants and decorations, by id."""

    def __init__(self, module: spirv_gen.Module) -> None:
        self.types: dict[int, tuple] = {}
        self.constants: dict[int, Any] = {}
        self.spec_composites: dict[int, list[int]] = {}
        self.decorations: dict[int, dict[str, list]] = {}
        self.member_decorations: dict[tuple[int, int], dict[str, list]] = {}
        self.names: dict[int, str] = {}
        self.member_names: dict[tuple[int, int], str] = {}
        self.variables: list[tuple[int, int, str]] = []  # (id, pointer type, storage class)
        self.entry_points: list[tuple[str, int, str]] = []
        self.modes: dict[int, dict[str, list]] = {}
        self.capabilities: list[str] = []
        for _inst, rt, rid, ops in module.decoded():
            self._learn(_inst.opname, rt, rid, ops)

    def _learn(self, op: str, rt: Any, rid: Any, ops: list) -> None:
        t = self.types
        if op == "OpTypeInt":
            t[rid] = ("int", ops[0], bool(ops[1]))
        elif op == "OpTypeFloat":
            t[rid] = ("float", ops[0])
        elif op == "OpTypeBool":
            t[rid] = ("bool",)
        elif op == "OpTypeVector":
            t[rid] = ("vector", int(ops[0]), ops[1])
        elif op == "OpTypeArray":
            t[rid] = ("array", int(ops[0]), int(ops[1]))
        elif op == "OpTypeRuntimeArray":
            t[rid] = ("rtarray", int(ops[0]))
        elif op == "OpTypeStruct":
            t[rid] = ("struct", [int(m) for m in ops])
        elif op == "OpTypePointer":
            t[rid] = ("pointer", ops[0], int(ops[1]))
        elif op in ("OpTypeImage", "OpTypeSampler", "OpTypeSampledImage",
                    "OpTypeAccelerationStructureKHR"):
            t[rid] = ("opaque", op[6:])
        elif op in ("OpConstant", "OpSpecConstant"):
            self.constants[rid] = ops[0]
        elif op in ("OpConstantComposite", "OpSpecConstantComposite"):
            self.spec_composites[rid] = [int(c) for c in ops]
        elif op == "OpDecorate":
            self.decorations.setdefault(int(ops[0]), {})[ops[1]] = ops[2:]
        elif op == "OpMemberDecorate":
            self.member_decorations.setdefault((int(ops[0]), ops[1]), {})[ops[2]] = ops[3:]
        elif op == "OpName":
            self.names[int(ops[0])] = ops[1]
        elif op == "OpMemberName":
            self.member_names[(int(ops[0]), ops[1])] = ops[2]
        elif op == "OpVariable":
            self.variables.append((int(rid), int(rt), ops[0]))
        elif op == "OpEntryPoint":
            self.entry_points.append((ops[0], int(ops[1]), ops[2]))
        elif op == "OpExecutionMode" or op == "OpExecutionModeId":
            self.modes.setdefault(int(ops[0]), {})[ops[1]] = ops[2:]
        elif op == "OpCapability":
            self.capabilities.append(ops[0])

    # -- sizes ---------------------------------------------------------------------------
    def size(self, tid: int) -> int:
        d = self.types.get(tid, ("opaque",))
        kind = d[0]
        if kind in ("int", "float"):
            return d[1] // 8
        if kind == "bool":
            return 4
        if kind == "vector":
            return self.size(d[1]) * d[2]
        if kind == "array":
            stride = self.decorations.get(tid, {}).get("ArrayStride")
            n = int(self.constants.get(d[2], 0))
            return n * (stride[0] if stride else self.size(d[1]))
        if kind == "struct":
            end = 0
            offset = 0
            for k, m in enumerate(d[1]):
                off = self.member_decorations.get((tid, k), {}).get("Offset")
                offset = off[0] if off else offset
                offset += self.size(m)
                end = max(end, offset)
            return end
        if kind == "pointer":
            return 8
        return 0

    def scalar_dtype(self, tid: int) -> np.dtype | None:
        d = self.types.get(tid)
        if d is None:
            return None
        if d[0] == "int":
            return np.dtype(f"{'i' if d[2] else 'u'}{d[1] // 8}")
        if d[0] == "float":
            return np.dtype(f"f{d[1] // 8}")
        return None

    def leaves(self, tid: int, offset: int) -> list[Leaf]:
        d = self.types.get(tid, ("opaque",))
        dt = self.scalar_dtype(tid)
        if dt is not None:
            return [Leaf(offset, dt)]
        if d[0] == "vector":
            n = self.size(d[1])
            return [leaf for k in range(d[2]) for leaf in self.leaves(d[1], offset + k * n)]
        if d[0] == "array":
            stride = self.decorations.get(tid, {}).get("ArrayStride")
            step = stride[0] if stride else self.size(d[1])
            n = int(self.constants.get(d[2], 0))
            return [leaf for k in range(n) for leaf in self.leaves(d[1], offset + k * step)]
        if d[0] == "struct":
            out = []
            for k, m in enumerate(d[1]):
                off = self.member_decorations.get((tid, k), {}).get("Offset", [0])[0]
                out += self.leaves(m, offset + off)
            return out
        raise exception(errc.build, f"a push constant of type {d[0]} cannot be a kernel "
                        "argument")

    def type_name(self, tid: int) -> str:
        d = self.types.get(tid, ("opaque",))
        dt = self.scalar_dtype(tid)
        if dt is not None:
            return _SCALAR_NAMES[(dt.kind, dt.itemsize)]
        if d[0] == "vector":
            return f"{self.type_name(d[1])}[{d[2]}]"
        if d[0] == "array":
            return f"{self.type_name(d[1])}[{int(self.constants.get(d[2], 0))}]"
        if d[0] == "struct":
            return self.names.get(tid, "struct")
        return d[0]


def _local_size(types: _Types, fn: int) -> tuple[int, int, int]:
    for cid, parts in types.spec_composites.items():
        if types.decorations.get(cid, {}).get("BuiltIn") == ["WorkgroupSize"]:
            return tuple(int(types.constants.get(p, 1)) for p in parts)  # type: ignore[return-value]
    modes = types.modes.get(fn, {})
    if "LocalSize" in modes:
        x, y, z = modes["LocalSize"][:3]
        return int(x), int(y), int(z)
    if "LocalSizeId" in modes:
        return tuple(int(types.constants.get(int(i), 1)) for i in modes["LocalSizeId"][:3])  # type: ignore[return-value]
    return 1, 1, 1


def reflect(spirv: bytes) -> Reflection:
    """The reflection record of a compute module; `errc.build` for what Vulkan through
    Kompute cannot bind (descriptor sets other than 0, uniform buffers, images)."""
    try:
        module = spirv_gen.read(spirv)
    except spirv_gen.SpirvError as ex:
        raise exception(errc.build, f"not a SPIR-V module: {ex}") from None
    types = _Types(module)
    entries = [EntryPoint(name, fn, _local_size(types, fn))
               for model, fn, name in types.entry_points if model == "GLCompute"]
    buffers: list[Argument] = []
    push: list[Argument] = []
    push_size = 0
    workgroup = private = 0
    for vid, ptype, storage in types.variables:
        pointee = types.types.get(ptype, ("pointer", storage, 0))[2]
        deco = types.decorations.get(vid, {})
        name = types.names.get(vid) or types.names.get(pointee, f"%{vid}")
        if storage == "Workgroup":
            workgroup += types.size(pointee)
        elif storage in ("Function", "Private"):
            private += types.size(pointee)
        elif storage in ("StorageBuffer", "Uniform"):
            block = types.decorations.get(pointee, {})
            if storage == "Uniform" and "BufferBlock" not in block:
                raise exception(errc.build, f"{name} is a uniform buffer; kernels from source "
                                "take storage buffers (Kompute binds storage buffers only)")
            if deco.get("DescriptorSet", [0])[0] != 0:
                raise exception(errc.build, f"{name} is in descriptor set "
                                f"{deco['DescriptorSet'][0]}; kernels use set 0 only")
            members = types.types.get(pointee, ("struct", []))[1]
            element = None
            if len(members) == 1 and types.types.get(members[0], ("",))[0] == "rtarray":
                element = types.scalar_dtype(types.types[members[0]][1])
            buffers.append(Argument(-1, name, "buffer", deco.get("Binding", [0])[0], element))
        elif storage == "PushConstant":
            members = types.types.get(pointee, ("struct", []))[1]
            for k, m in enumerate(members):
                off = types.member_decorations.get((pointee, k), {}).get("Offset", [0])[0]
                leaves = tuple(types.leaves(m, off))
                mname = types.member_names.get((pointee, k), f"{name}.{k}")
                push.append(Argument(-1, mname, "scalar", leaves=leaves,
                                     type_name=types.type_name(m)))
            push_size = -(-types.size(pointee) // 4) * 4
        elif storage == "UniformConstant":
            raise exception(errc.build, f"{name} is an image or sampler; kernels from source "
                            "take storage buffers and push constants only")
    buffers.sort(key=lambda a: a.binding)
    bindings = [a.binding for a in buffers]
    if bindings != list(range(len(bindings))):
        raise exception(errc.build, f"storage buffers are bound at {bindings}; kernels from "
                        "source must use bindings 0, 1, 2... in set 0 (Kompute's layout)")
    args = buffers + push
    for i, a in enumerate(args):
        a.index = i
    return Reflection(entries, args, push_size, len(buffers), tuple(types.capabilities),
                      workgroup, private)


__all__ = ["Argument", "EntryPoint", "Leaf", "Reflection", "reflect"]
