"""`sycl.platform` and `sycl.device` over the Vulkan physical devices.

A device is one Vulkan physical device; devices compare equal by physical-device identity
(driver and device UUIDs), so the same device found by two enumerations is equal. A
platform is one Vulkan driver (ICD), grouping its devices by driverID / driverName.
`VKSYCL_DEVICE_INSTANCES=N` (for testing multi-device code on a machine with one device)
makes each physical device N devices, instances 0 to N-1, each with a Vulkan logical
device, queue and memory of its own: they compare unequal, and USM of one is not usable
on another, as with two GPUs.

`VKSYCL_DEVICE_SELECTOR` restricts the devices vksycl exposes, as oneAPI's
`ONEAPI_DEVICE_SELECTOR` does: comma-separated terms, each a type (`gpu`, `cpu`,
`discrete_gpu`, `integrated_gpu`, `virtual_gpu`), a Vulkan physical-device index as
`python -m vksycl info` lists it (`0`, `1`), or a case-insensitive substring of the device
name. The term `local_rank` picks one device per MPI process of a node: of the devices the
other terms match (every device without them), the one at position `local_rank` modulo
their number, the local rank read from the launcher (`config.local_rank`: Open MPI's
OMPI_COMM_WORLD_LOCAL_RANK, MPICH's MPI_LOCALRANKID, Slurm's SLURM_LOCALID, ...; 0 outside
one). Every selector, `device.get_devices()` and `platform.get_platforms()` see only the
matching devices; a value that matches none raises `errc.runtime` naming the devices.

Vulkan has no standard compute-unit count: `max_compute_units` is the SM count on NVIDIA
(VK_NV_shader_sm_builtins), active compute units on AMD, shader cores on ARM, the threads
llvmpipe runs compute on for lavapipe, and 0 where no extension says (e.g. Intel GPUs).
`max_work_item_sizes_Nd` list Vulkan's x last: SYCL's last dimension varies fastest.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
from collections.abc import Callable
from typing import Any

from .. import config, info
from ..exceptions import errc, exception, invalid
from .aspects import aspect, hidden_aspects, matrix_combinations, vulkan_aspects
from .devices import (
    INSTALL_DRIVER,
    REQUIRED_FEATURES,
    VulkanDeviceInfo,
    instance_version,
    missing_features,
    vulkan_devices,
)
from .selectors import REJECT, default_selector_v

SELECTOR_ENV = "VKSYCL_DEVICE_SELECTOR"

Selector = Callable[["device"], int]


class backend(enum.StrEnum):
    """`sycl.backend`; equal to its name, so code comparing with "vulkan" keeps working."""

    vulkan = "vulkan"


class device:
    """A SYCL device: `device()` picks with `default_selector_v`, `device(selector)` with
    any selector. `vulkan` holds the raw Vulkan facts for the runtime."""

    __slots__ = ("_aspects", "vulkan")

    def __init__(self, selector: Selector | device | None = None) -> None:
        chosen = select_device(selector)
        self.vulkan: VulkanDeviceInfo = chosen.vulkan
        self._aspects = chosen._aspects

    @classmethod
    def _of(cls, vk: VulkanDeviceInfo) -> device:
        d = object.__new__(cls)
        d.vulkan = vk
        d._aspects = vulkan_aspects(vk)
        return d

    @staticmethod
    def get_devices(device_type: info.device_type = info.device_type.all) -> list[device]:
        if device_type is info.device_type.automatic:
            return [select_device(None)]
        return [d for d in _visible_devices() if _is_type(d, device_type)]

    def get_info(self, param: info.descriptor) -> Any:
        query = _DEVICE_INFO.get(param)
        if query is None:
            raise invalid(f"{param!r} is not a device information descriptor")
        return query(self)

    def has(self, asp: aspect) -> bool:
        if not isinstance(asp, aspect):
            raise invalid(f"device.has takes a sycl.aspect, not {asp!r}")
        return asp in self._aspects and asp not in hidden_aspects()

    def is_cpu(self) -> bool:
        return _is_type(self, info.device_type.cpu)

    def is_gpu(self) -> bool:
        return _is_type(self, info.device_type.gpu)

    def is_accelerator(self) -> bool:
        return _is_type(self, info.device_type.accelerator)

    def get_platform(self) -> platform:
        return platform._of(self)

    def get_backend(self) -> backend:
        return backend.vulkan

    def create_sub_devices(self, *args: Any) -> list[device]:
        raise exception(errc.feature_not_supported,
                        f"{self.vulkan.name} cannot be partitioned: Vulkan has no sub-devices")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, device) and self.vulkan.identity == other.vulkan.identity

    def __hash__(self) -> int:
        return hash(self.vulkan.identity)

    def __repr__(self) -> str:
        return f"<sycl.device {_describe(self)}>"


class platform:
    """A Vulkan driver and the devices it drives."""

    __slots__ = ("_key",)

    def __init__(self, selector: Selector | None = None) -> None:
        self._key = select_device(selector).get_platform()._key

    @classmethod
    def _of(cls, dev: device) -> platform:
        p = object.__new__(cls)
        p._key = _platform_key(dev.vulkan)
        return p

    @staticmethod
    def get_platforms() -> list[platform]:
        seen: dict[tuple[str, ...], platform] = {}
        for d in _visible_devices():
            p = d.get_platform()
            seen.setdefault(p._key, p)
        return list(seen.values())

    def get_devices(self, device_type: info.device_type = info.device_type.all) -> list[device]:
        found = device.get_devices(device_type) + [d for d in _adopted
                                                   if _is_type(d, device_type)]
        return [d for d in found if _platform_key(d.vulkan) == self._key]

    def get_info(self, param: info.descriptor) -> Any:
        query = _PLATFORM_INFO.get(param)
        if query is None:
            raise invalid(f"{param!r} is not a platform information descriptor")
        return query(self._first())

    def has(self, asp: aspect) -> bool:
        return all(d.has(asp) for d in self.get_devices())

    def get_backend(self) -> backend:
        return backend.vulkan

    def _first(self) -> VulkanDeviceInfo:
        return next(d.vulkan for d in (*_all_devices(), *_adopted)
                    if _platform_key(d.vulkan) == self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, platform) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"<sycl.platform {self.get_info(info.platform.name)!r}>"


def select_device(selector: Selector | device | None = None) -> device:
    """The visible device the selector scores highest (the first among equals); a device
    is returned as it is. Raises `errc.runtime` when every device is rejected."""
    if isinstance(selector, device):
        return selector
    if selector is None:
        selector = default_selector_v
    if not callable(selector):
        raise invalid(f"a device selector is a callable scoring a device, not {selector!r}")
    candidates = _visible_devices()
    best: device | None = None
    best_score = REJECT
    for d in candidates:
        score = selector(d)
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise invalid(f"device selector {_name(selector)} returned {score!r}, not a number")
        if score >= 0 and (best is None or score > best_score):
            best, best_score = d, score
    if best is None:
        raise exception(errc.runtime, f"no device satisfies {_name(selector)}; devices: "
                                      f"{_listing(candidates)}")
    return best


def all_vulkan_devices() -> list[device]:
    """Every Vulkan device, ignoring `VKSYCL_DEVICE_SELECTOR` (for `python -m vksycl info`)."""
    return list(_all_devices())


_cached: tuple[tuple[VulkanDeviceInfo, ...], int, tuple[device, ...]] | None = None
# devices made from an application's Vulkan handles (`sycl.make_device`): on the
# platform of their application's instance, never among those selectors see
_adopted: list[device] = []


def adopt(vk: VulkanDeviceInfo) -> device:
    """A new device over an application's handles (`vk.native`)."""
    d = device._of(vk)
    _adopted.append(d)
    return d


