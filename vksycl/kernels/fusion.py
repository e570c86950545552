"""Kernel fusion for command graphs: the fuser the graph layer calls at finalize and
update (`runtime.fusion.use_fuser`), between the compiler's analysis (`compiler/fusion`,
`compiler/footprint`) and the commands a graph records.

A kernel command built by the front end carries its `Origin` (Python kernel, compiled
variant, launch). For each run of kernel nodes the graph hands over, each kernel is
lowered again and its accesses are evaluated with the argument values of its own
command (the pointers as the device addresses they are, so that aliasing is decided on
the actual allocations); kernels join the group before them while their launch matches
and `compiler.fusion.legal` proves every pair. The fused kernel's arguments are copied
from the members' packed arguments, so an update (new arguments for a member) packs
again and checks that every comparison the compiled code rests on still comes out the
same; where one does not, the graph runs the group unfused until an update makes it
hold again."""

from __future__ import annotations

import dataclasses
import struct
import types as pytypes
import weakref
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from ..compiler.captures import captured_value
from ..compiler.footprint import Concrete, Domain, concrete, domain
from ..compiler.fusion import Facts, Fused, Member, fuse, legal, member
from ..compiler.kernel import CompiledKernel, local_size_xyz
from ..exceptions import exception
from ..properties import promote_local, promote_private
from ..runtime import device_output
from ..runtime import fusion as hook
from ..runtime.commands import Command, KernelLaunch, ReductionLaunch
from ..runtime.context import scheduler_for
from ..runtime.handler import PYTHON_KERNELS
from ..runtime.memops import write_dispatches
from ..runtime.submission import Dispatch
from .device_checks import group_counts
from .marshal import ADDRESS, ArgumentBlock
from .marshal import ADDRESS_KINDS as _ADDRESSES


class Origin(NamedTuple):
    """What a kernel command was built from (a tuple: every new command makes one). The
    Python kernel is held weakly: an eager command kept for a repeated launch must not
    keep what the kernel captured alive (an accessor's buffer writes back only when it
    goes); a graph node keeps its kernel through its recipe."""

    function: Callable[[], Any]  # a weak reference to the Python kernel
    ck: CompiledKernel
    launch: Any

    @classmethod
    def of(cls, pyfn: Any, ck: CompiledKernel, launch: Any) -> Origin:
        weak = weakref.WeakMethod if type(pyfn) is pytypes.MethodType else weakref.ref
        return cls(weak(pyfn), ck, launch)

    @property
    def pyfn(self) -> Any:
        return self.function()


def _packed(command: KernelLaunch) -> bytes:
    """The packed arguments of a launch: its push constants, or its argument block."""
    o: Origin = command.origin
    if not o.ck.spec.args_in_memory:
        return command.push_constants
    block = command.keep_alive[0]
    return bytes(block.allocation.host_bytes()[:o.ck.args_size])


def _shape(o: Origin) -> tuple:
    """What two kernels must share to run in one dispatch."""
    spec, launch = o.ck.spec, o.launch
    if launch is None:
        return (spec.kind, spec.dims, spec.local, None)
    if spec.kind == "nd_range":
        return (spec.kind, spec.dims, spec.local, tuple(launch.get_global_range()))
    return (spec.kind, spec.dims, spec.local, tuple(launch))


