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
from dataclasses import dataclass
from typing import Any


@dataclass
class Access:
    first: int  # byte range [first, end) of the memory object
    end: int
    writes: bool
    token: Any


class AccessTracker:
    """The accesses that a later one may still have to wait for. A write drops the
    accesses it covers: whatever waits for it waits for them through it."""

    __slots__ = ("accesses",)

    def __init__(self) -> None:
        self.accesses: list[Access] = []

    def conflicts(self, first: int, end: int, writes: bool) -> list[Any]:
        """The tokens of earlier accesses that an access of [first, end) must follow."""
        return [a.token for a in self.accesses
                if (writes or a.writes) and a.first < end and first < a.end]

    def record(self, first: int, end: int, writes: bool, token: Any) -> None:
        if writes:
            self.accesses = [a for a in self.accesses
                             if not (first <= a.first and a.end <= end)]
        self.accesses.append(Access(first, end, writes, token))

    def forget(self, finished: Callable[[Any], bool]) -> None:
        """Drops the accesses whose token is done: nothing needs to wait for them."""
        if self.accesses:
            self.accesses = [a for a in self.accesses if not finished(a.token)]

    def tokens(self) -> list[Any]:
        return [a.token for a in self.accesses]