def adopted() -> list[device]:
    """The devices made from an application's handles and not released."""
    return list(_adopted)


def forget(d: device) -> None:
    """Drops a device made from an application's handles, once vksycl released them."""
    _adopted[:] = [a for a in _adopted if a != d]


def _all_devices() -> tuple[device, ...]:
    """Every instance of every physical device, the instances of one next to each other."""
    global _cached
    infos = vulkan_devices()
    instances = config.device_instances()
    if _cached is None or _cached[0] is not infos or _cached[1] != instances:
        _cached = (infos, instances, tuple(
            device._of(dataclasses.replace(vk, instance=k) if k else vk)
            for vk in infos for k in range(instances)))
    return _cached[2]


def _visible_devices() -> list[device]:
    found = _all_devices()
    if not found:
        raise exception(errc.runtime, f"no Vulkan devices found: {INSTALL_DRIVER}")
    # a device without what vksycl needs is none of its devices
    devices = tuple(d for d in found if not missing_features(d.vulkan))
    if not devices:
        raise exception(errc.runtime, "no Vulkan device has what vksycl needs: " + "; ".join(
            f"{d.vulkan.name} lacks {', '.join(missing_features(d.vulkan))}" for d in found) +
            f" (vksycl needs {', '.join(REQUIRED_FEATURES)}; a newer driver may offer them)")
    raw = os.environ.get(SELECTOR_ENV, "").strip()
    terms = [t.strip().lower() for t in raw.split(",") if t.strip()]
    per_rank = "local_rank" in terms
    terms = [t for t in terms if t != "local_rank"]
    chosen = [d for d in devices if not terms or any(_matches(d.vulkan, t) for t in terms)]
    if not chosen:
        raise exception(errc.runtime, f"{SELECTOR_ENV}={raw!r} matches none of the Vulkan "
                                      f"devices: {_listing(devices)}")
    if per_rank:
        return [chosen[config.local_rank() % len(chosen)]]
    return chosen


