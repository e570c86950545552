"""The launch path's modules compiled by mypyc (vksycl/mypyc_modules.py): the suite runs
them, a build of other sources is never loaded, and `VKSYCL_MYPYC=0` runs the
interpreted ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from vksycl import mypyc_modules

LAUNCH = textwrap.dedent("""
    import numpy as np
    import vksycl as sycl
    from vksycl import mypyc_modules
    from kernels_for_mypyc import double
    q = sycl.queue()
    x = sycl.malloc_shared(64, sycl.float32, q)
    x[:] = np.arange(64, dtype=np.float32)
    for _ in range(3):
        q.parallel_for(sycl.range(64), double(x)).wait()
    assert np.array_equal(np.asarray(x), np.arange(64, dtype=np.float32) * 8)
    print(",".join(mypyc_modules.loaded()))
""")
KERNEL = textwrap.dedent("""
    def double(x):
        def body(i):
            x[i] = x[i] * 2
        return body
""")


def _run(tmp_path, env: dict[str, str]) -> list[str]:
    (tmp_path / "kernels_for_mypyc.py").write_text(KERNEL)
    out = subprocess.run([sys.executable, "-c", LAUNCH], cwd=tmp_path, check=True,
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(mypyc_modules.ROOT), str(tmp_path),
                              os.environ.get("PYTHONPATH", "")]), **env})
    return [m for m in out.stdout.strip().split(",") if m]


def test_the_suite_runs_the_compiled_modules():
    """ci/setup.sh builds them; after an edit, `python ci/build_mypyc.py` again."""
    assert mypyc_modules.loaded() == list(mypyc_modules.MODULES), \
        "the mypyc build is missing or older than the sources: run python ci/build_mypyc.py"


def test_a_launch_runs_compiled_and_interpreted(tmp_path):
    assert _run(tmp_path, {}) == list(mypyc_modules.MODULES)
    assert _run(tmp_path, {"VKSYCL_MYPYC": "0"}) == []


def test_a_build_of_other_sources_is_not_used():
    manifest = json.loads((mypyc_modules.BUILD / mypyc_modules.MANIFEST).read_text())
    assert mypyc_modules.usable(manifest) is not None
    edited = {**manifest, "sources": {**manifest["sources"],
                                      mypyc_modules.MODULES[0]: "0" * 64}}
    assert mypyc_modules.usable(edited) is None
    missing = {**manifest, "files": {**manifest["files"], mypyc_modules.MODULES[0]: "gone.so"}}
    assert mypyc_modules.usable(missing) is None
