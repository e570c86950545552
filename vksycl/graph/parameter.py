"""`syclexp.dynamic_parameter`: a kernel argument that an executable graph's update
changes in every kernel node it was given to."""

from __future__ import annotations

from typing import Any

from ..exceptions import errc, exception
from ..runtime.buffers import accessor
from ..runtime.handler import handler
from .core import GraphCore, modifiable, rebuild


class dynamic_parameter:
    """A kernel argument (a scalar, a USM pointer or an accessor) registered through
    `set_arg` / `set_args` (an accessor also through `require`) with nodes of one graph;
    `update` changes it in every one of them."""

    _vksycl_dynamic_parameter = True

    def __init__(self, graph: GraphCore, initialValue: Any) -> None:
        self._graph = modifiable(graph, "dynamic_parameter")
        self._value = initialValue
        # (handler, argument index, or None where the handler requires the accessor)
        self._uses: list[tuple[handler, int | None]] = []

    def _register(self, h: handler, index: int | None) -> None:
        self._uses.append((h, index))

    def update(self, newValue: Any) -> None:
        """Every registered node's command is built again with the new value: the
        modifiable graph sees it at once, executable graphs when updated with the nodes.
        An accessor replaces the old one among the nodes' requirements; the edges stay
        as they are (7.5.2), while nodes added later follow the new accessor."""
        graph = self._graph
        with graph._lock:
            old = self._value
            is_accessor = isinstance(old, accessor)
            if is_accessor != isinstance(newValue, accessor):
                raise exception(errc.invalid, f"the dynamic_parameter holds a "
                                f"{type(old).__name__}; update takes one of that kind, not "
                                f"a {type(newValue).__name__}")
            buffers = graph._buffers
            if is_accessor:
                buffers.check_accessor(newValue, "dynamic_parameter.update")
                newValue.bind(graph._queue)
            saved = [(h, dict(h._kernel_args or {}), list(h.requirements)) for h in
                     dict.fromkeys(h for h, _ in self._uses)]
            try:
                for h, index in self._uses:
                    if index is None:
                        h.requirements = _replaced(h.requirements, old, newValue)
                    else:
                        h._kernel_args[index] = newValue
                built = [(h, rebuild(h)) for h, _, _ in saved if h.launch_recipe is not None]
            except BaseException:
                for h, args, requirements in saved:
                    h._kernel_args, h.requirements = args, requirements
                raise
            self._value = newValue
            for h, command in built:
                h.command = command
            if is_accessor and self._uses:
                buffers.take(graph, newValue, not buffers.data_outlives_buffer, graph._queue)
                buffers.retrack()

    def __repr__(self) -> str:
        return f"syclexp.dynamic_parameter({self._value!r})"


def _replaced(requirements: list[Any], old: Any, new: Any) -> list[Any]:
    """A command group's accessors with `old` replaced by `new`, each once."""
    out: list[Any] = []
    for r in requirements:
        r = new if r is old else r
        if not any(x is r for x in out):
            out.append(r)
    return out
