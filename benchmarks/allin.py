"""What a user pays: ``cnce.fit(model, x, "cnce", kappa)`` with ``eps="auto"`` and no noise
base (noise, eps heuristic and fit), one thread, against the strong per-simulation scipy loop
doing the same, each side also split into its parts.

    .venv/bin/python -m benchmarks.allin [--allin-N 1000 5000 20000] [--repeats 3]

Writes ``benchmarks/results/allin<tag>.json``.
"""
from __future__ import annotations

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller's environment names a count
    from benchmarks.machine import single_thread_env

    single_thread_env()

import os  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import cnce  # noqa: E402
from benchmarks.common import add_problem_arguments, median, parser, run_suite, sigmoid, softplus  # noqa: E402
from cnce.models import ICA, Gaussian  # noqa: E402


def _gauss_features(u, iu, coef):
    return u[..., iu[0]] * u[..., iu[1]] * coef


def strong_loop(x, theta0, kappa, seed, ftol, problem):
    """The strong per-simulation scipy loop, all in: numpy noise, the authors' heuristic
    (:func:`cnce.eps.choose_eps` on a numpy J at theta0), then L-BFGS-B with the analytic
    gradient. ``problem(xs, xi, th0)`` returns ``J(eps)`` at ``th0`` and ``make_fg(eps)``,
    the loss-and-gradient function with everything that does not depend on the parameters
    built once. Returns estimates, eps and the seconds spent in each part."""
    from scipy.optimize import minimize

    from cnce.eps import choose_eps

    S, N, D = x.shape
    est, eps_out, t = [], [], dict(noise=0.0, heuristic=0.0, fit=0.0)
    for s in range(S):
        t0 = time.perf_counter()
        xi = np.random.default_rng([seed, s]).standard_normal((N, kappa, D))
        t1 = time.perf_counter()
        J, make_fg = problem(x[s], xi, theta0[s])
        e = float(choose_eps(lambda ee, J=J: torch.tensor([J(float(ee[0]))]), torch.from_numpy(x[s][None]))[0])
        t2 = time.perf_counter()
        r = minimize(make_fg(e), theta0[s], jac=True, method="L-BFGS-B",
                     options=dict(maxiter=15000, maxfun=30000, ftol=ftol, gtol=1e-10))
        t3 = time.perf_counter()
        est.append(r.x)
        eps_out.append(e)
        for part, dt_ in (("noise", t1 - t0), ("heuristic", t2 - t1), ("fit", t3 - t2)):
            t[part] += dt_
    return np.stack(est), np.array(eps_out), t


def gaussian_problem(xs, xi, th0):
    """For :func:`strong_loop`: the Gaussian's features of all pairs, built once per eps."""
    D = xs.shape[1]
    iu = np.triu_indices(D)
    coef = np.where(iu[0] == iu[1], -0.5, -1.0)
    Tx = _gauss_features(xs, iu, coef)
    mx = Tx @ th0

    def J(e):
        m = mx[:, None] - _gauss_features(xs[:, None, :] + e * xi, iu, coef) @ th0
        return 2.0 * softplus(-m).mean()

    def make_fg(e):
        F = (Tx[:, None, :] - _gauss_features(xs[:, None, :] + e * xi, iu, coef)).reshape(-1, len(coef))
        n = F.shape[0]

        def fg(th):
            m = F @ th
            return 2.0 / n * softplus(-m).sum(), -2.0 / n * (F.T @ sigmoid(-m))
        return fg

    return J, make_fg


def ica_problem(xs, xi, th0):
    """For :func:`strong_loop`: ICA from the projections ``B x`` (the loss of ``naive_ica``),
    the noise points built once per eps."""
    a = np.sqrt(2.0)
    N, kappa, D = xi.shape
    lx0 = -a * np.abs(xs @ th0.reshape(D, D).T).sum(1)

    def J(e):
        y = (xs[:, None, :] + e * xi).reshape(-1, D)
        m = lx0[:, None] - (-a * np.abs(y @ th0.reshape(D, D).T).sum(1)).reshape(N, kappa)
        return 2.0 * softplus(-m).mean()

    def make_fg(e):
        ys = (xs[:, None, :] + e * xi).reshape(-1, D)
        n = ys.shape[0]

        def fg(th):
            B = th.reshape(D, D)
            sx, sy = xs @ B.T, ys @ B.T
            m = (-a * np.abs(sx).sum(1))[:, None] - (-a * np.abs(sy).sum(1)).reshape(N, kappa)
            w = sigmoid(-m)
            gB = -a * ((np.sign(sx) * w.sum(1)[:, None]).T @ xs) + a * ((np.sign(sy) * w.reshape(-1, 1)).T @ ys)
            return 2.0 / n * softplus(-m).sum(), -2.0 / n * gB.ravel()
        return fg

    return J, make_fg


