"""The ceiling a Python kernel's GEMM can aim at on a device's Vulkan driver: fp16 GEMM on
VK_KHR_cooperative_matrix with hand-written GLSL compute shaders (the technique of
examples/matrix_gemm.py, and variants changing one parameter each), launched through
vksycl's kernels-from-source path (syclexp, GLSL -> glslang -> SPIR-V, storage buffers
bound from USM pointers, dims as push constants).

C[M,N] = A[M,K] @ B[K,N]; A, B fp16 row-major, fp32 accumulation, C fp32 (or fp16,
--out f16) row-major. Technique: a BM x BN work-group tile, BK-deep k steps; A and B
tiles go global -> registers (16-byte uvec4 loads) -> shared memory (uvec4 stores, rows
padded by PAD halves so that the 8-row ldmatrix-style fragment loads hit distinct banks);
the next k tile is loaded into registers while the subgroups multiply the current shared
tile (STAGES=2: stored into the other shared buffer, one barrier per k step; STAGES=1:
one shared buffer, two barriers). Each subgroup (32 lanes on NVIDIA) keeps FM x FN 16x16
fp32 accumulators over the whole k loop and reads its A / B fragments from shared memory
with coopMatLoad. Work-groups run in GROUP_M-row bands of tiles for L2 reuse.

    python3 benchmarks/matmul_glsl.py --n 4096 8192 --repeat 5 --variants all
    python3 benchmarks/matmul_glsl.py --compile-only
    options: --out f32|f16|both   --const-dims (M, N, K baked in as constants)
             --example (examples/matrix_gemm.py on the same matrices, as a ratio)
             --group-m 8   --list   --variants ablation | addressing | NAME,...

`--variants addressing` reads A and B through storage buffers, through device addresses
as indexed readonly buffer references, and through 64-bit address arithmetic per load
(what vksycl's Python kernels emit), with 8- and 16-byte copies.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from string import Template

import numpy as np

from spirv_gen import disassemble

# ---------------------------------------------------------------------------------------
# the shader
# ---------------------------------------------------------------------------------------
SHADER = Template(r"""#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
$ADDRESS_EXT
// variant $NAME: work-group tile ${BM}x${BN}, BK=$BK, ${WM}x${WN} subgroups of
// ${WTM}x${WTN} (${FM}x${FN} fragments of 16x16), $STAGES shared stage(s), $OUT out$NOTE
layout(local_size_x = $NT, local_size_y = 1, local_size_z = 1) in;

const uint BM = $BM, BN = $BN, BK = $BK;
const uint WN = $WN;
const uint FM = $FM, FN = $FN;   // 16x16 accumulators per subgroup along M and N
const uint NT = $NT;             // invocations per work-group
const uint SA = $SA;             // shared row stride of the A tile, in $VT ($HV halves)
const uint SB = $SB;             // shared row stride of the B tile, in $VT
const uint LA = $LA, LB = $LB;   // $VT each invocation moves per k tile, of A and of B
const uint STAGES = $STAGES;
const uint GROUP_M = $GROUP_M;

$BUFFERS
layout(std430, binding = $C_BINDING) buffer BufC { $CTYPE C[]; };   // M x N
$DIMS

shared $VT Ash[STAGES * BM * SA];
shared $VT Bsh[STAGES * BK * SB];

