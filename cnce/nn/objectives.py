"""The four losses as ``torch.nn.Module`` objects that own their random numbers.

Each is called as ``loss(log_phi, x)`` on a minibatch ``x (B, D)`` and returns a scalar to
minimise; it draws its noise (noise points, perturbations or projections, ``kappa`` per data
point) from a CPU ``torch.Generator`` of its own, seeded by ``seed`` and saved in its
``state_dict`` with everything else it has chosen (CNCE's eps, DSM's sigma, NCE's noise), so
that a loop resumed from ``loss.load_state_dict`` continues exactly as the uninterrupted one.
:func:`cnce.nn.train` is a loop over these objects; your own loop runs the same code::

    loss = cnce.nn.CNCELoss(kappa=10, seed=0)           # eps="auto": the study's default rule
    opt = torch.optim.Adam(net.parameters(), lr=5e-3)
    for xb in batches:
        opt.zero_grad(); loss(net, xb).backward(); opt.step()

``energy=True`` serves networks that return an energy ``E = -log phi`` (the convention of
most energy-based-model libraries). The functional forms are :mod:`cnce.nn.losses`.

CNCE's eps (Eq. 13's noise scale) with ``eps="auto"`` follows :data:`DEFAULT_SCHEDULE`
(0.3 data scales of the first minibatch, :data:`DEFAULT_FACTOR`, chosen by the study); the
schedules (``"once"``, ``"rechoose"``, ``"carry"``, ``"upward"``, ``"scale"``) are the
candidates of the eps-rule study on the page "CNCE for your own energy network" (notebook 08):

* ``"once"``: the heuristic (:func:`cnce.eps.choose_eps`, the authors' rule with its cap at
  :data:`EPS_CAP` data scales) on the first minibatch, then fixed;
* ``"rechoose"``: the heuristic from its start (0.5 data scales) every ``every`` calls;
* ``"carry"``: every ``every`` calls, the heuristic *starting from the current eps*: eps
  stays where the loss is neither too close to ``2 log 2`` nor too far below it (hysteresis),
  and moves only when it has left that band;
* ``"upward"``: as ``"rechoose"``, but eps never decreases;
* ``"scale"``: ``factor`` data scales (mean per-coordinate standard deviation) of the first
  minibatch, no search (:data:`cnce.eps.SCALE_RULE` for ``factor=1``); the study's "fixed
  eps" candidates are this rule with the data scale of the whole training set.
"""
from __future__ import annotations


import torch

from .._validation import check_applies, check_positive_int
from ..eps import NETWORK_RULE, EpsRule, choose_eps, data_scale, eps_schedule, resolve_eps
from ..noise import ConditionalNoise, GaussianNoise, NCEGaussianNoise
from ._checks import as_number, check_seed, positive_number
from . import losses as L

__all__ = ["CNCELoss", "NCELoss", "DSMLoss", "SSMLoss", "EnergyLoss", "SCHEDULES", "DEFAULT_SCHEDULE", "DEFAULT_FACTOR",
           "EPS_CAP",
           "DSM_SIGMA", "make_loss"]

#: the heuristic's cap for networks, in data scales: at initialisation a network is nearly
#: flat, J stays near ``2 log 2`` for any moderate eps, and the authors' cap (1000 data
#: scales) would let eps grow until the noise leaves the data's region
EPS_CAP = NETWORK_RULE.cap
#: DSM's default noise level, in data scales of the first minibatch
DSM_SIGMA = 0.1
SCHEDULES = ("once", "rechoose", "carry", "upward", "scale")
#: what ``eps="auto"`` means: the candidate of the eps-rule study of notebook 08
#: (``data/results/paper/nn-study.csv``, 5 seeds, 8 cases) that is never significantly below
#: the best fixed eps of any case and has the highest mean: eps = 0.3 data scales, no search
#: (the heuristic's schedules chose eps too large for the toys' fine detail at that budget)
DEFAULT_SCHEDULE = "scale"
#: the factor of ``eps="auto"`` when :data:`DEFAULT_SCHEDULE` is ``"scale"``
DEFAULT_FACTOR = 0.3
#: calls between two runs of the heuristic for the re-choosing schedules (``every=None``)
DEFAULT_EVERY = 100


