"""Prototype (numpy, issue 17): does a model of the curvature at the kinks of ``|b . u|`` cut the
Newton iterations of ICA CNCE?

The Gauss-Newton matrix of the CNCE loss misses the second derivative of ``|s|``, ``2 delta(s)``,
at the kinks. Here it is estimated with a box kernel of half-width ``h`` times the median
``|b_r . x|`` (``delta(s) ~ [|s| < h'] / (2 h')``), giving for the pairs the term
``-(a w / h') ([|b_r.y| < h'] y y^T - [|b_r.x| < h'] x x^T)`` per row ``b_r``. It is indefinite,
so two forms are tried: only the data points' (positive) part, and the whole matrix with its
eigenvalues made positive. Damped Newton with the kernels' backtracking line search and
their statistical stop (relative decrease below ``1e-5 P / N`` three times); the Gauss-Newton
matrix from all pairs. Reported per variant: mean iterations, mean line-search trials, the
final loss against the compiled fit's (``cnce.fit``, same eps and noise) and the log10 median
squared error.

    python benchmarks/ica_kink_prototype.py [S] [N] [OUT_JSON]
"""
from run import machine_info  # benchmarks/run.py; first: it sets one BLAS/OpenMP thread before numpy loads

import json
import sys

import numpy as np
import torch
from scipy.special import expit

import cnce
from cnce.models import ICA
from cnce.noise import draw_base

S = int(sys.argv[1]) if len(sys.argv) > 1 else 6
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
OUT = sys.argv[3] if len(sys.argv) > 3 else "benchmarks/results/ica-kink-prototype.json"
K, D = 10, 4
a = float(np.sqrt(2.0))
model = ICA(dim=D)
g = torch.Generator().manual_seed(1)
th, th0 = model.random_params(S, g), model.init_params(S, g)
x = model.sample(th, N, g)
base = draw_base(model, S, N, K, g)
kw = dict(theta0=th0, noise_base=base, threads=1, backend="fused")
eps = cnce.fit(model, x, "cnce", K, max_iter=1, **kw).eps
ref = cnce.fit(model, x, "cnce", K, eps=eps, **kw)
FTOL = 1e-5 * model.n_params / N


def softplus(z):
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


def newton(X, Y, B0, h, mode, max_iter=200, patience=3):
    n = Y.shape[0]
    Xr = np.repeat(X, n // X.shape[0], 0)

    def f(B, want):
        sx, sy = Xr @ B.T, Y @ B.T
        m = a * (np.abs(sy).sum(1) - np.abs(sx).sum(1))
        loss = 2.0 / n * softplus(-m).sum()
        if not want:
            return loss
        w = expit(-m)
        F = a * (np.einsum("tr,tc->trc", np.sign(sy), Y) - np.einsum("tr,tc->trc", np.sign(sx), Xr)).reshape(n, -1)
        grad = -2.0 / n * (w @ F)
        H = 2.0 / n * (F * (w * (1 - w))[:, None]).T @ F
        if h > 0:
            for r in range(D):
                hr = h * np.median(np.abs(sx[:, r]))
                kx = (np.abs(sx[:, r]) < hr) * w
                blk = (a / hr) * ((Xr * kx[:, None]).T @ Xr)
                if mode == "abs":
                    ky = (np.abs(sy[:, r]) < hr) * w
                    blk = blk - (a / hr) * ((Y * ky[:, None]).T @ Y)
                H[r * D:(r + 1) * D, r * D:(r + 1) * D] += 2.0 / n * blk
            if mode == "abs":
                ev, V = np.linalg.eigh(H)
                H = (V * np.abs(ev)) @ V.T
        return loss, grad, H

    B = B0.copy()
    loss, grad, H = f(B, True)
    it = trials = quiet = 0
    alpha0 = 1.0
    while it < max_iter:
        d = -np.linalg.solve(H + 1e-12 * np.abs(np.diag(H)).mean() * np.eye(D * D), grad)
        slope = grad @ d
        if -0.5 * slope <= 1e-14 * max(1.0, abs(loss)):
            break
        al, ok = alpha0, False
        for _ in range(40):
            new = f(B + al * d.reshape(D, D), False)
            trials += 1
            if new <= loss + 1e-4 * al * slope:
                ok = True
                break
            curv = new - loss - slope * al
            nxt = 0.5 * al
            if curv > 0:
                nxt = min(max(-slope * al * al / (2 * curv), 0.1 * al), 0.5 * al)
            al = nxt
        it += 1
        if not ok:
            break
        B = B + al * d.reshape(D, D)
        new, grad, H = f(B, True)
        quiet = quiet + 1 if (loss - new) / max(1.0, abs(loss)) < FTOL else 0
        loss = new
        alpha0 = min(1.0, 2.0 * al)
        if quiet >= patience:
            break
    return B, loss, it, trials


X, XI, T0, E = x.numpy(), base.numpy(), model.to_free(th0).numpy(), eps.numpy()
rows = []
for label, h, mode in (("Gauss-Newton", 0.0, ""), ("kinks, data part, h = 0.05", 0.05, "data"),
                       ("kinks, data part, h = 0.2", 0.2, "data"), ("kinks, |eigenvalues|, h = 0.05", 0.05, "abs"),
                       ("kinks, |eigenvalues|, h = 0.2", 0.2, "abs")):
    its, trs, dl, errs = [], [], [], []
    for s in range(S):
        Y = (X[s][:, None, :] + E[s] * XI[s]).reshape(-1, D)
        B, loss, it, tr = newton(X[s], Y, T0[s].reshape(D, D), h, mode)
        its.append(it)
        trs.append(tr)
        dl.append(loss - float(ref.loss[s]))
        errs.append(float(model.error(model.from_free(torch.tensor(B.reshape(1, -1))), th[s:s + 1])))
    r = dict(variant=label, S=S, N=N, kappa=K, iterations_mean=float(np.mean(its)), iterations=its,
             line_search_trials_mean=float(np.mean(trs)), loss_minus_compiled_max=float(np.max(dl)),
             loss_minus_compiled_min=float(np.min(dl)), log10_median_err=float(np.log10(np.median(errs))))
    rows.append(r)
    print(json.dumps(r), flush=True)
json.dump(dict(machine=machine_info(1), compiled_iterations=ref.n_iter.tolist(),
               compiled_log10_median_err=float(torch.log10(ref.error(model, th).median())),
               rows=rows), open(OUT, "w"), indent=1)
