"""numba-vulkan, the other Python-kernels-on-Vulkan project, as a peer in the benchmarks:
the same kernels written for it, on the same device, in the same process as vksycl.

numba-vulkan is not a dependency of vksycl; where it is not importable (or finds no
Vulkan device), `version()` is None and the benchmarks leave its figures out. Each case
selects the device vksycl's queue runs on, by name. Arrays live on the device
(`nv.to_device`), so launches neither copy nor wait; `nv.synchronize()` waits, as
`q.wait()` does for vksycl.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

import numpy as np

Case = tuple[Callable[[], object], Callable[[], object], Callable[[int], None]]


def version() -> str | None:
    """numba-vulkan's version where it runs here, else None."""
    try:
        import numba_vulkan as nv

        if not nv.list_devices():
            return None
        return metadata.version("numba-vulkan")
    except Exception:  # not installed, or no Vulkan loader or device for it
        return None


def launch_case(device: str, n: int) -> Case:
    """`x[i] += 1` over n float32 on the device named `device`: launch, wait, and a check
    of how many launches ran."""
    import numba_vulkan as nv

    nv.select_device(device)

    @nv.jit
    def bump(x):
        i = nv.global_id(0)
        if i < x.shape[0]:
            x[i] = x[i] + np.float32(1.0)

    x = nv.to_device(np.zeros(n, np.float32))
    launch = bump.forall(n)

    def check(launched: int) -> None:
        got = x.copy_to_host()
        assert np.all(got == np.float32(launched)), (got[:4], launched)

    return (lambda: launch(x)), nv.synchronize, check


def stream_case(device: str, n: int, s: float
                ) -> tuple[dict[str, Callable[[], object]], Callable[[], object],
                           Callable[[], np.ndarray]]:
    """STREAM's copy, scale and triad over three arrays of n float32 on the device named
    `device`, set as stream.py sets vksycl's (a = 1, b = 2, c = 0); the wait; and array a
    read back."""
    import numba_vulkan as nv

    nv.select_device(device)

    @nv.jit
    def copy(a, c):
        i = nv.global_id(0)
        if i < c.shape[0]:
            c[i] = a[i]

    @nv.jit
    def scale(b, c, s):
        i = nv.global_id(0)
        if i < b.shape[0]:
            b[i] = s * c[i]

    @nv.jit
    def triad(a, b, c, s):
        i = nv.global_id(0)
        if i < a.shape[0]:
            a[i] = b[i] + s * c[i]

    a = nv.to_device(np.ones(n, np.float32))
    b = nv.to_device(np.full(n, 2.0, np.float32))
    c = nv.to_device(np.zeros(n, np.float32))
    scalar = np.float32(s)
    run_copy, run_scale, run_triad = copy.forall(n), scale.forall(n), triad.forall(n)
    kernels = {"copy": lambda: run_copy(a, c), "scale": lambda: run_scale(b, c, scalar),
               "triad": lambda: run_triad(a, b, c, scalar)}
    return kernels, nv.synchronize, a.copy_to_host
