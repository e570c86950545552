"""Checked mode's view of memory (`VKSYCL_CHECK=bounds`): the live allocations of each
device, as the table checked kernels look addresses up in, and, for a report, what an
address a check stopped lies in or near.

Every allocation (USM, a buffer's memory, a device_global, a launch's scratch) tells
this module when it is made and freed (`usm.watch`). A launch of a checked kernel passes
the address of the device's table: a count, then the sorted [start, end) of each live
allocation, in host-visible memory, made again when the allocations changed since the
last one. Earlier tables are kept: a recorded graph still reads the one it was recorded
with (it knows every allocation its arguments point into, and misses only later
frees).
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..config import CHECKS
from . import usm
from .context import scheduler_for
from .usm import Allocation, alloc

_FREED_KEPT = 4096  # frees remembered per device, to name freed memory in reports
_lock = threading.RLock()
_live: dict[Any, dict[int, Allocation]] = {}  # device -> {id: allocation}
_freed: dict[Any, collections.deque[tuple[int, int, str]]] = {}  # (start, end, what)
_version: dict[Any, int] = {}  # device -> changes to its allocations so far
_tables: dict[Any, tuple[int, int]] = {}  # device -> (version, address) of its table
# device -> (version, starts, spans): the live allocations sorted, for `span`
_sorted: dict[Any, tuple[int, list[int], list[tuple[int, int]]]] = {}
_kept: list[Allocation] = []  # every table made
_making = threading.local()  # `untracked` in this thread


@contextlib.contextmanager
def untracked() -> Iterator[None]:
    """Allocations this thread makes meanwhile are none of kernel code's (tables, the
    debug buffer): an access landing there is in no allocation. No lock is held while
    they are made: an allocation may wait for the device, and so for a drain of the
    debug buffer that describes an address here."""
    _making.on = True
    try:
        yield
    finally:
        _making.on = False


def _watch(a: Allocation, live: bool) -> None:
    if getattr(_making, "on", False):
        return
    with _lock:
        device = a.device
        if live:
            _live.setdefault(device, {})[id(a)] = a
        else:
            _live.get(device, {}).pop(id(a), None)
            _freed.setdefault(device, collections.deque(maxlen=_FREED_KEPT)).append(
                (a.address, a.address + a.nbytes, repr(a)))
        _version[device] = _version.get(device, 0) + 1


def table_address(device: Any) -> int:
    """The device address of `device`'s table of live allocations, made again when they
    changed."""
    with _lock:
        version = _version.get(device, 0)
        known = _tables.get(device)
        if known is not None and known[0] == version:
            return known[1]
        spans = sorted((a.address, a.address + a.nbytes) for a in _live.get(device, {}).values())
    words = np.zeros(1 + 2 * len(spans), np.uint64)
    words[0] = len(spans)
    words[1:] = np.asarray(spans, np.uint64).reshape(-1)
    allocator = scheduler_for(device).allocators[True]
    with untracked():
        table = Allocation(allocator, allocator.allocate(words.nbytes), 0, words.nbytes,
                           alloc.host, None, device)
    table.host_bytes()[:] = words.view(np.uint8)
    with _lock:
        _kept.append(table)
        _tables[device] = (version, table.address)
    return table.address


def span(device: Any, address: int) -> tuple[int, int]:
    """The [start, end) of the live allocation a pointer argument points into (one past
    its end included), or an empty span for none."""
    with _lock:
        version = _version.get(device, 0)
        known = _sorted.get(device)
        if known is None or known[0] != version:
            spans = sorted((a.address, a.address + a.nbytes)
                           for a in _live.get(device, {}).values())
            known = _sorted[device] = (version, [s for s, _ in spans], spans)
        k = bisect.bisect_right(known[1], address) - 1
        if k >= 0 and address <= known[2][k][1]:
            return known[2][k]
        return 0, 0


def _holding(device: Any, address: int) -> Allocation | None:
    for a in _live.get(device, {}).values():
        if a.address <= address < a.address + max(a.nbytes, 1):
            return a
    return None


def describe(device: Any, address: int, size: int, base: int) -> str:
    """Where a `size`-byte access at `address` through a pointer computed from `base`
    lands: past the end of the pointer's allocation, in another one, in freed memory, or
    in none (and which allocation is nearest)."""
    with _lock:
        own = _holding(device, base)
        at = _holding(device, address)
        what = f"{size}-byte access at {address:#x}"
        if at is not None and at is own:
            return (f"{what} runs past the end of {at!r} (at byte {address - at.address} of "
                    f"{at.nbytes})")
        if at is not None:
            mine = f", not in {own!r} its pointer points into" if own is not None else ""
            return f"{what} lands in another allocation, {at!r}{mine}"
        if own is not None:
            return f"{what} is outside {own!r} its pointer points into: {_offset(own, address)}"
        freed = next((f"in freed memory (byte {address - start} of {text}, freed)"
                      for start, end, text in reversed(_freed.get(device, ()))
                      if start <= address < max(end, start + 1)), None)
        spans = list(_live.get(device, {}).values())
        if not spans:
            return f"{what} is {freed or 'in no allocation'}"
        near = min(spans, key=lambda a: min(abs(address - a.address),
                                            abs(address - a.address - a.nbytes)))
        # an address just past a live allocation may lie where freed memory was too
        return f"{what} is {freed or 'in no allocation'}: the nearest live allocation " \
            f"is {near!r}, {_offset(near, address)}"


def _offset(a: Allocation, address: int) -> str:
    if address >= a.address + a.nbytes:
        return f"{address - a.address - a.nbytes} bytes past its end"
    return f"{a.address - address} bytes before its start"


if CHECKS:
    usm.watch = _watch

__all__ = ["describe", "span", "table_address", "untracked"]
