"""Memory operations as commands: byte-exact copies and fills between any two kinds of
memory (device, host and shared USM, and numpy arrays), by device address, so allocations
of any size take one path. Checking happens in `resolve`, before any command exists."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from .commands import Command, GpuStep, HostStep, LowerContext, Step
from .engine import Engine, Program
from .glsl import compile_glsl
from .submission import reraise
from .usm import Allocation, alloc, other_device, ptr

_GROUP = 256
_MAX_GROUPS = 32768  # under the 65535 every Vulkan device allows; more groups hide latency
_VEC = 16
_MAX_PUSH_PATTERN = 64
_PIECE = 1 << 30  # bytes per dispatch, so the shaders' 32-bit offsets never overflow


@dataclass(frozen=True)
class Span:
    """A checked byte range: in a USM allocation, or in a numpy array's memory."""

    allocation: Allocation | None
    array: np.ndarray | None  # flat uint8 view
    offset: int
    nbytes: int

    @property
    def address(self) -> int:
        return self.allocation.address + self.offset

    def host_view(self) -> np.ndarray | None:
        if self.array is not None:
            return self.array[self.offset: self.offset + self.nbytes]
        if self.allocation.host_accessible:
            return self.allocation.host_bytes()[self.offset: self.offset + self.nbytes]
        return None


def resolve(target: Any, nbytes: int, queue: Any, what: str, writable: bool,
            cross_device: bool = False) -> Span:
    """Checks one side of a memory operation; raises errc.invalid and enqueues nothing.
    Host and shared USM of another device of the context is host memory here; device USM
    of another device is refused, unless `cross_device` (a memcpy side, which
    `crossdevice.copy_command` checks with the other side)."""
    if nbytes < 0:
        raise exception(errc.invalid, f"{what}: negative size {nbytes}")
    if target is None:
        if nbytes == 0:
            return Span(None, np.zeros(0, np.uint8), 0, 0)
        raise exception(errc.invalid, f"{what}: null pointer")
    if isinstance(target, ptr):
        a = target.allocation
        if a.freed:
            raise exception(errc.invalid, f"{what}: pointer to freed memory")
        if a.context is not queue.get_context() or not queue.get_context().owns(a):
            raise exception(errc.invalid, f"{what}: pointer from another context")
        off = target.byte_offset
        if off < 0 or off + nbytes > a.nbytes:
            raise exception(errc.invalid, f"{what}: {nbytes} bytes at byte {off} overrun the "
                            f"allocation of {a.nbytes} bytes")
        dev = queue.get_device()
        if a.device is not dev and a.device != dev:
            if a.host_accessible:  # the host copies it, as it would a numpy array
                return Span(None, a.host_bytes(), off, nbytes)
            if not cross_device:
                raise other_device(what, a, dev)
        return Span(a, None, off, nbytes)
    if isinstance(target, np.ndarray | memoryview | bytearray):
        arr = np.asarray(target)
        if not arr.flags.c_contiguous:
            raise exception(errc.invalid, f"{what}: numpy array is not C-contiguous")
        if writable and not arr.flags.writeable:
            raise exception(errc.invalid, f"{what}: numpy array is read-only")
        if nbytes > arr.nbytes:
            raise exception(errc.invalid, f"{what}: {nbytes} bytes overrun the array of "
                            f"{arr.nbytes} bytes")
        return Span(None, arr.reshape(-1).view(np.uint8), 0, nbytes)
    raise exception(errc.invalid, f"{what}: expected a USM pointer or a numpy array, "
                    f"got {type(target).__name__}")


@cache
def _shader_source(name: str) -> str:
    return resources.files(__package__).joinpath(f"shaders/{name}").read_text()


_programs: dict[tuple[int, str], Program] = {}


def _program(engine: Engine, name: str) -> Program:
    key = (id(engine), name)
    prog = _programs.get(key)
    if prog is None:
        prog = _programs[key] = engine.program(compile_glsl(_shader_source(name)))
    return prog


