"""Host-side index spaces: `range`, `id` and `nd_range` (1 to 3 dimensions)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .exceptions import errc, exception


def _dims(values: tuple[Any, ...], what: str) -> tuple[int, ...]:
    if len(values) == 1 and isinstance(values[0], Iterable):
        values = tuple(values[0])
    if not 1 <= len(values) <= 3:
        raise exception(errc.invalid, f"a {what} has 1 to 3 dimensions, got {len(values)}")
    out = tuple(int(v) for v in values)
    if any(v < 0 for v in out):
        raise exception(errc.invalid, f"a {what} cannot be negative: {out}")
    return out


class _Index(tuple):
    """A tuple of 1 to 3 sizes with SYCL's accessors."""

    what = "index"

    def __new__(cls, *values: Any) -> Any:
        return super().__new__(cls, _dims(values, cls.what))

    @property
    def dimensions(self) -> int:
        return len(self)

    def get(self, dim: int) -> int:
        return self[dim]

    def size(self) -> int:
        n = 1
        for v in self:
            n *= v
        return n

    def __repr__(self) -> str:
        return f"sycl.{type(self).__name__}{tuple(self)!r}"


class range(_Index):
    what = "range"


class id(_Index):
    what = "id"


class nd_range:
    """A global range divided into work-groups of a local range."""

    __slots__ = ("_global", "_local", "_offset")

    def __init__(self, global_range: Any, local_range: Any, offset: Any = None) -> None:
        g = global_range if isinstance(global_range, range) else range(global_range)
        lo = local_range if isinstance(local_range, range) else range(local_range)
        if len(g) != len(lo):
            raise exception(errc.nd_range, f"global range {tuple(g)} and local range "
                            f"{tuple(lo)} have different dimensions")
        for gd, ld in zip(g, lo, strict=True):
            if ld == 0 or gd % ld:
                raise exception(errc.nd_range, f"global range {tuple(g)} is not a multiple "
                                f"of the local range {tuple(lo)}")
        self._global, self._local = g, lo
        self._offset = id(*offset) if offset is not None else id(*(0,) * len(g))

    @property
    def dimensions(self) -> int:
        return len(self._global)

    def get_global_range(self) -> range:
        return self._global

    def get_local_range(self) -> range:
        return self._local

    def get_group_range(self) -> range:
        return range(*(g // lo for g, lo in zip(self._global, self._local, strict=True)))

    def get_offset(self) -> id:
        return self._offset

    def __eq__(self, other: object) -> bool:
        return isinstance(other, nd_range) and (self._global, self._local, self._offset) == (
            other._global, other._local, other._offset)

    def __hash__(self) -> int:
        return hash((self._global, self._local, self._offset))

    def __repr__(self) -> str:
        return f"sycl.nd_range({tuple(self._global)}, {tuple(self._local)})"
