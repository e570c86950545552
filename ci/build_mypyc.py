"""Compiles `vksycl.mypyc_modules.MODULES` with mypyc into `build/mypyc/<interpreter>/`,
with a manifest of the sources' hashes that `vksycl.mypyc_modules.install` checks. Does
nothing when the manifest already matches the sources. Needs mypy and a C compiler
(ci/setup.sh installs both).

    python ci/build_mypyc.py [--force]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vksycl import mypyc_modules as mm  # noqa: E402  (the source tree's, not an install's)


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
                setup(name="vksycl-mypyc", script_args=[
                    "build_ext", "--build-lib", str(out), "--build-temp", str(Path(tmp) / "t"),
                    "--parallel", str(os.cpu_count() or 1)],
                    ext_modules=mypycify([*sources, "--ignore-missing-imports",
                                          "--follow-imports=silent"],
                                         group_name=mm.GROUP, target_dir=str(Path(tmp) / "c")))
            except BaseException as err:  # setuptools exits with SystemExit
                failed = err
        if failed is not None:
            sys.stderr.write(log.read_text()[-20000:])
            raise SystemExit(f"mypyc build failed: {failed}")
        files = {m: m.replace(".", "/") + suffix for m in mm.MODULES}
        files[mm.GROUP + "__mypyc"] = mm.GROUP + "__mypyc" + suffix
        shutil.rmtree(mm.BUILD, ignore_errors=True)
        for file in files.values():
            (mm.BUILD / file).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(out / file, mm.BUILD / file)
    manifest = {"sources": mm.source_hashes(), "files": files}
    (mm.BUILD / mm.MANIFEST).write_text(json.dumps(manifest, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build even if up to date")
    args = parser.parse_args()
    try:
        built = json.loads((mm.BUILD / mm.MANIFEST).read_text())["sources"]
    except (OSError, ValueError, KeyError):
        built = None
    if args.force or built != mm.source_hashes():
        build()
    print(f"mypyc modules: {len(mm.MODULES)} in {mm.BUILD.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
