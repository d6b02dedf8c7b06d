"""The compiled CPU backend: the numba kernels of :mod:`cnce._fused`.

It serves a fit when the model declares a kernel for the method (``compiled_kernels``), the
data are float64 on the CPU, numba is installed, and -- for CNCE -- the noise is the
additive Gaussian noise of Eq. (13) that the kernels form on the fly. One compiled pass per
Newton step computes noise, features (or projections), loss, gradient and Gauss-Newton
matrix together; simulations run in parallel threads. The problem and the Newton method
are those of the torch backend (:mod:`cnce.optim`); estimates agree to the optimiser's
tolerance (the tests check both against :mod:`cnce.losses`).

This module knows kernels, not models: what it needs from a model are its declarations
(``compiled_kernels``, ``abs_projection_coef``) and its per-simulation constants
(:meth:`~cnce.models.UnnormalisedModel.sim_constants`).
"""
from __future__ import annotations

import time

import numpy as np
import torch

from .. import _fused
from .. import noise as noise_mod
from ..eps import choose_eps
from ..result import FitResult

__all__ = ["NAME", "supports", "solve", "KERNEL_SETTINGS"]

NAME = "fused"

#: noise points (the first ones, in data-point order) of NCE's importance-sampling start for c
NCE_C0_POINTS = 65536

# Newton settings per kernel (CNCE and NCE alike).
# Convex and smooth, many parameters (Gaussian): stop on the Newton decrement (or when no step
# can lower the loss any more); the "small relative decrease" rule is for the piecewise-smooth
# projection problems and would stop the last stage of progressive sampling early when it starts
# close to the optimum. The last stage forms its Gauss-Newton matrix from all pairs (a subsample
# makes the iterations converge only linearly there), once, where the first step lands (that
# step uses the previous stage's matrix); the earlier stages only give starting points (looser
# stage_tol); the last stage forms the matrix anew where that saves passes (a matrix pass ~ 2
# gradient passes). CNCE also lays its noise out once per simulation, in 128-pair blocks that
# stay in L1.
_CONVEX_MANY = dict(progressive=True, reuse_h=True, patience=1 << 30, hess_last=0, carry_h=True, stage_tol=1e-5,
                    h_cost=1.0)
# Convex, 1-2 parameters: the full matrix costs little.
_CONVEX_FEW = dict(progressive=True, reuse_h=True, hess_points=0, patience=1 << 30, stage_tol=1e-5)
# Absolute projections (ICA, non-convex): no progressive sampling (it would change the path),
# the same settings as the torch path.
_PROJECTION = dict(progressive=False, reuse_h=False)

#: kernel name -> (Newton settings, whether it is a projection kernel (needs ``options.projection``))
KERNEL_SETTINGS = {
    "gaussian": (dict(_CONVEX_MANY, noise_t=True, block_pairs=128), False),
    "nce_gaussian": (_CONVEX_MANY, False),
    "ring": (_CONVEX_FEW, False),
    "nce_ring": (_CONVEX_FEW, False),
    "lognormal": (_CONVEX_FEW, False),
    "ica": (_PROJECTION, True),
    "nce_ica": (_PROJECTION, True),
    "ica_mle": ({}, False),
}


def _kernel(problem):
    return problem.model.compiled_kernels.get(problem.method)


def supports(problem, options) -> str | None:
    """``None`` where a compiled kernel serves ``problem``, else the reason it does not."""
    name = _kernel(problem)
    if name is None:
        return (f"{problem.model!r} declares no compiled kernel for method {problem.method!r} "
                f"(its compiled_kernels: {dict(problem.model.compiled_kernels)})")
    if name not in _fused.KERNELS or name not in KERNEL_SETTINGS:
        return f"{problem.model!r} declares compiled kernel {name!r}, which does not exist (kernels: {sorted(_fused.KERNELS)})"
    if not _fused.available():
        return "numba is not installed"
    if problem.device.type != "cpu" or problem.dtype != torch.float64:
        return f"the compiled kernels need float64 on the CPU; got dtype={problem.dtype}, device={problem.device}"
    if KERNEL_SETTINGS[name][1] and not options.projection:
        return "options.projection is False (the kernel is the projection formulation)"
    if problem.method == "cnce" and type(problem.noise) is not noise_mod.GaussianNoise:
        return f"the CNCE kernels form the Gaussian noise of Eq. (13); got noise={type(problem.noise).__name__}"
    return None


