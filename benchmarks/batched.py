"""Batched ``cnce.fit`` (S simulations in one call) against what a user would write: a
per-simulation scipy L-BFGS-B loop with analytic gradients, on the same data, noise base,
initialisation and eps; also the torch backend and, with ``--threads2``, two kernel threads.

    .venv/bin/python -m benchmarks.batched [--threads2] [--batched-N 1000 5000] [--repeats 3]

Writes ``benchmarks/results/batched<tag>.json``.
"""
from __future__ import annotations

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller's environment names a count
    from benchmarks.machine import single_thread_env

    single_thread_env()

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import cnce  # noqa: E402
from benchmarks.common import add_problem_arguments, median, parser, problem, run_suite, sigmoid, softplus  # noqa: E402
from cnce.models import ICA, Gaussian  # noqa: E402


def naive_gaussian(x, base, eps, theta0, kappa, tol):
    """What a user would write: per simulation, features once, scipy L-BFGS-B with analytic gradient."""
    from scipy.optimize import minimize

    D = x.shape[-1]
    iu = np.triu_indices(D)
    coef = np.where(iu[0] == iu[1], -0.5, -1.0)
    out = []
    for s in range(x.shape[0]):
        xs = x[s]
        ys = xs[:, None, :] + eps[s] * base[s]  # (N, kappa, D)
        Tx = xs[:, iu[0]] * xs[:, iu[1]] * coef
        Ty = ys[..., iu[0]] * ys[..., iu[1]] * coef
        F = (Tx[:, None, :] - Ty).reshape(-1, len(coef))
        n = F.shape[0]

        def fg(th, F=F, n=n):
            m = F @ th
            loss = 2.0 / n * softplus(-m).sum()
            grad = -2.0 / n * (F.T @ sigmoid(-m))
            return loss, grad

        r = minimize(fg, theta0[s], jac=True, method="L-BFGS-B", options=dict(maxiter=15000, maxfun=30000, ftol=tol, gtol=1e-10))
        out.append(r.x)
    return np.stack(out)


def naive_ica(x, base, eps, theta0, kappa, tol):
    from scipy.optimize import minimize

    a = np.sqrt(2.0)
    D = x.shape[-1]
    out = []
    for s in range(x.shape[0]):
        xs = x[s]
        ys = (xs[:, None, :] + eps[s] * base[s]).reshape(-1, D)
        N = xs.shape[0]
        n = ys.shape[0]

        def fg(th, xs=xs, ys=ys, N=N, n=n):
            B = th.reshape(D, D)
            sx, sy = xs @ B.T, ys @ B.T
            m = (-a * np.abs(sx).sum(1))[:, None] - (-a * np.abs(sy).sum(1)).reshape(N, kappa)
            loss = 2.0 / n * softplus(-m).sum()
            w = sigmoid(-m)
            gB = -a * ((np.sign(sx) * w.sum(1)[:, None]).T @ xs) + a * ((np.sign(sy) * w.reshape(-1, 1)).T @ ys)
            return loss, -2.0 / n * gB.ravel()

        r = minimize(fg, theta0[s], jac=True, method="L-BFGS-B", options=dict(maxiter=15000, maxfun=30000, ftol=tol, gtol=1e-10))
        out.append(r.x)
    return np.stack(out)


