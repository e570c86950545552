"""Checked mode (`VKSYCL_CHECK=bounds,nan`) on lavapipe: each kind of bug is stopped and
reported at its line, with the work-item, the access and the allocation it hit; correct
kernels run as they would unchecked. The mode is read at import, so the kernels run in a
process of their own (`checked_program.py`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = Path(__file__).with_name("checked_program.py")


def line_of(marker: str) -> int:
    lines = PROGRAM.read_text().splitlines()
    found = [n for n, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(found) == 1, marker
    return found[0]


def run(checks: str, *cases: str) -> dict:
    env = {**os.environ, "VKSYCL_CHECK": checks, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, str(PROGRAM), *cases], capture_output=True,
                          text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def results() -> dict:
    return run("bounds,nan")


def report(results: dict, case: str) -> str:
    found = results[case]
    assert found is not None, f"{case}: nothing reported"
    message, runtime = found
    assert runtime, message
    return message


@pytest.mark.parametrize("kind", ["device", "shared", "host"])
@pytest.mark.parametrize("access", ["read", "write"])
def test_past_the_end_of_usm(results, kind, access):
    message = report(results, f"{access}-{kind}")
    marker = "READ-PAST" if access == "read" else "WRITE-PAST"
    assert f"{PROGRAM}:{line_of(marker)}:" in message
    assert f"out-of-bounds {'load' if access == 'read' else 'store'}" in message
    assert "work-item 15; 1 access stopped" in message
    assert "4-byte access at 0x" in message
    assert f"is outside {kind} USM of 64 bytes" in message and "0 bytes past its end" in message


def test_before_the_start(results):
    message = report(results, "before-start")
    assert f"{PROGRAM}:{line_of('BEFORE-START')}:" in message
    assert "work-item 0; 1 access stopped" in message
    # three accesses at offsets proven not negative: one comparison each; the shifted
    # load two, its store one
    assert results["triad-compares"] == 3
    assert results["shifted-compares"] == 3


def test_off_by_one_in_a_2d_kernel(results):
    message = report(results, "off-by-one-2d")
    assert f"{PROGRAM}:{line_of('OFF-BY-ONE')}:9:" in message
    assert "work-item (3, 4); 1 access stopped" in message
    assert "shared USM of 80 bytes" in message


def test_pointer_arithmetic_into_another_allocation(results):
    message = report(results, "into-another")
    assert f"{PROGRAM}:{line_of('INTO-OTHER')}:" in message
    assert "16 accesses stopped" in message and "lands in another allocation" in message
    assert results["other-untouched"], "an out-of-bounds store reached memory"


def test_use_after_free(results):
    message = report(results, "use-after-free")
    assert f"{PROGRAM}:{line_of('AFTER-FREE')}:" in message and "the single_task" in message
    assert "is in freed memory (byte 12 of device USM of 16384 bytes" in message


def test_ranged_accessor(results):
    message = report(results, "ranged-accessor")
    assert f"{PROGRAM}:{line_of('RANGED')}:" in message
    # which of the offending work-items is recorded is whichever was caught first
    assert re.search(r"work-item [4-7]; 4 accesses stopped", message)
    assert re.search(r"index (8|9|10|11) in dimension 0 is outside the accessor's range "
                     r"\(8 there\)", message)
    # the elements inside the range were written, the 4 past it (and the buffer) stopped
    assert results["ranged-kept"] == [0.0] * 12 + [1.0] * 4


def test_accessor_range_inside_its_buffer(results):
    """Past the accessor's range but inside its buffer: stopped all the same."""
    message = report(results, "accessor-range-1d")
    assert f"{PROGRAM}:{line_of('RANGE-1D')}:" in message
    assert "out-of-bounds store through an accessor" in message
    assert re.search(r"work-item (8|9|10|11); 4 accesses stopped", message)
    assert re.search(r"index (8|9|10|11) in dimension 0 is outside the accessor's range "
                     r"\(8 there\)", message)
    assert results["range-1d-kept"] == [1.0] * 8 + [0.0] * 8

    message = report(results, "accessor-range-2d")
    assert f"{PROGRAM}:{line_of('RANGE-2D')}:" in message
    assert re.search(r"work-item \(\d, 4\); 4 accesses stopped", message)
    assert "index 4 in dimension 1 is outside the accessor's range (4 there)" in message
    # columns 2..5 written, column 6 (index 4 past the offset of 2) untouched
    assert results["range-2d-kept"] == [[0.0, 0.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0]] * 4

    message = report(results, "accessor-range-field")  # a struct element's field
    assert f"{PROGRAM}:{line_of('RANGE-FIELD')}:" in message
    assert re.search(r"index (4|5) in dimension 0 is outside the accessor's range "
                     r"\(4 there\)", message)


