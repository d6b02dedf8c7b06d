"""One estimator for every synthetic experiment: :func:`fit`.

``fit(model, x, method=...)`` estimates ``S`` independent problems (one per simulation) in
one batched optimisation -- never a Python loop over simulations. Methods:

* ``"cnce"``: conditional noise-contrastive estimation, loss J_N of Eq. (8) with G of
  Eq. (9); conditional noise from Eq. (13) (continuous data) or Eq. (64) (binary data);
  eps by the authors' heuristic (:mod:`cnce.eps`) or given.
* ``"nce"``: noise-contrastive estimation (Gutmann & Hyvarinen 2012) with Gaussian noise
  matched to each simulation's data mean and covariance, ``nu = kappa`` noise points per
  data point and a learned log-normaliser ``c`` (returned as ``log_normaliser``).
* ``"mle"``: maximum likelihood (closed form where the model declares one; otherwise
  numerical, with the ring model's normaliser by quadrature).
* ``"sm"``: score matching (Hyvarinen 2005), by autograd.

:func:`fit` validates its arguments, builds one :class:`~cnce.backends.FitProblem` and hands
it to a backend (:mod:`cnce.backends`): the compiled CPU kernels where the model declares
one for the method, the batched torch path otherwise. It dispatches on what the model
declares (:class:`~cnce.models.UnnormalisedModel`), never on its class.
"""
from __future__ import annotations

import math
import time

import torch

from . import asymptotics, backends
from . import noise as noise_mod
from ._torch import make_generator, resolve_device
from ._validation import check_applies, check_kappa, check_positive_int, check_rows, check_theta
from .constraints import Boolean, Real, validate
from .backends import plan
from .backends.progress import NO_PROGRESS, FitProgress, settle
from .errors import InputError
from .eps import EpsRule, resolve_eps
from .models.base import UnnormalisedModel
from .options import FitOptions, NewtonSettings, get_options
from .result import FitResult

__all__ = ["fit", "FitResult", "METHODS"]

METHODS = ("cnce", "nce", "mle", "sm")
#: the methods that draw noise (``kappa``, ``noise``, ``noise_base`` apply to them only)
NOISE_METHODS = ("cnce", "nce")
BACKENDS = ("auto", "torch", "compiled")


