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

import threading
import time

import numpy as np
import torch

from .. import _fused
from .. import noise as noise_mod
from ..eps import EpsSearch
from ..result import FitResult, OptimResult
from . import plan
from ..precompile import announce_compile
from .progress import NO_PROGRESS as _NO_PROGRESS

__all__ = ["NAME", "supports", "solve"]

NAME = "compiled"  #: ``backend="fused"``, its earlier name, still works (a DeprecationWarning)


def supports(model, method, noise, device, dtype, form: str) -> str | None:
    """``None`` where a compiled kernel serves the fit, else the reason it does not."""
    name = model.compiled_kernels.get(method)
    if name is None:
        return (f"{model!r} declares no compiled kernel for method {method!r} "
                f"(its compiled_kernels: {dict(model.compiled_kernels)})")
    if name not in _fused.KERNELS:
        return f"{model!r} declares compiled kernel {name!r}, which does not exist (kernels: {sorted(_fused.KERNELS)})"
    if not _fused.available():
        return "numba is not installed"
    if device.type != "cpu" or dtype != torch.float64:
        return f"the compiled kernels need float64 on the CPU; got dtype={dtype}, device={device}"
    if method in ("cnce", "nce") and model.abs_projection_coef is not None and form != plan.PROJECTIONS:
        return f"the formulation is {form!r} (options.projection is False); the kernel is the projection formulation"
    if method == "cnce" and type(noise) is not noise_mod.GaussianNoise:
        return f"the CNCE kernels form the Gaussian noise of Eq. (13); got noise={type(noise).__name__}"
    return None


def solve(problem) -> FitResult:
    t0 = time.perf_counter()
    announce_compile()  # a word before numba's silent first compile (once per process)
    name = problem.model.compiled_kernels[problem.method]
    model, x = problem.model, problem.x
    S, N, D = x.shape
    kind = _fused.KERNELS[name]
    X = x.contiguous().numpy()
    psi0 = model.to_free(problem.theta0)
    a = float(model.abs_projection_coef or 0.0)
    consts = model.sim_constants(S, x)
    consts = None if consts is None else consts.reshape(S, -1).numpy()
    if problem.method == "mle":  # ICA by the same L-BFGS as the torch path, per simulation
        problem.progress.update(phase="lbfgs")
        out = _fused.ica_mle_all(X, psi0.numpy(), problem.lbfgs, a=a, threads=problem.threads)
        res = _result(model, out, "mle", None)
    else:
        # one layout for the kernels: a prefix of a longer base (strided) is copied, the size of
        # the noise this fit uses, rather than numba compiling every kernel a second time for
        # strided arrays (about 2.5 minutes per CPU on a cold cache, measured); same values
        XI = np.ascontiguousarray(problem.noise_base.numpy())
        if problem.method == "nce":
            res = _nce(problem, kind, X, XI, psi0, consts, a)
        else:
            res = _cnce(problem, kind, X, XI, psi0, consts, a)
    res.seconds = time.perf_counter() - t0
    res.info.update(chunks=1, sim_batch=S, device=str(problem.device), backend=NAME, kernel=name,
                    formulation=problem.formulation, newton=problem.newton, optimizer=problem.optimizer)
    return res


def _with(prm, consts):
    """The kernel's per-simulation constants: its own ``prm`` then the model's (ring: mu)."""
    prm = prm[:, None] if prm.ndim == 1 else prm
    return prm if consts is None else np.concatenate([prm, consts], 1)


def _cnce(problem, kind, X, XI, psi0, consts, a):
    """CNCE (Eq. 8) with the noise of Eq. (13): same problem, same Newton method as the torch path."""
    eps, threads = problem.eps, problem.threads
    if isinstance(eps, EpsSearch):  # the heuristic's J(eps) at the initial parameters, compiled too
        P0 = psi0.contiguous().numpy()

        def J_of_eps(e, sims, n_data=None):
            e_all = np.zeros(X.shape[0])
            e_all[sims.numpy()] = e.numpy()
            return torch.from_numpy(_fused.loss_all(kind, X, XI, _with(e_all, consts), P0, a=a, threads=threads,
                                                    block_pairs=problem.newton.sim_block_pairs, sims=sims.numpy(),
                                                    n_data=n_data))

        problem.progress.update(phase="eps")
        eps = eps.run(J_of_eps, problem.x, active_only=True)
    out = newton_all(kind, X, XI, _with(eps.numpy(), consts), psi0.numpy(), problem.newton, a=a, threads=threads,
                     progress=problem.progress)
    return _result(problem.model, out, "cnce", problem.kappa, eps=eps)


