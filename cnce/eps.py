"""The epsilon heuristic: choose the conditional-noise scale eps before optimising.

The paper (Sec. 2) only sketches it: start small and increase eps until the loss at the
initial parameters is clearly away from its eps = 0 value ``2 log 2``. The authors' code
(facts in ``shared/spec/experiment-settings.md``) does, per simulation:

1. ``base`` = mean over dimensions of the data's per-dimension standard deviation;
2. start at ``eps = 0.5 * base`` and evaluate ``J`` at the *initial* parameters with a fixed
   noise base (so J is a deterministic function of eps);
3. if ``|1 - J / (2 log 2)| < 0.1`` (noise too close to the data: J still near 2 log 2),
   multiply eps by 1.2 until that is no longer so; otherwise, while ``J < 0.5 * 2 log 2``
   (noise too easy to tell apart), multiply eps by 0.5;
4. stop after 500 steps or at the cap ``1000 * base``.

For the Bernoulli flip noise (eps is a flip probability) the rule starts at 1 with factors
1.1 / 0.9, at most 50 steps, and never exceeds 1 (their code stops at 1.1; we clip to the
admissible range). All simulations run the rule together as one batched loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .losses import LOG4

__all__ = ["EpsRule", "AUTHORS_RULE", "BERNOULLI_RULE", "data_scale", "choose_eps"]


@dataclass(frozen=True)
class EpsRule:
    """Parameters of the epsilon heuristic (defaults: the authors' continuous-data rule)."""

    start: float = 0.5  #: initial eps, in units of the data scale (absolute if ``relative=False``)
    grow: float = 1.2  #: factor while J is too close to 2 log 2
    shrink: float = 0.5  #: factor while J is too small
    near: float = 0.1  #: "too close" when ``|1 - J / (2 log 2)| < near``
    far: float = 0.5  #: "too far" when ``J < far * 2 log 2``
    max_steps: int = 500
    cap: float = 1000.0  #: largest eps, in the same units as ``start``
    relative: bool = True  #: scale start and cap by the data scale


AUTHORS_RULE = EpsRule()
BERNOULLI_RULE = EpsRule(start=1.0, grow=1.1, shrink=0.9, max_steps=50, cap=1.0, relative=False)


def data_scale(x: torch.Tensor) -> torch.Tensor:
    """Mean over dimensions of the per-dimension standard deviation, per simulation ``(S,)``."""
    return x.std(dim=-2).mean(dim=-1)


@dataclass
class EpsTrace:
    """The path the heuristic took: ``eps[k]`` and ``J[k]`` are ``(S,)`` tensors per step."""

    eps: list = field(default_factory=list)
    J: list = field(default_factory=list)

    def as_tensors(self):
        return torch.stack(self.eps), torch.stack(self.J)


def choose_eps(J_of_eps, x: torch.Tensor, rule: EpsRule = AUTHORS_RULE, *, return_trace: bool = False):
    """Run the heuristic for all simulations at once.

    Args:
        J_of_eps: callable ``eps (S,) -> J (S,)``, the CNCE loss at the initial parameters
            with a fixed noise base.
        x: data ``(S, N, D)`` (for the data scale).
        rule: an :class:`EpsRule`.

    Returns:
        ``eps (S,)``, and the :class:`EpsTrace` if ``return_trace``.
    """
    S = x.shape[0]
    unit = data_scale(x) if rule.relative else torch.ones(S, dtype=x.dtype, device=x.device)
    unit = torch.where(unit > 0, unit, torch.ones_like(unit))
    cap = rule.cap * unit
    eps = torch.clamp(rule.start * unit, max=cap)
    trace = EpsTrace()
    J = J_of_eps(eps)
    trace.eps.append(eps.clone())
    trace.J.append(J.clone())
    too_close = (1.0 - J / LOG4).abs() < rule.near
    too_far = J < rule.far * LOG4
    grow = too_close
    shrink = ~too_close & too_far
    active = grow | shrink
    for _ in range(rule.max_steps):
        if not active.any():
            break
        factor = torch.where(grow, torch.full_like(eps, rule.grow), torch.full_like(eps, rule.shrink))
        new = torch.where(active, eps * factor, eps)
        hit_cap = active & (new >= cap)
        new = torch.where(hit_cap, cap, new)
        eps = new
        J = torch.where(active, J_of_eps(eps), J)
        trace.eps.append(eps.clone())
        trace.J.append(J.clone())
        still_close = (1.0 - J / LOG4).abs() < rule.near
        still_far = J < rule.far * LOG4
        active = active & ~hit_cap & torch.where(grow, still_close, still_far)
    return (eps, trace) if return_trace else eps
