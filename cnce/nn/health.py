"""Training health: the failures a diverging energy network shows, caught while it trains.

:func:`cnce.nn.train` runs a :class:`HealthCheck` after every step; a loop of one's own runs
the same check::

    check = cnce.nn.HealthCheck(loss, lr=lr)
    for xb in batches:
        opt.zero_grad(); value = loss(net, xb); value.backward(); opt.step()
        check(value, net, xb)          # raises cnce.errors.TrainingError naming the cause

It raises :class:`cnce.errors.TrainingError` on

* a **non-finite loss** (NaN or inf);
* a **blow-up**: the loss more than :data:`BLOWUP` times the size of its first values for
  ``patience_blowup`` steps in a row (NCE sitting at 4e5, a loss at 1e18);
* a **collapse**: the network's output no longer depends on its input (the same value on
  every point of the batch) for ``patience`` steps in a row. For CNCE this is the
  no-information loss: with ``log phi(x) = log phi(y)`` every G of Eq. (9) is 0 and the loss
  is exactly ``2 log 2``, whatever eps, so a CNCE loss near ``2 log 2`` triggers the check;
* a **stalled normaliser**: NCE's learned log-normaliser ``c`` has not changed for
  :data:`cnce.nn.objectives.STALL_CALLS` calls although it has a gradient (it is not in the
  optimiser: pass ``list(net.parameters()) + list(loss.parameters())``).

The check keeps ``last_good``: the last step at which nothing was suspect, which
:func:`cnce.nn.train` uses to keep the last good checkpoint.
"""
from __future__ import annotations

import math

import torch

from .._validation import check_positive_int
from ..errors import TrainingError
from ._checks import positive_number
from .losses import LOG4, evaluate
from .objectives import STALL_CALLS, EnergyLoss

__all__ = ["HealthCheck", "BLOWUP", "COLLAPSE_SPREAD"]

#: a loss this many times the size of its first values (plus one) is a blow-up
BLOWUP = 1e3
#: a network whose output on a batch spreads by less than this (relative to its size plus
#: one) is constant in its input: collapsed
COLLAPSE_SPREAD = 1e-6
#: CNCE losses closer than this to 2 log 2 trigger the collapse check on every step
NEAR_LOG4 = 1e-3
#: steps whose smallest loss sets the reference size for the blow-up test
REFERENCE_STEPS = 5


class HealthCheck:
    """Watch a training loop; call it after every step as ``check(value, net, xb)``.

    Args:
        loss: the loss object (its ``method``, its ``energy`` adapter, NCE's normaliser), or
            ``None`` for a plain loss (then only non-finite values and blow-ups are seen, and
            collapse when ``net`` and ``x`` are passed).
        lr: the learning rate, named in the messages (optional).
        patience: steps in a row of a constant network before it counts as collapsed.
        patience_blowup: steps in a row of a blown-up loss before it counts.
        every: steps between collapse checks when nothing points to one (CNCE checks at
            every step its loss is near ``2 log 2``).

    Attributes:
        step: the steps seen; ``last_good``: the last step at which nothing was suspect
        (``None`` before the first); ``suspect``: something is being watched now.
    """

    def __init__(self, loss: EnergyLoss | None = None, *, lr=None, patience: int = 10, patience_blowup: int = 3,
                 every: int = 10):
        if loss is not None and not isinstance(loss, EnergyLoss):
            raise TypeError(f"loss must be a cnce.nn loss object or None; got {type(loss).__name__}")
        self.loss = loss
        self.method = loss.method if loss is not None else "loss"
        self.lr = None if lr is None else positive_number(lr, "lr")
        self.patience = check_positive_int(patience, "patience")
        self.patience_blowup = check_positive_int(patience_blowup, "patience_blowup")
        self.every = check_positive_int(every, "every")
        self.step = 0
        self.last_good = None
        self._first = []
        self._flat = 0
        self._big = 0

    @property
    def suspect(self) -> bool:
        return bool(self._flat or self._big)

    def _fix(self) -> str:
        return f"lower lr (got lr={self.lr:g})" if self.lr is not None else "lower the learning rate"

    def _fail(self, cause: str, what: str, fix: str | None = None):
        err = TrainingError(f"{what} at step {self.step - 1}: {cause}; {fix or self._fix()}")
        err.cause, err.step, err.last_good = cause, self.step - 1, self.last_good
        raise err

    def __call__(self, value, net=None, x=None) -> None:
        v = float(value.detach()) if isinstance(value, torch.Tensor) else float(value)
        self.step += 1
        m = self.method
        if not math.isfinite(v):
            self._fail("the loss is not finite (diverged)", f"the {m} loss is {v}")
        if len(self._first) < REFERENCE_STEPS:
            self._first.append(abs(v))
        ref = min(self._first)  # the loss near initialisation (a blow-up in the first steps must not raise it)
        self._big = self._big + 1 if abs(v) > BLOWUP * (ref + 1.0) else 0
        if self._big >= self.patience_blowup:
            self._fail(f"blow-up: {self._big} steps in a row above {BLOWUP:g} times its first values "
                       f"(about {ref:.3g})", f"the {m} loss is {v:.4g}")
        near = m == "cnce" and abs(v - LOG4) < NEAR_LOG4
        if net is not None and x is not None and (near or self._flat or self.step % self.every == 0):
            self._flat = self._flat + 1 if _constant(net, x, self.loss) else 0
            if self._flat >= self.patience:
                what = (f"the cnce loss is {v:.6g}, the no-information value 2 log 2 = {LOG4:.6g}," if m == "cnce"
                        else f"the {m} loss is {v:.4g}")
                self._fail(f"collapse: the network's output has not depended on its input for {self._flat} "
                           "checks in a row (a constant log phi: the weights have left the range where the "
                           "network varies)", what)
        if m == "nce" and self.loss is not None:
            c = self.loss.log_normaliser
            if self.loss.stalled_calls >= STALL_CALLS and c.grad is not None and bool(c.grad != 0):
                self._fail(f"stalled normaliser: NCE's log_normaliser has stayed at {float(c.detach()):g} for "
                           f"{self.loss.stalled_calls} calls although its gradient is {float(c.grad):.3g}: it is "
                           "not in the optimiser", f"the nce loss is {v:.4g}",
                           "pass list(net.parameters()) + list(loss.parameters()) to the optimiser")
        if not self.suspect:
            self.last_good = self.step


@torch.no_grad()
def _constant(net, x, loss) -> bool:
    f = evaluate(loss.log_phi_of(net) if loss is not None else net, x.detach())
    spread = float(f.max() - f.min())
    return spread <= COLLAPSE_SPREAD * (1.0 + float(f.abs().max()))
