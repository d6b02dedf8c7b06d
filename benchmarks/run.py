"""Benchmarks of cnce: batched estimation against a per-simulation scipy loop, loss and
gradient throughput against the machine's memory bandwidth, end-to-end experiment and book
timings, and the image model's seconds per meta-iteration.

    .venv/bin/python benchmarks/run.py --all            # everything (tens of minutes)
    .venv/bin/python benchmarks/run.py --allin            # what a user pays: noise, eps heuristic, fit
    .venv/bin/python benchmarks/run.py --batched --throughput
    .venv/bin/python benchmarks/run.py --e2e --scale paper

Every figure is a median over ``--repeats`` runs; ratios are measured side by side in the
same process (the 2-core machine this was written on is shared and noisy). Results go to
``benchmarks/results/<name>.json`` and ``benchmarks/results/<name>.md`` with the machine,
load average, torch version and thread count.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine_info, single_thread_env  # noqa: E402  (benchmarks/machine.py)

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller says otherwise (see --threads)
    single_thread_env()

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cnce  # noqa: E402
from cnce.models import ICA, Gaussian  # noqa: E402

from cnce.noise import draw_base  # noqa: E402
from cnce.options import NewtonSettings  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def median(xs):
    return float(statistics.median(xs))


def timed(fn, repeats):
    ts, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return ts, out


# --------------------------------------------------------------------------- problems
def problem(model, S, N, kappa, seed=0):
    g = torch.Generator().manual_seed(seed)
    th = model.random_params(S, g)
    th0 = model.init_params(S, g)
    x = model.sample(th, N, g)
    base = draw_base(model, S, N, kappa, g)
    return th, th0, x, base


def heuristic_case(model, S, N, kappa, seed=0):
    """Data, torch noise base and start of an eps-heuristic benchmark, with the numpy views the
    compiled loss takes: ``x, base, X, XI, P0, a``."""
    g = torch.Generator().manual_seed(seed)
    x = model.sample(model.random_params(S, g), N, generator=g)
    base = draw_base(model, S, N, kappa, generator=g)
    psi0 = model.to_free(model.init_params(S, g))
    return x, base, x.numpy(), base.numpy(), psi0.numpy(), float(model.abs_projection_coef or 0.0)


def _softplus(z):
    return np.logaddexp(0.0, z)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


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
            loss = 2.0 / n * _softplus(-m).sum()
            grad = -2.0 / n * (F.T @ _sigmoid(-m))
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
            loss = 2.0 / n * _softplus(-m).sum()
            w = _sigmoid(-m)
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


# --------------------------------------------------------------------------- all in
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
        return 2.0 * _softplus(-m).mean()

    def make_fg(e):
        F = (Tx[:, None, :] - _gauss_features(xs[:, None, :] + e * xi, iu, coef)).reshape(-1, len(coef))
        n = F.shape[0]

        def fg(th):
            m = F @ th
            return 2.0 / n * _softplus(-m).sum(), -2.0 / n * (F.T @ _sigmoid(-m))
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
        return 2.0 * _softplus(-m).mean()

    def make_fg(e):
        ys = (xs[:, None, :] + e * xi).reshape(-1, D)
        n = ys.shape[0]

        def fg(th):
            B = th.reshape(D, D)
            sx, sy = xs @ B.T, ys @ B.T
            m = (-a * np.abs(sx).sum(1))[:, None] - (-a * np.abs(sy).sum(1)).reshape(N, kappa)
            w = _sigmoid(-m)
            gB = -a * ((np.sign(sx) * w.sum(1)[:, None]).T @ xs) + a * ((np.sign(sy) * w.reshape(-1, 1)).T @ ys)
            return 2.0 / n * _softplus(-m).sum(), -2.0 / n * gB.ravel()
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


# --------------------------------------------------------------------------- throughput
def bandwidth(repeats, nbytes=1 << 29):
    """Streaming bandwidth: copy between two preallocated buffers (read + write) and a sum (read)."""
    a = torch.ones(nbytes // 4, dtype=torch.float32)
    b = torch.empty_like(a)
    b.copy_(a)
    tc, _ = timed(lambda: b.copy_(a), repeats)
    ts, _ = timed(lambda: a.sum(), repeats)
    return dict(copy_GBps=2 * nbytes / median(tc) / 1e9, read_GBps=nbytes / median(ts) / 1e9, buffer_MiB=nbytes >> 20)


def bench_throughput(args):
    """Loss + gradient (one pass, no Gauss-Newton matrix) of the fused CPU kernels, which stream
    the data and the noise base (float64) and form noise, features and margins on the fly; and
    of the torch path's problem classes for comparison (float32 features for the Gaussian,
    float64 points for ICA)."""
    from cnce import _fused
    from cnce.backends.projection import AbsProjectionLogistic
    from cnce.optim import LinearLogistic

    S, N, kappa = args.tp_sims, args.tp_N, args.tp_kappa
    chunk = args.tp_chunk
    bw = bandwidth(args.repeats)
    rows = []
    for name in ("gaussian", "ica"):
        model = Gaussian() if name == "gaussian" else ICA()
        kind = _fused.GAUSSIAN if name == "gaussian" else _fused.ICA
        a = 0.0 if name == "gaussian" else float(model.abs_projection_coef)
        for backend in ("fused", "torch"):
            times, bw_rep, bytes_in = [], [], 0
            for s0 in range(0, S, chunk):
                Sc = min(chunk, S - s0)
                th, th0, x, base = problem(model, Sc, N, kappa, seed=100 + s0)
                eps = 0.3
                if backend == "fused":
                    X, XI, T = x.numpy(), base.numpy(), th.numpy()
                    P = T.shape[1]
                    g, H = np.empty(P), np.empty((P, P))
                    prm = np.array([eps])
                    if name == "gaussian":
                        # as cnce.fit runs it: the noise steps eps xi laid out once per simulation
                        # (D x N kappa, like the torch path's features, formed once per noise draw)
                        # and streamed by every pass in blocks of 128 pairs
                        buf = _fused._buffers(kappa, model.dim, P, NewtonSettings.layout_block_pairs)
                        ZT = [np.empty((model.dim, N * kappa)) for _ in range(Sc)]
                        for s in range(Sc):
                            _fused._noise_t(XI[s], eps, N, ZT[s])
                    else:
                        buf = _fused._buffers(kappa, model.dim, P, NewtonSettings.sim_block_pairs)
                        ZT = [np.empty((model.dim, 0)) for _ in range(Sc)]

                    def run_once():
                        for s in range(Sc):
                            _fused._pass(kind, X[s], XI[s], prm, T[s], N, kappa, a, True, 1 << 62, g, H, buf, ZT[s])

                    run_once()  # compile
                    nbytes = X.nbytes + (sum(z.nbytes for z in ZT) if name == "gaussian" else XI.nbytes)
                else:
                    y = (x.unsqueeze(2) + eps * base).reshape(Sc, N * kappa, model.dim)
                    scale = 2.0 / (N * kappa)
                    if name == "gaussian":
                        Tx, _ = model.features_t(x, torch.float32)
                        Ty, _ = model.features_t(y, torch.float32)
                        P = model.n_params
                        Ft = Ty.view(Sc, P, N, kappa).neg_().add_(Tx.unsqueeze(-1)).view(Sc, P, N * kappa)
                        prob = LinearLogistic(None, None, scale, Ft=Ft, dtype=torch.float64)
                        nbytes = Ft.numel() * Ft.element_size()
                        del Tx, Ty
                    else:
                        prob = AbsProjectionLogistic(x, y, model.abs_projection_coef, scale, kappa=kappa)
                        nbytes = (prob.x.numel() + prob.y.numel()) * prob.y.element_size()
                    psi = th.clone()

                    def run_once():
                        prob.loss_grad(psi)
                # a bandwidth probe right before every timed evaluation: the ratio compares the
                # two under the same momentary load
                ts = []
                for _ in range(args.repeats):
                    bw_rep.append(bandwidth(1)["read_GBps"])
                    t0 = time.perf_counter()
                    run_once()
                    ts.append(time.perf_counter() - t0)
                times.append(ts)
                bytes_in += nbytes
                del x, base
            per_rep = [sum(t[i] for t in times) for i in range(args.repeats)]
            t = median(per_rep)
            pts = S * N * kappa
            gbps = bytes_in / t / 1e9
            row = dict(model=name, backend=backend, S=S, N=N, kappa=kappa, seconds=t, points_per_s=pts / t,
                       ns_per_pair=t / pts * 1e9, input_GB=bytes_in / 1e9, effective_GBps=gbps,
                       read_bound_GBps=median(bw_rep), copy_GBps=bw["copy_GBps"], read_bound_start_GBps=bw["read_GBps"],
                       ratio_to_bound=median(bw_rep) / gbps, sim_chunk=chunk,
                       inputs=("data + noise base, float64" if backend == "fused" else
                               ("features F (S, 15, n), float32" if name == "gaussian" else "data + noise points, float64")))
            rows.append(row)
            print(f"throughput {name} ({backend}): {pts/t/1e6:.1f} M pairs/s ({t/pts*1e9:.1f} ns/pair), {gbps:.2f} GB/s "
                  f"effective; read bound {median(bw_rep):.2f} GB/s; {row['ratio_to_bound']:.2f}x the bound", flush=True)
    return dict(bandwidth=bw, rows=rows)


# --------------------------------------------------------------------------- end to end
def study_seconds(results_dir, experiment):
    """Compute seconds per study of one experiment's runs in ``results_dir`` (from the studies'
    provenance files): where the time of ``cnce run`` went, e.g. the ICA share."""
    out = {}
    for prov in sorted(Path(results_dir).glob("*.provenance.json")):
        p = json.loads(prov.read_text())
        secs = sum(r.get("compute_seconds", 0.0) for r in p.get("runs", []) if r.get("experiment") == experiment)
        if secs:
            out[p["study"]] = round(secs, 3)
    return out


def bench_e2e(args):
    rows = []
    keep = args.e2e_results_dir is not None
    tmp = Path(args.e2e_results_dir) if keep else Path(tempfile.mkdtemp(prefix="cnce-bench-"))
    exps = args.experiments
    for exp in exps:
        out = tmp / args.scale
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "cnce", "run", exp, "--scale", args.scale, "--results-dir", str(out),
                            "--threads", str(args.threads), "--no-progress"], cwd=ROOT, capture_output=True, text=True)
        secs = time.perf_counter() - t0
        # `cnce run` prints one JSON summary per experiment (wall seconds, cells run): keep them
        parts = []
        for line in r.stdout.splitlines():
            if line.startswith("{") and '"wall_seconds"' in line:
                try:
                    parts.append(json.loads(line))
                except ValueError:
                    pass
        rows.append(dict(experiment=exp, scale=args.scale, seconds=secs, returncode=r.returncode, threads=args.threads,
                         load_average=list(os.getloadavg()), stderr_tail=r.stderr[-2000:] if r.returncode else "",
                         parts=[dict(experiment=q.get("experiment"), wall_seconds=q.get("wall_seconds"), cells_run=q.get("cells_run"),
                                     study_seconds=study_seconds(out, q.get("experiment")))
                                for q in parts]))
        print(f"e2e {exp} at {args.scale}: {secs:.1f} s (rc {r.returncode})"
              + "".join(f"; {q.get('experiment')} {q.get('wall_seconds', 0):.0f} s" for q in parts), flush=True)
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.book:
        for mode, extra in (("clean", ["--clean"]), ("cached", [])):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "cnce", "book", *extra], cwd=ROOT, capture_output=True, text=True)
            secs = time.perf_counter() - t0
            rows.append(dict(experiment=f"book ({mode})", scale="quick", seconds=secs, returncode=r.returncode,
                             load_average=list(os.getloadavg()), stderr_tail=r.stderr[-2000:] if r.returncode else ""))
            print(f"book build ({mode}): {secs:.1f} s (rc {r.returncode})", flush=True)
    return rows


# --------------------------------------------------------------------------- image model
def bench_images(args):
    from dataclasses import replace

    from cnce.images import get_config
    from cnce.images.train import train

    rows = []
    for name in args.image_configs:
        cfg = get_config(name)
        meta = args.image_meta
        if cfg.optimizer == "lbfgs" and not args.image_full_lbfgs:
            rows.append(_image_eval_estimate(cfg, args))
            continue
        cfg = replace(cfg, name=f"{cfg.name}-bench", meta_iters=(meta,) + tuple(cfg.meta_iters[1:]))
        with tempfile.TemporaryDirectory(prefix="cnce-img-") as out:
            t0 = time.perf_counter()
            state = train(cfg, out=out, layers=(1,), device="cpu", progress=False, threads=args.threads)
            total = time.perf_counter() - t0
        secs = state.get("seconds", {})
        per = secs.get(1, secs.get("1"))
        rows.append(dict(config=name, meta_iterations=meta, wall_s=total, seconds_record=per,
                         n_patches=cfg.n_patches[0], K1=cfg.K1, optimizer=cfg.optimizer, device="cpu"))
        print(f"image {name}: {meta} meta-iteration(s) of layer 1 in {total:.1f} s (recorded: {per})", flush=True)
    return rows


def _image_eval_estimate(cfg, args):
    """Full-batch configurations (``paper``: 200k patches, 10 L-BFGS line-search steps per
    meta-iteration) take far too long to train for a benchmark on this CPU: time one CNCE
    loss + gradient of layer 1 (the cost unit of a line-search step) on a subsample of the
    patches, scale it linearly to ``n_patches`` (the cost is linear in the number of
    points), and report seconds per evaluation and per meta-iteration for 11-20 evaluations
    (L-BFGS with a strong-Wolfe line search needs at least one per step plus the first)."""
    from cnce.images import ImageNetwork
    from cnce.losses import cnce_loss

    g = torch.Generator().manual_seed(0)
    net = ImageNetwork(**cfg.network_kwargs())
    n = min(args.image_sub, cfg.n_patches[0])
    u = torch.randn(n, cfg.D, generator=g)
    u = u / u.norm(dim=-1, keepdim=True) * (cfg.D - 1) ** 0.5
    y = u[:, None, :] + 0.5 * torch.randn(n, cfg.kappa, cfg.D, generator=g)
    params = net.layer_params(1)

    def one():
        net.zero_grad(set_to_none=True)
        total = 0.0
        for i in range(0, n, cfg.chunk):
            hx = net.layer_input(u[i:i + cfg.chunk], 1)
            hy = net.layer_input(y[i:i + cfg.chunk], 1)
            loss = cnce_loss(net.layer_log_phi(hx, 1), net.layer_log_phi(hy, 1)) * (hx.shape[0] / n)
            loss.backward()
            total += float(loss.detach())
        return total

    ts, _ = timed(one, args.repeats)
    per_eval = median(ts) * cfg.n_patches[0] / n
    row = dict(config=cfg.name, estimated=True, subsample=n, n_patches=cfg.n_patches[0], K1=cfg.K1, optimizer=cfg.optimizer,
               device="cpu", seconds_per_eval_measured=median(ts), seconds_per_eval_full=per_eval,
               meta_iteration_s_low=11 * per_eval, meta_iteration_s_high=20 * per_eval, meta_iterations=None, wall_s=None)
    print(f"image {cfg.name}: one layer-1 loss+gradient on {n} patches {median(ts):.2f} s -> {per_eval:.0f} s at "
          f"{cfg.n_patches[0]} patches; a meta-iteration (11-20 evaluations) {11*per_eval:.0f}-{20*per_eval:.0f} s (estimate)", flush=True)
    return row


# --------------------------------------------------------------------------- main
def write(name, payload):
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--all", action="store_true")
    p.add_argument("--batched", action="store_true", help="cnce.fit (S sims batched) vs a per-simulation scipy L-BFGS-B loop")
    p.add_argument("--throughput", action="store_true", help="loss + gradient throughput vs memory bandwidth")
    p.add_argument("--e2e", action="store_true", help="wall time of every synthetic experiment (and the book with --book)")
    p.add_argument("--images", action="store_true", help="image model: seconds per first-layer meta-iteration")
    p.add_argument("--allin", action="store_true", help="cnce.fit with eps='auto' and its own noise (all a user pays) vs the strong scipy loop doing the same")
    p.add_argument("--allin-N", type=int, nargs="*", default=[1000, 5000, 20000])
    p.add_argument("--allin-N-ica", type=int, nargs="*", default=[5000])
    p.add_argument("--allin-sims-ica", type=int, default=20)
    p.add_argument("--allin-ftol", type=float, default=1e-14, help="L-BFGS-B ftol of the strong loop")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sims", type=int, default=100)
    p.add_argument("--kappa", type=int, default=10)
    p.add_argument("--batched-N", type=int, nargs="*", default=[1000, 5000, 20000])
    p.add_argument("--batched-N-ica", type=int, nargs="*", default=[1000, 5000])
    p.add_argument("--naive-sims", type=int, default=20, help="simulations the scipy loop runs (time per simulation is compared; errors on these)")
    p.add_argument("--scipy-ftol", type=float, default=1e-12)
    p.add_argument("--threads2", action="store_true", help="also time cnce.fit with 2 threads (fused kernels)")
    p.add_argument("--tp-sims", type=int, default=100)
    p.add_argument("--tp-N", type=int, default=20000)
    p.add_argument("--tp-kappa", type=int, default=20)
    p.add_argument("--tp-chunk", type=int, default=10, help="simulations per chunk (memory)")
    p.add_argument("--scale", default="paper")
    p.add_argument("--experiments", nargs="*", default=["consistency", "nce", "ring", "supplementary", "eps"],
                   help="with --e2e: the experiments, timed one after the other into one results folder, empty at the start")
    p.add_argument("--e2e-results-dir", default=None, help="with --e2e: keep the results there (default: a temporary folder, removed)")
    p.add_argument("--book", action="store_true", help="with --e2e: time the quick-scale book build from clean and cached")
    p.add_argument("--image-configs", nargs="*", default=["quick", "paper"])
    p.add_argument("--image-meta", type=int, default=1)
    p.add_argument("--image-sub", type=int, default=10000, help="patches for the per-evaluation estimate of full-batch configs")
    p.add_argument("--image-full-lbfgs", action="store_true", help="train full-batch (L-BFGS) configs for real instead of estimating")
    p.add_argument("--tag", default="", help="suffix of the result files")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    info = machine_info(args.threads)
    print("machine:", json.dumps(info), flush=True)
    todo = [k for k in ("allin", "batched", "throughput", "e2e", "images") if getattr(args, k) or args.all]
    if not todo:
        p.error("choose at least one of --allin --batched --throughput --e2e --images (or --all)")
    for k in todo:
        t0 = time.perf_counter()
        res = globals()[f"bench_{k}"](args)
        info_end = dict(load_average_end=list(os.getloadavg()), seconds=time.perf_counter() - t0)
        write(k + args.tag, dict(machine=info, settings={kk: v for kk, v in vars(args).items()}, results=res, **info_end))


if __name__ == "__main__":
    main()
