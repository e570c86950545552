"""Do work-group-scope cooperative matrices (VK_NV_cooperative_matrix2) multiply faster
than the sub-group ones joint_matrix lowers to? Times fp16 GEMMs (fp32 accumulation)
whose A, B and C are single BMxBK, BKxBN and BMxBN matrices of the work-group, three ways,
against cuBLAS in the same process:

- `direct`: A and B loaded from global memory with OpCooperativeMatrixLoadKHR;
- `tensor`: the same through tensor layouts (OpCooperativeMatrixLoadTensorNV);
- `staged`: the work-group copies A and B tiles to local memory 16 bytes at a time
  (`p1`: rows padded by 16 bytes, `p0`: not) and loads the matrices from there.

glslang 13 (what pip installs) predates GL_NV_cooperative_matrix2, so each kernel is GLSL
with sub-group 16x16 matrices whose three types are rewritten to work-group scope and
the tile's sizes in the assembly (and, for `tensor`, each load to a tensor-layout load);
every module is validated before it runs.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/coopmat2_probe.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import spirv_gen
import vksycl as sycl
from vksycl import info
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.runtime.glsl import compile_glsl

_HEAD = """#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = WG) in;
layout(push_constant) uniform P { uint M; uint N; uint K; };
layout(std430, binding = 2) buffer C_ { float C[]; };
const uint BM = BM_, BN = BN_, BK = BK_, GROUP_M = 8, PAD = PAD_;
void main() {
  uint tilesM = M / BM, tilesN = N / BN, pid = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  uint per = GROUP_M * tilesN, first = (pid / per) * GROUP_M;
  uint rows = min(tilesM - first, GROUP_M);
  uint tm = first + (pid % per) % rows, tn = (pid % per) / rows;
  coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc =
      coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> a;
  coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> b;
  for (uint k = 0; k < K; k += BK) {
BODY
    acc = coopMatMulAdd(a, b, acc);
  }
  coopMatStore(acc, C, tm * BM * N + tn * BN, N, gl_CooperativeMatrixLayoutRowMajor);
}
"""
_DIRECT = """layout(std430, binding = 0) readonly buffer A_ { float16_t A[]; };
layout(std430, binding = 1) readonly buffer B_ { float16_t B[]; };
""", """    coopMatLoad(a, A, tm * BM * K + k, K, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b, B, k * N + tn * BN, N, gl_CooperativeMatrixLayoutRowMajor);"""
_STAGED = """layout(std430, binding = 0) readonly buffer A_ { uvec4 A4[]; };
layout(std430, binding = 1) readonly buffer B_ { uvec4 B4[]; };
const uint SA = BK_ / 8 + PAD_, SB = BN_ / 8 + PAD_;
shared uvec4 Ash[BM_ * SA];
shared uvec4 Bsh[BK_ * SB];
""", """    for (uint i = t; i < BM * BK / 8; i += WG) {
      uint r = i / (BK / 8), w = i % (BK / 8);
      Ash[r * SA + w] = A4[((tm * BM + r) * K + k) / 8 + w];
    }
    for (uint i = t; i < BK * BN / 8; i += WG) {
      uint r = i / (BN / 8), w = i % (BN / 8);
      Bsh[r * SB + w] = B4[((k + r) * N + tn * BN) / 8 + w];
    }
    barrier();
    coopMatLoad(a, Ash, 0, SA, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(b, Bsh, 0, SB, gl_CooperativeMatrixLayoutRowMajor);
    barrier();"""

# (way, BM, BN, BK, work-group size, padding in 16-byte words)
VARIANTS = [("direct", 128, 128, 32, 128, 0), ("direct", 128, 256, 32, 256, 0),
            ("direct", 128, 128, 32, 256, 0), ("tensor", 128, 128, 32, 128, 0),
            ("tensor", 128, 256, 32, 256, 0), ("staged", 128, 128, 32, 128, 1),
            ("staged", 128, 128, 64, 128, 1), ("staged", 128, 256, 64, 256, 1),
            ("staged", 128, 128, 64, 128, 0), ("staged", 128, 256, 64, 256, 0)]


def kernel(way: str, bm: int, bn: int, bk: int, wg: int, pad: int) -> bytes:
    """The work-group-scope module of one variant."""
    decl, body = _STAGED if way == "staged" else _DIRECT
    tensor = way == "tensor"
    src = _HEAD.replace("layout(push_constant)", decl + "layout(push_constant)", 1)
    src = src.replace("BODY", body)
    for key, value in (("BM_", bm), ("BN_", bn), ("BK_", bk), ("WG", wg), ("PAD_", pad)):
        src = src.replace(key, str(value))
    asm = spirv_gen.disassemble(compile_glsl(src), friendly=False)
    uint = re.search(r"(%\w+) = OpTypeInt 32 0", asm).group(1)
    sizes = {"0": ("%BM", "%BK"), "1": ("%BK", "%BN"), "2": ("%BM", "%BN")}
    constants = {m.group(1): m.group(2) for m in
                 re.finditer(r"(%\w+) = OpConstant %\w+ (\d+)", asm)}
    out, shapes = [], {}
    for line in asm.splitlines():
        m = re.match(r"\s*(%\w+) = OpTypeCooperativeMatrixKHR (%\w+) %\w+ %\w+ %\w+ (%\w+)", line)
        if m:
            if not shapes:
                out += [f"%BM = OpConstant {uint} {bm}", f"%BN = OpConstant {uint} {bn}",
                        f"%BK = OpConstant {uint} {bk}", f"%WGS = OpConstant {uint} 2",
                        f"%Z = OpConstant {uint} 0"]
                out += ["%TL = OpTypeTensorLayoutNV %WGS %Z"] if tensor else []
            shapes[m.group(1)] = sizes[constants[m.group(3)]]
            rows, cols = shapes[m.group(1)]
            line = f"{m.group(1)} = OpTypeCooperativeMatrixKHR {m.group(2)} %WGS {rows} " \
                   f"{cols} {m.group(3)}"
        elif '"SPV_KHR_cooperative_matrix"' in line:
            out += ['OpExtension "SPV_NV_cooperative_matrix2"']
            out += ['OpExtension "SPV_NV_tensor_addressing"'] if tensor else []
        elif "OpCapability CooperativeMatrixKHR" in line and tensor:
            out += ["OpCapability TensorAddressingNV",
                    "OpCapability CooperativeMatrixTensorAddressingNV"]
        elif re.match(r"\s*%\w+ = OpFunction ", line) and tensor:
            out += [f"%U{t[1:]} = OpUndef {t}" for t in shapes]
        m = re.match(r"\s*(%\w+) = OpCooperativeMatrixLoadKHR (%\w+) (%\w+) %\w+ (%\w+) None", line)
        if m and tensor:
            r, t, ptr, stride = m.groups()
            rows, cols = shapes[t]
            line = (f"{r}a = OpCreateTensorLayoutNV %TL\n"
                    f"{r}b = OpTensorLayoutSetDimensionNV %TL {r}a {rows} {stride}\n"
                    f"{r}c = OpTensorLayoutSliceNV %TL {r}b %Z {rows} %Z {cols}\n"
                    f"{r} = OpCooperativeMatrixLoadTensorNV {t} {ptr} %U{t[1:]} {r}c None None")
        out.append(line)
    binary = spirv_gen.assemble("\n".join(out) + "\n")
    spirv_gen.validate(binary, "vulkan1.1")
    return binary


def device_report(vk) -> bool:
    """Prints what the device offers of VK_NV_cooperative_matrix2; whether it has it."""
    if "VK_NV_cooperative_matrix2" not in vk.extensions:
        print(f"{vk.name} has no VK_NV_cooperative_matrix2: nothing to measure")
        return False
    print(f"{vk.name}: VK_NV_cooperative_matrix2 listed and enabled")
    return True


def torch_seconds(n: int, repeat: int) -> float:
    import torch
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(repeat + 3):
        s.record()
        torch.matmul(a, b)
        e.record()
        torch.cuda.synchronize()
        best = min(best, s.elapsed_time(e) * 1e-3)
    return best


def main(repeat: int = 10) -> int:
    q = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
    if not device_report(q.get_device().vulkan):
        return 0
    kernels = {}
    for v in VARIANTS:
        bundle = syclexp.create_kernel_bundle_from_source(
            q.get_context(), syclexp.source_language.spirv, kernel(*v))
        kernels[v] = syclexp.build(bundle).ext_oneapi_get_kernel("main")
    rng = np.random.default_rng(0)
    for n in (4096, 8192):
        flops = 2.0 * n ** 3
        ha = (rng.random((n, n), dtype=np.float32) * 2 - 1).astype(np.float16)
        hb = (rng.random((n, n), dtype=np.float32) * 2 - 1).astype(np.float16)
        rows = np.sort(rng.choice(n, 4, replace=False))
        want = ha[rows].astype(np.float32) @ hb.astype(np.float32)
        a, b = (sycl.malloc_device(n * n, sycl.float16, q) for _ in range(2))
        c = sycl.malloc_device(n * n, sycl.float32, q)
        q.copy(ha, a, n * n)
        q.copy(hb, b, n * n).wait()
        cublas = torch_seconds(n, repeat)
        print(f"\n{n}^3: cuBLAS (torch.matmul) {flops / cublas / 1e12:.1f} TFLOP/s")
        for (way, bm, bn, bk, wg, pad), kern in kernels.items():
            ndr = sycl.nd_range(((n // bm) * (n // bn) * wg,), (wg,))

            def cgf(h, kern=kern, ndr=ndr, args=(a, b, c, n, n, n)):
                h.set_args(*args)
                h.parallel_for(ndr, kern)

            q.submit(cgf).wait()
            best = float("inf")
            for _ in range(repeat):
                e = q.submit(cgf)
                e.wait()
                best = min(best, (e.get_profiling_info(info.event_profiling.command_end) -
                                  e.get_profiling_info(info.event_profiling.command_start)) * 1e-9)
            got = np.empty((n, n), np.float32)
            q.copy(c, got, n * n).wait()
            err = float(np.abs(got[rows] - want).max() / np.abs(want).max())
            name = f"{way} {bm}x{bn}x{bk} wg{wg}" + (f" p{pad}" if way == "staged" else "")
            verdict = "ok" if err < 1e-2 else "WRONG"
            print(f"  {name:28s} {flops / best / 1e12:7.1f} TFLOP/s  "
                  f"{cublas / best:.2f}x cuBLAS  max error {err:.1e} {verdict}", flush=True)
        for p in (a, b, c):
            sycl.free(p, q)
    return 0


if __name__ == "__main__":
    sys.exit(main())
