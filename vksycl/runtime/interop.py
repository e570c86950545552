"""SYCL 2020 backend interoperability with Vulkan (SYCL 2020 4.5.1).

`get_native` gives the Vulkan objects behind vksycl's: a platform's VkInstance, a
device's VkPhysicalDevice, a context's VkDevice, a queue's VkQueue (with its family and
index), an event's timeline semaphore point, and a USM pointer's VkBuffer, offset and
size. `make_device`, `make_context` and `make_queue` go the other way, for an application
that owns its instance and device: vksycl then works on the application's device and
queue (Kompute patch 0014), and never destroys what it did not create;
`release_native_device` destroys what vksycl made there before the application destroys
its device; `native_queue_lock` lets the application submit to the VkQueue vksycl submits
to. Handles are integers, or the cffi handles of the `vulkan` package.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import replace
from types import MappingProxyType
from typing import Any, NamedTuple

from ..exceptions import errc, exception
from . import external_memory
from .context import context, scheduler_for
from .devices import (
    REQUIRED_FEATURES,
    NativeHandles,
    VulkanDeviceInfo,
    as_handle,
    describe_native,
)
from .event import event
from .native_usm import ImportedAllocation, abandon, native_memory
from .platform import adopt, adopted, backend, device, forget, platform
from .queue import queue
from .usm import ptr

_MIN_API = (1, 2)
_serials = itertools.count(1)


class native_queue(NamedTuple):
    """`get_native(queue)`: the VkQueue vksycl submits to, its family and index."""

    queue: int
    queue_family_index: int
    queue_index: int


class native_event(NamedTuple):
    """`get_native(event)`: the timeline semaphore that reaches `value` once the event's
    work is done (wait for it with vkWaitSemaphores, or in a submission)."""

    semaphore: int
    value: int


def _check_backend(b: Any) -> None:
    if b != backend.vulkan:
        raise exception(errc.invalid, f"vksycl's only backend is sycl.backend.vulkan, not {b!r}")


# -- get_native ----------------------------------------------------------------------------
def get_native(obj: Any, backend_: Any = backend.vulkan) -> Any:
    """The Vulkan object behind a vksycl object (SYCL 2020 `get_native`). A context of
    several devices gives the list of their VkDevices."""
    _check_backend(backend_)
    if isinstance(obj, platform):
        devices = obj.get_devices()
        if not devices:
            raise exception(errc.invalid, f"{obj!r} has no devices")
        return _handles(devices[0])[0]
    if isinstance(obj, device):
        return _handles(obj)[1]
    if isinstance(obj, context):
        found = [_handles(d)[2] for d in obj.get_devices()]
        return found[0] if len(found) == 1 else found
    if isinstance(obj, queue):
        _, _, _, vk_queue, family = _handles(obj.get_device())
        native = obj.get_device().vulkan.native
        return native_queue(vk_queue, family, native.queue_index if native else 0)
    if isinstance(obj, event):
        return _event_point(obj)
    if isinstance(obj, ptr):
        return _memory(obj)
    raise exception(errc.invalid, f"get_native takes a platform, device, context, queue, "
                    f"event or USM pointer, not {type(obj).__name__}")


def _handles(dev: device) -> tuple[int, int, int, int, int]:
    """(VkInstance, VkPhysicalDevice, VkDevice, VkQueue, queue family) of a device; for
    an application's, its own handles, known without Vulkan (and after release)."""
    native = dev.vulkan.native
    if native is None:
        return scheduler_for(dev).engine.native_handles()
    engine = scheduler_for(dev).engine
    vk_queue = engine.native_handles()[3] if not engine.closed else 0
    return (native.instance, native.physical_device, native.device, vk_queue,
            native.queue_family_index)


def _event_point(e: event) -> native_event:
    engine = e._engine
    if engine is None:
        raise exception(errc.invalid, "a default-constructed event belongs to no device")
    if not e._issued:
        raise exception(errc.invalid, "the event's command is not yet submitted to the "
                        "device (it waits for other work): ask once it is")
    sub = e._submission
    if sub is None and not e.is_complete():
        raise exception(errc.invalid, "the event's command runs on the host: it has no "
                        "semaphore on the device")
    return native_event(*engine.native_timeline(sub))