def _matches(vk: VulkanDeviceInfo, term: str) -> bool:
    if term == "gpu":
        return vk.device_type.endswith("_gpu")
    if term in ("cpu", "discrete_gpu", "integrated_gpu", "virtual_gpu"):
        return vk.device_type == term
    if term.isdigit():
        return vk.index == int(term)
    return term in vk.name.lower()


_TYPE = {"discrete_gpu": info.device_type.gpu, "integrated_gpu": info.device_type.gpu,
         "virtual_gpu": info.device_type.gpu, "cpu": info.device_type.cpu,
         "other": info.device_type.custom}


def _is_type(d: device, t: info.device_type) -> bool:
    if not isinstance(t, info.device_type):
        raise invalid(f"expected a sycl.info.device_type, not {t!r}")
    return t is info.device_type.all or _TYPE[d.vulkan.device_type] is t


def _describe(d: device) -> str:
    vk = d.vulkan
    which = f", instance {vk.instance}" if vk.instance or config.device_instances() > 1 else ""
    return f"[{vk.index}] {vk.name} ({vk.device_type}{which})"


def _listing(devices: Any) -> str:
    return "; ".join(_describe(d) for d in devices) or "none"


def _name(selector: Callable[..., Any]) -> str:
    return getattr(selector, "__qualname__", None) or repr(selector)


def _driver_key(vk: VulkanDeviceInfo) -> tuple[str, ...]:
    if vk.driver_id or vk.driver_name:
        return (vk.driver_id, vk.driver_name)
    return ("vendor", str(vk.vendor_id))


def _platform_key(vk: VulkanDeviceInfo) -> tuple[Any, ...]:
    """A platform is a driver; the devices made from an application's instance are the
    platform of that instance."""
    key = _driver_key(vk)
    return key if vk.native is None else (*key, "instance", vk.native.instance)


def _driver_vendor(vk: VulkanDeviceInfo) -> str:
    """Who makes the driver: Mesa for Mesa's drivers, otherwise the driverID's maker."""
    if "MESA" in vk.driver_id.split("_"):
        return "Mesa"
    maker = vk.driver_id.split("_")[0] if vk.driver_id else ""
    if not maker:
        return vk.vendor
    return maker if maker in ("AMD", "ARM", "NVIDIA") else maker.capitalize()


