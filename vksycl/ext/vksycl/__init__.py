"""`sycl::ext::vksycl`, vksycl's own extensions: `mpi` (USM to and from MPI, one rank per
device: `from vksycl.ext.vksycl import mpi`), `release_native_device` (ends vksycl's
use of a device made from an application's Vulkan handles, before the application
destroys them), and `native_queue_lock` (an application's submissions to the VkQueue it
shares with vksycl)."""

from ...runtime import mpi
from ...runtime.interop import native_queue_lock, release_native_device

__all__ = ["mpi", "native_queue_lock", "release_native_device"]
