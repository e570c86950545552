"""Streaks: runs of launches under one plan that each bring new numbers in the same
closure cells or explicit arguments (a time step, a counter), every other value the very
object of the launch before. Once the plan's argument ring is settled (made, or found
impossible), such a launch is checked at those values alone and its bytes are the last
launch's with the new numbers packed in at offsets fixed when the streak began: no
general repack, no lookup among recent commands (each value is new to them), no launch
kept by its bytes, function or arguments.

Each value is compared with the last launch's by identity, in one loop: those outside
the changing ones must be the very objects, and a changing one must be new. Where some of
several changing values came back the very objects (a count changing every other launch
beside a step changing at each), they pack as they did; where all came back, the launch
is a repeat, which the general path finds.
"""

from __future__ import annotations

import struct
from typing import Any, Final

import numpy as np

from ..runtime.commands import KernelLaunch
from .argument_ring import ArgumentRing
from .fusion import Origin
from .marshal import Slot
from .plans import Plan, any_freed, contents, same_captures, same_globals

_MISFIT: Final = (struct.error, OverflowError)


class _Change:
    """How one changing value is packed: its index among the values, the type it must
    keep, and its slot's packer and offset; a bool (or numpy bool) as a 0 / 1 int."""

    __slots__ = ("as_int", "at", "index", "pack_into", "type")

    def __init__(self, index: int, slot: Slot, kept: Any) -> None:
        self.index, self.type = index, type(kept)
        self.at, self.pack_into = slot[0], slot[1].pack_into
        self.as_int = slot[2] == "bool" or self.type is np.bool_


class Streak:
    """A plan's streak from its last launch `last`, the values at `changing` ((index,
    slot) pairs of closure cells, or of explicit arguments when `last` has an arguments
    record) being the ones that change, launched from `ring` (an `ArgumentRing`, or False
    for push constants). It holds only while `last` is the plan's last launch."""

    __slots__ = ("changes", "explicit", "head", "index", "last", "one", "pack", "pointers",
                 "ring", "same", "tail", "type")

    def __init__(self, last: tuple, changing: tuple[tuple[int, Slot], ...], ring: Any
                 ) -> None:
        self.last, self.ring = last, ring
        self.explicit = last[5] is not None
        values = last[5][0] if self.explicit else last[4][0]
        indices = {i for i, _ in changing}
        self.same = tuple(i not in indices for i in range(len(values)))
        self.changes = tuple(_Change(i, slot, values[i]) for i, slot in changing)
        # a single number, most streaks' case: its bytes go between fixed ones
        first = self.changes[0]
        self.one = len(self.changes) == 1 and not first.as_int
        packer = changing[0][1][1]
        self.index, self.type = first.index, first.type
        self.head, self.tail = last[1][:first.at], last[1][first.at + packer.size:]
        # the bytes around it and the number, in one `pack` (slots pack little-endian)
        self.pack = struct.Struct(f"<{len(self.head)}s{packer.format.lstrip('<')}"
                                  f"{len(self.tail)}s").pack
        # the pointers the launch reads: the very objects all streak long, freed or not
        self.pointers = last[4][3] + (last[5][1] if self.explicit else ())

    def closure(self, plan: Plan, kernel: Any, launch: Any, context: Any
                ) -> KernelLaunch | None:
        """The command of a closure launch continuing the streak, or None."""
        last = self.last
        if plan.last is not last:
            if plan.streak is self:  # over: let go of its launch (not of a newer streak)
                plan.streak = None
            return None
        if last[3] is not context or self.explicit:
            return None
        record = last[4]
        captured = contents(kernel.__closure__)
        if not self._continued(record[0], captured):
            return None
        names = plan.names
        if names and not same_globals(record[1], kernel, names):
            return None
        command = self._command(last, captured, kernel, launch)
        if command is None:
            return None
        # each record made once, as a plain tuple: the next launches compare its identity
        now: tuple = (captured, record[1], last[0], record[3])
        plan.prepared = now
        done: tuple = (last[0], command.push_constants, command, context, now, None)
        plan.last = self.last = done
        return command

    def arguments(self, plan: Plan, kernel: Any, launch: Any, args: Any, context: Any
                  ) -> KernelLaunch | None:
        """The command of a launch of explicit arguments `args` continuing the streak, or
        None."""
        last = self.last
        if plan.last is not last:
            if plan.streak is self:
                plan.streak = None
            return None
        if last[3] is not context or not self.explicit or type(args) is not tuple or \
                len(args) != len(self.same):
            return None
        known, record = last[5], last[4]
        if not self._continued(known[0], args):
            return None
        if not same_captures(kernel, record, plan.names):
            return None
        command = self._command(last, args, kernel, launch)
        if command is None:
            return None
        done: tuple = (last[0], command.push_constants, command, context, record,
                       (args, known[1]))
        plan.last = self.last = done
        return command

    def _continued(self, kept: tuple, now: tuple) -> bool:
        """Whether values `now` after the last launch's `kept` continue the streak: every
        value outside the changing ones is the very object, and a changing one is new
        (where several change, the others may have come back, and pack as they did)."""
        same, new = self.same, False
        for i in range(len(same)):
            if kept[i] is not now[i]:
                if same[i]:
                    return False
                new = True
        return new

    def _command(self, last: tuple, values: tuple, kernel: Any, launch: Any
                 ) -> KernelLaunch | None:
        """`last`'s command with the new numbers among `values` packed in; None if one is
        of another type or does not fit its slot (the full launch says why), or a
        pointer the launch reads was freed (the full launch raises)."""
        if any_freed(self.pointers):
            return None
        try:
            if self.one:
                v = values[self.index]
                if type(v) is not self.type:
                    return None
                push = self.pack(self.head, v, self.tail)
            else:
                out = bytearray(last[1])
                for c in self.changes:
                    v = values[c.index]
                    if type(v) is not c.type:
                        return None
                    c.pack_into(out, c.at, int(bool(v)) if c.as_int else v)
                push = bytes(out)
        except _MISFIT:
            return None
        return with_push(last, push, kernel, launch, self.ring)


def relaunched(origin: Origin, pyfn: Any, launch: Any) -> Origin:
    """The origin of a launch of `pyfn`, `origin`'s kernel, over `launch`: with
    `origin`'s weak reference while it is to `pyfn` (making one costs more than the rest
    of a repeated launch's origin)."""
    function, ck, launched = origin  # unpacked: compiled, a tuple's items are read directly
    if function() is not pyfn:
        return Origin.of(pyfn, ck, launch)
    if launched is launch:
        return origin
    return tuple.__new__(Origin, (function, ck, launch))


def with_push(last: tuple, push: bytes, pyfn: Any, launch: Any, ring: Any) -> KernelLaunch:
    """The command of a launch of `last`'s (a plan's last launch) with the packed
    arguments `push`: from `ring` when there is one, else as push constants. The general
    repack (`launch._repacked`) makes its commands here too."""
    command: KernelLaunch = last[2]  # typed: compiled, its fields are read directly
    origin: Origin = command.origin  # of a launch of the plan's values
    origin = relaunched(origin, pyfn, origin[2])
    if isinstance(ring, ArgumentRing):
        return ring.launch(push, origin, command.groups)
    return command.with_push(push, origin)
