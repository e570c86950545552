"""vksycl's exportable memory seen by CUDA with no copy (`syclexp.cuda_view`): torch and
cupy read what vksycl's kernels wrote and vksycl's kernels read what they wrote. Needs
an NVIDIA GPU that is both vksycl's default device and a CUDA device; elsewhere the
module is skipped, with the reason."""

from __future__ import annotations

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

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
