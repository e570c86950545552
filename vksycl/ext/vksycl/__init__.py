"""`sycl::ext::vksycl`, vksycl's own extensions: `mpi` (USM to and from MPI, one rank per
device: `from vksycl.ext.vksycl import mpi`), and `release_native_device` (ends vksycl's
use of a device made from an application's Vulkan handles, before the application
destroys them)."""

from ...runtime import mpi
from ...runtime.interop import release_native_device

__all__ = ["mpi", "release_native_device"]
