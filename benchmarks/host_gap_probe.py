"""What a launch + wait costs when the host takes longer from one wait's return to the next
launch: a busy delay of a few microseconds before each launch of one `eager_launch.py`
spelling, the delays in alternating rounds.

On lavapipe the driver's own threads run each submission and go idle once it is done; a
submission arriving after they went idle waits for them to wake. Where that wake-up is
slow (a virtual machine's idle vCPU), a few microseconds more host work before a launch
cost several times that in launch + wait, which is how spellings whose host paths differ
by a few microseconds come apart by more on such a machine.

`--gaps` measures the gap itself instead, for every spelling in turn (ten launches each,
round after round): the time from the wait seeing the device done to the next launch's
`vkQueueSubmit`, found by timing Kompute's fence poll and submission (the two calls are
wrapped, which adds the same fraction of a microsecond to every spelling), beside the
time the `vkQueueSubmit` itself took (where the driver's threads are woken) and the
spelling's launch + wait.

    python3 benchmarks/host_gap_probe.py [--spelling "same range object"] [--rounds 60]
    python3 benchmarks/host_gap_probe.py --gaps [--rounds 100] [--awake] [--csv FILE [--append]]

`--awake` (root, Linux) keeps idle CPUs polling rather than halted meanwhile
(`timing.cpus_awake`): a diagnostic of what slow wake-ups add, never a measure. With
`--gaps`, `--csv FILE` writes each spelling's figures for docs/plots.py (`record.py`), the
`cpus` column saying whether idle CPUs halted or were kept awake; a run with `--awake
--append` adds the other half.
"""

from __future__ import annotations

import argparse
import statistics
import time

import record
from eager_launch import SPELLINGS, vksycl_case
from timing import cpus_awake, sequence_methods

import vksycl as sycl
from vksycl.runtime import engine

DELAYS_US = (0, 1, 2, 3, 4, 6, 8, 12)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spelling", default=SPELLINGS[0], choices=SPELLINGS)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--per-round", type=int, default=25)
    ap.add_argument("--gaps", action="store_true", help="each spelling's gap instead")
    ap.add_argument("--awake", action="store_true",
                    help="diagnostic: idle CPUs poll rather than halt (timing.cpus_awake)")
    record.add_arguments(ap)
    args = ap.parse_args()
    q = sycl.queue()
    with cpus_awake(args.awake):
        if args.gaps:
            rows = gaps(q, args.rounds)
            for row in rows:
                row["cpus"] = "awake" if args.awake else "halt"
            record.write(args, "Eager launch + wait per spelling on lavapipe, µs (medians), "
                         "idle CPUs halting or kept awake (--awake); the host's gap from one "
                         "wait's return to the next vkQueueSubmit, and that call's time",
                         rows, q.get_device())
        else:
            delays(q, args.spelling, args.rounds, args.per_round)


def delays(q: sycl.queue, spelling: str, rounds: int, per_round: int) -> None:
    launch, wait, _ = vksycl_case(q, spelling)
    for _ in range(200):
        launch()
        wait()
    clock = time.perf_counter
    times: dict[int, list[float]] = {d: [] for d in DELAYS_US}
    for _ in range(rounds):
        for delay, got in times.items():
            for _ in range(per_round):
                until = clock() + delay * 1e-6
                while clock() < until:
                    pass
                t0 = clock()
                launch()
                wait()
                got.append(clock() - t0)
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; {spelling}; "
          f"{rounds} rounds of {per_round} launches per delay")
    print("| host delay before each launch µs | launch + wait p10 µs | p50 | p90 | "
          "p50 more than with no delay |")
    print("|---:|---:|---:|---:|---:|")
    base = statistics.median(times[0])
    for delay, got in times.items():
        p = statistics.quantiles(got, n=10)
        print(f"| {delay} | {p[0] * 1e6:.1f} | {p[4] * 1e6:.1f} | {p[8] * 1e6:.1f} | "
              f"{(statistics.median(got) - base) * 1e6:+.1f} |")


def gaps(q: sycl.queue, rounds: int) -> list[dict[str, object]]:
    clock = time.perf_counter
    seen = {"done": 0.0, "submitted": 0.0, "in_submit": 0.0}
    sequence = engine.kp.Sequence
    poll, submit = sequence.finish_if_signaled, sequence.eval_async

    def timed_poll(seq):
        done = poll(seq)
        if done:
            seen["done"] = clock()
        return done

    def timed_submit(seq, *rest):
        seen["submitted"] = start = clock()
        try:
            return submit(seq, *rest)
        finally:
            seen["in_submit"] = clock() - start

    cases = [(s, *vksycl_case(q, s)[:2]) for s in SPELLINGS]
    found: dict[str, tuple[list[float], list[float], list[float]]] = {
        s: ([], [], []) for s in SPELLINGS}
    with sequence_methods(finish_if_signaled=timed_poll, eval_async=timed_submit):
        for _, launch, wait in cases:
            for _ in range(50):
                launch()
                wait()
        for _ in range(rounds):
            for s, launch, wait in cases:
                gap, in_submit, took = found[s]
                for _ in range(10):
                    done = seen["done"]
                    t0 = clock()
                    launch()
                    submitted = seen["submitted"]
                    wait()
                    took.append(clock() - t0)
                    gap.append(submitted - done)
                    in_submit.append(seen["in_submit"])
    best = min(statistics.median(took) for _, _, took in found.values())
    print(f"device: {q.get_device().get_info(sycl.info.device.name)}; {rounds} rounds of "
          "10 launches per spelling")
    print("| spelling | gap p50 µs | vkQueueSubmit p50 µs | launch + wait p50 µs | "
          "vs the best |")
    print("|---|---:|---:|---:|---:|")
    rows: list[dict[str, object]] = []
    for s, (gap, in_submit, took) in found.items():
        rows.append({"spelling": s, "cpus": None, "wait_us": statistics.median(took) * 1e6,
                     "gap_us": statistics.median(gap) * 1e6,
                     "submit_us": statistics.median(in_submit) * 1e6})
        print(f"| {s} | {rows[-1]['gap_us']:.1f} | {rows[-1]['submit_us']:.1f} | "
              f"{rows[-1]['wait_us']:.1f} | {statistics.median(took) / best:.2f}x |")
    return rows


if __name__ == "__main__":
    main()
