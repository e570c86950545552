"""The host bodies of a function (if_host's function, otherwise's after if_device), found
in its source for the kernel caches.

Device code never contains a host body, so the cache keys leave host bodies out: editing
one does not recompile, and what a host body names (a log file, a counter, any object)
is not described in a key, where an unstable or failing description would break caching.
Only calls whose marker resolves to vksycl's own if_host / if_device are recognised;
anything less certain stays in the keys.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Any

from ..exceptions import exception
from .if_device import MARKER
from .source import function_source

_HINTS = {"if_host", "otherwise"}  # without one of these names there is no host body
_MISSING = object()


@dataclass(frozen=True)
class DeviceView:
    text: str  # the function's source with its host bodies cut out
    host_names: frozenset[str]  # names that only host bodies mention


_VIEWS: dict[Any, DeviceView | None] = {}


def device_view(pyfn: Any) -> DeviceView | None:
    """The function as device code sees it, or None when it has no host body."""
    code = pyfn.__code__
    if code in _VIEWS:
        return _VIEWS[code]
    view = None
    if _HINTS & _code_names(code):
        try:
            view = _analyse(pyfn)
        except exception:  # no source: the caller's own fallback applies
            view = None
    _VIEWS[code] = view
    return view


def host_names(pyfn: Any) -> frozenset[str]:
    view = device_view(pyfn)
    return view.host_names if view is not None else frozenset()


def _code_names(code: Any) -> set[str]:
    out = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            out |= _code_names(c)
    return out


def _analyse(pyfn: Any) -> DeviceView | None:
    src = function_source(pyfn)
    root = src.node
    args: list[ast.expr] = []
    loads: dict[str, list[ast.AST]] = {}
    defs: dict[str, list[ast.AST]] = {}
    for n in ast.walk(root):
        if isinstance(n, ast.Call):
            args += _host_args(n, pyfn)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            loads.setdefault(n.id, []).append(n)
        elif isinstance(n, ast.FunctionDef) and n is not root:
            defs.setdefault(n.name, []).append(n)
    if not args:
        return None
    arg_ids = {id(a) for a in args}
    bodies: list[ast.AST] = list(args)
    for a in args:  # a nested def named only where host bodies are passed is one
        if isinstance(a, ast.Name) and a.id in defs and \
                all(id(x) in arg_ids for x in loads[a.id]):
            bodies.extend(defs[a.id])
    body_ids = {id(b) for b in bodies}
    host: set[str] = set()
    for b in bodies:
        host |= _identifiers(ast.walk(b))
    device = _identifiers(_walk_outside(root, body_ids))
    cut = sorted(_span(b) for b in bodies if isinstance(b, ast.Lambda | ast.FunctionDef))
    return DeviceView(_cut(src.text, root.lineno, cut), frozenset(host - device))


def _host_args(call: ast.Call, pyfn: Any) -> list[ast.expr]:
    f = call.func
    mode = getattr(_resolve(f, pyfn), MARKER, None)
    if mode == "host" or (isinstance(f, ast.Attribute) and f.attr == "otherwise" and
                          isinstance(f.value, ast.Call) and
                          getattr(_resolve(f.value.func, pyfn), MARKER, None) == "device"):
        return list(call.args)
    return []


def _resolve(e: ast.expr, pyfn: Any) -> Any:
    """The object a dotted name means in the function, if it is a global or captured."""
    if isinstance(e, ast.Attribute):
        base = _resolve(e.value, pyfn)
        return _MISSING if base is _MISSING else getattr(base, e.attr, _MISSING)
    if not isinstance(e, ast.Name):
        return _MISSING
    code = pyfn.__code__
    if e.id in code.co_freevars and pyfn.__closure__:
        try:
            return pyfn.__closure__[code.co_freevars.index(e.id)].cell_contents
        except ValueError:
            return _MISSING
    if e.id in code.co_varnames or e.id in code.co_cellvars:
        return _MISSING
    if e.id in pyfn.__globals__:
        return pyfn.__globals__[e.id]
    return getattr(builtins, e.id, _MISSING)


def _walk_outside(root: ast.AST, skip: set[int]) -> Any:
    stack = [root]
    while stack:
        n = stack.pop()
        if id(n) in skip:
            continue
        yield n
        stack.extend(ast.iter_child_nodes(n))


def _identifiers(nodes: Any) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Global | ast.Nonlocal):
            out.update(n.names)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
            out.add(n.name.split(".")[0])
    return out


def _span(n: ast.AST) -> tuple[int, int, int, int]:
    start = min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])])
    col = 0 if start != n.lineno else n.col_offset
    return start, col, n.end_lineno or n.lineno, n.end_col_offset or 0


def _cut(text: str, first: int, spans: list[tuple[int, int, int, int]]) -> str:
    """The text without the spans (lines and UTF-8 byte columns, as `ast` gives them)."""
    lines = [line.encode() for line in text.splitlines(keepends=True)]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    data = b"".join(lines)
    out, at = [], 0
    for l0, c0, l1, c1 in spans:
        a, b = starts[l0 - first] + c0, starts[l1 - first] + c1
        if a < at:  # inside a span already cut
            at = max(at, b)
            continue
        out.append(data[at:a])
        at = b
    out.append(data[at:])
    return b"".join(out).decode(errors="replace")
