"""`command_graph.print_graph`: DOT output of the topology, node types, ids, kernel names
and (verbose) arguments and addresses; other extensions are `errc.invalid`."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp


def test_print_graph(q, mem, tmp_path):
    a = mem.zeros(16, np.int32)

    def touch(i):
        a[i] = a[i] + 1

    g = syclexp.command_graph(q)
    with g.recording(q):
        e1 = q.parallel_for(sycl.range(16), touch)
        e2 = q.memset(a, 0, 64, depends_on=e1)
        q.fill(a, np.int32(7), 16, depends_on=e1)
        q.submit(lambda h: (h.depends_on(e2), h.host_task(lambda: None)))
    path = tmp_path / "g.dot"
    g.print_graph(str(path))
    text = path.read_text()
    assert text.startswith("digraph")
    assert re.findall(r"n(\d) -> n(\d)", text) == [("0", "1"), ("0", "2"), ("1", "3")]
    for word in ("TYPE = kernel", "NAME = touch", "TYPE = memset", "TYPE = memfill",
                 "TYPE = host_task"):
        assert word in text
    assert "ARGUMENTS" not in text
    g.print_graph(path, verbose=True)  # a path object works too
    verbose = path.read_text()
    assert "ARGUMENTS = 0x" in verbose and f"DST = 0x{a.allocation.address:x}" in verbose
    assert "PATTERN = 0x07000000" in verbose and "BYTES = 64" in verbose


@pytest.mark.parametrize("bad", ["graph.svg", "graph", "graph.dot.txt", 3])
def test_print_graph_refuses_other_formats(q, tmp_path, bad):
    g = syclexp.command_graph(q)
    target = str(tmp_path / bad) if isinstance(bad, str) else bad
    with pytest.raises(sycl.exception) as ei:
        g.print_graph(target)
    assert ei.value.code() == sycl.errc.invalid


def test_print_graph_unwritable_path(q, tmp_path):
    g = syclexp.command_graph(q)
    with pytest.raises(sycl.exception) as ei:
        g.print_graph(str(tmp_path / "missing" / "g.dot"))
    assert ei.value.code() == sycl.errc.invalid
