"""The documentation site in docs/: every fenced Python block runs, every public name has a
docstring and a place in the API reference, and the site builds with warnings as errors.

A page's ```python blocks run in order, in one namespace, in a process of their own (each
block is written to a file first: vksycl reads a kernel's source through its file). An
HTML comment on the line before a block changes what is expected of it:

    <!-- fails: errc.build -->     the block raises sycl.exception with that code
    <!-- skip: why -->             the block needs what the test machine lacks (CUDA, MPI)
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "notes" not in p.relative_to(DOCS).parts)

_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_MARK = re.compile(r"<!--\s*(fails|skip):\s*(.*?)\s*-->\s*$")


def blocks(page: Path) -> list[tuple[int, str, str | None, str | None]]:
    """(line, code, mark, argument) of each ```python block of a page."""
    text = page.read_text()
    out = []
    for m in _FENCE.finditer(text):
        if m.group(1) != "python":
            continue
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        out.append((line, m.group(2), mark and mark.group(1), mark and mark.group(2)))
    return out


_DRIVER = '''
import sys
import vksycl as sycl
ns = {"__name__": "__main__"}
for path, line, mark, arg in BLOCKS:
    code = compile(open(path).read(), path, "exec")
    if mark != "fails":
        exec(code, ns)
        continue
    try:
        exec(code, ns)
    except sycl.exception as e:
        want = getattr(sycl.errc, arg.removeprefix("errc."))
        if e.code() != want:
            sys.exit(f"line {line}: raised {e.code()}, not {want}: {e}")
        print(f"line {line}: raised as documented: {e}")
    else:
        sys.exit(f"line {line}: the block marked to fail with {arg} ran to completion")
'''


def run_page(page: Path, tmp: Path) -> subprocess.CompletedProcess:
    todo = []
    stem = re.sub(r"\W", "_", str(page.relative_to(DOCS).with_suffix("")))
    for k, (line, code, mark, arg) in enumerate(blocks(page)):
        if mark == "skip":
            continue
        path = tmp / f"{stem}_{k}_line{line}.py"
        path.write_text(code)
        todo.append((str(path), line, mark, arg))
    driver = tmp / f"{stem}__driver.py"
    driver.write_text(f"BLOCKS = {todo!r}\n" + _DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, str(driver)], capture_output=True, text=True,
                          timeout=600, cwd=tmp, env=env)


WITH_CODE = [p for p in PAGES if blocks(p)]


def test_pages_have_code():
    assert len(WITH_CODE) >= 15


def test_every_guide_has_a_runnable_example():
    for page in (DOCS / "guides").glob("*.md"):
        assert any(mark is None for _, _, mark, _ in blocks(page)), \
            f"{page.name} has no Python block that runs"


@pytest.mark.parametrize("page", WITH_CODE, ids=[str(p.relative_to(DOCS)) for p in WITH_CODE])
def test_code_blocks_run(page, tmp_path):
    proc = run_page(page, tmp_path)
    assert proc.returncode == 0, f"{page.name}:\n{proc.stdout}\n{proc.stderr}"


def test_marks_are_known():
    for page in PAGES:
        for line in page.read_text().splitlines():
            if line.strip().startswith("<!--") and ("fails" in line or "skip" in line):
                assert _MARK.search(line), f"{page.name}: malformed mark {line!r}"


NAMESPACES = ["vksycl", "vksycl.ext.oneapi", "vksycl.ext.oneapi.experimental",
              "vksycl.ext.oneapi.experimental.matrix", "vksycl.ext.vksycl"]


def public_names():
    for modname in NAMESPACES:
        mod = importlib.import_module(modname)
        for name in mod.__all__:
            yield modname, name, getattr(mod, name)


def test_every_public_name_has_a_docstring():
    # in the interpreted modules, which the reference is read from: the ones mypyc
    # compiles carry no docstrings (docs/hooks.py)
    script = ("import inspect, importlib; from tests.test_docs import NAMESPACES\n"
              "for m in NAMESPACES:\n"
              "    mod = importlib.import_module(m)\n"
              "    for n in mod.__all__:\n"
              "        if not inspect.getdoc(getattr(mod, n)): print(f'{m}.{n}')\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "VKSYCL_MYPYC": "0",
                                         "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    missing = proc.stdout.split()
    assert not missing, f"public names without a docstring: {missing}"


def test_every_public_name_is_in_the_reference():
    reference = "\n".join(p.read_text() for p in (DOCS / "api").glob("*.md"))
    # a `::: name` block of mkdocstrings, or an anchor (the scalar types' table)
    listed = set(re.findall(r"^::: (\S+)", reference, re.M))
    listed |= set(re.findall(r'<a id="([\w.]+)"></a>', reference))
    missing = [f"{m}.{n}" for m, n, _ in public_names() if f"{m}.{n}" not in listed]
    assert not missing, f"public names missing from docs/api/: {missing}"


def test_site_builds_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or \
        shutil.which("mkdocs")
    assert mkdocs, "mkdocs is missing: install the docs extra (ci/setup.sh does)"
    start = time.monotonic()
    proc = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert time.monotonic() - start < 120


def test_every_environment_variable_is_documented():
    used = set()
    for path in (ROOT / "vksycl").rglob("*.py"):
        used |= set(re.findall(r"VKSYCL_[A-Z0-9_]*[A-Z0-9]", path.read_text()))
    table = (DOCS / "guides" / "environment.md").read_text()
    missing = sorted(v for v in used if f"`{v}`" not in table)
    assert not missing, f"not in docs/guides/environment.md: {missing}"


def test_plots_regenerate_from_the_recorded_data(tmp_path):
    pytest.importorskip("matplotlib")
    proc = subprocess.run([sys.executable, str(DOCS / "plots.py"), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    made = sorted(p.name for p in tmp_path.glob("*.png"))
    shown = set(re.findall(r"images/perf/([\w.]+\.png)", (DOCS / "performance.md").read_text()))
    assert shown and shown <= set(made), (shown, made)
    for data in (ROOT / "benchmarks" / "data").glob("*.csv"):
        head = data.read_text()
        assert "# command:" in head and "# machine:" in head, f"{data.name}: no command or machine"


def test_a_benchmark_writes_a_data_file_the_plots_draw(tmp_path):
    """A benchmark run with --csv writes the header docs/plots.py needs, and its rows plot in
    place of the recorded file's."""
    pytest.importorskip("matplotlib")
    data = tmp_path / "data"
    shutil.copytree(ROOT / "benchmarks" / "data", data)
    written = data / "stream_lavapipe.csv"
    proc = subprocess.run([sys.executable, "benchmarks/stream.py", "--mib", "1", "--repeat", "2",
                           "--csv", str(written), "--note", "a test"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = importlib.util.spec_from_file_location("record", ROOT / "benchmarks" / "record.py")
    record = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(record)
    meta, rows = record.read(written)
    assert set(record.HEADER) <= set(meta) and "--csv" in meta["command"], meta
    assert "a test" in meta["host"] and meta["tree"], meta
    assert [r["kernel"] for r in rows] == ["copy", "scale", "triad"]
    assert all(float(r["vksycl_gbs"]) > 0 for r in rows), rows
    out = tmp_path / "plots"
    proc = subprocess.run([sys.executable, str(DOCS / "plots.py"), "--data", str(data),
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / "stream_lavapipe.png").stat().st_size > 0


def test_the_front_door():
    """README.md is a front door: short, with the two set-up commands as they are, and
    links that lead somewhere; benchmarks/RESULTS.md is a summary."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    assert "bash ci/setup.sh && .venv/bin/python examples/quickstart.py" in readme
    assert "\nbash ci/test.sh\n" in readme
    for target in re.findall(r"\]\(([^)#]+)[^)]*\)", readme):
        if "://" not in target:
            assert (ROOT / target).exists(), f"README links to a missing {target}"
    results = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert len(results.splitlines()) <= 400
    for target in re.findall(r"\]\(([^)#]+)[^)]*\)", results):
        if "://" not in target:
            assert (ROOT / "benchmarks" / target).exists(), f"RESULTS links to {target}"
