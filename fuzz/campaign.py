"""A campaign: programs generated from a seed, each run on the host and on the device,
compared, and every failure reduced to a reproducer file.

Workers each hold a queue and take every `jobs`-th program; a batch of programs shares
one generated module, so most of a kernel's cost is its compilation."""

from __future__ import annotations

import dataclasses
import itertools
import multiprocessing
import os
import re
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import program as P
from .generate import Caps, generate
from .interpret import Interpreter, Invalid, Result
from .reduce import reduce

BATCH = 16
_FILES = itertools.count()


@dataclass
class Outcome:
    """What one program did: ok, invalid (not run: the host model declines it), mismatch,
    error (vksycl raised on a valid program), model (the host side crashed), or flaky
    (it failed once, and not when checked again)."""

    kind: str
    detail: str = ""
    items: int = 0
    undefined: int = 0


@dataclass
class Finding:
    index: int
    kind: str
    detail: str
    path: str


@dataclass
class Summary:
    run: int = 0
    invalid: int = 0
    items: int = 0
    undefined: int = 0
    kinds: Counter = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, other: Summary) -> None:
        self.run += other.run
        self.invalid += other.invalid
        self.items += other.items
        self.undefined += other.undefined
        self.kinds.update(other.kinds)
        self.findings += other.findings


class Checker:
    """Runs programs on one queue and tells how each fared."""

    def __init__(self, workdir: Path) -> None:
        from . import device  # imports vksycl, which makes the Vulkan instance

        self.device = device
        self.q = device.queue()
        self.caps: Caps = device.device_caps(self.q)
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)

    def expect(self, p: P.Program) -> Result | Outcome:
        try:
            return Interpreter(p, self.caps.sub_group_size).run()
        except Invalid as ex:
            return Outcome("invalid", str(ex))
        except Exception:
            return Outcome("model", traceback.format_exc(limit=4))

    def check_all(self, programs: list[P.Program]) -> list[Outcome]:
        """Programs checked together: the valid ones share one module."""
        wants = [self.expect(p) for p in programs]
        runnable = [p for p, w in zip(programs, wants, strict=True) if isinstance(w, Result)]
        module: Any = None
        failed = ""
        if runnable:
            path = self.workdir / f"batch_{os.getpid()}_{next(_FILES)}.py"
            path.write_text(P.module_source(runnable))
            try:
                module = self.device.load(path)
            except Exception as ex:
                failed = f"the generated module does not import: {ex}"
        return [w if isinstance(w, Outcome) else
                Outcome("error", failed) if failed else self.compare(module, p, w)
                for p, w in zip(programs, wants, strict=True)]

    def check(self, p: P.Program) -> Outcome:
        return self.check_all([p])[0]

    def compare(self, module: Any, p: P.Program, want: Result) -> Outcome:
        items, undefined = len(want.valid), want.valid.count(False)
        try:
            arrays = self.device.prepare(module, p)
        except Exception:
            return Outcome("model", traceback.format_exc(limit=4), items, undefined)
        try:
            got = self.device.run(self.q, module, p, arrays)
        except Exception as ex:
            return Outcome("error", signature(ex), items, undefined)
        mismatches = self.device.compare(p, want, got)
        if mismatches:
            shown = "; ".join(map(str, mismatches[:4]))
            return Outcome("mismatch", f"{len(mismatches)} values differ: {shown}", items,
                           undefined)
        return Outcome("ok", "", items, undefined)

    def fails_like(self, outcome: Outcome) -> Any:
        """The reducer's test: the same kind of failure (the same error message)."""
        def fails(p: P.Program) -> bool:
            o = self.check(p)
            if o.kind != outcome.kind:
                return False
            return o.kind != "error" or o.detail == outcome.detail
        return fails


def signature(ex: BaseException) -> str:
    """An error without the file and line it names (they change as programs shrink)."""
    text = f"{type(ex).__name__}: {ex}".split("\n")[0]
    return re.sub(r"\S+\.py:\d+(:\d+)?:? ?", "", text)[:300]


