"""The module builder: emit a SPIR-V module instruction by instruction, in logical order.

Every instruction goes through :meth:`ModuleBuilder.op`, which encodes its operands from the
grammar and files it in the right section of the module (types and constants are
deduplicated, decorations too). Capabilities and extensions are added from the grammar's
requirements of what is used. Control flow is only available through the structured helpers
of :mod:`spirv_gen.control` (``if_``, ``loop``, ``switch``), so a frontend cannot produce
unstructured code by accident.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .control import Loop, Selection, Switch
from .encoder import Encoder, ScalarInfo
from .errors import BuildError
from .grammar import GLSL_SET, ExtInstSet, Grammar, InstructionInfo, Requirements, grammar
from .words import MAGIC, Id, number_words, words_to_bytes

# Where an instruction goes.
_BODY, _TYPE, _STRUCT, _CONST, _SPEC, _VAR, _ANNOT, _DEBUG, _LINE = range(9)
_CAP, _EXT, _IMPORT, _MODEL, _ENTRY, _MODE, _FORBIDDEN, _TERM, _UNDEF, _ATOMIC = range(9, 19)

_TERMINATORS = frozenset(
    {"OpReturn", "OpReturnValue", "OpKill", "OpUnreachable", "OpTerminateInvocation"}
)
_STRUCTURED_ONLY = frozenset(
    {
        "OpLabel",
        "OpBranch",
        "OpBranchConditional",
        "OpSwitch",
        "OpSelectionMerge",
        "OpLoopMerge",
        "OpFunction",
        "OpFunctionParameter",
        "OpFunctionEnd",
    }
)
_MODE_SETTING = {
    "OpCapability": _CAP,
    "OpMemoryModel": _MODEL,
    "OpEntryPoint": _ENTRY,
    "OpExecutionMode": _MODE,
    "OpExecutionModeId": _MODE,
    "OpExtension": _EXT,
    "OpExtInstImport": _IMPORT,
}
# The debug section's three groups: sources and strings, names, module-processed notes.
_DEBUG_PART = {"OpName": 1, "OpMemberName": 1, "OpModuleProcessed": 2}
# Capabilities that scalar widths need (the grammar cannot say: they depend on a literal).
_INT_WIDTH_CAPS = {8: "Int8", 16: "Int16", 64: "Int64"}
_FLOAT_WIDTH_CAPS = {16: "Float16", 64: "Float64"}

VULKAN_SPIRV_VERSION = {"vulkan1.0": (1, 0), "vulkan1.1": (1, 3), "vulkan1.2": (1, 5),
                        "vulkan1.3": (1, 6), "vulkan1.4": (1, 6)}


def _route(info: InstructionInfo) -> int:
    name = info.opname
    if name in _MODE_SETTING:
        return _MODE_SETTING[name]
    if name in _STRUCTURED_ONLY:
        return _FORBIDDEN
    if name in _TERMINATORS:
        return _TERM
    if name == "OpUndef":
        return _UNDEF
    if name == "OpVariable":
        return _VAR
    if name in ("OpLine", "OpNoLine"):
        return _LINE
    cls = info.cls
    if cls == "Atomic":
        return _ATOMIC
    if cls == "Type-Declaration":
        return _STRUCT if name in ("OpTypeStruct", "OpTypeForwardPointer") else _TYPE
    if cls == "Constant-Creation":
        return _SPEC if name.startswith("OpSpec") else _CONST
    if cls == "Annotation":
        return _ANNOT
    if cls == "Debug":
        return _DEBUG
    return _BODY


class Function:
    """A function being built: its id, parameters, and its code so far."""

    __slots__ = ("body", "entry", "id", "params", "return_type", "targets", "type", "variables",
                 "words")

    def __init__(self, fid: Id, return_type: Id, ftype: Id, params: list[Id]) -> None:
        self.id = fid
        self.return_type = return_type
        self.type = ftype
        self.params = params
        self.words: list[int] = []  # OpFunction and OpFunctionParameter
        self.entry: Id | None = None
        self.variables: list[int] = []  # OpVariable Function, placed in the entry block
        self.body: list[int] = []  # everything after the entry block's OpLabel
        self.targets: set[int] = set()  # labels some branch goes to


class ModuleBuilder(Encoder):
    """Builds one SPIR-V module.

    ``version`` is the SPIR-V version of the module (default 1.3, the one Vulkan 1.1
    consumes); :data:`VULKAN_SPIRV_VERSION` maps Vulkan versions to it. Values are
    :class:`~spirv_gen.words.Id` objects; operands are ids, Python ints / floats / strings
    for literals, and enumerant names (``"Workgroup"``, ``"Binding"``,
    ``"AcquireRelease|WorkgroupMemory"``) for enumerants, in the grammar's order.
    """

    def __init__(
        self,
        version: tuple[int, int] = (1, 3),
        addressing_model: str = "Logical",
        memory_model: str = "GLSL450",
        generator: int = 0,
        grammar_: Grammar | None = None,
    ) -> None:
        super().__init__(grammar_ or grammar())
        self.version = tuple(version)
        self.generator = generator
        self._next = 1
        self._routes: dict[str, tuple[InstructionInfo, int, int]] = {}
        self._caps: dict[str, None] = {}
        self._cap_closure: set[str] | None = set()
        self._exts: dict[str, None] = {}
        self._imports: dict[str, Id] = {}
        self._import_sets: dict[int, ExtInstSet | None] = {}
        self._import_words: list[int] = []
        self._model: list[int] = []
        self._entries: list[tuple[str, Id, str, list[Id] | None]] = []
        self._modes: list[int] = []
        self._debug: tuple[list[int], list[int], list[int]] = ([], [], [])  # sources, names,
        # processes: the three groups of the debug section, in order
        self._annotations: list[int] = []
        self._annotation_set: set[tuple[int, ...]] = set()
        self._globals: list[int] = []
        self._cache: dict[tuple, Id] = {}
        self._constant_values: dict[int, object] = {}
        self._constants: dict[tuple, Id] = {}
        self._shorthand: dict[str, Id] = {}
        self._scalars: dict[int, ScalarInfo] = {}
        self._types: dict[int, tuple] = {}  # type id -> (opname, *operands)
        self._value_types: dict[int, int] = {}
        self._global_vars: list[tuple[Id, str]] = []
        self._builtins: dict[str, Id] = {}
        self._functions: list[Function] = []
        self._fn: Function | None = None
        self._block: Id | None = None
        self.constructs: list[Selection | Loop | Switch] = []
        self.memory_model(addressing_model, memory_model)

    # ids -----------------------------------------------------------------------------
    def new_id(self) -> Id:
        """A fresh id, for forward references (pass it later as ``result_id=``)."""
        i = self._next
        self._next = i + 1
        return Id(i)

    @property
    def bound(self) -> int:
        return self._next

    def type_of(self, value_id: int) -> Id:
        """The result type of a value this builder produced."""
        try:
            return self._value_types[value_id]
        except KeyError:
            raise BuildError(f"%{value_id} has no known type") from None

    def type_info(self, type_id: int) -> tuple:
        """``(opname, *operands)`` of a declared type, e.g. ``("OpTypeInt", 32, 1)``."""
        return self._types[type_id]

    def scalar_of(self, type_id: int) -> ScalarInfo:
        try:
            return self._scalars[type_id]
        except KeyError:
            raise BuildError(f"%{type_id} is not a numeric scalar type") from None

    def ext_set_of(self, set_id: int) -> ExtInstSet | None:
        return self._import_sets.get(set_id)

    # the generic emitter -------------------------------------------------------------
    def op(self, opname: str, *args, result_id: Id | None = None) -> Id | None:
        """Emit any instruction by name (``"IAdd"`` or ``"OpIAdd"``).

        ``args`` are the grammar's operands in order: the result type first when the
        instruction has one (never the result id, which is allocated, or given as
        ``result_id`` for a forward reference). Returns the result id, or None.
        """
        r = self._routes.get(opname)
        if r is None:
            r = self._prepare(opname)
        info, route, fast = r
        if route != _BODY:
            return self._route_other(info, route, args, result_id)
        if self._block is None:
            self._no_block(info)
        if info.has_type:
            rt = args[0]
            if rt.__class__ is not Id:
                raise BuildError(f"{info.opname}: result type must be an id, got {rt!r}")
            args = args[1:]
            rid = result_id if result_id is not None else self.new_id()
            if fast == len(args):
                for a in args:
                    if a.__class__ is not Id:
                        raise BuildError(f"{info.opname}: operand must be an id, got {a!r}")
                self._fn.body += ((fast + 3) << 16 | info.opcode, rt, rid, *args)
            else:
                words = self.encode(info, args, rt)
                self._fn.body += ((len(words) + 3) << 16 | info.opcode, rt, rid, *words)
            self._value_types[rid] = rt
            return rid
        words = self.encode(info, args)
        if info.has_result:
            rid = result_id if result_id is not None else self.new_id()
            self._fn.body += ((len(words) + 2) << 16 | info.opcode, rid, *words)
            return rid
        self._fn.body += ((len(words) + 1) << 16 | info.opcode, *words)
        return None

    def __getattr__(self, name: str):
        """``b.IAdd(t, x, y)`` is ``b.op("IAdd", t, x, y)`` for every grammar instruction."""
        if name[:1].isupper():
            try:
                self.grammar.instruction(name)
            except KeyError:
                pass
            else:
                return lambda *args, result_id=None: self.op(name, *args, result_id=result_id)
        raise AttributeError(name)

    def _prepare(self, opname: str) -> tuple[InstructionInfo, int, int]:
        try:
            info = self.grammar.instruction(opname)
        except KeyError:
            raise BuildError(f"unknown SPIR-V instruction {opname!r}") from None
        route = _route(info)
        plain = all(o.kind == "IdRef" and not o.quantifier for o in info.operands)
        fast = len(info.operands) if plain and info.requires.empty and info.has_type else -1
        r = (info, route, fast)
        self._routes[opname] = r
        return r

    def _no_block(self, info: InstructionInfo) -> None:
        if self._fn is None:
            raise BuildError(f"{info.opname} must be inside a function")
        raise BuildError(
            f"{info.opname} after the block was terminated (by a branch, break, continue or "
            "return): code here is unreachable"
        )

    def _route_other(self, info: InstructionInfo, route: int, args: tuple, result_id):
        name = info.opname
        if route == _FORBIDDEN:
            raise BuildError(
                f"{name} is emitted by the structured helpers only (begin_function, if_, "
                "loop, switch, break_, continue_)"
            )
        if route == _TYPE:
            return self._type(info, args)
        if route == _CONST:
            return self._constant(info, args)
        if route == _VAR:
            return self._variable_op(info, args, result_id)
        if route in (_LINE, _UNDEF) and self._block is not None:
            return self._emit_body(info, args, result_id)
        if route == _DEBUG:
            part = _DEBUG_PART.get(info.opname, 0)
            return self._emit_to(self._debug[part], info, args, result_id)
        if route == _STRUCT:
            t = self._emit_to(self._globals, info, args, result_id)
            if t is not None:
                self._types[t] = (info.opname, *args)
            return t
        if route in (_SPEC, _LINE, _UNDEF):
            return self._emit_to(self._globals, info, args, result_id)
        if route == _ANNOT:
            words = self.encode(info, args)
            key = (info.opcode, *words)
            if key not in self._annotation_set:
                self._annotation_set.add(key)
                self._annotations += ((len(words) + 1) << 16 | info.opcode, *words)
            return None
        if route == _ATOMIC:
            if self._block is None:
                self._no_block(info)
            self._atomic_width(info, args)
            return self._emit_body(info, args, result_id)
        if route == _TERM:
            if self._block is None:
                self._no_block(info)
            self._emit_body(info, args, None)
            self._block = None
            return None
        if route == _CAP:
            return self.capability(*args)
        if route == _EXT:
            return self.extension(*args)
        if route == _IMPORT:
            return self.import_set(*args)
        if route == _MODEL:
            return self.memory_model(*args)
        if route == _ENTRY:
            return self.entry_point(*args)
        if route == _MODE:
            words = self.encode(info, args)
            self._modes += ((len(words) + 1) << 16 | info.opcode, *words)
            return None
        raise AssertionError(route)

    def _atomic_width(self, info: InstructionInfo, args: tuple) -> None:
        """Atomics on 64-bit integers need Int64Atomics; float atomics need the capability
        of their width. Both depend on the operand type, which the grammar cannot say."""
        t = args[0] if info.has_type else self._value_types.get(args[-1]) if args else None
        width, is_float, _ = self._scalars.get(t, (32, False, False))
        if is_float:
            for c in info.requires.capabilities:
                if f"Float{width}" in c:
                    self.capability(c)
                    break
        elif width == 64:
            self.capability("Int64Atomics")

    def _emit_to(self, section: list[int], info, args, result_id) -> Id | None:
        rt = None
        head: list[int] = []
        if info.has_type:
            rt = args[0]
            args = args[1:]
            if rt.__class__ is not Id:
                raise BuildError(f"{info.opname}: result type must be an id, got {rt!r}")
            head.append(rt)
        rid = None
        if info.has_result:
            rid = result_id if result_id is not None else self.new_id()
            head.append(rid)
            if rt is not None:
                self._value_types[rid] = rt
        words = self.encode(info, args, rt)
        section += ((len(words) + len(head) + 1) << 16 | info.opcode, *head, *words)
        return rid

    def _emit_body(self, info, args, result_id) -> Id | None:
        return self._emit_to(self._fn.body, info, args, result_id)

    # requirements --------------------------------------------------------------------
    def require(self, req: Requirements, what: str) -> None:
        if req.capabilities:
            closure = self._closure()
            if not any(c in closure for c in req.capabilities):
                self.capability(self._choose(req.capabilities))
        if req.version is not None and req.version <= self.version:
            return
        if req.extensions:
            if not any(e in self._exts for e in req.extensions):
                self.extension(req.extensions[0])
            return
        if req.version is None:
            raise BuildError(f"{what} needs an extension the grammar does not name")
        raise BuildError(
            f"{what} needs SPIR-V {req.version[0]}.{req.version[1]}; this module is "
            f"{self.version[0]}.{self.version[1]}"
        )

    def _closure(self) -> set[str]:
        if self._cap_closure is None:
            self._cap_closure = self.grammar.capability_closure(set(self._caps))
        return self._cap_closure

    def _choose(self, candidates: tuple[str, ...]) -> str:
        """Pick the capability to declare among alternatives: avoid the Kernel family, then
        prefer one that is core at this version."""
        caps = self.grammar.kinds["Capability"].by_name

        def rank(item: tuple[int, str]) -> tuple[int, int, int]:
            i, c = item
            kernel = "Kernel" in self.grammar.capability_closure({c})
            e = caps.get(c)
            v = e.requires.version if e else None
            core = v is not None and v <= self.version
            return (kernel, not core, i)

        return min(enumerate(candidates), key=rank)[1]

    def capability(self, name: str) -> None:
        """Declare a capability (and the extension it needs at this version, if any)."""
        if name in self._caps:
            return
        e = self.grammar.kinds["Capability"].by_name.get(name)
        if e is None:
            raise BuildError(f"unknown capability {name!r}")
        self._caps[e.name] = None
        self._cap_closure = None
        req = e.requires
        if req.extensions or req.version != (1, 0):
            self.require(Requirements((), req.extensions, req.version), f"capability {name}")

    def extension(self, name: str) -> None:
        self._exts[name] = None

    @property
    def capabilities(self) -> list[str]:
        return list(self._caps)

    @property
    def extensions(self) -> list[str]:
        return list(self._exts)

    def import_set(self, name: str) -> Id:
        """The id of an imported extended instruction set (imported once)."""
        i = self._imports.get(name)
        if i is None:
            i = self._imports[name] = self.new_id()
            self._import_sets[i] = self.grammar.ext_sets.get(name)
            info = self.grammar.instruction("OpExtInstImport")
            words = self.encode(info, (name,))
            self._import_words += ((len(words) + 2) << 16 | info.opcode, i, *words)
        return i

    def memory_model(self, addressing: str, model: str) -> None:
        info = self.grammar.instruction("OpMemoryModel")
        words = self.encode(info, (addressing, model))
        self._model = [(len(words) + 1) << 16 | info.opcode, *words]

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

    # annotations and names -----------------------------------------------------------
    def decorate(self, target: Id, decoration: str, *params) -> None:
        self.op("Decorate", target, decoration, *params)

    def member_decorate(self, struct: Id, member: int, decoration: str, *params) -> None:
        self.op("MemberDecorate", struct, member, decoration, *params)

    def name(self, target: Id, text: str) -> None:
        self.op("Name", target, text)

    def member_name(self, struct: Id, member: int, text: str) -> None:
        self.op("MemberName", struct, member, text)

    # variables -----------------------------------------------------------------------
    def _variable_op(self, info: InstructionInfo, args: tuple, result_id) -> Id:
        if len(args) < 2:
            raise BuildError("OpVariable needs a pointer type and a storage class")
        storage = args[1]
        if storage == "Function" or storage == self._function_sc:
            if self._fn is None:
                raise BuildError("a Function variable must be inside a function")
            return self._emit_to(self._fn.variables, info, args, result_id)
        v = self._emit_to(self._globals, info, args, result_id)
        sc = storage if isinstance(storage, str) else self.kinds["StorageClass"].by_value[
            storage].name
        self._global_vars.append((v, sc))
        return v

    def variable(
        self, pointee: Id, storage_class: str, initializer: Id | None = None,
        name: str | None = None,
    ) -> Id:
        """A variable of type ``pointee`` (its pointer type is made here). Function
        variables go to the entry block of the current function, wherever this is called."""
        ptr = self.type_pointer(storage_class, pointee)
        args = (ptr, storage_class) if initializer is None else (ptr, storage_class, initializer)
        v = self.op("Variable", *args)
        if name:
            self.name(v, name)
        return v

    def storage_buffer(
        self, element: Id, binding: int, set: int = 0, name: str | None = None,
        readonly: bool = False, stride: int | None = None,
    ) -> Id:
        """A StorageBuffer variable holding a runtime array of ``element`` (std430 stride),
        at ``(set, binding)``; index it with :meth:`buffer_element`."""
        arr = self.type_runtime_array(element, stride or self.size_of(element))
        st = self.type_struct([arr], offsets=[0], block=True)
        v = self.variable(st, "StorageBuffer", name=name)
        self.decorate(v, "DescriptorSet", set)
        self.decorate(v, "Binding", binding)
        if readonly:
            self.decorate(v, "NonWritable")
        return v

    def buffer_element(self, buffer: Id, index: Id) -> Id:
        """Pointer to element ``index`` of a :meth:`storage_buffer`."""
        st = self._types[self._types[self.type_of(buffer)][2]]
        arr = st[1]
        element = self._types[arr][1]
        ptr = self.type_pointer("StorageBuffer", element)
        return self.op("AccessChain", ptr, buffer, self.u32(0), index)

    def push_constants(
        self, members: Sequence[Id], offsets: Sequence[int] | None = None,
        name: str | None = None,
    ) -> Id:
        """The PushConstant block; members packed at their natural sizes by default."""
        if offsets is None:
            offsets, off = [], 0
            for m in members:
                size = self.size_of(m)
                off = (off + size - 1) // size * size
                offsets.append(off)
                off += size
        st = self.type_struct(members, offsets=offsets, block=True)
        return self.variable(st, "PushConstant", name=name)

    def push_constant(self, block: Id, member: int) -> Id:
        """Load member ``member`` of a :meth:`push_constants` block."""
        st = self._types[self.type_of(block)][2]
        mt = self._types[st][1 + member]
        ptr = self.type_pointer("PushConstant", mt)
        return self.op("Load", mt, self.op("AccessChain", ptr, block, self.u32(member)))

    def builtin(self, name: str, type_id: Id, storage_class: str = "Input") -> Id:
        """The Input variable of a BuiltIn (declared once), e.g. ``GlobalInvocationId``."""
        v = self._builtins.get(name)
        if v is None:
            v = self._builtins[name] = self.variable(type_id, storage_class)
            self.decorate(v, "BuiltIn", name)
        return v

    def load_builtin(self, name: str, type_id: Id) -> Id:
        return self.op("Load", type_id, self.builtin(name, type_id))

    # extended instructions -----------------------------------------------------------
    def ext_inst(self, set_name: str, instruction: str | int, result_type: Id, *operands) -> Id:
        """Call an extended instruction (imports its set on first use)."""
        return self.op("ExtInst", result_type, self.import_set(set_name), instruction, *operands)

    def glsl(self, instruction: str, result_type: Id, *operands) -> Id:
        """A GLSL.std.450 instruction, e.g. ``b.glsl("Sqrt", f32, x)``."""
        return self.ext_inst(GLSL_SET, instruction, result_type, *operands)

    def phi(self, result_type: Id, *incoming: tuple[Id, Id], result_id: Id | None = None) -> Id:
        """OpPhi over ``(value, predecessor label)`` pairs; must open its block."""
        return self.op("Phi", result_type, *incoming, result_id=result_id)

    # entry points and modes ----------------------------------------------------------
    def entry_point(
        self, model: str, function: Id | Function, name: str,
        interface: Sequence[Id] | None = None,
    ) -> None:
        """Declare an entry point. With ``interface=None`` the list is filled when encoding:
        the module's Input/Output variables, and from SPIR-V 1.4 all its global variables."""
        fid = function.id if isinstance(function, Function) else function
        self.encode(self.grammar.instruction("OpEntryPoint"), (model, fid, name))
        self._entries.append((model, fid, name, None if interface is None else list(interface)))

    def execution_mode(self, function: Id | Function, mode: str, *operands) -> None:
        fid = function.id if isinstance(function, Function) else function
        self.op("ExecutionMode", fid, mode, *operands)

    def execution_mode_id(self, function: Id | Function, mode: str, *operands: Id) -> None:
        fid = function.id if isinstance(function, Function) else function
        self.op("ExecutionModeId", fid, mode, *operands)

    # functions and blocks ------------------------------------------------------------
    def begin_function(
        self, return_type: Id, param_types: Sequence[Id] = (), control: str = "None",
        name: str | None = None,
    ) -> Function:
        """Start a function and its entry block; ``end_function`` closes it."""
        if self._fn is not None:
            raise BuildError("functions cannot nest: end the current function first")
        ftype = self.type_function(return_type, param_types)
        fid = self.new_id()
        fn = Function(fid, return_type, ftype, [])
        info = self.grammar.instruction("OpFunction")
        words = self.encode(info, (control, ftype))
        fn.words += ((len(words) + 3) << 16 | info.opcode, return_type, fid, *words)
        pinfo = self.grammar.instruction("OpFunctionParameter")
        for t in param_types:
            p = self.new_id()
            fn.params.append(p)
            self._value_types[p] = t
            fn.words += (3 << 16 | pinfo.opcode, t, p)
        self._value_types[fid] = return_type
        if name:
            self.name(fid, name)
        self._fn = fn
        fn.entry = self.new_id()
        self._block = fn.entry
        return fn

    def end_function(self) -> Function:
        """Close the current function. An open last block returns if the function is void
        and is marked unreachable if nothing branches to it; otherwise it is an error."""
        fn = self._fn
        if fn is None:
            raise BuildError("no function to end")
        if self.constructs:
            raise BuildError(f"function ends inside an open {type(self.constructs[-1]).__name__}")
        if self._block is not None:
            void = self._types.get(fn.return_type, ("",))[0] == "OpTypeVoid"
            reachable = self._block == fn.entry or self._block in fn.targets
            if reachable and not void:
                raise BuildError(f"function %{fn.id}: control reaches its end without a return")
            self.op("Return" if reachable else "Unreachable")
        self._functions.append(fn)
        self._fn = None
        return fn

    @contextmanager
    def function(
        self, return_type: Id, param_types: Sequence[Id] = (), control: str = "None",
        name: str | None = None,
    ) -> Iterator[Function]:
        """``with b.function(void) as fn:`` begins and ends a function."""
        fn = self.begin_function(return_type, param_types, control, name)
        yield fn
        self.end_function()

    @property
    def current_block(self) -> Id | None:
        """The label of the block being filled (None after a terminator)."""
        return self._block

    @property
    def current_function(self) -> Function | None:
        return self._fn

    def ret(self, value: Id | None = None) -> None:
        """Return from the current function (OpReturn or OpReturnValue)."""
        if value is None:
            self.op("Return")
        else:
            self.op("ReturnValue", value)

    def if_(self, condition: Id, control: str = "None") -> Selection:
        """``with b.if_(c) as s: ...; s.else_(); ...`` — a selection with its merge block."""
        return Selection(self, condition, control)

    def loop(self, control: str | tuple = "None") -> Loop:
        """``with b.loop() as lp: ...`` — a loop with its merge and continue blocks.
        ``control`` is a LoopControl mask, or a tuple of the mask and its parameters, e.g.
        ``("DependencyLength", 4)``."""
        return Loop(self, control)

    def switch(self, selector: Id, control: str = "None") -> Switch:
        """``with b.switch(x) as sw: with sw.case(1, 2): ...`` — cases never fall through."""
        return Switch(self, selector, control)

    # used by the control-flow helpers ------------------------------------------------
    def _emit_raw(self, opname: str, *args) -> int:
        """Emit a control-flow instruction into the current block; returns the index of
        its first operand word in the body (for patching a forward label)."""
        if self._block is None:
            self._no_block(self.grammar.instruction(opname))
        info = self.grammar.instruction(opname)
        words = self.encode(info, args)
        body = self._fn.body
        at = len(body) + 1
        body += ((len(words) + 1) << 16 | info.opcode, *words)
        return at

    def _branch(self, target: Id) -> None:
        self._emit_raw("OpBranch", target)
        self._fn.targets.add(target)
        self._block = None

    def _branch_conditional(self, cond: Id, true_label: Id, false_label: Id) -> int:
        at = self._emit_raw("OpBranchConditional", cond, true_label, false_label)
        self._fn.targets.update((true_label, false_label))
        self._block = None
        return at

    def _open_block(self, label: Id) -> None:
        if self._block is not None:
            raise BuildError(f"block %{self._block} is still open")
        body = self._fn.body
        body += (2 << 16 | self._label_opcode, label)
        self._block = label

    # encoding ------------------------------------------------------------------------
    def _interface(self, given: list[Id] | None) -> list[Id]:
        if given is not None:
            return given
        if self.version >= (1, 4):
            return [v for v, _ in self._global_vars]
        return [v for v, sc in self._global_vars if sc in ("Input", "Output")]

    def words(self) -> list[int]:
        """The module as words: header, then the sections in the order SPIR-V requires."""
        if self._fn is not None:
            raise BuildError("a function is still open: call end_function() first")
        out = [MAGIC, self.version[0] << 16 | self.version[1] << 8, self.generator, 0, 0]
        cap_op = self._opcode("OpCapability")
        for c in self._caps:
            out += (2 << 16 | cap_op, self.kinds["Capability"].by_name[c].value)
        ext_info = self.grammar.instruction("OpExtension")
        for e in self._exts:
            w = self.encode(ext_info, (e,))
            out += ((len(w) + 1) << 16 | ext_info.opcode, *w)
        out += self._import_words
        out += self._model
        ep = self.grammar.instruction("OpEntryPoint")
        for model, fid, name, interface in self._entries:
            w = self.encode(ep, (model, fid, name, *self._interface(interface)))
            out += ((len(w) + 1) << 16 | ep.opcode, *w)
        out += self._modes
        for part in self._debug:
            out += part
        out += self._annotations
        out += self._globals
        label = self._label_opcode
        for fn in self._functions:
            out += fn.words
            out += (2 << 16 | label, fn.entry)
            out += fn.variables
            out += fn.body
            out.append(1 << 16 | self._function_end_opcode)
        out[3] = self._next
        return out

    def to_bytes(self) -> bytes:
        """The encoded module (little-endian words on a little-endian host)."""
        return words_to_bytes(self.words())

    def _opcode(self, opname: str) -> int:
        return self.grammar.instruction(opname).opcode

    @functools.cached_property
    def _label_opcode(self) -> int:
        return self._opcode("OpLabel")

    @functools.cached_property
    def _function_end_opcode(self) -> int:
        return self._opcode("OpFunctionEnd")

    @functools.cached_property
    def _constant_info(self) -> InstructionInfo:
        return self.grammar.instruction("OpConstant")

    @functools.cached_property
    def _function_sc(self) -> int:
        return self.kinds["StorageClass"].by_name["Function"].value

