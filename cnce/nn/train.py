"""``cnce.nn.train``: minibatch training of an energy network with CNCE, NCE, DSM or SSM.

Randomness: the minibatch and the random numbers of step ``t`` come from a CPU generator
seeded with ``derive_seed(seed, "step", t)``, so a run is a function of ``seed`` alone, the
same numbers reach a CPU and a GPU, and a run resumed from a checkpoint continues exactly as
the uninterrupted run would have.

eps for a network (``eps="auto"``): the authors' heuristic (:func:`cnce.eps.choose_eps`, the
rule of the paper's synthetic experiments) is run on the *current* network, on the first
``eps_n`` points of a fixed random subset of the data with a fixed noise base, at step 0 and
then every ``eps_every`` steps, as the image model re-runs its rule at every meta-iteration.
The heuristic evaluates the loss at the parameters it is given; for a network, the parameters
of the moment are the ones that matter, and they change as training proceeds. Its cap is
lowered from the authors' 1000 data scales to :data:`EPS_CAP` data scales: at initialisation
a network is nearly flat, J stays near ``2 log 2`` for any moderate eps, and the authors' cap
would let eps grow to where the noise leaves the data's region altogether.
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .._torch import resolve_device
from .._validation import check_positive_int
from ..eps import AUTHORS_RULE, EpsRule, choose_eps, data_scale
from ..noise import ConditionalNoise, GaussianNoise, NCEGaussianNoise
from ..provenance import atomic_torch_save, derive_seed
from . import losses as L

__all__ = ["train", "TrainResult", "METHODS", "EPS_CAP", "DSM_SIGMA"]

METHODS = ("cnce", "nce", "dsm", "ssm")
#: the heuristic's cap for networks, in data scales (see the module docstring)
EPS_CAP = 4.0
#: DSM's default noise level, in data scales (a common choice on the 2-D toys)
DSM_SIGMA = 0.1


@dataclass
class TrainResult:
    """What :func:`train` returns (the network itself is trained in place).

    Attributes:
        method, kappa, steps, batch_size, lr, seed, device: the run's settings.
        history: per step ``step``, ``loss`` (the minibatch loss before the update) and
            ``eps`` (the noise scale used: CNCE's eps or DSM's sigma; NaN otherwise).
        val: per validation ``step`` and ``val_loss`` (the method's loss on the validation
            set with fixed random numbers; empty without ``x_val``).
        eps_runs: per run of the heuristic ``step``, ``eps`` and ``evaluations`` of J.
        log_normaliser: NCE's learned ``c`` (``None`` for other methods).
        seconds: wall time of the steps run by this call (a resumed run: since resuming).
        steps_run: steps run by this call.
        resumed_from: the step a checkpoint resumed from (0: a fresh start).
    """

    method: str
    kappa: int
    steps: int
    batch_size: int
    lr: float
    seed: int
    device: str
    history: dict = field(default_factory=lambda: {"step": [], "loss": [], "eps": []})
    val: dict = field(default_factory=lambda: {"step": [], "val_loss": []})
    eps_runs: dict = field(default_factory=lambda: {"step": [], "eps": [], "evaluations": []})
    log_normaliser: float | None = None
    seconds: float = 0.0
    steps_run: int = 0
    resumed_from: int = 0

    @property
    def eps(self) -> float:
        """The last noise scale used (NaN for NCE and SSM)."""
        return self.history["eps"][-1] if self.history["eps"] else float("nan")

    @property
    def seconds_per_step(self) -> float:
        return self.seconds / self.steps_run if self.steps_run else float("nan")

    def frame(self):
        """``history`` as a ``pandas.DataFrame`` (with ``val_loss`` where measured)."""
        import pandas as pd

        df = pd.DataFrame(self.history)
        if self.val["step"]:
            df = df.merge(pd.DataFrame(self.val), on="step", how="left")
        return df


def _check_data(x, name, dtype, device, D=None):
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be an array of shape (N, D); got {type(x).__name__}") from exc
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D) (one row per data point); got shape {tuple(x.shape)}")
    if x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(f"{name} must hold at least 2 points of dimension >= 1; got shape {tuple(x.shape)}")
    if D is not None and x.shape[1] != D:
        raise ValueError(f"{name} must have D = {D} columns like x; got shape {tuple(x.shape)}")
    if not torch.is_floating_point(x) and x.dtype != torch.bool and not x.dtype.is_signed and x.dtype != torch.uint8:
        raise ValueError(f"{name} must hold real numbers; got dtype {x.dtype}")
    x = x.to(dtype=dtype)
    bad = ~torch.isfinite(x)
    if bad.any():
        i = int(bad.any(-1).nonzero()[0])
        raise ValueError(f"{name} must be finite; row {i} is {x[i].tolist()} ({int(bad.any(-1).sum())} rows with NaN or inf)")
    return x.to(device)


def _check_positive(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return float(value)


def _step_generator(seed, *keys):
    g = torch.Generator()
    g.manual_seed(derive_seed(seed, *keys))
    return g


def _params_of(log_phi, params):
    if params is not None:
        params = list(params)
    elif isinstance(log_phi, torch.nn.Module):
        params = list(log_phi.parameters())
    else:
        raise ValueError("params must be given when log_phi is a plain callable (not a torch.nn.Module); got None")
    if not params:
        raise ValueError("log_phi has no parameters to train (params is empty)")
    return params


def train(log_phi, x, method: str = "cnce", *, kappa: int = 10, eps="auto", sigma="auto", steps: int = 1000,
          batch_size: int = 256, lr: float = 1e-3, seed: int = 0, device="auto", x_val=None, val_every: int | None = None,
          noise: ConditionalNoise | None = None, eps_every: int | None = None, eps_n: int = 1024,
          eps_rule: EpsRule | None = None, ssm_variance_reduction: bool = True, params=None,
          checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
          progress: bool = True) -> TrainResult:
    """Train an energy network ``log_phi: (B, D) -> (B,)`` in place on data ``x (N, D)``.

    Args:
        log_phi: a ``torch.nn.Module`` (or a callable with ``params``) returning unnormalised
            log-densities, one per row; its parameter dtype sets the computation's dtype.
        x: training data ``(N, D)``; standardise it first (CNCE's noise has one scale).
        method: ``"cnce"`` (Eqs. 8-9), ``"nce"`` (Gaussian noise fitted to ``x``, learned
            log-normaliser, ``nu = kappa``), ``"dsm"`` (denoising score matching) or ``"ssm"``
            (sliced score matching, variance-reduced unless ``ssm_variance_reduction=False``).
        kappa: random draws per data point (noise points, perturbations or projections).
        eps: CNCE's noise scale: ``"auto"`` (the heuristic on the current network, re-run every
            ``eps_every`` steps; module docstring) or a positive float (fixed).
        sigma: DSM's noise level: ``"auto"`` (:data:`DSM_SIGMA` times the data scale) or a
            positive float.
        steps, batch_size, lr: Adam steps, data points per step, learning rate.
        seed: seeds the minibatches and the random numbers (not the network's weights).
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"`` or a ``torch.device``;
            the network is moved there.
        x_val: optional validation data ``(M, D)``; its loss is recorded every ``val_every``
            steps (default: 10 times per run) with fixed random numbers.
        noise: CNCE's :class:`cnce.noise.ConditionalNoise` (default: Gaussian, Eq. 13).
        eps_every: steps between runs of the heuristic (default ``max(1, steps // 10)``).
        eps_n: data points on which the heuristic evaluates J.
        eps_rule: an :class:`cnce.eps.EpsRule` (default: the authors' rule with cap
            :data:`EPS_CAP` data scales).
        params: the parameters to train when ``log_phi`` is not a module.
        checkpoint: a file; written atomically every ``checkpoint_every`` steps (default: 10
            times per run) and at the end. If it exists, training resumes from it (the
            settings must match; ``steps`` may grow) and continues exactly as without the
            interruption.
        progress: show a progress bar (tqdm; ``TQDM_DISABLE=1`` turns it off).

    Returns:
        a :class:`TrainResult`.

    Raises:
        ValueError: naming the argument, for a wrong method, shape, NaN or inf data, a
            non-positive eps, sigma, lr, kappa, steps or batch size, or a network whose output
            is not ``(B,)``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    kappa = check_positive_int(kappa, "kappa")
    steps = check_positive_int(steps, "steps")
    batch_size = check_positive_int(batch_size, "batch_size")
    eps_n = check_positive_int(eps_n, "eps_n", 2)
    lr = _check_positive(lr, "lr")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int; got {seed!r}")
    if not (isinstance(eps, str) and eps == "auto"):
        eps = _check_positive(eps, "eps")
    if not (isinstance(sigma, str) and sigma == "auto"):
        sigma = _check_positive(sigma, "sigma")
    if noise is not None and not isinstance(noise, ConditionalNoise):
        raise ValueError(f"noise must be a cnce.noise.ConditionalNoise; got {type(noise).__name__}")
    if noise is not None and method != "cnce":
        raise ValueError(f"noise applies to method='cnce' only; got method={method!r}")
    eps_every = max(1, steps // 10) if eps_every is None else check_positive_int(eps_every, "eps_every")
    val_every = max(1, steps // 10) if val_every is None else check_positive_int(val_every, "val_every")
    checkpoint_every = (max(1, steps // 10) if checkpoint_every is None
                        else check_positive_int(checkpoint_every, "checkpoint_every"))
    if not callable(log_phi):
        raise ValueError(f"log_phi must be a torch.nn.Module or a callable (B, D) -> (B,); got {type(log_phi).__name__}")

    dev = resolve_device(device)
    if isinstance(log_phi, torch.nn.Module):
        log_phi.to(dev)
    params = _params_of(log_phi, params)
    dtype = params[0].dtype if params[0].is_floating_point() else torch.float32
    x = _check_data(x, "x", dtype, dev)
    N, D = x.shape
    if x_val is not None:
        x_val = _check_data(x_val, "x_val", dtype, dev, D)
    with torch.no_grad():
        L.evaluate(log_phi, x[:2])  # a wrong output shape fails here, naming log_phi
    noise = GaussianNoise() if noise is None else noise
    rule = dataclasses.replace(AUTHORS_RULE, cap=EPS_CAP) if eps_rule is None else eps_rule
    unit = float(data_scale(x.double()))

    extra = {}
    nce_noise = None
    if method == "nce":
        nce_noise = NCEGaussianNoise.fit(x.double().unsqueeze(0))
        nce_noise = NCEGaussianNoise(nce_noise.mean.to(dtype), nce_noise.cov.to(dtype))
        extra["log_normaliser"] = torch.zeros((), dtype=dtype, device=dev, requires_grad=True)
    opt = torch.optim.Adam(params + list(extra.values()), lr=lr)
    sig = DSM_SIGMA * unit if sigma == "auto" else sigma

    settings = dict(method=method, kappa=kappa, batch_size=batch_size, lr=lr, seed=seed, eps=eps, sigma=sig,
                    eps_every=eps_every, eps_n=eps_n, rule=dataclasses.asdict(rule), N=N, D=D,
                    noise=type(noise).__name__, ssm_vr=ssm_variance_reduction)
    res = TrainResult(method=method, kappa=kappa, steps=steps, batch_size=batch_size, lr=lr, seed=seed, device=str(dev))
    start = 0
    cur_eps = float("nan") if eps == "auto" else eps
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None and ckpt.exists():
        state = torch.load(ckpt, map_location=dev, weights_only=False)
        if state["settings"] != settings:
            diff = sorted(k for k in settings if state["settings"].get(k) != settings[k])
            raise ValueError(f"checkpoint {str(ckpt)!r} was written with other settings ({', '.join(diff)}); "
                             "delete it or pass the same settings")
        if isinstance(log_phi, torch.nn.Module):
            log_phi.load_state_dict(state["module"])
        else:
            with torch.no_grad():
                for p, q in zip(params, state["params"]):
                    p.copy_(q)
        with torch.no_grad():
            for k, v in state["extra"].items():
                extra[k].copy_(v)
        opt.load_state_dict(state["optimizer"])
        start, cur_eps = state["step"], state["cur_eps"]
        res.history, res.val, res.eps_runs = state["history"], state["val"], state["eps_runs"]
        res.resumed_from = start
        if start > steps:
            raise ValueError(f"steps must be >= the checkpoint's step {start}; got {steps}")

    # the heuristic's data and noise base: a fixed random subset, fixed numbers
    g0 = _step_generator(seed, "eps-data")
    sub = x[torch.randperm(N, generator=g0)[:min(eps_n, N)].to(dev)]
    eps_base = noise.draw_base(sub.unsqueeze(0).cpu(), kappa, g0)[0].to(dev)
    val_rand = None
    if x_val is not None:
        val_rand = torch.randn(x_val.shape[0], kappa, D, generator=_step_generator(seed, "val"), dtype=dtype).to(dev)

    def loss_on(xb, rand, e):
        if method == "cnce":
            return L.cnce_loss(log_phi, xb, rand, e, noise)
        if method == "nce":
            return L.nce_loss(log_phi, xb, rand, extra["log_normaliser"], nce_noise)
        if method == "dsm":
            return L.dsm_loss(log_phi, xb, rand, sig)
        return L.ssm_loss(log_phi, xb, rand, variance_reduction=ssm_variance_reduction)

    def run_heuristic(step):
        calls = [0]

        @torch.no_grad()
        def J_of_eps(e):
            calls[0] += 1
            return L.cnce_loss(log_phi, sub, eps_base, e.reshape(()).to(dtype), noise).reshape(1).double().cpu()

        e = choose_eps(J_of_eps, sub.double().unsqueeze(0).cpu(), rule)
        res.eps_runs["step"].append(step)
        res.eps_runs["eps"].append(float(e))
        res.eps_runs["evaluations"].append(calls[0])
        return float(e)

    def save(step):
        atomic_torch_save(dict(settings=settings, step=step, cur_eps=cur_eps,
                               module=log_phi.state_dict() if isinstance(log_phi, torch.nn.Module) else None,
                               params=[p.detach().cpu() for p in params],
                               extra={k: v.detach().cpu() for k, v in extra.items()},
                               optimizer=opt.state_dict(), history=res.history, val=res.val, eps_runs=res.eps_runs), ckpt)

    bar = None
    if progress and start < steps:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, initial=start, desc=f"cnce.nn.train {method}", unit="step", file=sys.stderr,
                   leave=False)
    t0 = time.perf_counter()
    try:
        for t in range(start, steps):
            if method == "cnce" and eps == "auto" and t % eps_every == 0:
                cur_eps = run_heuristic(t)
            if x_val is not None and t % val_every == 0:
                _record_val(res, t, loss_on, x_val, val_rand, cur_eps if method == "cnce" else None)
            g = _step_generator(seed, "step", t)
            idx = torch.randint(0, N, (batch_size,), generator=g)
            xb = x[idx.to(dev)]
            rand = (noise.draw_base(xb.unsqueeze(0).cpu(), kappa, g)[0] if method == "cnce"
                    else torch.randn(batch_size, kappa, D, generator=g, dtype=dtype))
            loss = loss_on(xb, rand.to(device=dev, dtype=dtype), cur_eps)
            if not torch.isfinite(loss):
                raise FloatingPointError(f"the {method} loss is {float(loss.detach())} at step {t}; lower lr (got {lr})")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            res.history["step"].append(t)
            res.history["loss"].append(float(loss.detach()))
            res.history["eps"].append(cur_eps if method == "cnce" else (sig if method == "dsm" else float("nan")))
            res.steps_run += 1
            if bar is not None:
                bar.update(1)
            if ckpt is not None and ((t + 1) % checkpoint_every == 0 or t + 1 == steps):
                save(t + 1)
        if x_val is not None and (not res.val["step"] or res.val["step"][-1] != steps):
            _record_val(res, steps, loss_on, x_val, val_rand, cur_eps if method == "cnce" else None)
    finally:
        if bar is not None:
            bar.close()
    res.seconds = time.perf_counter() - t0
    if "log_normaliser" in extra:
        res.log_normaliser = float(extra["log_normaliser"].detach())
    return res


def _record_val(res, step, loss_on, x_val, rand, e):
    """The loss on the validation set (no parameter update). Score-matching losses need
    gradients in x, so they are computed with autograd on and then discarded."""
    val = loss_on(x_val, rand, e)
    res.val["step"].append(step)
    res.val["val_loss"].append(float(val.detach()))