def _memory(p: ptr) -> native_memory:
    a = p.allocation
    a.check_live()
    if not 0 <= p.byte_offset <= a.nbytes:
        raise exception(errc.invalid, f"the pointer is {p.byte_offset} bytes into an "
                        f"allocation of {a.nbytes}: outside it")
    if isinstance(a, ImportedAllocation):
        return native_memory(a.buffer, a.buffer_offset + p.byte_offset,
                             a.nbytes - p.byte_offset, a.memory)
    buffer, offset, size = a.binding(p.byte_offset)
    vk_buffer, memory = scheduler_for(a.device).engine.native_buffer(buffer)
    return native_memory(vk_buffer, offset, size, memory)


# -- make_* ------------------------------------------------------------------------------
def make_device(*, instance: Any, physical_device: Any, device: Any,
                queue_family_index: int, enabled_features: Iterable[str],
                queue_index: int = 0, enabled_extensions: Iterable[str] = (),
                backend_: Any = backend.vulkan) -> Any:
    """A device over an application's Vulkan device (SYCL 2020 `make_device`): vksycl
    submits to queue `queue_index` of family `queue_family_index` and allocates from the
    device. Vulkan cannot be asked which features a device was created with, so the
    application names them (`enabled_features`, Vulkan's names) and its device
    extensions; vksycl needs a Vulkan 1.2 device with bufferDeviceAddress,
    timelineSemaphore and shaderInt64. Making it again from the same handles gives the
    same device."""
    _check_backend(backend_)
    import vulkan as vk
    handles = (as_handle(instance, "instance"), as_handle(physical_device, "physical_device"),
               as_handle(device, "device"), int(queue_family_index), int(queue_index))
    features, extensions = set(enabled_features), set(enabled_extensions)
    for d in adopted():
        n = d.vulkan.native
        if (n.instance, n.physical_device, n.device, n.queue_family_index,
                n.queue_index) == handles:
            _check_same_creation(d.vulkan, features, extensions)
            return d
    native = NativeHandles(*handles, serial=next(_serials))
    info = describe_native(vk, vk.ffi.cast("VkInstance", native.instance),
                           vk.ffi.cast("VkPhysicalDevice", native.physical_device))
    return adopt(_adopted_info(info, native, features, extensions))


def _check_same_creation(info: VulkanDeviceInfo, features: set[str],
                         extensions: set[str]) -> None:
    """A device is made once from its handles: a later make_device for them names the
    features and extensions the VkDevice was created with, as the first call did."""
    where = f"{info.name} (VkDevice {info.native.device:#x})" if info.native else info.name
    unknown = sorted(f for f in features if f not in info.features)
    if unknown:
        raise exception(errc.invalid, f"enabled_features names {', '.join(unknown)}, which "
                        f"are not Vulkan features of {where}")
    before = {f for f, on in info.features.items() if on}
    if features != before or extensions != set(info.extensions):
        changed = sorted(features ^ before) + sorted(extensions ^ set(info.extensions))
        raise exception(errc.invalid, f"{where} was already made into a device with other "
                        f"enabled_features or enabled_extensions (differing: "
                        f"{', '.join(changed)}): a VkDevice's features are fixed at its "
                        "creation")


def _adopted_info(info: VulkanDeviceInfo, native: NativeHandles, features: set[str],
                  extensions: set[str]) -> VulkanDeviceInfo:
    """The facts of an application's device: what it enabled, checked against what
    vksycl needs and what the physical device has."""
    where = f"{info.name} (VkDevice {native.device:#x})"
    if info.api_version[:2] < _MIN_API:
        raise exception(errc.feature_not_supported, f"{where} is Vulkan "
                        f"{'.'.join(map(str, info.api_version))}; vksycl needs 1.2")
    unknown = sorted(f for f in features if f not in info.features)
    if unknown:
        raise exception(errc.invalid, f"enabled_features names {', '.join(unknown)}, which "
                        f"are not Vulkan features of {where}")
    unsupported = sorted(f for f in features if not info.features[f])
    if unsupported:
        raise exception(errc.invalid, f"{where} does not support {', '.join(unsupported)}, "
                        "listed in enabled_features")
    missing = [f for f in REQUIRED_FEATURES if f not in features]
    if missing:
        why = "; ".join(f"{f} ({REQUIRED_FEATURES[f]})" for f in missing)
        raise exception(errc.feature_not_supported, f"{where} was not created with the "
                        f"Vulkan features vksycl needs: {why}")
    strange = sorted(extensions - info.extensions)
    if strange:
        raise exception(errc.invalid, f"{where} has no device extensions "
                        f"{', '.join(strange)}, listed in enabled_extensions")
    families = info.queue_families
    family = native.queue_family_index
    if not 0 <= family < len(families) or not families[family].compute:
        raise exception(errc.invalid, f"queue family {family} of {where} has no compute "
                        "queues")
    if not 0 <= native.queue_index < families[family].count:
        raise exception(errc.invalid, f"queue family {family} of {where} has "
                        f"{families[family].count} queues, not {native.queue_index + 1}")
    matrices = info.cooperative_matrices if "cooperativeMatrix" in features else ()
    return replace(
        info, native=native, features=MappingProxyType({f: f in features for f in info.features}),
        extensions=frozenset(extensions), compute_queue_family=family,
        timestamp_valid_bits=families[family].timestamp_valid_bits,
        subgroup_size_control=info.subgroup_size_control and "subgroupSizeControl" in features,
        cooperative_matrices=matrices)


