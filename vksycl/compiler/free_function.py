"""Free function kernels (seed 004): `@nd_range_kernel(dims)`, `@single_task_kernel`, and
templates by `typing.TypeVar` instantiated with a subscript (`iota[sycl.float32]`).

The decorated object stays callable as the plain Python function; the runtime reads its
`__vksycl_kernel__` to launch it with explicit arguments.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from ..exceptions import errc, exception, invalid
from . import device as dev


class FreeFunctionKernel:
    """A decorated kernel function (or one instantiation of a template)."""

    def __init__(self, fn: Any, kind: str, dims: int,
                 bindings: dict[Any, Any] | None = None) -> None:
        self.function = fn
        self.kind = kind  # "nd_range" or "single_task"
        self.dims = dims
        self.bindings = dict(bindings or {})
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self._types: tuple | None = None

    @property
    def __vksycl_kernel__(self) -> FreeFunctionKernel:
        return self

    @property
    def name(self) -> str:
        if not self.bindings:
            return self.function.__name__
        suffix = "_".join(getattr(t, "__name__", str(t)) for t in self.bindings.values())
        return f"{self.function.__name__}_{suffix}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def type_vars(self) -> list[Any]:
        out = []
        for t in self.annotations().values():
            if isinstance(t, typing.TypeVar) and t not in out:
                out.append(t)
        return out

    def annotations(self) -> dict[str, Any]:
        try:
            ann = inspect.get_annotations(self.function, eval_str=True)
        except Exception as ex:
            raise exception(errc.build, f"cannot read the annotations of "
                            f"{self.function.__name__}: {ex}") from None
        ann.pop("return", None)
        return ann

    def __getitem__(self, types: Any) -> FreeFunctionKernel:
        if not isinstance(types, tuple):
            types = (types,)
        tvars = [t for t in self.type_vars() if t not in self.bindings]
        if len(types) != len(tvars):
            raise invalid(f"{self.function.__name__} has {len(tvars)} template parameters, "
                          f"got {len(types)} types")
        return FreeFunctionKernel(self.function, self.kind, self.dims,
                                  {**self.bindings, **dict(zip(tvars, types, strict=True))})

    def param_types(self) -> tuple:
        """The device types of the parameters, in declaration order."""
        if self._types is not None:
            return self._types
        params = list(inspect.signature(self.function).parameters)
        ann = self.annotations()
        out = []
        for p in params:
            a = ann.get(p)
            if a is None:
                raise exception(errc.build, f"{self.function.__name__}: parameter {p} needs a "
                                "type annotation")
            out.append(self._resolve(p, a))
        self._types = tuple(out)
        return self._types

    def _resolve(self, pname: str, a: Any) -> Any:
        if isinstance(a, typing.TypeVar):
            if a not in self.bindings:
                raise invalid(f"{self.function.__name__} is a template: instantiate it first, "
                              f"e.g. {self.function.__name__}[sycl.float32]")
            a = self.bindings[a]
        origin = getattr(a, "dtype", None)
        if type(a).__name__ == "PointerType" and isinstance(origin, typing.TypeVar):
            a = type(a)(self.bindings[origin])
        t = dev.type_of_annotation(a)
        if t is None:
            raise exception(errc.build, f"{self.function.__name__}: parameter {pname} has no "
                            f"device type ({a!r})")
        return t

    def check_launch(self, kind: str, dims: int) -> None:
        if kind != self.kind and not (self.kind == "nd_range" and kind == "range"):
            raise invalid(f"{self.function.__name__} is a {self.kind} kernel, launched as "
                          f"{kind}")
        if self.kind == "nd_range" and dims != self.dims:
            raise invalid(f"{self.function.__name__} is a {self.dims}-dimensional kernel, "
                          f"launched with {dims} dimensions")


def nd_range_kernel(dims: int) -> Any:
    """`@syclexp.nd_range_kernel(dims)`: a free function kernel launched over an nd_range."""
    if dims not in (1, 2, 3):
        raise invalid("nd_range_kernel takes 1, 2 or 3 dimensions")

    def wrap(fn: Any) -> FreeFunctionKernel:
        return FreeFunctionKernel(fn, "nd_range", dims)

    return wrap


def single_task_kernel(fn: Any) -> FreeFunctionKernel:
    """`@syclexp.single_task_kernel`: a free function kernel run by one work-item."""
    return FreeFunctionKernel(fn, "single_task", 1)