def _nce(problem, kind, X, XI, psi0, consts, a):
    """NCE: the noise points ``mu + L xi`` of the Gaussian matched to the data are formed on the
    fly from the base; ``c`` starts at the importance-sampling estimate of ``-log Z(theta0)``."""
    pn = noise_mod.NCEGaussianNoise.fit(problem.x)
    prm = _with(_fused.nce_params(pn.mean.numpy(), pn.chol.numpy(), problem.kappa), consts)
    c0 = _fused.nce_c0(kind, X, XI, prm, psi0.numpy(), a=a, n_points=noise_mod.NCE_C0_POINTS, threads=problem.threads,
                       block_pairs=problem.newton.sim_block_pairs)
    psi0 = torch.cat([psi0, torch.from_numpy(c0).unsqueeze(-1)], -1)
    out = newton_all(kind, X, XI, prm, psi0.numpy(), problem.newton, a=a, threads=problem.threads,
                     progress=problem.progress)
    return _result(problem.model, out, "nce", problem.kappa, log_normaliser=True)


def newton_all(kind, X, XI, prm, theta0, settings, *, threads: int, a=0.0, progress=None):
    """:func:`cnce._fused.newton_all`, with the kernels' output arrays visible to ``progress`` (a
    :class:`~cnce.backends.progress.FitProgress`) while they run: the kernels run in a worker
    thread (they release the GIL) and the progress line reads, once a second, the simulations
    finished (``n_iter`` is written at each simulation's end), how many converged, and the
    passes over the data (``passes``, which the kernels accumulate in place as they go).
    Reading changes nothing the kernels compute: the call into the kernels is the one
    ``_fused.newton_all`` makes, argument for argument (the results are bitwise equal,
    ``tests/test_fit_progress.py``). Without ``progress`` it is ``_fused.newton_all`` itself.

    (This copies the few lines of ``_fused.newton_all`` that set up the arrays rather than
    giving that function an ``out=`` argument: any edit of ``_fused.py`` invalidates numba's
    cache of every kernel, minutes of compiling per CPU kind. Fold it in at the next kernel change.)
    """
    if progress is None or progress is _NO_PROGRESS:
        return _fused.newton_all(kind, X, XI, prm, theta0, settings, threads=threads, a=a)
    st = settings
    _fused.check_compiled_rules(st)
    S, N, _ = X.shape
    K = XI.shape[2]
    theta = np.array(theta0, dtype=np.float64, order="C", copy=True)
    out = dict(init_loss=np.empty(S), loss=np.empty(S), grad_norm=np.empty(S), n_iter=np.full(S, -1, np.int64),
               converged=np.zeros(S, np.bool_), passes=np.zeros((S, 3)))
    stages = _fused.default_stages(N, K, st.progressive)
    hess_last = st.hess_points if st.hess_last is None else st.hess_last
    args = (_fused._newton_all, S, threads, kind, X, XI, _fused._prm(prm), theta, stages, float(a), int(st.hess_points),
            int(st.block_pairs), int(st.max_iter), float(st.tol), float(st.stage_tol), float(st.ftol),
            int(st.patience), float(st.c1), int(st.max_halvings), bool(st.reuse_h), out["init_loss"], out["loss"],
            out["grad_norm"], out["n_iter"], out["converged"], out["passes"], int(hess_last), bool(st.carry_h),
            bool(st.noise_t), float(st.h_cost), float(st.alpha_grow))

    def poll():
        done = out["n_iter"] >= 0
        return dict(done=int(done.sum()), converged=int(out["converged"][done].sum()),
                    passes=float(out["passes"].sum()))

    _in_thread(_fused._over_sims, args, progress, poll)
    out["psi"] = theta
    return out


def _in_thread(fn, args, progress, poll):
    """``fn(*args)`` in a worker thread while ``progress`` reads ``poll()``; the worker's
    exception is raised here. A KeyboardInterrupt reaches the caller at once (the kernels
    cannot be stopped: the daemon thread finishes the call in the background)."""
    failure = []

    def work():
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            failure.append(e)

    progress.update(phase="newton")
    progress.watch(poll)
    worker = threading.Thread(target=work, name="cnce-kernels-driver", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
    finally:
        progress.watch(None)
    if failure:
        raise failure[0]
    progress.update(**poll())


def _result(model, out, method, kappa, eps=None, log_normaliser=False):
    """A :class:`FitResult` from the kernels' arrays (``solve`` sets ``seconds`` and ``info``)."""
    return FitResult.from_optim(model, OptimResult.from_arrays(out), method=method, kappa=kappa, eps=eps,
                                log_normaliser=log_normaliser)
