"""Can the torch Newton solver use the compiled solver's first trial step (``alpha_grow = 2``
instead of its own 4)? The torch path's problems, fitted with both values side by side in one
process (alternating which runs first): median seconds, Newton iterations in total, and how far
the estimates move (the committed results of these problems were computed with 4).

    nice -n 10 .venv/bin/python -m benchmarks.alpha_grow [--repeats 3] [--out benchmarks/results/alpha_grow.json]
"""
from __future__ import annotations

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller's environment names a count
    from benchmarks.machine import single_thread_env

    single_thread_env()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

import cnce  # noqa: E402
from benchmarks.machine import machine_info  # noqa: E402
from cnce.backends import plan  # noqa: E402

#: name -> (model, method, S, N, kappa): the problems the torch path solves in the committed
#: studies (counts, NCE without a kernel, score matching, the ring's numerical likelihood), and
#: two that the kernels serve on a CPU, forced onto the torch path
CASES = {
    "bernoulli-cnce (counts)": (lambda: cnce.models.Bernoulli(), "cnce", 20, 5000, 10),
    "lognormal-nce": (lambda: cnce.models.LogNormal(), "nce", 20, 5000, 10),
    "gaussian-sm": (lambda: cnce.models.Gaussian(), "sm", 20, 5000, None),
    "ring-sm": (lambda: cnce.models.Ring(dim=5, mu=7.0), "sm", 20, 5000, None),
    "ring-mle": (lambda: cnce.models.Ring(dim=5, mu=7.0), "mle", 20, 5000, None),
    "gaussian-cnce (torch)": (lambda: cnce.models.Gaussian(), "cnce", 10, 2000, 10),
    "ica-cnce (torch)": (lambda: cnce.models.ICA(), "cnce", 10, 2000, 10),
}


def fit_with(grow, model, x, method, kappa, th0):
    orig = plan.newton_settings
    plan.newton_settings = lambda *a, **k: orig(*a, **k).replace(alpha_grow=grow)
    try:
        kw = dict(kappa=kappa) if kappa is not None else {}
        return cnce.fit(model, x, method, theta0=th0, seed=3, backend="torch", threads=1, **kw)
    finally:
        plan.newton_settings = orig


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cases", nargs="*", default=list(CASES))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for name in args.cases:
        make, method, S, N, kappa = CASES[name]
        model = make()
        g = torch.Generator().manual_seed(0)
        x = model.sample(model.random_params(S, generator=g), N, generator=g)
        th0 = model.init_params(S, generator=g)
        res, ts = {}, {4.0: [], 2.0: []}
        for i in range(args.repeats):
            for grow in (4.0, 2.0) if i % 2 == 0 else (2.0, 4.0):
                t0 = time.perf_counter()
                res[grow] = fit_with(grow, model, x, method, kappa, th0)
                ts[grow].append(time.perf_counter() - t0)
        a, b = res[4.0], res[2.0]
        row = dict(case=name, S=S, N=N, kappa=kappa, torch_s=statistics.median(ts[4.0]),
                   fused_grow_s=statistics.median(ts[2.0]), iterations_torch=int(a.n_iter.sum()),
                   iterations_fused_grow=int(b.n_iter.sum()), converged=[int(a.converged.sum()), int(b.converged.sum())],
                   theta_bitwise_equal=bool(torch.equal(a.theta, b.theta)),
                   theta_max_rel=float(((a.theta - b.theta).abs() / a.theta.abs().clamp_min(1e-12)).max()))
        row["ratio"] = row["fused_grow_s"] / row["torch_s"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = dict(machine=machine_info(1), repeats=args.repeats, rows=rows,
               note="alpha_grow 4 (the torch path's) against 2 (the compiled kernels'), same problems, one process")
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
