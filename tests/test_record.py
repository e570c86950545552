"""benchmarks/record.py, the one writer of the data files the performance page plots: the
header is filled in from the run, and `--append` adds a run without losing the others."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

# loaded from its file: the benchmarks folder's other modules stay off sys.path
_SPEC = importlib.util.spec_from_file_location(
    "record", Path(__file__).resolve().parent.parent / "benchmarks" / "record.py")
record = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(record)


def args_for(path: Path, append: bool, note: str = "") -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    record.add_arguments(ap)
    return ap.parse_args(["--csv", str(path), "--note", note] + ["--append"] * append)


def test_runs_are_numbered_and_each_header_value_is_named_once(tmp_path, monkeypatch):
    path = tmp_path / "figures.csv"
    monkeypatch.setattr(sys, "argv", ["benchmarks/x.py", "--csv", str(path)])
    record.write(args_for(path, False, "shared cores"), "what: and how",
                 [{"case": "a", "run": None, "us": 12.3456}, {"case": "b", "run": None,
                                                               "us": 0.00012345}])
    record.write(args_for(path, True, "shared cores"), "what: and how",
                 [{"case": "a", "run": None, "us": 1234567.0}])
    meta, rows = record.read(path)
    assert meta["title"] == "what: and how"
    assert meta["command"].endswith("benchmarks/x.py --csv " + str(path)), meta["command"]
    assert "; then " not in meta["command"] and "; then " not in meta["machine"]
    assert "shared cores" in meta["host"] and meta["tree"] and meta["date"].endswith("UTC")
    assert [(r["case"], r["run"], r["us"]) for r in rows] == [
        ("a", "1", "12.35"), ("b", "1", "0.0001234"), ("a", "2", "1234567")]


def test_a_run_with_other_columns_is_not_appended(tmp_path):
    path = tmp_path / "figures.csv"
    record.write(args_for(path, False), "t", [{"case": "a", "us": 1.0}])
    with pytest.raises(SystemExit, match="columns"):
        record.write(args_for(path, True), "t", [{"case": "a", "ms": 1.0}])
    assert record.read(path)[1] == [{"case": "a", "us": "1.000"}]
