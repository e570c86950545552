"""Delta debugging of a failing program: remove statements (chunks, then one at a time),
replace compound statements by their bodies and expressions by their operands or by
small literals, drop what is no longer used, and keep each change after which the
program still fails the same way."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from . import program as P

Path = tuple[Any, ...]  # field names and tuple indices from the program down


def get(node: Any, path: Path) -> Any:
    for step in path:
        node = node[step] if isinstance(step, int) else getattr(node, step)
    return node


def put(node: Any, path: Path, value: Any) -> Any:
    """`node` with the part at `path` replaced by `value` (a tuple element may be
    replaced by a tuple, which is spliced in)."""
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(step, int):
        if not rest and isinstance(value, tuple):
            return node[:step] + value + node[step + 1:]
        return (*node[:step], put(node[step], rest, value), *node[step + 1:])
    return dataclasses.replace(node, **{step: put(getattr(node, step), rest, value)})


def walk(node: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every statement, expression and block under `node`, parents first."""
    yield path, node
    if isinstance(node, tuple):
        for k, item in enumerate(node):
            if isinstance(item, P.Stmt | P.Expr | P.Function | tuple):
                yield from walk(item, (*path, k))
        return
    if dataclasses.is_dataclass(node) and isinstance(node, P.Stmt | P.Expr | P.Function |
                                                     P.Program):
        for f in dataclasses.fields(node):
            if f.name in ("buffers", "structs", "local", "notes"):
                continue
            value = getattr(node, f.name)
            if isinstance(value, P.Stmt | P.Expr | P.Function | tuple):
                yield from walk(value, (*path, f.name))


def blocks(p: P.Program) -> list[Path]:
    """The statement lists of a program, outermost first."""
    return [path for path, node in walk(p) if isinstance(node, tuple) and node and
            all(isinstance(s, P.Stmt) for s in node)]


def removals(p: P.Program) -> Iterator[P.Program]:
    """Chunks of statements removed, halving the chunk size down to one."""
    for path in blocks(p):
        stmts = get(p, path)
        size = len(stmts)
        while size >= 1:
            for start in range(0, len(stmts), size):
                yield put(p, path, stmts[:start] + stmts[start + size:])
            size //= 2


def flattenings(p: P.Program) -> Iterator[P.Program]:
    """Compound statements replaced by one of their bodies."""
    for path, node in walk(p):
        if isinstance(node, P.If):
            yield put(p, path[:-1], _splice(get(p, path[:-1]), path[-1], node.body))
            if node.orelse:
                yield put(p, path[:-1], _splice(get(p, path[:-1]), path[-1], node.orelse))
            yield put(p, (*path, "orelse"), ())
        elif isinstance(node, P.For | P.While | P.IfDevice):
            body = node.device if isinstance(node, P.IfDevice) else node.body
            yield put(p, path[:-1], _splice(get(p, path[:-1]), path[-1], body))


def _splice(block: tuple, k: int, items: tuple) -> tuple:
    return block[:k] + items + block[k + 1:]


def simplifications(p: P.Program) -> Iterator[P.Program]:
    """Expressions replaced by an operand or a literal (not where a work-item's element of
    a buffer is chosen: each work-item has its own)."""
    buffers = {b.name for b in p.buffers}
    fixed = [path for path, node in walk(p)
             if isinstance(node, P.Store | P.Index | P.Approx) and node.base in buffers]
    for path, node in walk(p):
        if not isinstance(node, P.Expr) or isinstance(node, P.Lit | P.Var | P.Query):
            continue
        if any(path[:len(f) + 1] == (*f, "index") for f in fixed):
            continue
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            parts = value if isinstance(value, tuple) else (value,)
            for part in parts:
                if isinstance(part, P.Expr):
                    yield put(p, path, part)
        for lit in (0, 1, 0.0, True):
            yield put(p, path, P.Lit(lit))


def prune(p: P.Program) -> P.Program:
    """Without helpers, structs and buffers nothing names any more."""
    names: set[str] = set()
    for _, node in walk(p):
        if isinstance(node, P.Var | P.Index | P.Store | P.Atomic | P.Approx):
            names.add(getattr(node, "name", None) or getattr(node, "base", ""))
        elif isinstance(node, P.Call):
            names.add(node.func)
        elif isinstance(node, P.New):
            names.add(node.struct)
        elif isinstance(node, P.GroupAssign) and node.func == "exchange":
            names.add(node.target + "_tile")
    helpers = tuple(h for h in p.helpers if h.name in names)
    buffers = tuple(b for b in p.buffers if b.name in names)
    used = {b.ty for b in buffers} | names
    structs = tuple(s for s in p.structs if s.name in used)
    local = tuple(x for x in p.local if x[0] in names)
    return dataclasses.replace(p, helpers=helpers, buffers=buffers, structs=structs,
                               local=local)


def reduce(p: P.Program, fails: Callable[[P.Program], bool], budget: int = 2000
           ) -> P.Program:
    """A smaller program that still `fails` (each pass kept while it makes progress)."""
    seen: set[str] = {P.render(p)}
    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        for candidates in (removals, flattenings, simplifications):
            changed = True
            while changed and tries < budget:
                changed = False
                for c in candidates(p):
                    c = prune(c)
                    source = P.render(c)
                    if source in seen:
                        continue
                    seen.add(source)
                    tries += 1
                    if fails(c):
                        p = c
                        changed = progress = True
                        break
                    if tries >= budget:
                        break
    return prune(p)
