"""The one writer of the data files docs/plots.py draws (benchmarks/data/*.csv).

A benchmark given `--csv FILE` writes its figures there as CSV under `#` lines naming what
was measured, the command, the machine (device, driver, peers' versions), the host (its
CPUs, their load, a note), the date and the tree, all filled in here, so that every plotted
figure says which run made it and how to make it again. `--append` adds a
run's rows to the file instead (several processes, or several sizes, in one file); where
the file has a `run` column, the rows are numbered as the next run.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import math
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import vksycl as sycl

ROOT = Path(__file__).resolve().parent.parent
HEADER = ("command", "machine", "host", "date", "tree")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options every recording benchmark takes."""
    ap.add_argument("--csv", type=Path, default=None, metavar="FILE",
                    help="write the figures as a data file for docs/plots.py")
    ap.add_argument("--append", action="store_true",
                    help="add this run's rows to FILE rather than replace it")
    ap.add_argument("--note", default="",
                    help="words about the machine for the data file's header "
                         "(e.g. that its cores were shared)")


def parse(ap: argparse.ArgumentParser, small: dict[str, Any]) -> argparse.Namespace:
    """The options, with `--small`: the sizes of `small` for a CPU driver such as
    lavapipe, where no other size was asked for."""
    ap.add_argument("--small", action="store_true",
                    help="sizes for a CPU driver such as lavapipe, where none is given")
    args = ap.parse_args()
    if args.small:
        vars(args).update({k: v for k, v in small.items()
                           if getattr(args, k) == ap.get_default(k)})
    return args


def command() -> str:
    """This process's command line, spelled to be run again from the repository root."""
    exe = Path(sys.executable)
    python = str(exe.relative_to(ROOT)) if exe.is_relative_to(ROOT) else str(exe)
    if os.environ.get("PYTHONPATH"):
        python = f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])} {python}"
    script = Path(sys.argv[0]).resolve()
    shown = str(script.relative_to(ROOT)) if script.is_relative_to(ROOT) else sys.argv[0]
    return " ".join([python, shlex.join([shown, *sys.argv[1:]])])


def machine(device: sycl.device | None = None, peers: Mapping[str, str] | None = None) -> str:
    """The device and its driver, and the peers' versions."""
    import vksycl as sycl  # here, so that docs/plots.py reads data files without Vulkan

    device = device or sycl.device()
    vulkan = getattr(device, "vulkan", None)
    driver = getattr(vulkan, "driver_info", "") or device.get_info(
        sycl.info.device.driver_version)
    parts = [f"{device.get_info(sycl.info.device.name)}, driver {driver}"]
    parts += [f"{name} {version}" for name, version in (peers or {}).items()]
    return ", ".join(parts)


def host(note: str) -> str:
    """The host's CPUs and their load while the benchmark ran, and the note about it."""
    load = (f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} over the minute "
            "before writing")
    return f"{load}; {note}" if note else load


def tree() -> str:
    """The commit measured, and whether files outside benchmarks/data differed from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":!benchmarks/data")
    return commit + (" with local changes" if changed else "")


def cell(value: object) -> str:
    """A figure to four significant digits, never in exponent form."""
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        digits = max(0, 3 - math.floor(math.log10(abs(value))))
        return f"{value:.{digits}f}"
    return "" if value is None else str(value)


def read(path: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    """A data file's `# key: value` header and its rows; a `#` line without a key is the
    title."""
    meta: dict[str, str] = {}
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].strip().partition(": ")
            meta[key if value else "title"] = value or key
        elif line.strip():
            lines.append(line)
    return meta, list(csv.DictReader(lines))


def write(args: argparse.Namespace, title: str, rows: Sequence[Mapping[str, object]],
          device: sycl.device | None = None, peers: Mapping[str, str] | None = None) -> None:
    """Writes `rows` (or adds them, with `--append`) to `--csv`'s file; nothing without it."""
    path: Path | None = args.csv
    if path is None:
        return
    fields = list(dict.fromkeys(k for row in rows for k in row))
    meta = {"command": command(), "machine": machine(device, peers), "host": host(args.note),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "tree": tree()}
    kept: list[dict[str, str]] = []
    run = 1
    if args.append and path.exists():
        old, kept = read(path)
        if kept and list(kept[0]) != fields:
            sys.exit(f"{path} has columns {list(kept[0])}, this run {fields}")
        for key in HEADER:  # each run's value, once
            runs = old[key].split("; then ") if old.get(key) else []
            meta[key] = "; then ".join(runs + [meta[key]] * (meta[key] not in runs))
        run += max((int(r["run"]) for r in kept if r.get("run")), default=0)
    out = io.StringIO()
    out.write(f"# title: {title}\n")
    out.writelines(f"# {key}: {meta[key]}\n" for key in HEADER)
    table = csv.DictWriter(out, fields, lineterminator="\n")
    table.writeheader()
    table.writerows(kept)
    table.writerows({k: cell(run if k == "run" else row.get(k)) for k in fields}
                    for row in rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.getvalue())
    print(f"wrote {len(rows)} rows to {path}")