def run_share(seed: int, indices: list[int], out: str, reduce_budget: int,
              kind: str | None) -> Summary:
    """One worker's part of a campaign."""
    summary = Summary()
    with tempfile.TemporaryDirectory(prefix="vksycl-fuzz-") as work:
        checker = Checker(Path(work))
        for start in range(0, len(indices), BATCH):
            chunk = indices[start:start + BATCH]
            programs = [generate(seed, k, checker.caps, kind) for k in chunk]
            for k, p, o in zip(chunk, programs, checker.check_all(programs), strict=True):
                if o.kind == "invalid":
                    summary.invalid += 1
                    continue
                summary.run += 1
                summary.items += o.items
                summary.undefined += o.undefined
                summary.kinds[o.kind] += 1
                if o.kind != "ok":
                    summary.findings.append(save(checker, p, o, seed, k, Path(out),
                                                 reduce_budget))
    return summary


def save(checker: Checker, p: P.Program, o: Outcome, seed: int, k: int, out_dir: Path,
         budget: int) -> Finding:
    """The failing program, reduced, as a reproducer file."""
    small = p
    first = o
    if budget and o.kind in ("mismatch", "error"):
        small = reduce(p, checker.fails_like(o), budget)
        o = checker.check(small)
        if o.kind == "ok":  # it failed once, and not again: report the first failure
            o = Outcome("flaky", f"once: {first.detail}")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"seed{seed}_{k}_{o.kind}.py"
    note = " ".join(f"python -m fuzz --seed {seed} --only {k}: {o.kind}: {o.detail}".split())
    small = dataclasses.replace(small, notes=tuple(note[i:i + 96]
                                                   for i in range(0, len(note), 96)))
    path.write_text(reproducer(small))
    return Finding(k, o.kind, o.detail, str(path))


def reproducer(p: P.Program) -> str:
    """A file that is the program's kernel module and, run as a script, checks it
    again: `python <file>` from the repository root."""
    return (P.module_source([p]) + "\n\nimport fuzz.program as P  # noqa: E402\n\n"
            f"PROGRAM = {tree_source(p)}\n\n\n"
            "if __name__ == \"__main__\":\n"
            "    import sys\n\n"
            "    from fuzz.campaign import replay\n\n"
            "    sys.exit(replay(__file__))\n")


def tree_source(node: Any) -> str:
    """Python source that builds a program tree again."""
    if isinstance(node, tuple):
        inner = ", ".join(tree_source(x) for x in node)
        return f"({inner},)" if len(node) == 1 else f"({inner})"
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        args = ", ".join(f"{f.name}={tree_source(getattr(node, f.name))}"
                         for f in dataclasses.fields(node) if f.name != "notes")
        return f"P.{type(node).__name__}({args})"
    return repr(node)


def replay(path: str) -> int:
    """Check a reproducer file's program again; 0 when host and device agree."""
    from . import device

    module = device.load(Path(path))
    with tempfile.TemporaryDirectory(prefix="vksycl-fuzz-") as work:
        checker = Checker(Path(work))
        p = module.PROGRAM
        want = checker.expect(p)
        if not isinstance(want, Result):
            print(f"{want.kind}: {want.detail}")
            return 2
        o = checker.compare(module, p, want)
    print(f"{o.kind}: {o.detail}" if o.detail else o.kind)
    return 0 if o.kind == "ok" else 1


def campaign(seed: int, count: int, jobs: int, out: str, reduce_budget: int,
             kind: str | None = None, only: list[int] | None = None) -> Summary:
    start = time.perf_counter()
    indices = only if only is not None else list(range(count))
    jobs = max(1, min(jobs, len(indices)))
    shares = [indices[j::jobs] for j in range(jobs)]
    if jobs == 1:
        summary = run_share(seed, shares[0], out, reduce_budget, kind)
    else:
        summary = Summary()
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(jobs) as pool:
            for part in pool.starmap(run_share, [(seed, s, out, reduce_budget, kind)
                                                 for s in shares]):
                summary.add(part)
    summary.findings.sort(key=lambda f: f.index)
    summary.seconds = time.perf_counter() - start
    return summary
