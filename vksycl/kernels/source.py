"""Kernels from source (as sycl_ext_oneapi_kernel_compiler): GLSL compiled with glslang,
or SPIR-V binaries, in a bundle of state `ext_oneapi_source` that `build` makes executable.

Every GLCompute entry point of a built module is a kernel, named by its entry point (a
`__sycl_kernel_` prefix dropped); a GLSL bundle given as `{name: source}` names each
module's `main` after its key, one given as a single string calls it "main". Arguments
are set by index (see `vksycl.kernels.reflect`): storage buffers first, in binding order,
as USM pointers (whole allocations: a GLSL kernel has no parameter for an offset, so a
pointer with a non-zero offset is refused), then push-constant members.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np

import spirv_gen

from ..exceptions import errc, exception, invalid
from ..properties import Property
from ..ranges import nd_range
from ..runtime.commands import KernelLaunch
from ..runtime.glsl import compile_glsl
from ..runtime.handler import check_set_args
from ..runtime.malloc import buffer_range_limit
from ..runtime.usm import other_device
from .bundle import bundle_state, kernel_bundle
from .device_checks import unsupported
from .reflect import Reflection, reflect


class source_language(enum.Enum):
    glsl = "glsl"
    spirv = "spirv"


class build_options(Property):
    """`build_options(["-DN=4", ...])`: options for glslang (`-D`, `-U`, `-O`, ...)."""

    __slots__ = ("options",)

    def __init__(self, options: str | Iterable[str]) -> None:
        self.options = (options,) if isinstance(options, str) else tuple(options)

    def add(self, option: str) -> None:
        self.options = (*self.options, option)


class save_log(Property):
    """`save_log(log)`: `build` appends the compiler's log (warnings too) to the list."""

    __slots__ = ("log",)

    def __init__(self, log: list[str]) -> None:
        if not isinstance(log, list):
            raise invalid("save_log takes a list the build log is appended to")
        self.log = log

    def __eq__(self, other: object) -> bool:
        return isinstance(other, save_log) and other.log is self.log

    def __hash__(self) -> int:
        return id(self.log)


def is_source_kernel_bundle_supported(backend: Any, language: source_language) -> bool:
    """Whether kernels of `language` (`source_language.glsl` or `.spirv`) can be built from
    source: always, on every Vulkan device."""
    return isinstance(language, source_language)


def create_kernel_bundle_from_source(ctx: Any, language: Any, source: Any,
                                     properties: Any = ()) -> kernel_bundle:
    """A bundle in the `ext_oneapi_source` state: GLSL text (or `{name: text}`), or SPIR-V
    bytes (or `{name: bytes}` for several modules)."""
    if not isinstance(language, source_language):
        raise invalid(f"unsupported source language {language!r}: vksycl compiles "
                      "source_language.glsl and source_language.spirv")
    sources = source if isinstance(source, dict) else {None: source}
    if not sources:
        raise invalid("create_kernel_bundle_from_source: no source given")
    for name, text in sources.items():
        if name is not None and not (isinstance(name, str) and name.isidentifier()):
            raise invalid(f"kernel names are identifiers, got {name!r}")
        if language is source_language.glsl and not isinstance(text, str):
            raise invalid(f"GLSL source must be a str, got {type(text).__name__}")
        if language is source_language.spirv and not isinstance(
                text, bytes | bytearray | memoryview | np.ndarray):
            raise invalid(f"SPIR-V source must be bytes, got {type(text).__name__}")
    src = (language, {k: (v if isinstance(v, str) else bytes(v)) for k, v in sources.items()})
    return kernel_bundle(ctx, ctx.get_devices(), bundle_state.ext_oneapi_source, (),
                         source=src)


def _properties_of(args: tuple) -> tuple[list[Any] | None, list[Any]]:
    devices, props = None, []
    for a in args:
        items = list(a) if isinstance(a, list | tuple) else [a]
        if items and all(hasattr(x, "vulkan") for x in items):
            devices = items
        else:
            props += items
    return devices, props


