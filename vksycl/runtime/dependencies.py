"""Implicit dependencies from accessors: which earlier accesses to a buffer's memory a
new access must wait for, by SYCL's rules.

A reader waits for the writers before it (read after write); a writer waits for the
readers and writers before it (write after read, write after write); readers never wait
for each other. Accesses are byte ranges of one memory object, so command groups on
disjoint parts (sub-buffers, ranged accessors) do not wait for each other either. The
tracker does not know what a token is: eager command groups track events, a graph tracks
its nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class AccessTracker:
    """The accesses that a later one may still have to wait for, each a tuple (first
    byte, end byte, writes, token). A write drops the accesses it covers: whatever waits
    for it waits for them through it."""

    __slots__ = ("accesses",)

    def __init__(self) -> None:
        self.accesses: list[tuple[int, int, bool, Any]] = []

    def conflicts(self, first: int, end: int, writes: bool) -> list[Any]:
        """The tokens of earlier accesses that an access of [first, end) must follow."""
        accesses = self.accesses
        if len(accesses) == 1:  # the common case: one access, its writer or reader
            a_first, a_end, a_writes, token = accesses[0]
            return [token] if (writes or a_writes) and a_first < end and first < a_end \
                else []
        return [token for a_first, a_end, a_writes, token in accesses
                if (writes or a_writes) and a_first < end and first < a_end]

    def record(self, first: int, end: int, writes: bool, token: Any) -> None:
        if writes:
            self.accesses = [a for a in self.accesses
                             if not (first <= a[0] and a[1] <= end)]
        self.accesses.append((first, end, writes, token))

    def forget(self, finished: Callable[[Any], bool]) -> None:
        """Drops the accesses whose token is done: nothing needs to wait for them."""
        if self.accesses:
            self.accesses = [a for a in self.accesses if not finished(a[3])]

    def tokens(self) -> list[Any]:
        return [a[3] for a in self.accesses]
