"""Settings read from the environment, in one place."""

from __future__ import annotations

import os
from pathlib import Path


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
