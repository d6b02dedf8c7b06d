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

import time

import torch

from . import backends
from . import noise as noise_mod
from ._torch import make_generator, resolve_device
from ._validation import check_applies, check_kappa, check_positive_int, check_rows, check_theta
from .backends import plan
from .eps import EpsRule, resolve_eps
from .models.base import UnnormalisedModel
from .options import FitOptions, NewtonSettings, get_options
from .result import FitResult

__all__ = ["fit", "FitResult", "METHODS"]

METHODS = ("cnce", "nce", "mle", "sm")
#: the methods that draw noise (``kappa``, ``noise``, ``noise_base`` apply to them only)
NOISE_METHODS = ("cnce", "nce")
BACKENDS = ("auto", "torch", "fused")


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
    progress: bool = False,
    backend: str = "auto",
    threads: int | None = None,
    options: FitOptions | None = None,
) -> FitResult:
    """Estimate ``model``'s parameters from ``x`` with CNCE, NCE, MLE or score matching.

    Args:
        model: an :class:`~cnce.models.UnnormalisedModel` (e.g. ``cnce.models.Gaussian()``).
        x: data ``(S, N, D)`` (S independent simulations) or ``(N, D)`` (one problem).
        method: ``"cnce"`` (Eqs. 8-9), ``"nce"``, ``"mle"`` or ``"sm"``; see ``model.methods``.
        kappa: noise samples per data point (CNCE) / noise-to-data ratio nu (NCE), an integer >= 1;
            default 10. MLE and SM take none (``ValueError``).
        eps: CNCE only: ``"auto"`` (the heuristic, :mod:`cnce.eps`), a number >= 0 (also a 0-d
            tensor or numpy scalar) or an ``(S,)`` tensor, settled by :func:`cnce.eps.resolve_eps`.
            Flip noise (Bernoulli) needs eps in [0, 1]. The other methods take no eps
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
            ``options.memory_budget_gb`` (default 1 GB). Results do not depend on it.
        progress: show a tqdm bar over chunks.
        backend: ``"auto"`` (default) uses the compiled CPU kernels (:mod:`cnce.backends.compiled`)
            where the model declares one for the method (``model.compiled_kernels``; float64 on
            the CPU, numba installed, and for CNCE the noise of Eq. 13) and the batched torch
            path (:mod:`cnce.backends.torch`) otherwise; ``"torch"`` forces the torch path (also
            what runs on a GPU); ``"fused"`` requires the kernels and raises ValueError saying
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

    Returns:
        :class:`FitResult` with ``theta``, ``eps``, ``loss``, ``n_iter``, ``converged``, ...
    """
    t0 = time.perf_counter()
    if not isinstance(model, UnnormalisedModel):
        raise ValueError(f"model must be a cnce.models.UnnormalisedModel instance; got {model!r}")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if method not in model.methods:
        raise ValueError(f"method {method!r} does not apply to {model!r}; its methods are {model.methods}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
    if options is None:
        options = get_options()
    elif not isinstance(options, FitOptions):
        raise ValueError(f"options must be a cnce.FitOptions; got {options!r}")
    if threads is not None:
        threads = check_positive_int(threads, "threads")
    else:
        threads = options.threads if options.threads is not None else torch.get_num_threads()
    if sim_batch != "auto":
        sim_batch = check_positive_int(sim_batch, "sim_batch")
    if max_iter is not None:
        max_iter = check_positive_int(max_iter, "max_iter", 0)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0:
        raise ValueError(f"tol must be a number >= 0; got {tol!r}")
    dev = resolve_device(device)
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got {dtype!r}")
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
        raise ValueError(f"noise must be a cnce.noise.ConditionalNoise; got {noise!r}")
    # eps settled here, once: the backends get an (S,) tensor or an EpsSearch
    if method == "cnce":
        prefix, margin = options.eps_prefix_settings(N, kappa)
        eps = resolve_eps(eps, noise, S=S, rule=eps_rule, prefix=prefix, margin=margin, dtype=dtype, device=dev)
    else:
        eps = None
    gen = make_generator(seed)
    if theta0 is None:
        theta0 = model.init_params(S, generator=gen)
    theta0 = check_theta(theta0, model.n_params, S, name="theta0", dtype=dtype, device=dev)
    if uses_noise:
        if noise_base is None:
            noise_base = noise_mod.default_base(noise, S, N, kappa, D, gen, threads=threads)
        noise_base = _check_base(noise_base, S, N, kappa, D).to(device=dev, dtype=dtype)
    form = plan.formulation(model, method, noise, x, options)
    mod = backends.choose(model, method, noise, dev, dtype, form, backend)
    kernel = model.compiled_kernels.get(method) if mod.NAME == "fused" else None
    problem = backends.FitProblem(
        model=model, x=x, method=method, kappa=kappa if uses_noise else None, eps=eps, noise=noise,
        noise_base=noise_base if uses_noise else None, theta0=theta0, device=dev, dtype=dtype,
        optimizer=plan.optimizer(model, method),
        newton=plan.newton_settings(model, method, N, options, mod.NAME, kernel, max_iter=max_iter, tol=tol, form=form),
        lbfgs=plan.lbfgs_settings(max_iter), threads=threads,
        chunk=S if mod.NAME == "fused" else plan.chunk_size(model, method, S, N, kappa if uses_noise else None,
                                                             dtype, options, sim_batch),
        formulation=form, feature_dtype=plan.feature_dtype(model, method, dtype, dev, options),
        projection_block_pairs=options.projection_block_pairs, progress=progress)
    res = mod.solve(problem)
    res.seconds = time.perf_counter() - t0
    return res if batched else res.unbatch()


def _check_base(base, S, N, kappa, D):
    if not isinstance(base, torch.Tensor) or base.ndim != 4:
        raise ValueError(f"noise_base must be a tensor of shape (S, N, kappa, D) = ({S}, >={N}, >={kappa}, {D}); got {getattr(base, 'shape', type(base).__name__)}")
    if base.shape[0] != S or base.shape[1] < N or base.shape[2] < kappa or base.shape[3] != D:
        raise ValueError(f"noise_base must have shape ({S}, >={N}, >={kappa}, {D}); got {tuple(base.shape)}")
    return base[:, :N, :kappa]
