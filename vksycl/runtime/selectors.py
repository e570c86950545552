"""SYCL device selectors: callables that score a device; a negative score rejects it.

The default order prefers a discrete GPU, then an integrated one, then a virtual one, then
a CPU device (lavapipe). Among equal scores the device enumerated first wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from .aspects import aspect
from .devices import VulkanDeviceInfo


class Candidate(Protocol):
    """A `sycl.device` as the selectors here read it: its Vulkan facts and its aspects.
    The device class sits above this module, as it picks devices with these selectors."""

    vulkan: VulkanDeviceInfo

    def has(self, asp: aspect) -> bool: ...


_RANK = {"discrete_gpu": 500, "integrated_gpu": 400, "virtual_gpu": 300, "cpu": 200,
         "other": 100}
_GPUS = ("discrete_gpu", "integrated_gpu", "virtual_gpu")
REJECT = -1


def default_selector_v(dev: Candidate) -> int:
    """The default selector: a discrete GPU over an integrated one over a CPU device
    (lavapipe)."""
    return _RANK[dev.vulkan.device_type]


def gpu_selector_v(dev: Candidate) -> int:
    """Selects GPUs only (discrete before integrated); none is `errc.runtime`."""
    return _RANK[dev.vulkan.device_type] if dev.vulkan.device_type in _GPUS else REJECT


def cpu_selector_v(dev: Candidate) -> int:
    """Selects CPU devices only (lavapipe)."""
    return _RANK["cpu"] if dev.vulkan.device_type == "cpu" else REJECT


def accelerator_selector_v(dev: Candidate) -> int:
    """Vulkan has no accelerator device type, so this selects only custom-selected
    devices that report the `accelerator` aspect: none today."""
    return _RANK["other"] if dev.has(aspect.accelerator) else REJECT


def aspect_selector(*args: aspect | Iterable[aspect],
                    deny_list: Iterable[aspect] = ()) -> Callable[[Candidate], int]:
    """`aspect_selector(a, b, ...)` or `aspect_selector([a, b], [denied])`: the default
    order among the devices that have every listed aspect and none of the denied ones."""
    if args and not isinstance(args[0], aspect):
        if len(args) > 2:
            raise TypeError("aspect_selector(aspect_list, deny_list) takes two lists")
        required = tuple(args[0])  # type: ignore[arg-type]
        denied = tuple(args[1]) if len(args) == 2 else tuple(deny_list)  # type: ignore[arg-type]
    else:
        required, denied = tuple(args), tuple(deny_list)  # type: ignore[arg-type]
    for a in (*required, *denied):
        if not isinstance(a, aspect):
            raise TypeError(f"aspect_selector takes sycl.aspect values, not {a!r}")

    def select(dev: Candidate) -> int:
        if all(dev.has(a) for a in required) and not any(dev.has(a) for a in denied):
            return default_selector_v(dev)
        return REJECT

    select.__qualname__ = select.__name__ = (
        f"aspect_selector({[a.name for a in required]}, {[a.name for a in denied]})")
    return select
