"""The caching USM sub-allocator: a long random run of allocations, frees, copies, fills and
kernels checked against numpy; alignment; reuse and statistics; running out of memory;
pointers stored in memory; allocations past the storage buffer range."""

from __future__ import annotations

import bisect
import gc
import math
import time

import numpy as np
import pytest

import vksycl as sycl
from vksycl.runtime.allocator import SMALL_LIMIT, size_class
from vksycl.runtime.context import scheduler_for

MiB = 1 << 20
MALLOC = {"device": sycl.malloc_device, "host": sycl.malloc_host,
          "shared": sycl.malloc_shared}
ALIGNED = {"device": sycl.aligned_alloc_device, "host": sycl.aligned_alloc_host,
           "shared": sycl.aligned_alloc_shared}


@pytest.fixture(autouse=True)
def _collected_first():
    """Memory in use is compared before and after: buffers an earlier test left in a
    reference cycle (a kept traceback) must not be freed in the middle of one."""
    gc.collect()


def code_of(fn):
    with pytest.raises(sycl.exception) as err:
        fn()
    return err.value.code()


def download(q, p, nbytes: int) -> np.ndarray:
    """`nbytes` of USM memory from `p` on, as bytes (any kind of memory)."""
    out = np.empty(nbytes, np.uint8)
    q.memcpy(out, p, nbytes).wait()
    return out


def twice_plus_one(p):
    """A closure kernel over the elements from `p` on (float32 or int32)."""

    def body(i):
        p[i] = p[i] * 2 + 1

    return body


# -- 1. a long random run --------------------------------------------------------------------

ALLOCATIONS = 100_000
POOL = 50  # live allocations kept
HEAD = 16 << 10  # bytes at the start of an allocation that copies, fills and kernels use
TAIL = 64  # bytes at the end written once and checked (an overlap from above shows there)
MAX_BYTES = 6 * MiB  # past SMALL_LIMIT: some allocations get a block of their own
CHECK_EVERY = 1_000
DTYPES = (np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.float32))


class Live:
    """One live allocation and numpy mirrors of the bytes the run tracks: the first
    `len(head)` elements, and the last `len(tail)` bytes."""

    __slots__ = ("head", "kind", "nbytes", "p", "raw", "tail")

    def __init__(self, p, kind: str, head: np.ndarray, tail: np.ndarray) -> None:
        self.p, self.kind, self.head, self.tail = p, kind, head, tail
        self.raw = p.astype(sycl.uint8)
        self.nbytes = p.allocation.nbytes

    @property
    def floats(self) -> bool:
        return self.head.dtype == np.float32


