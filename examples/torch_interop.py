"""vksycl and torch on one GPU, sharing memory with no copy.

vksycl allocates exportable device memory, a kernel fills it, torch takes it through
DLPack (`syclexp.cuda_view`: CUDA imports the Vulkan memory), reads and rewrites it, and a
vksycl kernel reads torch's result. Then the reverse: CUDA allocates the memory
(`syclexp.cuda_exportable`: vksycl imports it), torch fills it, a vksycl kernel rewrites
it in place and torch reads the result. Each side waits for the other's work on the host
(q.wait(), torch.cuda.synchronize()). Needs an NVIDIA GPU, CUDA and torch; elsewhere it
says what is missing and exits.

    python examples/torch_interop.py
"""

from __future__ import annotations

import sys

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

N = 1 << 20


def main() -> int:
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    try:
        ordinal = syclexp.cuda_device_of(q.get_device())
        import torch
    except (sycl.exception, ImportError) as err:
        print(f"torch_interop skipped: {err}")
        return 0

    fd = syclexp.external_mem_handle_type.opaque_fd
    x = syclexp.alloc_exportable_device_mem(0, 4 * N, fd, q, dtype=sycl.float32)

    def fill(i):
        x[i] = sycl.float32(i % 1000)
    q.parallel_for(sycl.range(N), fill).wait()

    view = syclexp.cuda_view(x)
    t = torch.from_dlpack(view)  # the same memory, as a torch tensor on cuda:<ordinal>
    expected = torch.arange(N, device=t.device) % 1000
    assert torch.equal(t, expected.float()), "torch does not see what vksycl wrote"
    print(f"torch sees vksycl's {N} floats on {t.device}, sum {t.sum().item():.0f}")
    torch.sqrt_(t)  # torch rewrites the memory in place
    torch.cuda.synchronize()

    def square_back(i):  # vksycl reads what torch wrote
        x[i] = x[i] * x[i]
    q.parallel_for(sycl.range(N), square_back).wait()
    back = np.zeros(N, np.float32)
    q.memcpy(back, x, 4 * N).wait()
    reference = (np.arange(N) % 1000).astype(np.float32)
    np.testing.assert_allclose(back, reference, rtol=1e-5)
    print(f"vksycl read torch's square roots back on cuda:{ordinal}: max error "
          f"{np.abs(back - reference).max():.2e}")

    del t
    view.close()
    sycl.free(x, q)

    owned = syclexp.cuda_exportable(N, q, dtype=sycl.float32)  # memory CUDA owns
    t = torch.from_dlpack(owned)
    t.copy_(torch.linspace(0, 1, N, device=t.device))
    torch.cuda.synchronize()
    y = owned.ptr

    def affine(i):  # vksycl rewrites torch's tensor in place
        y[i] = y[i] * 3.0 + 1.0
    q.parallel_for(sycl.range(N), affine).wait()
    expected = torch.linspace(0, 1, N, device=t.device) * 3 + 1
    torch.testing.assert_close(t, expected)
    print(f"torch reads vksycl's results in its own memory on {t.device}: max error "
          f"{(t - expected).abs().max().item():.2e}")
    del t
    owned.close()  # vksycl's import first, then CUDA's memory
    return 0


if __name__ == "__main__":
    sys.exit(main())
