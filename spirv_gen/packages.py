"""Files shipped by installed wheels: the cmeel wheels carry the SPIR-V grammar and the
SPIRV-Tools libraries, so nothing needs a system package."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path


def package_files(distribution: str, name: str) -> list[Path]:
    """The files called `name` in an installed distribution; none if it is not installed."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return []
    return [Path(str(dist.locate_file(f))) for f in dist.files or () if f.name == name]
