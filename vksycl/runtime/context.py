"""`sycl.context`, and the per-device scheduler every context on that device shares."""

from __future__ import annotations

import atexit
import ctypes
import threading
from typing import Any

from .. import config, info
from ..exceptions import errc, exception
from .devices import (
    ATOMIC_FLOAT2_EXTENSION,
    ATOMIC_FLOAT_EXTENSION,
    COOPERATIVE_MATRIX2_EXTENSION,
    COOPERATIVE_MATRIX_EXTENSION,
    EXTERNAL_MEMORY_FD_EXTENSION,
    REQUIRED_FEATURES,
    missing_features,
)
from .engine import Engine
from .platform import device
from .scheduler import Scheduler
from .usm import Allocation, ptr

_SPIN_WAIT_S = 0.002
# Measured on lavapipe (2 cores): a 64-item launch + wait takes 230 µs with a blocking wait
# and 130 µs polling for up to 100-200 µs (50 µs gains nothing), while polling slows a
# 1 ms kernel by 10% (the engine stops polling after waits longer than it covers).
_SPIN_WAIT_CPU_S = 0.0002
_schedulers: dict[Any, Scheduler] = {}
_schedulers_lock = threading.Lock()


def optional_extensions(vk: Any) -> tuple[str, ...]:
    """The device extensions enabled where the device offers them: float atomics,
    cooperative matrices (with NVIDIA's work-group-scope ones, which build on them) and
    memory export."""
    wanted = (ATOMIC_FLOAT_EXTENSION, ATOMIC_FLOAT2_EXTENSION, EXTERNAL_MEMORY_FD_EXTENSION)
    if vk.cooperative_matrices:
        wanted = (COOPERATIVE_MATRIX_EXTENSION, COOPERATIVE_MATRIX2_EXTENSION, *wanted)
    return tuple(e for e in wanted if e in vk.extensions)


def scheduler_for(device: Any) -> Scheduler:
    """The device's scheduler, and with it its Kompute manager: one per process."""
    sched = _schedulers.get(device)
    if sched is not None:
        return sched
    with _schedulers_lock:
        sched = _schedulers.get(device)
        if sched is None:
            vk = device.vulkan
            missing = missing_features(vk)
            if missing:
                raise exception(errc.feature_not_supported, "; ".join(
                    f"{vk.name} lacks the Vulkan feature {f}, which vksycl needs "
                    f"({REQUIRED_FEATURES[f]})" for f in missing))
            spin = _SPIN_WAIT_CPU_S if vk.device_type == "cpu" else _SPIN_WAIT_S
            engine = Engine(vk.index, vk.compute_queue_family, vk.timestamp_period, spin,
                            config.batch_window_s(), optional_extensions(vk), vk.native)
            sched = Scheduler(engine, {False: _heap_size(vk, False), True: _heap_size(vk, True)})
            _schedulers[device] = sched
        return sched


def _heap_size(vk: Any, host_visible: bool) -> int:
    """The size of the heap Kompute allocates from: that of the first memory type with
    the properties it asks for (device-local, or host-visible and coherent); 0 if none."""
    for t in vk.memory_types:
        if (t.host_visible and t.host_coherent) if host_visible else t.device_local:
            return vk.memory_heaps[t.heap_index].size
    return 0


def _drain() -> None:
    """Waits for the work in flight on every device before the interpreter tears Kompute
    down (destroying a sequence the device still runs crashes the process), as a SYCL
    queue's destructor waits for its work. A device that was lost, or whose work outlasts
    the wait timeout (a hung kernel), is never torn down: its scheduler, and with it its
    Kompute manager, memory and sequences, stays alive until the process is gone, so
    that the process can exit."""
    with _schedulers_lock:
        schedulers = list(_schedulers.values())
    for sched in schedulers:
        if not _drained(sched.engine):
            _keep_forever(sched)


def _drained(engine: Engine) -> bool:
    """Whether the engine's work completed (False if the device is lost, or a wait for
    its work timed out)."""
    if engine.lost is not None:
        return False
    try:
        engine.synchronize()
    except exception:
        return False
    return True


def _keep_forever(obj: object) -> None:
    """One reference to `obj` that nothing releases, so finalizing the interpreter never
    destroys it."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


atexit.register(_drain)


class context:
    """A set of devices sharing USM allocations."""

    def __init__(self, devices: Any = None, async_handler: Any = None) -> None:
        if devices is None:
            devices = [device()]
        elif isinstance(devices, device):
            devices = [devices]
        self._devices = list(devices)
        if not self._devices:
            raise exception(errc.invalid, "a context needs at least one device")
        self._async_handler = async_handler

    @property
    def async_handler(self) -> Any:
        """The handler of asynchronous errors of queues made without one."""
        return self._async_handler

    def get_devices(self) -> list:
        return list(self._devices)

    def get_info(self, param: Any) -> Any:
        if param is info.context.devices:
            return self.get_devices()
        if param is info.context.platform:
            return self.get_platform()
        if param is info.context.reference_count:
            return 1
        if param is info.context.backend_version:
            return self._devices[0].get_info(info.device.backend_version)
        raise exception(errc.invalid, f"unknown context info descriptor {param!r}")

    def get_platform(self) -> Any:
        return self._devices[0].get_platform()

    def get_backend(self) -> Any:
        return self.get_platform().get_backend()

    def has_device(self, dev: Any) -> bool:
        return dev in self._devices

    def owns(self, a: Allocation) -> bool:
        """Whether `a` is live memory allocated in this context."""
        return a.context is self and not a.freed

    def _pointer_at(self, address: int, dtype: Any) -> ptr | None:
        """The USM pointer a device address stored in memory stands for (None for 0)."""
        if address == 0:
            return None
        for dev in self._devices:
            for allocator in scheduler_for(dev).allocators.values():
                chunk = allocator.find(address)
                a = chunk and chunk.owner
                if a is not None and self.owns(a) and address <= a.address + a.nbytes:
                    return ptr(a, address - a.address, dtype)
        raise exception(errc.invalid, f"address {address:#x} stored in memory points into "
                        "no live allocation of this context")


_default_contexts: dict[tuple[Any, int], context] = {}


def default_context(platform: Any) -> context:
    """The platform's default context (`ext_oneapi_get_default_context`), over every
    instance of its devices (`VKSYCL_DEVICE_INSTANCES`)."""
    key = (platform, config.device_instances())
    ctx = _default_contexts.get(key)
    if ctx is None:
        ctx = _default_contexts[key] = context(platform.get_devices())
    return ctx
