"""`sycl.exception` and `sycl.errc`: every error vksycl raises on purpose is one of these."""

from __future__ import annotations

import enum


class errc(enum.IntEnum):
    success = 0
    runtime = 1
    kernel = 2
    accessor = 3
    nd_range = 4
    event = 5
    kernel_argument = 6
    build = 7
    invalid = 8
    memory_allocation = 9
    platform = 10
    profiling = 11
    feature_not_supported = 12
    kernel_not_supported = 13
    backend_mismatch = 14


class exception(Exception):
    """SYCL's exception: a message and an `errc` code, as `sycl::exception` carries."""

    def __init__(self, code: errc, message: str = "") -> None:
        super().__init__(f"{message} [{code.name}]" if message else code.name)
        self._code = errc(code)
        self._message = message

    def code(self) -> errc:
        return self._code

    def what(self) -> str:
        return self._message or self._code.name


class exception_list(list):
    """The asynchronous errors handed to a queue's `async_handler`."""


def invalid(message: str) -> exception:
    return exception(errc.invalid, message)
