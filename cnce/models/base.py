"""The common surface of every unnormalised model (in the spirit of ``torch.distributions``).

A model is a small, stateless object. It evaluates ``log phi(u; theta)`` for a batch of ``S``
parameter sets on ``S`` datasets at once, draws ground truth and initialisations, samples,
and measures estimation error the way the paper does. The estimator (:func:`cnce.fit`) and the
losses (:mod:`cnce.losses`) only use this surface, so a user model that subclasses
:class:`UnnormalisedModel` and implements :meth:`_log_phi` works with CNCE and NCE unchanged.

Shapes
------
``u``: ``(S, M, D)`` with ``theta`` ``(S, P)``  ->  ``(S, M)``;
``u``: ``(M, D)`` with ``theta`` ``(P,)``        ->  ``(M,)`` (a single problem).

Free parameters
---------------
Optimisation runs over "free" parameters ``psi = to_free(theta)`` (the identity for most
models; ``log theta`` for the Bernoulli model). Models whose ``log phi`` is linear in ``psi``,
``log phi(u) = T(u) . psi + h(u)``, set ``linear = True`` and implement :meth:`features`;
then G of Eq. (9) is linear in ``psi`` too and every CNCE/NCE iteration is a batched
logistic-regression step on features computed once.

Declarations
------------
A model *declares* what it is on the class; :func:`cnce.fit` and its backends
(:mod:`cnce.backends`) dispatch on these declarations only, never on a concrete class. Every
declaration has a default (a generic, smooth, continuous model served by the batched torch
path through autograd), so a model that declares nothing works:

=========================  ==========================================================
``linear``                 ``log phi = T(u) . psi + h(u)`` (implement :meth:`features`)
``abs_projection_coef``    ``log phi = -a sum_j |b_j . u|`` with ``a`` this number (ICA)
``discrete``               discrete data (flip noise; NCE's Gaussian noise does not apply)
``smooth``                 twice differentiable in ``u`` (score matching applies)
``closed_form_mle``        :meth:`mle_closed_form` returns the maximum-likelihood estimate
``mle_optimizer``          ``"newton"`` or ``"lbfgs"`` for numerical maximum likelihood
``contrastive_optimizer``  ``"newton"`` (Gauss-Newton) or ``"lbfgs"`` for CNCE/NCE
``compiled_kernels``       method -> name of the compiled CPU kernel that serves it
=========================  ==========================================================

Per-simulation constants of a model (the ring's known radius) are given by
:meth:`sim_constants` and sliced with the simulations by :meth:`take`.
"""
from __future__ import annotations

import math

import torch

from types import MappingProxyType

from .._validation import check_theta
from ..errors import InputError

__all__ = ["UnnormalisedModel", "CONTRASTIVE_OPTIMIZERS", "MLE_OPTIMIZERS"]

CONTRASTIVE_OPTIMIZERS = ("newton", "lbfgs")
MLE_OPTIMIZERS = ("newton", "lbfgs")


