"""Whether a burst of launches could submit pre-recorded dispatches rather than record
each one: a batch of N tiny dependent dispatches recorded into one command buffer (what
an open batch holds now: each launch records its barrier, push constants and dispatch,
about a microsecond of the launching thread on NVIDIA's driver) against the same N as
command buffers recorded once, one dispatch each, handed to one `vkQueueSubmit` (the same
command buffer N times, as a repeated launch would be, or N different ones, as an
argument ring's slots would be). Prints, per form, the host time of the submission call
(the recording not counted) and the device time per dispatch (timestamps in a command
buffer before and after the batch), the result checked. Raw Vulkan through the `vulkan`
package, on the device of `dependency_probe.py`.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/batch_probe.py
    .venv/bin/python benchmarks/gpu/batch_probe.py --sizes 64      # lavapipe
"""

from __future__ import annotations

import argparse
import statistics
import time

import vulkan as vk
from dependency_probe import COMPUTE, READ_WRITE, WRITE, Probe, kernel

import vksycl as sycl

_SIMULTANEOUS = vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT


class BatchProbe(Probe):
    def recorded(self, push: bytes, dispatches: int, stamp: int | None = None) -> object:
        """A command buffer of `dispatches` dispatches, each behind a barrier (covering
        earlier command buffers too), with a timestamp first (`stamp` 0, the query pool
        reset before it) or last (`stamp` 1)."""
        (cb,) = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=self.pool,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, flags=_SIMULTANEOUS))
        if stamp == 0:
            vk.vkCmdResetQueryPool(cb, self.queries, 0, 2)
            vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.queries, 0)
        if dispatches:
            vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.compute)
            vk.vkCmdPushConstants(cb, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                  len(push), vk.ffi.from_buffer(push))
        barrier = vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                     srcAccessMask=WRITE, dstAccessMask=READ_WRITE)
        for _ in range(dispatches):
            vk.vkCmdPipelineBarrier(cb, COMPUTE, COMPUTE, 0, 1, [barrier], 0, None, 0, None)
            vk.vkCmdDispatch(cb, 1, 1, 1)
        if stamp == 1:
            vk.vkCmdPipelineBarrier(cb, COMPUTE, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0,
                                    0, None, 0, None, 0, None)
            vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.queries, 1)
        vk.vkEndCommandBuffer(cb)
        return cb

    def submit(self, buffers: list) -> tuple[float, float]:
        """(host seconds in vkQueueSubmit, device seconds between the timestamps) of one
        submission of `buffers`."""
        info = vk.VkSubmitInfo(sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                               commandBufferCount=len(buffers), pCommandBuffers=buffers)
        t0 = time.perf_counter()
        vk.vkQueueSubmit(self.queue, 1, [info], self.fence)
        host = time.perf_counter() - t0
        vk.vkWaitForFences(self.device, 1, [self.fence], vk.VK_TRUE, 10**10)
        vk.vkResetFences(self.device, 1, [self.fence])
        stamps = vk.ffi.new("uint64_t[2]")
        vk.lib.vkGetQueryPoolResults(self.device, self.queries, 0, 2, 16, stamps, 8,
                                     vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        return host, (stamps[1] - stamps[0]) * self.period * 1e-9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[64, 512])
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    spirv, entry, push, slot = kernel()
    probe = BatchProbe(sycl.device().get_info(sycl.info.device.ext_vksycl_vulkan_index))
    probe.pipeline(spirv, entry, len(push))
    push = bytearray(push)
    push[slot: slot + 8] = probe.address.to_bytes(8, "little")
    first, last = probe.recorded(b"", 0, stamp=0), probe.recorded(b"", 0, stamp=1)
    print(f"device: {probe.name}; a batch of N dependent dispatches of 64 items; host µs "
          f"in vkQueueSubmit, device µs per dispatch; medians of {args.runs} runs")
    for n in args.sizes:
        one = probe.recorded(bytes(push), 1)
        forms = {"one command buffer of N dispatches": [probe.recorded(bytes(push), n)],
                 "one pre-recorded dispatch N times": [one] * n,
                 "N pre-recorded dispatches": [probe.recorded(bytes(push), 1)
                                               for _ in range(n)]}
        for form, buffers in forms.items():
            probe.view[:] = 0
            runs = [probe.submit([first, *buffers, last]) for _ in range(args.runs)]
            right = bool((probe.view == n * args.runs).all())
            host = statistics.median(r[0] for r in runs)
            device = statistics.median(r[1] for r in runs)
            print(f"N={n}, {form}: submit {host * 1e6:.1f} us ({host / n * 1e9:.0f} ns per "
                  f"dispatch), device {device / n * 1e6:.2f} us per dispatch, "
                  f"{'result right' if right else f'WRONG result {probe.view[0]}'}")


if __name__ == "__main__":
    main()
