"""The modifiable graph's data: its nodes and their edges, and the state the graph shares
with its handlers, dynamic parameters, recordings and executable graphs.

A node built from a command group keeps its handler: when the node's range or arguments
change, its command is built again through the very launch path that built it (the
handler's `_launch`). The compiled kernel and its pipeline come from their caches, so an
update only packs new push constants, never compiles."""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any

from ..exceptions import errc, exception
from ..ranges import nd_range
from ..ranges import range as sycl_range
from ..runtime.argument_slots import building
from ..runtime.commands import Command
from ..runtime.context import context
from ..runtime.event import event
from ..runtime.handler import handler
from ..runtime.host_commands import Barrier
from ..runtime.platform import device
from ..runtime.queue import queue
from .buffers import BufferUse
from .properties import NODE_TYPES, node_type

_EMPTY = Barrier()


def rebuild(h: handler, launch: Any = None) -> Command:
    """The command of `h`'s kernel with its current arguments, over `launch` (by default
    the range it was enqueued with)."""
    kernel, old, properties = h.launch_recipe
    with building():
        return handler._launch(h, kernel, old if launch is None else launch, properties)


class node:
    """One command of a graph (or none: an empty node), with its edges. A node built from
    a command group keeps its handler (a dynamic command group's active one), so an update
    builds the command again from the same kernel, arguments and range."""

    __slots__ = ("__weakref__", "_fixed", "_graph", "_handler", "_preds", "_succs", "_type")

    def __init__(self, *args: Any) -> None:
        raise TypeError("nodes are made by command_graph.add or by recording a queue")

    @classmethod
    def _make(cls, graph: GraphCore, command: Command | None, h: handler | None) -> node:
        n = object.__new__(cls)
        n._graph = weakref.ref(graph)
        n._fixed = command
        n._handler = h
        n._preds: list[node] = []
        n._succs: list[node] = []
        n._type = NODE_TYPES.get(n._command().command_type, node_type.empty)
        return n

    def _command(self) -> Command:
        h = self._handler
        if h is not None and h.command is not None:
            return h.command
        return self._fixed if self._fixed is not None else _EMPTY

    def get_graph(self) -> GraphCore | None:
        """The command_graph the node belongs to (None once it is gone)."""
        return self._graph()

    # -- queries ---------------------------------------------------------------------
    def get_type(self) -> node_type:
        return self._type

    def get_predecessors(self) -> list[node]:
        return list(self._preds)

    def get_successors(self) -> list[node]:
        return list(self._succs)

    @staticmethod
    def get_node_from_event(nodeEvent: event) -> node:
        n = getattr(nodeEvent, "_node", None)
        if n is None:
            raise exception(errc.invalid, "the event was not returned by a submission to a "
                            "queue recording to a command_graph")
        return n

    # -- updates -----------------------------------------------------------------------
    def update_range(self, executionRange: Any) -> None:
        if not isinstance(executionRange, sycl_range):
            raise exception(errc.invalid, "update_range takes a sycl.range")
        self._update_launch(executionRange)

    def update_nd_range(self, executionRange: Any) -> None:
        if not isinstance(executionRange, nd_range):
            raise exception(errc.invalid, "update_nd_range takes a sycl.nd_range")
        self._update_launch(executionRange)

    def _update_launch(self, launch: Any) -> None:
        """A new range takes effect in the modifiable graph at once (the command is built
        again); executable graphs see it when they are updated with this node."""
        if self._type is not node_type.kernel:
            raise exception(errc.invalid, f"only kernel nodes have a range; this node is "
                            f"{self._type.name}")
        h = self._handler
        if h is None or h.launch_recipe is None:
            raise exception(errc.invalid, "this kernel node was not enqueued through "
                            "handler.parallel_for / single_task or nd_launch: its range "
                            "cannot change")
        old = h.launch_recipe[1]
        if old is None:
            raise exception(errc.invalid, "a single_task node has no range to update")
        if old.dimensions != launch.dimensions:
            raise exception(errc.invalid, f"the node's kernel runs over {old.dimensions} "
                            f"dimensions; the new range has {launch.dimensions}")
        graph = self._graph()
        lock = graph._lock if graph is not None else contextlib.nullcontext()
        with lock:
            h.command = rebuild(h, launch)

    def __repr__(self) -> str:
        return f"syclexp.node({self._type.name})"


class GraphCore:
    """What every part of a modifiable command_graph shares: its device and context, the
    queue the handlers of explicitly added nodes use, the lock that orders changes, the
    nodes in the order they were added, and the buffers they use."""

    def __init__(self, ctx: context, dev: device, buffers: BufferUse) -> None:
        self._context, self._device = ctx, dev
        self._queue = queue(ctx, dev)
        self._lock = threading.RLock()
        self._nodes: list[node] = []
        self._buffers = buffers

    def get_context(self) -> context:
        return self._context

    def get_device(self) -> device:
        return self._device

    def _add_node(self, command: Command | None, h: handler | None, deps: list[node]
                  ) -> node:
        n = node._make(self, command, h)
        for d in dict.fromkeys(deps):  # once each, in order
            d._succs.append(n)
            n._preds.append(d)
        self._nodes.append(n)
        return n

    def _event_nodes(self, events: list[event]) -> list[node]:
        """The nodes recorded events name: events of this graph's recordings only."""
        out = []
        for e in events:
            n = getattr(e, "_node", None)
            if n is None or n._graph() is not self:
                raise exception(errc.invalid, "a graph node may depend only on events "
                                "returned by submissions recorded into the same graph")
            out.append(n)
        return out


def modifiable(graph: Any, what: str) -> GraphCore:
    """`graph`, which `what` takes: a modifiable command_graph."""
    if not isinstance(graph, GraphCore):
        raise exception(errc.invalid, f"{what} takes a modifiable command_graph, got "
                        f"{type(graph).__name__}")
    return graph
