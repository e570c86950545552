"""The hook through which an updatable graph's kernel nodes read their arguments from
memory that an update rewrites in place. Finding a kernel's argument-block variant needs
the compiler, which the graph layer never imports: the kernel front ends register the
maker of a graph's slots (`use_argument_slots`) when `vksycl.kernels.graph_arguments` is
imported, as they register the fuser. Without one, every node records its arguments as
push constants and an update records its segment again.

Commands built for a graph (`building`) are recorded, never launched eagerly: the front
ends make none of what speeds up eager launches of new values for them (an argument
ring, whose kernel variant would be compiled, and memory taken, at an update)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from .commands import Command
from .submission import Dispatch


class SlotLaunch(Protocol):
    """A kernel node's launch from a slot of its graph's argument memory: `command`, what
    the graph records, reads its arguments there."""

    command: Command

    def rewrite(self, command: Command) -> bool:
        """Writes the arguments of `command` (the node's new command) into the slot when
        its dispatch runs the same kernel over the same work-groups, and says whether it
        did. The caller makes sure no submission can still read the slot."""
        ...

    def rewrite_when_run(self, command: Command) -> list[Dispatch] | None:
        """Where `rewrite` would write, the dispatches that write those bytes into the
        slot when they run instead, else None. The caller runs them after every
        submission that may still read the slot, and before the next one's dispatch."""
        ...


class ArgumentSlots(Protocol):
    """One executable graph's argument memory."""

    def launch(self, command: Command, kernel: Any, compile: bool) -> SlotLaunch | None:
        """`command` (a node's command, recorded as `Command.for_graph` makes it) as a
        launch from a slot of its own, or None where its kernel cannot read its arguments
        from memory as it packs them, or (without `compile`) has no variant doing so made
        yet; `kernel` is what the node was launched with."""
        ...

    def release(self, launch: SlotLaunch) -> None:
        """The slot of `launch` may serve another launch: nothing reads it any more."""
        ...


_maker: Callable[[Any], ArgumentSlots] | None = None


def use_argument_slots(maker: Callable[[Any], ArgumentSlots]) -> None:
    global _maker
    _maker = maker


def argument_slots(device: Any) -> ArgumentSlots | None:
    """A new graph's argument memory on `device`, or None when no front end registered
    a maker."""
    return None if _maker is None else _maker(device)


class _Builds(threading.local):
    depth = 0  # commands this thread is building for a graph


BUILDS = _Builds()


@contextlib.contextmanager
def building() -> Iterator[None]:
    """Commands built in the block are a graph's."""
    BUILDS.depth += 1
    try:
        yield
    finally:
        BUILDS.depth -= 1
