"""Property objects: `sycl.property.queue.in_order()` and friends. A property list is a
plain list of them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class Property:
    """A property: equal to another of the same class and arguments."""

    __slots__ = ()

    def _args(self) -> tuple:
        return tuple(getattr(self, s) for s in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._args() == self._args()

    def __hash__(self) -> int:
        return hash((type(self), self._args()))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}{self._args()!r}"


class work_group_scratch_size(Property):
    """Kernel property (sycl_ext_oneapi_work_group_scratch_memory): bytes of dynamic
    work-group memory for `get_work_group_scratch_memory`. Part of the vocabulary because
    the kernel front ends size the memory by it and graphs refuse kernels that carry it."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int) -> None:
        self.nbytes = int(nbytes)


class promote_private(Property):
    """USM property of graph fusion (sycl_ext_oneapi_graph_fusion): the application
    asserts that each element is accessed by at most one work-item in the graph's kernels
    and that nothing after the graph reads what they wrote, so a fused kernel may keep
    the values in registers and drop their stores. Vocabulary because the allocation
    functions take it and graphs read it."""

    __slots__ = ()


class promote_local(Property):
    """As `promote_private`, per work-group: each element is accessed by the work-items
    of at most one work-group."""

    __slots__ = ()


class _queue_properties:
    class in_order(Property):
        __slots__ = ()

    class enable_profiling(Property):
        __slots__ = ()


class _reduction_properties:
    class initialize_to_identity(Property):
        """The reduction's result ignores the target's value when the kernel starts."""

        __slots__ = ()


class property:
    """`sycl::property`: `property.queue.in_order()`, `.enable_profiling()`, and
    `property.reduction.initialize_to_identity()`."""

    queue = _queue_properties
    reduction = _reduction_properties


def find(properties: Iterable[Any] | None, kind: type) -> Any:
    """The property of class `kind` in a property list, or None."""
    for p in properties or ():
        if isinstance(p, kind):
            return p
    return None
