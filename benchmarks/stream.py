"""STREAM-style copy, scale and triad written as Python kernels, against torch on a CUDA
GPU and numba-vulkan's kernels on the same Vulkan device, where they are importable.

Bandwidth counts the bytes each kernel reads and writes (copy and scale: 2 arrays, triad:
3). Each kernel is launched `--repeat` times; the best time counts. Each result is checked.
`--csv FILE` writes the figures for docs/plots.py (`record.py`).

    .venv/bin/python benchmarks/stream.py [--mib 256] [--repeat 10] [--csv FILE [--append]]
"""

from __future__ import annotations

import argparse

import numba_vulkan_peer
import numpy as np
import record
from timing import best_seconds

import vksycl as sycl


def best(fn, wait, repeat: int) -> float:
    return best_seconds(lambda: (fn(), wait()), repeat)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256, help="size of each array")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--local", type=int, default=256, help="work-group size")
    record.add_arguments(ap)
    args = ap.parse_args()

    q = sycl.queue()
    n = args.mib * (1 << 20) // 4
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; "
          f"{n} float32 per array ({args.mib} MiB)")
    a = sycl.malloc_device(n, sycl.float32, q)
    b = sycl.malloc_device(n, sycl.float32, q)
    c = sycl.malloc_device(n, sycl.float32, q)
    q.fill(a, np.float32(1.0), n)
    q.fill(b, np.float32(2.0), n)
    q.fill(c, np.float32(0.0), n).wait()
    s = np.float32(3.0)
    launch = sycl.nd_range((n,), (args.local,))

    def copy(it):
        i = it.get_global_id(0)
        c[i] = a[i]

    def scale(it):
        i = it.get_global_id(0)
        b[i] = s * c[i]

    def triad(it):
        i = it.get_global_id(0)
        a[i] = b[i] + s * c[i]

    kernels = {"copy": (copy, 2), "scale": (scale, 2), "triad": (triad, 3)}
    ours = {name: best(lambda k=k: q.parallel_for(launch, k), q.wait, args.repeat)
            for name, (k, _) in kernels.items()}

    # Check one pass of each against numpy on a sample.
    q.fill(a, np.float32(1.0), n)
    q.fill(b, np.float32(2.0), n)
    q.fill(c, np.float32(0.0), n).wait()
    for k, _ in kernels.values():
        q.parallel_for(launch, k).wait()
    sample = np.zeros(1024, np.float32)
    q.memcpy(sample, a + (n - 1024), 4096).wait()
    assert np.allclose(sample, 3.0 + 3.0 * 1.0), sample[:4]

    peers: dict[str, dict[str, float]] = {}
    versions: dict[str, str] = {}
    nv_version = numba_vulkan_peer.version()
    if nv_version:
        theirs, nv_wait, nv_result = numba_vulkan_peer.stream_case(
            q.get_device().get_info(sycl.info.device.name), n, float(s))
        peers["numba-vulkan"] = {name: best(k, nv_wait, args.repeat)
                                 for name, k in theirs.items()}
        got = nv_result()
        assert np.allclose(got[-1024:], 3.0 + 3.0 * 1.0), got[-4:]
        versions["numba-vulkan"] = nv_version
    try:
        import torch
        if torch.cuda.is_available():
            ta = torch.ones(n, device="cuda")
            tb = torch.full((n,), 2.0, device="cuda")
            tc = torch.zeros(n, device="cuda")
            sync = torch.cuda.synchronize
            peers["torch"] = {
                "copy": best(lambda: tc.copy_(ta), sync, args.repeat),
                "scale": best(lambda: torch.mul(tc, 3.0, out=tb), sync, args.repeat),
                "triad": best(lambda: torch.add(tb, tc, alpha=3.0, out=ta), sync, args.repeat),
            }
            versions["torch"] = torch.__version__
    except ImportError:
        pass

    print("peers: " + (", ".join(f"{k} {v}" for k, v in versions.items()) or "none"))
    array = f"{args.mib // 1024} GiB" if args.mib % 1024 == 0 else f"{args.mib} MiB"
    rows = []
    for name, (_, arrays) in kernels.items():
        moved = arrays * n * 4
        row = {"array": array, "kernel": name, "vksycl_gbs": moved / ours[name] / 1e9}
        for peer, secs in peers.items():
            row[f"{peer.replace('-', '_')}_gbs"] = moved / secs[name] / 1e9
        rows.append(row)
    print(" | ".join(rows[0]))
    for row in rows:
        print(" | ".join(f"{v:.1f}" if isinstance(v, float) else v for v in row.values()))
    record.write(args, "STREAM, wall clock of launch + wait, GB/s (best of --repeat)", rows,
                 q.get_device(), versions)
    for p in (a, b, c):
        sycl.free(p, q)


if __name__ == "__main__":
    main()