class UnnormalisedModel:
    """Base class. Subclasses set ``dim``, ``n_params``, ``name`` and implement ``_log_phi``."""

    name: str = "model"
    dim: int = 1
    n_params: int = 1
    #: log phi is linear in the free parameters (see module docstring).
    linear: bool = False
    #: log phi is twice differentiable in u on the data's support (score matching applies).
    smooth: bool = False
    #: the data are discrete (CNCE uses flip noise; NCE's Gaussian noise does not apply).
    discrete: bool = False
    #: optimiser for maximum likelihood when no closed form exists: "newton" or "lbfgs".
    mle_optimizer: str = "newton"
    #: ``log phi = -a sum_j |b_j . u|`` with ``a`` this coefficient (square ICA): CNCE and NCE
    #: are then solved from the projections ``B u`` (:mod:`cnce.backends.projection`).
    abs_projection_coef: float | None = None
    #: :meth:`mle_closed_form` gives the maximum-likelihood estimate (no optimisation).
    closed_form_mle: bool = False
    #: optimiser for CNCE/NCE of models that are not linear: "newton" (Gauss-Newton) or "lbfgs".
    contrastive_optimizer: str = "newton"
    #: method -> name of the compiled CPU kernel serving it (:data:`cnce._fused.KERNELS`); a
    #: method not listed runs on the batched torch path.
    compiled_kernels = MappingProxyType({})

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for attr, allowed in (("contrastive_optimizer", CONTRASTIVE_OPTIMIZERS), ("mle_optimizer", MLE_OPTIMIZERS)):
            if getattr(cls, attr) not in allowed:
                raise InputError(f"{cls.__name__}.{attr} must be one of {allowed}; got {getattr(cls, attr)!r}")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in dict(cls.compiled_kernels).items()):
            raise InputError(f"{cls.__name__}.compiled_kernels must map method names to kernel names; "
                             f"got {cls.compiled_kernels!r}")
        a = cls.abs_projection_coef
        if a is not None and not (isinstance(a, (int, float)) and a > 0):
            raise InputError(f"{cls.__name__}.abs_projection_coef must be None or a positive number; got {a!r}")

    # ------------------------------------------------------------------ evaluation
    def _log_phi(self, u: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        """``log phi`` for ``u (S, M, D)`` and ``theta (S, P)``; returns ``(S, M)``."""
        raise NotImplementedError

    def _prepare(self, u, theta):
        if not isinstance(u, torch.Tensor):
            u = torch.as_tensor(u, dtype=torch.float64)
        single = u.ndim == 2
        if u.ndim not in (2, 3) or u.shape[-1] != self.dim:
            raise InputError(f"u must have shape (S, M, {self.dim}) or (M, {self.dim}); got shape {tuple(u.shape)}")
        if single:
            u = u.unsqueeze(0)
        if not u.is_floating_point():
            u = u.to(torch.float64)
        theta = check_theta(theta, self.n_params, u.shape[0], dtype=u.dtype, device=u.device)
        return u, theta, single

    def log_phi(self, u, theta) -> torch.Tensor:
        """The unnormalised log-density ``log phi(u; theta)``.

        ``u (S, M, D)`` with ``theta (S, P)`` (or ``(P,)``, shared) gives ``(S, M)``;
        ``u (M, D)`` with ``theta (P,)`` gives ``(M,)``.
        """
        u, theta, single = self._prepare(u, theta)
        out = self._log_phi(u, theta)
        return out[0] if single else out

    def log_prob(self, u, theta) -> torch.Tensor:
        """The normalised log-density, where the model has one (used by MLE)."""
        u, theta, single = self._prepare(u, theta)
        out = self._log_phi(u, theta) - self.log_partition(theta).unsqueeze(-1)
        return out[0] if single else out

    def log_partition(self, theta: torch.Tensor) -> torch.Tensor:
        """``log Z(theta)``, shape ``(S,)``; models without a tractable one raise."""
        raise NotImplementedError(f"{self.name} has no tractable partition function")

    # ------------------------------------------------------------------ free parameters
    def to_free(self, theta: torch.Tensor) -> torch.Tensor:
        return theta

    def from_free(self, psi: torch.Tensor) -> torch.Tensor:
        return psi

    def _log_phi_free(self, u: torch.Tensor, psi: torch.Tensor) -> torch.Tensor:
        return self._log_phi(u, self.from_free(psi))

    def features(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For linear models: ``(T(u) (S, M, P), h(u) (S, M))`` with ``log phi = T . psi + h``."""
        raise NotImplementedError(f"{self.name} is not linear in its parameters")

    def features_t(self, u: torch.Tensor, dtype: torch.dtype | None = None):
        """``T(u)`` transposed to ``(S, P, M)`` in ``dtype`` (contiguous) and ``h(u) (S, M)``, or
        ``None`` where ``h`` is zero: the layout of the torch path's logistic problems. Models
        may override it with a faster construction."""
        T, h = self.features(u)
        if not bool(h.ne(0).any()):
            h = None
        return T.transpose(1, 2).to(dtype or u.dtype).contiguous(), h

    def valid_params(self, theta: torch.Tensor) -> torch.Tensor:
        """``(S,)`` bool: where ``theta (S, P)`` is a valid parameter of the model (finite, and
        wherever the model says so, normalisable: a precision matrix positive definite).
        :func:`cnce.fit` never reports a fit ending outside as converged. Default: finite."""
        return torch.isfinite(theta).all(-1)

    def validate_data(self, x: torch.Tensor) -> None:
        """Raise ``ValueError`` naming ``x`` if the data ``(S, N, D)`` are outside the model's support."""

    def sim_constants(self, S: int, like: torch.Tensor) -> torch.Tensor | None:
        """Known per-simulation constants ``(S, Q)`` that enter ``log phi`` (the compiled kernels
        receive them after their own constants), or ``None``."""
        return None

    def take(self, sl: slice, S: int) -> "UnnormalisedModel":
        """The model for simulations ``sl`` of ``S`` (models with per-simulation constants slice them)."""
        return self

    def jac_log_phi(self, u: torch.Tensor, psi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(log phi (S, M), d log phi / d psi (S, M, P))`` at free parameters ``psi``.

        The default uses forward-mode autodiff (P Jacobian-vector products, each giving one
        column for all points at once); built-in models override it analytically.
        """
        if self.linear:
            T, h = self.features(u)
            return torch.einsum("smp,sp->sm", T, psi) + h, T
        from torch.func import jvp

        cols = []
        val = None
        for p in range(psi.shape[-1]):
            tangent = torch.zeros_like(psi)
            tangent[:, p] = 1.0
            val, col = jvp(lambda q: self._log_phi_free(u, q), (psi,), (tangent,))
            cols.append(col)
        return val, torch.stack(cols, dim=-1)

    def line_log_phi(self, u: torch.Tensor, psi: torch.Tensor, d: torch.Tensor):
        """A function ``alpha (S,) -> log phi(u; psi + alpha d) (S, M)`` for line searches.

        The default re-evaluates the model; models can cache work shared by all alphas.
        """
        return lambda alpha: self._log_phi_free(u, psi + alpha.unsqueeze(-1) * d)

    # ------------------------------------------------------------------ parameters and data
    @classmethod
    def build(cls, S: int, generator: torch.Generator | None = None, **kwargs) -> "UnnormalisedModel":
        """The model of a study with ``S`` simulations (the experiment runner's constructor):
        ``cls(**kwargs)``; models with per-simulation constants draw them from ``generator``."""
        return cls(**kwargs)

    def random_params(self, S: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Ground-truth parameters ``(S, P)`` drawn as in the paper's experiments."""
        raise NotImplementedError

    def init_params(self, S: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Initial parameters ``(S, P)`` for the optimiser, drawn as in the authors' code."""
        raise NotImplementedError

    def sample(self, theta, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """``n`` samples per parameter set: ``(S, n, D)``."""
        raise NotImplementedError

    def mle_closed_form(self, x: torch.Tensor) -> torch.Tensor | None:
        """Closed-form maximum-likelihood estimate ``(S, P)`` (used where ``closed_form_mle``)."""
        return None

    def error(self, theta_hat, theta_true) -> torch.Tensor:
        """Squared estimation error per simulation, ``(S,)`` (squared Euclidean distance)."""
        a, b = self._pair(theta_hat, theta_true)
        return ((a - b) ** 2).sum(-1)

    def _pair(self, theta_hat, theta_true):
        theta_true = check_theta(theta_true, self.n_params, name="theta_true")
        theta_hat = check_theta(theta_hat, self.n_params, name="theta_hat", dtype=theta_true.dtype, device=theta_true.device)
        if theta_hat.shape[0] != theta_true.shape[0]:
            if theta_true.shape[0] == 1:
                theta_true = theta_true.expand_as(theta_hat)
            else:
                raise InputError(f"theta_hat has {theta_hat.shape[0]} rows but theta_true has {theta_true.shape[0]}")
        return theta_hat, theta_true

    @property
    def methods(self) -> tuple[str, ...]:
        """The estimation methods of :func:`cnce.fit` that apply to this model."""
        m = ["cnce"]
        if not self.discrete:
            m.append("nce")
        if self._has_mle():
            m.append("mle")
        if self.smooth:
            m.append("sm")
        return tuple(m)

    def _has_mle(self) -> bool:
        return self.closed_form_mle or type(self).log_partition is not UnnormalisedModel.log_partition

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim})"


def _uniform(S, lo, hi, generator, dtype=torch.float64, size=()):
    return lo + (hi - lo) * torch.rand((S, *size), generator=generator, dtype=dtype)


LOG_SQRT2 = 0.5 * math.log(2.0)
