"""`python -m fuzz --seed S --count N [--jobs J]`: a differential testing campaign of
vksycl's compiler; `python -m fuzz --replay FILE` checks a reproducer again."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100, help="programs to generate")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--only", type=int, nargs="*", help="just these program numbers")
    ap.add_argument("--kind", choices=["scalar", "atomic", "group", "reduction"],
                    help="only kernels of this kind")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "vksycl-fuzz"),
                    help="where reproducers of failures go")
    ap.add_argument("--reduce", type=int, default=600, metavar="TRIES",
                    help="candidates the reducer may try per failure (0: keep it whole)")
    ap.add_argument("--replay", metavar="FILE", help="check a reproducer again")
    ap.add_argument("--cache", metavar="DIR",
                    help="the kernel cache (default: VKSYCL_CACHE_DIR if set, else a "
                    "temporary one, so that the campaign's kernels do not fill the user's)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vksycl-fuzz-cache-") as scratch:
        os.environ["VKSYCL_CACHE_DIR"] = args.cache or os.environ.get("VKSYCL_CACHE_DIR") \
            or scratch
        return run(args)


def run(args: argparse.Namespace) -> int:
    from .campaign import campaign, replay

    if args.replay:
        return replay(args.replay)
    s = campaign(args.seed, args.count, args.jobs, args.out, args.reduce, args.kind,
                 args.only)
    rate = s.run / s.seconds if s.seconds else 0.0
    print(f"kernels run: {s.run} (and {s.invalid} generated programs not run: invalid)")
    print(f"work-items compared: {s.items - s.undefined} of {s.items} "
          f"({s.undefined} left undefined)")
    print(f"outcomes: {dict(sorted(s.kinds.items()))}")
    print(f"mismatches: {s.kinds['mismatch']}, errors: {s.kinds['error']}, "
          f"model errors: {s.kinds['model']}")
    print(f"time: {s.seconds:.1f} s ({rate:.1f} kernels/s, {args.jobs} job(s))")
    for f in s.findings:
        print(f"  #{f.index} {f.kind}: {f.detail[:160]}\n      {f.path}")
    return 1 if s.findings else 0


if __name__ == "__main__":
    sys.exit(main())
