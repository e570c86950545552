"""`sycl::ext::vksycl`, vksycl's own extensions: `autodiff` (reverse-mode automatic
differentiation of kernels: `from vksycl.ext.vksycl import autodiff as ad`), `mpi` (USM
to and from MPI, one rank per device: `from vksycl.ext.vksycl import mpi`),
`release_native_device` (ends vksycl's use of a device made from an application's Vulkan
handles, before the application destroys them), and `native_queue_lock` (an
application's submissions to the VkQueue it shares with vksycl)."""

from ...runtime import mpi
from ...runtime.interop import native_queue_lock, release_native_device
from . import autodiff

__all__ = ["autodiff", "mpi", "native_queue_lock", "release_native_device"]
