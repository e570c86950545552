"""A half-precision matrix multiply on tensor cores: C = relu(A @ B + bias), written with
joint_matrix (sycl_ext_oneapi_matrix), tiled through local memory, with the epilogue fused.

A work-group of WORK_ITEMS computes a BM x BN tile of C; four of its sub-groups each hold a
64 x 64 block as 4 x 4 float32 accumulators of 16 x 16 (the other sub-groups of a device
with sub-groups narrower than 32 only copy). Per step of BK along K, every work-item copies
its share of A's rows and B's columns into local memory, 16 bytes (eight halves, one
`sycl.uint4`) at a time, and the sub-groups multiply fragments loaded from there;
meanwhile the next step's share is already on its way into registers. What makes it fast:

- rows of the local tiles are padded by 16 bytes, so the 8-row fragment loads of a
  sub-group fall in distinct banks (without it the kernel runs at a third of the speed);
- the copies move 16-byte vectors: one load and one store per eight halves;
- every size the copy loops depend on is a number of a tile class (`tile_sizes`), which
  is compiled in, so their counts are known when the kernel is compiled: the compiler
  asks the driver to unroll short loops of a known count, and the registers holding the
  next step stay registers;
- the k step is the longest whose local tiles the device's work-group memory holds
  (`tiles_for`: 64 on NVIDIA GPUs, 32 on lavapipe);
- neighbouring work-groups take neighbouring rows of C (GROUP_M at a time), which keeps
  the columns of B they share in the L2 cache;
- the barriers order local memory alone (`it.barrier(sycl.access.fence_space.local_space)`,
  as GLSL's `barrier()`): the kernel only reads global memory until its last barrier.

The bias is the accumulators' starting value (a load with stride 0 repeats one row), and
ReLU runs on the accumulators before the store. On devices with cooperative matrices (an
NVIDIA GPU's tensor cores) the fragments are SPIR-V cooperative matrices; elsewhere
(lavapipe) the same kernel runs portably.
"""

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.ext.oneapi.experimental import matrix as jm


def tile_sizes(name: str, bk: int) -> type:
    """The sizes a kernel is compiled for, as a class: numbers a kernel reads from a class
    of yours are compiled in (a kernel for each class), so the copy loops' counts are known
    and the driver unrolls them. `bk` is the step along K; the rest follows from it."""
    t, w, bm, bn, work_items, pad = 16, 8, 128, 128, 128, 1
    a_row, b_row = bk // w + pad, bn // w + pad  # vectors per row of the local tiles
    a_cols, b_cols = bk // w, bn // w  # vectors of a row that the copies move
    a_pass, b_pass = work_items // a_cols, work_items // b_cols  # rows a pass covers
    return type(name, (), {
        "__doc__": f"128x128 tiles of C stepping {bk} along K.",
        "T": t,  # fragment size: 16 x 16 x 16, float16 inputs, float32 accumulation
        "W": w,  # halves in a 16-byte vector, the unit of the copies into local memory
        "BM": bm, "BN": bn, "BK": bk,  # the work-group's tile of C, and its step along K
        "SUB": 64,  # the block of C a computing sub-group holds (4 x 4 fragments)
        "WORK_ITEMS": work_items,  # a work-group: four sub-groups of up to 32 work-items
        "GROUP_M": 8,  # rows of work-groups that go along C's columns together
        "A_ROW": a_row, "B_ROW": b_row, "A_VECS": bm * a_row, "B_VECS": bk * b_row,
        "A_COLS": a_cols, "B_COLS": b_cols, "A_PASS": a_pass, "B_PASS": b_pass,
        "A_SHARE": bm // a_pass, "B_SHARE": bk // b_pass,  # vectors each work-item copies
        "LOCAL_BYTES": 16 * (bm * a_row + bk * b_row),  # the two local tiles
    })


# the barriers guard the local tiles alone: ordering global memory too (group_barrier's
# fence) costs the tiled kernels a tenth of their speed on NVIDIA's Vulkan driver
LOCAL = sycl.access.fence_space.local_space

