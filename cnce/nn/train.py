"""``cnce.nn.train``: minibatch training of an energy network with CNCE, NCE, DSM or SSM.

The trainer is a plain loop over the loss objects of :mod:`cnce.nn.objectives`; for a seed
``seed`` it runs exactly this (and so gives bitwise the same network as this loop)::

    loss = cnce.nn.make_loss(method, kappa=kappa, seed=derive_seed(seed, "noise"), data=x, ...)
    opt = torch.optim.Adam(list(net.parameters()) + list(loss.parameters()), lr=lr)
    batches = torch.Generator().manual_seed(derive_seed(seed, "batch"))
    for t in range(steps):
        xb = x[torch.randint(0, N, (batch_size,), generator=batches)]
        opt.zero_grad(); loss(net, xb).backward(); opt.step()

with ``derive_seed`` from :mod:`cnce.provenance` (``data=x`` is used by NCE only), and a
:class:`cnce.nn.HealthCheck` after every step (``health=True``), which draws no random
numbers. The loss's random numbers are drawn on the device of the data (a GPU run draws
other numbers than a CPU run of the same seed); the checkpoint holds the network, the
optimiser, the loss (its generator and what it chose) and the batch generator, so that a
resumed run continues exactly as the uninterrupted one. Small networks train on one CPU
thread (``threads``): at this size torch's thread pool costs more than it saves.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .._torch import resolve_device
from .._validation import check_positive_int, check_rows
from ..constraints import Boolean, validate
from ..noise import ConditionalNoise
from ..jobs import Job
from ..provenance import derive_seed, generator
from . import losses as L
from ._checks import check_seed, positive_number
from ..errors import TrainingError
from .health import HealthCheck
from .objectives import DSM_SIGMA, EPS_CAP, EnergyLoss, make_loss

__all__ = ["train", "TrainResult", "METHODS", "EPS_CAP", "DSM_SIGMA", "CHECKPOINT_FORMAT", "SMALL_NETWORK"]

METHODS = ("cnce", "nce", "dsm", "ssm")
#: the tag every checkpoint of :func:`train` carries
CHECKPOINT_FORMAT = "cnce.nn.train/2"
#: networks of at most this many parameters train on one CPU thread by default (``threads=None``)
SMALL_NETWORK = 100_000


@dataclass
class TrainResult:
    """What :func:`train` returns (the network itself is trained in place).

    Attributes:
        method, kappa, steps, batch_size, lr, seed, device: the run's settings.
        history: per step ``step``, ``loss`` (the minibatch loss before the update) and
            ``eps`` (the noise scale used: CNCE's eps or DSM's sigma; NaN otherwise).
        val: per validation ``step`` (after that many updates) and ``val_loss`` (the
            method's loss on the validation set with fixed random numbers; empty without ``x_val``).
        eps_runs: per run of the eps heuristic ``step``, ``eps`` and ``evaluations`` of J.
        log_normaliser: NCE's learned ``c`` (``None`` for other methods).
        seconds: wall time of the steps run by this call (a resumed run: since resuming).
        steps_run: steps run by this call.
        resumed_from: the step a checkpoint resumed from (0: a fresh start).
        loss: the loss object (its ``state_dict`` continues the run).
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
    loss: EnergyLoss | None = None

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


def _diverged(exc: TrainingError, ckpt, saved):
    """Re-raise ``exc`` saying which checkpoint (the last good state) is kept."""
    where = (f"; the checkpoint {str(ckpt)!r} keeps step {saved}, the last good state" if ckpt is not None and saved
             else "; no checkpoint was written before it" if ckpt is not None else "")
    err = TrainingError(str(exc) + where)
    err.cause, err.step, err.last_good = (getattr(exc, "cause", "diverged"), getattr(exc, "step", None),
                                          saved if ckpt is not None else getattr(exc, "last_good", None))
    raise err from None


def _params_of(log_phi, params):
    if params is not None:
        params = list(params)
    elif isinstance(log_phi, torch.nn.Module):
        params = list(log_phi.parameters())
    else:
        raise ValueError("params must be given when log_phi is a plain callable (not a torch.nn.Module); got None")
    if not params:
        raise ValueError("log_phi has no parameters to train (params is empty)")
    if not any(p.requires_grad for p in params):
        raise ValueError(f"log_phi has no trainable parameter: all {len(params)} parameters have requires_grad=False")
    return [p for p in params if p.requires_grad]


def fingerprint(x: torch.Tensor) -> str:
    """SHA-256 of the data's values (float64, row-major) and shape: the checkpoint's record of ``x``."""
    a = x.detach().double().cpu().contiguous().numpy()
    return hashlib.sha256(str(a.shape).encode() + a.tobytes()).hexdigest()


def _probe(log_phi, x, method, energy):
    """Evaluate the network on a few rows of ``x`` before any step: errors name what is wrong."""
    N, D = x.shape
    xb = x[: min(8, N)].detach().clone().requires_grad_(True)
    f = (lambda u: -log_phi(u)) if energy else log_phi
    try:
        out = L.evaluate(f, xb)
    except ValueError:
        raise
    except Exception as exc:  # the network's own error (a matmul of the wrong size, ...)
        if D > N:
            raise ValueError(f"x has shape {tuple(x.shape)}: more columns (D = {D}) than rows (N = {N}), and log_phi "
                             f"fails on its rows ({type(exc).__name__}: {exc}); x must be (N, D), one row per data "
                             f"point: did you mean x.T?") from exc
        raise ValueError(f"log_phi fails on a batch of x of shape {tuple(xb.shape)}: {type(exc).__name__}: {exc}") from exc
    if not out.requires_grad:
        raise ValueError("log_phi's output depends neither on its input nor on any trainable parameter "
                         "(does the network detach its input or run under torch.no_grad?)")
    (s,) = torch.autograd.grad(out.sum(), xb, allow_unused=True, create_graph=method in ("dsm", "ssm"))
    if s is None or not bool((s != 0).any()):
        raise ValueError("log_phi does not depend on its input: its gradient in x is zero on the first rows of x "
                         "(does the network detach its input?)")
    if method in ("dsm", "ssm"):
        v = torch.ones_like(s)
        h = None
        if s.requires_grad:
            (h,) = torch.autograd.grad((s * v).sum(), xb, allow_unused=True)
        if h is None or not bool((h != 0).any()):
            raise ValueError(f"log_phi is linear in its input (its score does not change with x), so "
                             f"{'denoising' if method == 'dsm' else 'sliced'} score matching (method={method!r}) "
                             "cannot train it: its loss does not identify the density; use a network that is "
                             "not linear in x")


def _check_checkpoint_path(ckpt: Path):
    if ckpt.exists():
        if ckpt.is_dir():
            raise ValueError(f"checkpoint must be a file path; got the directory {str(ckpt)!r}")
        if not os.access(ckpt, os.W_OK):
            raise ValueError(f"checkpoint {str(ckpt)!r} exists but cannot be written")
        return
    try:
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=ckpt.parent, prefix=f".{ckpt.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ValueError(f"checkpoint {str(ckpt)!r} cannot be written ({exc.strerror or exc}); "
                         "pass a path in a writable directory") from exc


