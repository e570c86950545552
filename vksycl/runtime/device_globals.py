"""The device-global database: where each device_global variable's value lives.

It is built from the metadata kernels record (the "SYCL/device globals" property set:
unique id, size, host_access, device_image_scope) and from the same facts a host copy
passes; it never sees the Python declaration, so a kernel loaded from the disk cache in a
new process finds its variables.

- A variable without `device_image_scope` has one zero-initialised allocation per device,
  made the first time a kernel or a copy needs it, shared by every kernel and bundle.
- A variable with `device_image_scope` has one instance per device image. A device image
  is an executable kernel bundle (its instances are made when the bundle is, and freed
  with it), or the device's default image, which holds the kernels launched without a
  bundle (its instance is made at the first such launch). A copy to or from a variable
  that more than one image on the device holds raises `errc.invalid`; one that no image
  holds yet reads and writes the host instance, whose bytes start the first image's
  instance once the copies enqueued into it have run (so a copy before the first launch
  is what the kernel sees, even one still waiting for its dependencies).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from ..exceptions import errc, exception
from . import memops
from .context import scheduler_for
from .usm import Allocation

_lock = threading.RLock()
_sizes: dict[str, int] = {}  # unique id -> size, to catch two declarations disagreeing
_shared: dict[tuple[Any, str], Allocation] = {}  # (scheduler, unique id)
_host: dict[str, np.ndarray] = {}  # image-scope variables no image holds yet
_host_writes: dict[str, list[Any]] = {}  # the events of copies into those, not yet seen
# image -> {(scheduler, unique id): its instance}; bundles drop out when collected
_images: weakref.WeakKeyDictionary[Any, dict[tuple[Any, str], Allocation]] = \
    weakref.WeakKeyDictionary()


class DefaultImage:
    """The device image of the kernels a device runs without a kernel bundle."""

    __slots__ = ("__weakref__", "scheduler")

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler

    def __repr__(self) -> str:
        return "the default device image"


_defaults: dict[Any, DefaultImage] = {}


def _default(scheduler: Any) -> DefaultImage:
    image = _defaults.get(scheduler)
    if image is None:
        image = _defaults[scheduler] = DefaultImage(scheduler)
    return image


def _check_size(entry: dict[str, Any]) -> None:
    uid, size = entry["unique_id"], entry["size"]
    known = _sizes.setdefault(uid, size)
    if known != size:
        raise exception(errc.invalid, f"device_global {uid} is {size} bytes here and "
                        f"{known} bytes in another kernel or copy")


def _instance(image: Any, device: Any, scheduler: Any, entry: dict[str, Any]) -> Allocation:
    """The instance of an image-scope variable in `image`, made on first use."""
    key = (scheduler, entry["unique_id"])
    instances = _images.get(image)
    if instances is None:
        instances = _images[image] = {}
        # at exit the process ends with the device: nothing to give back
        weakref.finalize(image, _free, instances).atexit = False
    a = instances.get(key)
    if a is None:
        _check_size(entry)
        a = instances[key] = memops.initialized_allocation(
            device, scheduler, _host.get(key[1]), entry["size"])
    return a


def _free(instances: dict[tuple[Any, str], Allocation]) -> None:
    for a in instances.values():
        a.free()


def host_written(unique_id: str, ev: Any) -> None:
    """A copy into the host instance of `unique_id` was enqueued as `ev`: the first image
    instance made from the host instance waits for it."""
    with _lock:
        _host_writes.setdefault(unique_id, []).append(ev)


def _settle(unique_id: str) -> None:
    """Waits (outside the lock: the copies may wait on work that launches kernels) for the
    enqueued copies into a host instance, so a new image instance starts from them."""
    with _lock:
        pending = _host_writes.pop(unique_id, [])
    for ev in pending:
        ev.wait()  # its errors are its own event's to report


def address(device: Any, entry: dict[str, Any], image: Any = None) -> int:
    """The device address a kernel of `image` (None: the default image) on `device` reaches
    the variable of this metadata entry at (made on first use; later launches only look
    it up, without the lock)."""
    scheduler = scheduler_for(device)
    key = (scheduler, entry["unique_id"])
    if entry["device_image_scope"]:
        owner = image if image is not None else _default(scheduler)
        instances = _images.get(owner)
        a = instances.get(key) if instances is not None else None
        if a is None:
            _settle(entry["unique_id"])
            with _lock:
                a = _instance(owner, device, scheduler, entry)
    else:
        a = _shared.get(key)
        if a is None:
            with _lock:
                a = _shared_allocation(device, scheduler, entry)
    return a.address


def add_image(image: Any, device: Any, entries: list[dict[str, Any]]) -> None:
    """Makes the instances of the image-scope variables a device image's kernels use (a
    bundle, when it becomes executable)."""
    scheduler = scheduler_for(device)
    scoped = [e for e in entries if e["device_image_scope"]]
    for entry in scoped:
        _settle(entry["unique_id"])
    with _lock:
        for entry in scoped:
            _instance(image, device, scheduler, entry)


def holders(device: Any, unique_id: str) -> list[Any]:
    """The device images on `device` that hold an instance of an image-scope variable."""
    key = (scheduler_for(device), unique_id)
    with _lock:
        return [image for image, instances in list(_images.items()) if key in instances]


def span(queue: Any, meta: dict[str, Any], offset: int, nbytes: int, what: str,
         writing: bool) -> memops.Span:
    """The checked bytes of a host copy to (`writing`) or from a device_global: host
    access, bounds and the image rules are checked before anything is made or enqueued."""
    uid, size = meta["unique_id"], meta["size"]
    if queue.recording_graph is not None:
        raise exception(errc.invalid, f"{what}: copies to and from device_global {uid} "
                        "cannot be recorded in a command_graph")
    access = meta["host_access"]
    if access == "none" or (access == "read" and writing) or (access == "write" and
                                                              not writing):
        verb = "write" if writing else "read"
        raise exception(errc.invalid, f"{what}: device_global {uid} (declared at "
                        f"{meta['site']}) has host_access_{access}: the host cannot {verb} it")
    if offset < 0 or nbytes < 0 or offset + nbytes > size:
        raise exception(errc.invalid, f"{what}: {nbytes} bytes at byte {offset} overrun "
                        f"device_global {uid} of {size} bytes")
    device = queue.get_device()
    scheduler = scheduler_for(device)
    with _lock:
        _check_size(meta)
        if not meta["device_image_scope"]:
            return memops.Span(_shared_allocation(device, scheduler, meta), None, offset,
                               nbytes)
        images = holders(device, uid)
        if len(images) > 1:
            raise exception(errc.invalid, f"{what}: device_global {uid} has "
                            f"device_image_scope and {len(images)} device images on this "
                            f"device hold it ({', '.join(map(repr, images))}); copies need "
                            "exactly one")
        if images:
            return memops.Span(_images[images[0]][(scheduler, uid)], None, offset, nbytes)
        host = _host.get(uid)
        if host is None:
            host = _host[uid] = np.zeros(size, np.uint8)
        return memops.Span(None, host, offset, nbytes)


def _shared_allocation(device: Any, scheduler: Any, meta: dict[str, Any]) -> Allocation:
    a = _shared.get((scheduler, meta["unique_id"]))
    if a is None:
        _check_size(meta)
        a = _shared[(scheduler, meta["unique_id"])] = memops.initialized_allocation(
            device, scheduler, None, meta["size"])
    return a


__all__ = ["DefaultImage", "add_image", "address", "holders", "host_written", "span"]
