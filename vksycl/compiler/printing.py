"""`print`, `syclexp.printf` and `assert` in device code.

A kernel cannot write to a file, so each of them compiles to a static record (the text
and formats of a print, the site and message of an assertion) that the kernel's
reflection carries, and to code that writes the record's id and the values it formats
into the device's debug buffer (`runtime/device_output.py`), reached through a hidden
kernel argument that only kernels using them take. The host formats the values once the
command completes. A record's id is a hash of its contents, so it is the same in every
process and a kernel loaded from the disk cache prints as the one compiled.

The buffer is 32-bit words: a header (`HEADER` words: the next free record word, lines
lost, failed assertions, the first failure's record id and work-item, and checked mode's
first violation), then records of one word for the id and one or two per value. A print
reserves its words with one atomic add, so the lines of one work-item keep their order; a
print finding no room counts a lost line instead.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
from typing import Any

import numpy as np

from ..exceptions import exception
from . import ir
from .frontend.describe import kind_of
from .typesys import BOOL, F32, U32, U64, Scalar, mem_type
from .values import PyV

# header words: the next free record word, lines lost, failed assertions, the first
# failure's record id, the record words there are room for, the first failure's global id;
# then checked mode's (`checking`): violations, and the first one's kind, record id,
# address (two words), size, global id and base address (two words)
HEAD, LOST, FAILURES, FAILED_ID, CAPACITY, FAILED_ITEM = 0, 1, 2, 3, 4, 5
VIOLATIONS, VIOLATION_KIND, VIOLATION_ID, VIOLATION_ADDRESS, VIOLATION_SIZE = 8, 9, 10, 11, 13
VIOLATION_ITEM, VIOLATION_BASE, HEADER = 14, 17, 20
# what a violation was (the VIOLATION_KIND word); an accessor's index outside its range
# is ACCESSOR_RANGE plus the dimension
OUT_OF_BOUNDS, LOCAL_OUT_OF_BOUNDS, NOT_FINITE, ACCESSOR_RANGE = 0, 1, 2, 3
# SPIR-V scope and semantics of the buffer's atomics: device scope, relaxed
_DEVICE, _RELAXED = 1, 0
_C_SPEC = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?(hh|h|ll|l|z|j|t|L)?([diouxXeEfFgGcs%])")


def _string(fl: Any, e: ast.expr) -> str | None:
    """The text of a constant string argument, else None (device code has no strings;
    these are no device values but part of the record)."""
    if isinstance(e, ast.Constant):
        return e.value if isinstance(e.value, str) else None
    if isinstance(e, ast.Name | ast.Attribute):
        v = fl.expr(e)
        if isinstance(v, PyV) and isinstance(v.obj, str):
            return v.obj
    return None


def _site(fl: Any, node: ast.AST) -> str:
    return f"{fl.src.filename}:{getattr(node, 'lineno', 0)}"


def record_id(record: dict[str, Any]) -> int:
    """A nonzero 32-bit id from the record's contents (0 marks no record)."""
    digest = hashlib.blake2b(repr(sorted(record.items())).encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little") or 1


def _words(v: ir.Value) -> tuple[list[ir.Value], str]:
    """A scalar as the 32-bit words the record holds, and how the host reads them back."""
    t = v.ty
    assert isinstance(t, Scalar)
    if t.is_bool:
        return [ir.Op("OpSelect", U32, [v, ir.Const(U32, 1), ir.Const(U32, 0)])], "bool"
    if t.bits == 64:
        bits = v if t == U64 else ir.Op("OpBitcast", U64, [v])
        high = ir.Op("OpShiftRightLogical", U64, [bits, ir.Const(U64, 32)])
        return [ir.Op("OpUConvert", U32, [bits]), ir.Op("OpUConvert", U32, [high])], \
            str(t.dtype)
    if t.is_float:
        f = v if t == F32 else ir.Op("OpFConvert", F32, [v])
        return [ir.Op("OpBitcast", U32, [f])], str(t.dtype)
    if t.bits < 32:
        wide = Scalar(t.kind, 32)
        v = ir.Op("OpSConvert" if t.is_signed else "OpUConvert", wide, [v])
    return [v if v.ty == U32 else ir.Op("OpBitcast", U32, [v])], str(t.dtype)


def _sample(dtype: str) -> Any:
    return np.bool_(True) if dtype == "bool" else np.dtype(dtype).type(1)


class Line:
    """One line being built: literal text and the values it formats."""

    def __init__(self, fl: Any, node: ast.AST) -> None:
        self.fl, self.node = fl, node
        self.pieces: list[Any] = []  # text, or [dtype, spec, "py" | "c"]
        self.values: list[ir.Value] = []

    def text(self, s: str) -> None:
        if self.pieces and isinstance(self.pieces[-1], str):
            self.pieces[-1] += s
        elif s:
            self.pieces.append(s)

    def value(self, v: Any, spec: str, conversion: int, style: str) -> None:
        """A value formatted by Python's `format(v, spec)` (style "py") or C's `%` spec
        (style "c"); a compile-time constant becomes text now."""
        fl, node = self.fl, self.node
        if isinstance(v, ir.Value) and isinstance(v.ty, Scalar):
            if conversion not in (-1, ord("s"), ord("r")):
                raise fl.err(node, f"!{chr(conversion)} is not supported in device code")
            words, dtype = _words(v)
            self._check(_sample(dtype), spec, style)
            self.pieces.append([dtype, spec, style])
            self.values += words
            return
        try:
            const = fl.m.intr.const(fl, v, node)
        except exception:
            raise fl.err(node, f"cannot print {kind_of(v)} in device code: print "
                         "scalars (numbers and bools) and constants") from None
        self._check(const, spec, style)
        if conversion == ord("r"):
            const = repr(const)
        elif conversion == ord("a"):
            const = ascii(const)
        self.text(format_value(const, spec, style))

    def _check(self, sample: Any, spec: str, style: str) -> None:
        try:
            format_value(sample, spec, style)
        except (ValueError, TypeError) as ex:
            what = f"format spec {spec!r}" if style == "py" else f"printf conversion {spec!r}"
            raise self.fl.err(self.node, f"{what} does not format a {type(sample).__name__}: "
                              f"{ex}") from None

    def emit(self) -> None:
        """Writes the record's code: room reserved, then the values, then the id (a
        drain while the kernel runs stops at a record whose id is not written yet)."""
        fl = self.fl
        record = {"kind": "print", "site": _site(fl, self.node), "pieces": self.pieces}
        rid = record_id(record)
        fl.m.debug_records[rid] = record
        base = fl.m.debug_buffer()
        n = 1 + len(self.values)
        head = ir.Atomic("OpAtomicIAdd", _word(base, HEAD), [ir.Const(U32, n)], U32,
                         _DEVICE, _RELAXED)
        at = fl.new_local("print.at", U32)
        fl.emit(ir.Assign(at, head))
        fits = ir.Op("OpULessThanEqual", BOOL, [
            ir.Op("OpIAdd", U32, [ir.Read(at), ir.Const(U32, n)]),
            ir.Load(_word(base, CAPACITY))])
        start = ir.Op("OpIAdd", U64, [base, ir.Op("OpIMul", U64, [
            ir.Op("OpUConvert", U64, [ir.Read(at)]), ir.Const(U64, 4)])])
        addr = fl.new_local("print.addr", U64)
        writes: list[ir.Stmt] = [ir.Assign(addr, ir.Op("OpIAdd", U64, [start, ir.Const(
            U64, 4 * HEADER)]))]
        for k, w in enumerate(self.values, 1):
            writes.append(ir.Store(_word(ir.Read(addr), k), w))
        writes.append(ir.Store(_word(ir.Read(addr), 0), ir.Const(U32, rid)))
        lost = [ir.Eval(ir.Atomic("OpAtomicIAdd", _word(base, LOST), [ir.Const(U32, 1)], U32,
                                  _DEVICE, _RELAXED))]
        fl.emit(ir.If(fits, writes, lost))


def _word(address: ir.Value, k: int) -> ir.Place:
    if k:
        address = ir.Op("OpIAdd", U64, [address, ir.Const(U64, 4 * k)])
    return ir.Place(DEBUG_ROOT, address, (), mem_type(U32))


# the debug buffer as global memory: a root of its own, so that kernel fusion tells its
# accesses apart (prints reserve disjoint room; nothing else reads it on the device)
DEBUG_ROOT = ir.GlobalRoot(U32)


def format_value(v: Any, spec: str, style: str) -> str:
    """How the host formats one value of a record (and the compiler checks a spec)."""
    if style == "c":
        if spec[-1] in "diouxXc" and not isinstance(v, str):
            v = int(v)
        elif spec[-1] in "eEfFgG":
            v = float(v)
        return spec % v
    if isinstance(v, np.floating) and not spec:
        return str(v)  # float32's shortest repr, as numpy prints it
    if isinstance(v, np.generic):
        v = v.item()
    return format(v, spec)


# -- print ------------------------------------------------------------------------------

def print_call(fl: Any, e: ast.Call) -> Any:
    """`print(*values, sep=" ", end="\\n")` in device code; f-strings format their values
    with their specs."""
    for a in e.args:
        if isinstance(a, ast.Starred):
            raise fl.err(a, "*args is not supported in device code")
    opts = {"sep": " ", "end": "\n"}
    for k in e.keywords:
        if k.arg not in opts:
            raise fl.err(k, f"print() in device code takes sep= and end=, not "
                         f"{k.arg or '**kwargs'}=")
        v = _string(fl, k.value)
        if v is None:
            if isinstance(k.value, ast.Constant) and k.value.value is None:
                continue
            raise fl.err(k, f"print()'s {k.arg}= must be a constant string in device code")
        opts[k.arg] = v
    line = Line(fl, e)
    for i, a in enumerate(e.args):
        if i:
            line.text(opts["sep"])
        if isinstance(a, ast.JoinedStr):
            _fstring(fl, line, a)
        else:
            text = _string(fl, a)
            if text is not None:
                line.text(text)
            else:
                line.value(fl.expr(a), "", -1, "py")
    line.text(opts["end"])
    line.emit()
    return PyV(None)


def _fstring(fl: Any, line: Line, s: ast.JoinedStr) -> None:
    for part in s.values:
        if isinstance(part, ast.Constant):
            line.text(str(part.value))
            continue
        assert isinstance(part, ast.FormattedValue)
        spec = ""
        if part.format_spec is not None:
            for p in part.format_spec.values:  # type: ignore[attr-defined]
                if not isinstance(p, ast.Constant):
                    raise fl.err(p, "a format spec computed in device code is not "
                                 "supported: write it out")
                spec += str(p.value)
        line.value(fl.expr(part.value), spec, part.conversion, "py")


# -- printf -----------------------------------------------------------------------------

def printf(fmt: str, *args: Any) -> None:
    """`syclexp.printf(format, *args)`: C's printf; on the host it writes to stdout (in
    device code the frontend knows it by its `__vksycl_device__`)."""
    text, at = "", 0
    for m in _C_SPEC.finditer(fmt):
        text += fmt[at:m.start()]
        at = m.end()
        flags, width, precision, _, conv = m.groups()
        if conv == "%":
            text += "%"
            continue
        spec = f"%{flags}{width or ''}{'.' + precision if precision is not None else ''}" \
            f"{conv}"
        text += format_value(args[0], spec, "c")
        args = args[1:]
    sys.stdout.write(text + fmt[at:])


printf.__vksycl_device__ = "printf"  # type: ignore[attr-defined]


def lower_printf(fl: Any, e: ast.Call) -> Any:
    """`syclexp.printf(format, *args)`: C's conversions (%d %i %u %o %x %X %e %f %g %c
    %s %%, flags, width and precision; length modifiers are accepted and ignored)."""
    node = e
    if e.keywords or any(isinstance(a, ast.Starred) for a in e.args):
        raise fl.err(e, "printf takes a format and values, no keywords or *args")
    fmt = _string(fl, e.args[0]) if e.args else None
    if fmt is None:
        raise fl.err(e, "printf's format must be a constant string")
    values: list[Any] = [_string(fl, a) or fl.expr(a) for a in e.args[1:]]
    line = Line(fl, node)
    at = 0
    for m in _C_SPEC.finditer(fmt):
        line.text(fmt[at:m.start()])
        at = m.end()
        flags, width, precision, _, conv = m.groups()
        if conv == "%":
            line.text("%")
            continue
        if "*" in (width, precision):
            raise fl.err(node, "printf: * widths and precisions are not supported in "
                         "device code")
        if not values:
            raise fl.err(node, f"printf: the format {fmt!r} has more conversions than "
                         f"the {len(e.args) - 1} values given")
        spec = f"%{flags}{width or ''}{'.' + precision if precision is not None else ''}" \
            f"{conv}"
        v = values.pop(0)
        line.value(PyV(v) if isinstance(v, str) else v, spec, -1, "c")
    rest = fmt[at:]
    if "%" in rest:
        raise fl.err(node, f"printf: unsupported conversion in {rest!r}")
    line.text(rest)
    if values:
        raise fl.err(node, f"printf: {len(values)} values more than the format {fmt!r} "
                     "converts")
    line.emit()
    return PyV(None)


# -- assert -----------------------------------------------------------------------------

def assertion(fl: Any, s: ast.Assert) -> None:
    """`assert cond[, message]`: a failing work-item counts itself, and the first to fail
    records the assertion's id and its global id; under `python -O` nothing is compiled
    (the kernel is then cached apart: `kernel.disk_key`)."""
    if sys.flags.optimize:
        return
    message = ""
    if s.msg is not None:
        text = _string(fl, s.msg)
        if text is None:
            raise fl.err(s.msg, "an assertion's message must be a constant string in "
                         "device code")
        message = text
    cond = fl.truth(fl.expr(s.test), s.test)
    record = {"kind": "assert", "site": _site(fl, s), "pieces": [], "message": message,
              "test": ast.unparse(s.test), "kernel": fl.m.spec.name,
              "dims": 0 if fl.m.kind == "single_task" else fl.m.dims}
    rid = record_id(record)
    fl.m.debug_records[rid] = record
    base = fl.m.debug_buffer()
    first = ir.Atomic("OpAtomicIAdd", _word(base, FAILURES), [ir.Const(U32, 1)], U32,
                      _DEVICE, _RELAXED)
    ids = fl.m.debug_item_ids()
    note = [ir.Store(_word(base, FAILED_ID), ir.Const(U32, rid))] + [
        ir.Store(_word(base, FAILED_ITEM + d), ir.Op("OpBitcast", U32, [g]))
        for d, g in enumerate(ids)]
    failed = [ir.If(ir.Op("OpIEqual", BOOL, [first, ir.Const(U32, 0)]), note, [])]
    fl.emit(ir.If(ir.Op("OpLogicalNot", BOOL, [cond]), failed, []))


# -- the host's reading of the buffer ---------------------------------------------------

def _words_of(dtype: str) -> int:
    return 2 if dtype in ("int64", "uint64", "float64") else 1


def _decode(dtype: str, words: np.ndarray) -> Any:
    if dtype == "bool":
        return bool(words[0])
    if len(words) == 2:
        return words.view(np.dtype(dtype))[0]
    if dtype[0] == "f":
        return np.dtype(dtype).type(words.view(np.float32)[0])
    wide = np.int32 if dtype[0] == "i" else np.uint32
    return np.dtype(dtype).type(words.view(wide)[0])


def _text(record: dict[str, Any], words: np.ndarray) -> str:
    out, at = [], 0
    for piece in record["pieces"]:
        if isinstance(piece, str):
            out.append(piece)
            continue
        dtype, spec, style = piece
        n = _words_of(dtype)
        out.append(format_value(_decode(dtype, words[at: at + n]), spec, style))
        at += n
    return "".join(out)


class BufferFormat:
    """How the host reads and resets a debug buffer (a uint32 array) that kernels
    compiled here write; the runtime, which owns the buffer, is handed this class."""

    @staticmethod
    def start(words: np.ndarray) -> None:
        words[:] = 0
        words[CAPACITY] = len(words) - HEADER

    @staticmethod
    def lines(words: np.ndarray, pos: int, records: dict[int, dict[str, Any]]
              ) -> tuple[list[str], int]:
        """The lines of the complete records from record word `pos` on, and where the
        first one not yet written (a kernel running now reserved it) starts."""
        end = min(int(words[HEAD]), int(words[CAPACITY]))
        out = []
        while pos < end:
            record = records.get(int(words[HEADER + pos]))
            if record is None:
                break
            n = 1 + sum(_words_of(p[0]) for p in record["pieces"] if not isinstance(p, str))
            out.append(_text(record, words[HEADER + pos + 1: HEADER + pos + n]))
            pos += n
        return out, pos

    @staticmethod
    def unwritten(words: np.ndarray, start: int, end: int) -> None:
        """Zeroes record words read, so that room reserved again reads as unwritten."""
        words[HEADER + start: HEADER + end] = 0

    @staticmethod
    def reserved(words: np.ndarray) -> int:
        return min(int(words[HEAD]), int(words[CAPACITY]))

    @staticmethod
    def counts(words: np.ndarray) -> tuple[int, int, int]:
        """(lines lost, work-items whose assertion failed, accesses checked mode
        stopped) since the last reset."""
        return int(words[LOST]), int(words[FAILURES]), int(words[VIOLATIONS])

    @staticmethod
    def violation(words: np.ndarray, records: dict[int, dict[str, Any]], count: int
                  ) -> tuple[str, int, int, int, int]:
        """The first access checked mode stopped: (what and where, its kind, address,
        size, base: the pointer it was computed from, or the local array's size)."""
        kind = int(words[VIOLATION_KIND])
        record = records.get(int(words[VIOLATION_ID]))
        address = int(words[VIOLATION_ADDRESS: VIOLATION_ADDRESS + 2].view(np.uint64)[0])
        base = int(words[VIOLATION_BASE: VIOLATION_BASE + 2].view(np.uint64)[0])
        size = int(words[VIOLATION_SIZE])
        if record is None:
            return f"a checked access failed ({count})", kind, address, size, base
        dims = record["dims"]
        ids = tuple(int(x) for x in words[VIOLATION_ITEM: VIOLATION_ITEM + dims].view(
            np.int32))
        where = "the single_task" if not dims else \
            f"work-item {ids if dims > 1 else ids[0]}"
        what = {OUT_OF_BOUNDS: f"out-of-bounds {record['access']}",
                LOCAL_OUT_OF_BOUNDS: f"out-of-bounds {record['access']} of work-group memory",
                NOT_FINITE: "NaN or Inf stored"}.get(
                    kind, f"out-of-bounds {record['access']} through an accessor")
        return (f"{record['site']}: {what} in kernel {record['kernel']} ({where}; "
                f"{count} access{'es' if count > 1 else ''} stopped)"), kind, address, \
            size, base

    @staticmethod
    def failure(words: np.ndarray, records: dict[int, dict[str, Any]], count: int) -> str:
        """The message of the first failed assertion recorded."""
        record = records.get(int(words[FAILED_ID]))
        if record is None:
            return f"an assertion failed ({count} work-items)"
        dims = record["dims"]
        ids = tuple(int(x) for x in words[FAILED_ITEM: FAILED_ITEM + dims].view(np.int32))
        where = "the single_task" if not dims else \
            f"work-item {ids if dims > 1 else ids[0]}"
        why = record["message"] or f"assert {record['test']}"
        return (f"{record['site']}: assertion failed in kernel {record['kernel']}: {why} "
                f"({where}; {count} work-item{'s' if count > 1 else ''} failed)")

    @staticmethod
    def where(kind: int, address: int, size: int, base: int) -> str:
        """What a violation other than a global access out of bounds touched."""
        if kind == LOCAL_OUT_OF_BOUNDS:
            return (f"{size}-byte access at byte {address} of work-group memory of "
                    f"{base} bytes")
        if kind == NOT_FINITE:
            return f"{size}-byte store at {address:#x} of value bits {base:#x}"
        index, extent = base & 0xFFFFFFFF, base >> 32
        index -= (index >> 31) << 32  # a negative index, as int32
        return (f"index {index} in dimension {kind - ACCESSOR_RANGE} is outside the "
                f"accessor's range ({extent} there); the {size}-byte access would have "
                f"been at {address:#x}")

    @staticmethod
    def reset(words: np.ndarray) -> None:
        words[HEAD] = words[LOST] = words[FAILURES] = words[VIOLATIONS] = 0


__all__ = [
    "ACCESSOR_RANGE",
    "CAPACITY",
    "DEBUG_ROOT",
    "FAILED_ID",
    "FAILED_ITEM",
    "FAILURES",
    "HEAD",
    "HEADER",
    "LOCAL_OUT_OF_BOUNDS",
    "LOST",
    "NOT_FINITE",
    "OUT_OF_BOUNDS",
    "VIOLATIONS",
    "VIOLATION_ADDRESS",
    "VIOLATION_BASE",
    "VIOLATION_ID",
    "VIOLATION_ITEM",
    "VIOLATION_KIND",
    "VIOLATION_SIZE",
    "BufferFormat",
    "assertion",
    "format_value",
    "lower_printf",
    "print_call",
    "printf",
    "record_id",
]
