"""Graph nodes, and the events a recording queue returns in place of running anything."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ..exceptions import errc, exception
from ..ranges import nd_range
from ..ranges import range as sycl_range
from ..runtime.commands import Command
from ..runtime.event import event
from ..runtime.handler import handler
from .builder import rebuild
from .properties import NODE_TYPES, node_type

if TYPE_CHECKING:
    from .dynamic import dynamic_command_group
    from .graph import command_graph


class node:
    """One command of a graph (or none: an empty node), with its edges. A node built from
    a command group keeps its handler, so an update builds the command again from the
    same kernel, arguments and range."""

    __slots__ = ("__weakref__", "_dcg", "_fixed", "_graph", "_handler", "_preds",
                 "_succs", "_type")

    def __init__(self, *args: Any) -> None:
        raise TypeError("nodes are made by command_graph.add or by recording a queue")

    @classmethod
    def _make(cls, graph: command_graph, command: Command | None, h: handler | None,
              dcg: dynamic_command_group | None = None) -> node:
        n = object.__new__(cls)
        n._graph = weakref.ref(graph)
        n._fixed = command
        n._handler = h
        n._dcg = dcg
        n._preds: list[node] = []
        n._succs: list[node] = []
        n._type = NODE_TYPES.get(n._command().command_type, node_type.empty)
        return n

    def _active(self) -> handler | None:
        if self._dcg is not None:
            return self._dcg._handlers[self._dcg.get_active_index()]
        return self._handler

    def _command(self) -> Command:
        h = self._active()
        if h is not None and h.command is not None:
            return h.command
        return self._fixed if self._fixed is not None else _EMPTY

    def get_graph(self) -> command_graph | None:
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
        h = self._active()
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
        lock = graph._lock if graph is not None else _NO_LOCK
        with lock:
            h.command = rebuild(h, launch)

    def __repr__(self) -> str:
        return f"syclexp.node({self._type.name})"


class recorded_event(event):
    """What a submission to a recording queue returns: a handle on the node it made.
    It names the node for edges (`depends_on`) and nothing else: waiting on it or asking
    its status is `errc.invalid` (7.11.1)."""

    __slots__ = ("_node",)

    def __init__(self, n: node) -> None:
        super().__init__()
        self._node = n

    def _refuse(self, what: str) -> None:
        raise exception(errc.invalid, f"{what} of an event returned by a queue recording to "
                        "a command_graph")

    def wait(self) -> None:
        self._refuse("wait")

    def wait_and_throw(self) -> None:
        self._refuse("wait")

    def is_complete(self) -> bool:
        self._refuse("the status")
        return False

    def get_info(self, param: Any) -> Any:
        self._refuse("get_info")

    def get_profiling_info(self, param: Any) -> int:
        self._refuse("profiling information")
        return 0

    def _vksycl_record_transitively(self, q: Any) -> None:
        """An executing queue submitting work that depends on this event starts recording
        into the same graph (7.6.2), if that graph still records."""
        self._vksycl_graph_still_records()._begin_transitively(q)

    def _vksycl_graph_still_records(self) -> Any:
        """The event's graph; errc.invalid once it no longer records (asked when the
        dependency is declared, before the command group builds its command)."""
        graph = self._node._graph()
        if graph is None or not graph._recorders:
            raise exception(errc.invalid, "an event of a finished command_graph recording "
                            "cannot be a dependency")
        return graph


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_LOCK = _NoLock()


def _empty() -> Command:
    from ..runtime.commands import Barrier

    return Barrier()


_EMPTY = _empty()
