"""Argument memory of updatable graphs (`runtime.argument_slots`): kernel nodes whose
arguments an update rewrites without recording anything.

A kernel node given a dynamic parameter runs the argument-block variant of its kernel,
the one an argument ring runs: the same fields at the same offsets, read from memory
whose address is its one push constant. Its dispatch is recorded once, with the address
of a slot of its graph's own memory; an update bringing new values for the same kernel
over the same work-groups writes the slot's bytes: from the host where no submission of
the graph can still read the slot, else on the device, by dispatches that the graph's
next submission runs first (every earlier one having been handed to the device before
it). Where neither holds, the node takes a new slot and its segment is recorded again,
as for a node of push constants.

Slots lie in the device's own host-visible memory where the device maps it (a resizable
BAR), as the rings' do: the host only writes them, and a kernel reading its arguments
over the bus would take longer."""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from ..compiler.kernel import CompiledKernel, load_or_compile
from ..exceptions import exception
from ..runtime import argument_slots as hook
from ..runtime.commands import Command, KernelLaunch, ReductionLaunch
from ..runtime.context import scheduler_for
from ..runtime.engine import Buffer
from ..runtime.memops import prepare_writes, write_dispatches
from ..runtime.submission import Dispatch
from .fusion import kernel_of
from .marshal import ADDRESS
from .plans import argument_layout

_SLOTS_PER_BLOCK: Final = 32
_ALIGN: Final = 16  # a slot's start: the widest argument field's alignment and more

# id of a push-constant kernel -> (it, its argument-block variant or None): kept with the
# kernel, so that the id names it as long as the entry lives
_BLOCKS: dict[int, tuple[CompiledKernel, CompiledKernel | None]] = {}


def block_kernel(pyfn: Any, ck: CompiledKernel, compile: bool = True
                 ) -> CompiledKernel | None:
    """The argument-block variant of push-constant kernel `ck` (compiled once, then from
    the caches), when it reads the same packed bytes: the same fields at the same
    offsets, the same values compiled in, over the same work-groups. Without `compile`,
    only one made before."""
    known = _BLOCKS.get(id(ck))
    if known is not None and known[0] is ck:
        return known[1]
    if not compile:
        return None
    spec = dataclasses.replace(ck.spec, args_in_memory=True)
    extra = ("argument block of", argument_layout(ck))
    try:
        block: CompiledKernel | None = load_or_compile(pyfn, spec, ("graph", id(ck)), extra)
    except exception:
        block = None  # its push-constant kernel compiled: the node runs that one
    if block is not None and argument_layout(block) != argument_layout(ck):
        block = None
    _BLOCKS[id(ck)] = (ck, block)
    return block


@dataclasses.dataclass(eq=False)
class _Slot:
    memory: memoryview  # the host's view of its block's bytes
    start: int
    size: int  # the bytes it spans (its stride)
    address: int

    def write(self, data: bytes) -> None:
        self.memory[self.start:self.start + len(data)] = data


class SlotLaunch:
    """A kernel node's launch of `ck` (a push-constant kernel) through its argument-block
    variant (`command`), from a slot holding the arguments of the node's current
    command."""

    def __init__(self, slots: ArgumentSlots, slot: _Slot, block: CompiledKernel,
                 command: KernelLaunch) -> None:
        self.slots, self.slot, self.ck = slots, slot, command.origin.ck
        self.command = KernelLaunch(block.name, block.binary, block.entry,
                                    ADDRESS.pack(slot.address), command.groups,
                                    origin=command.origin)
        slot.write(command.push_constants)

    def rewrite(self, command: Command) -> bool:
        data = self._arguments(command)
        if data is None:
            return False
        self.slot.write(data)
        return True

    def rewrite_when_run(self, command: Command) -> list[Dispatch] | None:
        data = self._arguments(command)
        if data is None:
            return None
        return write_dispatches(self.slots.engine, self.slot.address, data)

    def _arguments(self, command: Command) -> bytes | None:
        """The bytes `command` packs, when its dispatch would be this one's: the same
        kernel over the same work-groups."""
        plain = _plain(command)
        if plain is None or plain.origin.ck is not self.ck or \
                plain.groups != self.command.groups:
            return None
        return plain.push_constants


def _plain(command: Command) -> KernelLaunch | None:
    """`command` as a graph records it when that is a plain push-constant launch of a
    kernel vksycl compiled (no bindings, no memory of its own), else None. A reduction's
    launch never is: asked, it would make scratch memory of its own."""
    if not isinstance(command, KernelLaunch) or isinstance(command, ReductionLaunch):
        return None
    plain = command.for_graph()
    if type(plain) is not KernelLaunch or plain.origin is None or plain.bound or \
            plain.keep_alive or plain.origin.ck.spec.args_in_memory:
        return None
    return plain  # type: ignore[return-value]


class ArgumentSlots:
    """One executable graph's argument memory: blocks of slots of one size each, made as
    its nodes need them and freed with the graph (once the work submitted by then is
    done)."""

    def __init__(self, device: Any) -> None:
        self.engine = scheduler_for(device).engine
        prepare_writes(self.engine)  # finalize makes what an update's device write runs
        self.buffers: list[Buffer] = []
        self.free: dict[int, list[_Slot]] = {}  # by slot size

    def launch(self, command: Command, kernel: Any, compile: bool) -> SlotLaunch | None:
        plain = _plain(command)
        if plain is None:
            return None
        pyfn = kernel_of(plain, kernel)
        block = None if pyfn is None else block_kernel(pyfn, plain.origin.ck, compile)
        if block is None:
            return None
        size = -(-max(block.args_size, 1) // _ALIGN) * _ALIGN
        return SlotLaunch(self, self._slot(size), block, plain)

    def release(self, launch: hook.SlotLaunch) -> None:
        assert isinstance(launch, SlotLaunch) and launch.slots is self
        self.free[launch.slot.size].append(launch.slot)

    def _slot(self, size: int) -> _Slot:
        free = self.free.setdefault(size, [])
        if not free:
            buffer = self.engine.buffer(size * _SLOTS_PER_BLOCK, host_visible=True,
                                        host_writes_only=True)
            self.buffers.append(buffer)
            assert buffer.host is not None  # host-visible memory
            memory = buffer.host.data
            free += [_Slot(memory, k * size, size, buffer.address + k * size)
                     for k in reversed(range(_SLOTS_PER_BLOCK))]
        return free.pop()

    def __del__(self) -> None:
        for buffer in self.buffers:
            self.engine.release_after(buffer)


hook.use_argument_slots(ArgumentSlots)

__all__ = ["ArgumentSlots", "SlotLaunch", "block_kernel"]
