"""``python -m benchmarks [SUITE ...]``: the suites one after the other (default: all five), each
at its defaults and writing its own result file."""
from __future__ import annotations

from benchmarks.machine import single_thread_env

single_thread_env()  # this module only ever runs as a command: before numpy and torch load

import argparse  # noqa: E402
import importlib  # noqa: E402

SUITES = ("allin", "batched", "throughput", "e2e", "images")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("suites", nargs="*", metavar="SUITE", help=f"any of {', '.join(SUITES)} (default: all)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--tag", default="", help="suffix of the result files")
    args = p.parse_args(argv)
    unknown = [s for s in args.suites if s not in SUITES]
    if unknown:
        p.error(f"unknown suite(s) {', '.join(unknown)}; choose from {', '.join(SUITES)}")
    for name in args.suites or SUITES:
        importlib.import_module(f"benchmarks.{name}").main(
            ["--threads", str(args.threads), "--repeats", str(args.repeats), "--tag", args.tag])


if __name__ == "__main__":
    main()