def _groups(units: int) -> tuple[int, int, int]:
    needed = max(1, -(-units // _GROUP))
    return (min(_MAX_GROUPS, 1 << (needed - 1).bit_length()), 1, 1)


def _vector_split(offset: int, n: int) -> tuple[int, int, int]:
    """(head, body, tail) of n bytes at `offset`: the body starts 16-byte aligned and is a
    whole number of 16-byte units, for the vector kernels; head and tail go byte-wise."""
    head = (-offset) % _VEC
    body = (n - head) // _VEC * _VEC
    return head, body, n - head - body


def _copy_words(engine: Engine, src: int, dst: int, n: int):
    return engine.dispatch(_program(engine, "copy_words.comp"), _groups(-(-n // 16) + 1),
                           struct.pack("<QQ3I", src & ~3, dst & ~3, src & 3, dst & 3, n))


def copy_dispatches(engine: Engine, src: int, dst: int, n: int) -> list:
    """Dispatches copying n bytes from address src to address dst; a 16-byte body goes
    through the vector kernel."""
    out = []
    for at in range(0, n, _PIECE):
        out += _copy_piece(engine, src + at, dst + at, min(_PIECE, n - at))
    return out


def _copy_piece(engine: Engine, src: int, dst: int, n: int) -> list:
    if (src - dst) % _VEC or n < 2 * _VEC:
        return [_copy_words(engine, src, dst, n)]
    head, body, tail = _vector_split(dst, n)
    out = [_copy_words(engine, src, dst, head)] if head else []
    out.append(engine.dispatch(_program(engine, "copy_vec4.comp"), _groups(body // _VEC),
                               struct.pack("<QQI", src + head, dst + head, body // _VEC)))
    if tail:
        at = head + body
        out.append(_copy_words(engine, src + at, dst + at, tail))
    return out


class MemCopy(Command):
    """`memcpy`/`copy`: n bytes from src to dst."""

    command_type = "memcpy"

    def __init__(self, src: Span, dst: Span) -> None:
        self.src, self.dst = src, dst
        # numpy on one side and memory the host cannot map on the other
        if src.array is not None:
            self.needs_staging = dst.array is None and dst.host_view() is None
        else:
            self.needs_staging = dst.array is not None and src.host_view() is None

    def lower(self, ctx: LowerContext) -> list[Step]:
        src, dst = self.src, self.dst
        if src.nbytes == 0:
            return []
        if src.allocation is not None and dst.allocation is not None:
            return [GpuStep(copy_dispatches(ctx.engine, src.address, dst.address,
                                             src.nbytes))]
        sv, dv = src.host_view(), dst.host_view()
        if sv is not None and dv is not None:
            return [HostStep(lambda: np.copyto(dv, sv))]
        if sv is not None:  # numpy into device memory, through staging
            return through_staging(ctx, dst, lambda stage, at, n: np.copyto(
                stage.host[:n], sv[at: at + n]), upload=True)
        return through_staging(ctx, src, lambda stage, at, n: np.copyto(
            dv[at: at + n], stage.host[:n]), upload=False)


def through_staging(ctx: LowerContext, usm: Span, host_copy, upload: bool) -> list[Step]:
    """Windows of a numpy <-> device copy through two staging buffers, so the host copies
    one window while the device copies the other."""
    window = ctx.staging(0).nbytes
    host_steps, gpu_steps = [], []
    for k, done in enumerate(range(0, usm.nbytes, window)):
        stage = ctx.staging(k % 2)
        n = min(window, usm.nbytes - done)
        ends = (stage.address, usm.address + done)
        gpu = copy_dispatches(ctx.engine, *(ends if upload else ends[::-1]), n)
        host_steps.append(HostStep(lambda stage=stage, at=done, n=n: host_copy(stage, at, n),
                                   lag=1))
        gpu_steps.append(GpuStep(gpu, flush=True))
    steps: list[Step] = []
    if upload:  # fill window k while the device copies window k-1 out of the other buffer
        for host, gpu in zip(host_steps, gpu_steps, strict=True):
            steps += [host, gpu]
        return steps
    # download: the device fills window k+1 while the host reads window k
    steps.append(gpu_steps[0])
    for k, host in enumerate(host_steps):
        if k + 1 < len(gpu_steps):
            steps.append(gpu_steps[k + 1])
        else:
            host.lag = 0
        steps.append(host)
    return steps


class Pieces(Command):
    """A copy or fill of a region that is several runs of memory (a ranged accessor's
    rows): its pieces one after another. A piece's first host step waits for all the
    work before it, so pieces going through the staging buffers never share a window."""

    def __init__(self, pieces: list[Command]) -> None:
        self.pieces = pieces
        self.command_type = pieces[0].command_type
        self.needs_staging = any(p.needs_staging for p in pieces)

    def lower(self, ctx: LowerContext) -> list[Step]:
        steps: list[Step] = []
        for piece in self.pieces:
            own = piece.lower(ctx)
            if steps:
                first_host = next((st for st in own if isinstance(st, HostStep)), None)
                if first_host is not None:
                    first_host.lag = 0
            steps += own
        return steps


def in_pieces(pieces: list[Command]) -> Command:
    """One command for a copy or fill made of `pieces`: the piece itself when there is
    one."""
    return pieces[0] if len(pieces) == 1 else Pieces(pieces)


def paired(sources: list[Span], targets: list[Span], nbytes: int) -> list[tuple[Span, Span]]:
    """The first `nbytes` of two sequences of byte ranges, cut where either side's ranges
    end: (source piece, target piece) pairs, in order."""
    pairs = []
    si = ti = s_at = t_at = 0
    done = 0
    while done < nbytes:
        s, t = sources[si], targets[ti]
        n = min(s.nbytes - s_at, t.nbytes - t_at, nbytes - done)
        pairs.append((Span(s.allocation, s.array, s.offset + s_at, n),
                      Span(t.allocation, t.array, t.offset + t_at, n)))
        done += n
        s_at += n
        t_at += n
        if s_at == s.nbytes:
            si, s_at = si + 1, 0
        if t_at == t.nbytes:
            ti, t_at = ti + 1, 0
    return pairs or [(sources[0], targets[0])]


class Fill(Command):
    """`fill`/`memset`: count copies of a pattern of bytes."""

    def __init__(self, dst: Span, pattern: bytes, command_type: str = "fill") -> None:
        self.dst, self.pattern, self.command_type = dst, pattern, command_type
        self.needs_staging = dst.host_view() is None and len(pattern) > _MAX_PUSH_PATTERN

    def lower(self, ctx: LowerContext) -> list[Step]:
        dst, p = self.dst, self.pattern
        if dst.nbytes == 0:
            return []
        if dst.array is not None or len(p) > _MAX_PUSH_PATTERN:
            return self._fill_on_host(ctx)
        dispatches = []
        for at in range(0, dst.nbytes, _PIECE):
            dispatches += _fill_dispatches(ctx.engine, dst.address + at,
                                           min(_PIECE, dst.nbytes - at), _rotate(p, at))
        return [GpuStep(dispatches)]

    def _fill_on_host(self, ctx: LowerContext) -> list[Step]:
        dst, p = self.dst, self.pattern
        view = dst.host_view()
        if view is not None:
            return [HostStep(lambda: view.__setitem__(slice(None), _tiled(p, dst.nbytes)))]
        source = _tiled(p, dst.nbytes)
        return MemCopy(Span(None, source, 0, dst.nbytes), dst).lower(ctx)


def _tiled(pattern: bytes, nbytes: int) -> np.ndarray:
    return np.resize(np.frombuffer(pattern, dtype=np.uint8), nbytes)


def _rotate(pattern: bytes, k: int) -> bytes:
    """The pattern as seen from its k-th byte on."""
    k %= len(pattern)
    return pattern[k:] + pattern[:k]


def _fill_bytes(engine: Engine, dst: int, n: int, pattern: bytes):
    words = pattern.ljust(_MAX_PUSH_PATTERN, b"\0")
    return engine.dispatch(_program(engine, "fill_bytes.comp"), _groups(-(-n // 4) + 1),
                           struct.pack("<Q3I", dst & ~3, dst & 3, n, len(pattern)) + words)


def write_dispatches(engine: Engine, dst: int, data: bytes) -> list:
    """Dispatches writing `data` at device address `dst` when they run, its bytes carried
    in their push constants (64 to a dispatch): no staging memory to keep alive, and the
    write lands in order with the work around it."""
    return [_fill_bytes(engine, dst + at, len(piece), piece)
            for at in range(0, len(data), _MAX_PUSH_PATTERN)
            for piece in (data[at: at + _MAX_PUSH_PATTERN],)]


def prepare_writes(engine: Engine) -> None:
    """Makes the pipeline `write_dispatches` runs (a dispatch made, never submitted), so
    that writes made later build none: a graph's update compiles nothing."""
    _fill_bytes(engine, 0, 4, bytes(4))


def _fill_dispatches(engine: Engine, dst: int, n: int, pattern: bytes) -> list:
    """Dispatches filling n bytes at address dst, the pattern's first byte first; a 16-byte
    body of a pattern that divides 16 goes through the vector kernel."""
    if _VEC % len(pattern) or n < 2 * _VEC:
        return [_fill_bytes(engine, dst, n, pattern)]
    head, body, tail = _vector_split(dst, n)
    out = [_fill_bytes(engine, dst, head, pattern)] if head else []
    value = _rotate(pattern, head) * (_VEC // len(pattern))
    out.append(engine.dispatch(_program(engine, "fill_vec4.comp"), _groups(body // _VEC),
                               struct.pack("<QII", dst + head, body // _VEC, 0) + value))
    if tail:
        at = head + body
        out.append(_fill_bytes(engine, dst + at, tail, _rotate(pattern, at)))
    return out


def initialized_allocation(device: Any, scheduler: Any, init: np.ndarray | None,
                           nbytes: int, context: Any = None) -> Allocation:
    """Device memory holding `init` (zeros without it), ready when this returns."""
    allocator = scheduler.allocators[False]
    a = Allocation(allocator, allocator.allocate(nbytes), 0, nbytes, alloc.device, context,
                   device)
    dst = Span(a, None, 0, nbytes)
    command = Fill(dst, b"\0") if init is None else \
        MemCopy(Span(None, init.view(np.uint8), 0, nbytes), dst)
    scheduler.execute(command, [], False, reraise).wait()
    return a
