"""What recording one dispatch into an open batch costs the host, and how much of it is
the barrier before it, by the barrier's form. Builds, for this probe only, a Kompute
variant whose `OpAlgoDispatch::record` records the barrier an environment variable picks
(the shipped one, transfer and compute writes to compute; compute to compute as a memory
barrier, by region, or execution only; none), then times `Sequence.record` of one eager
launch's dispatch, 64 to a command buffer, under each; and a trivial call through the same
bindings, the floor of any call. Nothing is submitted.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/record_probe.py

(on the GPU machine, where `.gpu/` holds the patched Kompute sdist; about a minute)
"""

from __future__ import annotations

import kompute_variant

VARIANTS = kompute_variant.BARRIER_FORMS

_TIMING = """
import statistics, time
import vksycl as sycl
from vksycl.kernels.launch import build_launch
q = sycl.queue()
engine = q._scheduler.engine
x = sycl.malloc_device(64, sycl.float32, q)
def body(i):
    x[i] = x[i] + 1.0
op = build_launch(q.get_device(), body, sycl.range(64), None,
                  context=q.get_context()).dispatch(engine).op
seq = engine._manager.sequence(0, 0)
record, floor = [], []
for _ in range(200):
    seq.clear()
    t0 = time.perf_counter()
    for _ in range(64):
        seq.record(op)
    t1 = time.perf_counter()
    for _ in range(64):
        seq.is_init()
    record.append((t1 - t0) / 64)
    floor.append((time.perf_counter() - t1) / 64)
print(f"record {statistics.median(record) * 1e9:.0f} ns, a trivial call "
      f"{statistics.median(floor) * 1e9:.0f} ns")
"""


def main() -> None:
    target = kompute_variant.barrier_variant("VKSYCL_PROBE_RECORD")
    kompute_variant.run_forms(target, _TIMING, "VKSYCL_PROBE_RECORD", VARIANTS)

if __name__ == "__main__":
    main()
