"""Write ``benchmarks/results/SUMMARY.md``: every table of :func:`companion.speed.render`, with the
notes and the development comparisons.

    .venv/bin/python -m benchmarks.summarize
"""
from __future__ import annotations

import argparse

from companion.speed import RESULTS, render


def main(argv=None):
    argparse.ArgumentParser(prog="python -m benchmarks.summarize", description=__doc__).parse_args(argv)
    text = "\n".join(["# Benchmark results", "",
                      "Written by `python -m benchmarks.summarize` from the JSON files next to it "
                      "(the suites `python -m benchmarks.<suite>` make them). Medians over repeated runs; ratios side "
                      "by side in one process.",
                      "", render()])
    (RESULTS / "SUMMARY.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