# 35 KiB of work-group memory: what NVIDIA GPUs offer (48 KiB) holds it
WIDE = tile_sizes("WideTiles", 64)
# 18.5 KiB, for devices offering less (lavapipe's 32 KiB)
NARROW = tile_sizes("NarrowTiles", 32)


def tiles_for(device: sycl.device) -> type:
    """The widest tiles whose local memory the device has."""
    room = device.get_info(sycl.info.device.local_mem_size)
    return WIDE if room >= WIDE.LOCAL_BYTES else NARROW


def gemm_bias_relu(q: sycl.queue, a, b, bias, c, m: int, n: int, k: int) -> sycl.event:
    """c[m, n] = relu(a[m, k] @ b[k, n] + bias[n]) for row-major USM arrays; m, n and k must
    be multiples of the tile (`tiles_for(q.get_device())`: 128, 128 and 64 or 32)."""
    z = tiles_for(q.get_device())
    if m % z.BM or n % z.BN or k % z.BK:
        raise ValueError(f"{m}x{n}x{k} is not a multiple of the {z.BM}x{z.BN}x{z.BK} tile")
    if q.get_device().get_info(sycl.info.device.sub_group_sizes)[0] > z.WORK_ITEMS // 4:
        raise ValueError(f"the kernel needs four sub-groups in {z.WORK_ITEMS} work-items")
    groups = (m // z.BM) * (n // z.BN)
    return q.parallel_for(sycl.nd_range((groups * z.WORK_ITEMS,), (z.WORK_ITEMS,)),
                          gemm_kernel(a, b, bias, c, m, n, k, z))


def gemm_kernel(a, b, bias, c, m: int, n: int, k: int, z: type = WIDE):
    """The kernel of one launch, with the sizes of tile class `z`."""
    groups_m, groups_n = m // z.BM, n // z.BN
    a_vecs, b_vecs = a.astype(sycl.uint4), b.astype(sycl.uint4)
    k_vecs, n_vecs = k // z.W, n // z.W
    f16, f32, rm = sycl.float16, sycl.float32, jm.layout.row_major

    def body(it):
        sg = it.get_sub_group()
        lid = it.get_local_linear_id()
        group = it.get_group_linear_id()
        per = z.GROUP_M * groups_n  # work-groups of z.GROUP_M rows of C's tiles
        first = (group // per) * z.GROUP_M
        rows = min(groups_m - first, z.GROUP_M)
        row0 = (first + (group % per) % rows) * z.BM
        col0 = ((group % per) // rows) * z.BN
        sid = sg.get_group_linear_id()
        computes = sid < 4
        r = (sid // 2) * z.SUB  # the sub-group's block within the work-group's tile
        cc = (sid % 2) * z.SUB
        tile_a = syclexp.work_group_memory(sycl.uint4, (z.A_VECS,))
        tile_b = syclexp.work_group_memory(sycl.uint4, (z.B_VECS,))
        next_a = sycl.private_array(sycl.uint4, z.A_SHARE)
        next_b = sycl.private_array(sycl.uint4, z.B_SHARE)
        # the vectors this work-item copies: a column of each tile, every z.A_PASS / z.B_PASS rows
        a_row, a_col = lid // z.A_COLS, lid % z.A_COLS
        b_row, b_col = lid // z.B_COLS, lid % z.B_COLS
        from_a = (row0 + a_row) * k_vecs + a_col
        from_b = b_row * n_vecs + col0 // z.W + b_col
        to_a = a_row * z.A_ROW + a_col
        to_b = b_row * z.B_ROW + b_col

        c00 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c01 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c02 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c03 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c10 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c11 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c12 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c13 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c20 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c21 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c22 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c23 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c30 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c31 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c32 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        c33 = jm.joint_matrix(sg, f32, jm.use.accumulator, z.T, z.T)
        blocks = ((c00, 0, 0), (c01, 0, 1), (c02, 0, 2), (c03, 0, 3),
                  (c10, 1, 0), (c11, 1, 1), (c12, 1, 2), (c13, 1, 3),
                  (c20, 2, 0), (c21, 2, 1), (c22, 2, 2), (c23, 2, 3),
                  (c30, 3, 0), (c31, 3, 1), (c32, 3, 2), (c33, 3, 3))
        if computes:
            for acc, _, j in blocks:
                jm.joint_matrix_load(sg, acc, bias + col0 + cc + j * z.T, 0, rm)
        a0 = jm.joint_matrix(sg, f16, jm.use.a, z.T, z.T, rm)
        a1 = jm.joint_matrix(sg, f16, jm.use.a, z.T, z.T, rm)
        a2 = jm.joint_matrix(sg, f16, jm.use.a, z.T, z.T, rm)
        a3 = jm.joint_matrix(sg, f16, jm.use.a, z.T, z.T, rm)
        b0 = jm.joint_matrix(sg, f16, jm.use.b, z.T, z.T, rm)
        b1 = jm.joint_matrix(sg, f16, jm.use.b, z.T, z.T, rm)
        b2 = jm.joint_matrix(sg, f16, jm.use.b, z.T, z.T, rm)
        b3 = jm.joint_matrix(sg, f16, jm.use.b, z.T, z.T, rm)

        for i in range(z.A_SHARE):  # the first step's tiles
            tile_a[to_a + i * z.A_PASS * z.A_ROW] = a_vecs[from_a + i * z.A_PASS * k_vecs]
        for i in range(z.B_SHARE):
            tile_b[to_b + i * z.B_PASS * z.B_ROW] = b_vecs[from_b + i * z.B_PASS * n_vecs]
        it.barrier(LOCAL)
        for k0 in range(z.BK, k + z.BK, z.BK):
            more = k0 < k
            if more:  # the next step's vectors, in flight while this step multiplies
                for i in range(z.A_SHARE):
                    next_a[i] = a_vecs[from_a + i * z.A_PASS * k_vecs + k0 // z.W]
                for i in range(z.B_SHARE):
                    next_b[i] = b_vecs[from_b + (k0 + i * z.B_PASS) * n_vecs]
            if computes:
                for kf in range(0, z.BK, z.T):
                    for frag, i in ((a0, 0), (a1, 1), (a2, 2), (a3, 3)):
                        jm.joint_matrix_load(sg, frag, tile_a + (r + i * z.T) * z.A_ROW + kf // z.W,
                                             z.A_ROW)
                    for frag, j in ((b0, 0), (b1, 1), (b2, 2), (b3, 3)):
                        jm.joint_matrix_load(sg, frag,
                                             tile_b + kf * z.B_ROW + (cc + j * z.T) // z.W,
                                             z.B_ROW)
                    for acc, fa, fb in ((c00, a0, b0), (c01, a0, b1), (c02, a0, b2),
                                        (c03, a0, b3), (c10, a1, b0), (c11, a1, b1),
                                        (c12, a1, b2), (c13, a1, b3), (c20, a2, b0),
                                        (c21, a2, b1), (c22, a2, b2), (c23, a2, b3),
                                        (c30, a3, b0), (c31, a3, b1), (c32, a3, b2),
                                        (c33, a3, b3)):
                        jm.joint_matrix_mad(sg, acc, fa, fb, acc)
            it.barrier(LOCAL)
            if more:
                for i in range(z.A_SHARE):
                    tile_a[to_a + i * z.A_PASS * z.A_ROW] = next_a[i]
                for i in range(z.B_SHARE):
                    tile_b[to_b + i * z.B_PASS * z.B_ROW] = next_b[i]
            it.barrier(LOCAL)

        if computes:
            out = c + (row0 + r) * n + col0 + cc
            for acc, i, j in blocks:
                jm.joint_matrix_apply(sg, acc, lambda x: max(x, 0.0))
                jm.joint_matrix_store(sg, acc, out + i * z.T * n + j * z.T, n, rm)

    return body


def main() -> None:
    q = sycl.queue()
    z = tiles_for(q.get_device())
    m, n, k = 2 * z.BM, z.BN, 3 * z.BK
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
