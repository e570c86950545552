"""nd_range kernels: work-item queries, atomics, barriers, local memory, sub-groups, group
algorithms, and free function kernels."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import vksycl as sycl
from vksycl.compiler import (
    get_work_group_scratch_memory,
    nd_range_kernel,
    single_task_kernel,
    this_work_item,
    work_group_memory,
)
from vksycl.kernels.launch import build_launch_args, compiled
from vksycl.properties import work_group_scratch_size


def test_nd_item_queries(q, mem):
    g, lo = (4, 24), (2, 8)
    n = g[0] * g[1]
    out = mem.zeros(8 * n, np.int32)

    def body(it):
        k = it.get_global_linear_id() * 8
        out[k] = it.get_global_id(0)
        out[k + 1] = it.get_global_id(1)
        out[k + 2] = it.get_local_id(1)
        out[k + 3] = it.get_group(0)
        out[k + 4] = it.get_group().get_group_id(1)
        out[k + 5] = it.get_local_linear_id()
        out[k + 6] = it.get_group_linear_id()
        out[k + 7] = it.get_group_range(1) * 100 + it.get_local_range(0) * 10 \
            + it.get_global_range(0)

    q.parallel_for(sycl.nd_range(g, lo), body).wait()
    got = mem.view(out, 8 * n).reshape(g[0], g[1], 8)
    i, j = np.indices(g)
    np.testing.assert_array_equal(got[..., 0], i)
    np.testing.assert_array_equal(got[..., 1], j)
    np.testing.assert_array_equal(got[..., 2], j % lo[1])
    np.testing.assert_array_equal(got[..., 3], i // lo[0])
    np.testing.assert_array_equal(got[..., 4], j // lo[1])
    np.testing.assert_array_equal(got[..., 5], (i % lo[0]) * lo[1] + j % lo[1])
    np.testing.assert_array_equal(got[..., 6], (i // lo[0]) * (g[1] // lo[1]) + j // lo[1])
    np.testing.assert_array_equal(got[..., 7], (g[1] // lo[1]) * 100 + lo[0] * 10 + g[0])


def test_atomic_histogram_under_contention(q, mem):
    n, bins = 4096, 16
    data = np.random.default_rng(7).integers(0, bins, n).astype(np.int32)
    d = mem.of(data)
    hist = mem.zeros(bins, np.int32)
    total = mem.zeros(1, np.uint32)

    def body(it):
        i = it.get_id(0)
        sycl.atomic_ref(hist + d[i]).fetch_add(1)
        sycl.atomic_ref(total).fetch_add(2)

    q.parallel_for(sycl.range(n), body).wait()
    np.testing.assert_array_equal(mem.view(hist, bins), np.bincount(data, minlength=bins))
    assert mem.view(total, 1)[0] == 2 * n


def test_atomic_operations(q, mem):
    n = 256
    vals = np.random.default_rng(3).integers(-1000, 1000, n).astype(np.int32)
    v = mem.of(vals)
    acc = mem.of(np.array([1 << 30, -(1 << 30), 0, -1, 0, 0, 100], np.int32))
    old = mem.zeros(n, np.int32)

    def body(i):
        x = v[i]
        sycl.atomic_ref(acc).fetch_min(x)
        sycl.atomic_ref(acc + 1).fetch_max(x)
        sycl.atomic_ref(acc + 2).fetch_or(1 << (i % 31))
        sycl.atomic_ref(acc + 3).fetch_and(~(1 << (i % 17)))
        sycl.atomic_ref(acc + 4).fetch_xor(x)
        old[i] = sycl.atomic_ref(acc + 5, sycl.memory_order.acq_rel).exchange(i)
        sycl.atomic_ref(acc + 6).fetch_sub(1)

    q.parallel_for(sycl.range(n), body).wait()
    got = mem.view(acc, 7)
    assert got[0] == vals.min() and got[1] == vals.max()
    assert got[2] == np.bitwise_or.reduce([1 << (i % 31) for i in range(n)])
    assert got[3] == -1 & ~np.bitwise_or.reduce([1 << (i % 17) for i in range(n)])
    assert got[4] == np.bitwise_xor.reduce(vals)
    assert got[6] == 100 - n
    # every value but the last one stored was returned exactly once by exchange
    seen = np.sort(np.append(mem.view(old, n), got[5]))
    np.testing.assert_array_equal(seen, np.append([0], np.arange(n)))


def test_compare_exchange_builds_a_lock_free_counter(q, mem):
    n = 512
    counter = mem.zeros(1, np.int32)
    tickets = mem.zeros(n, np.int32)

    def body(i):
        a = sycl.atomic_ref(counter)
        cur = a.load()
        done = False
        while not done:
            ok, seen = a.compare_exchange_strong(cur, cur + 1)
            if ok:
                done = True
            else:
                cur = seen
        tickets[i] = cur

    q.parallel_for(sycl.range(n), body).wait()
    assert mem.view(counter, 1)[0] == n
    np.testing.assert_array_equal(np.sort(mem.view(tickets, n)), np.arange(n))


def test_int64_atomics(q, mem):
    if not q.get_device().has(sycl.aspect.atomic64):
        pytest.skip("device has no 64-bit atomics")
    n = 1000
    acc = mem.zeros(2, np.int64)

    def body(i):
        sycl.atomic_ref(acc).fetch_add(sycl.int64(1) << 33)
        sycl.atomic_ref(acc + 1).fetch_max(sycl.int64(i) * 10000000000)

    q.parallel_for(sycl.range(n), body).wait()
    np.testing.assert_array_equal(mem.view(acc, 2), [n << 33, (n - 1) * 10000000000])


def test_float_atomic_add(q, mem):
    if not q.get_device().vulkan.features.get("shaderBufferFloat32AtomicAdd"):
        pytest.skip("device has no float atomic add")
    n = 1000
    acc = mem.zeros(1, np.float32)

    def body(i):
        sycl.atomic_ref(acc).fetch_add(0.5)

    q.parallel_for(sycl.range(n), body).wait()
    assert mem.view(acc, 1)[0] == 500.0


def test_tiled_reduction_with_local_memory_and_barriers(q, mem):
    n, wg = 4096, 64
    x = np.random.default_rng(5).uniform(0, 1, n).astype(np.float32)
    a = mem.of(x)
    partial = mem.zeros(n // wg, np.float32)
    tile = work_group_memory(np.float32, wg)

    def body(it):
        lid = it.get_local_id(0)
        tile[lid] = a[it.get_global_id(0)]
        sycl.group_barrier(it.get_group())
        stride = wg // 2
        while stride > 0:
            if lid < stride:
                tile[lid] += tile[lid + stride]
            sycl.group_barrier(it.get_group())
            stride //= 2
        if lid == 0:
            partial[it.get_group(0)] = tile[0]

    q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
    np.testing.assert_allclose(mem.view(partial, n // wg), x.reshape(-1, wg).sum(1), rtol=1e-5)


@pytest.mark.parametrize("space, semantics", [
    (None, 0x148), (sycl.access.fence_space.global_and_local, 0x148),
    (sycl.access.fence_space.local_space, 0x108), (sycl.access.fence_space.global_space, 0x48)])
def test_nd_item_barrier_fence_spaces(q, mem, space, semantics):
    """`it.barrier(space)` orders the memory of its fence space: work-group memory only
    for local_space (GLSL's barrier()), global memory only for global_space; a local
    exchange through a local_space barrier and a global one through global_space both
    see every work-item's write."""
    n, wg = 256, 32
    src = mem.of(np.arange(n, dtype=np.float32))
    through_local, through_global = mem.zeros(n, np.float32), mem.zeros(n, np.float32)
    tile = work_group_memory(np.float32, wg)

    def body(it):
        i, lid = it.get_global_id(0), it.get_local_id(0)
        tile[lid] = src[i] * 2.0
        through_global[i] = src[i] + 1.0
        if space is None:
            it.barrier()
        else:
            it.barrier(space)
        mirror = i - lid + wg - 1 - lid
        if space is not sycl.access.fence_space.global_space:
            through_local[i] = tile[wg - 1 - lid]
        if space is not sycl.access.fence_space.local_space:
            through_local[i] = through_global[mirror] - 1.0

    nd = sycl.nd_range((n,), (wg,))
    q.parallel_for(nd, body).wait()
    mirrored = np.arange(n).reshape(-1, wg)[:, ::-1].ravel().astype(np.float32)
    local_only = space is sycl.access.fence_space.local_space
    np.testing.assert_array_equal(mem.view(through_local, n),
                                  2 * mirrored if local_only else mirrored)
    barriers = [line for line in compiled(q.get_device(), body, nd).spirv_asm().splitlines()
                if "OpControlBarrier" in line]
    assert barriers == [f"               OpControlBarrier %uint_2 %uint_2 %uint_{semantics}"]


@pytest.mark.parametrize("scope, seen", [
    (None, 2), (sycl.memory_scope.work_group, 2), (sycl.memory_scope.device, 1),
    (sycl.memory_scope.work_item, 2)])
def test_group_barrier_fence_scope(q, mem, scope, seen):
    """`group_barrier(g, fence_scope)` fences at the scope given where it is wider than the
    group's (device), at the group's otherwise; the exchange through local memory holds."""
    n, wg = 128, 32
    out = mem.zeros(n, np.int32)
    tile = work_group_memory(np.int32, wg)

    def body(it):
        lid = it.get_local_id(0)
        tile[lid] = it.get_global_id(0)
        if scope is None:
            sycl.group_barrier(it.get_group())
        else:
            sycl.group_barrier(it.get_group(), scope)
        out[it.get_global_id(0)] = tile[wg - 1 - lid]

    nd = sycl.nd_range((n,), (wg,))
    q.parallel_for(nd, body).wait()
    want = np.arange(n).reshape(-1, wg)[:, ::-1].ravel()
    np.testing.assert_array_equal(mem.view(out, n), want)
    barriers = [line.split()[1:] for line in
                compiled(q.get_device(), body, nd).spirv_asm().splitlines()
                if "OpControlBarrier" in line]
    assert barriers == [["%uint_2", f"%uint_{seen}", "%uint_328"]]


def test_group_barrier_refuses_a_system_fence(q):
    def body(it):
        sycl.group_barrier(it.get_group(), sycl.memory_scope.system)

    with pytest.raises(sycl.exception, match="a Vulkan kernel fences at most device") as e:
        q.parallel_for(sycl.nd_range((8,), (8,)), body).wait()
    assert e.value.code() == sycl.errc.kernel_not_supported
    assert "test_parallel.py:" in str(e.value)


def test_nd_item_barrier_refuses_what_is_not_a_fence_space(q):
    def body(it):
        it.barrier(3)

    with pytest.raises(sycl.exception, match=r"sycl\.access\.fence_space") as e:
        q.parallel_for(sycl.nd_range((8,), (8,)), body).wait()
    assert "test_parallel.py:" in str(e.value)


TILE = 8


def test_tiled_matrix_multiply(q, mem):
    m, k, n, t = 32, 48, 40, TILE
    rng = np.random.default_rng(11)
    ha, hb = rng.uniform(-1, 1, (m, k)).astype(np.float32), \
        rng.uniform(-1, 1, (k, n)).astype(np.float32)
    a, b, c = mem.of(ha), mem.of(hb), mem.zeros(m * n, np.float32)

    def body(it):
        ta = work_group_memory(sycl.float32, (TILE, TILE))
        tb = work_group_memory(sycl.float32, (TILE, TILE))
        row, col = it.get_global_id(0), it.get_global_id(1)
        lr, lc = it.get_local_id(0), it.get_local_id(1)
        acc = 0.0
        for kt in range(0, k, t):
            ta[lr, lc] = a[row * k + kt + lc]
            tb[lr, lc] = b[(kt + lr) * n + col]
            sycl.group_barrier(it.get_group())
            for kk in range(t):
                acc += ta[lr, kk] * tb[kk, lc]
            sycl.group_barrier(it.get_group())
        c[row * n + col] = acc

    q.parallel_for(sycl.nd_range((m, n), (t, t)), body).wait()
    np.testing.assert_allclose(mem.view(c, m * n).reshape(m, n), ha @ hb, rtol=1e-4, atol=1e-5)


def test_work_group_scratch_memory(q, mem):
    n, wg = 256, 32
    out = mem.zeros(n, np.int32)

    def body(it):
        scratch = get_work_group_scratch_memory(sycl.int32)
        lid = it.get_local_id(0)
        scratch[lid] = lid * lid
        sycl.group_barrier(it.get_group())
        out[it.get_global_id(0)] = scratch[wg - 1 - lid]

    q.parallel_for(sycl.nd_range((n,), (wg,)), body,
                   properties=[work_group_scratch_size(wg * 4)]).wait()
    want = np.tile((np.arange(wg)[::-1]) ** 2, n // wg)
    np.testing.assert_array_equal(mem.view(out, n), want)


def test_sub_group_operations(q, mem):
    n, wg = 128, 32
    x = np.arange(n, dtype=np.int32) * 3 % 17
    a = mem.of(x)
    out = mem.zeros(8 * n, np.int32)

    def body(it):
        sg = it.get_sub_group()
        i = it.get_global_id(0)
        v = a[i]
        lane = sg.get_local_id()
        size = sg.get_local_range()
        k = 8 * i
        out[k] = sycl.reduce_over_group(sg, v, sycl.plus())
        out[k + 1] = sycl.inclusive_scan_over_group(sg, v, sycl.plus())
        out[k + 2] = sycl.exclusive_scan_over_group(sg, v, sycl.maximum())
        out[k + 3] = sycl.group_broadcast(sg, v, 1)
        shifted = sycl.shift_group_left(sg, v, 1)  # group functions: converged control flow
        out[k + 4] = shifted if lane + 1 < size else -1
        out[k + 5] = sycl.permute_group_by_xor(sg, v, 1)
        out[k + 6] = sycl.any_of_group(sg, v == 16) * 2 + sycl.all_of_group(sg, v < 17)
        out[k + 7] = size * 1000 + lane * 10 + sg.get_group_id() * 0 + sg.leader()

    q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
    sgs = q.get_device().vulkan.subgroup_size
    got = mem.view(out, 8 * n).reshape(n, 8)
    for start in range(0, n, sgs):
        seg = x[start:start + sgs]
        rows = got[start:start + sgs]
        lanes = np.arange(len(seg))
        np.testing.assert_array_equal(rows[:, 0], seg.sum())
        np.testing.assert_array_equal(rows[:, 1], np.cumsum(seg))
        excl = np.maximum.accumulate(np.concatenate([[np.iinfo(np.int32).min], seg[:-1]]))
        np.testing.assert_array_equal(rows[:, 2], excl)
        np.testing.assert_array_equal(rows[:, 3], seg[1])
        np.testing.assert_array_equal(rows[:-1, 4], seg[1:])
        assert rows[-1, 4] == -1
        np.testing.assert_array_equal(rows[:, 5], seg[lanes ^ 1])
        np.testing.assert_array_equal(rows[:, 6], (seg == 16).any() * 2 + 1)
        np.testing.assert_array_equal(rows[:, 7], sgs * 1000 + lanes * 10 + (lanes == 0))


@pytest.mark.parametrize("dtype,op,ref", [
    ("int32", sycl.plus, np.sum), ("float32", sycl.maximum, np.max),
    ("int32", sycl.minimum, np.min), ("uint32", sycl.bit_xor, np.bitwise_xor.reduce),
])
def test_work_group_reduce_and_scans(q, mem, dtype, op, ref):
    n, wg = 512, 128
    x = np.random.default_rng(2).integers(0, 50, n).astype(dtype)
    a = mem.of(x)
    out = mem.zeros(3 * n, dtype)

    def body(it):
        g = it.get_group()
        i = it.get_global_id(0)
        out[3 * i] = sycl.reduce_over_group(g, a[i], op())
        out[3 * i + 1] = sycl.inclusive_scan_over_group(g, a[i], op())
        out[3 * i + 2] = sycl.group_broadcast(g, a[i], 5)

    q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
    got = mem.view(out, 3 * n).reshape(-1, wg, 3)
    groups = x.reshape(-1, wg)
    for gi, seg in enumerate(groups):
        np.testing.assert_allclose(got[gi, :, 0], ref(seg))
        if op is sycl.plus:
            np.testing.assert_array_equal(got[gi, :, 1], np.cumsum(seg))
        np.testing.assert_array_equal(got[gi, :, 2], seg[5])


@nd_range_kernel(1)
def iota(start: sycl.float32, ptr: sycl.ptr[sycl.float32]):
    i = this_work_item.get_nd_item(1).get_global_linear_id()
    ptr[i] = start + sycl.float32(i)


T = typing.TypeVar("T")


@nd_range_kernel(1)
def axpy(alpha: T, x: sycl.ptr[sycl.float64], y: sycl.ptr[sycl.float64], unused: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    y[i] = alpha * x[i] + y[i]


@single_task_kernel
def write_answer(out: sycl.ptr[sycl.int32]):
    out[0] = 42


def test_free_function_kernels(q, mem):
    dev = q.get_device()
    a = mem.zeros(64, np.float32)
    q.execute(build_launch_args(dev, iota, sycl.nd_range((64,), (16,)), (3.5, a)), []).wait()
    np.testing.assert_array_equal(mem.view(a, 64), 3.5 + np.arange(64))

    x, y = mem.of(np.arange(32.0)), mem.of(np.ones(32))
    inst = axpy[sycl.float64]
    q.execute(build_launch_args(dev, inst, sycl.nd_range((32,), (8,)), (2.0, x, y, 7)),
              []).wait()
    np.testing.assert_array_equal(mem.view(y, 32), 2 * np.arange(32.0) + 1)

    out = mem.zeros(1, np.int32)
    q.execute(build_launch_args(dev, write_answer, None, (out,)), []).wait()
    assert mem.view(out, 1)[0] == 42


def test_unused_arguments_cost_nothing(q, mem):
    from vksycl.kernels.launch import compiled

    used, unused = mem.zeros(8, np.int32), mem.zeros(8, np.int32)
    big = 12345

    def body(i):
        if False:
            unused[i] = big
        used[i] = i

    ck = compiled(q.get_device(), body, sycl.range(8))
    refl = ck.reflection()
    assert sum(a["kind"] == "ptr" for a in refl["args"]) == 1
    assert [a["path"][1] for a in refl["args"] if a["kind"] != "launch"] == ["used"]
    inst = axpy[sycl.float64]
    ck2 = compiled(q.get_device(), inst, sycl.nd_range((32,), (8,)))
    assert all(a["path"][1] != 3 for a in ck2.reflection()["args"])


def test_local_atomics_and_nd_range_offset(q, mem):
    n, wg, bins = 256, 64, 8
    data = np.random.default_rng(9).integers(0, bins, n).astype(np.int32)
    d = mem.of(data)
    out = mem.zeros(n // wg * bins, np.int32)
    ids = mem.zeros(n, np.int32)

    def body(it):
        local_bins = work_group_memory(sycl.int32, bins)
        lid = it.get_local_id(0)
        if lid < bins:
            local_bins[lid] = 0
        it.barrier()
        gid = it.get_global_id(0)  # includes the offset
        sycl.atomic_ref(local_bins + d[gid - 16]).fetch_add(1)
        ids[gid - 16] = gid
        sycl.group_barrier(it.get_group())
        if lid < bins:
            out[it.get_group(0) * bins + lid] = local_bins[lid]

    q.parallel_for(sycl.nd_range((n,), (wg,), (16,)), body).wait()
    want = np.stack([np.bincount(s, minlength=bins) for s in data.reshape(-1, wg)])
    np.testing.assert_array_equal(mem.view(out, n // wg * bins).reshape(-1, bins), want)
    np.testing.assert_array_equal(mem.view(ids, n), np.arange(n) + 16)


def test_work_group_exclusive_scan_and_votes(q, mem):
    n, wg = 256, 64
    x = np.random.default_rng(4).integers(0, 9, n).astype(np.int32)
    a = mem.of(x)
    out = mem.zeros(2 * n, np.int32)

    def body(it):
        g = it.get_group()
        i = it.get_global_id(0)
        out[2 * i] = sycl.exclusive_scan_over_group(g, a[i], sycl.plus())
        out[2 * i + 1] = sycl.any_of_group(g, a[i] == 8) * 2 + sycl.all_of_group(g, a[i] < 9)

    q.parallel_for(sycl.nd_range((n,), (wg,)), body).wait()
    got = mem.view(out, 2 * n).reshape(-1, wg, 2)
    for gi, seg in enumerate(x.reshape(-1, wg)):
        np.testing.assert_array_equal(got[gi, :, 0], np.cumsum(seg) - seg)
        np.testing.assert_array_equal(got[gi, :, 1], (seg == 8).any() * 2 + 1)


def test_lambda_kernels(q, mem):
    out = mem.zeros(16, np.int32)
    q.parallel_for(sycl.nd_range((16,), (4,)), lambda it: (
        sycl.atomic_ref(out + it.get_global_id(0)).fetch_add(it.get_local_id(0)))).wait()
    np.testing.assert_array_equal(mem.view(out, 16), np.arange(16) % 4)


def test_captured_sizes_specialise_the_kernel(q, mem):
    for bins in (4, 8):
        out = mem.zeros(2 * bins, np.int32)

        def body(it):
            local = work_group_memory(sycl.int32, (bins,))  # noqa: B023
            lid = it.get_local_id(0)
            if lid < bins:  # noqa: B023
                local[lid] = lid * 3
            sycl.group_barrier(it.get_group())
            out[it.get_global_id(0)] = local[bins - 1 - lid]  # noqa: B023

        q.parallel_for(sycl.nd_range((2 * bins,), (bins,)), body).wait()
        np.testing.assert_array_equal(mem.view(out, 2 * bins),
                                      np.tile(np.arange(bins)[::-1] * 3, 2))


def test_small_ranges_run_one_work_group_of_their_size(q, mem):
    """A one-dimensional range smaller than the usual work-group runs one work-group of
    the next power of two (at least a sub-group), every item once; larger ones keep the
    usual size."""
    from vksycl.kernels.launch import compiled

    sub_group = q.get_device().vulkan.subgroup_size
    usual = compiled(q.get_device(), lambda i: None, sycl.range(4096)).spec.local[0]
    for n in (1, 5, 64, 100, usual - 1, usual, 1000):
        hits = mem.zeros(n, np.int32)

        def counted(i):
            sycl.atomic_ref(hits + i).fetch_add(1)  # noqa: B023

        (local,) = compiled(q.get_device(), counted, sycl.range(n)).spec.local
        if n < usual:
            assert local & (local - 1) == 0 and local >= max(n, sub_group), (n, local)
            assert local < 2 * n or local == sub_group, (n, local)
        else:
            assert local == usual, (n, local)
        q.parallel_for(sycl.range(n), counted).wait()
        np.testing.assert_array_equal(mem.view(hits, n), np.ones(n))
    assert compiled(q.get_device(), lambda i: None, sycl.range(64)).spec.local == (64,)


def test_coarsened_kernels_cover_every_item_exactly_once(q, mem):
    from vksycl.kernels.launch import compiled

    nd64 = lambda n: sycl.nd_range((n,), (64,))
    # a work-group runs four ids per work-item: a range's 1024 ids, this nd_range's 256;
    # launches with fewer items than that run one id per work-item
    for n, launch_of, coarsened in ((3000, sycl.range, True), (1024, sycl.range, True),
                                    (1000, sycl.range, False), (4096, nd64, True),
                                    (64 * 5, nd64, True), (192, nd64, False)):
        src = mem.of(np.arange(n, dtype=np.int32))
        hits = mem.zeros(n, np.int32)
        dst = mem.zeros(n, np.int32)

        def plain(i):
            dst[i] = src[i] * 3 + 1  # noqa: B023

        def nd(it):
            i = it.get_global_id(0)
            dst[i] = src[i] * 3 + 1  # noqa: B023

        def counted(i):
            sycl.atomic_ref(hits + i).fetch_add(1)  # noqa: B023

        k = plain if launch_of is sycl.range else nd
        assert (compiled(q.get_device(), k, launch_of(n)).coarsen > 1) == coarsened, n
        q.parallel_for(launch_of(n), k).wait()
        q.parallel_for(sycl.range(n), counted).wait()
        np.testing.assert_array_equal(mem.view(dst, n), np.arange(n) * 3 + 1)
        np.testing.assert_array_equal(mem.view(hits, n), np.ones(n))


@sycl.struct
class Saxpy:
    a: sycl.float32
    x: sycl.ptr[sycl.float32]
    y: sycl.ptr[sycl.float32]


@nd_range_kernel(1)
def saxpy_struct(args: Saxpy, n: sycl.int32):
    i = this_work_item.get_nd_item(1).get_global_id(0)
    if i < n:
        args.y[i] = args.a * args.x[i] + args.y[i]


def test_free_function_kernel_with_a_decomposed_struct_argument(q, mem):
    from vksycl.kernels.launch import compiled

    x, y = mem.of(np.arange(40, dtype=np.float32)), mem.of(np.ones(40, np.float32))
    launch = sycl.nd_range((48,), (16,))
    q.execute(build_launch_args(q.get_device(), saxpy_struct, launch,
                                (Saxpy(a=2.0, x=x, y=y), 40)), []).wait()
    np.testing.assert_array_equal(mem.view(y, 40), 2 * np.arange(40) + 1)
    refl = compiled(q.get_device(), saxpy_struct, launch).reflection()
    paths = sorted(a["path"] for a in refl["args"] if a["path"][0] == "param")
    assert paths == [("param", 0, "a"), ("param", 0, "x"), ("param", 0, "y"), ("param", 1)]
    assert sum(a["kind"] == "ptr" for a in refl["args"]) == 2