def _version(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def _work_item_sizes(dims: int) -> Callable[[device], tuple[int, ...]]:
    # SYCL's last dimension varies fastest and maps to Vulkan's x.
    return lambda d: tuple(reversed(d.vulkan.max_compute_work_group_size[:dims]))


def _sub_group_sizes(vk: VulkanDeviceInfo) -> list[int]:
    if not vk.subgroup_size_control:
        return [vk.subgroup_size]
    sizes, s = [], vk.min_subgroup_size
    while s <= vk.max_subgroup_size:
        sizes.append(s)
        s *= 2
    return sizes


def _max_alloc(vk: VulkanDeviceInfo) -> int:
    limits = [vk.max_memory_allocation_size]
    if vk.max_buffer_size:
        limits.append(vk.max_buffer_size)
    heaps = [h.size for h in vk.memory_heaps if h.device_local]
    if heaps:
        limits.append(max(heaps))
    return min(limits)


def _matrix_combinations(d: device) -> list[info.combination]:
    t = info.matrix_type
    return [info.combination(0, 0, 0, m, n, k, t(a), t(b), t(c), t(r))
            for a, b, c, r, m, n, k in matrix_combinations(d.vulkan)]


_DEVICE_INFO: dict[info.descriptor, Callable[[device], Any]] = {
    info.experimental.device.matrix_combinations: _matrix_combinations,
    info.device.device_type: lambda d: _TYPE[d.vulkan.device_type],
    info.device.vendor_id: lambda d: d.vulkan.vendor_id,
    info.device.name: lambda d: d.vulkan.name,
    info.device.vendor: lambda d: d.vulkan.vendor,
    info.device.driver_version: lambda d: d.vulkan.driver_version_string,
    info.device.version: lambda d: _version(d.vulkan.api_version),
    info.device.backend_version: lambda d: _version(instance_version()),
    info.device.extensions: lambda d: sorted(d.vulkan.extensions),
    info.device.aspects: lambda d: [a for a in aspect if d.has(a)],
    info.device.is_available: lambda d: True,
    info.device.platform: lambda d: d.get_platform(),
    info.device.max_compute_units: lambda d: d.vulkan.compute_units or 0,
    info.device.max_work_item_dimensions: lambda d: 3,
    info.device.max_work_item_sizes_1d: _work_item_sizes(1),
    info.device.max_work_item_sizes_2d: _work_item_sizes(2),
    info.device.max_work_item_sizes_3d: _work_item_sizes(3),
    info.device.max_work_group_size: lambda d: d.vulkan.max_compute_work_group_invocations,
    info.device.max_num_sub_groups: lambda d: math.ceil(
        d.vulkan.max_compute_work_group_invocations / d.vulkan.min_subgroup_size),
    info.device.sub_group_sizes: lambda d: _sub_group_sizes(d.vulkan),
    info.device.local_mem_type: lambda d: info.local_mem_type.local,
    info.device.local_mem_size: lambda d: d.vulkan.max_compute_shared_memory_size,
    info.device.global_mem_size: lambda d: d.vulkan.device_local_memory,
    info.device.max_mem_alloc_size: lambda d: _max_alloc(d.vulkan),
    info.device.mem_base_addr_align: lambda d: 8 * d.vulkan.min_storage_buffer_offset_alignment,
    info.device.host_unified_memory: lambda d: d.vulkan.device_type in ("cpu", "integrated_gpu"),
    info.device.profiling_timer_resolution: lambda d: max(1, math.ceil(d.vulkan.timestamp_period)),
    info.device.ext_vksycl_vulkan_info: lambda d: d.vulkan,
    info.device.ext_vksycl_vulkan_index: lambda d: d.vulkan.index,
    info.device.ext_vksycl_max_storage_buffer_range: lambda d: d.vulkan.max_storage_buffer_range,
    info.device.ext_vksycl_max_push_constants_size: lambda d: d.vulkan.max_push_constants_size,
    info.device.ext_vksycl_max_compute_work_group_count:
        lambda d: d.vulkan.max_compute_work_group_count,
    info.device.ext_vksycl_max_compute_work_group_size:
        lambda d: d.vulkan.max_compute_work_group_size,
    info.device.ext_vksycl_timestamp_period: lambda d: d.vulkan.timestamp_period,
    info.device.ext_vksycl_timestamp_valid_bits: lambda d: d.vulkan.timestamp_valid_bits,
    info.device.ext_vksycl_min_storage_buffer_offset_alignment:
        lambda d: d.vulkan.min_storage_buffer_offset_alignment,
    info.device.ext_vksycl_sub_group_operations: lambda d: d.vulkan.subgroup_operations,
}

_PLATFORM_INFO: dict[info.descriptor, Callable[[VulkanDeviceInfo], Any]] = {
    info.platform.name: lambda vk: f"Vulkan {vk.driver_name or vk.vendor}",
    info.platform.vendor: _driver_vendor,
    info.platform.version: lambda vk: vk.driver_info or vk.driver_version_string,
    info.platform.profile: lambda vk: "FULL_PROFILE",
    info.platform.extensions: lambda vk: [],
}