class EnergyLoss(torch.nn.Module):
    """What the four losses share: ``kappa``, the owned generator, the energy adapter and the
    call count; ``state_dict`` holds the generator's state (``_extra_state``)."""

    method = ""

    def __init__(self, kappa: int = 10, *, seed: int = 0, energy: bool = False):
        super().__init__()
        self.kappa = check_positive_int(kappa, "kappa")
        self.seed = check_seed(seed)
        if not isinstance(energy, bool):
            raise ValueError(f"energy must be True (the network returns E = -log phi) or False; got {energy!r}")
        self.energy = energy
        self.generator = torch.Generator().manual_seed(self.seed)
        self.calls = 0

    # -- what the subclasses add to the saved state
    def _state(self) -> dict:
        return {}

    def _load(self, state: dict) -> None:
        pass

    def get_extra_state(self):
        return {"generator": self.generator.get_state(), "calls": self.calls, "kappa": self.kappa,
                "energy": self.energy, "method": self.method, **self._state()}

    def set_extra_state(self, state):
        if state.get("method") != self.method or state.get("kappa") != self.kappa:
            raise ValueError(f"state was saved by a {state.get('method')!r} loss with kappa={state.get('kappa')}; "
                             f"this is a {self.method!r} loss with kappa={self.kappa}")
        self.generator.set_state(state["generator"])
        self.calls = state["calls"]
        self._load(state)

    def log_phi_of(self, net):
        """The unnormalised log-density ``log phi``: the network, or its negative with ``energy=True``."""
        return (lambda u: -net(u)) if self.energy else net

    @property
    def scale(self) -> float:
        """The noise scale in use (CNCE's eps, DSM's sigma; NaN for NCE and SSM)."""
        return float("nan")

    def forward(self, net, x: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """The loss on the minibatch ``x (B, D)``. With ``generator``, an evaluation (e.g. on
        validation data): the random numbers come from it, and nothing is chosen or counted."""
        if not isinstance(x, torch.Tensor) or x.ndim != 2:
            raise ValueError(f"x must be a tensor of shape (B, D); got {getattr(x, 'shape', type(x).__name__)}")
        training = generator is None
        if training:
            self._before(net, x)
            self.calls += 1
        return self._loss(self.log_phi_of(net), x, self.generator if training else generator)

    def _before(self, net, x):
        pass

    def _randn(self, x, g):
        return torch.randn(x.shape[0], self.kappa, x.shape[1], generator=g, dtype=x.dtype).to(x.device)


class CNCELoss(EnergyLoss):
    """CNCE (Eqs. 8-9) with conditional noise ``y = noise.apply(x, base, eps)`` (Eq. 13:
    ``y = x + eps xi`` by default).

    Args:
        kappa: noise samples per data point.
        eps: ``"auto"`` (:data:`DEFAULT_SCHEDULE`), one of :data:`SCHEDULES`, or a positive
            number (fixed; a 0-d tensor or numpy scalar is accepted).
        every: calls between runs of the heuristic for ``"rechoose"``, ``"carry"`` and
            ``"upward"`` (default :data:`DEFAULT_EVERY`).
        factor: eps in data scales for ``eps="scale"`` (default 1; with ``eps="auto"``
            and a ``"scale"`` default, :data:`DEFAULT_FACTOR`).
        rule: the heuristic (:class:`cnce.eps.EpsRule`; default the authors' rule with cap
            :data:`EPS_CAP` data scales).
        noise: a :class:`cnce.noise.ConditionalNoise` (default :class:`GaussianNoise`).
        seed, energy: see :class:`EnergyLoss`.

    ``loss.eps`` is the current eps (``None`` before the first call of an automatic rule);
    ``loss.choose_eps(net, x)`` runs the heuristic on ``x`` now; ``loss.eps_runs`` lists
    ``(call, eps, evaluations of J)`` for every run of it.
    """

    method = "cnce"

    def __init__(self, kappa: int = 10, eps="auto", *, every: int | None = None, rule: EpsRule | None = None,
                 factor=None, noise: ConditionalNoise | None = None, seed: int = 0, energy: bool = False):
        super().__init__(kappa, seed=seed, energy=energy)
        self.schedule = eps_schedule(eps, SCHEDULES, DEFAULT_SCHEDULE) or "fixed"
        if every is not None and self.schedule not in ("rechoose", "carry", "upward"):
            raise ValueError(f"every applies to the re-choosing eps schedules ('rechoose', 'carry', 'upward'); "
                             f"got every={every!r} with eps={eps!r}")
        self.every = DEFAULT_EVERY if every is None else check_positive_int(every, "every")
        if factor is not None and self.schedule != "scale":
            raise ValueError(f"factor applies to eps='scale' only; got factor={factor!r} with eps={eps!r}")
        self.factor = (positive_number(factor, "factor") if factor is not None
                       else DEFAULT_FACTOR if eps == "auto" else 1.0)
        if rule is not None and not isinstance(rule, EpsRule):
            raise ValueError(f"rule must be a cnce.eps.EpsRule; got {type(rule).__name__}")
        if rule is not None and self.schedule in ("fixed", "scale"):
            raise ValueError(f"rule applies to a searched eps ('auto', 'once', 'rechoose', 'carry', 'upward'); "
                             f"got rule with eps={eps!r}")
        if noise is not None and not isinstance(noise, ConditionalNoise):
            raise ValueError(f"noise must be a cnce.noise.ConditionalNoise; got {type(noise).__name__}")
        self.noise = GaussianNoise() if noise is None else noise
        # the noise's largest admissible eps bounds a given eps, the searches and the scale rule
        self.rule = (NETWORK_RULE if rule is None else rule).bounded(self.noise.eps_max)
        self._eps = (float(resolve_eps(as_number(eps, "eps"), self.noise, positive=True)[0])
                     if self.schedule == "fixed" else None)
        self.eps_runs = []

    @property
    def eps(self) -> float | None:
        return self._eps

    @property
    def scale(self) -> float:
        return float("nan") if self._eps is None else self._eps

    def _state(self):
        return {"eps": self._eps, "schedule": self.schedule, "every": self.every, "factor": self.factor,
                "eps_runs": list(self.eps_runs)}

    def _load(self, state):
        if (state["schedule"], state["every"], state.get("factor")) != (self.schedule, self.every, self.factor):
            raise ValueError(f"state was saved with eps schedule {state['schedule']!r} every {state['every']}; "
                             f"this loss has {self.schedule!r} every {self.every}")
        self._eps = state["eps"]
        self.eps_runs = list(state["eps_runs"])

    @torch.no_grad()
    def choose_eps(self, net, x: torch.Tensor, *, start: float | None = None) -> float:
        """Run the heuristic on the network as it is now and the points ``x (B, D)`` (a
        fixed noise base drawn from the loss's generator), set ``loss.eps`` and return it.
        ``start``: an absolute eps to start from instead of the rule's start."""
        f = self.log_phi_of(net)
        x = x.detach()
        xs = x.unsqueeze(0)
        base = self.noise.draw_base(xs.cpu(), self.kappa, self.generator)[0].to(x.device)
        unit = float(data_scale(x.double())) if self.rule.relative else 1.0
        unit = unit if unit > 0 else 1.0
        rule = self.rule
        if start is not None:
            rule = rule.replace(start=start / unit)
        calls = [0]

        def J_of_eps(e):
            calls[0] += 1
            return L.cnce_loss(f, x, base, e.reshape(()).to(x.dtype), self.noise).reshape(1).double().cpu()

        e = float(choose_eps(J_of_eps, xs.double().cpu(), rule))
        self.eps_runs.append((self.calls, e, calls[0]))
        self._eps = e
        return e

    def _before(self, net, x):
        s, c = self.schedule, self.calls
        if s == "fixed":
            return
        if self._eps is None:
            if s == "scale":
                e = float(data_scale(x.detach().double()))
                self._eps = self.factor * (e if e > 0 else 1.0)
                if self.noise.eps_max is not None:
                    self._eps = min(self._eps, float(self.noise.eps_max))
                self.eps_runs.append((c, self._eps, 0))
            else:
                self.choose_eps(net, x)
            return
        if s in ("once", "scale") or c % self.every:
            return
        if s == "rechoose":
            self.choose_eps(net, x)
        elif s == "carry":
            self.choose_eps(net, x, start=self._eps)
        else:  # upward
            old = self._eps
            self._eps = max(old, self.choose_eps(net, x))

    def _loss(self, f, x, g):
        if self._eps is None:
            raise RuntimeError("eps has not been chosen yet: call the loss on a training batch first "
                               "or call loss.choose_eps(net, x)")
        base = self.noise.draw_base(x.unsqueeze(0).cpu(), self.kappa, g)[0].to(device=x.device, dtype=x.dtype)
        return L.cnce_loss(f, x, base, self._eps, self.noise)


class NCELoss(EnergyLoss):
    """NCE with a learned log-normaliser ``c`` (``loss.log_normaliser``, a parameter: give
    ``loss.parameters()`` to the optimiser too) against a Gaussian noise fitted to ``data``
    (default: to the first minibatch), ``nu = kappa`` (:func:`cnce.nn.losses.nce_loss`)."""

    method = "nce"

    def __init__(self, kappa: int = 10, *, data: torch.Tensor | None = None, seed: int = 0, energy: bool = False):
        super().__init__(kappa, seed=seed, energy=energy)
        self.log_normaliser = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))
        self.register_buffer("noise_mean", None)
        self.register_buffer("noise_cov", None)
        if data is not None:
            self._fit(data)

    def _fit(self, data):
        fit = NCEGaussianNoise.fit(data.detach().double().cpu().unsqueeze(0))
        self.noise_mean, self.noise_cov = fit.mean.to(data.device), fit.cov.to(data.device)

    def _before(self, net, x):
        if self.noise_mean is None:
            self._fit(x)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kw):
        for k in ("noise_mean", "noise_cov"):  # buffers that were None when the loss was built
            if prefix + k in state_dict and getattr(self, k) is None:
                setattr(self, k, torch.empty_like(state_dict[prefix + k]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kw)

    def _loss(self, f, x, g):
        if self.noise_mean is None:
            self._fit(x)
        dt = x.dtype
        noise = NCEGaussianNoise(self.noise_mean.to(dt), self.noise_cov.to(dt))
        c = self.log_normaliser.to(dt)
        return L.nce_loss(f, x, self._randn(x, g), c, noise)


class DSMLoss(EnergyLoss):
    """Denoising score matching (Vincent, 2011) at noise level ``sigma``: a positive number,
    or ``"auto"``, :data:`DSM_SIGMA` data scales of the first minibatch."""

    method = "dsm"

    def __init__(self, kappa: int = 10, sigma="auto", *, seed: int = 0, energy: bool = False):
        super().__init__(kappa, seed=seed, energy=energy)
        if isinstance(sigma, str):
            if sigma != "auto":
                raise ValueError(f"sigma must be 'auto' or a positive number; got {sigma!r}")
            self.sigma = None
        else:
            self.sigma = positive_number(sigma, "sigma")

    @property
    def scale(self):
        return float("nan") if self.sigma is None else self.sigma

    def _state(self):
        return {"sigma": self.sigma}

    def _load(self, state):
        self.sigma = state["sigma"]

    def _before(self, net, x):
        if self.sigma is None:
            s = float(data_scale(x.detach().double()))
            self.sigma = DSM_SIGMA * (s if s > 0 else 1.0)

    def _loss(self, f, x, g):
        if self.sigma is None:
            raise RuntimeError("sigma has not been chosen yet: call the loss on a training batch first")
        return L.dsm_loss(f, x, self._randn(x, g), self.sigma)


class SSMLoss(EnergyLoss):
    """Sliced score matching (Song et al., 2019); variance-reduced (SSM-VR) unless
    ``variance_reduction=False``."""

    method = "ssm"

    def __init__(self, kappa: int = 10, *, variance_reduction: bool = True, seed: int = 0, energy: bool = False):
        super().__init__(kappa, seed=seed, energy=energy)
        if not isinstance(variance_reduction, bool):
            raise ValueError(f"variance_reduction must be True or False; got {variance_reduction!r}")
        self.variance_reduction = variance_reduction

    def _loss(self, f, x, g):
        return L.ssm_loss(f, x, self._randn(x, g), variance_reduction=self.variance_reduction)


LOSSES = {"cnce": CNCELoss, "nce": NCELoss, "dsm": DSMLoss, "ssm": SSMLoss}


def make_loss(method: str, *, kappa: int = 10, seed: int = 0, energy: bool = False, eps=None, sigma=None,
              eps_every=None, eps_rule=None, noise=None, ssm_variance_reduction=None, data=None) -> EnergyLoss:
    """The loss object of ``method`` from :func:`cnce.nn.train`'s arguments. An argument that
    does not apply to ``method`` raises ``ValueError`` naming it (``None``: not given)."""
    if method not in LOSSES:
        raise ValueError(f"method must be one of {tuple(LOSSES)} or a loss object (cnce.nn.CNCELoss, ...); got {method!r}")
    check_applies(method, {"eps": (eps, ("cnce",)), "eps_every": (eps_every, ("cnce",)),
                           "eps_rule": (eps_rule, ("cnce",)), "noise": (noise, ("cnce",)), "sigma": (sigma, ("dsm",)),
                           "ssm_variance_reduction": (ssm_variance_reduction, ("ssm",))})
    if method == "cnce":
        return CNCELoss(kappa, "auto" if eps is None else eps, every=eps_every, rule=eps_rule, noise=noise, seed=seed,
                        energy=energy)
    if method == "nce":
        return NCELoss(kappa, data=data, seed=seed, energy=energy)
    if method == "dsm":
        return DSMLoss(kappa, "auto" if sigma is None else sigma, seed=seed, energy=energy)
    return SSMLoss(kappa, variance_reduction=True if ssm_variance_reduction is None else ssm_variance_reduction,
                   seed=seed, energy=energy)