def test_local_memory(results):
    message = report(results, "local")
    assert f"{PROGRAM}:{line_of('LOCAL')}:" in message
    assert "out-of-bounds store of work-group memory" in message
    assert re.search(r"work-item (15|31); 2 accesses stopped", message)  # either group's
    assert "byte 64 of work-group memory of 64 bytes" in message


def test_local_memory_proven_in_bounds_goes_unchecked(results):
    # a's two loads and c's store, and the NaN checks of the three stores
    assert results["tiled-report-calls"] == 6
    assert results["tiled"] is None and results["tiled-right"]
    assert results["reach-16"] is None
    for case, marker, stopped in (("reach-17", "REACH", "16 accesses"),
                                  ("past-loop", "PAST-LOOP", "16 accesses"),
                                  ("bumped", "BUMPED", "1 access")):
        message = report(results, case)
        assert f"{PROGRAM}:{line_of(marker)}:" in message
        assert "out-of-bounds store of work-group memory" in message
        assert f"{stopped} stopped" in message
        assert "4-byte access at byte 64 of work-group memory of 64 bytes" in message


def test_atomics(results):
    message = report(results, "atomic")
    assert f"{PROGRAM}:{line_of('ATOMIC')}:" in message and "out-of-bounds atomic" in message
    assert "4 accesses stopped" in message and "shared USM of 16 bytes" in message
    assert results["atomic-counts"] == [4, 4, 4, 4]


def test_nan_and_inf_stores(results):
    message = report(results, "nan")
    assert f"{PROGRAM}:{line_of('NOT-FINITE')}:" in message
    assert "NaN or Inf stored" in message and "work-item 3" in message
    assert "value bits 0x7f800000" in message  # 1 / 0: +Inf


def test_correct_kernels_are_not_reported(results):
    assert results["correct"] is None
    assert results["correct-total"] == 7000.0


def test_bounds_alone_leaves_nan_unchecked():
    assert run("bounds", "not_finite")["nan"] is None


def test_checked_kernels_are_cached_apart_and_bad_settings_refused(tmp_path):
    program = tmp_path / "oob.py"
    program.write_text(
        "import numpy as np\n"
        "import vksycl as sycl\n"
        "q = sycl.queue()\n"
        "x = sycl.malloc_shared(8, np.int32, q)\n"
        "def body(i):\n"
        "    x[i[0] + 1] = 1\n"
        "try:\n"
        "    q.parallel_for(sycl.range(8), body).wait()\n"
        "    print('silent')\n"
        "except sycl.exception as e:\n"
        "    print('reported', e)\n")
    env = {**os.environ, "VKSYCL_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}

    def run_with(checks: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                              timeout=300, env={**env, "VKSYCL_CHECK": checks})

    # unchecked first, into the same disk cache: the checked run compiles its own kernel
    assert run_with("").stdout.strip() == "silent"
    checked = run_with("bounds")
    assert checked.stdout.startswith("reported"), checked.stderr
    assert f"{program}:6:5: out-of-bounds store" in checked.stdout
    refused = run_with("bounds,everything")
    assert refused.returncode != 0
    assert "VKSYCL_CHECK takes bounds, nan (comma-separated), got everything" in refused.stderr
