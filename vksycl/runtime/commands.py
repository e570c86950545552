"""The command model: every submission, eager or recorded into a graph, is a Command.

A command lowers to steps: `GpuStep`s (dispatches that can be recorded into any sequence),
`HostStep`s (Python that must run on the host, after the GPU work before it) and
`SemaphoreStep`s (an application's semaphores, waited for and signalled on the device). The
scheduler runs the steps of eager commands at once; a graph lowers its commands once and
pre-records the GPU steps between host steps.

Compiled (`mypyc_modules`), `Command` and the kernel launches are native classes: a launch
repeated with new arguments makes one command per launch, and a native object costs a
fraction of a Python one to make, read and free. `Command` stays open to subclasses in
interpreted modules (copies, fills, host tasks, graph runs). Its flags are class
variables, so that such a subclass sets them in its class body, or on an instance of its
own, and compiled code reads what it set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from mypy_extensions import mypyc_attr

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


@mypyc_attr(allow_interpreted_subclasses=True)
class Command:
    """A unit of work with a SYCL command type; subclasses say how it lowers."""

    command_type: ClassVar[str] = "command"
    needs_staging: ClassVar[bool] = False
    runs_on_host: ClassVar[bool] = False  # some step must run on the host: deferred
    # it lowers to one `GpuStep` of one dispatch, `dispatch(engine)`: the scheduler's
    # shortest path submits that alone
    one_dispatch: ClassVar[bool] = False
    profiled: ClassVar[bool] = True  # whether a profiling queue may time it

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


class KernelLaunch(Command):
    """A compute dispatch of a compiled kernel. Kernels reach memory through device
    addresses in their push constants; kernels from source with descriptor bindings bind
    byte ranges of buffers (`bound`). `keep_alive` holds what the dispatch reads that
    nothing else keeps (an argument block) until the command is done with. `origin` is
    what the kernel front end built it from (its Python kernel, compiled variant and
    launch), for graphs that fuse kernels; None for kernels it did not compile."""

    command_type: ClassVar[str] = "kernel"
    one_dispatch: ClassVar[bool] = True
    # what a subclass setting its own fields may leave as they are
    bound: tuple[Bound, ...] = ()
    keep_alive: tuple = ()
    origin: Any = None
    # (engine, its dispatch): a command submitted again (a launch repeated with the same
    # arguments) reuses its dispatch
    _dispatched: tuple | None = None
    # (engine, a dispatch of the same pipeline and work-groups) for a command made by
    # `with_push`: its own dispatch is made from that one's pipeline
    _like: tuple | None = None

    def __init__(self, name: str, spirv: bytes, entry: str, push_constants: bytes,
                 groups: tuple[int, int, int], bound: tuple[Bound, ...] = (),
                 keep_alive: tuple = (), origin: Any = None) -> None:
        self.name, self.spirv, self.entry = name, spirv, entry
        self.push_constants, self.groups = push_constants, groups
        self.bound, self.keep_alive, self.origin = bound, keep_alive, origin

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, groups={self.groups}, "
                f"push_constants={self.push_constants!r})")

    def dispatch(self, engine: Engine) -> Dispatch:
        done = self._dispatched
        if done is not None and done[0] is engine:
            return done[1]
        like = self._like
        if like is not None and like[0] is engine:
            d = engine.with_push(like[1], self.push_constants, self.groups)
        else:
            d = engine.dispatch(engine.program(self.spirv, self.entry, self.name),
                                self.groups, self.push_constants, self.bound)
        self._dispatched, self._like = (engine, d), None
        return d

    def with_push(self, push_constants: bytes, origin: Any,
                  groups: tuple[int, int, int] | None = None) -> KernelLaunch:
        """This launch with other push constants (a launch repeated with new argument
        values), and other work-group counts where `groups` are given (a launch of
        another size): its dispatch runs this one's pipeline without looking it up, a
        launch with descriptor bindings aside (its pipeline goes with the memory
        bound)."""
        command = KernelLaunch(self.name, self.spirv, self.entry, push_constants,
                               self.groups if groups is None else groups, self.bound,
                               self.keep_alive, origin)
        if not self.bound:
            command._like = self._dispatched
        return command

    def lower(self, ctx: LowerContext) -> list[Step]:
        return [GpuStep([self.dispatch(ctx.engine)])]


class ReductionLaunch(KernelLaunch):
    """A reduction kernel's launch: one dispatch whose work-groups share scratch memory
    (partials and a counter) of the command's own, so a graph records a copy with its
    own (`copy` makes one)."""

    def __init__(self, name: str, spirv: bytes, entry: str, push_constants: bytes,
                 groups: tuple[int, int, int], keep_alive: tuple = (), origin: Any = None,
                 copy: Callable[[], ReductionLaunch] | None = None) -> None:
        super().__init__(name, spirv, entry, push_constants, groups, (), keep_alive, origin)
        self.copy = copy

    def for_graph(self) -> Command:
        return self if self.copy is None else self.copy()
