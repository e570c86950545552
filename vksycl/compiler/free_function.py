"""Free function kernels (seed 004): `@nd_range_kernel(dims)`, `@single_task_kernel`, and
templates by `typing.TypeVar` instantiated with a subscript (`iota[sycl.float32]`).

The decorated object stays callable as the plain Python function; the runtime reads its
`__vksycl_kernel__` to launch it with explicit arguments. Decorating checks the rules of
"Defining a free function kernel" that Python can (errc.build, naming file and line),
collects kernel properties applied above or below the kernel decorator, and records the
kernel for `sycl.get_kernel_ids()`.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import textwrap
import typing
from typing import Any

import numpy as np

from ..exceptions import errc, exception, invalid
from . import virtual
from .source import parse
from .type_registry import type_of_annotation
from .typesys import LocalAccessorType


class FreeFunctionKernel:
    """A decorated kernel function (or one instantiation of a template)."""

    def __init__(self, fn: Any, kind: str, dims: int,
                 bindings: dict[Any, Any] | None = None, properties: tuple = ()) -> None:
        self.function = fn
        self.kind = kind  # "nd_range" or "single_task"
        self.dims = dims
        self.bindings = dict(bindings or {})
        self.properties: tuple = tuple(properties)  # kernel properties (work_group_size...)
        self._instances: dict[tuple, FreeFunctionKernel] = {}
        self._kernel_function: Any = None  # its `kernel_function_s`, once asked for
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self._types: tuple | None = None
        self._shaped: dict[tuple, FreeFunctionKernel] = {}

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
        out: list[Any] = []
        for t in self._raw_annotations().values():
            for v in _type_vars_in(t, self.function.__globals__):
                if v not in out:
                    out.append(v)
        return out

    def _raw_annotations(self) -> dict[str, Any]:
        ann = dict(inspect.get_annotations(self.function))
        ann.pop("return", None)
        return ann

    def annotations(self) -> dict[str, Any]:
        """The parameter annotations, evaluated with the template's bound types (so a
        string annotation `sycl.ptr[T]` becomes a pointer to the type bound to T)."""
        bound = {v.__name__: t for v, t in self.bindings.items()}
        out = {}
        for name, a in self._raw_annotations().items():
            if isinstance(a, str):
                try:
                    a = eval(a, self.function.__globals__, bound)
                except Exception as ex:
                    free = [v for v in _type_vars_in(a, self.function.__globals__)
                            if v not in self.bindings]
                    if free:
                        raise invalid(f"{self.function.__name__} is a template: instantiate "
                                      f"it first, e.g. {self.function.__name__}"
                                      "[sycl.float32]") from None
                    raise exception(errc.build, f"cannot read the annotation of parameter "
                                    f"{name} of {self.function.__name__}: {ex}") from None
            out[name] = a
        return out

    def __getitem__(self, types: Any) -> FreeFunctionKernel:
        if not isinstance(types, tuple):
            types = (types,)
        tvars = [t for t in self.type_vars() if t not in self.bindings]
        if len(types) != len(tvars):
            raise invalid(f"{self.function.__name__} has {len(tvars)} template parameters, "
                          f"got {len(types)} types")
        key = tuple(types)
        inst = self._instances.get(key)
        if inst is None:
            inst = FreeFunctionKernel(self.function, self.kind, self.dims,
                                      {**self.bindings, **dict(zip(tvars, types, strict=True))},
                                      self.properties)
            self._instances[key] = inst
            _REGISTRY.append(inst)
        return inst

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

    def shaped(self, args: tuple | list) -> FreeFunctionKernel:
        """The kernel for the shapes of the local_accessor arguments of a launch: the
        size of work-group memory is in the code, so each shape is a kernel of its own,
        as each instantiation of a template is (the same object for the same shapes)."""
        types = self.param_types()
        local = [i for i, t in enumerate(types) if isinstance(t, LocalAccessorType)]
        if not local:
            return self
        shapes = tuple(tuple(int(s) for s in args[i].shape) for i in local)
        inst = self._shaped.get(shapes)
        if inst is None:
            inst = FreeFunctionKernel(self.function, self.kind, self.dims, self.bindings,
                                      self.properties)
            filled = list(types)
            for i, shape in zip(local, shapes, strict=True):
                filled[i] = dataclasses.replace(types[i], shape=shape)
            inst._types = tuple(filled)
            self._shaped[shapes] = inst
        return inst

    def _resolve(self, pname: str, a: Any) -> Any:
        if isinstance(a, typing.TypeVar):
            if a not in self.bindings:
                raise invalid(f"{self.function.__name__} is a template: instantiate it first, "
                              f"e.g. {self.function.__name__}[sycl.float32]")
            a = self.bindings[a]
        if isinstance(a, type) and issubclass(a, enum.Enum):
            a = enum_dtype(a)
        origin = getattr(a, "dtype", None)
        if type(a).__name__ == "PointerType" and isinstance(origin, typing.TypeVar):
            a = type(a)(self.bindings[origin])
        t = type_of_annotation(a)
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


def _type_vars_in(a: Any, globals_: dict[str, Any]) -> list[Any]:
    """The TypeVars an annotation names (a TypeVar, a pointer to one, or a string
    annotation naming module-level TypeVars)."""
    if isinstance(a, typing.TypeVar):
        return [a]
    if isinstance(getattr(a, "dtype", None), typing.TypeVar):
        return [a.dtype]
    if isinstance(a, str):
        try:
            tree = parse(a, mode="eval")
        except SyntaxError:
            return []
        return [globals_[n.id] for n in ast.walk(tree) if isinstance(n, ast.Name)
                and isinstance(globals_.get(n.id), typing.TypeVar)]
    return []


def enum_dtype(cls: type) -> Any:
    """The underlying type of an enum parameter: int32, or int64/uint64 when its values
    need them (C++ enums with an explicit underlying type)."""
    values = [m.value for m in cls]
    if not all(isinstance(v, int) for v in values):
        raise exception(errc.build, f"enum {cls.__name__} has non-integer values: it cannot be "
                        "a kernel parameter")
    lo, hi = min(values, default=0), max(values, default=0)
    if lo >= -(2**31) and hi < 2**31:
        return np.int32
    return np.int64 if hi < 2**63 else np.uint64


# Every free function kernel defined so far (templates and their instantiations), in order
# of definition: `get_kernel_ids()` and the bundles of all kernels read it.
_REGISTRY: list[FreeFunctionKernel] = []


def registered_kernels() -> list[FreeFunctionKernel]:
    """The free function kernels defined so far, in order of definition."""
    return list(_REGISTRY)


def _where(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    return f"{code.co_filename}:{code.co_firstlineno}"


def _ill_formed(fn: Any, message: str) -> exception:
    return exception(errc.build, f"{_where(fn)}: free function kernel "
                     f"{getattr(fn, '__name__', fn)}: {message}")


def _returns_value(fn: Any) -> bool:
    """Whether the body has a `return <value>` (a kernel's return type must be void)."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = parse(src)
    except (OSError, TypeError, SyntaxError):
        return False
    top = tree.body[0] if tree.body else None
    if not isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    stack = list(top.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) and node.value is not None and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


_DISALLOWED = ("reducer", "kernel_handler")


def check_definition(fn: Any) -> None:
    """The rules of "Defining a free function kernel" that Python can check: a plain
    function (or static method), no return value, no variadic, keyword-only or defaulted
    parameters, no `reducer` / `kernel_handler` parameters, no captured variables (a
    nested definition that captures nothing is accepted). Parameter types that name no
    device type are reported when the kernel is first instantiated or launched."""
    if isinstance(fn, staticmethod):
        fn = fn.__func__
    if inspect.isclass(fn) or not inspect.isfunction(fn):
        raise exception(errc.build, f"a free function kernel must be a function, got "
                        f"{type(fn).__name__}")
    if inspect.iscoroutinefunction(fn) or inspect.isgeneratorfunction(fn):
        raise _ill_formed(fn, "must be a plain function (not async or a generator)")
    if fn.__closure__:
        raise _ill_formed(fn, f"captures {', '.join(fn.__code__.co_freevars)}; a free function "
                          "kernel takes its values as parameters (define it at module scope)")
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise _ill_formed(fn, f"must not accept variadic arguments (*{p.name})")
        if p.kind is p.KEYWORD_ONLY:
            raise _ill_formed(fn, f"parameter {p.name} is keyword-only; kernel arguments are "
                              "positional")
        if p.default is not p.empty:
            raise _ill_formed(fn, f"parameter {p.name} has a default value; free function "
                              "kernels must provide no default parameter values")
        ann = p.annotation
        name = ann.strip("'\"") if isinstance(ann, str) else getattr(ann, "__name__", "")
        if any(d == name.rsplit(".", 1)[-1] for d in _DISALLOWED):
            raise _ill_formed(fn, f"parameter {p.name} has type {name}, which cannot be passed "
                              "to a free function kernel")
    ret = sig.return_annotation
    if ret is not sig.empty and ret is not None and ret != "None":
        raise _ill_formed(fn, f"its return type must be None (void), not {ret!r}")
    if _returns_value(fn):
        raise _ill_formed(fn, "returns a value; its return type must be None (void)")


def add_property(kernel_or_fn: Any, prop: Any) -> None:
    """Adds a kernel property to a kernel or to a function that is about to become one;
    the same property twice is allowed only with the same arguments."""
    current = getattr(kernel_or_fn, "properties", None) if isinstance(
        kernel_or_fn, FreeFunctionKernel) else getattr(kernel_or_fn, "__vksycl_properties__", ())
    for p in current:
        if type(p) is type(prop):
            if p != prop:
                fn = getattr(kernel_or_fn, "function", kernel_or_fn)
                raise _ill_formed(fn, f"is decorated with {p!r} and {prop!r}; a property may "
                                  "be repeated only with the same arguments")
            return
    if isinstance(kernel_or_fn, FreeFunctionKernel):
        kernel_or_fn.properties = (*current, prop)
        check_property_dims(kernel_or_fn)
    else:
        kernel_or_fn.__vksycl_properties__ = (*current, prop)


def _decorate(fn: Any, kind: str, dims: int) -> FreeFunctionKernel:
    if isinstance(fn, FreeFunctionKernel):
        if (fn.kind, fn.dims) != (kind, dims):
            raise _ill_formed(fn.function, f"is decorated as {_describe(fn.kind, fn.dims)} and "
                              f"as {_describe(kind, dims)}; a kernel has at most one of these "
                              "properties")
        return fn
    check_definition(fn)
    if isinstance(fn, staticmethod):
        fn = fn.__func__
    if hasattr(fn, virtual.MARK):
        raise _ill_formed(fn, "is marked indirectly_callable; the property applies to "
                          "virtual methods, not to kernels")
    k = FreeFunctionKernel(fn, kind, dims, properties=getattr(fn, "__vksycl_properties__", ()))
    check_property_dims(k)
    _REGISTRY.append(k)
    return k


def check_property_dims(k: FreeFunctionKernel) -> None:
    """Work-group size properties name as many sizes as the kernel has dimensions."""
    for p in k.properties:
        sizes = getattr(p, "sizes", None)
        if sizes is not None and k.kind == "nd_range" and len(sizes) != k.dims:
            raise _ill_formed(k.function, f"is an nd_range_kernel({k.dims}) with the "
                              f"{len(sizes)}-dimensional property {p!r}")


def _describe(kind: str, dims: int) -> str:
    return f"nd_range_kernel({dims})" if kind == "nd_range" else "single_task_kernel"


def nd_range_kernel(dims: int) -> Any:
    """`@syclexp.nd_range_kernel(dims)`: a free function kernel launched over an nd_range."""
    if dims not in (1, 2, 3):
        raise invalid("nd_range_kernel takes 1, 2 or 3 dimensions")

    def wrap(fn: Any) -> FreeFunctionKernel:
        return _decorate(fn, "nd_range", dims)

    return wrap


def single_task_kernel(fn: Any = None) -> Any:
    """`@syclexp.single_task_kernel` (or `single_task_kernel()`, as nd_range_kernel is
    spelled): a free function kernel run by one work-item."""
    if fn is None:
        return lambda f: _decorate(f, "single_task", 1)
    return _decorate(fn, "single_task", 1)
