"""Sampling from an energy network: (Metropolis-adjusted, annealed) Langevin dynamics.

With the score ``s(x) = grad log phi(x)`` and step size ``h``, unadjusted Langevin (ULA) moves
every chain by ``x' = x + h s(x) + sqrt(2 h) xi`` with ``xi ~ N(0, I)``; its samples are
those of ``phi`` up to a bias that vanishes as ``h -> 0`` (Roberts & Tweedie, 1996). With
``metropolis=True`` (MALA) each move is accepted with probability
``min(1, phi(x') q(x | x') / (phi(x) q(x' | x)))``, ``q`` the Gaussian proposal above, which
removes the bias. Annealing runs the chains through the tempered densities ``phi^(1 / T)``
for the ``temperatures`` given (e.g. ``(8, 4, 2, 1)``), which lets chains cross between
modes at high ``T`` before settling at ``T = 1``; most of the steps (:data:`FINAL_SHARE`)
run at the last temperature, so that the chains forget the hot stages. MALA's step size
adapts toward a target acceptance while annealing and in the first half of the last stage,
and is fixed in the second half. The sampler says when it is likely wrong: a warning when
MALA's acceptance is near 0 or 1, or when chains end outside the data's range; an error for
a step so large that it returns noise, and for a dimension the network does not take.
"""
from __future__ import annotations

import math
import warnings

import torch

from .._validation import check_positive_int, check_rows
from ..constraints import Boolean, validate
from ..errors import InputError
from ._checks import check_seed, positive_number
from .losses import evaluate

__all__ = ["langevin", "FINAL_SHARE", "TARGET_ACCEPTANCE", "ACCEPTANCE_WARN", "OUTSIDE_WARN", "MAX_STEP", "FAR"]

#: the share of the steps spent at the last temperature (T = 1) when annealing
FINAL_SHARE = 0.75
#: MALA's acceptance that the step-size adaptation aims at (Roberts & Rosenthal, 1998)
TARGET_ACCEPTANCE = 0.574
#: acceptance at T = 1 below the first or above the second value warns
ACCEPTANCE_WARN = (0.05, 0.95)
#: a share of final states outside the data's range (widened by half of it) above this warns
OUTSIDE_WARN = 0.01
#: a step whose noise sqrt(2 h) exceeds this many data scales is refused
MAX_STEP = 10.0
#: chains farther than this many data scales from the data's (or x0's) centre after a hot stage warn
FAR = 20.0