void main() {
    const uint tilesM = M / BM, tilesN = N / BN;
    const uint K${V} = K / $HV, N${V} = N / $HV;

    // work-group -> output tile, GROUP_M tile rows at a time (neighbours share B in L2)
    const uint pid = gl_WorkGroupID.x;
    uint tm, tn;
    if (GROUP_M > 1) {
        const uint per = GROUP_M * tilesN;
        const uint first = (pid / per) * GROUP_M;
        const uint rows = min(tilesM - first, GROUP_M);
        tm = first + (pid % per) % rows;
        tn = (pid % per) / rows;
    } else {
        tm = pid / tilesN;
        tn = pid % tilesN;
    }
    const uint m0 = tm * BM, n0 = tn * BN;

    const uint tid = gl_LocalInvocationIndex;
    const uint sg = gl_SubgroupID;
    const uint wm = sg / WN, wn = sg % WN;

    // each invocation moves the same column of $VT in rows tid/(BK/$HV) + j*AR
    const uint AC = BK / $HV, BC = BN / $HV;     // $VT per tile row
    const uint AR = NT / AC, BR = NT / BC;   // tile rows one pass of the work-group covers
    const uint aRow = tid / AC, aCol = tid % AC;
    const uint bRow = tid / BC, bCol = tid % BC;
    const uint aG = (m0 + aRow) * K${V} + aCol;
    const uint bG = bRow * N${V} + n0 / $HV + bCol;
    const uint aS = aRow * SA + aCol;
    const uint bS = bRow * SB + bCol;

    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> acc[FM * FN];
    [[unroll]] for (uint i = 0; i < FM * FN; ++i)
        acc[i] = coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(0.0);

    $VT ra[LA];
    $VT rb[LB];
$PROLOGUE
    const uint KT = K / BK;
    for (uint kt = 0; kt < KT; ++kt) {
$KHEAD
        // this k tile: shared -> fragments -> multiply-add
        const uint aBase = cur * (BM * SA) + wm * (FM * 16) * SA;
        const uint bBase = cur * (BK * SB) + wn * (FN * 16) / $HV;
        [[unroll]] for (uint kk = 0; kk < BK / 16; ++kk) {
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA> fa[FM];
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB> fb[FN];
            [[unroll]] for (uint i = 0; i < FM; ++i)
                coopMatLoad(fa[i], Ash, aBase + i * 16 * SA + kk * $FU, SA,
                            gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint j = 0; j < FN; ++j)
                coopMatLoad(fb[j], Bsh, bBase + kk * 16 * SB + j * $FU, SB,
                            gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint i = 0; i < FM; ++i)
                [[unroll]] for (uint j = 0; j < FN; ++j)
                    acc[i * FN + j] = coopMatMulAdd(fa[i], fb[j], acc[i * FN + j]);
        }
$KTAIL
    }

    // epilogue: fragments straight to global memory
    [[unroll]] for (uint i = 0; i < FM; ++i) {
        [[unroll]] for (uint j = 0; j < FN; ++j) {
            const uint row = m0 + wm * (FM * 16) + i * 16;
            const uint col = n0 + wn * (FN * 16) + j * 16;
$STORE
        }
    }
}
""")

# k-loop phases. prefetch: the next k tile's global loads go into registers before the
# multiply and are stored to shared after it (the shared tile is filled in a prologue);
# no prefetch: each k step loads global -> registers -> shared, barrier, multiply, barrier,
# so that no load is in flight while the tensor cores work. ${V}, $HV: the copy unit.
PROLOGUE_PF = Template("""
    // prologue: k tile 0 into stage 0
    [[unroll]] for (uint j = 0; j < LA; ++j) ra[j] = LOAD_A(aG + j * AR * K${V});
    [[unroll]] for (uint j = 0; j < LB; ++j) rb[j] = LOAD_B(bG + j * BR * N${V});
    [[unroll]] for (uint j = 0; j < LA; ++j) Ash[aS + j * AR * SA] = ra[j];
    [[unroll]] for (uint j = 0; j < LB; ++j) Bsh[bS + j * BR * SB] = rb[j];
    barrier();