def _domain(o: Origin) -> Domain:
    spec, shape = o.ck.spec, _shape(o)
    local = local_size_xyz(spec.local)
    if shape[3] is None:
        return domain(local, (1, 1, 1), (1, 1, 1))
    counts = [-(-g // n) for g, n in zip(shape[3], spec.local, strict=True)][::-1]
    return domain(local, (*counts, 1, 1, 1)[:3], (*shape[3][::-1], 1, 1, 1)[:3])


def kernel_of(command: Command, launched: Any) -> Any:
    """The Python kernel a node's command runs: the one its node was launched with (a
    command reused from an earlier launch of the same code and arguments may name that
    launch's function, perhaps gone since), else the one the command was built from."""
    if type(launched) in PYTHON_KERNELS:
        return launched
    o = getattr(command, "origin", None)
    return None if o is None else o.pyfn


def _unfusable(command: Command, pyfn: Any) -> str | None:
    if isinstance(command, ReductionLaunch):
        return "a reduction: its work-groups combine partial results"
    o = getattr(command, "origin", None)
    if o is None:
        return "a kernel vksycl did not compile (SPIR-V or GLSL source)"
    if pyfn is None:
        return "its Python kernel is gone"
    spec = o.ck.spec
    if spec.has_offset:
        return "a launch with an offset"
    if spec.fold_groups:
        return "more work-groups than one dimension dispatches"
    if spec.reductions:
        return "a reduction: its work-groups combine partial results"
    if tuple(captured_value(pyfn, p) for p in o.ck.specialized) != o.ck.spec_values:
        return "values compiled into the kernel changed since it was recorded"
    return None


def _offsets(ck: Any) -> dict[tuple, int]:
    """Where each argument of compiled kernel `ck` lies in its packed arguments, by what
    it is (kind, capture path, piece)."""
    return {(a.kind, a.path, a.piece): a.push_offset for a in ck.args}


def _values(m: Member, command: KernelLaunch) -> dict[int, int]:
    """A member's integer and address argument values at a launch, by argument field."""
    data = _packed(command)
    at = _offsets(command.origin.ck)
    values: dict[int, int] = {}
    for i, arg in m.args.items():
        off = at.get((arg.kind, arg.path, arg.piece))
        if off is None:
            continue
        dt = np.dtype(np.uint64) if arg.kind in _ADDRESSES else np.dtype(arg.dtype)
        if dt.kind in "iub":
            values[i] = int(np.frombuffer(data, dt, 1, off)[0])
    return values


class _Locate:
    """The allocation holding a device address (None where none does)."""

    def __init__(self, device: Any) -> None:
        self.allocators = list(scheduler_for(device).allocators.values())

    def __call__(self, address: int) -> tuple[int, int] | None:
        for allocator in self.allocators:
            chunk = allocator.find(address)
            if chunk is not None and chunk.owner is not None:
                a = chunk.owner
                return a.address, a.address + a.nbytes
        return None

    def allocation(self, address: int) -> Any:
        for allocator in self.allocators:
            chunk = allocator.find(address)
            if chunk is not None and chunk.owner is not None:
                return chunk.owner
        return None


class FusedKernels:
    """A group of kernel commands fused into one (`runtime.fusion.FusedGroup`)."""

    def __init__(self, device: Any, members: list[int], commands: list[KernelLaunch],
                 parts: list[Member], fused: Fused, others: list[KernelLaunch],
                 barriers: set[int], pyfns: list[Any]) -> None:
        self.device = device
        self.pyfns = pyfns  # the members' Python kernels, which their nodes keep too
        self.members = members
        self.parts = parts
        self.fused = fused
        self.others = others  # the graph's other kernel commands (internalization)
        self.barriers = barriers
        self.shape = _shape(commands[0].origin)
        self.dom = fused.facts.dom
        self.template = dataclasses.replace(commands[0].origin.ck, coarsen=fused.coarsen)
        self.cks = [c.origin.ck for c in commands]
        # where each member's arguments go in the fused kernel's: (offset there, bytes,
        # offset in the member's), by member
        self.fields: list[list[tuple[int, int, int]]] = [[] for _ in commands]
        offsets = [_offsets(ck) for ck in self.cks]
        for off, n, j, arg in fused.fields:
            self.fields[j].append((off, n, offsets[j][(arg.kind, arg.path, arg.piece)]))
        self.packed = bytes(fused.args_size)
        self.watched = [_watched(m, at) for m, at in zip(parts, offsets, strict=True)]
        self.groups = group_counts(self.template, commands[0].origin.launch, device)
        self.command = self._command(commands, range(len(commands)))
        self.notes = self._notes()
        # the members' commands and their accesses' concrete forms when the fused kernel's
        # facts were last found to hold
        self.verified: tuple[list[KernelLaunch], list[list[Concrete]]] = (
            list(commands), fused.facts.concretes)

    def _notes(self) -> list[str]:
        f = self.fused
        out = [f"{len(self.members)} kernels in one ({f.name}, "
               f"{'argument block' if f.args_in_memory else 'push constants'})"]
        if self.barriers:
            out.append(f"{len(self.barriers)} work-group barrier(s) between bodies")
        if f.coarsen > 1:
            out.append(f"{f.coarsen} ids per work-item, their loads before their stores")
        if f.forwarded:
            out.append(f"{f.forwarded} load(s) forwarded from an earlier store")
        if f.dropped:
            out.append(f"{f.dropped} overwritten store(s) dropped")
        if f.internalized:
            out.append(f"{len(f.internalized)} store(s) to promoted memory kept in "
                       "registers")
        return out

    def _command(self, commands: list[KernelLaunch], changed: Iterable[int],
                 in_place: bool = False, writes: list[Dispatch] | None = None
                 ) -> KernelLaunch:
        """The fused kernel's command, the `changed` members' arguments packed anew: the
        same command with its argument block rewritten where `in_place` allows, or with
        dispatches rewriting the changed fields added to `writes` (`refresh`)."""
        f = self.fused
        out = bytearray(self.packed)
        fields = []
        for j in changed:
            data = _packed(commands[j])
            for off, n, src in self.fields[j]:
                out[off:off + n] = data[src:src + n]
                fields.append((off, n))
        push = self.packed = bytes(out)
        if f.args_in_memory and (in_place or writes is not None):
            block = self.command.keep_alive[0]
            if in_place:
                block.allocation.host_bytes()[:len(push)] = np.frombuffer(push, np.uint8)
            else:
                engine = scheduler_for(self.device).engine
                for off, n in fields:
                    writes += write_dispatches(engine, block.address + off, push[off:off + n])
            return self.command
        keep: tuple = ()
        if f.args_in_memory:
            block = ArgumentBlock(self.device, push)
            push, keep = ADDRESS.pack(block.address), (block,)
        return KernelLaunch(f.name, f.binary, f.entry, push, self.groups, keep_alive=keep)

    def refresh(self, commands: list[Command], in_place: bool = False,
                writes: list[Dispatch] | None = None) -> Command | str:
        """The fused kernel's command for the members' new commands, or why they no longer
        fuse (`FusedGroup.refresh`). Members whose command is the one last verified keep
        their accesses; where the others' all come out as they were (a scalar no address
        depends on), the facts hold as they did: an update of one member of a 100-kernel
        chain checks that member, not every pair of accesses again."""
        before, known = self.verified
        changed = [j for j, (c, last) in enumerate(zip(commands, before, strict=True))
                   if c is not last]
        for j in changed:
            c = commands[j]
            why = _unfusable(c, self.pyfns[j])
            if why is not None:
                return why
            if c.origin.ck is not self.cks[j]:
                return "a member runs another compiled kernel now"
            if _shape(c.origin) != self.shape:
                return "a member's launch range changed"
        kernels: list[KernelLaunch] = commands  # type: ignore[assignment]
        locate = _Locate(self.device)
        concretes = list(known)
        for j in changed:
            old, new = _packed(before[j]), _packed(kernels[j])
            if any(old[o:o + n] != new[o:o + n] for o, n in self.watched[j]):
                concretes[j] = _concretes(self.parts[j], kernels[j], self.dom, locate)
        if concretes != known:
            internal = _internal(concretes, self.parts, kernels, self.others, locate)
            if not self.fused.facts.hold(concretes, internal):
                return "with the new arguments the memory the kernels share is no " \
                       "longer proven to be used by the same work-item"
        self.verified = (list(kernels), concretes)
        return self._command(kernels, changed, in_place, writes)


def _watched(m: Member, at: dict[tuple, int]) -> list[tuple[int, int]]:
    """Where the arguments a member's accesses are computed from lie in its packed
    arguments (`at`: `_offsets`), (offset, bytes) each: its accesses stay as they are
    while those do."""
    fields = {atom[1] for a in m.accesses for mono in a.form for atom in mono
              if atom[0] == "push"}
    out = []
    for i in sorted(fields):
        arg = m.args.get(i)
        off = None if arg is None else at.get((arg.kind, arg.path, arg.piece))
        if off is not None:
            out.append((off, 8 if arg.kind in _ADDRESSES else np.dtype(arg.dtype).itemsize))
    return out


def _concretes(m: Member, command: KernelLaunch, dom: Domain, locate: _Locate
               ) -> list[Concrete]:
    values = _values(m, command)
    pointers = m.pointers
    return [concrete(a, values, pointers, dom, locate) for a in m.accesses]


def _pointer_values(command: KernelLaunch) -> list[int]:
    o: Origin = command.origin
    data = _packed(command)
    return [struct.unpack_from("<Q", data, a.push_offset)[0] for a in o.ck.args
            if a.kind in ("ptr", "accessor")]


def _internal(concretes: list[list[Concrete]], parts: list[Member],
              commands: list[KernelLaunch], others: list[Command], locate: _Locate
              ) -> list[tuple[int, int]]:
    """The allocations promoted (to private, or to local: the stores a work-item alone
    reads back then stay in its registers, the rest in global memory) that the group
    writes and no other kernel of the graph names."""
    elsewhere: set[int] = set()
    for c in others:
        if isinstance(c, KernelLaunch) and c.origin is not None:
            for address in _pointer_values(c):
                a = locate.allocation(address)
                if a is not None:
                    elsewhere.add(a.address)
    out = []
    for cs, m in zip(concretes, parts, strict=True):
        for c, acc in zip(cs, m.accesses, strict=True):
            if not acc.write or c.form is None:
                continue
            a = locate.allocation(c.lo)
            if a is None or a.address in elsewhere or \
                    not any(isinstance(p, promote_private | promote_local)
                            for p in a.properties):
                continue
            span = (a.address, a.address + a.nbytes)
            if span not in out:
                out.append(span)
    return out


class _Run:
    """One run of kernel commands split greedily into groups: a kernel joins the group
    before it while its launch matches and every pair is proven legal."""

    def __init__(self, device: Any, commands: list[Command], kernels: list[Any],
                 locate: _Locate) -> None:
        self.device, self.commands, self.locate = device, commands, locate
        self.kernels = kernels
        self.max_push = device.vulkan.max_push_constants_size
        self.groups: list[FusedKernels] = []
        self.reasons: dict[int, str] = {}
        self._start()

    def _start(self) -> None:
        self.group: list[int] = []
        self.parts: list[Member] = []
        self.facts: Facts | None = None
        self.barriers: set[int] = set()

    def close(self) -> None:
        if len(self.group) > 1 and self.facts is not None:
            made = _make(self.device, self.commands, self.group, self.parts, self.facts,
                         self.barriers, self.locate, self.max_push,
                         [kernel_of(self.commands[i], self.kernels[i]) for i in self.group])
            if isinstance(made, str):
                for i in self.group:
                    self.reasons.setdefault(i, made)
            else:
                self.groups.append(made)
        self._start()

    def add(self, i: int) -> None:
        command = self.commands[i]
        pyfn = kernel_of(command, self.kernels[i])
        why = _unfusable(command, pyfn)
        m = None
        if why is None:
            try:
                m = member(pyfn, command.origin.ck.spec)
                # lowered here, perhaps from sources newer than its cached kernel
                device_output.register(m.lowered.debug_records)
            except exception as ex:
                why = f"it does not lower for fusion: {ex}"
        if m is None:
            self.close()
            self.reasons[i] = why or "not fusable"
            return
        assert isinstance(command, KernelLaunch)
        dom = _domain(command.origin)
        mine = _concretes(m, command, dom, self.locate)
        if self.group and _shape(command.origin) != _shape(
                self.commands[self.group[0]].origin):
            self.reasons[i] = "its launch (kind, range or work-group size) differs from " \
                              f"node {self.group[0]}'s"
            self.close()
        if self.facts is None:
            self.facts = Facts([], dom, [])
        facts = self.facts
        facts.concretes.append(mine)
        k = len(facts.concretes) - 1
        saved = dict(facts.seen)
        verdicts = [legal(j, k, [*self.parts, m], facts) for j in range(k)]
        bad = next((v for v in verdicts if v[0] == "conflict"), None)
        if bad is not None:
            facts.seen = saved
            facts.concretes.pop()
            self.reasons[i] = f"{bad[1]} (node {self.group[verdicts.index(bad)]})"
            self.close()
            self.facts = Facts([mine], dom, [])
        elif any(v[0] == "group" for v in verdicts):
            self.barriers.add(k)
        self.group.append(i)
        self.parts.append(m)


def fuse_runs(device: Any, commands: list[Command], runs: list[list[int]],
              kernels: list[Any]) -> tuple[list[FusedKernels], dict[int, str]]:
    """`runtime.fusion.Fuser`: the fused groups of each run, and why other kernels were
    left out."""
    locate = _Locate(device)
    groups: list[FusedKernels] = []
    reasons: dict[int, str] = {}
    for run in runs:
        r = _Run(device, commands, kernels, locate)
        for i in run:
            r.add(i)
        r.close()
        groups += r.groups
        reasons.update(r.reasons)
    return groups, reasons


def _make(device: Any, commands: list[Command], group: list[int], parts: list[Member],
          facts: Facts, barriers: set[int], locate: _Locate, max_push: int,
          pyfns: list[Any]) -> FusedKernels | str:
    kernels: list[KernelLaunch] = [commands[i] for i in group]  # type: ignore[misc]
    members = set(group)
    others = [c for k, c in enumerate(commands) if k not in members]
    facts.internal = _internal(facts.concretes, parts, kernels, others, locate)
    name = f"fused_{len(group)}_{kernels[0].name}"
    try:
        fused = fuse(parts, barriers, facts, name, max_push)
    except exception as ex:
        return f"the fused kernel does not compile: {ex}"
    except (ValueError, TypeError, KeyError, AssertionError) as ex:
        return f"the fused kernel does not compile: {type(ex).__name__}: {ex}"
    except Exception as ex:  # the SPIR-V tools' errors: never reaches the driver
        return f"the fused kernel does not validate: {type(ex).__name__}: {ex}"
    return FusedKernels(device, group, kernels, parts, fused, others, barriers, pyfns)


hook.use_fuser(fuse_runs)

__all__ = ["FusedKernels", "Origin", "fuse_runs"]