def _split(steps, temps, final_share):
    """Steps per temperature: ``final_share`` of them at the last, the rest evenly before it."""
    if len(temps) == 1:
        return [steps]
    last = max(1, int(round(final_share * steps)))
    last = min(last, steps - (len(temps) - 1))
    rest = steps - last
    per = [rest // (len(temps) - 1)] * (len(temps) - 1)
    per[-1] += rest - sum(per)
    return per + [last]


def langevin(log_phi, x0, steps: int, step_size, *, seed: int | None = None, generator: torch.Generator | None = None,
             metropolis: bool = False, temperatures=None, final_share: float = FINAL_SHARE, adapt: bool | None = None,
             target_acceptance: float = TARGET_ACCEPTANCE, data=None, energy: bool = False,
             return_info: bool = False):
    """Run ``x0.shape[0]`` Langevin chains on ``log_phi`` and return their final states.

    Args:
        log_phi: a network or callable ``(B, D) -> (B,)`` (energies with ``energy=True``).
        x0: starting points ``(n, D)`` (one chain each), cast to the dtype and device of the
            network's parameters when it has any.
        steps: Langevin steps in all.
        step_size: the initial ``h > 0`` (a number or 0-d tensor); refused when its noise
            ``sqrt(2 h)`` exceeds :data:`MAX_STEP` data scales (of ``data``, else of ``x0``).
        seed: ``None`` (default): torch's global generator; an integer >= 0: a generator of
            the sampler's own. generator: a ``torch.Generator`` on the chains' device instead.
        metropolis: accept or reject each move (MALA).
        temperatures: ``None`` (``T = 1`` throughout) or a sequence of temperatures > 0 ending
            at the one to sample (usually 1), e.g. ``(4, 2, 1)``: ``final_share`` of the steps
            run at the last temperature, the rest evenly at the ones before.
        final_share: the share of the steps at the last temperature (default
            :data:`FINAL_SHARE`; ``1 / len(temperatures)`` splits them evenly).
        adapt: with ``metropolis`` (default ``True`` then), adapt the step size toward
            ``target_acceptance`` while annealing and in the first half of the last stage,
            then keep it fixed for the second half, so that the samples come from an
            unchanging MALA kernel.
        target_acceptance: the acceptance the adaptation aims at (default
            :data:`TARGET_ACCEPTANCE`).
        data: optional data ``(N, D)`` the density was fitted to: the step's scale, and a
            warning when more than :data:`OUTSIDE_WARN` of the chains end outside their range
            (widened by half of it each way).
        energy: ``log_phi`` returns energies ``E = -log phi``.
        return_info: also return ``{"acceptance": per stage (the last: over its fixed-step
        half), "steps": per stage, "step_size": per stage (at its end), "temperatures",
        "outside": share of chains outside the data's range (NaN without data)}``.

    Returns:
        the samples ``(n, D)`` (detached), and the info dict with ``return_info``.

    Warns:
        RuntimeWarning: MALA's acceptance at the last temperature outside
        :data:`ACCEPTANCE_WARN` (near 0: the chains barely move; near 1: the step is so small
        that they mix slowly), or chains outside the data's range.
    """
    steps = check_positive_int(steps, "steps")
    h = positive_number(step_size, "step_size")
    if seed is not None and generator is not None:
        raise InputError(f"give seed or generator, not both; got seed={seed!r} and a generator")
    seed = None if seed is None else check_seed(seed)
    validate(metropolis, Boolean(), "metropolis")
    adapt = metropolis if adapt is None else adapt
    validate(adapt, Boolean(), "adapt", note=" (or None: as metropolis)")
    if adapt and not metropolis:
        raise InputError("adapt=True needs metropolis=True (the step adapts to MALA's acceptance)")
    target = positive_number(target_acceptance, "target_acceptance")
    if target >= 1:
        raise InputError(f"target_acceptance must be in (0, 1); got {target_acceptance!r}")
    final_share = positive_number(final_share, "final_share")
    if final_share > 1:
        raise InputError(f"final_share must be in (0, 1]; got {final_share!r}")
    temps = [1.0] if temperatures is None else [positive_number(t, "temperatures") for t in temperatures]
    if not temps:
        raise InputError("temperatures must hold at least one temperature; got an empty sequence")
    if len(temps) > steps:
        raise InputError(f"steps must be >= the number of temperatures ({len(temps)}); got {steps}")
    dtype, device = torch.float64, None
    if isinstance(log_phi, torch.nn.Module):
        p = next(iter(log_phi.parameters()), None)
        if p is not None and p.is_floating_point():
            dtype, device = p.dtype, p.device
    x = check_rows(x0, name="x0", dtype=dtype, device=device, booleans=False).detach()
    D = x.shape[1]
    ref = None if data is None else check_rows(data, name="data", D=D, dtype=dtype, booleans=False).detach().cpu()
    f = (lambda u: -log_phi(u)) if energy else log_phi
    try:
        with torch.no_grad():
            evaluate(f, x[:2], name="log_phi")
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"x0 has shape {tuple(x.shape)} (D = {D}) and log_phi fails on it "
                         f"({type(exc).__name__}: {exc}); is D the network's input dimension?") from exc
    unit_src = ref if ref is not None else x.detach().cpu()
    unit = float(unit_src.double().std(0).mean()) if unit_src.shape[0] > 1 else 0.0
    unit = unit if unit > 0 else 1.0
    if math.sqrt(2 * h) > MAX_STEP * unit:
        raise InputError(f"step_size {h:g} moves the chains by sqrt(2 h) = {math.sqrt(2 * h):.3g} per step, more than "
                         f"{MAX_STEP:g} times the scale {unit:.3g} of {'data' if ref is not None else 'x0'}: "
                         "a step this large returns noise, not samples; use a smaller step_size")
    centre = unit_src.double().mean(0)
    if generator is None and seed is not None:
        generator = torch.Generator(device=x.device).manual_seed(seed)
    g = generator

    def value_and_score(u):
        with torch.enable_grad():
            u = u.detach().requires_grad_(True)
            v = evaluate(f, u, name="log_phi")
            (s,) = torch.autograd.grad(v.sum(), u)
        return v.detach(), s.detach()

    per = _split(steps, temps, final_share)
    acceptance, sizes = [], []
    v, s = value_and_score(x)
    for i, (T, k) in enumerate(zip(temps, per)):
        last = i == len(temps) - 1
        frozen_from = k // 2 if (last and adapt) else (k if adapt else 0)  # steps from here keep h
        acc = counted = 0
        for j in range(k):
            xi = torch.randn(x.shape, generator=g, dtype=x.dtype, device=x.device)
            mean = x + h * s / T
            prop = mean + math.sqrt(2 * h) * xi
            vp, sp = value_and_score(prop)
            if metropolis:
                back = x - prop - h * sp / T
                log_a = (vp - v) / T - (back**2).sum(-1) / (4 * h) + (xi**2).sum(-1) / 2
                u = torch.rand(x.shape[0], generator=g, dtype=x.dtype, device=x.device)
                take = (torch.log(u) < log_a) & torch.isfinite(vp)
                rate = float(take.double().mean())
                x = torch.where(take.unsqueeze(-1), prop, x)
                v = torch.where(take, vp, v)
                s = torch.where(take.unsqueeze(-1), sp, s)
                if j >= frozen_from or not last:  # the last stage reports its fixed-step half
                    acc += rate
                    counted += 1
                if j < frozen_from:
                    h = h * math.exp(rate - target)  # toward the target acceptance
                    if math.sqrt(2 * h) > MAX_STEP * unit:
                        h = (MAX_STEP * unit) ** 2 / 2
            else:
                x, v, s = prop, vp, sp
                acc, counted = acc + 1.0, counted + 1
        acceptance.append(acc / counted if counted else float("nan"))
        sizes.append(h)
        if not last:  # a tempered phi^(1/T) with heavy tails can be improper: chains run off
            far = float(((x.detach().cpu().double() - centre).norm(dim=-1) > FAR * unit).double().mean())
            if far > OUTSIDE_WARN:
                warnings.warn(f"at T = {T:g}, {100 * far:.1f} % of the chains ran beyond {FAR:g} scales of "
                              f"{'data' if ref is not None else 'x0'}: the tempered density phi^(1/T) may be improper "
                              "(tails too heavy to be raised to 1/T); those chains return slowly, so use lower "
                              "temperatures", RuntimeWarning, stacklevel=2)
    if not torch.isfinite(x).all():
        raise FloatingPointError(f"Langevin chains diverged (non-finite states); lower step_size (got {step_size})")
    if metropolis:
        a = acceptance[-1]
        if a < ACCEPTANCE_WARN[0]:
            warnings.warn(f"MALA accepted {a:.3f} of the moves at T = {temps[-1]:g} (step size {h:.3g}): the chains "
                          "barely move and the samples are close to where they started; lower step_size or allow "
                          "adapt=True", RuntimeWarning, stacklevel=2)
        elif a > ACCEPTANCE_WARN[1]:
            warnings.warn(f"MALA accepted {a:.3f} of the moves at T = {temps[-1]:g} (step size {h:.3g}): the steps "
                          "are so small that the chains mix slowly; raise step_size or steps, or allow adapt=True",
                          RuntimeWarning, stacklevel=2)
    outside = float("nan")
    if ref is not None:
        mn, mx = ref.min(0).values, ref.max(0).values
        pad = (mx - mn) / 2
        xc = x.detach().cpu()
        outside = float(((xc < mn - pad) | (xc > mx + pad)).any(-1).double().mean())
        if outside > OUTSIDE_WARN:
            warnings.warn(f"{100 * outside:.1f} % of the chains end outside the data's range (widened by half of "
                          "it): the density puts mass where the data are not, or the chains have not converged",
                          RuntimeWarning, stacklevel=2)
    info = {"acceptance": acceptance, "steps": per, "step_size": sizes, "temperatures": temps, "outside": outside}
    return (x, info) if return_info else x
