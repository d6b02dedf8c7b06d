"""Result types shared by :func:`cnce.fit` and every backend (below both: no import cycle).

Every solver returns an :class:`OptimResult` (the torch optimisers directly, the compiled
kernels through :meth:`OptimResult.from_arrays`); a backend turns it into a
:class:`FitResult` with :meth:`FitResult.from_optim`, the one place where free parameters
become the model's and the per-method fields are filled in."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["FitResult", "OptimResult"]


@dataclass
class OptimResult:
    """What an optimiser returns: free parameters ``psi (S, P)`` and per-problem diagnostics."""

    psi: torch.Tensor
    loss: torch.Tensor
    init_loss: torch.Tensor
    grad_norm: torch.Tensor
    n_iter: torch.Tensor
    converged: torch.Tensor
    #: passes over the data per simulation ``(S, 3)`` (loss only / with gradient / with the
    #: Gauss-Newton matrix), where the solver counts them (the compiled kernels)
    passes: torch.Tensor | None = None

    @classmethod
    def from_arrays(cls, out: dict) -> "OptimResult":
        """From the compiled kernels' numpy arrays (``psi``, ``loss``, ..., optionally ``passes``)."""
        t = torch.from_numpy
        return cls(psi=t(out["psi"]), loss=t(out["loss"]), init_loss=t(out["init_loss"]),
                   grad_norm=t(out["grad_norm"]), n_iter=t(out["n_iter"]), converged=t(out["converged"]),
                   passes=t(out["passes"]) if "passes" in out else None)


@dataclass
class FitResult:
    """Per-simulation estimates and diagnostics of :func:`cnce.fit`.

    Tensors have a leading simulation axis ``S`` (dropped when ``x`` was a single ``(N, D)``
    dataset). ``eps`` is NaN for methods without conditional noise; ``log_normaliser`` is
    NCE's learned ``c`` (``None`` otherwise). ``reason`` says why a fit is not converged
    (:func:`cnce.fit` fills it: the solver's cap, a fit that never left its start, an invalid
    end point, eps outside what the data's scale allows, constant or badly scaled data).
    ``info`` says which backend ran and how; the
    compiled backend adds ``info["passes"]`` ``(S, 3)``: each simulation's passes over its data (loss
    only, with gradient, with Gauss-Newton matrix; a pass over part of the data counts as that part).
    """

    theta: torch.Tensor
    eps: torch.Tensor
    loss: torch.Tensor
    init_loss: torch.Tensor
    n_iter: torch.Tensor
    converged: torch.Tensor
    grad_norm: torch.Tensor
    method: str
    kappa: int | None
    seconds: float
    log_normaliser: torch.Tensor | None = None
    info: dict = field(default_factory=dict)
    #: why each simulation's fit is not converged (``""`` where it is); a list of ``S`` strings
    #: (one string for a single ``(N, D)`` dataset). Every ``converged=False`` has a reason.
    reason: list | str | None = None

    _PER_SIM = ("theta", "eps", "loss", "init_loss", "n_iter", "converged", "grad_norm", "log_normaliser")

    @classmethod
    def from_optim(cls, model, res, *, method: str, kappa: int | None, eps: torch.Tensor | None = None,
                   log_normaliser: bool = False) -> "FitResult":
        """A fit's result from its solver's ``res`` (an ``OptimResult``): ``theta`` from the free parameters, ``eps`` NaN where
        the method has none, NCE's ``c`` (the last free parameter) with ``log_normaliser``;
        ``seconds`` and ``info`` are the backend's to fill."""
        P = model.n_params
        if eps is None:
            eps = torch.full((res.psi.shape[0],), float("nan"), dtype=res.psi.dtype, device=res.psi.device)
        info = {} if res.passes is None else {"passes": res.passes}
        return cls(theta=model.from_free(res.psi[:, :P]), eps=eps, loss=res.loss, init_loss=res.init_loss,
                   n_iter=res.n_iter, converged=res.converged, grad_norm=res.grad_norm, method=method, kappa=kappa,
                   seconds=0.0, log_normaliser=res.psi[:, P].clone() if log_normaliser else None, info=info)

    @classmethod
    def concat(cls, parts: list["FitResult"]) -> "FitResult":
        """The results of chunks of simulations, in order, as one (``info`` of the first)."""
        first = parts[0]
        per = {k: None if getattr(first, k) is None else torch.cat([getattr(p, k) for p in parts]) for k in cls._PER_SIM}
        reason = None if first.reason is None else [r for p in parts for r in p.reason]
        return cls(**per, method=first.method, kappa=first.kappa, seconds=sum(p.seconds for p in parts),
                   info=dict(first.info), reason=reason)

    def error(self, model, theta_true) -> torch.Tensor:
        """Squared estimation error per simulation (``model.error``)."""
        return model.error(self.theta, theta_true)

    def unbatch(self) -> "FitResult":
        """Drop the simulation axis (in place) of a fit of one ``(N, D)`` dataset."""
        for k in self._PER_SIM:
            v = getattr(self, k)
            if v is not None:
                setattr(self, k, v[0])
        if isinstance(self.reason, list):
            self.reason = self.reason[0]
        return self

    def __repr__(self) -> str:
        S = self.theta.shape[0] if self.theta.ndim == 2 else 1
        conv = int(self.converged.sum()) if self.converged.ndim else int(self.converged)
        why = ""
        reasons = [self.reason] if isinstance(self.reason, str) else (self.reason or [])
        first = next((r for r in reasons if r), "")
        if first:
            why = f", reason={first!r}" + (" (first of the non-converged)" if S > 1 else "")
        return (f"FitResult(method={self.method!r}, kappa={self.kappa}, S={S}, converged={conv}/{S}, "
                f"median_iter={float(self.n_iter.double().median()):.0f}, seconds={self.seconds:.3f}{why})")
