"""Record & replay (sycl_ext_oneapi_graph, usage guide "Diamond Dependency"): kernels
submitted to a queue in the recording state become graph nodes, with edges from their
event dependencies; the finished graph replays the diamond with no further Python per
kernel. The graph is written as DOT, and rendered to SVG when Graphviz is installed.

    .venv/bin/python examples/graph_record_replay.py
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import vksycl as sycl
from vksycl.ext.oneapi import experimental as syclexp

N = 1024
ITERATIONS = 8


def main() -> int:
    q = sycl.queue()
    a = sycl.malloc_shared(N, sycl.int32, q)
    b = sycl.malloc_shared(N, sycl.int32, q)
    c = sycl.malloc_shared(N, sycl.int32, q)
    for p, start in ((a, 1), (b, 10), (c, 1000)):
        np.asarray(p)[:N] = np.arange(start, start + N)

    def inc_a(i):
        a[i] = a[i] + 1

    def add_b(i):
        b[i] = b[i] + a[i]

    def sub_c(i):
        c[i] = c[i] - a[i]

    def dec_bc(i):
        b[i] = b[i] - 1
        c[i] = c[i] - 1

    g = syclexp.command_graph(q)
    with g.recording(q):  # nothing runs: the submissions become nodes
        e_a = q.parallel_for(sycl.range(N), inc_a)
        e_b = q.parallel_for(sycl.range(N), add_b, depends_on=e_a)
        e_c = q.parallel_for(sycl.range(N), sub_c, depends_on=e_a)
        q.parallel_for(sycl.range(N), dec_bc, depends_on=[e_b, e_c])
    exe = g.finalize()

    ra, rb, rc = (np.asarray(p)[:N].astype(np.int64) for p in (a, b, c))
    for _ in range(ITERATIONS):
        q.ext_oneapi_graph(exe)  # back to back: the device queue orders the replays
        ra += 1
        rb += ra - 1
        rc -= ra + 1
    q.wait()
    ok = all(np.array_equal(np.asarray(p)[:N], r) for p, r in ((a, ra), (b, rb), (c, rc)))

    with tempfile.TemporaryDirectory() as tmp:
        dot = Path(tmp) / "diamond.dot"
        g.print_graph(str(dot), verbose=True)
        text = dot.read_text()
        ok = ok and text.count("->") == 4
        print(text)
        if shutil.which("dot"):
            svg = dot.with_suffix(".svg")
            subprocess.run(["dot", "-Tsvg", str(dot), "-o", str(svg)], check=True)
            ok = ok and svg.read_text().lstrip().startswith("<")
            print(f"rendered {svg.name}: {svg.stat().st_size} bytes")
    print("record & replay:", "ok" if ok else "MISMATCH")
    for p in (a, b, c):
        sycl.free(p, q)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
