"""The graph extension's enumerations and properties (`syclexp.node_type`,
`syclexp.graph_state`, `syclexp.property.graph.*`, `syclexp.property.node.*`)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from ..exceptions import errc, exception
from ..properties import Property, find, promote_local, promote_private


class node_type(enum.Enum):
    empty = 0
    subgraph = 1
    kernel = 2
    memcpy = 3
    memset = 4
    memfill = 5
    prefetch = 6
    memadvise = 7
    ext_oneapi_barrier = 8
    host_task = 9


class graph_state(enum.Enum):
    modifiable = 0
    executable = 1


# a command's `command_type` and the node type it makes
NODE_TYPES = {
    "kernel": node_type.kernel, "memcpy": node_type.memcpy, "memset": node_type.memset,
    "fill": node_type.memfill, "prefetch": node_type.prefetch,
    "mem_advise": node_type.memadvise, "ext_oneapi_barrier": node_type.ext_oneapi_barrier,
    "barrier": node_type.empty, "host_task": node_type.host_task,
    "subgraph": node_type.subgraph,
}


class _graph_properties:
    class no_cycle_check(Property):
        __slots__ = ()

    class assume_buffer_outlives_graph(Property):
        """The promise that every buffer the graph uses outlives it: without it, a graph
        takes no command group using a buffer (7.11.3)."""

        __slots__ = ()

    class assume_data_outlives_buffer(Property):
        """The promise that the host data of the graph's buffers outlives them: the graph
        reads it when it first runs instead of copying it when the command is recorded
        (9.1.1)."""

        __slots__ = ()

    class updatable(Property):
        __slots__ = ()

    class enable_profiling(Property):
        __slots__ = ()

    class perform_fusion(Property):
        """Fuse runs of kernel nodes into one kernel where the compiler proves it keeps
        their semantics (sycl_ext_oneapi_graph_fusion). A hint: what cannot be fused runs
        as it is, and `fusion_report()` says why."""

        __slots__ = ()


class _node_properties:
    class depends_on(Property):
        """Edges from each of `nodes` to the node being added."""

        __slots__ = ("nodes",)

        def __init__(self, *nodes: Any) -> None:
            if len(nodes) == 1 and isinstance(nodes[0], list | tuple):
                nodes = tuple(nodes[0])
            self.nodes = tuple(nodes)

    class depends_on_all_leaves(Property):
        __slots__ = ()


class property:
    """Graph properties: `property.graph.updatable()`, `.perform_fusion()`,
    `.assume_buffer_outlives_graph()`, ...; `property.node.depends_on(*nodes)`; and the
    memory properties `promote_private()` and `promote_local()` for fusion."""

    graph = _graph_properties
    node = _node_properties
    promote_private = promote_private
    promote_local = promote_local


# what command_graph and begin_recording take
GRAPH_PROPERTIES = (property.graph.no_cycle_check, property.graph.assume_buffer_outlives_graph,
                    property.graph.assume_data_outlives_buffer)


def property_list(props: Any, allowed: tuple[type, ...], what: str) -> list[Any]:
    """A checked property list: one property alone or a list of them, each of a kind
    `what` takes."""
    if props is None:
        return []
    if isinstance(props, Property):
        props = [props]
    if not isinstance(props, Iterable) or isinstance(props, str | bytes):
        raise exception(errc.invalid, f"{what} takes a list of properties, got "
                        f"{type(props).__name__}")
    out = list(props)
    for p in out:
        if not isinstance(p, allowed):
            raise exception(errc.invalid, f"{p!r} is not a property of {what}")
    return out


def has(props: list[Any], kind: type) -> bool:
    return find(props, kind) is not None
