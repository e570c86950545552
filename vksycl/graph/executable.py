"""`command_graph[graph_state.executable]`: the DAG lowered once into pre-recorded
sequences, submitted as one command, and updated by recording again.

`finalize` takes the nodes in a topological order (GPU work before host tasks wherever
the edges allow, so that host tasks split the work as little as they can), lowers each
node's command exactly as eager submission does (`Command.lower`), and records the GPU
steps between two host steps (or a staging flush) into one sequence of their own, level
by level: a barrier starts each level, and the nodes of one level (no edges between
them) may run at once. A submission is one `GraphRun` command through the scheduler:
its pre-recorded segments are submitted as they are, host steps run between them. An
update builds the updated kernel nodes' commands again (new arguments, no compilation)
and records again only the segments holding them; submissions already made keep the
sequences they run.

In a graph finalized updatable, a kernel node given a dynamic parameter reads its
arguments from a slot of the graph's own memory (`runtime.argument_slots`): an update
bringing new values for the same kernel and work-groups writes them there and records
nothing (7.5.2: updates reach only later submissions): from the host when no submission
of the graph can still read them; while submissions that were all handed to the device
may, by dispatches the graph's next submission runs before its segments (the device
queue orders them after the earlier submissions' reads). Otherwise the node takes a new
slot and its segment is recorded again; the old slot serves again once the submissions
that could read it are done.

A submission takes part in the buffers' eager dependency tracking as one command group
requiring every accessor its nodes use: it follows the earlier command groups on that
memory, later ones (and host accessors) follow it, and host data the host wrote last is
uploaded first."""

from __future__ import annotations

import heapq
import threading
import weakref
from typing import Any

from ..exceptions import errc, exception
from ..runtime.argument_slots import SlotLaunch, argument_slots
from ..runtime.commands import Command, GpuStep, HostStep, LowerContext, Step
from ..runtime.context import scheduler_for
from ..runtime.engine import Buffer
from ..runtime.event import event
from ..runtime.handler import handler
from ..runtime.submission import Dispatch
from .buffers import distinct
from .builder import graph_handler
from .core import GraphCore, node
from .dot import write_dot
from .fusion import Fusion, FusionReport
from .properties import has, node_type, property

FINALIZE_PROPERTIES = (property.graph.updatable, property.graph.enable_profiling,
                       property.graph.perform_fusion)
_STAGING_BYTES = 4 << 20
# segments of at most this many GPU steps are recorded again whole when updated
_WHOLE_SEGMENT = 8
Part = list[tuple[int, int, list[Dispatch]]]
_WHOLE_UPDATE_TYPES = (node_type.empty, node_type.ext_oneapi_barrier, node_type.kernel)


class GraphRun(Command):
    """One submission of an executable graph; recorded into another graph, a sub-graph
    node (whose nodes the parent's finalize takes in)."""

    command_type = "subgraph"

    def __init__(self, graph: executable_command_graph) -> None:
        self.graph = graph
        self.steps = graph._steps  # as submitted: later updates do not reach it
        # the commands those steps run, with the memory their dispatches use (a
        # reduction's partials): an update does not free it under this submission
        self.keep_alive = tuple(graph._held) + graph._fused_commands()
        self.runs_on_host = graph._runs_on_host
        self.profiled = graph._profiling
        self.submitted: _Submitted | None = None  # the graph's record of this submission

    def lower(self, ctx: LowerContext) -> list[Step]:
        if self.submitted is not None:
            self.submitted.started = True
        return self.steps

    def write_first(self, writes: list[Dispatch]) -> None:
        """Runs `writes` (new arguments going into slots) before the graph's steps."""
        self.steps = [GpuStep(writes), *self.steps]


