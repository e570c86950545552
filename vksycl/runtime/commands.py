"""The command model: every submission, eager or recorded into a graph, is a Command.

A command lowers to steps: `GpuStep`s (dispatches that can be recorded into any sequence),
`HostStep`s (Python that must run on the host, after the GPU work before it) and
`SemaphoreStep`s (an application's semaphores, waited for and signalled on the device). The
scheduler runs the steps of eager commands at once; a graph lowers its commands once and
pre-records the GPU steps between host steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .engine import Bound, Buffer, Engine
from .submission import Dispatch, Recording


@dataclass
class GpuStep:
    """Dispatches; `flush` ends the submission after them, so a later host step can wait
    for exactly this much of the work."""

    dispatches: list[Dispatch]
    flush: bool = False
    # the same dispatches recorded once into sequences of their own (a graph's segment):
    # submitted as they are, never recorded again
    recording: Recording | None = None


@dataclass
class HostStep:
    """Python run on the host once the GPU work before it is done, except the last `lag`
    submissions (which it does not touch): that lets staging windows overlap."""

    run: Callable[[], None]
    lag: int = 0


@dataclass
class SemaphoreStep:
    """Semaphores of the application's (VkSemaphore, value): the device waits for
    `waits` before the work submitted after this step, and signals `signals` once the
    work before it is done, each in the vkQueueSubmit of that work."""

    waits: tuple[tuple[int, int], ...] = ()
    signals: tuple[tuple[int, int], ...] = ()


Step = GpuStep | HostStep | SemaphoreStep


class LowerContext:
    """What lowering needs besides the command: the engine, and host-visible staging
    buffers for copies to and from numpy memory (shared for eager work, owned by a graph)."""

    def __init__(self, engine: Engine, staging: Callable[[int], Buffer]) -> None:
        self.engine = engine
        self.staging = staging


class Command:
    """A unit of work with a SYCL command type; subclasses say how it lowers."""

    command_type = "command"
    needs_staging = False
    runs_on_host = False  # some step must run on the host: the scheduler defers it
    # it lowers to one `GpuStep` of one dispatch, `dispatch(engine)`: the scheduler's
    # shortest path submits that alone
    one_dispatch = False
    profiled = True  # whether a profiling queue may time it

    def lower(self, ctx: LowerContext) -> list[Step]:
        return []

    def dispatch(self, engine: Engine) -> Dispatch:
        """The one dispatch of a `one_dispatch` command."""
        raise NotImplementedError(f"{type(self).__name__} lowers to steps, not one dispatch")

    def for_graph(self) -> Command:
        """The command a graph records. Eager submissions of one command run one after
        another (each dispatch waits for the work before it), but the nodes of a graph's
        level run at once: a command whose dispatches use scratch memory of its own gives
        each graph a copy with its own."""
        return self


@dataclass
class KernelLaunch(Command):
    """A compute dispatch of a compiled kernel. Kernels reach memory through device
    addresses in their push constants; kernels from source with descriptor bindings bind
    byte ranges of buffers (`bound`). `keep_alive` holds what the dispatch reads that
    nothing else keeps (an argument block) until the command is done with."""

    name: str
    spirv: bytes
    entry: str
    push_constants: bytes
    groups: tuple[int, int, int]
    bound: tuple[Bound, ...] = ()
    keep_alive: tuple = ()
    # what the kernel front end built it from (its Python kernel, compiled variant and
    # launch), for graphs that fuse kernels; None for kernels it did not compile
    origin: Any = field(default=None, repr=False, compare=False)
    command_type = "kernel"
    one_dispatch = True
    # (engine, its dispatch): a command submitted again (a launch repeated with the same
    # arguments) reuses its dispatch
    _dispatched: tuple | None = field(default=None, init=False, repr=False, compare=False)
    # (engine, a dispatch of the same pipeline and work-groups) for a command made by
    # `with_push`: its own dispatch is made from that one's pipeline
    _like: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def dispatch(self, engine: Engine) -> Dispatch:
        done = self._dispatched
        if done is not None and done[0] is engine:
            return done[1]
        like = self._like
        if like is not None and like[0] is engine:
            d = engine.with_push(like[1], self.push_constants)
        else:
            d = engine.dispatch(engine.program(self.spirv, self.entry, self.name),
                                self.groups, self.push_constants, self.bound)
        self._dispatched, self._like = (engine, d), None
        return d

    def with_push(self, push_constants: bytes, origin: Any) -> KernelLaunch:
        """This launch with other push constants (a launch repeated with new argument
        values): its dispatch runs this one's pipeline without looking it up, a launch
        with descriptor bindings aside (its pipeline goes with the memory bound)."""
        command = KernelLaunch(self.name, self.spirv, self.entry, push_constants,
                               self.groups, self.bound, self.keep_alive, origin)
        if not self.bound:
            command._like = self._dispatched
        return command

    def lower(self, ctx: LowerContext) -> list[Step]:
        return [GpuStep([self.dispatch(ctx.engine)])]


@dataclass
class ReductionLaunch(KernelLaunch):
    """A reduction kernel's launch: one dispatch whose work-groups share scratch memory
    (partials and a counter) of the command's own, so a graph records a copy with its
    own."""

    # a copy of the launch with scratch memory of its own (for_graph)
    copy: Callable[[], ReductionLaunch] | None = field(default=None, repr=False,
                                                       compare=False)

    def for_graph(self) -> Command:
        return self if self.copy is None else self.copy()


@dataclass
class HostTask(Command):
    """`handler.host_task`: Python run on the host once its dependencies completed."""

    fn: Callable[..., Any]
    args: tuple = field(default=())
    # the command group's accessors: those made for the host task read the host copy
    # while it runs, and only then (its dependencies are done only then)
    accessors: list = field(default_factory=list)
    command_type = "host_task"
    runs_on_host = True

    def lower(self, ctx: LowerContext) -> list[Step]:
        return [HostStep(self.run)]

    def run(self) -> None:
        own = [a for a in self.accessors if a._host_task]
        for a in own:
            a._in_task += 1
        try:
            self.fn(*self.args)
        finally:
            for a in own:
                a._in_task -= 1


@dataclass
class Barrier(Command):
    """No work: an empty command group ("barrier"), `ext_oneapi_submit_barrier`
    ("ext_oneapi_barrier"), prefetch, mem_advise."""

    command_type: str = "barrier"
