"""What a launch + wait costs when the host takes longer from one wait's return to the next
launch: a busy delay of a few microseconds before each launch of one `eager_launch.py`
spelling, the delays in alternating rounds.

On lavapipe the driver's own threads run each submission and go idle once it is done; a
submission arriving after they went idle waits for them to wake. Where that wake-up is
slow (a virtual machine's idle vCPU), a few microseconds more host work before a launch
cost several times that in launch + wait, which is how spellings whose host paths differ
by a few microseconds come apart by more on such a machine.

    python3 benchmarks/host_gap_probe.py [--spelling "same range object"] [--rounds 60]
"""

from __future__ import annotations

import argparse
import statistics
import time

from eager_launch import SPELLINGS, vksycl_case

import vksycl as sycl

DELAYS_US = (0, 1, 2, 3, 4, 6, 8, 12)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spelling", default=SPELLINGS[0], choices=SPELLINGS)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--per-round", type=int, default=25)
    args = ap.parse_args()
    q = sycl.queue()
    launch, wait, _ = vksycl_case(q, args.spelling)
    for _ in range(200):
        launch()
        wait()
    clock = time.perf_counter
    times: dict[int, list[float]] = {d: [] for d in DELAYS_US}
    for _ in range(args.rounds):
        for delay, got in times.items():
            for _ in range(args.per_round):
                until = clock() + delay * 1e-6
                while clock() < until:
                    pass
                t0 = clock()
                launch()
                wait()
                got.append(clock() - t0)
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; {args.spelling}; "
          f"{args.rounds} rounds of {args.per_round} launches per delay")
    print("| host delay before each launch µs | launch + wait p10 µs | p50 | p90 | "
          "p50 more than with no delay |")
    print("|---:|---:|---:|---:|---:|")
    base = statistics.median(times[0])
    for delay, got in times.items():
        p = statistics.quantiles(got, n=10)
        print(f"| {delay} | {p[0] * 1e6:.1f} | {p[4] * 1e6:.1f} | {p[8] * 1e6:.1f} | "
              f"{(statistics.median(got) - base) * 1e6:+.1f} |")


if __name__ == "__main__":
    main()