def fit(
    model: UnnormalisedModel,
    x,
    method: str = "cnce",
    kappa: int | None = None,
    eps="auto",
    seed: int = 0,
    *,
    theta0=None,
    noise: noise_mod.ConditionalNoise | None = None,
    noise_base: torch.Tensor | None = None,
    eps_rule: EpsRule | None = None,
    max_iter: int | None = None,
    tol: float = NewtonSettings.tol,
    device="auto",
    dtype: torch.dtype = torch.float64,
    sim_batch: int | str = "auto",
    progress: bool | float = True,
    backend: str = "auto",
    threads: int | None = None,
    options: FitOptions | None = None,
    cov: bool = False,
) -> FitResult:
    """Estimate ``model``'s parameters from ``x`` with CNCE, NCE, MLE or score matching.

    Args:
        model: an :class:`~cnce.models.UnnormalisedModel` (e.g. ``cnce.models.Gaussian()``).
        x: data ``(S, N, D)`` (S independent simulations) or ``(N, D)`` (one problem).
        method: ``"cnce"`` (Eqs. 8-9), ``"nce"``, ``"mle"`` or ``"sm"``; see ``model.methods``.
        kappa: noise samples per data point (CNCE) / noise-to-data ratio nu (NCE), an integer >= 1;
            default 10. MLE and SM take none (``ValueError``).
        eps: CNCE only: ``"auto"`` (the heuristic, :mod:`cnce.eps`), a number > 0 (also a 0-d
            tensor or numpy scalar) or an ``(S,)`` tensor, settled by :func:`cnce.eps.resolve_eps`.
            eps = 0 is refused (the noise would equal the data). Flip noise (Bernoulli) needs eps
            in (0, 1]. A fixed eps far from the data's scale gives ``converged=False`` and a ``reason``
            (below the sampling noise of unbalanced noise, 1/sqrt(N kappa) of the scale for independent
            draws, or above 30 scales). The other methods take no eps
            (``ValueError`` for anything but ``"auto"``, the default).
        seed: seeds the initialisation and noise draws (a ``torch.Generator`` also works).
        theta0: initial parameters ``(S, P)`` or ``(P,)``; default ``model.init_params``.
        noise: a :class:`~cnce.noise.ConditionalNoise`; default Eq. (13) or Eq. (64). CNCE and
            NCE only, as ``noise_base`` (``ValueError`` for MLE and SM).
        noise_base: pre-drawn base ``(S, >=N, >=kappa, D)`` (see :func:`cnce.noise.draw_base`);
            its prefix is used, so one base serves all N and kappa. NCE maps the same
            standard-normal numbers through its Gaussian. Default: drawn from ``seed`` with
            :func:`cnce.noise.default_base` (one numpy stream per simulation, in parallel
            threads; the same numbers for any thread count).
        eps_rule: an :class:`~cnce.eps.EpsRule` for ``eps="auto"`` (``ValueError`` with a given
            eps); default the rule the noise declares (``noise.eps_rule``: the authors' rule, or
            theirs for flip noise). The result is clipped to the noise's largest admissible eps
            (``noise.eps_max``).
        max_iter: iteration cap (default: :class:`~cnce.options.NewtonSettings` ``max_iter``,
            100, for Newton; :class:`~cnce.options.LBFGSSettings` ``max_iter``, 2000, for L-BFGS).
        tol: Newton-decrement tolerance (relative to the loss).
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``.
        dtype: float64 by default.
        sim_batch: simulations per chunk; ``"auto"`` keeps each chunk's features under
            ``options.memory_budget_gb`` (default 1 GB). Results do not depend on it. Where one
            simulation's features alone exceed the budget, the torch path streams that
            simulation's rows in chunks within it (CNCE of a model linear in its parameters:
            :mod:`cnce.backends.streaming`; estimates equal to round-off, slower: the features
            are formed anew at each pass) and refuses the other fits, naming the estimate.
        progress: a progress line on stderr (:mod:`cnce.backends.progress`) for fits that run long:
            ``True`` (default) shows it once the fit has run 5 seconds (nothing for shorter fits),
            a number of seconds >= 0 after that long, ``False`` never. It shows the phase, the
            simulations done and converged, the torch path's Newton iteration or the compiled
            kernels' passes over the data, and the elapsed time; it changes no result.
        backend: ``"auto"`` (default) uses the compiled CPU kernels (:mod:`cnce.backends.compiled`)
            where the model declares one for the method (``model.compiled_kernels``; float64 on
            the CPU, numba installed, and for CNCE the noise of Eq. 13) and the batched torch
            path (:mod:`cnce.backends.torch`) otherwise; ``"torch"`` forces the torch path (also
            what runs on a GPU); ``"compiled"`` (earlier ``"fused"``, deprecated) requires the kernels and raises ValueError saying
            why where they do not apply. Both solve the same problem with the same Newton
            method, run as one :class:`~cnce.options.NewtonSettings` whose fields hold every
            threshold of both solvers (the compiled one has those of
            ``cnce.options.COMPILED_RULES`` built in at their defaults); on the same
            settings they take the same iterations to the same estimates
            (``tests/test_solvers.py``: equal iteration counts, estimates within 1e-10). The
            plan (:mod:`cnce.backends.plan`) gives them different settings in exactly these
            fields: the compiled solver's round-off acceptance (``roundoff_accept``, always on
            there, off in torch), the compiled kernels' progressive sampling and Gauss-Newton matrix reuse
            (``progressive``, ``stage_tol``, ``reuse_h``, ``carry_h``, ``h_cost``,
            ``hess_last``, ``noise_t``, ``patience``), and the torch path's float32 feature
            storage on GPUs (``options.feature_dtype``). Estimates of the plan's settings agree
            to the optimiser's tolerance (convex problems: about 5e-7 relative or better; ICA
            follows the same path but its loose, statistically motivated stopping rule can
            stop at slightly different points).
        threads: CPU threads of the fused kernels (simulations run in parallel) and of the
            noise draw; default ``options.threads``, else ``torch.get_num_threads()``.
        options: a :class:`~cnce.options.FitOptions` (feature dtype, Gauss-Newton subsample,
            projection, statistical stopping, block size, memory budget, threads); default
            the current defaults (:func:`cnce.option_context`, :func:`cnce.set_options`).
        cov: also estimate each simulation's large-sample covariance of ``theta`` (NCE: of
            ``theta`` and ``c``) by the plug-in sandwich ``A^-1 B A^-1 / N`` at the estimate,
            from the data and noise the fit used (:mod:`cnce.asymptotics`; maximum likelihood:
            the inverse observed information); sets ``cov``, ``stderr`` and ``cov_reason``
            (NaN and a reason where the asymptotics do not apply: no convergence, a Hessian
            that is not positive definite). Computed on the torch path whichever backend
            fitted. Off by default (it costs about as much as the fit).

    Returns:
        :class:`FitResult` with ``theta``, ``eps``, ``loss``, ``n_iter``, ``converged``, ...
    """
    t0 = time.perf_counter()
    if not isinstance(model, UnnormalisedModel):
        raise InputError(f"model must be a cnce.models.UnnormalisedModel instance; got {model!r}")
    if not isinstance(method, str) or method not in METHODS:
        raise InputError(f"method must be one of {METHODS}; got {method!r}")
    if method not in model.methods:
        raise InputError(f"method {method!r} does not apply to {model!r}; its methods are {model.methods}")
    backend = backends.backend_name(backend)  # "fused", the earlier name, with a DeprecationWarning
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise InputError(f"backend must be one of {BACKENDS}; got {backend!r}")
    if options is None:
        options = get_options()
    elif not isinstance(options, FitOptions):
        raise InputError(f"options must be a cnce.FitOptions; got {options!r}")
    if threads is not None:
        threads = check_positive_int(threads, "threads")
    else:
        threads = options.threads if options.threads is not None else torch.get_num_threads()
    if sim_batch != "auto":
        sim_batch = check_positive_int(sim_batch, "sim_batch")
    if max_iter is not None:
        max_iter = check_positive_int(max_iter, "max_iter", 0)
    validate(tol, Real(lo=0), "tol")
    validate(cov, Boolean(), "cov")
    delay = settle(progress)
    dev = resolve_device(device)
    if dtype not in (torch.float64, torch.float32):
        raise InputError(f"dtype must be torch.float64 or torch.float32; got {dtype!r}")
    x = check_rows(x, name="x", D=model.dim, dtype=dtype, device=dev, booleans=model.discrete, sims=True)
    batched = x.ndim == 3
    if not batched:
        x = x.unsqueeze(0)
    model.validate_data(x)
    S, N, D = x.shape
    uses_noise = method in NOISE_METHODS
    check_applies(method, {"eps": (eps, ("cnce",)), "eps_rule": (eps_rule, ("cnce",)), "kappa": (kappa, NOISE_METHODS),
                           "noise": (noise, NOISE_METHODS), "noise_base": (noise_base, NOISE_METHODS)},
                  defaults={"eps": "auto"})
    if uses_noise:
        kappa = check_kappa(10 if kappa is None else kappa)
    if noise is None:
        noise = noise_mod.default_noise(model)
    elif not isinstance(noise, noise_mod.ConditionalNoise):
        raise InputError(f"noise must be a cnce.noise.ConditionalNoise; got {noise!r}")
    # eps settled here, once: the backends get an (S,) tensor or an EpsSearch
    if method == "cnce":
        prefix, margin = options.eps_prefix_settings(N, kappa)
        eps = resolve_eps(eps, noise, S=S, rule=eps_rule, prefix=prefix, margin=margin, dtype=dtype, device=dev)
        if isinstance(eps, torch.Tensor) and bool((eps == 0).any()):
            raise InputError(f"eps must be > 0: at eps = 0 the conditional noise equals the data, J_N (Eq. 8) is the "
                             f"constant 2 log 2 and no parameter can be learned; got eps={_shown(eps)} (use "
                             "eps='auto' for the heuristic)")
    else:
        eps = None
    form = plan.formulation(model, method, noise, x, options)
    mod = backends.choose(model, method, noise, dev, dtype, form, backend)
    rows = None
    if mod.NAME == "torch":  # checked before the noise is drawn: a refusal costs nothing
        need = plan.simulation_bytes(model, method, N, kappa if uses_noise else None, dtype)
        rows = plan.row_chunk(model, method, N, kappa if uses_noise else None, dtype, options, form)
        if need > options.memory_budget_bytes and rows is None:
            fused_fits = backends.compiled.supports(model, method, noise, torch.device("cpu"), torch.float64, form) is None
            noise_gb = N * (kappa or 0) * D * 8 / 2**30
            alt = (f"backend='compiled' on the CPU (it forms no features: it holds the data and the drawn noise, about "
                   f"{noise_gb:.1f} GB)" if fused_fits else "fewer rows or a smaller kappa")
            raise InputError(
                f"this fit needs about {need / 2**30:.1f} GB for one simulation on the torch backend ({N} rows x "
                f"kappa={kappa}), above options.memory_budget_gb = {options.memory_budget_gb:g} (the torch backend streams "
                f"rows within the budget only for CNCE of a model linear in its parameters); use {alt}, or raise "
                f"the budget (cnce.option_context(memory_budget_gb=...)) if the memory is there")
    bar = NO_PROGRESS if delay is None else FitProgress(f"fit {model.name} {method} ({mod.NAME})", S, delay)
    with bar:
        gen = make_generator(seed)
        if theta0 is None:
            theta0 = model.init_params(S, generator=gen)
        theta0 = check_theta(theta0, model.n_params, S, name="theta0", dtype=dtype, device=dev)
        if uses_noise:
            if noise_base is None:
                bar.update(phase="noise")
                noise_base = noise_mod.default_base(noise, S, N, kappa, D, gen, threads=threads)
            noise_base = _check_base(noise_base, S, N, kappa, D).to(device=dev, dtype=dtype)
        kernel = model.compiled_kernels.get(method) if mod.NAME == "compiled" else None
        problem = backends.FitProblem(
            model=model, x=x, method=method, kappa=kappa if uses_noise else None, eps=eps, noise=noise,
            noise_base=noise_base if uses_noise else None, theta0=theta0, device=dev, dtype=dtype,
            optimizer=plan.optimizer(model, method),
            newton=plan.newton_settings(model, method, N, options, mod.NAME, kernel, max_iter=max_iter, tol=tol, form=form),
            lbfgs=plan.lbfgs_settings(max_iter), threads=threads,
            chunk=S if mod.NAME == "compiled" else plan.chunk_size(model, method, S, N, kappa if uses_noise else None,
                                                                 dtype, options, sim_batch),
            formulation=form, feature_dtype=plan.feature_dtype(model, method, dtype, dev, options),
            projection_block_pairs=options.projection_block_pairs, row_chunk=rows, progress=bar)
        res = mod.solve(problem)
        _diagnose(res, model, x, theta0, problem, noise)
        if cov:
            bar.update(phase="covariance")
            asymptotics.attach(res, problem)
    res.seconds = time.perf_counter() - t0
    return res if batched else res.unbatch()


