"""Host-side index spaces: `range`, `id` and `nd_range` (1 to 3 dimensions)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import numpy as np

from .exceptions import errc, exception


def _size(v: Any, what: str) -> int:
    """A size or index: an integer (numpy's too), or a float holding one (64.0, which
    equals the 64 an earlier range was made of); 64.5 or "3" is a mistake, refused."""
    if hasattr(v, "__index__"):
        return operator.index(v)
    if isinstance(v, float | np.floating) and float(v).is_integer():
        return int(v)
    raise exception(errc.invalid, f"a {what} takes integer sizes, got {type(v).__name__} "
                    f"{v!r}")


def _dims(values: tuple[Any, ...], what: str) -> tuple[int, ...]:
    if len(values) == 1:
        v = values[0]
        if type(v) is tuple or isinstance(v, _Index):
            values = v
        elif type(v) is not int and isinstance(v, Iterable):
            values = tuple(v)
    if 1 <= len(values) <= 3 and all(type(v) is int and v >= 0 for v in values):
        return values  # sizes as users mostly give them: checked, nothing to convert
    if not 1 <= len(values) <= 3:
        raise exception(errc.invalid, f"a {what} has 1 to 3 dimensions, got {len(values)}")
    out = tuple(_size(v, what) for v in values)
    if any(v < 0 for v in out):
        raise exception(errc.invalid, f"a {what} cannot be negative: {out}")
    return out


def _operand(index: _Index, other: Any) -> tuple[int, ...] | None:
    """The other operand of an elementwise operator, one value per dimension."""
    if isinstance(other, _Index):
        if len(other) != len(index):
            raise exception(errc.invalid, f"{index!r} and {other!r} have different "
                            "dimensions")
        return tuple(other)
    if isinstance(other, int | np.integer) and not isinstance(other, bool | np.bool_):
        return (int(other),) * len(index)
    return None


def _elementwise(op: Callable[[int, int], int], reflected: bool = False) -> Any:
    def method(self: _Index, other: Any) -> Any:
        values = _operand(self, other)
        if values is None:
            return NotImplemented
        pairs = zip(values, self, strict=True) if reflected else zip(self, values, strict=True)
        return type(self)(*(op(a, b) for a, b in pairs))

    return method


def _no_true_division(self: _Index, other: Any) -> Any:
    raise exception(errc.invalid, f"{self!r} / {other!r}: sizes divide with // in Python")


class _InternedIndex(tuple):
    """What `IndexBase` (`native/interned.c`) does, where vksycl's native module cannot
    load: indices are immutable, so equal values give the very object made before, which
    a repeated launch then recognises by identity. Each class keeps its objects in its
    own `_made`, by the values as they came (the key as it comes) and by their sizes."""

    def __new__(cls, *values: Any) -> Any:
        made = cls._made  # type: ignore[attr-defined]
        try:
            found = made.get(values)
        except TypeError:  # a list among the sizes
            return super().__new__(cls, cls._sizes(values))  # type: ignore[attr-defined]
        if found is None:
            sizes = cls._sizes(values)  # type: ignore[attr-defined]
            found = made.get(sizes)  # `range((4, 2))` is `range(4, 2)`
            if found is None:
                found = super().__new__(cls, sizes)
            if len(made) >= _MOST_MADE:
                made.clear()
            made[values] = made[sizes] = found
        return found


class _InternedNdRange:
    """What `NdRangeBase` (`native/interned.c`) does, where vksycl's native module cannot
    load: equal arguments give the very nd_range made before."""

    __slots__ = ()

    def __new__(cls, global_range: Any = None, local_range: Any = None, offset: Any = None
                ) -> Any:
        if global_range is None:  # unpickling: the slots are set next
            return super().__new__(cls)
        made = cls._made  # type: ignore[attr-defined]
        key: tuple | None = (global_range, local_range, offset)
        try:
            found = made.get(key)
        except TypeError:  # a list among the sizes
            key = found = None
        if found is None:
            found = super().__new__(cls)
            found._define(global_range, local_range, offset)
            if key is not None:
                if len(made) >= _MOST_MADE:
                    made.clear()
                made[key] = found
        return found


# objects a class keeps by their arguments (native/interned.c's MOST_MADE)
_MOST_MADE = 512
_IndexBase: Any
_NdRangeBase: Any
try:
    from ._native import IndexBase as _IndexBase
    from ._native import NdRangeBase as _NdRangeBase
except ImportError:  # a source checkout where vksycl's C was not built
    _IndexBase, _NdRangeBase = _InternedIndex, _InternedNdRange


class _Index(_IndexBase):
    """A tuple of 1 to 3 sizes with SYCL's accessors. Arithmetic is elementwise with an
    integer or an index of the same dimensions, as in SYCL (never tuple concatenation or
    repetition: `range(n) * 2` is `range(2 * n)`). Equal values give the very object
    made before (`_IndexBase`)."""

    what = "index"
    _made: ClassVar[dict[tuple, Any]] = {}  # each subclass its own (`__init_subclass__`)

    @classmethod
    def _sizes(cls, values: tuple) -> tuple[int, ...]:
        """The sizes `values` stand for, checked."""
        return tuple(_dims(values, cls.what))

    def __init_subclass__(cls) -> None:
        cls._made = {}

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

    __add__ = _elementwise(operator.add)
    __radd__ = _elementwise(operator.add, reflected=True)
    __sub__ = _elementwise(operator.sub)
    __rsub__ = _elementwise(operator.sub, reflected=True)
    __mul__ = _elementwise(operator.mul)
    __rmul__ = _elementwise(operator.mul, reflected=True)
    __floordiv__ = _elementwise(operator.floordiv)
    __rfloordiv__ = _elementwise(operator.floordiv, reflected=True)
    __mod__ = _elementwise(operator.mod)
    __rmod__ = _elementwise(operator.mod, reflected=True)
    __lshift__ = _elementwise(operator.lshift)
    __rshift__ = _elementwise(operator.rshift)
    __and__ = _elementwise(operator.and_)
    __or__ = _elementwise(operator.or_)
    __xor__ = _elementwise(operator.xor)
    __truediv__ = __rtruediv__ = _no_true_division


class range(_Index):
    what = "range"


class id(_Index):
    what = "id"


MAX_WORK_ITEMS = (1 << 31) - 1
_ORIGINS = {n: id(*(0,) * n) for n in (1, 2, 3)}  # the offset of an nd_range without one


def check_work_items(launch: Any) -> None:
    """Kernels compiled from Python number work-items with 32-bit integers, so a launch of
    more work-items would wrap around (and compute wrong results in silence): refuse it."""
    g = launch.get_global_range() if isinstance(launch, nd_range) else launch
    n = g[0] if len(g) == 1 else g.size()
    if n > MAX_WORK_ITEMS:
        raise exception(errc.nd_range, f"{launch!r} has {n} work-items; kernels compiled "
                        f"from Python take at most {MAX_WORK_ITEMS} (2**31 - 1)")


class nd_range(_NdRangeBase):
    """A global range divided into work-groups of a local range. Immutable: equal
    arguments give the very object made before, as for ranges (`_NdRangeBase`)."""

    __slots__ = ("_global", "_local", "_offset")
    _made: ClassVar[dict[tuple, Any]] = {}

    def _define(self, global_range: Any, local_range: Any, offset: Any) -> None:
        g = global_range if type(global_range) is range else range(global_range)
        lo = local_range if type(local_range) is range else range(local_range)
        if len(g) != len(lo):
            raise exception(errc.nd_range, f"global range {tuple(g)} and local range "
                            f"{tuple(lo)} have different dimensions")
        if 0 in lo or any(map(operator.mod, g, lo)):
            raise exception(errc.nd_range, f"global range {tuple(g)} is not a multiple "
                            f"of the local range {tuple(lo)}")
        self._global, self._local = g, lo
        self._offset = id(*offset) if offset is not None else _ORIGINS[len(g)]

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
        return type(other) is nd_range and self._global == other._global and \
            self._local == other._local and self._offset == other._offset

    def __hash__(self) -> int:
        return hash((self._global, self._local, self._offset))

    def __repr__(self) -> str:
        return f"sycl.nd_range({tuple(self._global)}, {tuple(self._local)})"
