"""`command_graph.print_graph`: the graph in Graphviz's DOT language."""

from __future__ import annotations

import os
from typing import Any

from ..exceptions import errc, exception
from ..runtime.commands import Command, KernelLaunch
from ..runtime.host_commands import HostTask
from .core import node
from .properties import node_type


def write_dot(nodes: list[node], path: Any, verbose: bool,
              fused: list[list[int]] | None = None) -> None:
    """Writes the nodes, their types, ids and kernel names (with `verbose`, arguments,
    addresses, sizes and buffer accessors too) and their edges to `path`, which must end
    in ".dot"; each group of `fused` node ids (an executable graph's fused kernels) is a
    cluster."""
    path = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    if path is None or not path.endswith(".dot"):
        raise exception(errc.invalid, "print_graph writes DOT only: the path must end in "
                        "\".dot\"")
    ids = {id(n): i for i, n in enumerate(nodes)}
    lines = ["digraph command_graph {", '  node [shape=box, fontname="monospace"];']
    for i, n in enumerate(nodes):
        label = "\\n".join([f"ID = {i}", f"TYPE = {n._type.name}",
                            *_details(n._command(), n._type, verbose),
                            *(_accessors(n) if verbose else [])])
        lines.append(f'  n{i} [label="{label}"];')
    for g, members in enumerate(fused or ()):
        lines.append(f"  subgraph cluster_fused{g} {{")
        lines.append(f'    label="FUSED KERNEL {g}"; style=dashed;')
        lines.append("    " + " ".join(f"n{i};" for i in members))
        lines.append("  }")
    for n in nodes:
        for s in n._succs:
            lines.append(f"  n{ids[id(n)]} -> n{ids[id(s)]};")
    lines.append("}")
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    except OSError as err:
        raise exception(errc.invalid, f"print_graph could not write {path}: {err}") from None


def _details(command: Command, kind: node_type, verbose: bool) -> list[str]:
    out: list[str] = []
    if isinstance(command, KernelLaunch):
        out.append(f"NAME = {_quote(command.name)}")
        if verbose:
            out.append(f"WORK-GROUPS = {command.groups}")
            out.append(f"ARGUMENTS = 0x{command.push_constants.hex()}")
    elif isinstance(command, HostTask):
        out.append(f"NAME = {_quote(getattr(command.fn, '__qualname__', 'host_task'))}")
    elif verbose and kind in (node_type.memcpy, node_type.memset, node_type.memfill):
        src, dst = getattr(command, "src", None), command.dst
        if src is not None:
            out.append(f"SRC = {_where(src)}")
        out.append(f"DST = {_where(dst)}")
        out.append(f"BYTES = {dst.nbytes}")
        pattern = getattr(command, "pattern", None)
        if pattern is not None:
            out.append(f"PATTERN = 0x{pattern.hex()}")
    elif verbose and kind is node_type.subgraph:
        out.append(f"NODES = {len(command.graph._nodes)}")
    return out


def _accessors(n: node) -> list[str]:
    """One line per buffer accessor of the node's command group."""
    h = n._handler
    return [] if h is None else [
        f"ACCESSOR = {a.access_mode.name}{' no_init' if a.no_init else ''} {a.dtype} "
        f"range{tuple(a.get_range())} offset{tuple(a.get_offset())} of buffer "
        f"range{tuple(a.buffer.get_range())}" for a in h.requirements]


def _where(span: Any) -> str:
    if span.allocation is None:
        return "host array"
    return f"0x{span.address:x}"


def _quote(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')
