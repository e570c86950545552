"""`syclexp.dynamic_command_group`: kernel command groups of which the nodes made from
them run the active one; an executable graph's update switches them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..exceptions import errc, exception
from ..runtime.commands import KernelLaunch
from .builder import graph_handler
from .core import GraphCore, modifiable, node


class dynamic_command_group:
    """Kernel command groups of which one is active in the nodes made from it. The
    functions run once, here, in index order (7.9)."""

    def __init__(self, graph: GraphCore,
                 cgfList: Iterable[Callable[[Any], Any]]) -> None:
        self._graph = modifiable(graph, "dynamic_command_group")
        cgfs = list(cgfList)
        if not cgfs:
            raise exception(errc.invalid, "a dynamic_command_group needs at least one "
                            "command group function")
        self._handlers: list[graph_handler] = []
        for k, cgf in enumerate(cgfs):
            h = graph_handler(graph._queue, graph)
            cgf(h)
            if not isinstance(h.command, KernelLaunch):
                what = "nothing" if h.command is None else h.command.command_type
                raise exception(errc.invalid, f"command group {k} of a "
                                f"dynamic_command_group enqueues {what}: only kernels may")
            self._handlers.append(h)
        graph._buffers.check(self._handlers, "a dynamic_command_group")
        self._active = 0
        self._nodes: list[node] = []

    def _active_handler(self) -> graph_handler:
        """The handler whose command the nodes made from this group run."""
        return self._handlers[self._active]

    def get_active_index(self) -> int:
        return self._active

    def set_active_index(self, cgfIndex: int) -> None:
        """The nodes made from this group run command group `cgfIndex` from now on: the
        modifiable graph at once, executable graphs when updated with the nodes."""
        if type(cgfIndex) is not int or not 0 <= cgfIndex < len(self._handlers):
            raise exception(errc.invalid, f"index {cgfIndex!r}: the dynamic_command_group "
                            f"has {len(self._handlers)} command groups")
        self._active = cgfIndex
        for n in self._nodes:
            n._handler = self._active_handler()
