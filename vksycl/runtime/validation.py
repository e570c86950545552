"""The Khronos validation layer, on request, for development and CI.

`VKSYCL_VALIDATE=1` (read when vksycl is imported) makes every Vulkan instance vksycl
creates load `VK_LAYER_KHRONOS_validation` with synchronization validation on: the
devices' Kompute managers (patch 0018) and the instance that discovers devices. The
layer's warnings and errors are written to stderr as they happen and kept until
`take_messages()` takes them; `VKSYCL_VALIDATE_LOG=path` also appends those a process
never took to that file when it exits, so a test harness sees what its subprocesses
met. Without the switch nothing loads the layer, even where it is installed: it slows
every Vulkan call.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..exceptions import errc, exception

ENV = "VKSYCL_VALIDATE"
LOG_ENV = "VKSYCL_VALIDATE_LOG"
LAYER = "VK_LAYER_KHRONOS_validation"
INSTALL_HINT = "install it (Debian: apt-get install vulkan-validationlayers)"

_lock = threading.Lock()
_messages: list[str] = []  # those of the discovery instance, not yet taken
# where the devices' messages wait: the engine's Kompute binding, registered on import
_sources: list[Callable[[], list[str]]] = []


def requested() -> bool:
    """Whether `VKSYCL_VALIDATE` asks for the layer."""
    raw = os.environ.get(ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise exception(errc.invalid, f"{ENV} must be 1 or 0, got {raw!r}")


def record(message: str) -> None:
    """Keeps a message of an instance vksycl created in Python, and echoes it."""
    print(f"Vulkan validation {message}", file=sys.stderr, flush=True)
    with _lock:
        _messages.append(message)


def add_source(take: Callable[[], list[str]]) -> None:
    """Registers where more instances keep their messages (the devices' managers)."""
    _sources.append(take)


def take_messages() -> list[str]:
    """The validation warnings and errors since the last call, in order of their
    instance: device discovery's, then the devices'."""
    with _lock:
        taken = _messages[:]
        _messages.clear()
    for take in _sources:
        taken += take()
    return taken


def debug_messenger_info(vk: Any) -> Any:
    """A `VkDebugUtilsMessengerCreateInfoEXT` (of the `vulkan` package) whose callback
    records warnings and errors, for an instance's pNext chain and its messenger."""
    def callback(severity: int, types: int, data: Any, user: Any) -> int:
        kind = "error" if severity >= vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT \
            else "warning"
        record(f"{kind}: {vk.ffi.string(data.pMessage).decode(errors='replace')}")
        return vk.VK_FALSE
    return vk.VkDebugUtilsMessengerCreateInfoEXT(
        messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
        | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
        | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        pfnUserCallback=callback)


def instance_chain(vk: Any, messenger: Any) -> tuple[Any, list[str], list[str]]:
    """The pNext chain, layers and extensions of a validated instance: synchronization
    validation on, the messenger reporting instance creation too. Raises when the layer
    is not installed."""
    layers = {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}
    if LAYER not in layers:
        raise exception(errc.runtime, f"{ENV} asks for the Khronos validation layer "
                        f"({LAYER}), which is not installed: {INSTALL_HINT}")
    features = vk.ffi.new("VkValidationFeatureEnableEXT[1]",
                          [vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT])
    chain = vk.ffi.new("VkValidationFeaturesEXT*", {
        "sType": vk.VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        "pNext": vk.ffi.addressof(messenger),
        "enabledValidationFeatureCount": 1, "pEnabledValidationFeatures": features})
    _keep.append(features)
    return chain, [LAYER], [vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME]


_keep: list[Any] = []  # cffi memory a chain points into, alive as long as the process


def _append_untaken(path: str) -> None:
    """Appends the messages this process never took to `path`."""
    untaken = take_messages()
    if untaken:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(f"[pid {os.getpid()}] {m}\n" for m in untaken)


if requested() and os.environ.get(LOG_ENV):
    atexit.register(_append_untaken, os.environ[LOG_ENV])
