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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .control import ControlFlowBuilder, Loop, Selection, Switch
from .encoder import Encoder, ScalarInfo
from .errors import BuildError
from .grammar import GLSL_SET, ExtInstSet, Grammar, InstructionInfo, Requirements, grammar
from .resources import ResourceBuilder
from .types import TypeBuilder
from .words import MAGIC, Id, words_to_bytes

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


class ModuleBuilder(TypeBuilder, ResourceBuilder, ControlFlowBuilder, Encoder):
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
        if not req.extensions and req.version is None:
            return  # named by no extension: that of its capability, or of its instruction
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

    # annotations and names -----------------------------------------------------------
    def decorate(self, target: Id, decoration: str, *params) -> None:
        self.op("Decorate", target, decoration, *params)

    def member_decorate(self, struct: Id, member: int, decoration: str, *params) -> None:
        self.op("MemberDecorate", struct, member, decoration, *params)

    def name(self, target: Id, text: str) -> None:
        self.op("Name", target, text)

    def member_name(self, struct: Id, member: int, text: str) -> None:
        self.op("MemberName", struct, member, text)

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
