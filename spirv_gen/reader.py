"""Decode a SPIR-V binary (ours, glslang's, anyone's) into instructions that can be
inspected, patched and encoded again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .encoder import Encoder, ScalarInfo
from .errors import BuildError, DecodeError
from .grammar import ExtInstSet, Grammar, InstructionInfo, Operand, grammar
from .words import MAGIC, Id, bytes_to_words, read_number, read_string, words_to_bytes


@dataclass(slots=True)
class Instruction:
    """One instruction: its opcode and its words after the first (operand words)."""

    opcode: int
    words: tuple[int, ...]

    @property
    def info(self) -> InstructionInfo | None:
        return grammar().by_opcode.get(self.opcode)

    @property
    def opname(self) -> str:
        info = self.info
        return info.opname if info else f"Op#{self.opcode}"

    @property
    def result_type(self) -> Id | None:
        info = self.info
        return Id(self.words[0]) if info and info.has_type else None

    @property
    def result_id(self) -> Id | None:
        info = self.info
        if not info or not info.has_result:
            return None
        return Id(self.words[1 if info.has_type else 0])

    def encode(self) -> list[int]:
        return [(len(self.words) + 1) << 16 | self.opcode, *self.words]


class _Context(Encoder):
    """What decoding needs to know about earlier instructions: scalar widths, value types
    and imported instruction sets. Also encodes, with the same knowledge."""

    def __init__(self, g: Grammar) -> None:
        super().__init__(g)
        self.scalars: dict[int, ScalarInfo] = {}
        self.value_types: dict[int, int] = {}
        self.sets: dict[int, ExtInstSet | None] = {}

    def scalar_of(self, type_id: int) -> ScalarInfo:
        try:
            return self.scalars[type_id]
        except KeyError:
            raise BuildError(f"%{type_id} is not a numeric scalar type") from None

    def type_of(self, value_id: int) -> int:
        try:
            return self.value_types[value_id]
        except KeyError:
            raise BuildError(f"%{value_id} has no known type") from None

    def ext_set_of(self, set_id: int) -> ExtInstSet | None:
        return self.sets.get(set_id)

    def learn(self, inst: Instruction, info: InstructionInfo | None) -> None:
        if info is None:
            return
        w = inst.words
        if info.has_type and len(w) >= 2:
            self.value_types[w[1]] = w[0]
        name = info.opname
        if name == "OpTypeInt":
            self.scalars[w[0]] = (w[1], False, bool(w[2]))
        elif name == "OpTypeFloat":
            self.scalars[w[0]] = (w[1], True, True)
        elif name == "OpExtInstImport":
            self.sets[w[0]] = self.grammar.ext_sets.get(read_string(w, 1)[0])

    # decoding ------------------------------------------------------------------------
    def decode(self, inst: Instruction) -> tuple[Id | None, Id | None, list]:
        """(result type, result id, logical operands) in the builder's argument form."""
        info = self.grammar.by_opcode.get(inst.opcode)
        w = inst.words
        if info is None:
            return None, None, list(w)
        i = 0
        rt = rid = None
        if info.has_type:
            rt = Id(w[0])
            i = 1
        if info.has_result:
            rid = Id(w[i])
            i += 1
        out: list = []
        special = _SPECIAL.get(info.opname)
        if special is not None:
            special(self, w, i, out, rt)
        else:
            i = self._decode_list(info.operands, w, i, out, rt)
            if i != len(w):
                raise DecodeError(f"{info.opname}: {len(w) - i} words left over")
        return rt, rid, out

    def _decode_list(self, specs: tuple[Operand, ...], w, i: int, out: list, rt) -> int:
        n = len(w)
        for spec in specs:
            if spec.quantifier == "*":
                while i < n:
                    i = self._decode_one(spec.kind, w, i, out, rt)
                return i
            if i >= n:
                if spec.quantifier == "?":
                    continue
                raise DecodeError(f"missing operand {spec.name or spec.kind}")
            i = self._decode_one(spec.kind, w, i, out, rt)
        return i

    def _decode_one(self, kind: str, w, i: int, out: list, rt) -> int:
        k = self.kinds[kind]
        cat = k.category
        if i >= len(w):
            raise DecodeError(f"operand {kind} runs past the instruction")
        if cat == "Id":
            out.append(Id(w[i]))
            return i + 1
        if cat == "Literal":
            if kind == "LiteralString":
                s, i = read_string(w, i)
                out.append(s)
                return i
            if kind == "LiteralContextDependentNumber":
                width, is_float, signed = self.scalar_of(rt)
                n = max(1, width // 32)
                out.append(read_number(list(w[i : i + n]), width, is_float, signed))
                return i + n
            if kind == "LiteralSpecConstantOpInteger":
                info = self.grammar.by_opcode.get(w[i])
                out.append(info.opname[2:] if info else w[i])
                return i + 1
            out.append(w[i])
            return i + 1
        if cat == "Composite":
            sub: list = []
            for base in k.bases:
                i = self._decode_one(base, w, i, sub, rt)
            out.append(tuple(sub))
            return i
        if cat == "ValueEnum":
            e = k.by_value.get(w[i])
            if e is None:
                out.append(w[i])
                return i + 1
            out.append(e.name)
            return self._decode_list(e.parameters, w, i + 1, out, rt)
        if cat == "BitEnum":
            mask = w[i]
            i += 1
            parts = [e for v, e in sorted(k.by_value.items()) if v and (mask & v) == v]
            known = 0
            for e in parts:
                known |= e.value
            if known != mask:
                out.append(mask)
            elif not parts:
                out.append(k.by_value[0].name if 0 in k.by_value else 0)
            else:
                out.append("|".join(e.name for e in parts))
            for e in parts:
                i = self._decode_list(e.parameters, w, i, out, rt)
            return i
        raise DecodeError(f"unsupported operand kind {kind}")


def _decode_spec_constant_op(ctx: _Context, w, i: int, out: list, rt) -> None:
    info = ctx.grammar.by_opcode.get(w[i])
    if info is None:
        out.extend(w[i:])
        return
    out.append(info.opname[2:])
    if ctx._decode_list(info.operands, w, i + 1, out, rt) != len(w):
        raise DecodeError(f"OpSpecConstantOp {info.opname}: words left over")


def _decode_switch(ctx: _Context, w, i: int, out: list, rt) -> None:
    sel, default = Id(w[i]), Id(w[i + 1])
    out += [sel, default]
    width, _, signed = ctx.scalar_of(ctx.type_of(sel))
    n = max(1, width // 32)
    i += 2
    while i < len(w):
        lit = read_number(list(w[i : i + n]), width, False, signed)
        out.append((lit, Id(w[i + n])))
        i += n + 1


def _decode_ext_inst(ctx: _Context, w, i: int, out: list, rt) -> None:
    set_id = Id(w[i])
    out.append(set_id)
    ext = ctx.sets.get(set_id)
    e = ext.by_opcode.get(w[i + 1]) if ext else None
    if e is None:
        out.extend(w[i + 1 :])
        return
    out.append(e.opname)
    if ctx._decode_list(e.operands, w, i + 2, out, rt) != len(w):
        raise DecodeError(f"{ext.name}.{e.opname}: words left over")


_SPECIAL = {
    "OpSpecConstantOp": _decode_spec_constant_op,
    "OpSwitch": _decode_switch,
    "OpExtInst": _decode_ext_inst,
}


@dataclass
class Module:
    """A decoded module: header fields and instructions, in binary order."""

    version: tuple[int, int]
    generator: int
    bound: int
    schema: int
    instructions: list[Instruction] = field(default_factory=list)

    def words(self) -> list[int]:
        out = [MAGIC, self.version[0] << 16 | self.version[1] << 8, self.generator,
               self.bound, self.schema]
        for inst in self.instructions:
            out += inst.encode()
        return out

    def to_bytes(self) -> bytes:
        return words_to_bytes(self.words())

    def decoded(self) -> Iterator[tuple[Instruction, Id | None, Id | None, list]]:
        """Every instruction with its result type, result id and logical operands."""
        ctx = _Context(grammar())
        for inst in self.instructions:
            info = ctx.grammar.by_opcode.get(inst.opcode)
            rt, rid, ops = ctx.decode(inst)
            ctx.learn(inst, info)
            yield inst, rt, rid, ops

    def reencode(self) -> Module:
        """A copy whose every instruction is encoded again from its decoded operands (the
        round trip the builder's encoder must reproduce bit for bit)."""
        ctx = _Context(grammar())
        out = Module(self.version, self.generator, self.bound, self.schema)
        for inst in self.instructions:
            info = ctx.grammar.by_opcode.get(inst.opcode)
            rt, rid, ops = ctx.decode(inst)
            if info is None:
                out.instructions.append(Instruction(inst.opcode, tuple(ops)))
            else:
                head = [x for x in (rt, rid) if x is not None]
                words = ctx.encode(info, ops, rt)
                out.instructions.append(Instruction(inst.opcode, (*head, *words)))
            ctx.learn(inst, info)
        return out

    def find(self, opname: str) -> list[Instruction]:
        """Instructions named ``opname`` ("OpDecorate" or "Decorate")."""
        op = grammar().instruction(opname).opcode
        return [i for i in self.instructions if i.opcode == op]

    def names(self) -> dict[Id, str]:
        """OpName debug names by id."""
        return {Id(i.words[0]): read_string(i.words, 1)[0] for i in self.find("OpName")}

    def instruction(self, opname: str, *args, result_id: int | None = None) -> Instruction:
        """Encode a new instruction in this module's context (for patching): ``args`` as
        for :meth:`ModuleBuilder.op`, result type first when there is one."""
        ctx = _Context(grammar())
        for inst in self.instructions:
            ctx.learn(inst, ctx.grammar.by_opcode.get(inst.opcode))
        info = ctx.grammar.instruction(opname)
        head: list[int] = []
        rt = None
        if info.has_type:
            rt, args = args[0], args[1:]
            head.append(rt)
        if info.has_result:
            if result_id is None:
                result_id = self.bound
                self.bound += 1
            head.append(result_id)
        return Instruction(info.opcode, (*head, *ctx.encode(info, args, rt)))


def read(binary) -> Module:
    """Decode a binary (bytes in either byte order, or words)."""
    try:
        w = bytes_to_words(binary)
    except ValueError as e:
        raise DecodeError(str(e)) from None
    if len(w) < 5:
        raise DecodeError(f"{len(w)} words is too short for a SPIR-V header")
    if w[0] != MAGIC:
        raise DecodeError(f"bad magic number {w[0]:#010x}")
    m = Module(((w[1] >> 16) & 0xFF, (w[1] >> 8) & 0xFF), w[2], w[3], w[4])
    i, n = 5, len(w)
    insts = m.instructions
    while i < n:
        count = w[i] >> 16
        if count == 0 or i + count > n:
            raise DecodeError(f"instruction at word {i} has a bad word count {count}")
        insts.append(Instruction(w[i] & 0xFFFF, tuple(w[i + 1 : i + count])))
        i += count
    return m
