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
