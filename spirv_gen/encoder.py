"""Grammar-driven operand encoding: logical operands (ids, literals, enumerant names)
to words. Shared by the module builder and by re-encoding decoded modules."""

from __future__ import annotations

from collections.abc import Callable

from .errors import BuildError
from .grammar import Enumerant, ExtInstSet, Grammar, InstructionInfo, Operand, Requirements
from .words import Bits, Id, number_words, string_words

ScalarInfo = tuple[int, bool, bool]  # width, is_float, signed


class Encoder:
    """Turns the logical operands of one instruction into words.

    Subclasses supply ``scalar_of(type_id)`` (for literals whose width depends on a type),
    and may override ``require`` (to collect capabilities) and ``id_for_enum`` (to accept
    Scope / MemorySemantics names where the grammar wants an id)."""

    def __init__(self, grammar: Grammar) -> None:
        self.grammar = grammar
        self.kinds = grammar.kinds

    # hooks ---------------------------------------------------------------------------
    def require(self, req: Requirements, what: str) -> None:
        """Record that the module uses something with these requirements."""

    def id_for_enum(self, kind: str, value) -> Id:
        raise BuildError(f"expected an id for {kind}, got {value!r}")

    def scalar_of(self, type_id: int) -> ScalarInfo:
        raise BuildError(f"type of %{type_id} is unknown to this encoder")

    def type_of(self, value_id: int) -> int:
        raise BuildError(f"type of %{value_id} is unknown to this encoder")

    def ext_set_of(self, set_id: int) -> ExtInstSet | None:
        """The grammar of the extended instruction set imported as ``set_id``, if known."""
        return None

    # encoding ------------------------------------------------------------------------
    def encode(
        self, info: InstructionInfo, args: tuple | list, result_type: int | None = None
    ) -> list[int]:
        """Operand words (after result type and id) of ``info`` for ``args``."""
        if not info.requires.empty:
            self.require(info.requires, info.opname)
        out: list[int] = []
        name = info.opname
        if name in _SPECIAL:
            _SPECIAL[name](self, info, list(args), result_type, out)
            return out
        self._encode_all(info.operands, list(args), out, name, result_type)
        return out

    def _encode_all(self, specs, args: list, out: list[int], where: str, rt) -> None:
        """Encode ``args`` as exactly the operands ``specs`` describe."""
        i = self._encode_list(specs, args, 0, out, where, rt)
        if i < len(args):
            raise BuildError(f"{where}: {len(args) - i} operand(s) too many: {args[i:]!r}")

    def _encode_list(
        self,
        specs: tuple[Operand, ...],
        args: list,
        i: int,
        out: list[int],
        where: str,
        result_type: int | None,
    ) -> int:
        n = len(args)
        for spec in specs:
            q = spec.quantifier
            if q == "*":
                while i < n:
                    i = self._encode_one(spec, args, i, out, where, result_type)
                return i
            if i >= n:
                if q == "?":
                    continue
                raise BuildError(f"{where}: missing operand {spec.name or spec.kind}")
            if q == "?" and args[i] is None:
                i += 1
                continue
            i = self._encode_one(spec, args, i, out, where, result_type)
        return i

    def _encode_one(
        self, spec: Operand, args: list, i: int, out: list[int], where: str, rt: int | None
    ) -> int:
        a = args[i]
        kind = spec.kind
        k = self.kinds[kind]
        cat = k.category
        if cat == "Id":
            if a.__class__ is Id:
                out.append(a)
            elif kind in ("IdScope", "IdMemorySemantics") and isinstance(a, str):
                out.append(self.id_for_enum(kind, a))
            else:
                raise BuildError(
                    f"{where}: operand {spec.name or kind} must be an id, got {a!r}"
                )
            return i + 1
        if cat == "Literal":
            if kind == "LiteralString":
                if not isinstance(a, str):
                    raise BuildError(f"{where}: operand {spec.name} must be a str, got {a!r}")
                out.extend(string_words(a))
            elif kind == "LiteralContextDependentNumber":
                if rt is None:
                    raise BuildError(f"{where}: no type to size literal {a!r}")
                out.extend(self._number(rt, a, where))
            elif kind == "LiteralSpecConstantOpInteger":
                out.append(self._opcode(a, where))
            else:
                if isinstance(a, Bits):
                    out.extend(a)
                elif isinstance(a, int) and not isinstance(a, bool):
                    out.append(a & 0xFFFFFFFF)
                else:
                    raise BuildError(
                        f"{where}: operand {spec.name or kind} must be an int, got {a!r}"
                    )
            return i + 1
        if cat == "Composite":
            pair = a if isinstance(a, tuple) and not isinstance(a, Bits) else None
            sub = list(pair) if pair is not None else args[i : i + len(k.bases)]
            if len(sub) != len(k.bases):
                raise BuildError(f"{where}: {kind} needs {len(k.bases)} values, got {sub!r}")
            for base, v in zip(k.bases, sub, strict=True):
                self._encode_one(Operand(base, "", kind), [v], 0, out, where, rt)
            return i + 1 if pair is not None else i + len(k.bases)
        if cat == "ValueEnum":
            e = self._enumerant(kind, a, where)
            out.append(e.value)
            if not e.requires.empty:
                self.require(e.requires, f"{kind} {e.name}")
            if e.parameters:
                return self._encode_list(e.parameters, args, i + 1, out, f"{kind} {e.name}", rt)
            return i + 1
        if cat == "BitEnum":
            mask, parts = self._mask(kind, a, where)
            out.append(mask)
            i += 1
            for e in parts:
                if not e.requires.empty:
                    self.require(e.requires, f"{kind} {e.name}")
                if e.parameters:
                    i = self._encode_list(e.parameters, args, i, out, f"{kind} {e.name}", rt)
            return i
        raise BuildError(f"{where}: unsupported operand kind {kind}")

    def _enumerant(self, kind: str, a, where: str) -> Enumerant:
        k = self.kinds[kind]
        e = k.by_name.get(a) if isinstance(a, str) else k.by_value.get(a)
        if e is None:
            if isinstance(a, int) and not isinstance(a, bool):
                return Enumerant(str(a), a, (), Requirements())
            raise BuildError(f"{where}: {a!r} is not a {kind} enumerant")
        return e

    def _mask(self, kind: str, a, where: str) -> tuple[int, list[Enumerant]]:
        k = self.kinds[kind]
        if a is None:
            return 0, []
        if isinstance(a, int) and not isinstance(a, bool):
            parts = [e for v, e in sorted(k.by_value.items()) if v and (a & v) == v]
            return a, parts
        names = a.split("|") if isinstance(a, str) else list(a)
        mask = 0
        parts = []
        for n in names:
            n = n.strip()
            e = k.by_name.get(n)
            if e is None:
                raise BuildError(f"{where}: {n!r} is not a {kind} bit")
            mask |= e.value
            if e.value:
                parts.append(e)
        parts.sort(key=lambda e: e.value)
        return mask, parts

    def _opcode(self, a, where: str) -> int:
        if isinstance(a, int):
            return a
        try:
            return self.grammar.instruction(a).opcode
        except KeyError:
            raise BuildError(f"{where}: unknown opcode {a!r}") from None

    def _number(self, type_id: int, value, where: str) -> list[int]:
        width, is_float, signed = self.scalar_of(type_id)
        try:
            return number_words(value, width, is_float, signed)
        except (ValueError, OverflowError, TypeError) as e:
            raise BuildError(f"{where}: {e}") from None


