"""The benchmarks of cnce: one module per suite, run from the repository root as modules.

    .venv/bin/python -m benchmarks.allin        # what a user pays: noise, eps heuristic, fit
    .venv/bin/python -m benchmarks.batched      # batched cnce.fit against a per-simulation scipy loop
    .venv/bin/python -m benchmarks.throughput   # loss + gradient throughput against memory bandwidth
    .venv/bin/python -m benchmarks.e2e          # the synthetic experiments (and the book build) end to end
    .venv/bin/python -m benchmarks.images       # the image model's seconds per meta-iteration
    .venv/bin/python -m benchmarks              # all five, one after the other (tens of minutes)
    .venv/bin/python -m benchmarks.summarize    # benchmarks/results/SUMMARY.md from the results

Every figure is a median over ``--repeats`` runs; ratios are measured side by side in the same
process (the 2-core machine this was written on is shared and noisy). Each suite writes
``benchmarks/results/<suite><tag>.json`` with the machine, load average, torch version and
thread count (:mod:`benchmarks.common`, :mod:`benchmarks.machine`); :mod:`companion.speed` renders
them for the book. The other modules are one-off measurements, each with its command in its
docstring; ``against_commit`` compares ``cnce.fit`` with the package at another commit.
"""