class executable_command_graph:
    """A finalized graph: its topology is fixed; kernel nodes may be updated when it was
    finalized with `property.graph.updatable()`."""

    def __init__(self, source: GraphCore, props: list[Any]) -> None:
        self._context, self._device = source._context, source._device
        self._updatable = has(props, property.graph.updatable)
        self._profiling = has(props, property.graph.enable_profiling)
        nodes = list(source._nodes)
        self._nodes = nodes
        self._index = {id(n): i for i, n in enumerate(nodes)}
        self._preds = [[self._index[id(p)] for p in n._preds] for n in nodes]
        self._commands = [n._command() for n in nodes]
        self._accesses = [_accesses(n) for n in nodes]
        self._requirements = distinct(a for accs in self._accesses for a in accs)
        self._order = _topological(self._preds, [n._type is node_type.host_task
                                                 for n in nodes])
        self._position = {i: k for k, i in enumerate(self._order)}
        self._engine = scheduler_for(self._device).engine
        self._staging: list[Buffer] = []
        self._ctx = LowerContext(self._engine, self._staging_buffer)
        self._lock = threading.RLock()
        # submissions not known to be complete (from when their command is made, before
        # they have an event), and whether another graph took this one's steps in (a
        # sub-graph node): an update may rewrite arguments in memory (a slot, a fused
        # kernel's argument block) in place only when nothing can still read them
        self._pending: list[_Submitted] = []
        self._nested = False
        # the graph's argument memory, the nodes recording from a slot of it, and slots
        # replaced while submissions that may read them ran, with those submissions
        self._slots = argument_slots(self._device) if self._updatable else None
        self._in_slots: dict[int, SlotLaunch] = {}
        self._retired: list[tuple[SlotLaunch, list[_Submitted]]] = []
        # the dispatches writing new arguments that submissions run first until one
        # carrying them was handed to the device (`rewrite_when_run`), by node (a fused
        # group's under ("group", k)); and the submissions carrying them, with what each
        # carries
        self._writes: dict[Any, list[Dispatch]] = {}
        self._carriers: list[tuple[_Submitted, dict[Any, list[Dispatch]]]] = []
        # what each node records (Command.for_graph, or a launch from a slot): the graph
        # keeps it while its steps are recorded, since a copy's memory goes back to the
        # allocator with it
        self._held: list[Command] = []
        for i, c in enumerate(self._commands):
            own, launch = self._recorded(i, c, True)
            self._held.append(own)
            if launch is not None:
                self._in_slots[i] = launch
        self._lowered = [self._lower(c) for c in self._held]
        self._fusion = Fusion(self._device, self._commands, self._order,
                              [n._type for n in nodes], self._lower,
                              [_launched_with(n) for n in nodes]) \
            if has(props, property.graph.perform_fusion) else None
        self._last: event | None = None  # the last submission, for graphs with host steps
        self._build()

    def get_context(self) -> Any:
        return self._context

    def get_device(self) -> Any:
        return self._device

    # -- fusion ------------------------------------------------------------------------
    def fusion_report(self) -> FusionReport:
        """Which nodes run as one fused kernel, and why the others do not (finalized
        without `property.graph.perform_fusion()`: every kernel node, unfused)."""
        with self._lock:
            if self._fusion is None:
                return FusionReport(unfused={i: "finalized without perform_fusion" for i, n
                                             in enumerate(self._nodes)
                                             if n._type is node_type.kernel})
            return self._fusion.report()

    def print_graph(self, path: Any, verbose: bool = False) -> None:
        """The graph in DOT, as `command_graph.print_graph` writes it, each fused group
        a cluster."""
        with self._lock:
            write_dot(self._nodes, path, verbose, self.fusion_report().groups)

    def _steps_for(self, i: int) -> list[Step]:
        """What node i runs: its own steps, a fused kernel, or nothing (fused)."""
        f = self._fusion
        return self._lowered[i] if f is None else f.steps_for(i, self._lowered[i])

    def _fused_commands(self) -> tuple[Command, ...]:
        return () if self._fusion is None else self._fusion.commands()

    # -- lowering ----------------------------------------------------------------------
    def _staging_buffer(self, i: int) -> Buffer:
        while len(self._staging) <= i:
            self._staging.append(self._engine.buffer(_STAGING_BYTES, host_visible=True))
        return self._staging[i]

    def _recorded(self, i: int, command: Command, finalizing: bool
                  ) -> tuple[Command, SlotLaunch | None]:
        """What node i records for `command`, and the slot launch it is: a launch from a
        slot of the graph's memory for a kernel node given a dynamic parameter (not once
        another graph took this one's steps in: its slots could never serve again), else
        `command.for_graph()`. Only finalize compiles a kernel's argument-block variant:
        an update to a kernel without one records push constants."""
        n = self._nodes[i]
        if self._slots is not None and not self._nested and \
                n._type is node_type.kernel and getattr(n._handler, "dynamic", None):
            launch = self._slots.launch(command, _launched_with(n), finalizing)
            if launch is not None:
                return launch.command, launch
        return command.for_graph(), None

    def _lower(self, command: Command) -> list[Step]:
        if isinstance(command, GraphRun):  # a sub-graph: its nodes, in its order, after
            child = command.graph  # the writes its arguments still wait for
            with child._lock:
                writes = child._queued_writes()
                return [*([GpuStep(writes)] if writes else []),
                        *(s for i in child._order for s in child._steps_for(i))]
        return command.lower(self._ctx)

    def _build(self) -> None:
        """Segments of GPU steps, each recorded once, and the host steps between them."""
        plan: list[Part | HostStep] = []  # a segment's (node, k-th GPU step, dispatches)
        current: Part = []

        def close() -> None:
            if current:
                plan.append(list(current))
                current.clear()

        for i in self._order:
            k = 0
            for step in self._steps_for(i):
                if isinstance(step, GpuStep):
                    if step.dispatches:
                        current.append((i, k, step.dispatches))
                    k += 1
                    if step.flush:
                        close()
                else:
                    close()
                    plan.append(step)
        close()
        self._plan = plan
        self._members = [_members(p) for p in plan]
        self._steps = [self._record(p) if isinstance(p, list) else p for p in plan]
        self._runs_on_host = any(isinstance(p, HostStep) for p in plan)

    def _record(self, parts: Part) -> GpuStep:
        """One segment, breadth first: a GPU step's level is one more than the deepest
        level its node's predecessors reach in the segment, and than its node's earlier
        steps. A node with no GPU work here (an empty node, a barrier) passes its
        predecessors' depth on to its successors. Only the first dispatch of each level
        keeps its barrier, so the nodes of a level may run at once; work of earlier
        segments is behind the first barrier."""
        steps_of: dict[int, list[int]] = {}
        for e, (i, _, _) in enumerate(parts):
            steps_of.setdefault(i, []).append(e)
        levels = [0] * len(parts)
        reach: dict[int, int] = {}  # node -> the deepest level it or its predecessors take
        # a fused group's dispatch, at its last member, follows every member's
        # predecessors, and every member's successors follow it
        fused = {} if self._fusion is None else self._fusion.level_groups()
        skipped = {m for members in fused.values() for m in members}
        # only nodes from the segment's first to its last in the order can reach its
        # levels (those before have no level in it, those after no successor in it): an
        # update recording one node's dispatch looks at that node, not the whole graph
        where = [self._position[i] for i in steps_of]
        for i in self._order[min(where):max(where) + 1]:
            members = fused.get(i, [i])
            if i in skipped and i not in fused:
                continue
            inside = set(members)
            level = max((reach[p] for m in members for p in self._preds[m]
                         if p in reach and p not in inside), default=-1)
            for e in steps_of.get(i, ()):
                level += 1
                levels[e] = level
            if level >= 0:  # a node with no GPU work passes its predecessors' depth on
                for m in members:
                    reach[m] = level
        dispatches: list[Dispatch] = []
        previous = -1
        for e in sorted(range(len(parts)), key=lambda e: (levels[e], e)):
            first, *rest = parts[e][2]
            # the dispatches of one step after the first (pieces of a copy or fill
            # that may share a word) keep their barriers
            dispatches.append(first if levels[e] != previous else
                              self._engine.without_barrier(first))
            dispatches += rest
            previous = levels[e]
        return GpuStep(dispatches, recording=self._engine.record(dispatches, self._profiling))

    # -- submission --------------------------------------------------------------------
    def _vksycl_graph_command(self, h: Any) -> GraphRun:
        """The command of `handler.ext_oneapi_graph(self)`. Submissions of a graph with
        host steps wait for the one before (GPU work is ordered by the device queue)."""
        q = h._queue
        if q.get_device() != self._device or q.get_context() != self._context:
            raise exception(errc.invalid, "the executable graph was made for another device "
                            "or context than the queue's")
        with self._lock:
            run = GraphRun(self)
            h.requirements += self._requirements  # bound to this context when added
            if q.recording_graph is not None or isinstance(h, graph_handler):
                self._nested = True  # the other graph's finalize takes the writes too
            else:
                if run.runs_on_host and self._last is not None:
                    h.depends_on(self._last)
                submitted = run.submitted = _Submitted(run)
                self._pending = [*self._still_pending(), submitted]
                writes = self._queued_writes()
                if writes:
                    run.write_first(writes)
                    self._carriers.append((submitted, dict(self._writes)))
                h.enqueued = [lambda ev: self._submitted(submitted, ev)]
            return run

    def _submitted(self, submitted: _Submitted, ev: event) -> None:
        with self._lock:
            submitted.event = ev
            self._last = ev

    def _still_pending(self) -> list[_Submitted]:
        return [s for s in self._pending if s.pending()]

    def _idle(self) -> bool:
        """Whether no submission of this graph may still run (none made and not yet
        submitted either), and no other graph runs its steps: what an update may then
        change in place reaches only later submissions, as 7.5.2 has it."""
        self._pending = self._still_pending()
        return not self._pending and not self._nested

    def _queued_writes(self) -> list[Dispatch]:
        """The writes of new arguments that the graph's next run must make first."""
        self._settle_writes()
        return [d for writes in self._writes.values() for d in writes]

    def _settle_writes(self) -> None:
        """Forgets the slot writes that a submission carrying them took to the device (a
        newer write of the same node stays); a submission that never went, or failed on
        the way, keeps none."""
        kept = []
        for submitted, carried in self._carriers:
            if submitted.handed_over(whole=True):
                for i, writes in carried.items():
                    if self._writes.get(i) is writes:
                        del self._writes[i]
            elif submitted.pending():
                kept.append((submitted, carried))
        self._carriers = kept

    def _handed_over(self) -> bool:
        """Whether every submission of this graph that may still run was handed to the
        device: the next submission's first dispatches then run after all of them, in
        the device queue's order. A submission waiting for its dependencies, or whose
        command group has yet to submit it, was not."""
        return not self._nested and not self._profiling and \
            all(s.handed_over() for s in self._pending)

    # -- update ------------------------------------------------------------------------
    def update(self, target: Any) -> None:
        """`update(node)`, `update([nodes])`, or `update(graph)` from a topologically
        identical modifiable graph: kernel nodes take their current arguments, range and
        active command group."""
        if not self._updatable:
            raise exception(errc.invalid, "the executable graph was finalized without "
                            "property.graph.updatable()")
        if isinstance(target, GraphCore):
            with target._lock:
                pairs = self._whole(target)
        else:
            nodes = [target] if isinstance(target, node) else target
            if not isinstance(nodes, list | tuple):
                raise exception(errc.invalid, "update takes a node, a list of nodes or a "
                                f"modifiable command_graph, got {type(target).__name__}")
            pairs = [(self._own(n), n._command(), _accesses(n)) for n in nodes]
        with self._lock:
            self._apply(pairs)

    def _own(self, n: Any) -> int:
        i = self._index.get(id(n)) if isinstance(n, node) else None
        if i is None or self._nodes[i] is not n:
            raise exception(errc.invalid, "update: the node is not part of this graph")
        if n._type is not node_type.kernel:
            raise exception(errc.invalid, f"update: only kernel nodes can be updated; this "
                            f"node is {n._type.name}")
        return i

    def _whole(self, source: GraphCore) -> list[tuple[int, Command, list[Any]]]:
        if source._device != self._device or source._context != self._context:
            raise exception(errc.invalid, "update: the graphs have different devices or "
                            "contexts")
        nodes = source._nodes
        for n in nodes:
            if n._type not in _WHOLE_UPDATE_TYPES:
                raise exception(errc.invalid, f"update from a graph with a {n._type.name} "
                                "node: only kernel, empty and barrier nodes can be updated")
        index = {id(n): i for i, n in enumerate(nodes)}
        same = len(nodes) == len(self._nodes) and all(
            n._type is self._nodes[i]._type and
            [index[id(p)] for p in n._preds] == self._preds[i]
            for i, n in enumerate(nodes))
        if not same:
            raise exception(errc.invalid, "update: the graph is not topologically identical "
                            "to the one this graph was finalized from")
        pairs = []
        for i, n in enumerate(nodes):
            if n._type is node_type.kernel:
                command = n._command()
                if command.name != self._commands[i].name:
                    raise exception(errc.invalid, f"update: node {i} runs kernel "
                                    f"{command.name}, not {self._commands[i].name}")
                pairs.append((i, command, _accesses(n)))
        return pairs

    def _apply(self, pairs: list[tuple[int, Command, list[Any]]]) -> None:
        """New commands and accessors for kernel nodes. A segment holding an updated node
        is recorded again; a long one is first split around the updated nodes, so that
        updating them again records only their own dispatches."""
        changed: dict[int, list[list[Dispatch]]] = {}
        rewritten: set[int] = set()  # nodes whose new arguments went into their slots
        reshaped = False
        moved = False
        idle = self._idle()
        self._release_retired()
        self._settle_writes()
        on_device = not idle and self._handed_over()
        # what a slot replaced now may be read by: one list for all the nodes
        readers = [] if idle else list(self._pending)
        for i, _, accesses in pairs:
            old = self._accesses[i]
            moved = moved or len(old) != len(accesses) or \
                any(a is not b for a, b in zip(old, accesses, strict=True))
            self._accesses[i] = accesses
        if moved:
            self._requirements = distinct(a for accs in self._accesses for a in accs)
        for i, command, _ in pairs:
            if command is self._commands[i]:
                continue
            slot_launch = self._in_slots.get(i)
            if slot_launch is not None and idle and slot_launch.rewrite(command):
                self._commands[i] = command
                self._writes.pop(i, None)  # older values than these
                rewritten.add(i)
                continue
            if slot_launch is not None and on_device and \
                    (self._fusion is None or not self._fusion.hides(i)):
                writes = slot_launch.rewrite_when_run(command)
                if writes is not None:
                    self._commands[i] = command
                    self._writes[i] = writes
                    rewritten.add(i)
                    continue
            own, launch = self._recorded(i, command, False)
            try:
                lowered = self._lower(own)
            except BaseException:
                if launch is not None:  # recorded nowhere
                    self._slots.release(launch)  # type: ignore[union-attr]
                raise
            if slot_launch is not None:  # the node's segment no longer reads it
                self._retired.append((slot_launch, readers))
                self._writes.pop(i, None)
            if launch is None:
                self._in_slots.pop(i, None)
            else:
                self._in_slots[i] = launch
            gpu = [s.dispatches for s in lowered if isinstance(s, GpuStep)]
            old = [s for s in self._lowered[i] if isinstance(s, GpuStep)]
            self._commands[i] = command
            self._held[i] = own
            self._lowered[i] = lowered
            reshaped = reshaped or len(gpu) != len(old) or not all(gpu) or \
                any(isinstance(s, HostStep) for s in lowered)
            changed[i] = gpu
        if self._fusion is not None and (changed or rewritten):
            fused, regrouped = self._fusion.refresh(set(changed) | rewritten, self._commands,
                                                    idle, on_device, self._writes)
            reshaped = reshaped or regrouped
            changed = {i: gpu for i, gpu in changed.items() if not self._fusion.hides(i)}
            changed.update(fused)
        if reshaped:  # another shape of steps: lower the whole graph again
            for step in self._steps:
                self._retire(step)
            self._build()
            return
        if not changed:
            return
        plan: list[Part | HostStep] = []
        members: list[frozenset[int]] = []
        steps: list[Step] = []  # a new list: submissions under way keep the old one
        for item, nodes, step in zip(self._plan, self._members, self._steps, strict=True):
            if nodes.isdisjoint(changed):
                plan.append(item)
                members.append(nodes)
                steps.append(step)
                continue
            self._retire(step)
            item = [(i, k, changed[i][k] if i in changed else ds) for i, k, ds in item]
            for piece in _around(item, changed):
                plan.append(piece)
                members.append(_members(piece))
                steps.append(self._record(piece))
        self._plan, self._members, self._steps = plan, members, steps

    def _release_retired(self) -> None:
        """Gives the graph's memory back the slots that updates replaced, once the
        submissions that could read them are done. Another graph that took this one's
        steps in reads them for as long as it lives: none serves again then."""
        if self._nested:
            return
        done = 0
        for launch, readers in self._retired:  # oldest first: stop at one still read
            if any(s.pending() for s in readers):
                break
            self._slots.release(launch)  # type: ignore[union-attr]
            done += 1
        del self._retired[:done]

    def _retire(self, step: Step) -> None:
        """A segment an update replaced gives its command buffers back to the engine."""
        if isinstance(step, GpuStep) and step.recording is not None:
            step.recording.retire(self._engine)

    def __repr__(self) -> str:
        return f"syclexp.command_graph[executable]({len(self._nodes)} nodes)"