def _read_checkpoint(ckpt: Path, dev):
    try:
        state = torch.load(ckpt, map_location=dev, weights_only=True)
    except Exception as exc:
        raise ValueError(f"checkpoint {str(ckpt)!r} is not a checkpoint of cnce.nn.train (it cannot be read: "
                         f"{type(exc).__name__}); pass another checkpoint path (this file is left as it is)") from exc
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {str(ckpt)!r} is not a checkpoint of cnce.nn.train (format "
                         f"{state.get('format') if isinstance(state, dict) else type(state).__name__!r}, expected "
                         f"{CHECKPOINT_FORMAT!r}); pass another checkpoint path (this file is left as it is)")
    return state


def _same_architecture(saved: dict, now: dict, ckpt):
    if saved.keys() != now.keys() or any(tuple(saved[k].shape) != tuple(now[k].shape) for k in now):
        diff = sorted(k for k in set(saved) | set(now)
                      if k not in saved or k not in now or tuple(saved[k].shape) != tuple(now[k].shape))
        raise ValueError(f"log_phi has another architecture than the network in checkpoint {str(ckpt)!r} "
                         f"(parameters that differ in name or shape: {', '.join(diff[:5])}); pass the same network to "
                         "resume it, or another checkpoint path to train this one (the checkpoint is kept)")


