"""`syclexp.dynamic_parameter`: a kernel argument that an executable graph's update
changes in every kernel node it was given to."""

from __future__ import annotations

from typing import Any

from ..runtime.handler import handler
from .core import GraphCore, modifiable, rebuild


class dynamic_parameter:
    """A kernel argument (a scalar or a USM pointer) registered through `set_arg` /
    `set_args` with nodes of one graph; `update` changes it in every one of them."""

    _vksycl_dynamic_parameter = True

    def __init__(self, graph: GraphCore, initialValue: Any) -> None:
        self._graph = modifiable(graph, "dynamic_parameter")
        self._value = initialValue
        self._uses: list[tuple[handler, int]] = []  # (handler, argument index)

    def _register(self, h: handler, index: int) -> None:
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
