"""Compiles `vksycl.mypyc_modules.MODULES` with mypyc into `build/mypyc/<interpreter>/`,
with a manifest of the sources' hashes that `vksycl.mypyc_modules.install` checks. Does
nothing when the manifest already matches the sources. Needs mypy and a C compiler
(ci/setup.sh installs both).

    python ci/build_mypyc.py [--force]
    python ci/build_mypyc.py --emit-cmake DIR

`--emit-cmake` only generates the C sources into DIR with `DIR/targets.cmake`, which
builds and installs them beside their Python sources: how the wheel gets them
(CMakeLists.txt). It needs no vksycl dependency, only mypy.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _source_tree_module() -> ModuleType:
    """The source tree's vksycl/mypyc_modules.py, loaded alone: importing the package
    would need its dependencies, which a wheel's build environment lacks."""
    spec = importlib.util.spec_from_file_location("_vksycl_mypyc_modules",
                                                  ROOT / "vksycl" / "mypyc_modules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mm = _source_tree_module()
# no incremental cache: one from an earlier layout (Kompute as the top-level `kp`) made
# mypyc compile `from .. import _kp as kp` into an import of `kp`
MYPY_ARGS = ["--ignore-missing-imports", "--follow-imports=silent", "--cache-dir=/dev/null"]


@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Sends this process's output (the compiler's too) to `log` meanwhile."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log.open("w") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def build() -> None:
    from mypyc.build import mypycify
    from setuptools import setup

    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    sources = [m.replace(".", "/") + ".py" for m in mm.MODULES]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lib"
        os.chdir(ROOT)  # mypyc names modules by their paths from here
        log = Path(tmp) / "log"
        failed: BaseException | None = None
        with _output_to(log):
            try:
                setup(name="vksycl-mypyc", packages=[], py_modules=[], script_args=[
                    "build_ext", "--build-lib", str(out), "--build-temp", str(Path(tmp) / "t"),
                    "--parallel", str(os.cpu_count() or 1)],
                    ext_modules=mypycify([*sources, *MYPY_ARGS], group_name=mm.GROUP,
                                         target_dir=str(Path(tmp) / "c")))
            except BaseException as err:  # setuptools exits with SystemExit
                failed = err
        if failed is not None:
            sys.stderr.write(log.read_text()[-20000:])
            raise SystemExit(f"mypyc build failed: {failed}")
        files = {m: m.replace(".", "/") + suffix for m in (*mm.MODULES, mm.GROUP + "__mypyc")}
        shutil.rmtree(mm.BUILD, ignore_errors=True)
        for file in files.values():
            (mm.BUILD / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(out / file, mm.BUILD / file)
    manifest = {"sources": mm.source_hashes(), "files": files}
    (mm.BUILD / mm.MANIFEST).write_text(json.dumps(manifest, indent=1))


def emit_cmake(out: Path) -> None:
    """Generates the C sources into `out` and `out/targets.cmake`, one CMake module
    target per extension mypyc defines, installed where its package lies."""
    from mypyc.build import mypycify

    os.chdir(ROOT)
    sources = [m.replace(".", "/") + ".py" for m in mm.MODULES]
    log = out / "mypyc.log"
    try:
        with _output_to(log):
            extensions = mypycify([*sources, *MYPY_ARGS], group_name=mm.GROUP,
                                  target_dir=str(out))
    except BaseException as err:  # mypyc exits with SystemExit on type errors
        sys.stderr.write(log.read_text()[-20000:])
        raise SystemExit(f"mypyc failed: {err}") from err
    lines = []
    for i, ext in enumerate(extensions):
        package, _, name = ext.name.rpartition(".")
        target = f"vksycl_mypyc_{i}"
        quoted = " ".join(f'"{Path(p).resolve()}"' for p in ext.sources)
        lines += [f"Python_add_library({target} MODULE WITH_SOABI {quoted})",
                  f'set_target_properties({target} PROPERTIES OUTPUT_NAME "{name}")',
                  f"install(TARGETS {target} LIBRARY DESTINATION "
                  f"{package.replace('.', '/') or '.'})"]
        if ext.include_dirs:
            dirs = " ".join(f'"{Path(d).resolve()}"' for d in ext.include_dirs)
            lines.append(f"target_include_directories({target} PRIVATE {dirs})")
        if ext.extra_compile_args:
            lines.append(f"target_compile_options({target} PRIVATE "
                         f"{' '.join(ext.extra_compile_args)})")
    (out / "targets.cmake").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build even if up to date")
    parser.add_argument("--emit-cmake", type=Path, metavar="DIR",
                        help="only generate C sources and CMake targets into DIR")
    args = parser.parse_args()
    if args.emit_cmake:
        args.emit_cmake.mkdir(parents=True, exist_ok=True)
        emit_cmake(args.emit_cmake.resolve())
        return
    try:
        built = json.loads((mm.BUILD / mm.MANIFEST).read_text())["sources"]
    except (OSError, ValueError, KeyError):
        built = None
    if args.force or built != mm.source_hashes():
        build()
    print(f"mypyc modules: {len(mm.MODULES)} in {mm.BUILD.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
