"""`syclexp.command_graph` in the modifiable state: nodes and edges, built explicitly
(`add`, `make_edge`) or recorded from queues (recording.py), finalized into executable
graphs (executable.py) and printed (dot.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..exceptions import errc, exception
from ..runtime.aspects import aspect
from ..runtime.context import context
from ..runtime.host_commands import Barrier
from ..runtime.platform import device
from ..runtime.queue import queue
from .buffers import BufferUse
from .builder import check_recordable, graph_handler
from .command_group import dynamic_command_group
from .core import node
from .dot import write_dot
from .executable import FINALIZE_PROPERTIES, executable_command_graph
from .properties import GRAPH_PROPERTIES, graph_state, has, property, property_list
from .recording import Recording

_NODE_PROPERTIES = (property.node.depends_on, property.node.depends_on_all_leaves)


class command_graph(Recording):
    """`command_graph(q, property_list)` or `command_graph(ctx, dev, property_list)`.
    `command_graph[graph_state.executable]` names the executable graphs `finalize` makes."""

    def __init__(self, *args: Any, property_list: Any = None) -> None:
        args_ = list(args)
        if args_ and isinstance(args_[-1], list) and property_list is None:
            property_list = args_.pop()
        if len(args_) == 1 and isinstance(args_[0], queue):
            q = args_[0]
            ctx, dev = q.get_context(), q.get_device()
        elif len(args_) == 2 and isinstance(args_[0], context) and \
                isinstance(args_[1], device):
            ctx, dev = args_
            if not ctx.has_device(dev):
                raise exception(errc.invalid, "the graph's device is not in its context")
        else:
            raise exception(errc.invalid, "command_graph takes a queue, or a context and a "
                            "device, then a property list")
        if not dev.has(aspect.ext_oneapi_graph) and \
                not dev.has(aspect.ext_oneapi_limited_graph):
            raise exception(errc.invalid, "the device does not support command graphs")
        properties = _props(property_list, GRAPH_PROPERTIES, "command_graph")
        super().__init__(ctx, dev, BufferUse(
            has(properties, property.graph.assume_buffer_outlives_graph),
            has(properties, property.graph.assume_data_outlives_buffer)))
        self._properties = properties
        self._check_cycles = not has(properties, property.graph.no_cycle_check)

    def __class_getitem__(cls, state: graph_state) -> type:
        if state is graph_state.executable:
            return executable_command_graph
        return cls

    # -- the explicit API --------------------------------------------------------------
    def add(self, cgf: Any = None, property_list: Any = None) -> node:
        """`add(props)`: an empty node; `add(cgf, props)`: the command group's command;
        `add(dynamic_command_group, props)`: its active command group."""
        if isinstance(cgf, list) and property_list is None:
            cgf, property_list = None, cgf
        props = _props(property_list, _NODE_PROPERTIES, "a node")
        with self._lock:
            self._refuse_while_recording("add")
            deps = self._property_deps(props)
            if cgf is None:
                return self._add_node(Barrier(), None, deps)
            if isinstance(cgf, dynamic_command_group):
                return self._add_dynamic(cgf, deps)
            if not callable(cgf):
                raise exception(errc.invalid, "add takes a command group function, a "
                                f"dynamic_command_group or a property list, got "
                                f"{type(cgf).__name__}")
            h = graph_handler(self._queue, self)
            cgf(h)
            check_recordable(h)
            self._buffers.check([h], "a command group added to a command_graph")
            command = h.command if h.command is not None else Barrier()
            if h.dynamic and command.command_type != "kernel":
                raise exception(errc.invalid, "dynamic parameters are for kernel nodes; this "
                                f"command group enqueues {command.command_type}")
            deps += self._event_nodes(h._deps) + self._buffers.dependencies([h])
            n = self._add_node(command, h, deps)
            self._buffers.add(self, n, [h], not self._buffers.data_outlives_buffer,
                              self._queue)
            for index, param in h.dynamic:
                param._register(h, index)
            return n

    def _add_dynamic(self, dcg: dynamic_command_group, deps: list[node]) -> node:
        if dcg._graph is not self:
            raise exception(errc.invalid, "the dynamic_command_group belongs to another "
                            "command_graph")
        handlers = dcg._handlers
        edges = [self._event_nodes(h._deps) for h in handlers]
        if any(e != edges[0] for e in edges[1:]):
            raise exception(errc.invalid, "the command groups of a dynamic_command_group "
                            "must have the same dependencies")
        self._buffers.check(handlers, "a dynamic_command_group")
        accessed = [self._buffers.dependencies([h]) for h in handlers]
        if any(set(a) != set(accessed[0]) for a in accessed[1:]):
            raise exception(errc.invalid, "the accessors of the command groups of a "
                            "dynamic_command_group must give the node the same "
                            "dependencies")
        n = self._add_node(None, dcg._active_handler(), deps + edges[0] + accessed[0])
        self._buffers.add(self, n, handlers, not self._buffers.data_outlives_buffer,
                          self._queue)
        for h in dcg._handlers:
            for index, param in h.dynamic:
                if (h, index) not in param._uses:
                    param._register(h, index)
        dcg._nodes.append(n)
        return n

    def _property_deps(self, props: list[Any]) -> list[node]:
        deps: list[node] = []
        for p in props:
            if isinstance(p, property.node.depends_on):
                for n in p.nodes:
                    self._own(n, "property.node.depends_on")
                    deps.append(n)
            elif isinstance(p, property.node.depends_on_all_leaves):
                deps += [n for n in self._nodes if not n._succs]
        return deps

    def _own(self, n: Any, what: str) -> None:
        if not isinstance(n, node) or n._graph() is not self:
            raise exception(errc.invalid, f"{what}: the node is not part of this graph")

    def make_edge(self, src: node, dest: node) -> None:
        with self._lock:
            self._refuse_while_recording("make_edge")
            self._own(src, "make_edge source")
            self._own(dest, "make_edge destination")
            if src is dest:
                raise exception(errc.invalid, "make_edge: a node cannot depend on itself")
            if dest in src._succs:
                return
            if self._check_cycles and _reaches(dest, src):
                raise exception(errc.invalid, "make_edge: the edge would make a cycle")
            src._succs.append(dest)
            dest._preds.append(src)

    def _refuse_while_recording(self, what: str) -> None:
        if self._recorders:
            raise exception(errc.invalid, f"{what}: the graph is recording a queue")

    # -- queries -----------------------------------------------------------------------
    def get_nodes(self) -> list[node]:
        with self._lock:
            return list(self._nodes)

    def get_root_nodes(self) -> list[node]:
        with self._lock:
            return [n for n in self._nodes if not n._preds]

    # -- recording (queue states live in recording.py) ---------------------------------
    @contextlib.contextmanager
    def recording(self, queues: Any, property_list: Any = None) -> Iterator[command_graph]:
        """`with g.recording(q):` records what is submitted to `q` (or a list of queues)
        in the block, and ends recording on them however the block ends."""
        self.begin_recording(queues, property_list)
        try:
            yield self
        finally:
            self.end_recording(queues)

    # -- finalize and output -----------------------------------------------------------
    def finalize(self, property_list: Any = None) -> executable_command_graph:
        props = _props(property_list, FINALIZE_PROPERTIES, "finalize")
        if has(props, property.graph.updatable) and \
                not self._device.has(aspect.ext_oneapi_graph):
            raise exception(errc.invalid, "the device supports limited graphs only "
                            "(aspect ext_oneapi_limited_graph): no executable graph update")
        with self._lock:
            return executable_command_graph(self, props)

    def print_graph(self, path: Any, verbose: bool = False) -> None:
        with self._lock:
            write_dot(self._nodes, path, verbose)

    def __repr__(self) -> str:
        return f"syclexp.command_graph({len(self._nodes)} nodes)"


def _props(props: Any, allowed: tuple[type, ...], what: str) -> list[Any]:
    return property_list(props, allowed, what)


def _reaches(start: node, goal: node) -> bool:
    """Whether `goal` is reachable from `start` along edges."""
    seen: set[int] = set()
    todo = [start]
    while todo:
        n = todo.pop()
        if n is goal:
            return True
        if id(n) in seen:
            continue
        seen.add(id(n))
        todo += n._succs
    return False
