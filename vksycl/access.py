"""Access modes of accessors (SYCL 2020 4.7.6): the enum, the deduction tags that stand
for it in `sycl.accessor(buf, h, sycl.read_only)`, and the `no_init` property. Part of the
vocabulary: the runtime orders command groups by them and the compiler refuses writes
through read-only accessors. Also `sycl.access.fence_space`, the memory an
`nd_item.barrier` orders."""

from __future__ import annotations

import enum

from .properties import Property


class access_mode(enum.Enum):
    read = "read"
    write = "write"
    read_write = "read_write"

    @property
    def reads(self) -> bool:
        return self is not access_mode.write

    @property
    def writes(self) -> bool:
        return self is not access_mode.read


class fence_space(enum.Enum):
    """The memory `it.barrier(space)` orders among the work-group's work-items (SYCL
    1.2.1's `access::fence_space`, kept by SYCL 2020's deprecated `nd_item::barrier`):
    `local_space` orders work-group memory only, as GLSL's `barrier()` does (on NVIDIA's
    driver a tiled matmul whose barriers only guard its local tiles runs 12% faster with
    it); `global_and_local` (the default) is `group_barrier`'s."""

    local_space = "local_space"
    global_space = "global_space"
    global_and_local = "global_and_local"


class mode_tag:
    """`sycl.read_only`, `sycl.write_only`, `sycl.read_write`: an access mode given where
    C++ deduces the accessor's template arguments from a tag. It knows whether its mode
    writes: asking the enum costs more than the rest of making an accessor."""

    __slots__ = ("mode", "name", "writes")

    def __init__(self, mode: access_mode, name: str) -> None:
        self.mode, self.name = mode, name
        self.writes = mode.writes

    def __repr__(self) -> str:
        return f"sycl.{self.name}"


read_only = mode_tag(access_mode.read, "read_only")
write_only = mode_tag(access_mode.write, "write_only")
read_write = mode_tag(access_mode.read_write, "read_write")


class target_tag:
    """`sycl.host_task`: an accessor for the command group's host task rather than its
    kernel (SYCL 2020's `target::host_task`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "sycl.host_task"


host_task = target_tag()


class no_init_property(Property):
    """`sycl.no_init`: the accessor's previous contents are not needed, so nothing is
    copied to the device for it."""

    __slots__ = ()


no_init = no_init_property()


def as_mode(mode: object) -> access_mode:
    """The access mode a tag or an `access_mode` names; None-checks are the caller's."""
    if isinstance(mode, mode_tag):
        return mode.mode
    if isinstance(mode, access_mode):
        return mode
    raise TypeError(mode)


class accessor_type:
    """`sycl.accessor[T, dims, mode]`: the annotation of a free function kernel's
    accessor parameter (mode `read_write` unless given)."""

    __slots__ = ("dims", "dtype", "mode")

    def __init__(self, dtype: object, dims: int = 1,
                 mode: access_mode = access_mode.read_write) -> None:
        self.dtype, self.dims, self.mode = dtype, int(dims), mode

    def __eq__(self, other: object) -> bool:
        return type(other) is accessor_type and (other.dtype, other.dims, other.mode) == (
            self.dtype, self.dims, self.mode)

    def __hash__(self) -> int:
        return hash((accessor_type, str(self.dtype), self.dims, self.mode))

    def __repr__(self) -> str:
        return f"sycl.accessor[{self.dtype}, {self.dims}, {self.mode.name}]"


class local_accessor_type:
    """`sycl.local_accessor[T, dims]`: the annotation of a free function kernel's
    work-group memory parameter, sized by the `local_accessor` given at launch."""

    __slots__ = ("dims", "dtype")

    def __init__(self, dtype: object, dims: int = 1) -> None:
        self.dtype, self.dims = dtype, int(dims)

    def __eq__(self, other: object) -> bool:
        return type(other) is local_accessor_type and (other.dtype, other.dims) == (
            self.dtype, self.dims)

    def __hash__(self) -> int:
        return hash((local_accessor_type, str(self.dtype), self.dims))

    def __repr__(self) -> str:
        return f"sycl.local_accessor[{self.dtype}, {self.dims}]"
