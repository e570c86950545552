"""Every program in examples/ runs to completion and confirms its own results."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def test_there_are_examples():
    names = {p.stem for p in EXAMPLES}
    assert {"free_function_basic", "free_function_templates",
            "free_function_scratch_memory", "device_global"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path, tmp_path):
    # the examples import this checkout's vksycl, whatever the environment has installed;
    # they run in a folder of their own, where one that writes files (a PNG) leaves them
    root = str(path.parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout}\n{proc.stderr}"
