"""Memory shared by vksycl and CUDA with no copy, both ways: vksycl's exportable memory
seen by CUDA (`syclexp.cuda_view`), and memory CUDA allocated seen by vksycl
(`syclexp.cuda_exportable`). torch and cupy read what vksycl's kernels wrote and vksycl's
kernels read what they wrote. Needs an NVIDIA GPU that is both vksycl's default device
and a CUDA device; elsewhere the module is skipped, with the reason."""

from __future__ import annotations

import os

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp
from vksycl.runtime.cuda_interop import cuda_driver

FD = syclexp.external_mem_handle_type.opaque_fd
N = 1 << 16


def _ordinal() -> int:
    try:
        return syclexp.cuda_device_of(sycl.device())
    except sycl.exception as err:
        pytest.skip(f"no CUDA device is vksycl's default device: {err}",
                    allow_module_level=True)


ORDINAL = _ordinal()


@pytest.fixture
def shared():
    """In-order queue, and exportable float32 memory with its CUDA view."""
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    x = syclexp.alloc_exportable_device_mem(0, 4 * N, FD, q, dtype=sycl.float32)
    view = syclexp.cuda_view(x)
    yield q, x, view
    q.wait()
    view.close()
    sycl.free(x, q)


def iota(q: sycl.queue, x: sycl.ptr) -> None:
    def body(i):
        x[i] = sycl.float32(i) * 0.5
    q.parallel_for(sycl.range(N), body).wait()


def read_back(q: sycl.queue, x: sycl.ptr) -> np.ndarray:
    out = np.zeros(N, np.float32)
    q.memcpy(out, x, 4 * N).wait()
    return out


def test_torch_reads_and_writes_vksycl_memory(shared):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    q, x, view = shared
    iota(q, x)
    t = torch.from_dlpack(view)
    assert t.device == torch.device("cuda", ORDINAL) and t.dtype == torch.float32
    assert t.data_ptr() == view.data  # CUDA's own pointer into the memory: no copy
    assert torch.equal(t, torch.arange(N, device=t.device, dtype=torch.float32) * 0.5)
    t.mul_(4).add_(1)
    torch.cuda.synchronize()

    def half(i):  # vksycl's kernel reads what torch wrote
        x[i] = x[i] * 0.5
    q.parallel_for(sycl.range(N), half).wait()
    np.testing.assert_array_equal(read_back(q, x), np.arange(N, dtype=np.float32) + 0.5)
    assert torch.equal(t, torch.arange(N, device=t.device, dtype=torch.float32) + 0.5)
    del t


def test_cupy_reads_and_writes_vksycl_memory(shared):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    q, x, view = shared
    iota(q, x)
    a = cupy.from_dlpack(view)
    assert a.data.ptr == view.data
    np.testing.assert_array_equal(cupy.asnumpy(a), np.arange(N, dtype=np.float32) * 0.5)
    b = cupy.asarray(view)  # through __cuda_array_interface__
    assert b.data.ptr == view.data
    b -= 1
    cupy.cuda.Device(ORDINAL).synchronize()
    np.testing.assert_array_equal(read_back(q, x), np.arange(N, dtype=np.float32) * 0.5 - 1)
    del a, b


def test_views_from_an_offset_with_a_shape(shared):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    q, x, _ = shared
    iota(q, x)
    view = syclexp.cuda_view(x + 256, shape=(16, 64))
    t = torch.as_tensor(view, device=f"cuda:{ORDINAL}")
    assert t.shape == (16, 64)
    assert t[0, 0].item() == 128.0 and t[15, 63].item() == (256 + 1023) * 0.5
    del t
    view.close()
    with pytest.raises(sycl.exception) as err:
        syclexp.cuda_view(x + 256, shape=(N,))
    assert err.value.code() is sycl.errc.invalid and "does not fit" in str(err.value)


# -- memory CUDA allocated, imported by vksycl (cuda_exportable) ----------------------------
def code_and_message(fn) -> tuple[sycl.errc, str]:
    with pytest.raises(sycl.exception) as err:
        fn()
    return err.value.code(), str(err.value)


@pytest.fixture
def owned():
    """In-order queue, and N float32 of CUDA's memory that vksycl imported."""
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    m = syclexp.cuda_exportable(N, q, dtype=sycl.float32)
    yield q, m
    q.wait()
    m.close()


def test_torch_writes_cuda_memory_and_sees_what_vksycl_wrote(owned):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    q, m = owned
    x = m.ptr
    assert x.count == N and x.dtype == np.float32 and m.shape == (N,)
    assert m.allocation_size >= 4 * N
    assert sycl.get_pointer_type(x, q.get_context()) == sycl.usm.alloc.device
    t = torch.from_dlpack(m)
    assert t.device == torch.device("cuda", ORDINAL) and t.dtype == torch.float32
    assert t.data_ptr() == m.data  # CUDA's own allocation: no copy
    t.copy_(torch.arange(N, device=t.device, dtype=torch.float32) * 0.5)
    torch.cuda.synchronize()

    def affine(i):  # vksycl's kernel reads what torch wrote and rewrites it
        x[i] = x[i] * 4.0 + 1.0
    q.parallel_for(sycl.range(N), affine)
    q.wait()
    expected = np.arange(N, dtype=np.float32) * 2.0 + 1.0
    np.testing.assert_array_equal(t.cpu().numpy(), expected)
    np.testing.assert_array_equal(read_back(q, x), expected)
    del t


