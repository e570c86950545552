"""What kernels print and assert: each device's debug buffer, read when work completes.

Kernels with `print`, `syclexp.printf` or `assert` write records into one host-visible
buffer per device, whose address the launch passes them. Every submission that completes
drains it (`Submission._finish` calls `drain` before any wait for that submission
returns): the lines go to `sys.stdout` in the order their prints reserved room, so a
work-item's lines keep its order. Records of kernels still running are left for a later
drain; the buffer starts over once nothing else submitted to the device is running.
Lines that found no room are counted and reported, and a failed assertion becomes the
`errc.runtime` error that the next wait on the device raises.

The buffer's layout is the compiler's, which writes it: the kernel front end hands this
module the compiler's reader (`use_format`) and each kernel's static records
(`register`), as the graph layer is handed its fuser; the runtime never imports the
compiler.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from . import bounds
from .context import scheduler_for
from .usm import Allocation, alloc

_DEFAULT_BYTES = 1 << 20
_lock = threading.Lock()
_records: dict[int, dict[str, Any]] = {}  # every record of kernels prepared to launch
_format: Any = None  # the compiler's reader of the buffer (`printing.BufferFormat`)


def use_format(reader: Any) -> None:
    global _format
    _format = reader


def register(records: dict[int, dict[str, Any]]) -> None:
    """Makes a kernel's records known to the host, which formats what they wrote."""
    for rid, record in records.items():
        known = _records.setdefault(rid, record)
        if known != record:  # two records hashing alike: their lines could not be read
            raise exception(errc.build, f"{record['site']}: print record id {rid:#x} "
                            f"collides with the one at {known['site']}; change either")


def buffer_bytes() -> int:
    """The size of a device's debug buffer: `VKSYCL_PRINT_BUFFER` bytes (at least 256,
    room for the header and a few lines), or 1 MiB."""
    text = os.environ.get("VKSYCL_PRINT_BUFFER", str(_DEFAULT_BYTES))
    try:
        return max(int(text), 256)
    except ValueError:
        raise exception(errc.invalid, "VKSYCL_PRINT_BUFFER is a number of bytes, got "
                        f"{text!r}") from None


class DeviceOutput:
    """One device's debug buffer and what the host has read of it."""

    def __init__(self, device: Any, nbytes: int) -> None:
        allocator = scheduler_for(device).allocators[True]
        with bounds.untracked():
            self.allocation = Allocation(allocator, allocator.allocate(nbytes), 0, nbytes,
                                         alloc.host, None, device)
        self.words = self.allocation.host_bytes()[: nbytes // 4 * 4].view(np.uint32)
        _format.start(self.words)
        self.address = self.allocation.address
        self.read = 0  # record words formatted
        self.lost = 0  # lost lines reported
        self.failed = 0  # failed work-items reported
        self.stopped = 0  # accesses checked mode stopped, reported
        self.device = device
        self.failure: exception | None = None  # for the next wait to raise
        self.lock = threading.Lock()

    def drain(self, engine: Any, done: Any) -> None:
        """Writes the lines of the records complete so far, reports lost lines and
        failed assertions; `done` is the submission completing on `engine`, the
        device's, which may have other work in flight."""
        with self.lock:
            w, fmt = self.words, _format
            lines, pos = fmt.lines(w, self.read, _records)
            fmt.unwritten(w, self.read, pos)
            self.read = pos
            if lines:
                sys.stdout.write("".join(lines))
                sys.stdout.flush()
            lost, failed, stopped = fmt.counts(w)
            if lost > self.lost:
                message = f"[vksycl] {lost - self.lost} lines lost: the print buffer is " \
                    f"full (VKSYCL_PRINT_BUFFER={4 * len(w)} bytes)"
                self.lost = lost
                sys.stderr.write(message + "\n")
                warnings.warn(message, RuntimeWarning, stacklevel=2)
            if failed > self.failed:
                if not self.failed and self.failure is None:
                    self.failure = exception(errc.runtime, fmt.failure(w, _records, failed))
                self.failed = failed
            if stopped > self.stopped:
                if not self.stopped and self.failure is None:
                    head, kind, address, size, base = fmt.violation(w, _records, stopped)
                    where = bounds.describe(self.device, address, size, base) if kind == 0 \
                        else fmt.where(kind, address, size, base)
                    self.failure = exception(errc.runtime, f"{head}: {where}")
                self.stopped = stopped
            if pos >= fmt.reserved(w) and engine.idle_besides(done):
                fmt.reset(w)
                self.read = self.lost = self.failed = self.stopped = 0

    def raise_failure(self) -> None:
        """Raises, once, the assertion failure a drain found."""
        with self.lock:
            err, self.failure = self.failure, None
        if err is not None:
            raise err


def address(device: Any) -> int:
    """The device address of `device`'s debug buffer, made on first use."""
    engine = scheduler_for(device).engine
    out = engine.debug_output
    if out is None:
        with _lock:
            out = engine.debug_output
            if out is None:
                out = engine.debug_output = DeviceOutput(device, buffer_bytes())
    return out.address


__all__ = ["DeviceOutput", "address", "buffer_bytes", "register", "use_format"]