""")
KHEAD_PF = Template("""\
        const uint cur = (STAGES == 2) ? (kt & 1u) : 0u;
        const bool more = kt + 1 < KT;
        // the next k tile: global -> registers, in flight while the tensor cores work
        if (more) {
            const uint k0 = (kt + 1) * BK;
            [[unroll]] for (uint j = 0; j < LA; ++j) ra[j] = LOAD_A(aG + j * AR * K${V} + k0 / $HV);
            [[unroll]] for (uint j = 0; j < LB; ++j) rb[j] = LOAD_B(bG + (k0 + j * BR) * N${V});
        }""")
KTAIL_PF = Template("""\
        if (STAGES == 1)
            barrier();   // everyone is done reading the one stage before it is overwritten
        if (more) {
            const uint nxt = (STAGES == 2) ? (cur ^ 1u) : 0u;
            [[unroll]] for (uint j = 0; j < LA; ++j)
                Ash[nxt * (BM * SA) + aS + j * AR * SA] = ra[j];
            [[unroll]] for (uint j = 0; j < LB; ++j)
                Bsh[nxt * (BK * SB) + bS + j * BR * SB] = rb[j];
        }
        barrier();""")
KHEAD_NOPF = Template("""\
        const uint cur = 0u;
        // this k tile: global -> registers -> shared; nothing in flight during the multiply
        const uint k0 = kt * BK;
        [[unroll]] for (uint j = 0; j < LA; ++j) ra[j] = LOAD_A(aG + j * AR * K${V} + k0 / $HV);
        [[unroll]] for (uint j = 0; j < LB; ++j) rb[j] = LOAD_B(bG + (k0 + j * BR) * N${V});
        [[unroll]] for (uint j = 0; j < LA; ++j) Ash[aS + j * AR * SA] = ra[j];
        [[unroll]] for (uint j = 0; j < LB; ++j) Bsh[bS + j * BR * SB] = rb[j];
        barrier();""")
KTAIL_NOPF = Template("""\
        barrier();   // everyone is done reading the tile before the next one is stored""")

STORE_F32 = """\
            coopMatStore(acc[i * FN + j], C, row * N + col, N,
                         gl_CooperativeMatrixLayoutRowMajor);"""
STORE_F16 = """\
            coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> h =
                coopmat<float16_t, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>(
                    acc[i * FN + j]);
            coopMatStore(h, C, row * N + col, N, gl_CooperativeMatrixLayoutRowMajor);"""
DIMS_PUSH = "layout(push_constant) uniform Dims { $POINTERS uint M; uint N; uint K; };"
DIMS_CONST = "const uint M = {M}, N = {N}, K = {K};"
POINTERS_PUSH = "layout(push_constant) uniform Pointers { $POINTERS };"

# How A and B are read: storage buffers bound to the kernel (`ssbo`), or device addresses
# passed as push constants (what vksycl's Python kernels receive): an indexed readonly
# buffer reference (`ref`), or an element pointer made from 64-bit address arithmetic at
# each load, as the Python kernels emit (`addr`).
_ADDRESS_EXT = """\
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
"""
ADDRESSING = {
    "ssbo": ("", """\
layout(std430, binding = 0) readonly buffer BufA { $VT A${V}[]; };   // M x K halves
layout(std430, binding = 1) readonly buffer BufB { $VT B${V}[]; };   // K x N halves
#define LOAD_A(i) A${V}[i]
#define LOAD_B(i) B${V}[i]"""),
    "ref": (_ADDRESS_EXT, """\
layout(buffer_reference, std430, buffer_reference_align = $BYTES) readonly buffer Rows {
    $VT v[]; };
#define LOAD_A(i) Rows(pa).v[i]
#define LOAD_B(i) Rows(pb).v[i]"""),
    "addr": (_ADDRESS_EXT, """\
layout(buffer_reference, std430, buffer_reference_align = $BYTES) buffer Unit { $VT v; };
#define LOAD_A(i) Unit(pa + uint64_t(int(i)) * ${BYTES}ul).v
#define LOAD_B(i) Unit(pb + uint64_t(int(i)) * ${BYTES}ul).v"""),
}


