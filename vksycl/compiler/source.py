"""Finding a Python function's AST and positions, for compiling it and for diagnostics.

Whole source files are parsed once (cached by name and modification time) and the
function's node is found by its first line, so lambdas and nested functions work and
every diagnostic carries the user's real file:line:col.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import os
import threading
from dataclasses import dataclass
from typing import Any

from ..exceptions import errc, exception


@dataclass(eq=False)
class Source:
    filename: str
    node: ast.FunctionDef | ast.Lambda
    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def name(self) -> str:
        return getattr(self.node, "name", "<lambda>")


def error(filename: str, node: ast.AST | None, message: str,
          code: errc = errc.build) -> exception:
    """An error at a node, a build error unless `code` says otherwise:
    `file:line:col: message`."""
    line = getattr(node, "lineno", 0)
    col = getattr(node, "col_offset", -1) + 1
    return exception(code, f"{filename}:{line}:{col}: {message}")


# CPython 3.11 converts a parsed tree to Python objects with a depth counter of the
# interpreter's, not the thread's: two threads parsing at once (kernels launched first on
# several threads) fail with "AST constructor recursion depth mismatch"
_PARSING = threading.Lock()


def parse(text: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`ast.parse`, one thread at a time."""
    with _PARSING:
        return ast.parse(text, filename, mode)


_Starts = dict[int, list[ast.AST]]
_FILES: dict[str, tuple[float, _Starts, list[str]]] = {}
_BY_CODE: dict[Any, Source] = {}


def _parse_file(filename: str) -> tuple[_Starts, list[str]]:
    """A file's functions and lambdas by the line each starts on (a decorator's, for a
    decorated function), and its lines. Indexed once per parse: looking a function up
    walks no tree, however many functions the file holds."""
    try:
        mtime = os.path.getmtime(filename)
    except OSError:
        mtime = -1.0
    hit = _FILES.get(filename)
    if hit is not None and hit[0] == mtime:
        return hit[1], hit[2]
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    if not lines:
        raise exception(errc.build, f"{filename}: the source of a kernel is not available "
                        "(kernels must be defined in a file)")
    starts: _Starts = {}
    for node in ast.walk(parse("".join(lines), filename)):
        if isinstance(node, ast.Lambda):
            starts.setdefault(node.lineno, []).append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            starts.setdefault(first, []).append(node)
    _FILES[filename] = (mtime, starts, lines)
    return starts, lines


def _last_line(code: Any) -> int:
    last = code.co_firstlineno
    for _, _, line in code.co_lines():
        if line is not None and line > last:
            last = line
    for c in code.co_consts:
        if hasattr(c, "co_lines"):
            last = max(last, _last_line(c))
    return last


def source_text(fn: Any) -> str:
    """The lines of a function's source, found from its code object without parsing
    (what the disk-cache key hashes)."""
    code = fn.__code__
    lines = linecache.getlines(code.co_filename)
    if not lines:
        raise exception(errc.build, f"{code.co_filename}: the source of a kernel is not "
                        "available (kernels must be defined in a file)")
    return "".join(lines[code.co_firstlineno - 1: _last_line(code)])


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def code_span(code: Any) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """The first and last source positions of a code object's instructions (which tell
    apart functions defined on one line), or None without position information."""
    spots = [(line, end, col, end_col) for line, end, col, end_col in code.co_positions()
             if None not in (line, end, col, end_col) and (col, end_col) != (0, 0)]
    if not spots:
        return None
    return (min((line, col) for line, _, col, _ in spots),
            max((end, end_col) for _, end, _, end_col in spots))


def _by_position(code: Any, candidates: list) -> list:
    """The innermost candidate whose source span holds every instruction of `code`
    (several functions on one line: lambdas passed to lambdas)."""
    span = code_span(code)
    if span is None:
        return candidates
    lo, hi = span
    inside = [n for n in candidates if _span(n)[0] <= lo and hi <= _span(n)[1]]
    if len(inside) <= 1:
        return inside
    inner = [n for n in inside if not any(m is not n and _span(n)[0] <= _span(m)[0]
                                          and _span(m)[1] <= _span(n)[1] for m in inside)]
    return inner


def function_source(fn: Any) -> Source:
    """The AST node and source text of a Python function or lambda."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise exception(errc.build, f"{fn!r} is not a Python function")
    hit = _BY_CODE.get(code)
    if hit is not None:
        return hit
    starts, lines = _parse_file(code.co_filename)
    first = code.co_firstlineno
    want_lambda = code.co_name == "<lambda>"
    argnames = code.co_varnames[: code.co_argcount]
    candidates = [node for node in starts.get(first, ())
                  if (isinstance(node, ast.Lambda) if want_lambda else
                      getattr(node, "name", None) == code.co_name)
                  and tuple(a.arg for a in node.args.args) == argnames]
    if not candidates:
        raise exception(errc.build, f"{code.co_filename}:{first}: cannot find the source "
                        f"of {code.co_name}")
    chosen = _by_position(code, candidates) if len(candidates) > 1 else candidates
    if len(chosen) != 1:
        raise exception(errc.build, f"{code.co_filename}:{first}: cannot tell which of "
                        f"{len(candidates)} functions on this line is {code.co_qualname}; "
                        "define the kernel on a line of its own")
    node = chosen[0]
    text = "".join(lines[node.lineno - 1: node.end_lineno])
    if want_lambda:
        text += f"#{node.col_offset}"
    src = Source(code.co_filename, node, text)
    _BY_CODE[code] = src
    return src