def train(log_phi, x, method="cnce", *, kappa: int = 10, eps=None, sigma=None, steps: int = 1000,
          batch_size: int = 256, lr: float = 1e-3, seed: int = 0, device="auto", x_val=None, val_every: int | None = None,
          noise: ConditionalNoise | None = None, eps_every: int | None = None, eps_rule=None,
          ssm_variance_reduction: bool | None = None, params=None, energy: bool = False,
          checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
          progress: bool = True, threads: int | None = None, health: bool = True) -> TrainResult:
    """Train an energy network ``log_phi: (B, D) -> (B,)`` in place on data ``x (N, D)``.

    Args:
        log_phi: a ``torch.nn.Module`` (or a callable with ``params``) returning unnormalised
            log-densities, one per row (energies with ``energy=True``); its parameter dtype
            sets the computation's dtype.
        x: training data ``(N, D)``, real numbers (integers are cast to the network's dtype;
            booleans and complex numbers are refused); standardise it first (CNCE's noise has
            one scale).
        method: ``"cnce"`` (Eqs. 8-9), ``"nce"`` (Gaussian noise fitted to ``x``, learned
            log-normaliser, ``nu = kappa``), ``"dsm"`` (denoising score matching), ``"ssm"``
            (sliced score matching), or a loss object of :mod:`cnce.nn.objectives` (then
            ``kappa`` and the method's options are the object's).
        kappa: random draws per data point (noise points, perturbations or projections).
        eps: CNCE only: ``"auto"`` (default: :data:`cnce.nn.objectives.DEFAULT_SCHEDULE`), a
            schedule name (:data:`cnce.nn.objectives.SCHEDULES`) or a positive number (fixed).
        sigma: DSM only: ``"auto"`` (default: :data:`DSM_SIGMA` data scales) or a positive number.
        steps, batch_size, lr: Adam steps, data points per step, learning rate.
        seed: an integer >= 0; seeds the minibatches and the random numbers (not the
            network's weights).
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"`` or a ``torch.device``;
            the network is moved there.
        x_val: optional validation data ``(M, D)``; its loss is recorded every ``val_every``
            steps (default: 10 times per run) with fixed random numbers.
        noise, eps_every, eps_rule: CNCE only: the conditional noise, the calls between runs
            of the heuristic, the :class:`cnce.eps.EpsRule`.
        ssm_variance_reduction: SSM only (default ``True``).
        params: the parameters to train when ``log_phi`` is not a module.
        energy: ``log_phi`` returns energies ``E = -log phi``.
        checkpoint: a file; checked to be writable before the first step, written atomically
            every ``checkpoint_every`` steps (default: 10 times per run) and at the end. If
            it exists, training resumes from it: the settings, the network's architecture
            and the data (a fingerprint) must match; ``steps`` may grow (for every method),
            and the run continues exactly as without the interruption. The file is a
            :class:`cnce.jobs.Job`'s checkpoint: while this call runs, ``.<name>.lock`` beside it
            refuses a second training into the same file (:class:`~cnce.jobs.JobLockedError`).
        progress: show a progress bar (tqdm, :meth:`cnce.jobs.Job.bar`).
        threads: torch's CPU threads while training (restored afterwards); ``None`` (default):
            one thread for a network of at most :data:`SMALL_NETWORK` parameters on the CPU
            (for small networks, torch's thread pool costs more than it saves: see
            ``python -m benchmarks.nn_threads``), torch's setting otherwise.
        health: run a :class:`cnce.nn.HealthCheck` after every step (collapse to a constant
            network, blow-up, a stalled NCE normaliser).

    Returns:
        a :class:`TrainResult`.

    Raises:
        ValueError: naming the argument, before any step: a wrong method, an argument that
            does not apply to the method, bad shapes (including transposed data), NaN or
            inf, boolean or complex data, a non-positive eps, sigma, lr, kappa, steps or
            batch size, a negative seed, a network whose output is not ``(B,)``, that does
            not depend on its input or on a trainable parameter, or that is linear in ``x``
            under a score-matching method, a checkpoint path that cannot be written, a file
            that is not a checkpoint of ours, or one written for another network or data.
        cnce.errors.TrainingError: when the loss becomes NaN or infinite, blows up, the network
            collapses to a constant, or NCE's normaliser stalls (the message names the likely
            cause and ``lr``); with ``checkpoint``, the file keeps the last step at which
            nothing was suspect (``err.last_good``), not the diverged state.
    """
    if isinstance(method, EnergyLoss):
        loss = method
        for k, v in dict(eps=eps, sigma=sigma, noise=noise, eps_every=eps_every, eps_rule=eps_rule,
                         ssm_variance_reduction=ssm_variance_reduction).items():
            if v is not None:
                raise ValueError(f"{k} is the loss object's setting when method is a loss object; got {k}={v!r}")
        if energy:
            raise ValueError("energy is the loss object's setting when method is a loss object; got energy=True")
        method, kappa, energy = loss.method, loss.kappa, loss.energy
    else:
        loss = None
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"method must be one of {METHODS} or a loss object (cnce.nn.CNCELoss, ...); got {method!r}")
        kappa = check_positive_int(kappa, "kappa")
    steps = check_positive_int(steps, "steps")
    batch_size = check_positive_int(batch_size, "batch_size")
    lr = positive_number(lr, "lr")
    seed = check_seed(seed)
    val_every = max(1, steps // 10) if val_every is None else check_positive_int(val_every, "val_every")
    checkpoint_every = (max(1, steps // 10) if checkpoint_every is None
                        else check_positive_int(checkpoint_every, "checkpoint_every"))
    if threads is not None:
        threads = check_positive_int(threads, "threads")
    validate(health, Boolean(), "health")
    if not callable(log_phi):
        raise ValueError(f"log_phi must be a torch.nn.Module or a callable (B, D) -> (B,); got {type(log_phi).__name__}")
    if loss is None:  # every argument checked, before the data are touched
        loss = make_loss(method, kappa=kappa, seed=derive_seed(seed, "noise"), energy=energy, eps=eps, sigma=sigma,
                         eps_every=eps_every, eps_rule=eps_rule, noise=noise,
                         ssm_variance_reduction=ssm_variance_reduction)

    dev = resolve_device(device)
    if isinstance(log_phi, torch.nn.Module):
        log_phi.to(dev)
    params = _params_of(log_phi, params)
    dtype = params[0].dtype if params[0].is_floating_point() else torch.float32
    x = check_rows(x, name="x", dtype=dtype, device=dev, booleans=False)
    N, D = x.shape
    if x_val is not None:
        x_val = check_rows(x_val, name="x_val", D=D, dtype=dtype, device=dev, booleans=False)
    _probe(log_phi, x, method, energy)
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None:
        _check_checkpoint_path(ckpt)
    loss.to(dev)
    if method == "nce" and getattr(loss, "noise_mean", None) is None:
        loss._fit(x)
    opt = torch.optim.Adam(params + [p for p in loss.parameters() if p.requires_grad], lr=lr)
    batches = generator(seed, "batch")

    settings = dict(method=method, kappa=kappa, batch_size=batch_size, lr=lr, seed=seed, energy=energy,
                    loss=type(loss).__name__, N=N, D=D)
    res = TrainResult(method=method, kappa=kappa, steps=steps, batch_size=batch_size, lr=lr, seed=seed, device=str(dev),
                      loss=loss)
    data_fp = fingerprint(x) if ckpt is not None else None
    start = 0
    # the checkpoint's job (cnce.jobs): a lock beside the file (a second training into it is refused), the
    # checkpoint read on resume and written atomically; the lock is held until this call ends, also on failure
    job = None if ckpt is None else Job(ckpt.parent, ckpt.name, loader=lambda p: _read_checkpoint(p, dev),
                                        lock_file=f".{ckpt.name}.lock").acquire()
    try:  # until the main loop's own try: the lock is released when resuming fails
        state = job.load(lambda: None) if job is not None and job.exists() else None
        if state is not None:
            if state["settings"] != settings:
                diff = sorted(k for k in settings if state["settings"].get(k) != settings[k])
                raise ValueError(f"checkpoint {str(ckpt)!r} was written with other settings ({', '.join(diff)}); "
                                 "pass the same settings to resume it, or another checkpoint path to train these (the checkpoint is "
                                 "kept)")
            if state["data"] != data_fp:
                raise ValueError(f"x is not the data checkpoint {str(ckpt)!r} was trained on (same shape {N} x {D}, "
                                 "other values: the fingerprints differ); pass the same x to resume it, or another checkpoint path "
                                 "to train on this x (the checkpoint is kept)")
            if isinstance(log_phi, torch.nn.Module):
                _same_architecture(state["module"], log_phi.state_dict(), ckpt)
                log_phi.load_state_dict(state["module"])
            else:
                if [tuple(p.shape) for p in state["params"]] != [tuple(p.shape) for p in params]:
                    raise ValueError(f"params have other shapes than those in checkpoint {str(ckpt)!r}")
                with torch.no_grad():
                    for p, q in zip(params, state["params"]):
                        p.copy_(q)
            try:
                loss.load_state_dict(state["loss"])
            except (ValueError, RuntimeError) as exc:
                raise ValueError(f"the loss's settings differ from those in checkpoint {str(ckpt)!r}: {exc}") from exc
            opt.load_state_dict(state["optimizer"])
            batches.set_state(state["batches"])
            start = state["step"]
            res.history, res.val = state["history"], state["val"]
            res.resumed_from = start
            if start > steps:
                raise ValueError(f"steps must be >= the checkpoint's step {start}; got {steps}")

        def record_val(step):
            v = loss(log_phi, x_val, generator=generator(seed, "val"))  # score-matching losses need autograd in x: computed, then dropped
            res.val["step"].append(step)
            res.val["val_loss"].append(float(v.detach()))

        def save(step):
            job.save(dict(format=CHECKPOINT_FORMAT, settings=settings, data=data_fp, step=step,
                                   module=log_phi.state_dict() if isinstance(log_phi, torch.nn.Module) else None,
                                   params=[p.detach().cpu() for p in params], loss=loss.state_dict(),
                                   optimizer=opt.state_dict(), batches=batches.get_state(), history=res.history,
                                   val=res.val))

        bar = Job.bar(steps, initial=start, desc=f"cnce.nn.train {method}", unit="step", leave=False,
                      enabled=progress and start < steps)
        check = HealthCheck(loss, lr=lr) if health else None
        saved = [start if ckpt is not None and start else None]
        n_params = sum(p.numel() for p in params)
        want = threads if threads is not None else (1 if dev.type == "cpu" and n_params <= SMALL_NETWORK else None)
        threads_before = torch.get_num_threads()
        if want is not None:
            torch.set_num_threads(want)
    except BaseException:
        if job is not None:
            job.release()
        raise
    t0 = time.perf_counter()
    try:  # torch's thread setting is restored in the finally clause
        for t in range(start, steps):
            idx = torch.randint(0, N, (batch_size,), generator=batches)
            xb = x[idx.to(dev)]
            value = loss(log_phi, xb)
            if not torch.isfinite(value):
                _diverged(TrainingError(f"the {method} loss is {float(value.detach())} at step {t}: the loss is "
                                        f"not finite (diverged); lower lr (got lr={lr})"), ckpt, saved[0])
            opt.zero_grad(set_to_none=True)
            value.backward()
            opt.step()
            if check is not None:
                try:
                    check(value, log_phi, xb)
                except TrainingError as exc:
                    _diverged(exc, ckpt, saved[0])
            res.history["step"].append(t)
            res.history["loss"].append(float(value.detach()))
            res.history["eps"].append(loss.scale)
            res.steps_run += 1
            if bar is not None:
                bar.update(1)
            if x_val is not None and (t + 1) % val_every == 0:
                record_val(t + 1)
            if ckpt is not None and ((t + 1) % checkpoint_every == 0 or t + 1 == steps) and not (
                    check is not None and check.suspect):  # never overwrite the last good state with a suspect one
                save(t + 1)
                saved[0] = t + 1
        if x_val is not None and (not res.val["step"] or res.val["step"][-1] != steps):
            record_val(steps)  # off the val_every grid: not in the checkpoint, so a longer resumed run has no extra entry
    finally:
        if want is not None:
            torch.set_num_threads(threads_before)
        if bar is not None:
            bar.close()
        if job is not None:
            job.release()
    res.seconds = time.perf_counter() - t0
    runs = getattr(loss, "eps_runs", [])
    res.eps_runs = {"step": [r[0] for r in runs], "eps": [r[1] for r in runs], "evaluations": [r[2] for r in runs]}
    if method == "nce":
        res.log_normaliser = float(loss.log_normaliser.detach())
    return res