def test_cupy_writes_cuda_memory_and_sees_what_vksycl_wrote(owned):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    q, m = owned
    a = cupy.asarray(m)  # through __cuda_array_interface__
    assert a.data.ptr == m.data
    a[:] = cupy.arange(N, dtype=cupy.float32) % 7
    cupy.cuda.Device(ORDINAL).synchronize()
    x = m.ptr

    def add_index(i):
        x[i] = x[i] + sycl.float32(i)
    q.parallel_for(sycl.range(N), add_index).wait()
    expected = (np.arange(N) % 7 + np.arange(N)).astype(np.float32)
    np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(m)), expected)
    del a


def test_memory_operations_reach_cuda_memory_both_ways(owned):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    q, m = owned
    x = m.ptr
    host = np.arange(N, dtype=np.float32) - 7.0
    q.memcpy(x, host, 4 * N).wait()  # host -> CUDA's memory
    t = torch.from_dlpack(m)
    np.testing.assert_array_equal(t.cpu().numpy(), host)
    t.neg_()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(read_back(q, x), -host)  # CUDA's memory -> host
    d = sycl.malloc_device(N, sycl.float32, q)
    q.memcpy(d, x, 4 * N)  # to vksycl's own memory, and back into CUDA's
    q.fill(x, np.float32(3.0), N)
    q.memcpy(x + 16, d + 16, 4 * 32).wait()
    expected = np.full(N, 3.0, np.float32)
    expected[16:48] = -host[16:48]
    np.testing.assert_array_equal(read_back(q, x), expected)
    np.testing.assert_array_equal(t.cpu().numpy(), expected)
    del t
    sycl.free(d, q)


def test_memory_operations_past_the_size_asked_for_are_refused(owned):
    """CUDA rounds its allocation up to its granularity; vksycl's bounds are the size
    asked for."""
    q, m = owned
    x = m.ptr
    out = np.zeros(N + 1, np.float32)
    code, message = code_and_message(lambda: q.memcpy(out, x, 4 * (N + 1)))
    assert code is sycl.errc.invalid and f"allocation of {4 * N} bytes" in message
    code, message = code_and_message(lambda: q.memcpy(x + (N - 1), out, 8))
    assert code is sycl.errc.invalid and "overrun" in message
    code, message = code_and_message(lambda: q.fill(x + N, np.float32(1.0), 1))
    assert code is sycl.errc.invalid and "overrun" in message


def test_a_shape_and_dtype():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    m = syclexp.cuda_exportable((16, 64), q, dtype=sycl.int32)
    x = m.ptr
    assert x.count == 1024 and m.shape == (16, 64)
    t = torch.from_dlpack(m)
    assert t.shape == (16, 64) and t.dtype == torch.int32
    t.copy_(torch.arange(1024, dtype=torch.int32, device=t.device).reshape(16, 64))
    torch.cuda.synchronize()

    def odd_rows_negated(i):
        x[i] = -x[i] if (i // 64) % 2 == 1 else x[i] * 2
    q.parallel_for(sycl.range(1024), odd_rows_negated).wait()
    expected = np.arange(1024, dtype=np.int32).reshape(16, 64) * 2
    expected[1::2] = -np.arange(1024, dtype=np.int32).reshape(16, 64)[1::2]
    np.testing.assert_array_equal(t.cpu().numpy(), expected)
    del t
    m.close()


def test_close_ends_vksycls_import_before_cudas_memory(monkeypatch):
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    m = syclexp.cuda_exportable(N, q, dtype=sycl.int32)
    x = m.ptr
    q.fill(x, np.int32(5), N)  # still running, maybe: close waits for it
    driver = cuda_driver()
    real = driver.call
    seen = []

    def call(name, *args):
        if name.startswith("cuMem"):
            seen.append((name, x.allocation.freed, x.allocation.parent.released))
        return real(name, *args)
    monkeypatch.setattr(driver, "call", call)
    m.close()
    assert [name for name, _, _ in seen] == ["cuMemUnmap", "cuMemAddressFree", "cuMemRelease"]
    assert all(freed and released for _, freed, released in seen)
    m.close()  # a second close destroys nothing
    assert len(seen) == 3
    code, message = code_and_message(lambda: q.memcpy(np.zeros(1, np.int32), x, 4))
    assert code is sycl.errc.invalid and "freed" in message
    code, message = code_and_message(lambda: m.__cuda_array_interface__)
    assert code is sycl.errc.invalid and "closed" in message


def test_a_pointer_freed_first_is_not_freed_again():
    q = sycl.queue()
    m = syclexp.cuda_exportable(N, q, dtype=sycl.uint8)
    sycl.free(m.ptr, q)  # ends vksycl's mapping; the import and CUDA's memory stay
    assert not m.ptr.allocation.parent.released
    m.close()
    assert m.ptr.allocation.parent.released and m.closed


def test_nothing_is_left_open_or_allocated():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    q = sycl.queue()
    torch.cuda.mem_get_info(ORDINAL)  # first uses open what CUDA and Vulkan keep open
    syclexp.cuda_exportable(1, q).close()
    fds = len(os.listdir("/proc/self/fd"))
    free = torch.cuda.mem_get_info(ORDINAL)[0]
    size = 64 << 20
    for _ in range(8):
        m = syclexp.cuda_exportable(size, q)
        assert torch.cuda.mem_get_info(ORDINAL)[0] <= free - size
        m.close()
    assert len(os.listdir("/proc/self/fd")) == fds
    assert torch.cuda.mem_get_info(ORDINAL)[0] >= free - (8 << 20)


def test_a_device_cuda_does_not_see_is_named():
    for dev in sycl.device.get_devices():
        try:
            syclexp.cuda_device_of(dev)
        except sycl.exception:
            break
    else:
        pytest.skip("CUDA sees every vksycl device here")
    code, message = code_and_message(lambda: syclexp.cuda_exportable(64, sycl.queue(dev)))
    assert code is sycl.errc.feature_not_supported and "no CUDA device" in message