def _spec_constant_op(enc: Encoder, info, args, rt, out) -> None:
    if not args:
        raise BuildError("OpSpecConstantOp: missing the opcode")
    op = args[0]
    inner = enc.grammar.by_opcode.get(op) if isinstance(op, int) else None
    if inner is None:
        try:
            inner = enc.grammar.instruction(op)
        except KeyError:
            raise BuildError(f"OpSpecConstantOp: unknown opcode {op!r}") from None
    out.append(inner.opcode)
    enc._encode_all(inner.operands, args[1:], out, inner.opname, rt)


def _switch(enc: Encoder, info, args, rt, out) -> None:
    if len(args) < 2:
        raise BuildError("OpSwitch: needs a selector and a default label")
    sel, default, *targets = args
    for v, what in ((sel, "selector"), (default, "default")):
        if v.__class__ is not Id:
            raise BuildError(f"OpSwitch: {what} must be an id, got {v!r}")
    out += [sel, default]
    sel_type = enc.type_of(sel)
    flat: list = []
    for t in targets:
        flat.extend(t) if isinstance(t, tuple) and not isinstance(t, Bits) else flat.append(t)
    if len(flat) % 2:
        raise BuildError("OpSwitch: targets come in (literal, label) pairs")
    for lit, label in zip(flat[::2], flat[1::2], strict=True):
        if label.__class__ is not Id:
            raise BuildError(f"OpSwitch: case target must be a label id, got {label!r}")
        out.extend(enc._number(sel_type, lit, "OpSwitch"))
        out.append(label)


def _ext_inst(enc: Encoder, info, args, rt, out) -> None:
    if len(args) < 2:
        raise BuildError("OpExtInst: needs the set and the instruction")
    set_id, inst, *rest = args
    if set_id.__class__ is not Id:
        raise BuildError(f"OpExtInst: set must be an id, got {set_id!r}")
    ext = enc.ext_set_of(set_id)
    out.append(set_id)
    if ext is None:
        if not isinstance(inst, int):
            raise BuildError(f"OpExtInst: instruction of an unknown set must be a number: {inst!r}")
        out.append(inst)
        for r in rest:
            out.extend(r) if isinstance(r, Bits) else out.append(int(r) & 0xFFFFFFFF)
        return
    e = ext.by_name.get(inst) if isinstance(inst, str) else ext.by_opcode.get(inst)
    if e is None:
        raise BuildError(f"OpExtInst: {inst!r} is not in {ext.name}")
    if not e.requires.empty:
        enc.require(e.requires, f"{ext.name} {e.opname}")
    out.append(e.opcode)
    enc._encode_all(e.operands, rest, out, f"{ext.name}.{e.opname}", rt)


_SPECIAL: dict[str, Callable] = {
    "OpSpecConstantOp": _spec_constant_op,
    "OpSwitch": _switch,
    "OpExtInst": _ext_inst,
}
