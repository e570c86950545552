"""`syclexp.if_device` / `syclexp.if_host` (seed 002) called from ordinary host Python.

Here, on the host, `if_host`'s function runs and `if_device`'s does not; the returned
helper's `otherwise` runs its function exactly when the first one did not, as the seed's
`if_device_or_host_helper<MakeCall>` does. In device code the compiler recognises the
same two functions as markers (`vksycl.compiler.if_device`), so one helper function
serves both sides.
"""

from __future__ import annotations

from collections.abc import Callable

from ..compiler.if_device import MARKER
from ..exceptions import invalid


class if_device_or_host_helper:
    """What if_device / if_host return: `otherwise(fn)` calls fn when `make_call`."""

    __slots__ = ("make_call",)

    def __init__(self, make_call: bool) -> None:
        self.make_call = make_call

    def otherwise(self, fn: Callable[[], object]) -> None:
        _check(fn, "otherwise")
        if self.make_call:
            fn()

    def __repr__(self) -> str:
        return f"if_device_or_host_helper(make_call={self.make_call})"


_CALL = if_device_or_host_helper(True)
_SKIP = if_device_or_host_helper(False)


def if_device(fn: Callable[[], object]) -> if_device_or_host_helper:
    """Call `fn()` only in device code. On the host it is not called, and the helper's
    `otherwise` calls its function."""
    _check(fn, "if_device")
    return _CALL


def if_host(fn: Callable[[], object]) -> if_device_or_host_helper:
    """Call `fn()` only on the host: here it is called, and `otherwise` does nothing."""
    _check(fn, "if_host")
    fn()
    return _SKIP


def _check(fn: object, name: str) -> None:
    if not callable(fn):
        raise invalid(f"{name} needs a callable taking no arguments, got "
                      f"{type(fn).__name__}")


setattr(if_device, MARKER, "device")
setattr(if_host, MARKER, "host")

__all__ = ["if_device", "if_device_or_host_helper", "if_host"]
