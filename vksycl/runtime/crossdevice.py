"""Copies between the USM of two devices of one context, staged through host memory.

Each device is a Vulkan logical device of its own, which reaches only memory allocated
through it, so no kernel of one device can copy the other's memory. A `memcpy` on a queue
whose one side is USM of the queue's device and whose other is device USM of another
device therefore moves the bytes through the host: the other device copies between its
memory and a host-visible chunk of its own, the host copies between that chunk and the
queue's device's staging buffers, and the queue's device copies between those and its
memory, window by window, so the queue's device copies one window while the host moves
the next. Host and shared USM of another device is host memory to the queue's device:
`memops.resolve` hands it over as such.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .commands import Command, HostStep, LowerContext, Step
from .context import scheduler_for
from .memops import MemCopy, Span, copy_dispatches, through_staging
from .usm import other_device


def copy_command(src: Span, dst: Span, queue: Any) -> Command:
    """The command of a memcpy between two checked sides (`memops.resolve` with
    `cross_device`): a plain copy on the queue's device, or a copy through the host where
    one side is device USM of another device and the other is USM of the queue's device.
    Any other use of another device's memory is errc.invalid."""
    dev = queue.get_device()
    far = [s for s in (src, dst) if s.allocation is not None and
           s.allocation.device is not dev and s.allocation.device != dev]
    if not far:
        return MemCopy(src, dst)
    near = dst if far[0] is src else src
    if len(far) == 2 or near.allocation is None:
        side = "memcpy source" if far[0] is src else "memcpy destination"
        raise other_device(side, far[0].allocation, dev, "a copy between two devices has "
                           "USM of the queue's device on its other side; this copy belongs "
                           "on a queue of the memory's device")
    return CrossDeviceCopy(src, dst, far[0])


class CrossDeviceCopy(Command):
    """n bytes between USM of the queue's device (`near`) and device USM of another
    device of the context (`far`), through host memory."""

    command_type = "memcpy"

    def __init__(self, src: Span, dst: Span, far: Span) -> None:
        self.src, self.dst, self.far = src, dst, far
        self.near = dst if far is src else src
        # device memory of the queue's device goes through its staging buffers
        self.needs_staging = self.near.host_view() is None

    def lower(self, ctx: LowerContext) -> list[Step]:
        far, near = self.far, self.near
        if far.nbytes == 0:
            return []
        to_far = far is self.dst
        view = near.host_view()
        if view is not None:  # host-visible memory of the queue's device: no staging
            return [HostStep(lambda: far_copy(far, 0, view, to_far))]
        return through_staging(ctx, near, lambda stage, at, n: far_copy(
            far, at, stage.host[:n], to_far), upload=not to_far)


def far_copy(far: Span, at: int, host: np.ndarray, to_far: bool) -> None:
    """Moves `host.nbytes` bytes between a host view and the other device's memory from
    byte `at` of `far` (into it when `to_far`), through a host-visible chunk of that
    device at most a staging window long; returns once that device's copies are done."""
    sched = scheduler_for(far.allocation.device)
    engine, allocator = sched.engine, sched.allocators[True]
    window = min(host.nbytes, sched.staging_bytes)
    chunk = allocator.allocate(window)
    try:
        stage = chunk.block.buffer.host[chunk.offset: chunk.offset + window]
        for done in range(0, host.nbytes, window):
            n = min(window, host.nbytes - done)
            ends = (chunk.address, far.address + at + done)
            if to_far:
                np.copyto(stage[:n], host[done: done + n])
            sub = engine.submit(copy_dispatches(engine, *(ends if to_far else ends[::-1]), n))
            sub.wait()
            if sub.error is not None:
                raise sub.error
            if not to_far:
                np.copyto(host[done: done + n], stage[:n])
    finally:
        allocator.free(chunk)