def build(bundle: kernel_bundle, *args: Any) -> kernel_bundle:
    """`syclexp.build(bundle [, devices] [, properties])`: compiles a source bundle into an
    executable one; a failed build raises `errc.build` with glslang's (or the SPIR-V
    validator's) log."""
    if bundle.state is not bundle_state.ext_oneapi_source:
        raise invalid("syclexp.build takes a bundle from create_kernel_bundle_from_source")
    devices, props = _properties_of(args)
    if devices is None:
        devices = bundle.get_devices()
    for d in devices:
        if not bundle.get_context().has_device(d):
            raise invalid(f"device {d.vulkan.name} is not in the bundle's context")
    options: list[str] = []
    logs: list[list[str]] = []
    for p in props:
        if isinstance(p, build_options):
            options += p.options
        elif isinstance(p, save_log):
            logs.append(p.log)
        else:
            raise invalid(f"syclexp.build does not take the property {p!r}")
    language, sources = bundle._source
    named: dict[str, SourceKernel] = {}
    for key, text in sources.items():
        if language is source_language.glsl:
            spirv, log = _compile_glsl(text, tuple(options), logs)
        else:
            spirv, log = _validate_spirv(text, logs)
        r = reflect(spirv)
        if not r.entry_points:
            raise exception(errc.build, "the module has no GLCompute entry point")
        for ep in r.entry_points:
            name = key if key is not None and len(r.entry_points) == 1 else \
                ep.name.removeprefix("__sycl_kernel_")
            if name in named:
                raise exception(errc.build, f"two kernels are named {name}")
            named[name] = SourceKernel(name, ep.name, spirv, r, ep.local_size)
        for lst in logs:
            lst.append(log)
    for k in named.values():
        for d in devices:
            why = k.why_incompatible(d)
            if why is not None:
                raise exception(errc.build, f"kernel {k.name} cannot run on {d.vulkan.name}: "
                                f"{why}")
    return kernel_bundle(bundle.get_context(), devices, bundle_state.executable, (),
                         named=named)


def _compile_glsl(text: str, options: tuple[str, ...], logs: list) -> tuple[bytes, str]:
    try:
        return compile_glsl(text, options=options), ""
    except exception as ex:
        for lst in logs:
            lst.append(str(ex))
        raise


def _validate_spirv(binary: bytes, logs: list) -> tuple[bytes, str]:
    try:
        spirv_gen.validate(binary, "vulkan1.1")
    except spirv_gen.SpirvError as ex:
        msg = f"SPIR-V validation failed:\n{ex}"
        for lst in logs:
            lst.append(msg)
        raise exception(errc.build, msg) from None
    return binary, ""


_FORMAT = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q", ("u", 1): "B",
           ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q", ("f", 2): "e", ("f", 4): "f",
           ("f", 8): "d"}


