"""Does the Vulkan queue family vksycl submits to change launch latency or the cost of a
dependency between dispatches? Runs `eager_launch.py` and `graph.py` once per queue
family with compute (alternating, twice each), Kompute's manager created on that family.

    bash benchmarks/gpu/run.sh python3 benchmarks/gpu/queue_family_probe.py

(on the GPU machine; a few minutes)
"""

from __future__ import annotations

import os
import subprocess
import sys

_RUN = """
import os, runpy, sys
import vksycl  # first, as in a vksycl program (kp first crashed this probe in free() on NVIDIA)
from vksycl import _kp as kp
family = int(os.environ["VKSYCL_PROBE_FAMILY"])
manager = kp.Manager
kp.Manager = lambda index=0, families=(), extensions=(): manager(index, [family], list(extensions))
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def main() -> None:
    import vksycl as sycl

    families = sycl.device().vulkan.queue_families
    for i, f in enumerate(families):
        print(f"family {i}: flags {f.flags:#x}, {f.count} queues, compute {f.compute}")
    compute = [i for i, f in enumerate(families) if f.compute]
    env = dict(os.environ)
    for script, args in (("benchmarks/eager_launch.py", ["--rounds", "3"]),
                         ("benchmarks/graph.py", ["--n", "100"])):
        for family in compute * 2:
            env["VKSYCL_PROBE_FAMILY"] = str(family)
            out = subprocess.run([sys.executable, "-c", _RUN, script, *args], env=env,
                                 capture_output=True, text=True)
            print(f"## {script}, queue family {family} (exit {out.returncode})")
            print(out.stdout.strip()[-3000:])
            if out.returncode:
                print(out.stderr.strip()[-2000:])


if __name__ == "__main__":
    main()