class _Submitted:
    """A submission of the graph, from when its command is made: pending while that
    command lives without an event (its command group has yet to submit it), for good
    once the scheduler took its steps without an event coming back (a submission that
    failed part-way may have left work on the device), else while its event is not
    complete."""

    __slots__ = ("event", "run", "started")

    def __init__(self, run: GraphRun) -> None:
        self.run = weakref.ref(run)
        self.event: event | None = None
        self.started = False

    def pending(self) -> bool:
        ev = self.event
        if ev is None:
            return self.started or self.run() is not None
        return not ev.is_complete()

    def handed_over(self, whole: bool = False) -> bool:
        """Whether the scheduler is done handing its work to the device; with `whole`,
        and none of it failed on the way."""
        ev = self.event
        return ev is not None and ev._issued and not (whole and ev._error is not None)


def _accesses(n: node) -> list[Any]:
    """The accessors of a node's command group (of its active one), as they are now."""
    h: handler | None = n._handler
    return [] if h is None else list(h.requirements)


def _members(item: Part | HostStep) -> frozenset[int]:
    """The nodes a segment holds (none for a host step)."""
    return frozenset(i for i, _, _ in item) if isinstance(item, list) else frozenset()


def _around(part: Part, changed: dict[int, Any]) -> list[Part]:
    """A segment's parts in runs of updated and other nodes, in order (a short segment
    stays whole). Each run is recorded on its own; the topological order of the parts
    keeps every edge pointing to a later run."""
    if len(part) <= _WHOLE_SEGMENT:
        return [part]
    runs: list[Part] = []
    for entry in part:
        if runs and (entry[0] in changed) == (runs[-1][0][0] in changed):
            runs[-1].append(entry)
        else:
            runs.append([entry])
    return runs


def _topological(preds: list[list[int]], host: list[bool]) -> list[int]:
    """Kahn's order, earliest added first, host tasks only when no GPU node is ready."""
    n = len(preds)
    waiting = [len(set(p)) for p in preds]
    succs: list[list[int]] = [[] for _ in range(n)]
    for i, ps in enumerate(preds):
        for p in set(ps):
            succs[p].append(i)
    ready: list[tuple[bool, int]] = [(host[i], i) for i in range(n) if not waiting[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for s in succs[i]:
            waiting[s] -= 1
            if not waiting[s]:
                heapq.heappush(ready, (host[s], s))
    if len(order) != n:
        raise exception(errc.invalid, "finalize: the graph has a cycle")
    return order


def _launched_with(n: Any) -> Any:
    """The kernel a node's command group launched (for fusion), or None."""
    h = n._handler
    return None if h is None or h.launch_recipe is None else h.launch_recipe[0]
