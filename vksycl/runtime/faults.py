"""Faults on request at the engine's boundary with Kompute: the Nth allocation,
submission or blocking wait fails as the driver would fail it, so that tests reach the
runtime's error paths (out of memory, a lost device) on a device that never fails.

```python
from vksycl.runtime import faults

with faults.inject("submit", "ErrorOutOfDeviceMemory", at=2) as fault:
    ...                  # the second vkQueueSubmit from here on fails
assert fault.fired == 1
```

Kinds: `allocate` (a buffer's memory or a command buffer), `submit` (`vkQueueSubmit`, of
a command, a batch or a graph's segment) and `wait` (a wait that blocks for the device; a
wait that finds the work done never blocks). The error raised is the `RuntimeError`
Kompute raises, carrying the Vulkan result named (vulkan-hpp's spelling: `ErrorDeviceLost`,
`ErrorOutOfDeviceMemory`, `ErrorOutOfHostMemory`), so the engine handles it exactly as
a real one. While nothing is armed, the engine pays one test of the module flag `armed`
where such a call is made.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass

# how Kompute words the error of each kind of call (patch 0007 for allocations; vulkan-hpp
# for the others)
_MESSAGES = {
    "allocate": "Kompute Tensor memory allocation failed: {}",
    "submit": "vk::Queue::submit: {}",
    "wait": "vk::Device::waitSemaphores: {}",
}

armed = False  # some fault is armed: the engine's calls that can fail ask `check`
_faults: list[Fault] = []
_lock = threading.Lock()


@dataclass(eq=False)
class Fault:
    """Calls of `kind` number `at`, `at + 1`, ... fail with `result`, `times` of them in
    all (None: every one from `at` on)."""

    kind: str
    result: str
    at: int
    times: int | None
    calls: int = 0  # calls of this kind made while armed
    fired: int = 0  # of those, the ones that failed


@contextlib.contextmanager
def inject(kind: str, result: str = "ErrorOutOfDeviceMemory", at: int = 1,
           times: int | None = 1) -> Iterator[Fault]:
    """Arms a fault for the duration of the block; yields it, to count its calls."""
    global armed
    if kind not in _MESSAGES:
        raise ValueError(f"no fault of kind {kind!r}; kinds: {', '.join(_MESSAGES)}")
    if at < 1 or (times is not None and times < 1):
        raise ValueError("`at` and `times` count from 1")
    fault = Fault(kind, result, at, times)
    with _lock:
        _faults.append(fault)
        armed = True
    try:
        yield fault
    finally:
        with _lock:
            _faults.remove(fault)
            armed = bool(_faults)


def check(kind: str) -> None:
    """Raises Kompute's error if an armed fault takes this call of `kind`."""
    with _lock:
        for fault in _faults:
            if fault.kind != kind:
                continue
            fault.calls += 1
            if fault.calls >= fault.at and (fault.times is None or fault.fired < fault.times):
                fault.fired += 1
                raise RuntimeError(_MESSAGES[kind].format(fault.result))
