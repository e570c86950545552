"""sycl_ext_oneapi_virtual_functions: the properties that mark virtual methods and the
kernels that call them, and the submission-time checks on the sets a kernel declares.

Any Python class names a set; `None` is the default set (C++'s `void`). The compiler's
`virtual` module lowers the calls; this module is what user code spells.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any

from ..compiler import virtual
from ..compiler.free_function import FreeFunctionKernel, _ill_formed
from ..exceptions import errc, exception, invalid
from .properties import _KernelProperty


def _check_set(set_id: Any) -> Any:
    if set_id is not None and not isinstance(set_id, type):
        raise invalid(f"a set of virtual functions is named by a class (or None for the "
                      f"default set), got {set_id!r}")
    return set_id


def indirectly_callable_in(set_id: Any) -> Any:
    """`@syclexp.indirectly_callable_in(SetId)`: the method is a device function in the set
    `SetId`, callable from kernels that declare the set. Each overrider is marked too."""
    _check_set(set_id)

    def mark(fn: Any) -> Any:
        if isinstance(fn, FreeFunctionKernel):
            raise _ill_formed(fn.function, "is marked indirectly_callable; the property "
                              "applies to virtual methods, not to kernels")
        if not isinstance(fn, types.FunctionType):
            raise invalid(f"indirectly_callable applies to methods (functions defined in a "
                          f"@sycl.struct class), not to {type(fn).__name__}")
        current = getattr(fn, virtual.MARK, set_id)
        if current != set_id:
            raise invalid(f"{fn.__qualname__} is indirectly_callable in "
                          f"{virtual.set_name(current)} and in {virtual.set_name(set_id)}; "
                          "a method belongs to one set")
        setattr(fn, virtual.MARK, set_id)
        return fn

    return mark


def indirectly_callable(fn: Any = None) -> Any:
    """`@syclexp.indirectly_callable()`: `indirectly_callable_in` the default set."""
    mark = indirectly_callable_in(None)
    return mark if fn is None else mark(fn)


class assume_indirect_calls_to(_KernelProperty):
    """`assume_indirect_calls_to(SetA, SetB, ...)`: the kernel may make virtual calls and
    declares the sets of methods they reach. As a launch property (`properties=[...]`) or
    a decorator of a free function kernel."""

    __slots__ = ("sets",)

    def __init__(self, *sets: Any) -> None:
        if not sets:
            raise invalid("assume_indirect_calls_to names at least one set")
        self.sets = tuple(dict.fromkeys(_check_set(s) for s in sets))


assume_indirect_calls = assume_indirect_calls_to(None)


def indirect_sets(properties: Iterable[Any] | None, kernel: Any = None) -> tuple | None:
    """The sets a launch declares, from its properties and the kernel's own (a free
    function kernel's decorators), or None when it declares none."""
    found: list[Any] = []
    own = getattr(kernel, "properties", ()) if kernel is not None else ()
    for p in (*(properties or ()), *own):
        if isinstance(p, assume_indirect_calls_to):
            found.extend(s for s in p.sets if s not in found)
    return tuple(found) if found else None


def check_sets(sets: tuple) -> None:
    """A declared set must hold at least one method (errc.invalid at submission)."""
    held = virtual.nonempty_sets()
    for s in sets:
        if s not in held:
            raise exception(errc.invalid, f"assume_indirect_calls_to names "
                            f"{virtual.set_name(s)}, which holds no indirectly_callable "
                            "method")


__all__ = ["assume_indirect_calls", "assume_indirect_calls_to", "check_sets",
           "indirect_sets", "indirectly_callable", "indirectly_callable_in"]
