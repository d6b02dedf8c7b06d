"""What the progress line of one fit costs, and that it changes no result: ``python -m benchmarks.fit_progress``.

Each case is fitted with ``progress=False`` (no line; the compiled backend calls
``cnce._fused.newton_all`` directly), ``progress=True`` (the default: the compiled kernels run in a
worker thread while a ticker waits for the 5 s delay) and ``progress=0`` (the line drawn once a
second from the start), alternating the order in each repeat; the median time of each, the
ratios to ``progress=False``, and whether the estimates are bitwise equal. Writes
``benchmarks/results/fit-progress.json``. A measurement, not a test.
"""
from __future__ import annotations

if __name__ == "__main__":
    from benchmarks.machine import single_thread_env

    single_thread_env()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import cnce  # noqa: E402

#: name -> (model, method, S, N, kappa, eps, backend)
CASES = {
    "gaussian-compiled-20x5000": (lambda: cnce.models.Gaussian(), "cnce", 20, 5000, 10, 0.5, "compiled"),
    "gaussian2-compiled-1x1e6": (lambda: cnce.models.Gaussian(dim=2), "cnce", 1, 1_000_000, 10, "auto", "compiled"),
    "ica-compiled-10x5000": (lambda: cnce.models.ICA(), "cnce", 10, 5000, 10, 0.5, "compiled"),
    "gaussian-torch-5x2000": (lambda: cnce.models.Gaussian(), "cnce", 5, 2000, 10, 0.5, "torch"),
}
SETTINGS = {"off": False, "default": True, "drawn": 0}
FIELDS = ("theta", "loss", "init_loss", "n_iter", "converged", "grad_norm", "eps")


def _equal(a, b) -> bool:
    return all(torch.equal(getattr(a, f).nan_to_num(), getattr(b, f).nan_to_num()) if getattr(a, f).is_floating_point()
               else torch.equal(getattr(a, f), getattr(b, f)) for f in FIELDS)


def run(case: str, repeats: int, threads: int) -> dict:
    make, method, S, N, kappa, eps, backend = CASES[case]
    model = make()
    x = torch.randn(S, N, model.dim, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    kw = dict(method=method, kappa=kappa, eps=eps, backend=backend, threads=threads)
    cnce.fit(model, x, progress=False, **kw)  # warm: kernels loaded
    times = {k: [] for k in SETTINGS}
    results = {}
    for r in range(repeats):
        order = list(SETTINGS) if r % 2 == 0 else list(SETTINGS)[::-1]
        for k in order:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                t0 = time.perf_counter()
                res = cnce.fit(model, x, progress=SETTINGS[k], **kw)
                times[k].append(time.perf_counter() - t0)
            results.setdefault(k, res)
            if k == "drawn" and r == 0:
                line = err.getvalue().replace("\r", "\n").strip().splitlines()
                results["line"] = line[-1] if line else ""
    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    return {"case": case, "backend": backend, "S": S, "N": N, "repeats": repeats, "median_s": med, "min_s": low,
            "ratio_to_off": {k: med[k] / med["off"] for k in SETTINGS},
            "min_ratio_to_off": {k: low[k] / low["off"] for k in SETTINGS},
            "bitwise_equal": {k: _equal(results["off"], results[k]) for k in ("default", "drawn")},
            "last_line": results.get("line", "")}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fit_progress", description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="JSON file (default benchmarks/results/fit-progress.json)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = []
    for case in args.cases:
        r = run(case, args.repeats, args.threads)
        print(json.dumps(r), flush=True)
        out.append(r)
    from benchmarks.machine import ROOT, machine_info

    path = args.out or ROOT / "benchmarks" / "results" / "fit-progress.json"
    with open(path, "w") as f:
        f.write(json.dumps({"suite": "fit_progress", "load_average": os.getloadavg(), "machine": machine_info(1),
                            "results": out}, indent=2) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
