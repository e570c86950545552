"""Draws every plot of the performance page from the recorded data, in one command:

    .venv/bin/python docs/plots.py [--out FOLDER]

Each file in benchmarks/data/ is a CSV whose leading `#` lines say what was measured, the
command that measured it and the machine it ran on; the plots go to docs/images/perf/.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
OUT = ROOT / "docs" / "images" / "perf"

VKSYCL, PEER, OTHER = "#3f51b5", "#ff7043", "#9e9e9e"


def table(name: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """A data file's `# key: value` header and its rows."""
    meta: dict[str, str] = {}
    lines = []
    for line in (DATA / name).read_text().splitlines():
        if line.startswith("#"):
            key, _, value = line[1:].strip().partition(": ")
            meta[key if value else "title"] = value or key
        elif line.strip():
            lines.append(line)
    return meta, list(csv.DictReader(lines))


def save(fig, name: str, meta: dict[str, str]) -> None:
    fig.text(0.01, -0.04, meta.get("machine", "")[:150], fontsize=6.5, color="#555")
    fig.savefig(OUT / name, dpi=110, bbox_inches="tight")
    plt.close(fig)


def launch() -> None:
    meta, rows = table("launch_h200.csv")
    names = [r["spelling"] for r in rows]
    wait = [sum(float(r[f"wait_{k}"]) for k in (1, 2, 3)) / 3 for r in rows]
    asyn = [sum(float(r[f"async_{k}"]) for k in (1, 2, 3)) / 3 for r in rows]
    colors = [PEER if "(peer)" in n else VKSYCL for n in names]
    fig, axes = plt.subplots(1, 2, figsize=(11, 6.5), sharey=True)
    for ax, values, what in ((axes[0], wait, "launch + wait"), (axes[1], asyn, "async launch")):
        ax.barh(names, values, color=colors)
        ax.invert_yaxis()
        ax.set_xlabel(f"{what}, µs (mean of 3 processes)")
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:.1f}", va="center", fontsize=7)
    fig.suptitle("A tiny kernel's launch, per spelling, on an NVIDIA H200 (peers in orange)")
    save(fig, "launch_h200.png", meta)

    meta, rows = table("launch_lavapipe.csv")
    names = [r["spelling"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 6.5))
    y = range(len(rows))
    ax.barh([i - 0.2 for i in y], [float(r["wait_us"]) for r in rows], height=0.4,
            color=VKSYCL, label="default (idle vCPUs halt)")
    ax.barh([i + 0.2 for i in y], [float(r["wait_awake_us"]) for r in rows], height=0.4,
            color=OTHER, label="vCPUs kept awake (--awake)")
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel("launch + wait, µs")
    ax.legend(loc="lower right")
    ax.set_title("A tiny kernel's launch + wait, per spelling, on lavapipe")
    save(fig, "launch_lavapipe.png", meta)


def grouped(ax, groups: list[str], series: dict[str, list[float | None]],
            colors: list[str]) -> None:
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series.items()):
        xs = [g + (k - (len(series) - 1) / 2) * width for g in range(len(groups))]
        pts = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None]
        bars = ax.bar([p[0] for p in pts], [p[1] for p in pts], width, label=label,
                      color=colors[k % len(colors)])
        ax.bar_label(bars, fmt="%g", fontsize=7, padding=1)
    ax.set_xticks(range(len(groups)), groups)
    ax.legend(fontsize=8)


def stream() -> None:
    meta, rows = table("stream_h200.csv")
    fig, ax = plt.subplots(figsize=(8, 4))
    groups = [f"{r['kernel']}\n{r['array']}" for r in rows]
    grouped(ax, groups, {"vksycl": [float(r["vksycl_gbs"]) for r in rows],
                         "torch": [float(r["torch_gbs"]) for r in rows]}, [VKSYCL, PEER])
    ax.set_ylabel("GB/s (launch + wait, wall clock)")
    ax.set_title("STREAM on an NVIDIA H200")
    save(fig, "stream_h200.png", meta)


