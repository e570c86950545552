"""Does the form of the barrier between dependent dispatches change their cost? Builds,
for this probe only, a Kompute variant whose dispatch barrier an environment variable
picks (the shipped one, a compute-to-compute memory barrier, the same by region, or an
execution-only barrier; each of two also with the pipeline bound once per chain rather than
before every dispatch), then times a pre-recorded chain of 100 tiny dependent
dispatches under each, checking the chain's result every time.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/barrier_probe.py

(on the GPU machine, where `.gpu/` holds the patched Kompute sdist; about a minute)
"""

from __future__ import annotations

import kompute_variant

VARIANTS = {**{k: kompute_variant.BARRIER_FORMS[k] for k in "0123"},
            "4": "as shipped, the pipeline bound once per chain",
            "5": "execution only, the pipeline bound once per chain"}

_BIND = """    static thread_local VkCommandBuffer boundIn = VK_NULL_HANDLE;
    static thread_local const void* boundAlgorithm = nullptr;
    if (variant < 4 || boundIn != static_cast<VkCommandBuffer>(commandBuffer) ||
        boundAlgorithm != this->mAlgorithm.get()) {
        this->mAlgorithm->recordBindCore(commandBuffer);
        boundIn = static_cast<VkCommandBuffer>(commandBuffer);
        boundAlgorithm = this->mAlgorithm.get();
    }"""

_CHAIN = """
import statistics, time
import numpy as np
import vksycl as sycl
from vksycl.kernels.launch import build_launch
q = sycl.queue()
engine = q._scheduler.engine
x = sycl.malloc_device(64, sycl.float32, q)
q.fill(x, np.float32(0), 64).wait()
def body(i):
    x[i] = x[i] + 1.0
tiny = build_launch(q.get_device(), body, sycl.range(64), None,
                    context=q.get_context()).dispatch(engine)
engine._pool[False].clear()  # a new command buffer for the chain
rec = engine.record([tiny] * 100)
for _ in range(5):
    engine.replay(rec).wait()
rounds = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(200):
        engine.replay(rec)
    engine.synchronize()
    rounds.append((time.perf_counter() - t0) / 200 / 100)
out = np.zeros(64, np.float32)
q.memcpy(out, x, 256).wait()
print(f"{statistics.median(rounds) * 1e6:.2f} us per dispatch, "
      f"{'result right' if out[0] == 100500 else f'WRONG result {out[0]}'}")
"""


def main() -> None:
    target = kompute_variant.barrier_variant(
        "VKSYCL_PROBE_BARRIER", ("    this->mAlgorithm->recordBindCore(commandBuffer);", _BIND))
    kompute_variant.run_forms(target, _CHAIN, "VKSYCL_PROBE_BARRIER", VARIANTS)


if __name__ == "__main__":
    main()