class SourceKernel:
    """One entry point of a built module, launched with arguments set by index."""

    def __init__(self, name: str, entry: str, spirv: bytes, r: Reflection,
                 local_xyz: tuple[int, int, int]) -> None:
        self.name = name
        self.entry = entry
        self.spirv = spirv
        self.reflection = r
        self.local_xyz = local_xyz
        self._compat: dict[int, exception | None] = {}
        self._buffers = [(a.index, a.binding, a.element, a.name) for a in r.args
                         if a.kind == "buffer"]
        self._scalars = [a for a in r.args if a.kind == "scalar"]
        fmt, at = "<", 0
        for leaf in sorted((lf for a in self._scalars for lf in a.leaves),
                           key=lambda lf: lf.offset):
            if leaf.offset > at:
                fmt += f"{leaf.offset - at}x"
            fmt += _FORMAT[(leaf.dtype.kind, leaf.dtype.itemsize)]
            at = leaf.offset + leaf.dtype.itemsize
        if r.push_size > at:
            fmt += f"{r.push_size - at}x"
        self._packer = struct.Struct(fmt)
        # the scalar order of the packer: argument index and position in its leaves
        order = sorted(((lf.offset, a.index, k) for a in self._scalars
                        for k, lf in enumerate(a.leaves)))
        self._slots = [(i, k) for _, i, k in order]
        self._groups: dict[tuple, tuple[int, int, int]] = {}
        # (what the last command was built from, the command): a launch with the same
        # ranges, arguments and work-group count submits it again. The command holds its
        # buffers, so their ids stand for them while it is kept.
        self._last: tuple[tuple, KernelLaunch] | None = None

    # -- bundle member interface -----------------------------------------------------------
    def why_incompatible(self, device: Any) -> exception | None:
        key = id(device.vulkan)
        if key not in self._compat:
            ck = SimpleNamespace(name=self.name, aspects=frozenset(), binary=self.spirv,
                                 capabilities=self.reflection.capabilities,
                                 push_size=self.reflection.push_size,
                                 local_bytes=self.reflection.workgroup_bytes,
                                 local_size=self.local_xyz, spec=SimpleNamespace(
                                     local=tuple(reversed(self.local_xyz))))
            self._compat[key] = unsupported(device, ck)
        return self._compat[key]

    def binary(self, device: Any) -> bytes:
        return self.spirv

    def num_args(self) -> int:
        return len(self.reflection.args)

    def attributes(self) -> str:
        return "reqd_work_group_size(" + ",".join(map(str, reversed(self.local_xyz))) + ")"

    def required_local(self) -> tuple[int, ...]:
        return tuple(reversed(self.local_xyz))

    def required_sub_group(self) -> int:
        return 0

    def memory(self, device: Any) -> tuple[int, int]:
        return self.reflection.workgroup_bytes, self.reflection.private_bytes

    def describe_args(self) -> list[str]:
        return [a.describe() for a in self.reflection.args]

    # -- launching ------------------------------------------------------------------------
    def _local(self, launch: Any) -> tuple[int, int, int]:
        if launch is None:
            if self.local_xyz != (1, 1, 1):
                raise invalid(f"kernel {self.name} has work-groups of {self.local_xyz} "
                              "(x, y, z); enqueue it with parallel_for(nd_range, kernel)")
            return (1, 1, 1)
        if not isinstance(launch, nd_range):
            raise invalid(f"kernel {self.name} is enqueued with parallel_for(sycl.nd_range, "
                          "kernel), not with a sycl.range")
        if any(launch.get_offset()):
            raise invalid(f"kernel {self.name} comes from source and cannot take a global "
                          "offset")
        local = tuple(launch.get_local_range())
        want = tuple(reversed(self.local_xyz))
        d = len(local)
        if local != want[3 - d:] or any(s != 1 for s in want[:3 - d]):
            shown = want[3 - d:] if all(s == 1 for s in want[:3 - d]) else want
            raise exception(errc.nd_range, f"kernel {self.name} needs the local range "
                            f"{shown} (its local_size, x={self.local_xyz[0]} "
                            f"y={self.local_xyz[1]} z={self.local_xyz[2]}); the nd_range's "
                            f"local range is {local}")
        return self.local_xyz

    def command(self, device: Any, launch: Any, args: Mapping[int, Any] | tuple,
                properties: Any, context: Any, required: list | None, image: Any = None
                ) -> Any:
        """The command of one launch, `args` by index or as the tuple `set_args` took
        (`required`, the command group's accessors, and `image`, the bundle, matter to
        Python kernels only: GLSL and SPIR-V source takes USM pointers and declares no
        device_globals)."""
        self._local(launch)
        check_set_args(args, [a.name for a in self.reflection.args], f"kernel {self.name}")
        if id(device.vulkan) not in self._compat:
            why = self.why_incompatible(device)
            if why is not None:
                raise why
        bound = []
        for i, _binding, element, name in self._buffers:
            p = args[i]
            if not hasattr(p, "allocation"):
                raise invalid(f"argument {i} ({name}) of kernel {self.name} is a storage "
                              f"buffer: pass a USM pointer, got {type(p).__name__}")
            if element is not None and p.dtype != element and p.dtype != np.uint8:
                raise invalid(f"argument {i} ({name}) of kernel {self.name} holds {element}, "
                              f"got a pointer to {p.dtype}")
            if not context.owns(p.allocation):
                raise invalid(f"argument {i} ({name}) of kernel {self.name} is a pointer from "
                              "another context")
            if p.allocation.device is not device and p.allocation.device != device:
                raise other_device(f"argument {i} ({name}) of kernel {self.name}",
                                   p.allocation, device)
            bound.append(_bound_range(p, device, f"argument {i} ({name}) of kernel {self.name}"))
        push = self._push(args)
        groups = self._group_count(device, launch)
        made_of = (tuple((id(b), off, n) for b, off, n in bound), push, groups)
        last = self._last
        if last is not None and last[0] == made_of:
            return last[1]
        command = KernelLaunch(self.name, self.spirv, self.entry, push, groups, tuple(bound))
        self._last = (made_of, command)
        return command

    def _push(self, args: Mapping[int, Any] | tuple) -> bytes:
        if not self._slots:
            return b""
        flat: dict[int, list] = {}
        for a in self._scalars:
            v = args[a.index]
            if len(a.leaves) == 1:
                if not _matches(v, a.leaves[0].dtype):
                    raise invalid(f"argument {a.index} ({a.name}) of kernel {self.name} is "
                                  f"{a.type_name}, got {type(v).__name__} {v!r}")
                flat[a.index] = [v]
                continue
            arr = np.asarray(v)
            kinds = {lf.dtype.kind for lf in a.leaves}
            ok = arr.dtype.kind in ("f" if kinds == {"f"} else "iu")
            if not ok or arr.size != len(a.leaves):
                raise invalid(f"argument {a.index} ({a.name}) of kernel {self.name} is a "
                              f"{a.type_name}: pass {len(a.leaves)} values of its kind")
            flat[a.index] = [x.item() for x in arr.reshape(-1)]
        try:
            return self._packer.pack(*(flat[i][k] for i, k in self._slots))
        except (struct.error, OverflowError) as ex:
            raise invalid(f"an argument of kernel {self.name} does not fit its type: "
                          f"{ex}") from None

    def _group_count(self, device: Any, launch: Any) -> tuple[int, int, int]:
        if launch is None:
            return (1, 1, 1)
        key = (id(device.vulkan), tuple(launch.get_global_range()))
        g = self._groups.get(key)
        if g is None:
            glob = tuple(reversed(tuple(launch.get_global_range())))
            glob = (*glob, 1, 1, 1)[:3]
            g = tuple(glob[d] // self.local_xyz[d] for d in range(3))
            limits = device.vulkan.max_compute_work_group_count
            if any(c > m for c, m in zip(g, limits, strict=True)):
                raise exception(errc.nd_range, f"{tuple(launch.get_global_range())} needs "
                                f"{g} work-groups; this device dispatches at most {limits}")
            self._groups[key] = g  # type: ignore[assignment]
        return g  # type: ignore[return-value]


def _matches(v: Any, dtype: np.dtype) -> bool:
    """Whether a value matches a push-constant scalar (Python numbers match their kind)."""
    if isinstance(v, np.generic):
        return v.dtype == dtype
    if isinstance(v, bool):
        return False
    if dtype.kind == "f":
        return isinstance(v, float)
    return isinstance(v, int)


def kernel_args(k: Any) -> list[str]:
    """`kernel_args(kernel)`: the arguments of a kernel built from source, in index order."""
    impl = getattr(k, "_impl", None)
    if not isinstance(impl, SourceKernel):
        raise invalid("kernel_args describes kernels built from source")
    return impl.describe_args()


__all__ = ["build", "build_options", "create_kernel_bundle_from_source",
           "is_source_kernel_bundle_supported", "kernel_args", "save_log", "source_language"]


def _bound_range(p: Any, device: Any, what: str) -> tuple:
    """The byte range a descriptor binding of pointer `p` covers: from the pointer to the
    end of its allocation, which must start at an offset the device can bind and fit the
    device's binding range."""
    vk = device.vulkan
    align = vk.min_storage_buffer_offset_alignment
    buffer, offset, size = p.allocation.binding(p.byte_offset)
    if offset % align:
        raise invalid(f"{what}: a storage buffer binding starts at a multiple of "
                      f"{align} bytes on {vk.name}; this pointer is {p.byte_offset} bytes "
                      "into its allocation")
    limit = buffer_range_limit(device)
    if size > limit:
        raise invalid(f"{what}: binding {size} bytes exceeds this device's storage buffer "
                      f"range ({limit} bytes); kernels from source bind a range of at most "
                      "that, Python kernels reach any allocation by address")
    return buffer, offset, size
