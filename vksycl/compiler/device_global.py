"""`syclexp.device_global`: the declaration of a device-scope global variable (seed 001)
and its compile-time properties.

A declaration knows its element type, shape, properties and unique id; it holds no
memory. Kernels reach its storage through a hidden pointer argument, and the runtime's
device-global database owns the storage, built from the metadata the compiler records
(`metadata()`), the stand-in for SPIR-V's HostAccessINTEL decoration, which Vulkan lacks.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..exceptions import exception, invalid
from ..properties import Property
from ..types import as_dtype
from .type_registry import element_type


class device_global_property(Property):
    """A compile-time property of a device_global (`syclexp.device_image_scope`, ...)."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value: Any = True) -> None:
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"syclexp.{self.name}" if self.value is True else \
            f"syclexp.{self.name}_{self.value}"


device_image_scope = device_global_property("device_image_scope")
host_access_read = device_global_property("host_access", "read")
host_access_write = device_global_property("host_access", "write")
host_access_read_write = device_global_property("host_access", "read_write")
host_access_none = device_global_property("host_access", "none")
init_mode_reprogram = device_global_property("init_mode", "reprogram")
init_mode_reset = device_global_property("init_mode", "reset")
implement_in_csr = device_global_property("implement_in_csr")

_REGISTRY: dict[str, device_global] = {}  # live declarations by unique id


class device_global:
    """`device_global(dtype, shape=(), properties=[...])`: created at module scope or as a
    class attribute, where it has a name that is the same in every process (its unique
    id, `module.name` or `module.Class.name`); anywhere else is `errc.invalid`."""

    __slots__ = ("__weakref__", "_module", "_site", "_uid", "dtype", "host_access",
                 "image_scope", "implement_in_csr", "init_mode", "properties", "shape")

    def __init__(self, dtype: Any, shape: int | Iterable[int] = (),
                 properties: Iterable[Any] | Property = ()) -> None:
        frame = sys._getframe(1)
        code = frame.f_code
        site = f"{code.co_filename}:{frame.f_lineno}"
        try:
            self.dtype = as_dtype(dtype)
            element_type(self.dtype)
        except (TypeError, ValueError, exception) as ex:
            why = ex.what() if isinstance(ex, exception) else str(ex)
            raise invalid(f"{site}: device_global element type {dtype!r}: {why}") from None
        self.shape = _shape(shape, site)
        if isinstance(properties, Property):
            properties = [properties]
        try:
            self.properties = tuple(properties)
        except TypeError:
            raise invalid(f"{site}: device_global properties are a list of properties, "
                          f"got {type(properties).__name__}") from None
        self._read_properties(site)
        in_class = "__qualname__" in frame.f_locals and "__module__" in frame.f_locals
        if code.co_name != "<module>" and not in_class:
            raise invalid(f"{site}: a device_global is created at module scope or as a "
                          f"class attribute, not inside the function {code.co_name}")
        self._site = site
        self._module = frame.f_globals.get("__name__", "__main__")
        self._uid: str | None = None

    def _read_properties(self, site: str) -> None:
        self.image_scope = False
        self.host_access = "read_write"
        self.init_mode: str | None = None
        self.implement_in_csr = False
        seen: set[str] = set()
        for p in self.properties:
            if not isinstance(p, device_global_property):
                raise invalid(f"{site}: {p!r} is not a device_global property")
            if p.name in seen:
                raise invalid(f"{site}: device_global has two {p.name} properties")
            seen.add(p.name)
            if p.name == "device_image_scope":
                self.image_scope = True
            elif p.name == "host_access":
                self.host_access = p.value
            elif p.name == "init_mode":
                self.init_mode = p.value
            else:
                self.implement_in_csr = True

    def __set_name__(self, owner: type, name: str) -> None:
        self._name(f"{owner.__module__}.{owner.__qualname__}.{name}")

    def _name(self, uid: str) -> None:
        self._uid = uid
        other = _REGISTRY.get(uid)
        if other is not None and other is not self and other.metadata_key() != \
                self.metadata_key():
            raise invalid(f"{self._site}: device_global {uid} is declared again with "
                          f"another type or properties (first at {other._site})")
        _REGISTRY[uid] = self

    @property
    def unique_id(self) -> str:
        """The name the variable has in kernels' metadata: where it is defined."""
        if self._uid is None:
            module = sys.modules.get(self._module)
            names = [n for n, v in vars(module).items() if v is self] if module else []
            self._name(f"{self._module}.{names[0]}" if names else
                       f"{self._module}@{self._site.rsplit(':', 1)[1]}")
        assert self._uid is not None
        return self._uid

    @property
    def count(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def size(self) -> int:
        """sizeof(T): bytes of the whole value."""
        return self.dtype.itemsize * self.count

    def metadata_key(self) -> tuple:
        return (str(self.dtype), self.shape, self.size, self.host_access, self.image_scope,
                self.init_mode, self.implement_in_csr)

    def metadata(self) -> dict[str, Any]:
        """This variable's entry of a module's "SYCL/device globals" property set."""
        return {"unique_id": self.unique_id, "size": self.size, "dtype": str(self.dtype),
                "shape": self.shape, "host_access": self.host_access,
                "device_image_scope": self.image_scope, "init_mode": self.init_mode,
                "implement_in_csr": self.implement_in_csr}

    @property
    def __vksycl_device_global__(self) -> dict[str, Any]:
        """What the runtime needs to copy to and from the variable."""
        return {**self.metadata(), "itemsize": self.dtype.itemsize, "dtype": self.dtype,
                "site": self._site}

    def get(self) -> Any:
        raise _host_use(self, "get()")

    def set(self, value: Any) -> None:
        raise _host_use(self, "set(v)")

    def __getitem__(self, index: Any) -> Any:
        raise _host_use(self, "indexing")

    def __setitem__(self, index: Any, value: Any) -> None:
        raise _host_use(self, "indexing")

    def __repr__(self) -> str:
        shape = f", shape={self.shape}" if self.shape else ""
        return f"device_global({self.unique_id}: {self.dtype}{shape})"


def _host_use(g: device_global, what: str) -> Exception:
    return invalid(f"device_global {g.unique_id}: {what} is for device code; the host "
                   "reads and writes the variable with q.copy / q.memcpy")


def declared(uid: str) -> device_global | None:
    """The live declaration with this unique id, if this process has one."""
    return _REGISTRY.get(uid)


def _shape(shape: int | Iterable[int], site: str) -> tuple[int, ...]:
    try:
        out = (int(shape),) if isinstance(shape, int | np.integer) else \
            tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise invalid(f"{site}: device_global shape must be a tuple of sizes, got "
                      f"{shape!r}") from None
    if any(s <= 0 for s in out):
        raise invalid(f"{site}: device_global shape {out} has a size below 1")
    return out


__all__ = [
    "declared", "device_global", "device_global_property", "device_image_scope",
    "host_access_none", "host_access_read", "host_access_read_write", "host_access_write",
    "implement_in_csr", "init_mode_reprogram", "init_mode_reset",
]
