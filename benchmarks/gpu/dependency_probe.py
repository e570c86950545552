"""What a dependency between two dispatches costs the device, by the form it takes: a
chain of 100 tiny dependent dispatches (each adds 1 to the same 64 floats, vksycl's own
compiled kernel), pre-recorded in one command buffer with a pipeline barrier, a
synchronization2 barrier, an event set after each dispatch and waited for before the next
(`vkCmdSetEvent` / `vkCmdWaitEvents`, and their synchronization2 forms), or nothing
between them. Device time per dispatch from timestamps around the chain, the chain's
result checked after each form. Raw Vulkan through the `vulkan` package on a device of
its own, so no Kompute op stands between the form and the driver.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/dependency_probe.py
    .venv/bin/python benchmarks/gpu/dependency_probe.py      # lavapipe, to check it runs
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np
import vulkan as vk

import vksycl as sycl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eager_launch import bump_command

ITEMS = 64
CHAIN = 100
_SDA_USAGE = 0x00020000  # VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
_DEVICE_ADDRESS = 0x2  # VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT
COMPUTE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
COMPUTE2 = vk.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT
WRITE, READ_WRITE = vk.VK_ACCESS_SHADER_WRITE_BIT, \
    vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
WRITE2 = vk.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT
READ_WRITE2 = vk.VK_ACCESS_2_SHADER_STORAGE_READ_BIT | vk.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT

FORMS = ("pipeline barrier", "synchronization2 barrier", "events", "synchronization2 events",
         "nothing (results may be wrong)")


def kernel() -> tuple[bytes, str, bytes, int]:
    """vksycl's SPIR-V of `x[i] = x[i] + 1.0` over 64 items: (module, entry point, push
    constants, offset of the pointer in them)."""
    command, slot = bump_command(sycl.queue(), ITEMS)
    return command.spirv, command.entry, command.push_constants, slot


class Probe:
    """A device of its own with synchronization2 and device addresses, one buffer the
    chain adds into, and the kernel's pipeline."""

    def __init__(self, index: int) -> None:
        app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                   pApplicationName="probe", apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
        self.physical = vk.vkEnumeratePhysicalDevices(self.instance)[index]
        props = vk.vkGetPhysicalDeviceProperties(self.physical)
        self.name, self.period = props.deviceName, props.limits.timestampPeriod
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
        # a compute family without graphics where there is one, as vksycl submits to
        self.family = min((i for i, f in enumerate(families)
                           if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT and f.timestampValidBits),
                          key=lambda i: bool(families[i].queueFlags & vk.VK_QUEUE_GRAPHICS_BIT))
        f13 = vk.VkPhysicalDeviceVulkan13Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES, synchronization2=True)
        f12 = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, pNext=f13,
            bufferDeviceAddress=True)
        f2 = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                          pNext=f12,
                                          features=vk.VkPhysicalDeviceFeatures(shaderInt64=True))
        queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           queueFamilyIndex=self.family, queueCount=1,
                                           pQueuePriorities=[1.0])
        self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=f2, queueCreateInfoCount=1,
            pQueueCreateInfos=[queue]), None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=self.family),
            None)
        self.queries = vk.vkCreateQueryPool(self.device, vk.VkQueryPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2), None)
        self.fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
        self.events = [vk.vkCreateEvent(self.device, vk.VkEventCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_EVENT_CREATE_INFO), None) for _ in range(CHAIN)]
        self._buffer()

    def _buffer(self) -> None:
        """The 64 floats, in device-local host-visible memory where there is some."""
        self.buffer = vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=ITEMS * 4,
            usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | _SDA_USAGE,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        needs = vk.vkGetBufferMemoryRequirements(self.device, self.buffer)
        props = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        kinds = [i for i in range(props.memoryTypeCount) if needs.memoryTypeBits & (1 << i)
                 and props.memoryTypes[i].propertyFlags & host == host]
        kind = max(kinds, key=lambda i: bool(props.memoryTypes[i].propertyFlags
                                             & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
        flags = vk.VkMemoryAllocateFlagsInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO, flags=_DEVICE_ADDRESS)
        self.memory = vk.vkAllocateMemory(self.device, vk.VkMemoryAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, pNext=flags,
            allocationSize=needs.size, memoryTypeIndex=kind), None)
        vk.vkBindBufferMemory(self.device, self.buffer, self.memory, 0)
        self.view = np.frombuffer(vk.vkMapMemory(self.device, self.memory, 0, needs.size, 0),
                                  np.float32, count=ITEMS)
        info = vk.ffi.new("VkBufferDeviceAddressInfo*", {  # the package's wrapper returns `info`
            "sType": vk.VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, "buffer": self.buffer})
        self.address = vk.lib.vkGetBufferDeviceAddress(self.device, info)

    def pipeline(self, spirv: bytes, entry: str, push_size: int) -> None:
        module = vk.vkCreateShaderModule(self.device, vk.VkShaderModuleCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(spirv),
            pCode=spirv), None)
        push = vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                      size=push_size)
        self.layout = vk.vkCreatePipelineLayout(self.device, vk.VkPipelineLayoutCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, pushConstantRangeCount=1,
            pPushConstantRanges=[push]), None)
        stage = vk.VkPipelineShaderStageCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName=entry)
        (self.compute,) = vk.vkCreateComputePipelines(
            self.device, None, 1, [vk.VkComputePipelineCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage,
                layout=self.layout)], None)

    def chain(self, form: str, push: bytes) -> object:
        """One command buffer: timestamp, 100 dispatches with `form` between each two,
        timestamp."""
        (cb,) = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=self.pool,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO))
        vk.vkCmdResetQueryPool(cb, self.queries, 0, 2)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.compute)
        vk.vkCmdPushConstants(cb, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push),
                              vk.ffi.from_buffer(push))
        vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.queries, 0)
        barrier = vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                     srcAccessMask=WRITE, dstAccessMask=READ_WRITE)
        dependency = vk.VkDependencyInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEPENDENCY_INFO, memoryBarrierCount=1,
            pMemoryBarriers=[vk.VkMemoryBarrier2(
                sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER_2, srcStageMask=COMPUTE2,
                srcAccessMask=WRITE2, dstStageMask=COMPUTE2, dstAccessMask=READ_WRITE2)])
        for k in range(CHAIN):
            if k and form == "pipeline barrier":
                vk.vkCmdPipelineBarrier(cb, COMPUTE, COMPUTE, 0, 1, [barrier], 0, None, 0, None)
            elif k and form == "synchronization2 barrier":
                vk.vkCmdPipelineBarrier2(cb, dependency)
            elif k and form == "events":
                vk.vkCmdWaitEvents(cb, 1, [self.events[k - 1]], COMPUTE, COMPUTE, 1, [barrier],
                                   0, None, 0, None)
            elif k and form == "synchronization2 events":
                vk.vkCmdWaitEvents2(cb, 1, [self.events[k - 1]], [dependency])
            vk.vkCmdDispatch(cb, 1, 1, 1)
            if k < CHAIN - 1 and form == "events":
                vk.vkCmdSetEvent(cb, self.events[k], COMPUTE)
            elif k < CHAIN - 1 and form == "synchronization2 events":
                vk.vkCmdSetEvent2(cb, self.events[k], dependency)
        vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.queries, 1)
        if form in ("events", "synchronization2 events"):
            for ev in self.events[:-1]:
                vk.vkCmdResetEvent(cb, ev, COMPUTE)
        vk.vkEndCommandBuffer(cb)
        return cb

    def run(self, cb: object) -> float:
        """Submits `cb`, waits, and returns its device time in seconds."""
        vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1,
            pCommandBuffers=[cb])], self.fence)
        vk.vkWaitForFences(self.device, 1, [self.fence], vk.VK_TRUE, 10**10)
        vk.vkResetFences(self.device, 1, [self.fence])
        stamps = vk.ffi.new("uint64_t[2]")
        vk.lib.vkGetQueryPoolResults(self.device, self.queries, 0, 2, 16, stamps, 8,
                                     vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        begin, end = stamps[0], stamps[1]
        return (end - begin) * self.period * 1e-9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    spirv, entry, push, slot = kernel()
    index = sycl.device().get_info(sycl.info.device.ext_vksycl_vulkan_index)
    probe = Probe(index)
    probe.pipeline(spirv, entry, len(push))
    push = bytearray(push)
    push[slot: slot + 8] = probe.address.to_bytes(8, "little")
    print(f"device: {probe.name}; {CHAIN} dependent dispatches of {ITEMS} items in one "
          "command buffer; device time per dispatch (timestamps), median of "
          f"{args.runs} runs")
    for form in FORMS:
        cb = probe.chain(form, bytes(push))
        probe.view[:] = 0
        times = [probe.run(cb) for _ in range(args.runs)]
        right = bool((probe.view == CHAIN * args.runs).all())
        print(f"{form}: {statistics.median(times) / CHAIN * 1e6:.2f} us per dispatch "
              f"(min {min(times) / CHAIN * 1e6:.2f}), "
              f"{'result right' if right else f'WRONG result {probe.view[0]}'}")


if __name__ == "__main__":
    main()