class Run:
    """Allocations made and freed at random, with every address range checked to be
    disjoint from the others' at once and every tracked byte checked at checkpoints."""

    def __init__(self, q: sycl.queue, seed: int) -> None:
        self.q = q
        self.rng = np.random.default_rng(seed)
        self.live: list[Live] = []
        self.starts: list[int] = []  # sorted start addresses of live allocations
        self.ends: dict[int, int] = {}
        self.made = self.freed = self.copies = self.fills = self.kernels = 0
        self.races = self.races_open = 0
        self.verified = 0

    # -- allocations -------------------------------------------------------------------
    def allocate(self, kind: str, dtype: np.dtype, nbytes: int) -> Live:
        rng = self.rng
        count = max(1, nbytes // dtype.itemsize)
        p = MALLOC[kind](count, dtype, self.q)
        assert p.dtype == dtype and p.allocation.nbytes == count * dtype.itemsize
        assert p.address % 256 == 0, hex(p.address)
        self._claim(p.address, p.allocation.nbytes)
        nbytes = count * dtype.itemsize
        n_head = min(count, HEAD // dtype.itemsize)
        n_tail = min(TAIL, nbytes - n_head * dtype.itemsize)
        tail = rng.integers(0, 256, n_tail, dtype=np.uint8)
        a = Live(p, kind, np.empty(0, dtype), tail)
        if kind == "device" and rng.random() < 0.8:
            value = self.scalar(dtype)
            a.head = np.full(n_head, value, dtype)
            self.q.fill(p, value, n_head)
        else:
            a.head = self.values(dtype, n_head)
            if kind == "device":
                self.q.memcpy(p, a.head, a.head.nbytes)
            else:
                np.asarray(p)[:n_head] = a.head
        if n_tail:
            if kind == "device":
                self.q.memcpy(a.raw + (nbytes - n_tail), tail, n_tail)
            else:
                np.asarray(a.raw)[nbytes - n_tail:] = tail
        self.live.append(a)
        self.made += 1
        return a

    def free(self, a: Live) -> None:
        """Frees without waiting for the work that uses the allocation."""
        self.live.remove(a)
        self._release(a.p.address)
        sycl.free(a.p, self.q)
        self.freed += 1

    def _claim(self, start: int, nbytes: int) -> None:
        end = start + nbytes
        i = bisect.bisect(self.starts, start)
        if i:
            before = self.starts[i - 1]
            assert self.ends[before] <= start, (
                f"[{start:#x}, {end:#x}) overlaps the live [{before:#x}, "
                f"{self.ends[before]:#x})")
        if i < len(self.starts):
            assert end <= self.starts[i], (
                f"[{start:#x}, {end:#x}) overlaps the live allocation at {self.starts[i]:#x}")
        self.starts.insert(i, start)
        self.ends[start] = end

    def _release(self, start: int) -> None:
        del self.starts[bisect.bisect_left(self.starts, start)]
        del self.ends[start]

    # -- values ------------------------------------------------------------------------
    def scalar(self, dtype: np.dtype):
        if dtype == np.float32:  # small integers: doubling stays exact, then reaches inf
            return np.float32(self.rng.integers(-64, 64))
        info = np.iinfo(dtype)
        return dtype.type(self.rng.integers(info.min, info.max, endpoint=True))

    def values(self, dtype: np.dtype, n: int) -> np.ndarray:
        if dtype == np.float32:
            return self.rng.integers(-1000, 1000, n).astype(np.float32)
        return self.rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype)

    def span(self, limit: int) -> int:
        """A log-uniform length in [1, limit]."""
        return min(limit, int(math.exp(self.rng.uniform(0, math.log(limit + 1)))))

    # -- work ----------------------------------------------------------------------------
    def copy(self) -> None:
        """A copy between two tracked heads: bytes at any offsets (memcpy) between byte and
        int32 allocations, whole elements (copy) between float32 ones."""
        rng = self.rng
        src = self.live[int(rng.integers(len(self.live)))]
        family = [a for a in self.live if a.floats == src.floats and a is not src]
        if not family:
            return
        dst = family[int(rng.integers(len(family)))]
        if src.floats:
            so = int(rng.integers(len(src.head)))
            do = int(rng.integers(len(dst.head)))
            n = self.span(min(len(src.head) - so, len(dst.head) - do))
            self.q.copy(src.p + so, dst.p + do, n)
            dst.head[do: do + n] = src.head[so: so + n]
        else:
            sb, db = src.head.view(np.uint8), dst.head.view(np.uint8)
            so, do = int(rng.integers(len(sb))), int(rng.integers(len(db)))
            n = self.span(min(len(sb) - so, len(db) - do))
            self.q.memcpy(dst.raw + do, src.raw + so, n)
            db[do: do + n] = sb[so: so + n]
        self.copies += 1

    def fill(self) -> None:
        a = self.live[int(self.rng.integers(len(self.live)))]
        at = int(self.rng.integers(len(a.head)))
        n = self.span(len(a.head) - at)
        value = self.scalar(a.head.dtype)
        if a.head.dtype == np.uint8 and self.rng.random() < 0.5:
            self.q.memset(a.p + at, int(value), n)
        else:
            self.q.fill(a.p + at, value, n)
        a.head[at: at + n] = value
        self.fills += 1

    def kernel(self, a: Live | None = None):
        if a is None:
            a = self.live[int(self.rng.integers(len(self.live)))]
            if a.head.dtype == np.uint8:
                return None
        at = int(self.rng.integers(len(a.head)))
        n = self.span(len(a.head) - at)
        ev = self.q.parallel_for(sycl.range(n), twice_plus_one(a.p + at))
        seg = a.head[at: at + n]
        seg[...] = seg * 2 + 1  # int32 wraps, as on the device
        self.kernels += 1
        return ev

    def race(self) -> None:
        """A kernel over a host-visible allocation, freed at once; an allocation of its size
        is then written from the host while the kernel may still run. Reusing the freed
        chunk before the kernel completes would let the kernel overwrite that data."""
        kind = ("host", "shared")[int(self.rng.integers(2))]
        dtype = DTYPES[1 + int(self.rng.integers(2))]
        old = self.allocate(kind, dtype, self.span(HEAD))
        ev = self.kernel(old)
        self.free(old)
        self.allocate(kind, dtype, old.nbytes)
        self.races += 1
        self.races_open += not ev.is_complete()

    # -- checks --------------------------------------------------------------------------
    def verify(self) -> None:
        self.q.wait()
        for a in self.live:
            hb = a.head.view(np.uint8)
            if a.kind == "device":
                got_head = download(self.q, a.raw, len(hb))
                got_tail = download(self.q, a.raw + (a.nbytes - len(a.tail)), len(a.tail))
            else:
                raw = np.asarray(a.raw)
                got_head, got_tail = raw[: len(hb)], raw[a.nbytes - len(a.tail):]
            if not np.array_equal(got_head, hb):
                bad = np.flatnonzero(got_head != hb)
                raise AssertionError(f"{a.kind} {a.head.dtype} allocation of {a.nbytes} bytes "
                                     f"at {a.p.address:#x}: {len(bad)} bytes differ, first "
                                     f"at byte {bad[0]}")
            assert np.array_equal(got_tail, a.tail), (
                f"the last bytes of a {a.kind} allocation of {a.nbytes} bytes changed")
        self.verified += len(self.live)


def test_random_allocations_frees_copies_fills_and_kernels(ordered_q):
    """100,000 allocations of log-uniform sizes (1 byte to 6 MiB) of every kind, each freed
    without waiting for the work on it, among copies, fills and kernels whose results are
    compared with numpy mirrors; address ranges of live allocations never overlap."""
    q = ordered_q
    before = sycl.usm_memory_stats(q)
    run = Run(q, seed=20240611)
    rng = run.rng
    kinds = rng.choice(["device", "host", "shared"], ALLOCATIONS)
    dtypes = rng.integers(0, len(DTYPES), ALLOCATIONS)
    sizes = np.exp(rng.uniform(0, math.log(MAX_BYTES), ALLOCATIONS)).astype(np.int64)
    work = rng.random(ALLOCATIONS)
    started = time.perf_counter()
    step = 0
    while run.made < ALLOCATIONS:
        run.allocate(str(kinds[step]), DTYPES[dtypes[step]], int(sizes[step]))
        while len(run.live) > POOL:
            run.free(run.live[int(rng.integers(len(run.live)))])
        w = work[step]
        if w < 0.12:
            run.copy()
        elif w < 0.17:
            run.fill()
        elif w < 0.19:
            run.kernel()
        elif w < 0.2 and run.made < ALLOCATIONS - 1:
            run.race()
        step += 1
        if step % CHECK_EVERY == 0:
            run.verify()
    run.verify()
    while run.live:
        run.free(run.live[-1])
    q.wait()
    elapsed = time.perf_counter() - started
    after = sycl.usm_memory_stats(q)
    print(f"\n{run.made} allocations, {run.freed} frees, {run.copies} copies, {run.fills} "
          f"fills, {run.kernels} kernels, {run.races} reuse races ({run.races_open} with the "
          f"kernel still running), {run.verified} allocations verified in {elapsed:.1f} s; "
          f"reserved {after['reserved'] / MiB:.0f} MiB")
    assert run.made == run.freed == ALLOCATIONS
    assert run.kernels > 1000 and run.copies > 5000 and run.races > 100
    assert after["in_use"] == before["in_use"]
    assert sycl.usm_release_cached(q) > 0
    assert sycl.usm_memory_stats(q)["in_use"] == before["in_use"]


def test_a_freed_chunk_is_not_reused_while_a_kernel_uses_it(ordered_q):
    """A shared allocation freed while a kernel writes it: an allocation of the same size
    made before the kernel completes gets other memory, and keeps what the host wrote."""
    q = ordered_q
    for n in (1 << 20, 1 << 22, 1 << 24):
        a = sycl.malloc_shared(n, sycl.int32, q)
        np.asarray(a)[:] = 1
        ev = q.parallel_for(sycl.range(n), twice_plus_one(a))
        sycl.free(a, q)
        b = sycl.malloc_shared(n, sycl.int32, q)
        running = not ev.is_complete()
        np.asarray(b)[:] = np.arange(n, dtype=np.int32)
        if running:
            assert b.address != a.address
        q.wait()
        np.testing.assert_array_equal(np.asarray(b), np.arange(n, dtype=np.int32))
        sycl.free(b, q)
        if running:
            return
    pytest.skip("every kernel completed before the next allocation")


# -- 2. alignment ------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["device", "host", "shared"])
def test_aligned_allocations(q, kind):
    ptrs = []
    for k, alignment in enumerate((1, 2, 64, 256, 512, 4096, 65536)):
        for count in (1, 3, 1000):
            p = ALIGNED[kind](alignment, count, sycl.int32, q)
            assert p.address % alignment == 0, (alignment, hex(p.address))
            assert p.allocation.nbytes == count * 4
            ptrs.append((p, count, 1000 * k + count))
    for p, count, value in ptrs:  # the memory of each is its own: fill all, then read all
        q.fill(p, np.int32(value), count)
    q.wait()
    for p, count, value in ptrs:
        got = download(q, p, count * 4).view(np.int32)
        np.testing.assert_array_equal(got, np.full(count, value, np.int32))
    for p, _, _ in ptrs:
        sycl.free(p, q)


@pytest.mark.parametrize("kind", ["device", "host", "shared"])
def test_bad_alignments_raise_and_allocate_nothing(q, kind):
    before = sycl.usm_memory_stats(q)["in_use"]
    for alignment in (3, 6, 48, 100, 65535, -1, -64):
        assert code_of(lambda a=alignment: ALIGNED[kind](a, 8, sycl.float32, q)) == \
            sycl.errc.invalid
    assert sycl.usm_memory_stats(q)["in_use"] == before


def test_plain_allocations_are_256_byte_aligned(q):
    ptrs = []
    for kind, fn in MALLOC.items():
        for nbytes in (1, 3, 255, 257, 1000, 4099, 65537, SMALL_LIMIT + 1):
            p = fn(nbytes, sycl.uint8, q)
            assert p.address % 256 == 0, (kind, nbytes, hex(p.address))
            ptrs.append(p)
        p = sycl.malloc(7, sycl.float64, q, sycl.usm.alloc[kind])
        assert p.address % 256 == 0
        ptrs.append(p)
    for p in ptrs:
        sycl.free(p, q)


# -- 3. reuse and statistics -------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["device", "host", "shared"])
def test_a_freed_chunk_is_reused_once_idle(q, kind):
    for nbytes in (1, 300, 5000, 1 << 20, SMALL_LIMIT + 4096):
        p = MALLOC[kind](nbytes, sycl.uint8, q)
        q.fill(p, np.uint8(7), nbytes).wait()
        address = p.address
        sycl.free(p, q)
        again = MALLOC[kind](nbytes, sycl.uint8, q)
        assert again.address == address, nbytes
        q.fill(again, np.uint8(9), nbytes).wait()
        assert np.all(download(q, again, nbytes) == 9)
        sycl.free(again, q)


@pytest.mark.parametrize("kind", ["device", "host", "shared"])
def test_in_use_moves_by_the_size_class(q, kind):
    for nbytes in (1, 255, 256, 257, 2048, 2049, 3000, 100_000, SMALL_LIMIT + 1, 9 * MiB):
        before = sycl.usm_memory_stats(q)
        p = MALLOC[kind](nbytes, sycl.uint8, q)
        during = sycl.usm_memory_stats(q)
        assert during["in_use"] - before["in_use"] == size_class(nbytes) >= nbytes
        assert during["cached"] == during["reserved"] - during["in_use"]
        sycl.free(p, q)
        after = sycl.usm_memory_stats(q)
        assert after["in_use"] == before["in_use"]
        assert after["reserved"] == during["reserved"]  # kept in the cache


def test_size_classes():
    """Whole 256-byte units up to 2 KiB, then eight steps per power of two: at most 12.5%
    more than asked for."""
    assert [size_class(n) for n in (1, 255, 256, 257, 2048)] == [256, 256, 256, 512, 2048]
    assert [size_class(n) for n in (2049, 2305, 4097, 5 * MiB + 1)] == [
        2304, 2560, 4608, 5 * MiB + MiB // 2]
    rng = np.random.default_rng(5)
    sizes = np.unique(np.exp(rng.uniform(0, math.log(1 << 34), 20_000)).astype(np.int64))
    previous = 0
    for n in map(int, sizes):
        c = size_class(n)
        assert c >= n and c % 256 == 0 and c >= previous and size_class(c) == c
        assert n <= 2048 or c - n < n / 8, (n, c)
        previous = c
    for k in range(12, 34):  # eight classes in each (2^(k-1), 2^k]
        low, high = 1 << (k - 1), 1 << k
        assert len({size_class(n) for n in range(low + 1, high + 1, max(1, low // 64))}) == 8


def test_release_cached_gives_back_empty_blocks(q):
    q.wait()
    sycl.usm_release_cached(q)
    base = sycl.usm_memory_stats(q)
    big = [sycl.malloc_device(10 * MiB, sycl.uint8, q), sycl.malloc_shared(7 * MiB, q)]
    small = sycl.malloc_host(1000, sycl.uint8, q)
    grown = sycl.usm_memory_stats(q)
    assert grown["reserved"] >= base["reserved"] + 17 * MiB
    for p in big:
        sycl.free(p, q)
    cached = sycl.usm_memory_stats(q)
    assert cached["in_use"] == grown["in_use"] - size_class(10 * MiB) - size_class(7 * MiB)
    released = sycl.usm_release_cached(q)
    after = sycl.usm_memory_stats(q)
    assert released >= 17 * MiB and released <= cached["cached"]
    assert after["reserved"] == cached["reserved"] - released
    assert after["cached"] == cached["cached"] - released
    assert after["in_use"] == cached["in_use"]
    assert sycl.usm_release_cached(q) == 0  # nothing left to give back
    np.asarray(small)[:] = 5  # what stays live still works
    assert np.all(download(q, small, 1000) == 5)
    sycl.free(small, q)


def test_a_numpy_view_outlives_free_and_release(q):
    """A view of shared memory kept past free and release_cached stays mapped: it reads
    what was last written and is not memory that a later allocation gets."""
    n = (6 * MiB) // 4  # a block of its own, so release_cached gives it back
    p = sycl.malloc_shared(n, sycl.float32, q)
    expected = np.arange(n, dtype=np.float32)
    np.asarray(p)[:] = expected
    view = np.asarray(p)
    q.wait()
    before = sycl.usm_memory_stats(q)
    sycl.free(p, q)
    del p
    gc.collect()
    released = sycl.usm_release_cached(q)
    assert released >= n * 4
    assert sycl.usm_memory_stats(q)["reserved"] == before["reserved"] - released
    np.testing.assert_array_equal(view, expected)
    fresh = sycl.malloc_shared(n, sycl.float32, q)
    np.asarray(fresh)[:] = -1.0
    q.fill(fresh, np.float32(-2.0), n).wait()
    np.testing.assert_array_equal(view, expected)
    view[:10] = 42.0  # still writable, and still not anyone else's memory
    assert np.all(np.asarray(fresh) == -2.0)
    sycl.free(fresh, q)
    sycl.usm_release_cached(q)
    assert view[0] == 42.0 and view[-1] == expected[-1]
    del view
    gc.collect()


# -- 4. running out of memory ------------------------------------------------------------------

class LittleMemory:
    """The engine as the USM allocators see it on a device with `limit` bytes: buffers
    made while it is in place count against the limit until released; one past it raises
    errc.memory_allocation, as Vulkan's failures do. Everything else is the engine's."""

    def __init__(self, engine, limit: int) -> None:
        self.engine, self.limit = engine, limit
        self.held: dict[int, int] = {}  # id(buffer) -> bytes
        self.calls = self.refused = self.released = 0
        self._buffer, self._release = engine.buffer, engine.release

    def __getattr__(self, name: str):
        return getattr(self.engine, name)

    def buffer(self, nbytes: int, host_visible: bool):
        self.calls += 1
        if sum(self.held.values()) + nbytes > self.limit:
            self.refused += 1
            raise sycl.exception(sycl.errc.memory_allocation,
                                 f"emulated: no room for {nbytes} bytes")
        buf = self._buffer(nbytes, host_visible)
        self.held[id(buf)] = buf.nbytes
        return buf

    def release(self, buf) -> None:
        if self.held.pop(id(buf), None) is not None:
            self.released += 1
        self._release(buf)


@pytest.fixture
def little_memory(q, monkeypatch):
    engine = scheduler_for(q.get_device()).engine
    q.wait()
    probe = sycl.malloc_device(17 * MiB, q)
    download(q, probe, 17 * MiB)  # both staging buffers exist before the limit applies
    sycl.free(probe, q)
    sycl.usm_release_cached(q)

    def install(limit: int) -> LittleMemory:
        fake = LittleMemory(engine, limit)
        for allocator in scheduler_for(q.get_device()).allocators.values():
            monkeypatch.setattr(allocator, "engine", fake)
        return fake

    yield install
    monkeypatch.undo()
    q.wait()
    sycl.usm_release_cached(q)


@pytest.mark.parametrize("kind", ["device", "shared"])
def test_out_of_memory_releases_the_cache_then_raises(q, kind, little_memory):
    keep = MALLOC[kind](1000, sycl.int32, q)  # in a block from before the limit
    q.memcpy(keep, np.arange(1000, dtype=np.int32), 4000).wait()
    fake = little_memory(64 * MiB)

    # (a) 40 MiB freed into the cache leave no room for 48 MiB until the cache goes
    a = MALLOC[kind](40 * MiB, sycl.uint8, q)
    q.fill(a, np.uint8(1), 40 * MiB)
    sycl.free(a, q)
    assert sycl.usm_memory_stats(q)["cached"] >= 40 * MiB
    n = (48 * MiB) // 4
    b = MALLOC[kind](n, sycl.float32, q)
    assert fake.refused == 1 and fake.released == 1  # refused, cache released, retried
    assert sum(fake.held.values()) <= fake.limit
    q.fill(b, np.float32(2.5), n).wait()
    q.fill(b + 12345, np.float32(-1.0), 3).wait()
    got = download(q, b, n * 4).view(np.float32)
    expected = np.full(n, 2.5, np.float32)
    expected[12345:12348] = -1.0
    np.testing.assert_array_equal(got, expected)

    # (b) 48 MiB live leave no room for 32 MiB more, whatever the cache holds
    stats = sycl.usm_memory_stats(q)
    assert code_of(lambda: MALLOC[kind](32 * MiB, sycl.uint8, q)) == \
        sycl.errc.memory_allocation
    assert fake.refused >= 2
    assert sycl.usm_memory_stats(q)["in_use"] == stats["in_use"]
    np.testing.assert_array_equal(download(q, b, n * 4).view(np.float32), expected)
    np.testing.assert_array_equal(download(q, keep, 4000).view(np.int32),
                                  np.arange(1000, dtype=np.int32))

    # small allocations still come from the room left
    c = MALLOC[kind](1000, sycl.int32, q)
    q.fill(c, np.int32(-7), 1000).wait()
    assert np.all(download(q, c, 4000).view(np.int32) == -7)
    for p in (b, c, keep):
        sycl.free(p, q)


def test_small_allocations_fill_a_device_too_full_for_a_block(q, little_memory):
    """Small chunks are cut from 32 MiB blocks; with less room than that left, they get
    blocks of their own size instead of failing."""
    fake = little_memory(48 * MiB)
    big = sycl.malloc_device(24 * MiB, sycl.uint8, q)  # leaves 24 MiB: no whole block
    small, count = [], 0
    while fake.refused == 0:  # until the carving block in use is full
        p = sycl.malloc_device(16384, sycl.int32, q)  # 64 KiB
        q.fill(p, np.int32(count), 16384)
        small.append(p)
        count += 1
        assert count <= 32 * MiB // (64 * 1024) + 1
    more = [sycl.malloc_device(16384, sycl.int32, q) for _ in range(3)]
    for i, p in enumerate(more):
        q.fill(p, np.int32(-i), 16384)
    assert sum(fake.held.values()) <= fake.limit
    for i, p in [(0, small[0]), (count - 1, small[-1])] + [(-i, p) for i, p in enumerate(more)]:
        assert np.all(download(q, p, 65536).view(np.int32) == i)
    assert code_of(lambda: sycl.malloc_device(24 * MiB, sycl.uint8, q)) == \
        sycl.errc.memory_allocation
    for p in [big, *small, *more]:
        sycl.free(p, q)


def test_out_of_memory_releases_the_cache_of_the_other_memory_kind(q, little_memory):
    """Host-visible and device-local memory share one heap on many devices (here the
    emulated limit counts both): device memory that does not fit beside cached shared
    memory gets it released."""
    fake = little_memory(64 * MiB)
    shared = sycl.malloc_shared(40 * MiB, sycl.uint8, q)
    q.fill(shared, np.uint8(3), 40 * MiB).wait()
    sycl.free(shared, q)
    assert sycl.usm_memory_stats(q)["cached"] >= 40 * MiB
    n = (48 * MiB) // 4
    d = sycl.malloc_device(n, sycl.float32, q)
    assert fake.refused == 1 and fake.released >= 1
    q.fill(d, np.float32(1.25), n).wait()
    got = download(q, d, n * 4).view(np.float32)
    np.testing.assert_array_equal(got, np.full(n, 1.25, np.float32))
    sycl.free(d, q)


def test_carving_a_new_block_releases_the_cache_first(q, little_memory):
    """Chunks of up to SMALL_LIMIT come from shared blocks; when a new one does not fit
    beside the cached memory, the cache is released and the block made."""
    fake = little_memory(72 * MiB)
    big = sycl.malloc_device(60 * MiB, sycl.uint8, q)
    sycl.free(big, q)
    chunks = []
    while fake.refused == 0 and len(chunks) < 20:  # fill the current block, then one more
        chunks.append(sycl.malloc_device(SMALL_LIMIT, sycl.uint8, q))
    assert fake.refused == 1 and fake.released == 1 and len(chunks) < 20
    for k, p in enumerate(chunks):
        q.fill(p, np.int32(k), SMALL_LIMIT // 4)
    q.wait()
    for k, p in enumerate(chunks):
        got = download(q, p, SMALL_LIMIT).view(np.int32)
        assert got[0] == got[-1] == k and np.all(got == k)
    for p in chunks:
        sycl.free(p, q)


def test_a_request_larger_than_the_heap_raises_at_once(q, little_memory):
    fake = little_memory(1 << 62)
    vk = q.get_device().vulkan
    heap = max(h.size for h in vk.memory_heaps)
    for kind in MALLOC:
        assert code_of(lambda k=kind: MALLOC[k](heap + 1, sycl.uint8, q)) == \
            sycl.errc.memory_allocation
        assert code_of(lambda k=kind: MALLOC[k](heap // 8 + 1, sycl.float64, q)) == \
            sycl.errc.memory_allocation
    assert fake.calls == 0


# -- 5. pointers stored in memory ----------------------------------------------------------------

def test_pointers_in_shared_memory_from_the_host(q):
    a = sycl.malloc_shared(16, sycl.float32, q)
    b = sycl.malloc_device(8, sycl.float32, q)
    c = sycl.malloc_host(4, sycl.float32, q)
    table = sycl.malloc_shared(5, sycl.ptr[sycl.float32], q)
    table[0], table[1], table[2], table[3] = a, b, c, None
    table[4] = a + 5
    got = [table[i] for i in range(5)]
    assert got[0] == a and got[1] == b and got[2] == c and got[3] is None
    assert got[4] == a + 5 and got[4] != a and got[4] - a == 5
    for p in (got[0], got[1], got[2], got[4]):
        assert isinstance(p, sycl.ptr) and p.dtype == np.float32
    # memory holds the device addresses, 0 for None
    words = np.asarray(table.astype(sycl.uint64))
    assert list(words) == [a.address, b.address, c.address, 0, a.address + 20]
    # the pointer read back is usable: it writes the allocation it points into
    got[4][0] = 3.5
    assert np.asarray(a)[5] == 3.5
    # only pointers (or None) go in
    for bad in (5, 1.5, np.uint64(a.address), "a", np.zeros(2)):
        assert code_of(lambda v=bad: table.__setitem__(0, v)) == sycl.errc.invalid
    assert table[0] == a  # unchanged by the failed stores
    # an allocation aligned past the chunks' alignment starts inside its chunk
    aligned = sycl.aligned_alloc_device(4096, 100, sycl.float32, q)
    table[3] = aligned + 99
    assert table[3] == aligned + 99 and table[3].allocation is aligned.allocation
    # end pointers (one past the last element) read back, also when the size fills its size
    # class exactly (these have a block of their own: no other allocation starts there)
    for alloc_fn in (sycl.malloc_shared, sycl.malloc_device):
        for count in (SMALL_LIMIT // 4 + 1000, 2 * SMALL_LIMIT // 4):
            e = alloc_fn(count, sycl.float32, q)
            table[4] = e + count
            assert table[4] == e + count and table[4].count == 0, count
            sycl.free(e, q)
    # an address of freed memory does not read back
    sycl.free(c, q)
    assert code_of(lambda: table[2]) == sycl.errc.invalid
    assert table[1] == b
    for p in (a, b, aligned, table):
        sycl.free(p, q)


# -- 6. allocations past the storage buffer range ----------------------------------------------

def test_fill_and_read_back_past_the_storage_buffer_range(q):
    """200 MiB, or 64 MiB past the device's range where that is larger (4 GiB on NVIDIA)."""
    n = max(200 << 20, q.get_device().vulkan.max_storage_buffer_range + (64 << 20)) // 16 * 4
    x = sycl.malloc_device(n, sycl.float32, q)
    pattern = np.array([1.5, -2.25, 3.0, 1e30], np.float32)
    q.fill(x, pattern, n // 4).wait()
    edge = (128 << 20) // 4 - 3  # a fill across the 128 MiB mark, at an odd element
    q.fill(x + edge, np.float32(-0.5), 7)
    q.fill(x + (n - 1), np.float32(7.0), 1).wait()
    got = np.empty(n, np.float32)
    q.memcpy(got, x, n * 4).wait()
    np.testing.assert_array_equal(got[edge: edge + 7], np.float32(-0.5))
    assert got[-1] == 7.0
    got[edge: edge + 7] = np.tile(pattern, 3)[edge % 4: edge % 4 + 7]
    got[-1] = pattern[-1]
    assert (got.reshape(-1, 4) == pattern).all()
    sycl.free(x, q)
    sycl.usm_release_cached(q)


def test_memcpy_between_150_mib_allocations_at_odd_offsets(q):
    nbytes = 150 << 20
    src = sycl.malloc_device(nbytes, sycl.uint8, q)
    dst = sycl.malloc_device(nbytes, sycl.uint8, q)
    data = np.arange(nbytes // 4, dtype=np.uint32)  # every word different
    data_bytes = data.view(np.uint8)
    q.memcpy(src, data, nbytes).wait()
    for src_at, dst_at in ((7, 3), (5, 21)):  # word-wise, then 16-byte vectors
        length = nbytes - 11 - max(src_at, dst_at)
        q.memset(dst, 0xAB, nbytes).wait()
        q.memcpy(dst + dst_at, src + src_at, length).wait()
        expected = np.full(nbytes, 0xAB, np.uint8)
        expected[dst_at: dst_at + length] = data_bytes[src_at: src_at + length]
        windows = [(0, MiB), (nbytes - MiB, MiB), ((128 << 20) - 1000, 4099),
                   (nbytes // 2 + 1, 65536)]
        rng = np.random.default_rng(src_at)
        windows += [(int(at), 257) for at in rng.integers(0, nbytes - 257, 20)]
        for at, size in windows:
            got = download(q, dst + at, size)
            np.testing.assert_array_equal(got, expected[at: at + size], f"bytes {at}+{size}")
    sycl.free(src, q)
    sycl.free(dst, q)
    sycl.usm_release_cached(q)