@dataclass(frozen=True)
class Variant:
    bm: int
    bn: int
    bk: int
    wm: int      # subgroups along M
    wn: int      # subgroups along N
    stages: int  # shared-memory stages: 2 (double buffer) or 1
    pad: int = 8  # halves added to each shared row (16 bytes)
    vec: int = 4  # copy unit: uvec4 (16 bytes) or uvec2 (8 bytes) loads and stores
    prefetch: bool = True  # next k tile's global loads in flight during the multiply
    addressing: str = "ssbo"  # how A and B are read (ADDRESSING)

    @property
    def name(self) -> str:
        return (f"t{self.bm}x{self.bn}_k{self.bk}_w{self.wm}x{self.wn}_s{self.stages}"
                + ("" if self.vec == 4 else f"_v{self.vec}")
                + ("" if self.prefetch else "_nopf")
                + ("" if self.pad == 8 else f"_pad{self.pad}")
                + ("" if self.addressing == "ssbo" else f"_{self.addressing}"))

    @property
    def hv(self) -> int:
        """halves per copy unit"""
        return 2 * self.vec

    @property
    def threads(self) -> int:
        return self.wm * self.wn * 32

    @property
    def fm(self) -> int:
        return self.bm // (self.wm * 16)

    @property
    def fn(self) -> int:
        return self.bn // (self.wn * 16)

    @property
    def sa(self) -> int:
        return (self.bk + self.pad) // self.hv

    @property
    def sb(self) -> int:
        return (self.bn + self.pad) // self.hv

    @property
    def shared_bytes(self) -> int:
        return 2 * self.hv * self.stages * (self.bm * self.sa + self.bk * self.sb)

    def check(self) -> None:
        nt = self.threads
        assert self.bm % (self.wm * 16) == 0 and self.bn % (self.wn * 16) == 0, self
        hv = self.hv
        assert self.vec in (2, 4) and (self.prefetch or self.stages == 1), self
        assert self.addressing in ADDRESSING, self
        assert self.bk % 16 == 0 and self.pad % hv == 0 and self.stages in (1, 2), self
        assert nt % (self.bk // hv) == 0 and nt % (self.bn // hv) == 0, self
        assert (self.bm * self.bk // hv) % nt == 0 and (self.bk * self.bn // hv) % nt == 0, self

    def source(self, out: str = "f32", group_m: int = 8,
               dims: tuple[int, int, int] | None = None) -> str:
        self.check()
        nt = self.threads
        unit = dict(V=self.vec, HV=self.hv)
        ext, buffers = ADDRESSING[self.addressing]
        pointers = "" if self.addressing == "ssbo" else "uint64_t pa; uint64_t pb;"
        if dims is None:
            dims_text = Template(DIMS_PUSH).substitute(POINTERS=pointers)
        else:
            dims_text = DIMS_CONST.format(M=dims[0], N=dims[1], K=dims[2]) + (
                "\n" + Template(POINTERS_PUSH).substitute(POINTERS=pointers) if pointers
                else "")
        notes = ([] if self.vec == 4 else [f"uvec{self.vec} copies"]) + \
            ([] if self.prefetch else ["no prefetch"]) + \
            ([] if self.pad == 8 else [f"rows padded by {self.pad} halves"]) + \
            ([] if self.addressing == "ssbo" else [f"A and B by {self.addressing}"])
        return SHADER.substitute(
            ADDRESS_EXT=ext, C_BINDING=2 if self.addressing == "ssbo" else 0,
            BUFFERS=Template(buffers).substitute(VT=f"uvec{self.vec}", V=self.vec,
                                                 BYTES=2 * self.hv),
            NAME=self.name, BM=self.bm, BN=self.bn, BK=self.bk, WM=self.wm, WN=self.wn,
            WTM=self.fm * 16, WTN=self.fn * 16, FM=self.fm, FN=self.fn, NT=nt,
            SA=self.sa, SB=self.sb, LA=self.bm * self.bk // self.hv // nt,
            LB=self.bk * self.bn // self.hv // nt, STAGES=self.stages, GROUP_M=group_m, OUT=out,
            NOTE="".join("; " + n for n in notes), VT=f"uvec{self.vec}", FU=16 // self.hv,
            PROLOGUE=PROLOGUE_PF.substitute(unit) if self.prefetch else "",
            KHEAD=(KHEAD_PF if self.prefetch else KHEAD_NOPF).substitute(unit),
            KTAIL=(KTAIL_PF if self.prefetch else KTAIL_NOPF).substitute(unit), **unit,
            CTYPE="float" if out == "f32" else "float16_t",
            DIMS=dims_text,
            STORE=STORE_F32 if out == "f32" else STORE_F16)


VARIANTS = [
    # 4 subgroups of 64x64 (16 accumulators each), double-buffered: 37 KiB shared
    Variant(128, 128, 32, 2, 2, 2),
    # 8 subgroups of 32x64 / 64x32, double-buffered: 37 KiB
    Variant(128, 128, 32, 4, 2, 2),
    Variant(128, 128, 32, 2, 4, 2),
    # deeper k step, one stage + register prefetch: 35 KiB
    Variant(128, 128, 64, 2, 2, 1),
    # 8 subgroups of 64x64 on a 128x256 / 256x128 tile; BK=32 fits one stage (27/29 KiB),
    # BK=16 fits two (29/33 KiB)
    Variant(128, 256, 32, 2, 4, 1),
    Variant(128, 256, 16, 2, 4, 2),
    Variant(256, 128, 32, 4, 2, 1),
    Variant(256, 128, 16, 4, 2, 2),
    # small tile baseline: 4 subgroups of 32x32: 19 KiB
    Variant(64, 64, 32, 2, 2, 2),
]
# ablations of t128x128_k64_w2x2_s1 (the best on H100): copy unit uvec2 (8 bytes) instead
# of uvec4, no register prefetch of the next k tile, no row padding; BK=32; and 8 subgroups
# of 64x32 (4x2 fragments) instead of 4 of 64x64
ABLATION = [
    Variant(128, 128, 64, 2, 2, 1),
    Variant(128, 128, 64, 2, 2, 1, vec=2),
    Variant(128, 128, 64, 2, 2, 1, prefetch=False),
    Variant(128, 128, 64, 2, 2, 1, pad=0),
    Variant(128, 128, 64, 2, 2, 1, vec=2, prefetch=False),
    Variant(128, 128, 64, 2, 2, 1, vec=2, pad=0),
    Variant(128, 128, 32, 2, 2, 1),
    Variant(128, 128, 64, 2, 4, 1),
]
# how the global loads are addressed, for the best variant with 8-byte copies (as the
# Python kernel) and with 16-byte ones
ADDRESSING_VARIANTS = [Variant(128, 128, 64, 2, 2, 1, vec=vec, addressing=how)
                       for vec in (2, 4) for how in ADDRESSING]
VARIANTS += [v for v in ABLATION + ADDRESSING_VARIANTS if v not in VARIANTS]
BY_NAME = {v.name: v for v in VARIANTS}


def pick(spec: str) -> list[Variant]:
    if spec == "all":
        return list(VARIANTS)
    if spec == "ablation":
        return list(ABLATION)
    if spec == "addressing":
        return list(ADDRESSING_VARIANTS)
    out = []
    for name in spec.split(","):
        name = name.strip()
        if name not in BY_NAME:
            sys.exit(f"unknown variant {name!r}; known: {', '.join(BY_NAME)}")
        out.append(BY_NAME[name])
    return out


# ---------------------------------------------------------------------------------------
# compile-only: vksycl's GLSL path (vulkan1.1 env, what syclexp.build uses), and glslang
# --target-env vulkan1.3 validated as vulkan1.3
# ---------------------------------------------------------------------------------------
def compile_only(variants: list[Variant], outs: list[str], group_m: int,
                 const_dims: list[tuple[int, int, int]] | None) -> int:
    from vksycl.kernels.reflect import reflect
    from vksycl.runtime.glsl import compile_glsl

    failed = 0
    for v in variants:
        for out in outs:
            for dims in (const_dims or [None]):
                src = v.source(out, group_m, dims)
                tag = f"{v.name} out={out}" + ("" if dims is None else f" dims={dims}")
                try:
                    spirv = compile_glsl(src)  # validates (vulkan1.1) or raises
                    r = reflect(spirv)
                    ops = _count_coopmat_ops(spirv)
                    compile_glsl(src, target_env="vulkan1.3")  # validates as vulkan1.3
                    print(f"  ok  {tag:44s} {v.threads:3d} inv, shared {v.shared_bytes:6d} B "
                          f"(reflect {r.workgroup_bytes}), SPIR-V {len(spirv):6d} B, "
                          f"{ops}; valid vulkan1.1 + vulkan1.3", flush=True)
                except Exception as ex:  # report every variant
                    failed += 1
                    print(f"  FAIL {tag}: {ex}", flush=True)
    print(f"compile-only: {len(variants) * len(outs) * len(const_dims or [None]) - failed} "
          f"ok, {failed} failed")
    return 1 if failed else 0


def _count_coopmat_ops(spirv: bytes) -> str:
    """Counts of the cooperative matrix instructions in a module (static, after glslang)."""
    asm = disassemble(spirv)
    return (f"static coopmat ops {asm.count('OpCooperativeMatrixLoadKHR')} load, "
            f"{asm.count('OpCooperativeMatrixMulAddKHR')} muladd, "
            f"{asm.count('OpCooperativeMatrixStoreKHR')} store")


# ---------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------
def _torch_times(n: int, repeat: int) -> tuple[float, float] | None:
    """(best wall launch+synchronize, best CUDA-event time) of torch.matmul, fp16 n x n."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except Exception:
        return None
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    wall, dev = [], []
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(repeat):
        t = time.perf_counter()
        s.record()
        torch.matmul(a, b)
        e.record()
        torch.cuda.synchronize()
        wall.append(time.perf_counter() - t)
        dev.append(s.elapsed_time(e) * 1e-3)
    del a, b
    torch.cuda.empty_cache()
    return min(wall), min(dev)


def device_ready(vk) -> bool:
    """Prints the device; whether it has the fp16 x fp16 + fp32 16x16x16 cooperative
    matrix the shaders use (else says why not)."""
    combo = ("float16", "float16", "float32", "float32", 16, 16, 16)
    print(f"device: {vk.name}; subgroup size {vk.properties.get('subgroupSize')}; "
          f"maxComputeSharedMemorySize {vk.max_compute_shared_memory_size}")
    if not vk.cooperative_matrices or not vk.features.get("cooperativeMatrix"):
        print(f"{vk.name} has no VK_KHR_cooperative_matrix (cooperativeMatrix feature "
              "absent): nothing to measure here; --compile-only checks the shaders")
        return False
    print("cooperative matrices (A, B, C, result, M, N, K):")
    for c in vk.cooperative_matrices:
        print("   ", c)
    if combo not in vk.cooperative_matrices:
        print(f"{vk.name} lacks the fp16 x fp16 + fp32 16x16x16 cooperative matrix these "
              "shaders use: nothing to measure")
        return False
    if vk.properties.get("subgroupSize") != 32:
        print("warning: the shaders assume 32-lane subgroups (NVIDIA); results may be wrong")
    return True


def _example(q, a, b, n: int, rows: np.ndarray, want: np.ndarray, scale: float,
             repeat: int, best_wall: float | None) -> int:
    """Times examples/matrix_gemm.py (a zero bias, so relu(A @ B)) on the same A and B, as
    the ratio to the best GLSL variant of this run; 1 if its result is wrong."""
    import vksycl as sycl

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import matrix_gemm
    from timing import best_seconds

    bias = sycl.malloc_device(n, sycl.float32, q)
    c = sycl.malloc_device(n * n, sycl.float32, q)
    q.memset(bias, 0, 4 * n).wait()
    try:  # the warm-up call compiles the kernel and makes its pipeline
        tw = best_seconds(lambda: matrix_gemm.gemm_bias_relu(q, a, b, bias, c, n, n, n).wait(),
                          repeat)
        got = np.empty((n, n), np.float32)
        q.copy(c, got, n * n).wait()
    finally:
        sycl.free(bias, q)
        sycl.free(c, q)
    err = float(np.abs(got[rows] - np.maximum(want, 0)).max()) / scale
    tag = "vksycl examples/matrix_gemm.py (relu)"
    if err >= 1e-2:
        print(f"  {tag:38s} WRONG: max error {err:.1e} of the largest value")
        return 1
    line = f"  {tag:38s} wall {2.0 * n ** 3 / tw / 1e12:7.1f} TFLOP/s"
    if best_wall is not None:
        line += f"  {best_wall / tw:.2f}x the best GLSL variant above"
    print(line + f"  max err {err:.1e} ok", flush=True)
    return 0


def run(args: argparse.Namespace, variants: list[Variant], outs: list[str]) -> int:
    import vksycl as sycl
    from vksycl import info
    from vksycl.ext.oneapi import experimental as syclexp

    try:
        q = sycl.queue(property_list=[sycl.property.queue.enable_profiling()])
        profiling = True
    except Exception:
        q = sycl.queue()
        profiling = False
    vk = q.get_device().vulkan
    if not device_ready(vk):
        return 0

    rng = np.random.default_rng(0)
    failed = 0
    for n in args.n:
        m = k = n
        flops = 2.0 * m * n * k
        print(f"\n== M = N = K = {n} ({flops / 1e9:.1f} GFLOP), best of {args.repeat}",
              flush=True)
        ha = (rng.random((m, k), dtype=np.float32) * 2 - 1).astype(np.float16)
        hb = (rng.random((k, n), dtype=np.float32) * 2 - 1).astype(np.float16)
        rows = np.sort(rng.choice(m, 4, replace=False))
        want = ha[rows].astype(np.float32) @ hb.astype(np.float32)
        scale = float(np.abs(want).max())
        a = sycl.malloc_device(m * k, sycl.float16, q)
        b = sycl.malloc_device(k * n, sycl.float16, q)
        q.copy(ha, a, m * k)
        q.copy(hb, b, k * n).wait()
        del ha, hb

        tt = None if args.no_torch else _torch_times(n, args.repeat)
        if tt is None:
            print("torch: unavailable (no torch or no CUDA) - no ratio")
        else:
            print(f"  {'torch.matmul fp16':38s} wall {flops / tt[0] / 1e12:7.1f} TFLOP/s  "
                  f"gpu {flops / tt[1] / 1e12:7.1f} TFLOP/s   ({tt[1] * 1e3:.3f} ms)",
                  flush=True)

        best_wall = None
        for out in outs:
            c = sycl.malloc_device(m * n, sycl.float32 if out == "f32" else sycl.float16, q)
            for v in variants:
                tag = f"{v.name} {out}"
                if m % v.bm or n % v.bn or k % v.bk:
                    print(f"  {tag:38s} skipped: {n} is not a multiple of the tile")
                    continue
                if v.shared_bytes > vk.max_compute_shared_memory_size:
                    print(f"  {tag:38s} skipped: needs {v.shared_bytes} B shared")
                    continue
                dims = (m, n, k) if args.const_dims else None
                try:
                    bundle = syclexp.create_kernel_bundle_from_source(
                        q.get_context(), syclexp.source_language.glsl,
                        {"gemm": v.source(out, args.group_m, dims)})
                    kern = syclexp.build(bundle).ext_oneapi_get_kernel("gemm")
                except Exception as ex:
                    print(f"  {tag:38s} build failed: {ex}")
                    failed += 1
                    continue
                groups = (m // v.bm) * (n // v.bn)
                ndr = sycl.nd_range((groups * v.threads,), (v.threads,))
                push = () if dims is not None else (m, n, k)
                operands = (a, b, c) if v.addressing == "ssbo" else (c, a.address, b.address)

                def cgf(h, kern=kern, ndr=ndr, push=push, operands=operands):
                    h.set_args(*operands, *push)
                    h.parallel_for(ndr, kern)

                try:
                    q.submit(cgf).wait()  # warm-up (pipeline creation)
                    q.submit(cgf).wait()
                    wall, dev = [], []
                    for _ in range(args.repeat):
                        t = time.perf_counter()
                        e = q.submit(cgf)
                        e.wait()
                        wall.append(time.perf_counter() - t)
                        if profiling:
                            dev.append((e.get_profiling_info(info.event_profiling.command_end)
                                        - e.get_profiling_info(
                                            info.event_profiling.command_start)) * 1e-9)
                except Exception as ex:
                    print(f"  {tag:38s} launch failed: {ex}")
                    failed += 1
                    continue
                got = np.empty((m, n), np.float32 if out == "f32" else np.float16)
                q.copy(c, got, m * n).wait()
                err = float(np.abs(got[rows].astype(np.float32) - want).max()) / scale
                if err >= 1e-2:  # no figures for a wrong result
                    print(f"  {tag:38s} WRONG: max error {err:.1e} of the largest value")
                    failed += 1
                    continue
                tw = min(wall)
                if out == "f32":
                    best_wall = tw if best_wall is None else min(best_wall, tw)
                td = min(dev) if dev and min(dev) > 0 else None
                line = f"  {tag:38s} wall {flops / tw / 1e12:7.1f} TFLOP/s"
                if td is not None:
                    line += f"  gpu {flops / td / 1e12:7.1f} TFLOP/s   ({td * 1e3:.3f} ms)"
                if tt is not None:
                    line += f"  vs torch: wall {tt[0] / tw:.2f}x"
                    if td is not None:
                        line += f" gpu {tt[1] / td:.2f}x"
                line += f"  max err {err:.1e} ok"
                print(line, flush=True)
            sycl.free(c, q)
        if args.example:
            failed += _example(q, a, b, n, rows, want, scale, args.repeat, best_wall)
        sycl.free(a, q)
        sycl.free(b, q)
    if failed:
        print(f"{failed} variant run(s) failed")
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, nargs="+", default=[4096, 8192],
                    help="square sizes M = N = K (multiples of the tiles)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--variants", default="all",
                    help="all, ablation, addressing, or names separated by commas")
    ap.add_argument("--out", choices=("f32", "f16", "both"), default="f32")
    ap.add_argument("--group-m", type=int, default=8, help="tile rows per launch band (1: off)")
    ap.add_argument("--const-dims", action="store_true",
                    help="bake M, N, K into the shader as constants (else push constants)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--example", action="store_true",
                    help="also time examples/matrix_gemm.py on the same matrices")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile every variant to SPIR-V, validate, and exit")
    ap.add_argument("--list", action="store_true", help="print the variants and exit")
    ap.add_argument("--print-source", metavar="VARIANT", help="print one variant's GLSL")
    args = ap.parse_args()
    variants = pick(args.variants)
    outs = ["f32", "f16"] if args.out == "both" else [args.out]
    if args.list:
        for v in VARIANTS:
            print(f"{v.name}: {v.threads} invocations, subgroup tile {v.fm * 16}x{v.fn * 16} "
                  f"({v.fm}x{v.fn} fragments), shared {v.shared_bytes} B, uvec{v.vec} copies, "
                  f"{'' if v.prefetch else 'no '}prefetch, pad {v.pad}, "
                  f"A and B by {v.addressing}")
        return 0
    if args.print_source:
        print(pick(args.print_source)[0].source(outs[0], args.group_m))
        return 0
    if args.compile_only:
        dims = [(n, n, n) for n in args.n] if args.const_dims else None
        return compile_only(variants, ["f32", "f16"], args.group_m, dims)
    return run(args, variants, outs)


if __name__ == "__main__":
    sys.exit(main())
