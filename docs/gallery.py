"""Makes the gallery's pictures (docs/images/gallery/) by running the examples:

    .venv/bin/python docs/gallery.py [--only NAME ...]

- particles.png: examples/particles_renderer.py's last frame;
- jacobi.png: the heat map examples/mpi_jacobi.py solves (its `solve`, on one rank);
- mandelbrot.png: the Mandelbrot kernel shown on the gallery page;
- graph.png, graph_fused.png: a recorded graph and its fused executable graph, as DOT
  from `print_graph`, rendered by Graphviz's `dot` (Debian's `graphviz`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images" / "gallery"
sys.path.insert(0, str(ROOT))

import vksycl as sycl  # noqa: E402
from vksycl.ext.oneapi import experimental as syclexp  # noqa: E402


def particles() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(ROOT / "examples" / "particles_renderer.py"),
                    "--out", str(OUT / "particles.png")], check=True, env=env)


def jacobi() -> None:
    import matplotlib.pyplot as plt
    from mpi4py import MPI

    spec = importlib.util.spec_from_file_location("mpi_jacobi",
                                                  ROOT / "examples" / "mpi_jacobi.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    n, m, iters = 128, 128, 6000
    grid, _, _ = mod.solve(sycl.queue(), MPI.COMM_SELF, n, m, iters, "device")
    fig, ax = plt.subplots(figsize=(5, 4.2), dpi=120)
    im = ax.imshow(grid, cmap="inferno", origin="upper")
    ax.set_title(f"Heat equation: {n} x {m} plate, {iters} Jacobi steps", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.colorbar(im, ax=ax, label="temperature")
    fig.tight_layout()
    fig.savefig(OUT / "jacobi.png")
    plt.close(fig)


W, H, MAX_ITER = 600, 400, 200


def mandelbrot_image() -> np.ndarray:
    """The kernel the gallery page shows, at a larger size."""
    q = sycl.queue()
    counts = sycl.malloc_shared(W * H, sycl.int32, q)

    def mandel(it):
        row, col = it[0], it[1]
        cr = -2.2 + 3.2 * sycl.float32(col) / W
        ci = -1.2 + 2.4 * sycl.float32(row) / H
        zr = 0.0
        zi = 0.0
        n = 0
        while n < MAX_ITER and zr * zr + zi * zi < 4.0:
            zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
            n += 1
        counts[row * W + col] = n

    q.parallel_for(sycl.range(H, W), mandel).wait()
    out = np.asarray(counts)[: W * H].reshape(H, W).copy()
    sycl.free(counts, q)
    return out


def mandelbrot() -> None:
    import matplotlib.pyplot as plt

    img = mandelbrot_image()
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    ax.imshow(np.log1p(img), cmap="twilight_shifted", extent=(-2.2, 1.0, -1.2, 1.2))
    ax.set_title("Mandelbrot set, one work-item per pixel")
    fig.tight_layout()
    fig.savefig(OUT / "mandelbrot.png")
    plt.close(fig)


def graphs() -> None:
    if not shutil.which("dot"):
        sys.exit("graphs: Graphviz's `dot` is missing (apt-get install graphviz)")
    q = sycl.queue(property_list=[sycl.property.queue.in_order()])
    n = 1000
    src, t, u, dst = (sycl.malloc_shared(n, sycl.float32, q) for _ in range(4))
    np.asarray(src)[:n] = np.arange(n)

    def times2(i):
        t[i] = src[i] * 2.0

    def times3(i):
        u[i] = t[i] * 3.0

    def plus1(i):
        u[i] = u[i] + 1.0

    def shift(i):
        dst[i] = u[(i + 1) % n]

    g = syclexp.command_graph(q)
    with g.recording(q):
        for k in (times2, times3, plus1, shift):
            q.parallel_for(sycl.range(n), k)
        q.memcpy(t, dst, 4 * n)
    exe = g.finalize([syclexp.property.graph.perform_fusion()])
    q.ext_oneapi_graph(exe).wait()
    print(exe.fusion_report())
    with tempfile.TemporaryDirectory() as tmp:
        for name, obj in (("graph", g), ("graph_fused", exe)):
            dot = Path(tmp) / f"{name}.dot"
            obj.print_graph(str(dot), verbose=False)
            subprocess.run(["dot", "-Tpng", "-Gdpi=110", str(dot), "-o",
                            str(OUT / f"{name}.png")], check=True)


MAKERS = {"particles": particles, "jacobi": jacobi, "mandelbrot": mandelbrot,
          "graphs": graphs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(MAKERS), default=sorted(MAKERS))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.only:
        print("making", name)
        MAKERS[name]()


if __name__ == "__main__":
    main()
