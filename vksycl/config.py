"""Settings read from the environment, in one place."""

from __future__ import annotations

import os
from pathlib import Path

from .exceptions import errc, exception


def cache_dir(*parts: str) -> Path:
    """Where compiled kernels and shaders are cached: `VKSYCL_CACHE_DIR`, else
    `$XDG_CACHE_HOME/vksycl`, else `~/.cache/vksycl`."""
    root = os.environ.get("VKSYCL_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vksycl"
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def batch_window_s() -> float:
    """How long an open batch of eager commands takes more commands before the next
    submission sends it: `VKSYCL_BATCH_WINDOW_US` microseconds (default 100; 0 submits
    every command at once, as an unbatched runtime would)."""
    raw = os.environ.get("VKSYCL_BATCH_WINDOW_US", "100")
    try:
        value = float(raw)
    except ValueError:
        raise exception(errc.invalid, "VKSYCL_BATCH_WINDOW_US must be a number of "
                        f"microseconds, got {raw!r}") from None
    return max(value, 0.0) * 1e-6


def wait_timeout_s() -> float:
    """How long a wait for the device may block before it raises errc.runtime:
    `VKSYCL_WAIT_TIMEOUT_S` seconds (default 0: no limit). The work goes on after the
    error: Vulkan cannot stop a running kernel."""
    raw = os.environ.get("VKSYCL_WAIT_TIMEOUT_S", "0")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise exception(errc.invalid, "VKSYCL_WAIT_TIMEOUT_S must be a number of seconds "
                        f"(0: no limit), got {raw!r}")
    return value


def device_instances() -> int:
    """How many SYCL devices each Vulkan physical device appears as:
    `VKSYCL_DEVICE_INSTANCES` (default 1). Each instance is a device of its own (its own
    Vulkan logical device, queue and memory), so code written for several devices can be
    tested on a machine with one."""
    raw = os.environ.get("VKSYCL_DEVICE_INSTANCES", "1").strip() or "1"
    if not raw.isdigit() or int(raw) < 1:
        raise exception(errc.invalid, "VKSYCL_DEVICE_INSTANCES must be a positive whole "
                        f"number, got {raw!r}")
    return int(raw)


# what MPI launchers set to a process's rank among the processes on its node: Open MPI,
# MPICH and Intel MPI (Hydra), Slurm's srun, Cray PALS, and PMIx launchers
LOCAL_RANK_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                        "PALS_LOCAL_RANKID", "PMIX_LOCAL_RANK")


def local_rank() -> int:
    """This process's rank among the MPI processes of its node, from the first of
    `LOCAL_RANK_VARIABLES` that is set; 0 outside an MPI launcher (one process)."""
    for name in LOCAL_RANK_VARIABLES:
        raw = os.environ.get(name, "").strip()
        if raw:
            if not raw.isdigit():
                raise exception(errc.invalid, f"{name}={raw!r} is not a local rank")
            return int(raw)
    return 0


_CHECK_KINDS = ("bounds", "nan")


def _checks() -> frozenset[str]:
    raw = os.environ.get("VKSYCL_CHECK", "")
    kinds = frozenset(k.strip() for k in raw.split(",") if k.strip())
    unknown = sorted(kinds - set(_CHECK_KINDS))
    if unknown:
        raise exception(errc.invalid, f"VKSYCL_CHECK takes {', '.join(_CHECK_KINDS)} "
                        f"(comma-separated), got {', '.join(unknown)}")
    if "nan" in kinds and "bounds" not in kinds:
        raise exception(errc.invalid, "VKSYCL_CHECK=nan goes with bounds: bounds,nan")
    return kinds


# what checked mode checks in every kernel (`VKSYCL_CHECK=bounds` or `bounds,nan`), read
# once, when vksycl is imported: kernels compiled with checks are cached apart
CHECKS = _checks()


def _spirv_opt() -> bool:
    raw = os.environ.get("VKSYCL_SPIRV_OPT", "0").strip() or "0"
    if raw not in ("0", "1"):
        raise exception(errc.invalid, f"VKSYCL_SPIRV_OPT takes 0 or 1, got {raw!r}")
    return raw == "1"


# whether every compiled kernel's SPIR-V goes through spirv-opt's performance passes
# (`VKSYCL_SPIRV_OPT=1`), read once, when vksycl is imported: such kernels are cached apart.
# Off by default: the drivers optimise the SPIR-V they are given, what the passes add on
# top of that is still to be measured on a GPU, and on lavapipe they change one result of
# the differential campaign (benchmarks/RESULTS.md).
SPIRV_OPT = _spirv_opt()