def bench_allin(args):
    """What a user pays: ``cnce.fit(model, x, "cnce", kappa)`` with ``eps="auto"`` and no
    noise base (noise, heuristic and fit), one thread, against the strong scipy loop doing
    the same per simulation; each side also split into its parts (cnce's noise draw, its
    heuristic on the compiled loss and the fit with the chosen eps, each timed alone). Side
    by side in one process, alternating, the load average recorded per case."""
    from cnce import _fused
    from cnce.eps import choose_eps
    from cnce._torch import make_generator
    from cnce.noise import GaussianNoise, default_base

    rows = []
    cases = [("gaussian", n) for n in args.allin_N] + [("ica", n) for n in args.allin_N_ica]
    for name, N in cases:
        model = Gaussian() if name == "gaussian" else ICA()
        kappa, S = args.kappa, (args.sims if name == "gaussian" else args.allin_sims_ica)
        g = torch.Generator().manual_seed(1)
        th = model.random_params(S, g)
        th0 = model.init_params(S, g)
        x = model.sample(th, N, g)
        S_loop = min(S, args.naive_sims)
        xn, t0n = x[:S_loop].numpy(), th0[:S_loop].numpy()
        loop_problem = gaussian_problem if name == "gaussian" else ica_problem
        D = x.shape[-1]
        cnce.fit(model, x[:2], "cnce", kappa, theta0=th0[:2], seed=5, threads=1)  # warm-up (compiled kernels)
        # the noise that cnce.fit(..., seed=5) draws itself, so that the parts time the same fit
        # (ICA's iterations depend on the noise)
        base = default_base(GaussianNoise(), S, N, kappa, D, make_generator(5), threads=1)
        kind, a = _fused.KERNELS[model.compiled_kernels["cnce"]], float(model.abs_projection_coef or 0.0)
        X, XI, P0 = x.numpy(), base.numpy(), model.to_free(th0).numpy()

        def J(e, sims):  # what the compiled backend's heuristic evaluates (cnce/backends/compiled.py)
            e_all = np.zeros(S)
            e_all[sims.numpy()] = e.numpy()
            return torch.from_numpy(_fused.loss_all(kind, X, XI, e_all[:, None], P0, a=a, threads=1, sims=sims.numpy()))

        def heuristic():
            return choose_eps(J, x, active_only=True)

        t_all, t_noise, t_heur, t_fit, t_loop, parts = [], [], [], [], [], []
        load = [list(os.getloadavg())]
        res = est = None
        for rep in range(args.repeats):
            t0 = time.perf_counter()
            res = cnce.fit(model, x, "cnce", kappa, theta0=th0, seed=5, threads=1)
            t_all.append(time.perf_counter() - t0)
            g5 = make_generator(5)
            t0 = time.perf_counter()
            base = default_base(GaussianNoise(), S, N, kappa, D, g5, threads=1)
            t_noise.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            heuristic()
            t_heur.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            cnce.fit(model, x, "cnce", kappa, eps=res.eps, theta0=th0, noise_base=base, threads=1)
            t_fit.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            est, _, part = strong_loop(xn, t0n, kappa, 7, args.allin_ftol, loop_problem)
            t_loop.append(time.perf_counter() - t0)
            parts.append(part)
            load.append(list(os.getloadavg()))
        e_c = model.error(res.theta, th)
        e_l = model.error(torch.as_tensor(est), th[:S_loop])
        per = lambda ts, n: median(ts) / n * 1e3  # noqa: E731 (ms per simulation)
        row = dict(model=name, N=N, kappa=kappa, S=S, S_loop=S_loop, threads=1,
                   cnce_all_in_ms=per(t_all, S), cnce_noise_ms=per(t_noise, S), cnce_heuristic_ms=per(t_heur, S),
                   cnce_fit_ms=per(t_fit, S),
                   loop_all_in_ms=per(t_loop, S_loop),
                   loop_noise_ms=median([p["noise"] for p in parts]) / S_loop * 1e3,
                   loop_heuristic_ms=median([p["heuristic"] for p in parts]) / S_loop * 1e3,
                   loop_fit_ms=median([p["fit"] for p in parts]) / S_loop * 1e3,
                   log10_median_err_cnce=float(torch.log10(e_c.median())),
                   log10_median_err_cnce_first=float(torch.log10(e_c[:S_loop].median())),
                   log10_median_err_loop=float(torch.log10(e_l.median())),
                   cnce_iters_median=float(res.n_iter.double().median()), cnce_converged=int(res.converged.sum()),
                   load_average=load, times=dict(cnce_all_in=t_all, loop_all_in=t_loop))
        row["speedup_all_in"] = row["loop_all_in_ms"] / row["cnce_all_in_ms"]
        row["speedup_fit_only"] = row["loop_fit_ms"] / row["cnce_fit_ms"]
        rows.append(row)
        print(f"all-in {name} N={N}: cnce.fit {row['cnce_all_in_ms']:.2f} ms/sim (noise {row['cnce_noise_ms']:.2f}, heuristic "
              f"{row['cnce_heuristic_ms']:.2f}, fit {row['cnce_fit_ms']:.2f}); strong scipy loop {row['loop_all_in_ms']:.2f} "
              f"(noise {row['loop_noise_ms']:.2f}, heuristic {row['loop_heuristic_ms']:.2f}, fit {row['loop_fit_ms']:.2f}): "
              f"{row['speedup_all_in']:.1f}x all in, {row['speedup_fit_only']:.1f}x fit only; log10 median error "
              f"{row['log10_median_err_cnce']:.2f} (loop {row['log10_median_err_loop']:.2f}); load {load[-1][0]:.1f}", flush=True)
    return rows


def main(argv=None):
    p = parser(__doc__)
    add_problem_arguments(p)
    p.add_argument("--allin-N", type=int, nargs="*", default=[1000, 5000, 20000])
    p.add_argument("--allin-N-ica", type=int, nargs="*", default=[5000])
    p.add_argument("--allin-sims-ica", type=int, default=20)
    p.add_argument("--allin-ftol", type=float, default=1e-14, help="L-BFGS-B ftol of the strong loop")
    run_suite("allin", bench_allin, p, argv)


if __name__ == "__main__":
    main()
