"""Word-level values shared by the writer and the reader: ids, raw literals, strings and
numbers of a given width."""

from __future__ import annotations

import struct
import sys
from array import array

MAGIC = 0x07230203


class Id(int):
    """A result id. A distinct type so operands that must be ids are never plain literals."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"%{int(self)}"


class Bits(tuple):
    """The raw words of a numeric literal, for values Python numbers cannot carry exactly
    (NaN payloads), so decoded modules re-encode bit for bit."""

    __slots__ = ()


def string_words(s: str) -> list[int]:
    """A LiteralString: UTF-8, nul-terminated, zero-padded to a whole number of words."""
    b = s.encode()
    b += b"\0" * (4 - len(b) % 4)
    return list(struct.unpack(f"<{len(b) // 4}I", b))


def read_string(words, start: int) -> tuple[str, int]:
    """Decode a LiteralString at ``words[start]``; returns the text and the next index."""
    out = bytearray()
    i = start
    n = len(words)
    while i < n:
        chunk = struct.pack("<I", words[i])
        i += 1
        z = chunk.find(b"\0")
        if z >= 0:
            out += chunk[:z]
            return out.decode(), i
        out += chunk
    raise ValueError("unterminated literal string")


def number_words(value, width: int, is_float: bool, signed: bool) -> list[int]:
    """Encode a numeric literal for a scalar type of ``width`` bits (low-order word first)."""
    if isinstance(value, Bits):
        return list(value)
    if is_float:
        if width == 32:
            return [struct.unpack("<I", struct.pack("<f", float(value)))[0]]
        if width == 64:
            lo, hi = struct.unpack("<II", struct.pack("<d", float(value)))
            return [lo, hi]
        if width == 16:
            return [struct.unpack("<H", struct.pack("<e", float(value)))[0]]
        raise ValueError(f"unsupported float width {width}")
    v = int(value)
    if width <= 32:
        if signed:
            if not -(1 << (width - 1)) <= v < (1 << (width - 1)):
                raise ValueError(f"{value} does not fit a signed {width}-bit integer")
            return [v & 0xFFFFFFFF]
        if not 0 <= v < (1 << width):
            raise ValueError(f"{value} does not fit an unsigned {width}-bit integer")
        return [v]
    lo = v & 0xFFFFFFFF
    hi = (v >> 32) & 0xFFFFFFFF
    if signed and not -(1 << 63) <= v < (1 << 63):
        raise ValueError(f"{value} does not fit a signed 64-bit integer")
    if not signed and not 0 <= v < (1 << 64):
        raise ValueError(f"{value} does not fit an unsigned 64-bit integer")
    return [lo, hi]


def read_number(words: list[int], width: int, is_float: bool, signed: bool):
    """Decode a numeric literal; floats that would not round-trip come back as Bits."""
    if is_float:
        if width == 32:
            v = struct.unpack("<f", struct.pack("<I", words[0]))[0]
        elif width == 64:
            v = struct.unpack("<d", struct.pack("<II", words[0], words[1]))[0]
        elif width == 16:
            v = struct.unpack("<e", struct.pack("<H", words[0]))[0]
        else:
            return Bits(words)
        return v if number_words(v, width, True, False) == list(words) else Bits(words)
    if width <= 32:
        v = words[0]
        if signed and v & 0x80000000:
            v -= 1 << 32
        out = v
    else:
        out = words[0] | (words[1] << 32)
        if signed and out & (1 << 63):
            out -= 1 << 64
    return out if number_words(out, width, False, signed) == list(words) else Bits(words)


def words_to_bytes(words) -> bytes:
    a = array("I", words)
    if sys.byteorder == "big":
        a.byteswap()
    return a.tobytes()


def bytes_to_words(binary: bytes | bytearray | memoryview | list[int] | array) -> array:
    """Words of a binary in host order; accepts either endianness of the magic number."""
    if isinstance(binary, array):
        return binary
    if isinstance(binary, list | tuple):
        return array("I", binary)
    data = bytes(binary)
    if len(data) % 4:
        raise ValueError(f"SPIR-V binary length {len(data)} is not a multiple of 4")
    a = array("I")
    a.frombytes(data)
    if a and a[0] != MAGIC:
        a.byteswap()
    return a
