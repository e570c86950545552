"""What a work-group barrier's fence over global memory costs a tiled kernel: the module
vksycl compiles for the tiled fp32 matmul of `benchmarks/matmul.py` with
`group_barrier`'s fence (over global and local memory), and copies of it whose
barriers differ in one way each, run through the SPIR-V source path beside the same
algorithm in hand GLSL (`barrier()`, a fence over local memory alone), in one process:

- `group_barrier`: as compiled, OpControlBarrier Workgroup with AcquireRelease over
  UniformMemory and WorkgroupMemory;
- `local only`: the UniformMemory semantics dropped (what
  `it.barrier(sycl.access.fence_space.local_space)` compiles to);
- spellings that keep the global fence: an OpMemoryBarrier of it before or after a
  control barrier over local memory, release before and acquire after, the whole fence on
  an OpMemoryBarrier and none on the control barrier, and the Vulkan memory model with
  and without MakeAvailable / MakeVisible.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/fence_probe.py [--n 2048]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import kernels
import kernels_glsl
import matmul

import spirv_gen
import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.kernels.launch import compiled

FULL, LOCAL, GLOBAL = 0x148, 0x108, 0x48  # AcquireRelease over the memories
RELEASE_GLOBAL, ACQUIRE_GLOBAL = 0x44, 0x42
AVAILABLE_VISIBLE = 0x6000


def variants(asm: str) -> dict[str, str]:
    """The module's text with its barriers respelled, one way each."""
    barrier = f"OpControlBarrier %uint_2 %uint_2 %uint_{FULL}"
    assert barrier in asm, "the compiled tiled kernel no longer has the expected barrier"
    values = (LOCAL, GLOBAL, RELEASE_GLOBAL, ACQUIRE_GLOBAL, FULL | AVAILABLE_VISIBLE,
              LOCAL | AVAILABLE_VISIBLE, 0)
    consts = "".join(f"%uint_{v} = OpConstant %uint {v}\n" for v in values
                     if f"%uint_{v} = " not in asm)
    asm = asm.replace("%void = OpTypeVoid", consts + "%void = OpTypeVoid", 1)

    def spell(*lines: str) -> str:
        return asm.replace(barrier, "\n".join(lines))

    def vulkan_model(text: str) -> str:
        text = text.replace("OpMemoryModel PhysicalStorageBuffer64 GLSL450",
                            "OpMemoryModel PhysicalStorageBuffer64 Vulkan")
        text = text.replace("OpCapability Shader\n",
                            "OpCapability Shader\nOpCapability VulkanMemoryModel\n", 1)
        return text.replace("OpExtension", "OpExtension \"SPV_KHR_vulkan_memory_model\"\n"
                            "OpExtension", 1)

    control = "OpControlBarrier %uint_2 %uint_2 %uint_{}".format
    memory = "OpMemoryBarrier %uint_2 %uint_{}".format
    return {
        "group_barrier": asm,
        "local only": spell(control(LOCAL)),
        "fence before a local barrier": spell(memory(GLOBAL), control(LOCAL)),
        "fence after a local barrier": spell(control(LOCAL), memory(GLOBAL)),
        "release before, acquire after": spell(memory(RELEASE_GLOBAL), control(LOCAL),
                                               memory(ACQUIRE_GLOBAL)),
        "fence, then control only": spell(memory(FULL), control(0)),
        "Vulkan model": vulkan_model(asm),
        "Vulkan model, available/visible": vulkan_model(spell(control(
            FULL | AVAILABLE_VISIBLE))),
        "Vulkan model, local only": vulkan_model(spell(control(LOCAL | AVAILABLE_VISIBLE))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    n, q = args.n, sycl.queue()
    rng = np.random.default_rng(5)
    ha = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    hb = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    mem = kernels.Device(q)
    a, b, c = mem.array(ha), mem.array(hb), mem.empty((n, n), np.float32)
    ndr = sycl.nd_range((n, n), (matmul.TILE, matmul.TILE))
    ctx = q.get_context()

    def submit(kernel, args) -> None:
        q.submit(lambda h: (h.set_args(*args), h.parallel_for(ndr, kernel))).wait()

    glsl = syclexp.build(syclexp.create_kernel_bundle_from_source(
        ctx, syclexp.source_language.glsl, {"main": kernels_glsl.TILED_MATMUL})
    ).ext_oneapi_get_kernel("main")
    runs = {"hand GLSL (barrier())": lambda: submit(glsl, (a, b, c, np.int32(n)))}
    body = matmul.tiled_kernel(a, b, c, n, sycl.access.fence_space.global_and_local)
    asm = compiled(q.get_device(), body, ndr).spirv_asm()
    pointers = (np.int32(n), np.uint64(a.address), np.uint64(b.address),
                np.uint64(c.address))
    for name, text in variants(asm).items():
        binary = spirv_gen.assemble(text)
        spirv_gen.validate(binary)
        k = syclexp.build(syclexp.create_kernel_bundle_from_source(
            ctx, syclexp.source_language.spirv, binary)).ext_oneapi_get_kernel("body")
        runs[name] = lambda k=k: submit(k, pointers)
    want = ha[:4] @ hb
    for name, run in runs.items():  # each checked, and its pipeline made, before timing
        q.memset(c, 0, 4 * n * n).wait()
        run()
        np.testing.assert_allclose(mem.reader(c, (n, n), np.float32)()[:4], want,
                                   rtol=2e-3, atol=2e-3, err_msg=name)
    best: dict[str, float] = {}
    for _ in range(args.rounds):  # interleaved, so that drift spreads over all
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; tiled fp32 matmul "
          f"{n}^3, best of {args.rounds} launch + wait, results checked")
    ref = best["hand GLSL (barrier())"]
    for name, t in best.items():
        print(f"  {name:34s} {t * 1e3:8.3f} ms  {t / ref:5.2f}x the GLSL")


if __name__ == "__main__":
    main()