def solve(problem, options) -> FitResult:
    t0 = time.perf_counter()
    name = _kernel(problem)
    model, x = problem.model, problem.x
    S, N, D = x.shape
    kind = _fused.KERNELS[name]
    X = x.contiguous().numpy()
    psi0 = model.to_free(problem.theta0)
    a = float(model.abs_projection_coef or 0.0)
    threads = problem.threads if problem.threads is not None else options.threads
    consts = model.sim_constants(S, x)
    consts = None if consts is None else consts.reshape(S, -1).numpy()
    if problem.method == "mle":  # ICA by the same L-BFGS as the torch path, per simulation
        out = _fused.ica_mle_all(X, psi0.numpy(), a=a, max_iter=problem.max_iter or 2000, threads=threads)
        res = _result(model, out, "mle", None)
    else:
        XI = problem.noise_base.numpy()  # a prefix view of the base is fine (strided access)
        settings = dict(KERNEL_SETTINGS[name][0])
        if KERNEL_SETTINGS[name][1]:
            settings.update(hess_points=options.projection_hess_points,
                            ftol=max(1e-12, options.stat_ftol * model.n_params / N))
        settings.setdefault("hess_points", options.hess_points)
        newton = dict(a=a, max_iter=problem.max_iter or 100, tol=problem.tol, threads=threads, **settings)
        if problem.method == "nce":
            res = _nce(problem, model, kind, X, XI, psi0, consts, a, threads, newton)
        else:
            res = _cnce(problem, model, kind, X, XI, psi0, consts, a, threads, newton, options)
    res.seconds = time.perf_counter() - t0
    res.info.update(chunks=1, sim_batch=S, device=str(problem.device), backend=NAME, kernel=name)
    return res


def _with(prm, consts):
    """The kernel's per-simulation constants: its own ``prm`` then the model's (ring: mu)."""
    prm = prm[:, None] if prm.ndim == 1 else prm
    return prm if consts is None else np.concatenate([prm, consts], 1)


def _cnce(problem, model, kind, X, XI, psi0, consts, a, threads, newton, options):
    """CNCE (Eq. 8) with the noise of Eq. (13): same problem, same Newton method as the torch path."""
    eps = problem.eps
    if isinstance(eps, str):  # "auto": the heuristic's J(eps) at the initial parameters, compiled too
        P0 = psi0.contiguous().numpy()

        def J_of_eps(e, sims, n_data=None):
            e_all = np.zeros(X.shape[0])
            e_all[sims.numpy()] = e.numpy()
            return torch.from_numpy(_fused.loss_all(kind, X, XI, _with(e_all, consts), P0, a=a, threads=threads,
                                                    sims=sims.numpy(), n_data=n_data))

        prefix, margin = options.eps_prefix_settings(X.shape[1], problem.kappa)
        eps = choose_eps(J_of_eps, problem.x, problem.eps_rule, active_only=True, prefix=prefix, margin=margin)
    out = _fused.newton_all(kind, X, XI, _with(eps.numpy(), consts), psi0.numpy(), **newton)
    return _result(model, out, "cnce", problem.kappa, eps=eps)


def _nce(problem, model, kind, X, XI, psi0, consts, a, threads, newton):
    """NCE: the noise points ``mu + L xi`` of the Gaussian matched to the data are formed on the
    fly from the base; ``c`` starts at the importance-sampling estimate of ``-log Z(theta0)``."""
    pn = noise_mod.NCEGaussianNoise.fit(problem.x)
    prm = _with(_fused.nce_params(pn.mean.numpy(), pn.chol.numpy(), problem.kappa), consts)
    c0 = _fused.nce_c0(kind, X, XI, prm, psi0.numpy(), a=a, n_points=NCE_C0_POINTS, threads=threads)
    psi0 = torch.cat([psi0, torch.from_numpy(c0).unsqueeze(-1)], -1)
    out = _fused.newton_all(kind, X, XI, prm, psi0.numpy(), **newton)
    return _result(model, out, "nce", problem.kappa, log_normaliser=True)


def _result(model, out, method, kappa, eps=None, log_normaliser=False):
    """A :class:`FitResult` from the kernels' output (``solve`` sets ``seconds`` and ``info``);
    with ``log_normaliser`` the last free parameter is NCE's ``c``."""
    t = torch.from_numpy
    psi = t(out["psi"])
    P = model.n_params
    nan = torch.full((psi.shape[0],), float("nan"), dtype=psi.dtype)
    # passes over the data per simulation: loss only / with gradient / with Gauss-Newton matrix
    info = {"passes": t(out["passes"])} if "passes" in out else {}
    return FitResult(info=info, theta=model.from_free(psi[:, :P]), eps=nan if eps is None else eps, loss=t(out["loss"]),
                     init_loss=t(out["init_loss"]), n_iter=t(out["n_iter"]), converged=t(out["converged"]),
                     grad_norm=t(out["grad_norm"]), method=method, kappa=kappa, seconds=0.0,
                     log_normaliser=psi[:, P].clone() if log_normaliser else None)
