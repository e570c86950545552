"""Dynamic parameters and dynamic command groups: what an executable graph's update
changes in kernel nodes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..exceptions import errc, exception
from ..runtime.commands import KernelLaunch
from .builder import graph_handler, rebuild

if TYPE_CHECKING:
    from .graph import command_graph
    from .node import node


class dynamic_parameter:
    """A kernel argument (a scalar or a USM pointer) registered through `set_arg` /
    `set_args` with nodes of one graph; `update` changes it in every one of them."""

    _vksycl_dynamic_parameter = True

    def __init__(self, graph: command_graph, initialValue: Any) -> None:
        _check_graph(graph, "dynamic_parameter")
        self._graph = graph
        self._value = initialValue
        self._uses: list[tuple[Any, int]] = []  # (handler, argument index)

    def _register(self, h: Any, index: int) -> None:
        self._uses.append((h, index))

    def update(self, newValue: Any) -> None:
        """Every registered node's command is built again with the new value: the
        modifiable graph sees it at once, executable graphs when updated with the nodes."""
        with self._graph._lock:
            built = []
            for h, index in self._uses:
                h._kernel_args[index] = newValue
                if h.launch_recipe is not None:
                    built.append((h, rebuild(h)))
            self._value = newValue
            for h, command in built:
                h.command = command

    def __repr__(self) -> str:
        return f"syclexp.dynamic_parameter({self._value!r})"


class dynamic_command_group:
    """Kernel command groups of which one is active in the nodes made from it. The
    functions run once, here, in index order (7.9)."""

    def __init__(self, graph: command_graph,
                 cgfList: Iterable[Callable[[Any], Any]]) -> None:
        _check_graph(graph, "dynamic_command_group")
        cgfs = list(cgfList)
        if not cgfs:
            raise exception(errc.invalid, "a dynamic_command_group needs at least one "
                            "command group function")
        self._graph = graph
        self._handlers: list[graph_handler] = []
        for k, cgf in enumerate(cgfs):
            h = graph_handler(graph._queue, graph)
            cgf(h)
            if not isinstance(h.command, KernelLaunch):
                what = "nothing" if h.command is None else h.command.command_type
                raise exception(errc.invalid, f"command group {k} of a "
                                f"dynamic_command_group enqueues {what}: only kernels may")
            self._handlers.append(h)
        self._active = 0
        self._nodes: list[node] = []

    def get_active_index(self) -> int:
        return self._active

    def set_active_index(self, cgfIndex: int) -> None:
        if type(cgfIndex) is not int or not 0 <= cgfIndex < len(self._handlers):
            raise exception(errc.invalid, f"index {cgfIndex!r}: the dynamic_command_group "
                            f"has {len(self._handlers)} command groups")
        self._active = cgfIndex


def _check_graph(graph: Any, what: str) -> None:
    from .graph import command_graph

    if not isinstance(graph, command_graph):
        raise exception(errc.invalid, f"{what} takes a modifiable command_graph, got "
                        f"{type(graph).__name__}")
