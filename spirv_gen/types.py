"""Types and constants of a module being built: deduplicated, with the capabilities their
widths need, and specialization constants."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from .errors import BuildError
from .grammar import InstructionInfo
from .words import Id, number_words

# Capabilities that scalar widths need (the grammar cannot say: they depend on a literal).
_INT_WIDTH_CAPS = {8: "Int8", 16: "Int16", 64: "Int64"}
_FLOAT_WIDTH_CAPS = {16: "Float16", 64: "Float64"}


class TypeBuilder:
    """The type and constant half of :class:`~spirv_gen.builder.ModuleBuilder` (a mixin: it
    uses the builder's emitter and caches)."""

    # types ---------------------------------------------------------------------------
    def _type(self, info: InstructionInfo, args: tuple) -> Id:
        quick = (info.opcode, *args)
        t = self._cache.get(quick)
        if t is not None:
            return t
        t = self._cache[quick] = self._new_type(info, args)
        return t

    def _new_type(self, info: InstructionInfo, args: tuple) -> Id:
        words = self.encode(info, args)
        key = (info.opcode, *words)
        t = self._cache.get(key)
        if t is None:
            t = self._cache[key] = self.new_id()
            self._globals += ((len(words) + 2) << 16 | info.opcode, t, *words)
            self._types[t] = (info.opname, *args)
            if info.opname == "OpTypeInt":
                self._scalars[t] = (args[0], False, bool(args[1]))
                cap = _INT_WIDTH_CAPS.get(args[0])
                if cap:
                    self.capability(cap)
            elif info.opname == "OpTypeFloat":
                self._scalars[t] = (args[0], True, True)
                cap = _FLOAT_WIDTH_CAPS.get(args[0])
                if cap and len(args) == 1:
                    self.capability(cap)
        return t

    def type_void(self) -> Id:
        return self.op("TypeVoid")

    def type_bool(self) -> Id:
        return self.op("TypeBool")

    def type_int(self, width: int = 32, signed: bool = True) -> Id:
        """An integer type; widths 8/16/64 declare Int8/Int16/Int64."""
        return self.op("TypeInt", width, int(signed))

    def type_uint(self, width: int = 32) -> Id:
        return self.op("TypeInt", width, 0)

    def type_float(self, width: int = 32) -> Id:
        """A float type; widths 16/64 declare Float16/Float64."""
        return self.op("TypeFloat", width)

    def type_vector(self, component: Id, count: int) -> Id:
        return self.op("TypeVector", component, count)

    def type_array(self, element: Id, length: int | Id, stride: int | None = None) -> Id:
        """A fixed-size array (length a number or a constant id); ``stride`` decorates
        ArrayStride, as explicitly laid out storage needs."""
        n = length if length.__class__ is Id else self.u32(length)
        if stride is None:
            return self.op("TypeArray", element, n)
        return self._strided(("OpTypeArray", element, n, stride), (element, n), stride)

    def type_runtime_array(self, element: Id, stride: int | None = None) -> Id:
        if stride is None:
            return self.op("TypeRuntimeArray", element)
        return self._strided(("OpTypeRuntimeArray", element, stride), (element,), stride)

    def _strided(self, key: tuple, args: tuple, stride: int) -> Id:
        """Arrays with a stride are types distinct from the unstrided one and from each
        other, so a stride never conflicts with another use of the same element type."""
        t = self._cache.get(key)
        if t is None:
            t = self._emit_to(self._globals, self.grammar.instruction(key[0]), args, None)
            self._types[t] = (key[0], *args)
            self.decorate(t, "ArrayStride", stride)
            self._cache[key] = t
        return t

    def type_struct(
        self,
        members: Sequence[Id],
        offsets: Sequence[int] | None = None,
        block: bool = False,
        name: str | None = None,
        member_names: Sequence[str] | None = None,
    ) -> Id:
        """A new struct type (structs are never merged: each may carry its own
        decorations). ``offsets`` decorates member Offsets; ``block`` decorates Block."""
        t = self.op("TypeStruct", *members)
        if offsets is not None:
            for i, off in enumerate(offsets):
                self.member_decorate(t, i, "Offset", off)
        if block:
            self.decorate(t, "Block")
        if name:
            self.name(t, name)
        for i, n in enumerate(member_names or ()):
            self.member_name(t, i, n)
        return t

    def type_pointer(self, storage_class: str, pointee: Id) -> Id:
        return self.op("TypePointer", storage_class, pointee)

    def type_function(self, return_type: Id, params: Sequence[Id] = ()) -> Id:
        return self.op("TypeFunction", return_type, *params)

    def size_of(self, t: int) -> int:
        """Size in bytes of a scalar, vector (std430: a 3-vector takes 4 slots) or array."""
        info = self._types.get(t)
        if info is None:
            raise BuildError(f"%{t} is not a type of this module")
        name = info[0]
        if name in ("OpTypeInt", "OpTypeFloat"):
            return info[1] // 8
        if name == "OpTypeVector":
            n = info[2]
            return self.size_of(info[1]) * (4 if n == 3 else n)
        if name == "OpTypeArray":
            return self.size_of(info[1]) * self._constant_values[info[2]]
        raise BuildError(f"size of {name} %{t} is not defined without explicit layout")

    # constants -----------------------------------------------------------------------
    def _constant(self, info: InstructionInfo, args: tuple) -> Id:
        rt = args[0]
        if rt.__class__ is not Id:
            raise BuildError(f"{info.opname}: result type must be an id, got {rt!r}")
        return self._constant_words(info, rt, self.encode(info, args[1:], rt), args[1:])

    def _constant_words(self, info: InstructionInfo, rt: Id, words: list[int], args) -> Id:
        key = (info.opcode, rt, *words)
        c = self._cache.get(key)
        if c is None:
            c = self._cache[key] = self.new_id()
            self._globals += ((len(words) + 3) << 16 | info.opcode, rt, c, *words)
            self._value_types[c] = rt
            if info.opname == "OpConstant":
                self._constant_values[c] = args[0]
        return c

    def constant(self, type_id: Id, value) -> Id:
        """A scalar constant (bool, int or float by ``type_id``), deduplicated."""
        quick = (type_id, value, value.__class__)
        if value == 0:  # 0.0 == -0.0 and they hash alike: keep the sign apart
            quick += (math.copysign(1.0, value),)
        c = self._constants.get(quick)
        if c is not None:
            return c
        scalar = self._scalars.get(type_id)
        if scalar is not None:
            try:
                words = number_words(value, *scalar)
            except (ValueError, OverflowError, TypeError) as e:
                raise BuildError(f"OpConstant: {e}") from None
            c = self._constant_words(self._constant_info, type_id, words, (value,))
        elif self._types.get(type_id, ("",))[0] == "OpTypeBool":
            c = self.op("ConstantTrue" if value else "ConstantFalse", type_id)
        else:
            raise BuildError(f"constant(): %{type_id} is not a scalar type")
        self._constants[quick] = c
        return c

    def constant_composite(self, type_id: Id, parts: Sequence[Id]) -> Id:
        return self.op("ConstantComposite", type_id, *parts)

    def constant_null(self, type_id: Id) -> Id:
        return self.op("ConstantNull", type_id)

    def u32(self, value: int) -> Id:
        """A uint32 constant."""
        return self.constant(self._scalar_type("u32"), value)

    def i32(self, value: int) -> Id:
        """An int32 constant."""
        return self.constant(self._scalar_type("i32"), value)

    def f32(self, value: float) -> Id:
        """A float32 constant."""
        return self.constant(self._scalar_type("f32"), value)

    def _scalar_type(self, name: str) -> Id:
        t = self._shorthand.get(name)
        if t is None:
            t = self._shorthand[name] = {
                "u32": self.type_uint, "i32": self.type_int, "f32": self.type_float}[name]()
        return t

    def spec_constant(self, type_id: Id, default, spec_id: int, name: str | None = None) -> Id:
        """A specialization constant with a SpecId, overridable at pipeline creation."""
        if self._types.get(type_id, ("",))[0] == "OpTypeBool":
            c = self.op("SpecConstantTrue" if default else "SpecConstantFalse", type_id)
        else:
            c = self.op("SpecConstant", type_id, default)
        self.decorate(c, "SpecId", spec_id)
        if name:
            self.name(c, name)
        return c

    def spec_constant_composite(self, type_id: Id, parts: Sequence[Id]) -> Id:
        return self.op("SpecConstantComposite", type_id, *parts)

    def spec_constant_op(self, type_id: Id, opname: str, *operands) -> Id:
        """An OpSpecConstantOp computing ``opname`` over constants at specialization time."""
        return self.op("SpecConstantOp", type_id, opname, *operands)

    def id_for_enum(self, kind: str, value) -> Id:
        """Scope and MemorySemantics operands given by name become uint constants."""
        enum_kind = "Scope" if kind == "IdScope" else "MemorySemantics"
        if enum_kind == "Scope":
            v = self._enumerant("Scope", value, kind).value
        else:
            v, parts = self._mask("MemorySemantics", value, kind)
            for e in parts:
                if not e.requires.empty:
                    self.require(e.requires, f"MemorySemantics {e.name}")
        return self.u32(v)

    @functools.cached_property
    def _constant_info(self) -> InstructionInfo:
        return self.grammar.instruction("OpConstant")