#: the small-noise floor: the loss's signal grows as (eps/scale)^2 and the sampling noise of its
#: linear term as (eps/scale) b / sqrt(N), with ``b`` the noise's imbalance (the rms of each data
#: point's mean displacement over its kappa noise points, relative to the rms displacement:
#: 1/sqrt(kappa) for independent noise, 0 for antithetic pairs). Below ``SMALL_NOISE * b /
#: sqrt(N)`` of the data's scale the estimate's relative error is about 1 or more (it grows as
#: 1/eps; ``tests/test_fit_honest.py``); balanced noise has no such floor (the score-matching
#: limit of Supp. B)
SMALL_NOISE = 1.0
#: noise farther than this many data scales separates noise from data trivially: the loss
#: underflows towards 0 and the estimate is not determined by the data
LARGE_NOISE = 30.0
#: data whose scale lies outside this range is beyond what float64 features of log phi hold
SCALE_RANGE = (1e-50, 1e50)


def _shown(eps: torch.Tensor) -> str:
    return repr(eps[0].item()) if bool((eps == eps[0]).all()) else f"tensor of {eps.numel()} values"


def _diagnose(res, model, x: torch.Tensor, theta0: torch.Tensor, problem, noise) -> None:
    """Fill ``res.reason`` and clear ``converged`` where the fit cannot be trusted.

    A fit is never reported converged when it never left its start (an iterative solver with
    ``n_iter == 0`` or ``theta == theta0``), ends at an invalid parameter
    (``model.valid_params``), or (CNCE) ran with an eps outside what the data's scale allows
    (:data:`SMALL_NOISE`, :data:`LARGE_NOISE`). Every non-converged fit gets a reason; hints
    about the data (constant columns, an extreme scale) are added to it."""
    S, N, D = x.shape
    conv = res.converged.clone().to(torch.bool)
    reasons = [[] for _ in range(S)]
    iterative = problem.optimizer != "closed form"
    cap = (problem.newton.max_iter if problem.optimizer == "newton" else problem.lbfgs.max_iter) if iterative else None
    theta = res.theta
    n_iter = res.n_iter.reshape(-1)
    finite = ~torch.isnan(theta).any(-1)  # infinities are the model's to judge (LogNormal's C = -inf)
    if iterative:
        finite &= torch.isfinite(res.loss.reshape(-1))
    valid = model.valid_params(theta)
    stayed = (torch.zeros(S, dtype=torch.bool, device=theta.device) if not iterative
              else (n_iter == 0) | (theta == theta0.to(theta.dtype)).all(-1))
    x64 = x.to(torch.float64)
    std = x64.std(dim=1) if N > 1 else torch.zeros(S, D, dtype=torch.float64)  # (S, D)
    scale = std.pow(2).mean(-1).sqrt()
    ratio = imbalance = None
    if problem.method == "cnce" and isinstance(res.eps, torch.Tensor):
        # the noise's typical displacement and its balance, measured on the noise itself (any
        # conditional noise)
        m = min(N, 256)
        y = noise.apply(x[:, :m], problem.noise_base[:, :m].to(x.dtype), res.eps.to(x.dtype))
        d = (y - x[:, :m].unsqueeze(-2)).to(torch.float64)  # (S, m, kappa, D)
        rms = d.pow(2).sum(-1).mean(dim=(1, 2)).sqrt()
        ratio = (rms / scale / math.sqrt(D)).cpu()  # per coordinate, against the per-coordinate scale
        imbalance = (d.mean(2).pow(2).sum(-1).mean(1).sqrt() / rms.clamp_min(1e-300)).cpu()
    auto = not isinstance(problem.eps, torch.Tensor)
    fix = "the heuristic chose it: the data's scale is the likely cause" if auto else None
    finite, valid, stayed, conv_l = finite.tolist(), valid.tolist(), stayed.tolist(), conv.tolist()
    n_iter, scale_l, std_l = n_iter.tolist(), scale.tolist(), std.tolist()
    ratio = None if ratio is None else ratio.tolist()
    imbalance = None if imbalance is None else imbalance.tolist()
    eps_l = res.eps.tolist() if ratio is not None else None
    for s in range(S):
        why = reasons[s]
        if not finite[s]:
            why.append("the loss or the estimate is not finite (NaN or inf)")
        elif not valid[s]:
            why.append("the fit ended at an invalid parameter (model.valid_params is False: e.g. a precision "
                       "matrix that is not positive definite)")
        if stayed[s] and finite[s]:
            why.append("the fit never moved from its start theta0 (the loss's gradient vanished there)")
        if ratio is not None and scale_l[s] > 0 and math.isfinite(ratio[s]):
            r, floor = ratio[s], SMALL_NOISE * imbalance[s] / math.sqrt(N)
            if r < floor:
                why.append(f"eps={eps_l[s]:.3g} moves the noise by {r:.2g} of the data's scale, below the "
                           f"sampling noise of its unbalanced displacements, {floor:.2g} (1/sqrt(N kappa) for "
                           "independent noise): the estimate is dominated by sampling noise (its relative error "
                           "grows as 1/eps); " + (fix or "use a larger eps, antithetic noise, or eps='auto'"))
            elif r > LARGE_NOISE:
                why.append(f"eps={eps_l[s]:.3g} moves the noise by {r:.3g} data scales (more than "
                           f"{LARGE_NOISE:g}): noise and data separate trivially and the loss vanishes; "
                           + (fix or "use a smaller eps or eps='auto'"))
        if not why and not conv_l[s]:
            if cap is not None and n_iter[s] >= cap:
                why.append(f"the solver reached its iteration cap max_iter={cap} before meeting its tolerance")
            else:
                why.append("the solver stopped without meeting its tolerance (no step decreased the loss)")
        if why:
            const = [j for j in range(D) if std_l[s][j] == 0.0]
            if const:
                why.append(f"x is constant in column(s) {const} (zero variance): the parameters are not identified "
                           "by such data")
            sc = scale_l[s]
            if sc > 0 and not SCALE_RANGE[0] <= sc <= SCALE_RANGE[1]:
                why.append(f"x's scale (standard deviation {sc:.3g}) is far outside what float64 features of log phi "
                           "hold: rescale x (e.g. to unit variance) and the estimate with it")
    bad = torch.tensor([bool(w) for w in reasons], device=conv.device)
    res.converged = (conv & ~bad).to(res.converged.dtype)
    res.reason = ["; ".join(w) for w in reasons]


def _check_base(base, S, N, kappa, D):
    if not isinstance(base, torch.Tensor) or base.ndim != 4:
        raise InputError(f"noise_base must be a tensor of shape (S, N, kappa, D) = ({S}, >={N}, >={kappa}, {D}); got {getattr(base, 'shape', type(base).__name__)}")
    if base.shape[0] != S or base.shape[1] < N or base.shape[2] < kappa or base.shape[3] != D:
        raise InputError(f"noise_base must have shape ({S}, >={N}, >={kappa}, {D}); got {tuple(base.shape)}")
    return base[:, :N, :kappa]
