"""Where the host time of a submission and of its completion goes, with the timeline
semaphore a sequence signals (Kompute patch 0012) and with the fence it replaced. Builds,
for this probe only, a Kompute variant that times (in C++, per call) `vkResetFences`,
`vkQueueSubmit` and the completion query, and that, with VKSYCL_PROBE_FENCE=1, keeps the
fence. Each mode then runs a tiny launch + wait and 1000 asynchronous launches, results
checked.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/submit_probe.py

(on the GPU machine, where `.gpu/` holds the patched Kompute sdist; about a minute)
"""

from __future__ import annotations

import kompute_variant

_TOP = """#include <chrono>
#include <cstdio>
#include <cstdlib>
namespace {
struct Clock {
    const char* name;
    double ns = 0;
    long calls = 0;
    ~Clock() {
        if (calls) std::fprintf(stderr, "  %-30s %8.2f us per call (%ld calls)\\n", name,
                                ns / calls / 1e3, calls);
    }
};
Clock resetClock{"vkResetFences"}, submitClock{"vkQueueSubmit"},
    queryClock{"completion query"};
struct Timer {
    Clock& c;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~Timer() {
        c.ns += std::chrono::duration<double, std::nano>(
                  std::chrono::steady_clock::now() - t0).count();
        c.calls++;
    }
};
}
"""

# (shipped text, the probe's) in Sequence.cpp
_EDITS = [
    ("Sequence::createTimeline()\n{\n",
     "Sequence::createTimeline()\n{\n"
     "    if (getenv(\"VKSYCL_PROBE_FENCE\") && atoi(getenv(\"VKSYCL_PROBE_FENCE\"))) {\n"
     "        return;\n"
     "    }\n"),
    ("        this->mDevice->resetFences(1, &this->mFence);\n",
     "        Timer timer{resetClock};\n"
     "        this->mDevice->resetFences(1, &this->mFence);\n"),
    ("            this->mComputeQueue->submit(1, &submitInfo, nullptr);\n",
     "            Timer timer{submitClock};\n"
     "            this->mComputeQueue->submit(1, &submitInfo, nullptr);\n"),
    ("    this->mComputeQueue->submit(1, &submitInfo, this->mFence);\n",
     "    {\n"
     "        Timer timer{submitClock};\n"
     "        this->mComputeQueue->submit(1, &submitInfo, this->mFence);\n"
     "    }\n"),
    ("    if (!this->fenceSignaled()) {\n        return false;\n    }\n",
     "    {\n"
     "        Timer timer{queryClock};\n"
     "        if (!this->fenceSignaled()) {\n            return false;\n        }\n"
     "    }\n"),
]

_RUN = """
import statistics, sys, time
import numpy as np
import vksycl as sycl
q = sycl.queue()
x = sycl.malloc_device(64, sycl.float32, q)
q.fill(x, np.float32(0), 64).wait()
rng = sycl.range(64)
def body(i):
    x[i] = x[i] + 1.0
launched = 0
singles, many = [], []
for _ in range(5):
    for _ in range(600):
        t0 = time.perf_counter()
        q.parallel_for(rng, body).wait()
        singles.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(1000):
        q.parallel_for(rng, body)
    q.wait()
    many.append((time.perf_counter() - t0) / 1000)
    launched += 1600
out = np.zeros(64, np.float32)
q.memcpy(out, x, 256).wait()
print(f"  launch + wait {statistics.median(singles) * 1e6:.1f} us, async "
      f"{statistics.median(many) * 1e6:.1f} us per launch, "
      f"{'result right' if out[0] == launched else f'WRONG result {out[0]}'}", flush=True)
"""


def main() -> None:
    target = kompute_variant.build(
        "src/Sequence.cpp", [("namespace kp {", _TOP + "namespace kp {"), *_EDITS])
    with kompute_variant.script(_RUN) as path:
        for fence in ("1", "0", "1", "0"):
            out = kompute_variant.run(target, path, VKSYCL_PROBE_FENCE=fence)
            print("fence" if fence == "1" else "timeline semaphore (as shipped)")
            print(out.stdout.rstrip())
            print(out.stderr.rstrip()[-1500:])


if __name__ == "__main__":
    main()
