"""A half-precision matrix multiply on tensor cores: C = relu(A @ B + bias), written with
joint_matrix (sycl_ext_oneapi_matrix), tiled through local memory, with the epilogue fused.

Each work-group computes a BM x BN tile of C with SGM x SGN sub-groups; each of its sub-groups a
32 x 32 tile held as four 16 x 16 float32 accumulators. Per step of BK along K, the
work-group stages its rows of A and columns of B in local memory, 8 bytes (four halves) at
a time, then every sub-group multiplies 16 x 16 fragments from there (a load reads halves
through the staged words). The bias is the accumulators' starting value (a
load with stride 0 repeats one row), and ReLU runs on the accumulators before the store.

On devices with cooperative matrices (an NVIDIA GPU's tensor cores) the fragments are
SPIR-V cooperative matrices; elsewhere (lavapipe) the same kernel runs portably.
"""

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi.experimental import matrix as jm

T = 16  # fragment size: 16 x 16 x 16, float16 inputs, float32 accumulation
SGM, SGN = 2, 2  # sub-groups of a work-group along M and N
BM, BN, BK = SGM * 2 * T, SGN * 2 * T, 32  # the work-group's tile of C, and its K step
W = 4  # halves in a 64-bit word, the unit of the copies into local memory


def gemm_bias_relu(q: sycl.queue, a, b, bias, c, m: int, n: int, k: int) -> sycl.event:
    """c[m, n] = relu(a[m, k] @ b[k, n] + bias[n]) for row-major USM arrays; m, n and k must
    be multiples of BM, BN and BK."""
    if m % BM or n % BN or k % BK:
        raise ValueError(f"{m}x{n}x{k} is not a multiple of the {BM}x{BN}x{BK} tile")
    work_items = SGM * SGN * q.get_device().get_info(sycl.info.device.sub_group_sizes)[0]
    groups = (m // BM) * (n // BN)
    return q.parallel_for(sycl.nd_range((groups * work_items,), (work_items,)),
                          gemm_kernel(a, b, bias, c, n, k, work_items))


def gemm_kernel(a, b, bias, c, n: int, k: int, work_items: int):
    """The kernel of one launch: work-groups of `work_items` (SGM * SGN sub-groups)."""
    groups_n = n // BN
    a_words, b_words = a.astype(sycl.uint64), b.astype(sycl.uint64)
    k_words, n_words = k // W, n // W

    def body(it):
        sg = it.get_sub_group()
        lid = it.get_local_linear_id()
        group = it.get_group_linear_id()
        row0 = (group // groups_n) * BM
        col0 = (group % groups_n) * BN
        sid = sg.get_group_linear_id()
        r = (sid // SGN) * 2 * T  # the sub-group's tile within the work-group's
        cc = (sid % SGN) * 2 * T
        tile_a = syclexp.work_group_memory(sycl.uint64, (BM * BK // W,))
        tile_b = syclexp.work_group_memory(sycl.uint64, (BK * BN // W,))

        c00 = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, T, T)
        c01 = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, T, T)
        c10 = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, T, T)
        c11 = jm.joint_matrix(sg, sycl.float32, jm.use.accumulator, T, T)
        start = bias + col0 + cc
        jm.joint_matrix_load(sg, c00, start, 0, jm.layout.row_major)
        jm.joint_matrix_load(sg, c01, start + T, 0, jm.layout.row_major)
        jm.joint_matrix_load(sg, c10, start, 0, jm.layout.row_major)
        jm.joint_matrix_load(sg, c11, start + T, 0, jm.layout.row_major)
        a0 = jm.joint_matrix(sg, sycl.float16, jm.use.a, T, T, jm.layout.row_major)
        a1 = jm.joint_matrix(sg, sycl.float16, jm.use.a, T, T, jm.layout.row_major)
        b0 = jm.joint_matrix(sg, sycl.float16, jm.use.b, T, T, jm.layout.row_major)
        b1 = jm.joint_matrix(sg, sycl.float16, jm.use.b, T, T, jm.layout.row_major)

        for k0 in range(0, k, BK):
            for e in range(lid, BM * BK // W, work_items):
                row, word = e // (BK // W), e % (BK // W)
                tile_a[e] = a_words[(row0 + row) * k_words + k0 // W + word]
            for e in range(lid, BK * BN // W, work_items):
                row, word = e // (BN // W), e % (BN // W)
                tile_b[e] = b_words[(k0 + row) * n_words + col0 // W + word]
            sycl.group_barrier(it.get_group())
            for kf in range(0, BK, T):
                jm.joint_matrix_load(sg, a0, tile_a + (r * BK + kf) // W, BK // W)
                jm.joint_matrix_load(sg, a1, tile_a + ((r + T) * BK + kf) // W, BK // W)
                jm.joint_matrix_load(sg, b0, tile_b + (kf * BN + cc) // W, BN // W)
                jm.joint_matrix_load(sg, b1, tile_b + (kf * BN + cc + T) // W, BN // W)
                jm.joint_matrix_mad(sg, c00, a0, b0, c00)
                jm.joint_matrix_mad(sg, c01, a0, b1, c01)
                jm.joint_matrix_mad(sg, c10, a1, b0, c10)
                jm.joint_matrix_mad(sg, c11, a1, b1, c11)
            sycl.group_barrier(it.get_group())

        out = c + (row0 + r) * n + col0 + cc
        for frag, at in ((c00, out), (c01, out + T), (c10, out + T * n),
                         (c11, out + T * n + T)):
            jm.joint_matrix_apply(sg, frag, lambda x: max(x, 0.0))
            jm.joint_matrix_store(sg, frag, at, n, jm.layout.row_major)

    return body


def main() -> None:
    q = sycl.queue()
    m, n, k = 128, 64, 96
    rng = np.random.default_rng(1)
    host_a = rng.standard_normal((m, k)).astype(np.float16)
    host_b = rng.standard_normal((k, n)).astype(np.float16)
    host_bias = rng.standard_normal(n).astype(np.float32)
    a = sycl.malloc_device(m * k, sycl.float16, q)
    b = sycl.malloc_device(k * n, sycl.float16, q)
    bias = sycl.malloc_device(n, sycl.float32, q)
    c = sycl.malloc_device(m * n, sycl.float32, q)
    q.copy(host_a, a, m * k)
    q.copy(host_b, b, k * n)
    q.copy(host_bias, bias, n).wait()

    gemm_bias_relu(q, a, b, bias, c, m, n, k).wait()
    out = np.empty((m, n), np.float32)
    q.copy(c, out, m * n).wait()

    want = np.maximum(host_a.astype(np.float32) @ host_b.astype(np.float32) + host_bias, 0)
    error = float(np.abs(out - want).max())
    cooperative = q.get_device().has(sycl.aspect.ext_oneapi_cooperative_matrix)
    print(f"{m}x{n}x{k} on {q.get_device().get_info(sycl.info.device.name)} "
          f"({'cooperative matrices' if cooperative else 'portable'}): max error {error:.2e}")
    assert error < 1e-3 * k, error
    for p in (a, b, bias, c):
        sycl.free(p, q)


if __name__ == "__main__":
    main()
