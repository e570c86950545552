"""Memory bandwidth and submission latency of vksycl, against peers measured in the same run.

Prints memcpy bandwidth host->device, device->device and device->host from 1 MiB to 256 MiB,
and the eager submit-to-completion latency of the smallest command; beside them raw Kompute
dispatching the same copy shader, and torch on the GPU when it is installed.

    .venv/bin/python benchmarks/memory.py [--max-mib 256] [--repeat 5]
"""

from __future__ import annotations

import argparse
import struct

import numpy as np
from timing import best_seconds, median_us

import vksycl as sycl

MIB = 1 << 20


class RawKompute:
    """The same copy shader dispatched straight through kp, pipelines pre-built."""

    def __init__(self, device_index: int) -> None:
        from vksycl import _kp as kp
        from vksycl.runtime.glsl import compile_glsl
        from vksycl.runtime.memops import _shader_source

        self.kp = kp
        self.mgr = kp.Manager(device_index)
        self.spirv = compile_glsl(_shader_source("copy_vec4.comp"))

    def d2d(self, nbytes: int, repeat: int) -> float:
        kp = self.kp
        words = nbytes // 4
        a = self.mgr.tensor_t(np.zeros(words, np.uint32), kp.TensorTypes.storage)
        b = self.mgr.tensor_t(np.zeros(words, np.uint32), kp.TensorTypes.storage)
        n16 = nbytes // 16
        groups = min(32768, 1 << (max(1, -(-n16 // 256)) - 1).bit_length())
        push = _addresses(a, b, n16)
        algo = self.mgr.algorithm([a, b], self.spirv, [groups, 1, 1],
                                  np.zeros(0, np.uint32), push)
        seq = self.mgr.sequence()
        seq.record(kp.OpAlgoDispatch(algo, push))
        return best_seconds(seq.eval, repeat)

    def latency_us(self, n: int) -> tuple[float, float]:
        """(replaying one pre-recorded dispatch, recording and submitting it anew)."""
        kp = self.kp
        a = self.mgr.tensor_t(np.zeros(4, np.uint32), kp.TensorTypes.storage)
        b = self.mgr.tensor_t(np.zeros(4, np.uint32), kp.TensorTypes.storage)
        push = _addresses(a, b, 1)
        algo = self.mgr.algorithm([a, b], self.spirv, [1, 1, 1], np.zeros(0, np.uint32), push)
        seq = self.mgr.sequence()
        seq.record(kp.OpAlgoDispatch(algo, push))
        replay = median_us(seq.eval, n)

        def rerecord() -> None:
            seq.clear()
            seq.record(kp.OpAlgoDispatch(algo, push))
            seq.eval_async()
            seq.eval_await()

        return replay, median_us(rerecord, n)


def _addresses(src, dst, count: int) -> np.ndarray:
    """The copy shader's push constants: source and destination addresses, 16-byte units."""
    return np.frombuffer(struct.pack("<QQI", src.device_address(), dst.device_address(),
                                     count), np.uint32)


def torch_peer():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def measure_size(q, raw: RawKompute, torch, n: int, repeat: int) -> list[str]:
    """Rows for one size: h2d/d2h from numpy (pageable) and from malloc_host (uh2d/d2uh)."""
    dev = q.get_device()
    host = np.ones(n, np.uint8)
    pinned = sycl.malloc_host(n, sycl.uint8, q)
    d0 = sycl.malloc_device(n, sycl.uint8, q)
    d1 = sycl.malloc_device(n, sycl.uint8, q)
    rows = {
        "h2d": best_seconds(lambda: q.memcpy(d0, host, n).wait(), repeat),
        "uh2d": best_seconds(lambda: q.memcpy(d0, pinned, n).wait(), repeat),
        "d2d": best_seconds(lambda: q.memcpy(d1, d0, n).wait(), repeat),
        "d2h": best_seconds(lambda: q.memcpy(host, d1, n).wait(), repeat),
        "d2uh": best_seconds(lambda: q.memcpy(pinned, d1, n).wait(), repeat),
    }
    for p in (pinned, d0, d1):
        sycl.free(p, q)
    peers_kp = {}
    if n <= dev.vulkan.max_storage_buffer_range:
        peers_kp["d2d"] = raw.d2d(n, repeat)
    peers_torch = torch_copies(torch, n, repeat) if torch is not None else {}
    lines = []
    for name, secs in rows.items():
        gbs = n / secs / 1e9
        kp_gbs = n / peers_kp[name] / 1e9 if name in peers_kp else float("nan")
        t_gbs = n / peers_torch[name] / 1e9 if name in peers_torch else float("nan")
        lines.append(f"{n // MIB:>5} {name:>4} {gbs:>12.2f} {kp_gbs:>12.2f} {t_gbs:>11.2f} "
                     f"{gbs / kp_gbs:>6.2f} {gbs / t_gbs:>8.2f}")
    return lines


def torch_copies(torch, n: int, repeat: int) -> dict[str, float]:
    th = torch.ones(n, dtype=torch.uint8)
    tp = th.pin_memory()
    t0 = torch.empty(n, dtype=torch.uint8, device="cuda")
    t1 = torch.empty_like(t0)

    def timed(fn):
        def run():
            fn()
            torch.cuda.synchronize()
        return best_seconds(run, repeat)

    return {"h2d": timed(lambda: t0.copy_(th)), "uh2d": timed(lambda: t0.copy_(tp)),
            "d2d": timed(lambda: t1.copy_(t0)), "d2h": timed(lambda: th.copy_(t1)),
            "d2uh": timed(lambda: tp.copy_(t1))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--latency-n", type=int, default=2000)
    args = ap.parse_args()

    q = sycl.queue()
    dev = q.get_device()
    print(f"device: {dev.get_info(sycl.info.device.name)}")
    raw = RawKompute(dev.vulkan.index)
    torch = torch_peer()
    if torch is not None:
        print(f"peer: torch {torch.__version__} on {torch.cuda.get_device_name()}")

    header = f"{'MiB':>5} {'dir':>4} {'vksycl GB/s':>12} {'raw kp GB/s':>12} {'torch GB/s':>11}" \
             f" {'vs kp':>6} {'vs torch':>8}"
    print(header)
    for mib in (s for s in (1, 4, 16, 64, 256, 1024) if s <= args.max_mib):
        for line in measure_size(q, raw, torch, mib * MIB, args.repeat):
            print(line)

    tiny = sycl.malloc_device(4, sycl.uint8, q)
    eager = median_us(lambda: q.memset(tiny, 1, 4).wait(), args.latency_n)
    replay, rerecord = raw.latency_us(args.latency_n)
    print(f"latency eager memset(4 B) submit-to-completion: {eager:.1f} us")
    print(f"latency raw kp pre-recorded eval: {replay:.1f} us; record+submit+wait: "
          f"{rerecord:.1f} us; vksycl / raw kp record+submit: {eager / rerecord:.2f}x")
    if torch is not None:
        x = torch.zeros(1, device="cuda")

        def launch():
            x.add_(1)
            torch.cuda.synchronize()

        t = median_us(launch, args.latency_n)
        print(f"latency torch tiny kernel + synchronize: {t:.1f} us; vksycl / torch: "
              f"{eager / t:.2f}x")
    sycl.free(tiny, q)


if __name__ == "__main__":
    main()
