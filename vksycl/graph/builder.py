"""The handler of command groups added through the explicit API, and what no graph node
may hold however it is added (7.12)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..exceptions import errc, exception
from ..properties import work_group_scratch_size
from ..runtime.argument_slots import building
from ..runtime.buffers import accessor
from ..runtime.commands import Command
from ..runtime.event import event
from ..runtime.handler import handler
from ..runtime.queue import queue
from .core import GraphCore
from .parameter import dynamic_parameter


class graph_handler(handler):
    """A handler for `command_graph.add`: kernel arguments may be dynamic parameters of
    the graph (registered with the node once it exists), and what only the record & replay
    API or no graph at all may hold is refused."""

    def __init__(self, q: queue, graph: GraphCore) -> None:
        super().__init__(q)
        self._graph = graph
        # (argument index, or None for `require`, and the dynamic parameter)
        self.dynamic: list[tuple[int | None, dynamic_parameter]] = []

    def set_arg(self, index: int, value: Any) -> None:
        if hasattr(value, "_vksycl_dynamic_parameter"):
            if value._graph is not self._graph:
                raise exception(errc.invalid, "the dynamic_parameter belongs to another "
                                "command_graph")
            self.dynamic.append((index, value))
            value = value._value
        handler.set_arg(self, index, value)

    def require(self, acc: Any) -> None:
        """`require(accessor)`, or `require(dynamic_parameter)` of this graph holding an
        accessor: the node uses its current accessor, and an update replaces it."""
        if hasattr(acc, "_vksycl_dynamic_parameter"):
            if acc._graph is not self._graph:
                raise exception(errc.invalid, "require: the dynamic_parameter belongs to "
                                "another command_graph")
            if not isinstance(acc._value, accessor):
                raise exception(errc.invalid, "require takes a dynamic_parameter holding "
                                f"a sycl.accessor; this one holds {type(acc._value).__name__}")
            self.dynamic.append((None, acc))
            acc = acc._value
        handler.require(self, acc)

    def _launch(self, kernel: Any, launch: Any, properties: Any) -> Command:
        with building():
            return handler._launch(self, kernel, launch, properties)

    def _check_dependencies(self, events: list[event]) -> None:
        self._graph._event_nodes(events)

    def ext_oneapi_barrier(self, events: Iterable[event] = ()) -> None:
        raise exception(errc.invalid, "barriers can be recorded from a queue only; with "
                        "command_graph.add use an empty node with "
                        "property.node.depends_on_all_leaves()")

    def memcpy(self, dest: Any, src: Any, num_bytes: int | None = None,
               offset: int = 0) -> None:
        _no_device_global(dest, src)
        super().memcpy(dest, src, num_bytes, offset)

    def copy(self, src: Any, dest: Any, count: int | None = None, start_index: int = 0
             ) -> None:
        _no_device_global(dest, src)
        super().copy(src, dest, count, start_index)


def _no_device_global(*sides: Any) -> None:
    """Copies to and from device_globals cannot be graph nodes (7.12.4)."""
    for x in sides:
        meta = getattr(x, "__vksycl_device_global__", None)
        if meta is not None:
            raise exception(errc.invalid, f"copies to and from device_global "
                            f"{meta['unique_id']} cannot be added to a command_graph")


def check_recordable(h: handler) -> None:
    """What no graph node may use (7.12): work-group scratch memory."""
    recipe = h.launch_recipe
    props = recipe[2] if recipe is not None else None
    if props is None:
        return
    if not isinstance(props, Iterable):
        props = [props]
    if any(isinstance(p, work_group_scratch_size) for p in props):
        raise exception(errc.invalid, "kernels with the work_group_scratch_size property "
                        "cannot be graph nodes")
