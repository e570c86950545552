"""The modules every launch runs through, compiled to C by mypyc from this very source,
and how they are loaded. A launch is host Python from the user's call down to the Vulkan
submission (queue, handler, plan lookup and identity checks, argument rings, scheduler,
engine): compiled, it costs the host a third fewer instructions, with no second
implementation to keep in step. Argument packing (`kernels/marshal.py`) stays interpreted,
and `event` keeps its fields in C (docs/architecture.md, "Compiled modules", says why).

`ci/build_mypyc.py` compiles `MODULES` as one group into `build/mypyc/<interpreter>/`
and records each source's hash there. Importing vksycl puts a finder for them first on
`sys.meta_path` when every hash still matches: compiled modules call each other
directly in C, so an edited source takes the whole group back to the interpreted modules
(until the next build) rather than mixing an old compiled module with a new one.
`VKSYCL_MYPYC=0` keeps the interpreted modules; `loaded()` says which ran.

An installed wheel carries the compiled modules beside their sources (CMakeLists.txt builds
them, as mypy and black ship theirs), so Python's own import finds them first and nothing
is built or checked at import; there `VKSYCL_MYPYC=0` puts a finder of the sources first.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

MODULES = (
    "vksycl.runtime.submission",
    "vksycl.runtime.commands",
    "vksycl.runtime.scheduler",
    "vksycl.runtime.queue",
    "vksycl.runtime.handler",
    "vksycl.kernels.argument_ring",
    "vksycl.kernels.streak",
    "vksycl.kernels.launch",
    "vksycl.kernels.free_function",
    "vksycl.kernels.plans",
    "vksycl.kernels.variants",
    "vksycl.kernels.device_checks",
    "vksycl.runtime.engine",
    "vksycl.kernels.bundle_members",
    "vksycl.kernels.bundle",
)
# the shared library of the group's code, vksycl_mypyc__mypyc, lies above the package tree
# (as mypy's and black's do): mypyc derives the compiled modules' __file__ from that
GROUP = "vksycl_mypyc"
ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "mypyc" / sys.implementation.cache_tag
MANIFEST = "manifest.json"


def source_hashes() -> dict[str, str]:
    """Each module's source hash, as the build records it."""
    return {m: hashlib.sha256((ROOT / (m.replace(".", "/") + ".py")).read_bytes()).hexdigest()
            for m in MODULES}


class _Finder:
    """Finds the compiled form of the group's modules (and its shared library)."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        found = self.paths.get(name)
        if found is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(name, str(found))
        return importlib.util.spec_from_file_location(name, found, loader=loader)


_finder: _Finder | None = None


def usable(manifest: dict[str, Any], build: Path = BUILD) -> dict[str, Path] | None:
    """The files of a build (module -> path) when its `manifest` records the present
    sources and every file is there; else None."""
    if manifest.get("sources") != source_hashes():
        return None
    paths = {name: build / file for name, file in manifest.get("files", {}).items()}
    return paths if paths and all(p.exists() for p in paths.values()) else None


class _SourceFinder:
    """Finds the interpreted form of the group's modules where the compiled one lies
    beside it (an installed wheel)."""

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name not in MODULES:
            return None
        return importlib.util.spec_from_file_location(
            name, ROOT / (name.replace(".", "/") + ".py"))


def installed_compiled() -> bool:
    """Whether this is an installed wheel, its compiled modules beside their sources."""
    return (ROOT / (GROUP + "__mypyc" + importlib.machinery.EXTENSION_SUFFIXES[0])).exists()


def install() -> None:
    """Makes the compiled modules the ones imported, if built from the present sources."""
    global _finder
    if _finder is not None:
        return
    if installed_compiled():
        if os.environ.get("VKSYCL_MYPYC", "1") == "0":
            sys.meta_path.insert(0, _SourceFinder())
        return
    if os.environ.get("VKSYCL_MYPYC", "1") == "0":
        return
    try:
        paths = usable(json.loads((BUILD / MANIFEST).read_text()))
    except (OSError, ValueError):
        return
    if paths is not None:
        _finder = _Finder(paths)
        sys.meta_path.insert(0, _finder)


def loaded() -> list[str]:
    """The modules of `MODULES` imported in compiled form."""
    return [m for m in MODULES if m in sys.modules and
            not str(getattr(sys.modules[m], "__file__", "")).endswith(".py")]


install()