def gemm() -> None:
    meta, rows = table("gemm_h200.csv")
    fig, ax = plt.subplots(figsize=(9, 4.5))
    groups = [r["implementation"].replace(" (", "\n(").replace(" + ", "\n+ ") for r in rows]
    cols = {"4096³": "tflops_4096", "8192³": "tflops_8192"}
    grouped(ax, groups, {k: [float(r[c]) if r[c] else None for r in rows]
                         for k, c in cols.items()}, [VKSYCL, OTHER])
    ax.tick_params(axis="x", labelsize=7.5)
    ax.set_ylabel("TFLOP/s")
    ax.set_title("GEMM on an NVIDIA H200: float16 joint_matrix against cuBLAS and Triton")
    save(fig, "gemm_h200.png", meta)

    meta, rows = table("matmul_fp32_h100.csv")
    fig, ax = plt.subplots(figsize=(6, 2.4))
    names = [r["implementation"] for r in rows]
    values = [float(r["gflops"]) for r in rows]
    ax.barh(names, values, color=[VKSYCL, PEER])
    ax.invert_yaxis()
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:g}", va="center", fontsize=8)
    ax.set_xlabel("GFLOP/s, 2048 x 2048 float32, 16 x 16 local tiles")
    ax.set_title("The same tiled matmul: Python kernel and hand-written CUDA (H100)")
    save(fig, "matmul_fp32_h100.png", meta)


def reduction() -> None:
    meta, rows = table("reduction_h100.csv")

    def mean(n, red, col):
        vals = [float(r[col]) for r in rows if (r["n"], r["reduction"]) == (n, red)]
        return round(sum(vals) / len(vals), 1)

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    for ax, n in zip(axes, ("16M", "256M"), strict=True):
        reds = sorted({r["reduction"] for r in rows if r["n"] == n}, reverse=True)
        grouped(ax, reds, {"vksycl": [mean(n, r, "vksycl_us") for r in reds],
                           "torch": [mean(n, r, "torch_us") for r in reds]},
                [VKSYCL, PEER])
        ax.set_title(f"{n} float32")
        ax.set_ylabel("µs per reduction (mean of 2 runs)")
    fig.suptitle("Reductions on an NVIDIA H100, a new range and reduction every call")
    save(fig, "reduction_h100.png", meta)


def graph() -> None:
    meta, rows = table("graph_h100.csv")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, figure, unit in ((axes[0], "chain of 100 (per node)", "µs per node"),
                             (axes[1], "8 elementwise ops", "µs per replay")):
        variants = list(dict.fromkeys(r["variant"] for r in rows if r["figure"] == figure))
        means = []
        for v in variants:
            vals = [float(r["value_us"]) for r in rows
                    if r["figure"] == figure and r["variant"] == v]
            means.append(sum(vals) / len(vals))
        colors = [VKSYCL if v == "vksycl fused" else OTHER if "vksycl" in v else PEER
                  for v in variants]
        bars = ax.bar([v.replace(" ", "\n", 1) for v in variants], means, color=colors)
        ax.bar_label(bars, fmt="%.4g", fontsize=8)
        ax.set_ylabel(unit)
        ax.set_title(figure + (" over 64M float32" if "elementwise" in figure else ""))
    fig.suptitle("Command graphs on an NVIDIA H100: fused, unfused, and torch's")
    save(fig, "graph_h100.png", meta)


def interop() -> None:
    meta, rows = table("interop.csv")
    fig, ax = plt.subplots(figsize=(8, 3.8))
    labels = [f"{r['gpu']}: {r['path']}" for r in rows]
    values = [float(r["ms"]) for r in rows]
    colors = [PEER if "host copies" in r["path"] else VKSYCL for r in rows]
    ax.barh(labels, values, color=colors)
    ax.invert_yaxis()
    ax.set_xscale("log")
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:g} ms", va="center", fontsize=8)
    ax.set_xlabel("ms for a 256 MiB round trip vksycl -> torch -> vksycl (log scale)")
    ax.set_title("Sharing memory with CUDA, against copying through the host")
    save(fig, "interop.png", meta)


def scaling() -> None:
    meta, rows = table("scaling_lavapipe.csv")
    fig, ax = plt.subplots(figsize=(7, 4))
    for memory, style in (("device", "-o"), ("shared", "--s")):
        for scaling, color in (("strong", VKSYCL), ("weak", PEER)):
            pts = [(int(r["ranks"]), float(r["ms_per_iteration"])) for r in rows
                   if r["memory"] == memory and r["scaling"] == scaling]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color,
                    label=f"{scaling}, {memory} USM")
    ax.set_xticks([1, 2, 4])
    ax.set_xlabel("MPI ranks (all on one lavapipe device, 2 shared cores)")
    ax.set_ylabel("ms per iteration, slowest rank")
    ax.legend(fontsize=8)
    ax.set_title("examples/mpi_jacobi.py on lavapipe: the decomposition's overhead")
    save(fig, "scaling_lavapipe.png", meta)


PLOTS = [launch, stream, gemm, reduction, graph, interop, scaling]


def main() -> None:
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="where the PNGs go")
    OUT = ap.parse_args().out
    OUT.mkdir(parents=True, exist_ok=True)
    for plot in PLOTS:
        plot()
    print(f"{len(list(OUT.glob('*.png')))} plots in {OUT}")


if __name__ == "__main__":
    main()
