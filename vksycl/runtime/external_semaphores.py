"""An application's Vulkan semaphores in vksycl's queues, after the external semaphore
API of sycl_ext_oneapi_bindless_images.

That extension imports a semaphore from an OS handle. A Vulkan application already holds
its VkSemaphores on the device vksycl works on, so `make_external_semaphore` names one of
them, with its type (binary or timeline), which Vulkan cannot be asked. A command group's
`ext_oneapi_wait_external_semaphore(sem[, value])` makes the work submitted after it wait
on the device, and `ext_oneapi_signal_external_semaphore(sem[, value])` signals the
semaphore once the work submitted before it is done: each travels in the vkQueueSubmit
of that work (`Engine.external_semaphores`), so a frame goes compute -> render ->
compute with no wait on the host. vksycl never destroys the semaphore.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import Any

from ..exceptions import errc, exception
from .commands import Command, LowerContext, SemaphoreStep, Step
from .context import context, scheduler_for
from .devices import as_handle
from .platform import device


class semaphore_type(enum.Enum):
    """`syclexp.semaphore_type`: how the application created its VkSemaphore."""

    binary = 0
    timeline = 1


_SemaphoreType = semaphore_type  # for functions whose parameter has its name


class external_semaphore:
    """`syclexp.external_semaphore`: an application's VkSemaphore on a vksycl device,
    made by `make_external_semaphore`."""

    __slots__ = ("device", "handle", "released", "semaphore_type")

    def __init__(self, handle: int, kind: semaphore_type, dev: device) -> None:
        self.handle = handle
        self.semaphore_type = kind
        self.device = dev
        self.released = False

    def __repr__(self) -> str:
        return (f"<syclexp.external_semaphore {self.semaphore_type.name} VkSemaphore "
                f"{self.handle:#x}>")


def make_external_semaphore(semaphore: Any, *where: Any, semaphore_type: semaphore_type,
                            device: Any) -> external_semaphore:
    """An application's VkSemaphore (an integer or a `vulkan` package handle) for the
    queues of a device: given a queue, a device, or a device and a context.
    `semaphore_type` says whether the application created it binary or timeline, and
    `device` names the VkDevice it was created on, which must be the one the vksycl
    device works on: Vulkan can be asked neither."""
    handle = as_handle(semaphore, "semaphore")
    if not handle:
        raise exception(errc.invalid, "the semaphore is VK_NULL_HANDLE")
    if not isinstance(semaphore_type, _SemaphoreType):
        raise exception(errc.invalid, "semaphore_type is syclexp.semaphore_type.binary or "
                        f".timeline, not {semaphore_type!r}")
    dev = _device_of(where)
    vk_device = as_handle(device, "device")
    own = vk_device_of(dev)
    if vk_device != own:
        raise exception(errc.invalid, f"VkSemaphore {handle:#x} belongs to VkDevice "
                        f"{vk_device:#x}, not to VkDevice {own:#x} of {dev!r}, which would "
                        "wait for it or signal it")
    if not dev.vulkan.features.get("timelineSemaphore"):
        raise exception(errc.feature_not_supported, f"{dev!r} lacks the Vulkan feature "
                        "timelineSemaphore, which vksycl's submissions need to carry an "
                        "application's semaphores")
    return external_semaphore(handle, semaphore_type, dev)


def release_external_semaphore(sem: external_semaphore, *where: Any) -> None:
    """Ends vksycl's use of the semaphore (later commands naming it raise); the
    application destroys the VkSemaphore itself, once the work that uses it is done."""
    _check(sem, _device_of(where))
    sem.released = True


def vk_device_of(dev: device) -> int:
    """The VkDevice a device works on: the application's, or vksycl's own."""
    native = dev.vulkan.native
    return native.device if native is not None else scheduler_for(dev).engine.native_handles()[2]


def _device_of(where: tuple) -> device:
    """The device of a queue, a device, or a device and a context."""
    if len(where) == 1 and isinstance(where[0], device):
        return where[0]
    if len(where) == 1 and hasattr(where[0], "get_device"):
        return where[0].get_device()
    if len(where) == 2 and isinstance(where[0], device) and isinstance(where[1], context):
        if not where[1].has_device(where[0]):
            raise exception(errc.invalid, "the device is not in the context")
        return where[0]
    raise exception(errc.invalid, "expected a queue, a device, or a device and a context")


def live_handle(obj: Any, kind: type, made_by: str, dev: device, made: str) -> Any:
    """`obj`, checked to be a handle of `kind` (which `made_by` makes) that is not
    released and was `made` for `dev`, the device it is used on."""
    if not isinstance(obj, kind):
        raise exception(errc.invalid, f"expected a syclexp.{kind.__name__} ({made_by}), "
                        f"not {type(obj).__name__}")
    if obj.released:
        raise exception(errc.invalid, f"{obj!r} was released")
    if obj.device is not dev:
        raise exception(errc.invalid, f"{obj!r} was {made} for {obj.device!r}, not for "
                        f"{dev!r}")
    return obj


def _check(sem: Any, dev: device) -> external_semaphore:
    return live_handle(sem, external_semaphore, "syclexp.make_external_semaphore", dev,
                       "made")


@dataclass(eq=False)
class ExternalSemaphoreCommand(Command):
    """A wait for, or a signal of, an application's semaphore at `value` (0 for a binary
    one): no work of its own, semaphores carried by the submission of the work after
    (a wait) or before (a signal)."""

    semaphore: external_semaphore
    value: int
    signal: bool
    command_type: str = "ext_oneapi_wait_external_semaphore"

    def lower(self, ctx: LowerContext) -> list[Step]:
        if self.semaphore.released:
            raise exception(errc.invalid, f"{self.semaphore!r} was released")
        point = ((self.semaphore.handle, self.value),)
        return [SemaphoreStep(signals=point) if self.signal else SemaphoreStep(waits=point)]

    def for_graph(self) -> Command:
        raise _not_in_graphs(self.signal)


def _not_in_graphs(signal: bool) -> exception:
    what = "signals of" if signal else "waits for"
    return exception(errc.invalid, f"{what} external semaphores cannot be command_graph "
                     "nodes: submit them to the queue before and after "
                     "queue.ext_oneapi_graph(exec), whose submission carries them")


def semaphore_command(q: Any, sem: Any, value: Any, signal: bool) -> Command:
    """The command of `ext_oneapi_wait_external_semaphore` / `..._signal_...` in a
    command group for queue `q`, checked: the semaphore is of the queue's device, a
    timeline one has a value (greater than its current one, for a signal), a binary one
    none."""
    if getattr(q, "recording_graph", None) is not None:
        raise _not_in_graphs(signal)
    sem = _check(sem, q.get_device())
    verb = "signal" if signal else "wait for"
    if sem.semaphore_type is semaphore_type.binary:
        if value is not None:
            raise exception(errc.invalid, f"{sem!r} is binary: {verb} it without a value")
        point = 0
    else:
        if value is None:
            raise exception(errc.invalid, f"{sem!r} is a timeline: name the value to {verb}")
        try:
            point = operator.index(value)
        except TypeError:
            raise exception(errc.invalid, f"a timeline semaphore's value is an integer, not "
                            f"{type(value).__name__}") from None
        if not 0 <= point < 2**64:
            raise exception(errc.invalid, f"timeline value {point} is outside 0 .. 2**64-1")
        if signal:
            _check_rises(sem, point)
    command = ExternalSemaphoreCommand(sem, point, signal)
    if signal:
        command.command_type = "ext_oneapi_signal_external_semaphore"
    return command


def _check_rises(sem: external_semaphore, value: int) -> None:
    """A timeline signal must raise the semaphore's value (Vulkan leaves anything else
    undefined); what the device signalled so far is checked, not what is pending."""
    import vulkan as vk
    current = vk.vkGetSemaphoreCounterValue(vk.ffi.cast("VkDevice", vk_device_of(sem.device)),
                                            vk.ffi.cast("VkSemaphore", sem.handle))
    if value <= current:
        raise exception(errc.invalid, f"{sem!r} is at {current} already: a signal must "
                        f"raise it, {value} does not")
