"""Byte-exact copies and fills between every kind of memory, at odd offsets and sizes."""

import numpy as np
import pytest

import vksycl as sycl

KINDS = ["numpy", "host", "device", "shared"]
SIZE = 300_000
rng = np.random.default_rng(7)


def make(q, kind, nbytes=SIZE):
    if kind == "numpy":
        return np.zeros(nbytes, np.uint8)
    return {"host": sycl.malloc_host, "device": sycl.malloc_device,
            "shared": sycl.malloc_shared}[kind](nbytes, sycl.uint8, q)


def upload(q, mem, data):
    if isinstance(mem, np.ndarray):
        mem[:] = data
    else:
        q.memcpy(mem, data, data.nbytes).wait()


def download(q, mem, nbytes=SIZE):
    if isinstance(mem, np.ndarray):
        return mem.copy()
    out = np.zeros(nbytes, np.uint8)
    q.memcpy(out, mem, nbytes).wait()
    return out


def at(mem, offset):
    return mem[offset:] if isinstance(mem, np.ndarray) else mem + offset


@pytest.fixture(scope="module")
def buffers(q):
    made = {k: (make(q, k), make(q, k)) for k in KINDS}
    yield made
    for k, pair in made.items():
        if k != "numpy":
            for p in pair:
                sycl.free(p, q)


CASES = [(0, 0, 1), (1, 0, 3), (0, 3, 5), (3, 1, 17), (5, 7, 33), (16, 16, 4096),
         (17, 1, 4097), (2, 2, 70001), (13, 29, 262147), (8, 24, 0)]


def test_round_trip_device_is_exact(q, buffers):
    dev = buffers["device"][0]
    data = rng.integers(0, 256, SIZE, dtype=np.uint8)
    upload(q, dev, data)
    assert np.array_equal(download(q, dev), data)


@pytest.mark.parametrize("src_kind", KINDS)
@pytest.mark.parametrize("dst_kind", KINDS)
def test_memcpy_every_direction(q, buffers, src_kind, dst_kind):
    src, dst = buffers[src_kind][0], buffers[dst_kind][1]
    src_data = rng.integers(0, 256, SIZE, dtype=np.uint8)
    upload(q, src, src_data)
    for so, do, n in CASES:
        before = rng.integers(0, 256, SIZE, dtype=np.uint8)
        upload(q, dst, before)
        q.memcpy(at(dst, do), at(src, so), n).wait()
        expected = before.copy()
        expected[do:do + n] = src_data[so:so + n]
        got = download(q, dst)
        assert np.array_equal(got, expected), (src_kind, dst_kind, so, do, n)


def test_copy_counts_elements(q):
    a = sycl.malloc_shared(100, sycl.float64, q)
    d = sycl.malloc_device(100, np.float64, q)
    src = np.linspace(0, 1, 100)
    q.copy(src, d, 100).wait()
    q.copy(d + 10, a, 50).wait()
    assert np.array_equal(np.asarray(a)[:50], src[10:60])
    sycl.free(a, q)
    sycl.free(d, q)


@pytest.mark.parametrize("kind", ["host", "device", "shared"])
@pytest.mark.parametrize("pattern", [
    np.uint8(0xAB), np.uint16(0xBEEF), np.float32(1.5), np.float64(-2.25),
    np.arange(4, dtype=np.uint32) + 0x11223344, bytes(range(3)), bytes(range(12)),
    bytes(range(64)), bytes(range(100)),
], ids=lambda p: f"{len(np.asarray(p).tobytes()) if not isinstance(p, bytes) else len(p)}B")
def test_fill_patterns_at_odd_offsets(q, buffers, kind, pattern):
    mem = buffers[kind][0]
    raw = pattern if isinstance(pattern, bytes) else np.asarray(pattern).tobytes()
    for offset, count in [(0, 1), (1, 3), (3, 17), (5, 1000), (16, 2900)]:
        before = rng.integers(0, 256, SIZE, dtype=np.uint8)
        upload(q, mem, before)
        q.fill(at(mem, offset), pattern, count).wait()
        expected = before.copy()
        n = count * len(raw)
        expected[offset:offset + n] = np.resize(np.frombuffer(raw, np.uint8), n)
        assert np.array_equal(download(q, mem), expected), (kind, len(raw), offset, count)


@pytest.mark.parametrize("kind", ["host", "device", "shared"])
def test_memset(q, buffers, kind):
    mem = buffers[kind][0]
    before = rng.integers(0, 256, SIZE, dtype=np.uint8)
    upload(q, mem, before)
    q.memset(at(mem, 7), 0x5A, 100_003).wait()
    expected = before.copy()
    expected[7:100_010] = 0x5A
    assert np.array_equal(download(q, mem), expected)


def test_typed_fill_of_float_pointer(q):
    a = sycl.malloc_shared(1000, sycl.float32, q)
    q.fill(a, 2.5, 1000).wait()
    assert np.all(np.asarray(a) == np.float32(2.5))
    sycl.free(a, q)


@pytest.mark.parametrize("kind", ["device", "shared"])
def test_copies_and_fills_at_odd_offsets_of_a_large_allocation(q, kind):
    """Copies and fills reach memory by address: odd offsets and lengths, no windows."""
    n = 300_001
    a = make(q, kind, n)
    b = make(q, "device", n)
    data = rng.integers(0, 256, n, dtype=np.uint8)
    upload(q, a, data)
    assert np.array_equal(download(q, a, n), data)
    q.memcpy(b + 3, a + 70_000, 200_000).wait()
    got = download(q, b, n)
    assert np.array_equal(got[3:200_003], data[70_000:270_000])
    q.fill(a + 65_530, np.uint32(0xDEADBEEF), 10).wait()
    expected = data.copy()
    expected[65_530:65_570] = np.resize(np.frombuffer(np.uint32(0xDEADBEEF).tobytes(),
                                                      np.uint8), 40)
    assert np.array_equal(download(q, a, n), expected)
    if kind == "shared":
        assert a[65_531] == expected[65_531] and a[131_072] == expected[131_072]
        assert np.array_equal(np.asarray(a), expected)
    sycl.free(a, q)
    sycl.free(b, q)


@pytest.mark.parametrize("window", [4096, 4099])
def test_numpy_copies_through_many_staging_windows(q, window):
    """Copies between numpy and device memory go through two alternating staging buffers;
    make them small so one copy takes many windows, overlapped host and device work."""
    from vksycl.runtime.context import scheduler_for

    sched = scheduler_for(q.get_device())
    saved = sched.staging_bytes, sched._staging
    sched.staging_bytes, sched._staging = window, []
    try:
        n = 100_003
        data = rng.integers(0, 256, n, dtype=np.uint8)
        d = sycl.malloc_device(n + 16, sycl.uint8, q)
        q.memset(d, 0xEE, n + 16).wait()
        q.memcpy(d + 5, data, n).wait()
        out = np.zeros(n + 16, np.uint8)
        q.memcpy(out, d, n + 16).wait()
        assert np.array_equal(out[5:n + 5], data)
        assert np.all(out[:5] == 0xEE) and np.all(out[n + 5:] == 0xEE)
        back = np.zeros(n - 7, np.uint8)
        q.memcpy(back, d + 12, n - 7).wait()
        assert np.array_equal(back, data[7:])
        sycl.free(d, q)
    finally:
        sched.staging_bytes, sched._staging = saved
