"""Draws every plot of the performance page from the recorded data, in one command:

    .venv/bin/python docs/plots.py [--data FOLDER] [--out FOLDER]

Each file in benchmarks/data/ is a CSV whose leading `#` lines say what was measured, the
command that measured it and the machine it ran on, written by the benchmark itself
(`--csv`, benchmarks/record.py, which also reads them here); the plots go to
docs/images/perf/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
OUT = ROOT / "docs" / "images" / "perf"
sys.path.insert(0, str(ROOT / "benchmarks"))
import record  # noqa: E402

VKSYCL, PEER, OTHER = "#3f51b5", "#ff7043", "#9e9e9e"
PEERS = ["#ff7043", "#43a047", "#8e24aa"]


def table(name: str) -> tuple[dict[str, str], list[dict[str, str]]]:
    """A data file's `# key: value` header and its rows."""
    return record.read(DATA / name)


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def save(fig, name: str, meta: dict[str, str]) -> None:
    fig.text(0.01, -0.04, meta.get("machine", "")[:150], fontsize=6.5, color="#555")
    fig.savefig(OUT / name, dpi=110, bbox_inches="tight")
    plt.close(fig)


def per_spelling(name: str, title: str) -> None:
    """Launch + wait and async launch per spelling, each the mean over the file's runs."""
    meta, rows = table(f"{name}.csv")
    names = list(dict.fromkeys(r["spelling"] for r in rows))
    runs = {n: [r for r in rows if r["spelling"] == n] for n in names}
    wait = [mean([float(r["wait_us"]) for r in runs[n]]) for n in names]
    asyn = [mean([float(r["async_us"]) for r in runs[n]]) for n in names]
    count = len({r["run"] for r in rows})
    colors = [PEER if "(peer)" in n else OTHER if "raw kp" in n else VKSYCL for n in names]
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.3 * len(names) + 1), sharey=True)
    for ax, values, what in ((axes[0], wait, "launch + wait"), (axes[1], asyn, "async launch")):
        ax.barh(names, values, color=colors)
        ax.set_xlabel(f"{what}, µs (mean of {count} process{'es' if count > 1 else ''})")
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:.1f}", va="center", fontsize=7)
    axes[0].invert_yaxis()  # once: the axes share it
    fig.suptitle(f"{title} (peers in orange)")
    save(fig, f"{name}.png", meta)


def launch() -> None:
    per_spelling("launch_h100", "A tiny kernel's launch, per spelling, on an NVIDIA H100")
    per_spelling("launch_lavapipe", "A tiny kernel's launch, per spelling, on lavapipe")

    meta, rows = table("launch_gaps_lavapipe.csv")
    names = list(dict.fromkeys(r["spelling"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 6.5))
    y = range(len(names))
    for shift, cpus, color, label in ((-0.2, "halt", VKSYCL, "default (idle vCPUs halt)"),
                                      (0.2, "awake", OTHER, "vCPUs kept awake (--awake)")):
        got = {r["spelling"]: float(r["wait_us"]) for r in rows if r["cpus"] == cpus}
        ax.barh([i + shift for i in y], [got.get(n, 0.0) for n in names], height=0.4,
                color=color, label=label)
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel("launch + wait, µs")
    ax.legend(loc="lower right")
    ax.set_title("launch + wait per spelling on lavapipe, idle vCPUs halting or not")
    save(fig, "launch_gaps_lavapipe.png", meta)


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
    for name, where in (("stream_h200", "an NVIDIA H200"), ("stream_lavapipe", "lavapipe")):
        meta, rows = table(f"{name}.csv")
        groups = list(dict.fromkeys((r["array"], r["kernel"]) for r in rows))
        columns = [c for c in rows[0] if c.endswith("_gbs")]
        series = {c.removesuffix("_gbs").replace("_", "-"): [
            mean([float(r[c]) for r in rows if (r["array"], r["kernel"]) == g and r[c]])
            for g in groups] for c in columns}
        fig, ax = plt.subplots(figsize=(8, 4))
        grouped(ax, [f"{k}\n{a}" for a, k in groups], series, [VKSYCL, *PEERS])
        ax.set_ylabel("GB/s (launch + wait, wall clock)")
        ax.set_title(f"STREAM on {where}")
        save(fig, f"{name}.png", meta)


def gemm() -> None:
    meta, rows = table("gemm_h200.csv")
    fig, ax = plt.subplots(figsize=(9, 4.5))
    groups = [r["implementation"].replace(" (", "\n(").replace(" + ", "\n+ ") for r in rows]
    cols = {f"{c.removeprefix('tflops_')}³": c for c in rows[0] if c.startswith("tflops_")}
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
    ax.barh(names, values, color=[VKSYCL if "vksycl" in n else PEER for n in names])
    ax.invert_yaxis()
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:g}", va="center", fontsize=8)
    ax.set_xlabel("GFLOP/s, 2048 x 2048 float32, 16 x 16 local tiles")
    ax.set_title("The same tiled matmul: Python kernel and hand-written CUDA (H100)")
    save(fig, "matmul_fp32_h100.png", meta)


def reduction() -> None:
    meta, rows = table("reduction_h100.csv")

    def mean_of(n: str, red: str, col: str) -> float | None:
        values = [float(r[col]) for r in rows if (r["n"], r["reduction"]) == (n, red) and r[col]]
        return round(mean(values), 1) if values else None

    sizes = list(dict.fromkeys(r["n"] for r in rows))
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.5 * len(sizes), 3.8), squeeze=False)
    for ax, n in zip(axes[0], sizes, strict=True):
        reds = list(dict.fromkeys(r["reduction"] for r in rows if r["n"] == n))
        grouped(ax, reds, {"vksycl": [mean_of(n, r, "vksycl_us") for r in reds],
                           "torch": [mean_of(n, r, "torch_us") for r in reds]},
                [VKSYCL, PEER])
        ax.set_title(f"{n} float32")
        ax.set_ylabel(f"µs per reduction (mean of {len({r['run'] for r in rows})} runs)")
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
    global DATA, OUT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA, help="where the data files are")
    ap.add_argument("--out", type=Path, default=OUT, help="where the PNGs go")
    args = ap.parse_args()
    DATA, OUT = args.data, args.out
    OUT.mkdir(parents=True, exist_ok=True)
    for plot in PLOTS:
        plot()
    print(f"{len(list(OUT.glob('*.png')))} plots in {OUT}")


if __name__ == "__main__":
    main()