def make_context(native_device: Any, backend_: Any = backend.vulkan,
                 async_handler: Any = None) -> context:
    """A context over the device made from an application's VkDevice (SYCL 2020
    `make_context`; `make_device` first, which says how to use it)."""
    _check_backend(backend_)
    value = as_handle(native_device, "device")
    dev = _made_from(value)
    return context([dev], async_handler)


def _made_from(vk_device: int) -> device:
    for d in adopted():
        if d.vulkan.native.device == vk_device:
            return d
    raise exception(errc.invalid, f"no device was made from VkDevice {vk_device:#x}: "
                    "call sycl.make_device with its instance, physical device and queue first")


def make_queue(native: Any, ctx: context, backend_: Any = backend.vulkan, *,
               property_list: Iterable[Any] = (), async_handler: Any = None) -> queue:
    """A queue submitting to an application's VkQueue (SYCL 2020 `make_queue`), given as
    a `native_queue` or a VkQueue: the queue of the context's device that `make_device`
    named. vksycl submits from its own threads, so the application submits to that
    VkQueue only under a lock it shares with no vksycl call, or uses another queue."""
    _check_backend(backend_)
    vk_queue = as_handle(native.queue if isinstance(native, native_queue) else native, "queue")
    for dev in ctx.get_devices():
        _, _, _, own, family = _handles(dev)
        if own == vk_queue:
            if isinstance(native, native_queue) and (
                    native.queue_family_index, native.queue_index) != (
                    family, dev.vulkan.native.queue_index if dev.vulkan.native else 0):
                raise exception(errc.invalid, f"VkQueue {vk_queue:#x} is queue "
                                f"{native.queue_index} of family {native.queue_family_index}"
                                " by the native_queue given, not by the device")
            return queue(ctx, dev, property_list=list(property_list),
                         async_handler=async_handler)
    raise exception(errc.invalid, f"VkQueue {vk_queue:#x} is not the queue of any device of "
                    "the context: make_device names the queue vksycl submits to")


def release_native_device(dev: device) -> None:
    """Waits for the device's work, then destroys every Vulkan object vksycl made on an
    application's device (buffers, exportable and imported memory, pipelines, command
    pools, semaphores), never the
    device, its queue or the instance: call it before the application destroys them.
    The device's USM pointers count as freed, and its queues refuse work."""
    native = dev.vulkan.native
    if native is None:
        raise exception(errc.invalid, f"{dev!r} is vksycl's own device, not one made from "
                        "an application's handles: vksycl releases it at exit")
    sched = scheduler_for(dev)
    external_memory.release(dev)
    sched.engine.close()
    for allocator in sched.allocators.values():
        allocator.abandon()
    abandon(dev)
    forget(dev)


@contextlib.contextmanager
def native_queue_lock(q: queue) -> Iterator[native_queue]:
    """`with native_queue_lock(q) as native:` holds vksycl's submissions to the VkQueue
    of `q` for the block, and gives that queue as `get_native(q)` does. Vulkan takes one
    submitter to a queue at a time (vkQueueSubmit, vkQueuePresentKHR, vkQueueWaitIdle),
    and vksycl submits from its own threads too (batches, host tasks' successors): an
    application that shares its queue with vksycl submits to it inside the block. Keep
    the block short, and wait for nothing vksycl must submit first inside it."""
    native = get_native(q)
    lock = scheduler_for(q.get_device()).engine.lock
    with lock:
        yield native