def bench_batched(args):
    rows = []
    cases = [("gaussian", n) for n in args.batched_N] + [("ica", n) for n in args.batched_N_ica]
    for name, N in cases:
        model = Gaussian() if name == "gaussian" else ICA()
        kappa = args.kappa
        S = args.sims
        th, th0, x, base = problem(model, S, N, kappa, seed=1)
        # eps from the authors' heuristic, then both estimators use it
        eps = cnce.fit(model, x, "cnce", kappa, theta0=th0, noise_base=base, max_iter=1).eps
        S_naive = min(S, args.naive_sims)
        naive = naive_gaussian if name == "gaussian" else naive_ica
        xn, bn, en, t0n = x[:S_naive].numpy(), base[:S_naive].numpy(), eps[:S_naive].numpy(), th0[:S_naive].numpy()
        tb, tt, t2, tn, ta = [], [], [], [], []
        res = th_naive = None
        for rep in range(args.repeats):
            t0 = time.perf_counter()
            res = cnce.fit(model, x, "cnce", kappa, eps=eps, theta0=th0, noise_base=base, threads=1)
            tb.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            res_t = cnce.fit(model, x, "cnce", kappa, eps=eps, theta0=th0, noise_base=base, backend="torch")
            tt.append(time.perf_counter() - t0)
            if args.threads2:
                t0 = time.perf_counter()
                cnce.fit(model, x, "cnce", kappa, eps=eps, theta0=th0, noise_base=base, threads=2)
                t2.append(time.perf_counter() - t0)
            if rep == 0:  # with the eps heuristic: once (it is not what the ratio compares)
                t0 = time.perf_counter()
                cnce.fit(model, x, "cnce", kappa, eps="auto", theta0=th0, noise_base=base, threads=1)
                ta.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            th_naive = naive(xn, bn, en, t0n, kappa, args.scipy_ftol)
            tn.append(time.perf_counter() - t0)
        e_b = model.error(res.theta, th)
        e_t = model.error(res_t.theta, th)
        e_n = model.error(torch.as_tensor(th_naive), th[:S_naive])
        rel = ((e_b[:S_naive] - e_n) / e_n).numpy()
        rel_t = ((e_b - e_t) / e_t).numpy()
        per_b = median(tb) / S
        per_n = median(tn) / S_naive
        per_t = median(tt) / S
        row = dict(model=name, N=N, kappa=kappa, S=S, S_naive=S_naive, backend=res.info.get("backend"),
                   batched_s=median(tb), batched_auto_eps_s=median(ta), naive_s=median(tn), torch_s=median(tt),
                   batched_s_per_sim=per_b, naive_s_per_sim=per_n, torch_s_per_sim=per_t, speedup=per_n / per_b,
                   speedup_torch_backend=per_n / per_t,
                   batched_2threads_s_per_sim=(median(t2) / S) if t2 else None,
                   speedup_2threads=(per_n / (median(t2) / S)) if t2 else None,
                   batched_times=tb, naive_times=tn, torch_times=tt, batched_2threads_times=t2,
                   batched_iters_median=float(res.n_iter.double().median()), batched_converged=int(res.converged.sum()),
                   err_median_batched=float(e_b[:S_naive].median()), err_median_naive=float(e_n.median()),
                   err_rel_diff_median=float(np.median(np.abs(rel))), err_rel_diff_max=float(np.max(np.abs(rel))),
                   err_rel_diff_torch_median=float(np.median(np.abs(rel_t))), err_rel_diff_torch_max=float(np.max(np.abs(rel_t))),
                   err_batched_lower_or_equal=int((e_b[:S_naive] <= e_n * (1 + 1e-6)).sum()),
                   loss_batched_minus_naive_max=None)
        rows.append(row)
        print(f"batched {name} N={N} kappa={kappa}: cnce.fit {per_b*1e3:.2f} ms/sim ({row['backend']}, 1 thread), torch backend "
              f"{per_t*1e3:.2f}, scipy loop {per_n*1e3:.2f} ms/sim: speed-up {row['speedup']:.1f}x (torch backend "
              f"{row['speedup_torch_backend']:.1f}x{'' if not t2 else ', 2 threads %.1fx' % row['speedup_2threads']}); "
              f"error rel. diff median {row['err_rel_diff_median']:.2e}, max {row['err_rel_diff_max']:.2e}", flush=True)
    return rows


def main(argv=None):
    p = parser(__doc__)
    add_problem_arguments(p)
    p.add_argument("--batched-N", type=int, nargs="*", default=[1000, 5000, 20000])
    p.add_argument("--batched-N-ica", type=int, nargs="*", default=[1000, 5000])
    p.add_argument("--scipy-ftol", type=float, default=1e-12)
    p.add_argument("--threads2", action="store_true", help="also time cnce.fit with 2 threads (fused kernels)")
    run_suite("batched", bench_batched, p, argv)


if __name__ == "__main__":
    main()
