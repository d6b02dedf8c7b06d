"""Sampling from an energy network: (Metropolis-adjusted, annealed) Langevin dynamics.

With the score ``s(x) = grad log phi(x)`` and step size ``h``, unadjusted Langevin (ULA) moves
every chain by ``x' = x + h s(x) + sqrt(2 h) xi`` with ``xi ~ N(0, I)``; its samples are
those of ``phi`` up to a bias that vanishes as ``h -> 0`` (Roberts & Tweedie, 1996). With
``metropolis=True`` (MALA) each move is accepted with probability
``min(1, phi(x') q(x | x') / (phi(x) q(x' | x)))``, ``q`` the Gaussian proposal above, which
removes the bias. Annealing runs the chains through the tempered densities ``phi^(1 / T)``
for the ``temperatures`` given (e.g. ``(8, 4, 2, 1)``), which lets chains cross between
modes at high ``T`` before settling at ``T = 1``.
"""
from __future__ import annotations

import math

import torch

from .._validation import check_positive_int, check_rows
from ._checks import check_seed, positive_number
from .losses import evaluate

__all__ = ["langevin"]


def langevin(log_phi, x0, steps: int, step_size, *, seed: int = 0, metropolis: bool = False, temperatures=None,
             energy: bool = False, return_info: bool = False):
    """Run ``x0.shape[0]`` Langevin chains on ``log_phi`` and return their final states.

    Args:
        log_phi: a network or callable ``(B, D) -> (B,)`` (energies with ``energy=True``).
        x0: starting points ``(n, D)`` (one chain each); the dtype and device of the network's
            parameters are used when it has any.
        steps: Langevin steps in all (split evenly over the ``temperatures``, the remainder
            to the last).
        step_size: ``h > 0`` (a number or 0-d tensor).
        seed: an integer >= 0 seeding a CPU generator for the noise and the acceptance tests.
        metropolis: accept or reject each move (MALA).
        temperatures: ``None`` (``T = 1`` throughout) or a sequence of temperatures > 0,
            usually decreasing to 1.
        energy: ``log_phi`` returns energies ``E = -log phi``.
        return_info: also return ``{"acceptance": fraction of accepted moves per stage}``.

    Returns:
        the samples ``(n, D)`` (detached), and the info dict with ``return_info``.
    """
    steps = check_positive_int(steps, "steps")
    h = positive_number(step_size, "step_size")
    seed = check_seed(seed)
    if not isinstance(metropolis, bool):
        raise ValueError(f"metropolis must be True or False; got {metropolis!r}")
    temps = [1.0] if temperatures is None else [positive_number(t, "temperatures") for t in temperatures]
    if not temps:
        raise ValueError("temperatures must hold at least one temperature; got an empty sequence")
    if len(temps) > steps:
        raise ValueError(f"steps must be >= the number of temperatures ({len(temps)}); got {steps}")
    dtype, device = torch.float64, None
    if isinstance(log_phi, torch.nn.Module):
        p = next(iter(log_phi.parameters()), None)
        if p is not None:
            dtype, device = p.dtype, p.device
    x = check_rows(x0, name="x0", dtype=dtype, device=device, booleans=False).detach()
    f = (lambda u: -log_phi(u)) if energy else log_phi
    g = torch.Generator()
    g.manual_seed(seed)

    def value_and_score(u):
        with torch.enable_grad():
            u = u.detach().requires_grad_(True)
            v = evaluate(f, u, name="log_phi")
            (s,) = torch.autograd.grad(v.sum(), u)
        return v.detach(), s.detach()

    per = [steps // len(temps)] * len(temps)
    per[-1] += steps - sum(per)
    acceptance = []
    v, s = value_and_score(x)
    for T, k in zip(temps, per):
        acc = 0
        for _ in range(k):
            xi = torch.randn(x.shape, generator=g, dtype=dtype).to(x.device)
            mean = x + h * s / T
            prop = mean + math.sqrt(2 * h) * xi
            vp, sp = value_and_score(prop)
            if metropolis:
                back = x - prop - h * sp / T
                log_a = (vp - v) / T - (back**2).sum(-1) / (4 * h) + (xi**2).sum(-1) / 2
                u = torch.rand(x.shape[0], generator=g, dtype=dtype).to(x.device)
                take = (torch.log(u) < log_a) & torch.isfinite(vp)
                acc += int(take.sum())
                x = torch.where(take.unsqueeze(-1), prop, x)
                v = torch.where(take, vp, v)
                s = torch.where(take.unsqueeze(-1), sp, s)
            else:
                x, v, s = prop, vp, sp
                acc += x.shape[0]
        acceptance.append(acc / (k * x.shape[0]))
    if not torch.isfinite(x).all():
        raise FloatingPointError(f"Langevin chains diverged (non-finite states); lower step_size (got {h})")
    return (x, {"acceptance": acceptance}) if return_info else x
