"""Where an ICA fit's time goes, and two attempts at fewer passes.

For ICA with CNCE and NCE on the compiled kernels, one thread: time per simulation, Newton
iterations, and the passes over the data per simulation (``FitResult.info["passes"]``: loss
only, with gradient, with the Gauss-Newton matrix), next to the time of one pass of each kind
measured alone at the same size (with the default Gauss-Newton subsample), so that passes x
cost accounts for the default fit's time. Then the
same fits with (a) a Gauss-Newton subsample of 8192 instead of 32768 pairs
(``FitOptions.projection_hess_points``) and (b) warm-started subsampled stages (progressive
sampling, as the convex fits use), with the change in final loss against the default and the
log10 median squared error. Variants alternate in one process.

    .venv/bin/python -m benchmarks.ica_passes [S] [REPEATS] [OUT_JSON]
"""
import json
import statistics
import sys
import time

import numpy as np
import torch

import cnce
from cnce import _fused
from cnce.backends import plan
from cnce.models import ICA
from cnce.noise import NCEGaussianNoise, draw_base
from cnce.options import NewtonSettings
from benchmarks.machine import machine_info

S = int(sys.argv[1]) if len(sys.argv) > 1 else 20
REP = int(sys.argv[2]) if len(sys.argv) > 2 else 3
OUT = sys.argv[3] if len(sys.argv) > 3 else "benchmarks/results/ica-passes.json"
K = 10
model = ICA()
machine = machine_info(1)
VARIANTS = {"default": ({}, {}), "hess 8192": ({"projection_hess_points": 8192}, {}),
            "stages": ({}, {"progressive": True, "stage_tol": 1e-4})}


def pass_costs(kernel, x, base, prm, theta):
    """ms of one pass over one simulation's data: loss only, + gradient, + Gauss-Newton."""
    kind = _fused.KERNELS[kernel]
    X, XI, N = x.numpy()[0], base.numpy()[0], x.shape[1]
    T = np.ascontiguousarray(theta[0])
    P = T.shape[0]
    g, H = np.empty(P), np.empty((P, P))
    buf = _fused._buffers(K + 1 if kernel.startswith("nce") else K, model.dim, P, NewtonSettings.sim_block_pairs)
    zt = np.empty((model.dim, 0))
    hb = max(1, (N * K) // 32768)  # the default Gauss-Newton subsample's stride
    out = {}
    for label, want, stride in (("loss", False, 1), ("gradient", True, 1 << 62), ("gauss_newton", True, hb)):
        f = lambda: _fused._pass(kind, X, XI, prm[0], T, N, K, float(model.abs_projection_coef), want, stride, g, H, buf, zt)  # noqa: E731
        f()
        ts = []
        for _ in range(7):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        out[label] = statistics.median(ts) * 1e3
    return out


rows = []
for method in ("cnce", "nce"):
    for N in (1000, 5000):
        g = torch.Generator().manual_seed(1)
        th, th0 = model.random_params(S, g), model.init_params(S, g)
        x = model.sample(th, N, g)
        base = draw_base(model, S, N, K, g)
        kw = dict(theta0=th0, noise_base=base, threads=1, backend="compiled")
        if method == "cnce":
            kw["eps"] = cnce.fit(model, x, "cnce", K, max_iter=1, **kw).eps
        kernel = model.compiled_kernels[method]
        if method == "cnce":
            prm = kw["eps"].numpy()[:, None]
            theta_c = model.to_free(th0).numpy()
        else:
            pn = NCEGaussianNoise.fit(x)
            prm = _fused.nce_params(pn.mean.numpy(), pn.chol.numpy(), K)
            theta_c = np.concatenate([model.to_free(th0).numpy(), np.zeros((S, 1))], 1)
        costs = pass_costs(kernel, x, base, prm, theta_c)
        orig = plan.newton_settings
        res, ts = {}, {v: [] for v in VARIANTS}
        for rep in range(REP):
            for v, (opts, settings) in VARIANTS.items():
                # a variant of the Newton settings the plan settles (restored after the fit)
                plan.newton_settings = lambda *a, _s=settings, **k: orig(*a, **k).replace(**_s)  # noqa: E731
                try:
                    t0 = time.perf_counter()
                    res[v] = cnce.fit(model, x, method, K, options=cnce.FitOptions(**opts), **kw)
                    ts[v].append(time.perf_counter() - t0)
                finally:
                    plan.newton_settings = orig
        for v, r in res.items():
            p = r.info["passes"].median(0).values
            dl = r.loss - res["default"].loss
            row = dict(method=method, N=N, S=S, kappa=K, variant=v, ms_per_sim=statistics.median(ts[v]) / S * 1e3,
                       iterations_median=float(r.n_iter.double().median()), converged=int(r.converged.sum()),
                       passes_loss=float(p[0]), passes_gradient=float(p[1]), passes_gauss_newton=float(p[2]),
                       pass_ms=costs, accounted_ms=float(p[0] * costs["loss"] + p[1] * costs["gradient"] + p[2] * costs["gauss_newton"]),
                       loss_minus_default_max=float(dl.max()), loss_minus_default_min=float(dl.min()),
                       log10_median_err=float(torch.log10(r.error(model, th).median())))
            rows.append(row)
            print(json.dumps(row), flush=True)
json.dump(dict(machine=machine, repeats=REP, rows=rows), open(OUT, "w"), indent=1)
