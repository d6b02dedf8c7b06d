"""The four losses as ``torch.nn.Module`` objects that own their random numbers.

Each is called as ``loss(log_phi, x)`` on a minibatch ``x (B, D)`` (checked and cast as
:func:`cnce.nn.train` checks its data) and returns a scalar to minimise (``reduction`` as in
torch's losses); it draws its noise (noise points, perturbations or projections, ``kappa``
per data point) on the data's device, from torch's global generator, or with ``seed`` from a
generator of its own saved in its ``state_dict`` with everything else it has chosen (CNCE's
eps, DSM's sigma, NCE's noise), so that a loop resumed from ``loss.load_state_dict``
continues exactly as the uninterrupted one. :func:`cnce.nn.train` is a loop over these
objects; your own loop runs the same code::

    loss = cnce.nn.CNCELoss(kappa=10)                   # eps="auto": the study's default rule
    opt = torch.optim.Adam(list(net.parameters()) + list(loss.parameters()), lr=5e-3)
    for xb in batches:
        opt.zero_grad(); loss(net, xb).backward(); opt.step()

``energy=True`` serves networks that return an energy ``E = -log phi`` (the convention of
most energy-based-model libraries). The functional forms are :mod:`cnce.nn.losses`.

CNCE's eps (Eq. 13's noise scale) with ``eps="auto"`` follows :data:`DEFAULT_SCHEDULE`
(0.3 data scales, :data:`DEFAULT_FACTOR`, chosen by the study: of the first minibatch, then
re-checked on all rows of the first :data:`DEFAULT_WARMUP` minibatches); the
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

import warnings

import torch

from .._validation import check_applies, check_positive_int, check_rows
from ..constraints import Boolean, validate
from ..errors import InputError, InputTypeError
from ..eps import NETWORK_RULE, EpsRule, EpsSpec, Fixed, Schedule, choose_eps, data_scale, parse_eps, resolve_eps
from ..noise import ConditionalNoise, GaussianNoise, NCEGaussianNoise
from ._checks import as_number, check_seed, positive_number
from . import losses as L

__all__ = ["CNCELoss", "NCELoss", "DSMLoss", "SSMLoss", "EnergyLoss", "SCHEDULES", "DEFAULT_SCHEDULE", "DEFAULT_FACTOR",
           "EPS_CAP",
           "DSM_SIGMA", "DEFAULT_WARMUP", "RECHECK_TOL", "STALL_CALLS", "make_loss"]

#: the heuristic's cap for networks, in data scales: at initialisation a network is nearly
#: flat, J stays near ``2 log 2`` for any moderate eps, and the authors' cap (1000 data
#: scales) would let eps grow until the noise leaves the data's region
EPS_CAP = NETWORK_RULE.cap
#: DSM's default noise level, in data scales of the first minibatch
DSM_SIGMA = 0.1
SCHEDULES = ("once", "rechoose", "carry", "upward", "scale")
#: the schedules that run the heuristic again every ``every`` calls
RECHOOSING = ("rechoose", "carry", "upward")
#: what ``eps="auto"`` means: the candidate of the eps-rule study of notebook 08
#: (``data/results/paper/nn-study.csv``, 5 seeds, 8 cases) that is never significantly below
#: the best fixed eps of any case and has the highest mean: eps = 0.3 data scales, no search
#: (the heuristic's schedules chose eps too large for the toys' fine detail at that budget)
DEFAULT_SCHEDULE = "scale"
#: the factor of ``eps="auto"`` when :data:`DEFAULT_SCHEDULE` is ``"scale"``
DEFAULT_FACTOR = 0.3
#: calls between two runs of the heuristic for the re-choosing schedules (``every=None``)
DEFAULT_EVERY = 100
#: calls over which an automatic eps is re-checked against the data seen so far
DEFAULT_WARMUP = 20
#: the relative difference in data scale that makes the warm-up choose eps again
RECHECK_TOL = 0.1
#: calls without a change of NCE's log-normaliser after which it counts as stalled
STALL_CALLS = 100
#: rows kept (from all warm-up batches together) for re-running a searched eps rule
POOL_ROWS = 1024


class EnergyLoss(torch.nn.Module):
    """What the four losses share: ``kappa``, the random numbers, the energy adapter, the
    input checks, ``reduction`` and the call count.

    Args:
        kappa: random draws per data point (an integer >= 1).
        seed: ``None`` (default): the noise follows torch's global generator (so
            ``torch.manual_seed`` sets it, as for torch's own layers); an integer >= 0: a
            generator of the loss's own, seeded with it, created on the device of the first
            batch and saved in the ``state_dict`` (a loop resumed from ``load_state_dict``
            continues exactly as the uninterrupted one).
        generator: a ``torch.Generator`` to draw from instead (on the data's device; its
            state is the caller's to save). At most one of ``seed`` and ``generator``.
        energy: the network returns energies ``E = -log phi``.
        reduction: ``"mean"`` (default: the mean over the batch, the paper's loss),
            ``"sum"`` or ``"none"`` (one value per data point), as in torch's losses.

    Every call checks the batch as :func:`cnce.nn.train` checks its data (an ``(B, D)``
    array of real numbers, finite; cast to the network's dtype and moved to its device) and,
    on the first call, that the network accepts it; errors are
    :class:`cnce.errors.InputError` / :class:`~cnce.errors.InputTypeError` naming ``x``.
    """

    method = ""

    def __init__(self, kappa: int = 10, *, seed: int | None = None, generator: torch.Generator | None = None,
                 energy: bool = False, reduction: str = "mean"):
        super().__init__()
        self.kappa = check_positive_int(kappa, "kappa")
        if seed is not None and generator is not None:
            raise InputError(f"give seed or generator, not both; got seed={seed!r} and a generator")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise InputTypeError(f"generator must be a torch.Generator or None; got {type(generator).__name__}")
        self.seed = None if seed is None else check_seed(seed)
        validate(energy, Boolean(), "energy", note=" (True: the network returns E = -log phi)")
        if reduction not in L.REDUCTIONS:
            raise InputError(f"reduction must be one of {L.REDUCTIONS}; got {reduction!r}")
        self.energy = energy
        self.reduction = reduction
        self._generator = generator
        self._own = seed is not None
        if self._own:  # on the CPU until the first batch says where the data live
            self._generator = torch.Generator().manual_seed(self.seed)
        self.calls = 0
        self.dim = None

    @property
    def generator(self) -> torch.Generator | None:
        """The generator the noise is drawn from (``None``: torch's global one)."""
        return self._generator

    def _gen_for(self, device) -> torch.Generator | None:
        g = self._generator
        if g is None or g.device.type == torch.device(device).type:
            return g
        if self._own and self.calls == 0:  # not used yet: seed a generator where the data are
            self._generator = torch.Generator(device=device).manual_seed(self.seed)
            return self._generator
        raise InputError(f"the loss's generator is on {g.device} but x is on {torch.device(device)}; "
                         "keep the data on one device (or pass a generator on the data's device)")

    # -- what the subclasses add to the saved state
    def _state(self) -> dict:
        return {}

    def _load(self, state: dict) -> None:
        pass

    def get_extra_state(self):
        own = self._own and self._generator is not None
        return {"generator": self._generator.get_state() if own else None,
                "generator_device": str(self._generator.device) if own else None,
                "calls": self.calls, "kappa": self.kappa, "dim": self.dim,
                "energy": self.energy, "method": self.method, **self._state()}

    def set_extra_state(self, state):
        if state.get("method") != self.method or state.get("kappa") != self.kappa:
            raise InputError(f"state was saved by a {state.get('method')!r} loss with kappa={state.get('kappa')}; "
                             f"this is a {self.method!r} loss with kappa={self.kappa}")
        if state.get("generator") is not None:
            if not self._own:
                raise InputError("state was saved by a loss with a seed of its own; this loss has none "
                                 "(build it with seed=... to continue that run)")
            g = torch.Generator(device=state.get("generator_device") or "cpu")
            g.set_state(state["generator"])
            self._generator = g
        self.calls = state["calls"]
        self.dim = state.get("dim")
        self._load(state)

    def log_phi_of(self, net):
        """The unnormalised log-density ``log phi``: the network, or its negative with ``energy=True``."""
        return (lambda u: -net(u)) if self.energy else net

    @property
    def scale(self) -> float:
        """The noise scale in use (CNCE's eps, DSM's sigma; NaN for NCE and SSM)."""
        return float("nan")

    def check_batch(self, net, x) -> torch.Tensor:
        """``x`` checked and cast as :func:`cnce.nn.train` checks its data: an ``(B, D)`` array
        of finite real numbers (integers cast; booleans and complex numbers refused) in the
        network's dtype and on its device; ``D`` the same on every call."""
        dtype, device = _dtype_device(net, x)
        x = check_rows(x, name="x", D=self.dim, dtype=dtype, device=device, booleans=False)
        if self.dim is None:
            _probe_once(self.log_phi_of(net), x)
            self.dim = x.shape[1]
        return x

    def forward(self, net, x: torch.Tensor, *, generator: torch.Generator | None = None) -> torch.Tensor:
        """The loss on the minibatch ``x (B, D)``. With ``generator``, an evaluation (e.g. on
        validation data): the random numbers come from it, and nothing is chosen or counted."""
        x = self.check_batch(net, x)
        training = generator is None
        if training:
            self._before(net, x)
            self.calls += 1
            g = self._gen_for(x.device)
        else:
            if not isinstance(generator, torch.Generator):
                raise InputTypeError(f"generator must be a torch.Generator; got {type(generator).__name__}")
            g = generator
            if g.device.type != x.device.type:  # an evaluation generator: draw where it lives
                return self._loss(self.log_phi_of(net), x, g, draw_on=g.device)
        return self._loss(self.log_phi_of(net), x, g)

    def _before(self, net, x):
        pass

    def _randn(self, x, g, draw_on=None):
        dev = x.device if draw_on is None else draw_on
        return torch.randn(x.shape[0], self.kappa, x.shape[1], generator=g, dtype=x.dtype, device=dev).to(x.device)


def _dtype_device(net, x):
    """The network's parameter dtype and device (a callable without parameters: ``x``'s
    floating dtype, else float64, on ``x``'s device)."""
    if isinstance(net, torch.nn.Module):
        p = next(iter(net.parameters()), None)
        if p is not None:
            return (p.dtype if p.is_floating_point() else torch.float32), p.device
    if isinstance(x, torch.Tensor):
        return (x.dtype if x.is_floating_point() else torch.float64), x.device
    return None, None


def _probe_once(f, x):
    """The network on two rows of the first batch: its own error becomes one that names x."""
    try:
        with torch.no_grad():
            L.evaluate(f, x[:2])
    except InputError:
        raise
    except Exception as exc:  # a matmul of the wrong size, ...
        raise InputError(f"x has shape {tuple(x.shape)} (D = {x.shape[1]}) and the network fails on it "
                         f"({type(exc).__name__}: {exc}); is D the network's input dimension?") from exc


class CNCELoss(EnergyLoss):
    """CNCE (Eqs. 8-9) with conditional noise ``y = noise.apply(x, base, eps)`` (Eq. 13:
    ``y = x + eps xi`` by default).

    Args:
        kappa: noise samples per data point.
        eps: ``"auto"`` or ``None`` (:data:`DEFAULT_SCHEDULE`), one of :data:`SCHEDULES`, or
            a positive number (fixed; a 0-d tensor or numpy scalar is accepted).
        every: calls between runs of the heuristic for ``"rechoose"``, ``"carry"`` and
            ``"upward"`` (default :data:`DEFAULT_EVERY`).
        factor: eps in data scales for ``eps="scale"`` (default 1; with ``eps="auto"``
            and a ``"scale"`` default, :data:`DEFAULT_FACTOR`).
        rule: the heuristic (:class:`cnce.eps.EpsRule`; default the authors' rule with cap
            :data:`EPS_CAP` data scales).
        noise: a :class:`cnce.noise.ConditionalNoise` (default :class:`GaussianNoise`).
        warmup: calls over which an automatic eps is re-checked on the data seen so far
            (default :data:`DEFAULT_WARMUP`): eps is chosen on the first batch, and when the
            data scale of all rows seen since differs from the one it was chosen on by more
            than :data:`RECHECK_TOL` (a sorted or unrepresentative first batch), it is chosen
            again on them (``"scale"``: at once; the searched schedules: at the end of the
            warm-up, on rows from every warm-up batch). 0: choose on the first batch only.
        seed, generator, energy, reduction: see :class:`EnergyLoss`.

    ``loss.eps`` is the current eps (``None`` before the first call of an automatic rule);
    ``loss.choose_eps(net, x)`` runs the heuristic on ``x`` now; ``loss.eps_runs`` lists
    ``(call, eps, evaluations of J)`` for every choice, and ``loss.eps_choice`` says how the
    current eps was chosen (schedule, rows and data scale it was chosen on, why).
    """

    method = "cnce"

    def __init__(self, kappa: int = 10, eps="auto", *, every: int | None = None, rule: EpsRule | None = None,
                 factor=None, noise: ConditionalNoise | None = None, warmup: int | None = None,
                 seed: int | None = None, generator: torch.Generator | None = None, energy: bool = False,
                 reduction: str = "mean"):
        super().__init__(kappa, seed=seed, generator=generator, energy=energy, reduction=reduction)
        eps = "auto" if eps is None else eps
        #: eps as :func:`cnce.eps.parse_eps` read it, once: ``Fixed(value)`` or ``Schedule(name)``
        self.spec: EpsSpec = parse_eps(eps, kinds=(Fixed, Schedule), schedules=SCHEDULES, default=DEFAULT_SCHEDULE,
                                       low="> 0")
        if isinstance(self.spec, Schedule) and self.spec.name not in SCHEDULES:  # a spec given as such
            raise InputError(f"eps must be 'auto', one of {SCHEDULES} or a number > 0; got {eps!r}")
        spec = self.spec
        fixed = isinstance(spec, Fixed)
        if every is not None and not (isinstance(spec, Schedule) and spec.name in RECHOOSING):
            raise InputError(f"every applies to the re-choosing eps schedules {RECHOOSING}; "
                             f"got every={every!r} with eps={eps!r}")
        self.every = DEFAULT_EVERY if every is None else check_positive_int(every, "every")
        if factor is not None and not (isinstance(spec, Schedule) and spec.name == "scale"):
            raise InputError(f"factor applies to eps='scale' only; got factor={factor!r} with eps={eps!r}")
        self.factor = (positive_number(factor, "factor") if factor is not None
                       else DEFAULT_FACTOR if isinstance(spec, Schedule) and spec.auto else 1.0)
        if rule is not None and not isinstance(rule, EpsRule):
            raise InputTypeError(f"rule must be a cnce.eps.EpsRule; got {type(rule).__name__}")
        if rule is not None and (fixed or spec.name == "scale"):
            raise InputError(f"rule applies to a searched eps ('auto', 'once', 'rechoose', 'carry', 'upward'); "
                             f"got rule with eps={eps!r}")
        if noise is not None and not isinstance(noise, ConditionalNoise):
            raise InputTypeError(f"noise must be a cnce.noise.ConditionalNoise; got {type(noise).__name__}")
        if warmup is not None and fixed:
            raise InputError(f"warmup applies to an automatic eps; got warmup={warmup!r} with eps={eps!r}")
        self.warmup = DEFAULT_WARMUP if warmup is None else check_positive_int(warmup, "warmup", 0)
        self.noise = GaussianNoise() if noise is None else noise
        # the noise's largest admissible eps bounds a given eps, the searches and the scale rule
        self.rule = (NETWORK_RULE if rule is None else rule).bounded(self.noise.eps_max)
        self._eps = float(resolve_eps(as_number(spec.value, "eps"), self.noise, positive=True)[0]) if fixed else None
        self.eps_runs = []
        self._choice = {"schedule": self.schedule, "eps": self._eps, "rows": 0, "data_scale": None,
                        "call": None, "why": "given" if fixed else "not chosen yet"}
        self._pool = None  # warm-up: rows seen, per-coordinate sums (float64), rows kept for a search

    @property
    def schedule(self) -> str:
        """The eps schedule's name (:data:`SCHEDULES`), or ``"fixed"`` for a given eps (the name
        the loss's state and :attr:`eps_choice` record)."""
        return "fixed" if isinstance(self.spec, Fixed) else self.spec.name

    @property
    def eps(self) -> float | None:
        return self._eps

    @property
    def scale(self) -> float:
        return float("nan") if self._eps is None else self._eps

    @property
    def eps_choice(self) -> dict:
        """How the current eps was chosen: ``schedule``, ``eps``, ``call`` (the call count
        then), ``rows`` and ``data_scale`` of the data it was chosen on, and ``why``."""
        return dict(self._choice)

    def _state(self):
        return {"eps": self._eps, "schedule": self.schedule, "every": self.every, "factor": self.factor,
                "eps_runs": list(self.eps_runs), "choice": dict(self._choice), "warmup": self.warmup,
                "pool": None if self._pool is None else {k: v for k, v in self._pool.items()}}

    def _load(self, state):
        if (state["schedule"], state["every"], state.get("factor")) != (self.schedule, self.every, self.factor):
            raise InputError(f"state was saved with eps schedule {state['schedule']!r} every {state['every']}; "
                             f"this loss has {self.schedule!r} every {self.every}")
        self._eps = state["eps"]
        self.eps_runs = list(state["eps_runs"])
        self._choice = dict(state.get("choice") or self._choice)
        self._pool = state.get("pool")

    def _record(self, e, evaluations, rows, unit, why):
        self._eps = e
        self.eps_runs.append((self.calls, e, evaluations))
        self._choice = {"schedule": self.schedule, "eps": e, "rows": rows, "data_scale": unit, "call": self.calls,
                        "why": why}

    @torch.no_grad()
    def choose_eps(self, net, x: torch.Tensor, *, start: float | None = None, why: str = "on request") -> float:
        """Run the heuristic on the network as it is now and the points ``x (B, D)`` (a
        fixed noise base drawn from the loss's generator), set ``loss.eps`` and return it.
        ``start``: an absolute eps to start from instead of the rule's start."""
        f = self.log_phi_of(net)
        x = x.detach()
        xs = x.unsqueeze(0)
        base = self.noise.draw_base(xs, self.kappa, self._gen_for(x.device))[0]
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
        self._record(e, calls[0], x.shape[0], unit, why)
        return e

    def _scale_eps(self, unit):
        e = self.factor * (unit if unit > 0 else 1.0)
        return min(e, float(self.noise.eps_max)) if self.noise.eps_max is not None else e

    def _pool_add(self, x):
        """Add the batch to the warm-up pool; return the pooled data scale (mean per-coordinate sd)."""
        xd = x.detach().double()
        p = self._pool
        if p is None:
            p = self._pool = {"n": 0, "s1": torch.zeros(x.shape[1], dtype=torch.float64),
                              "s2": torch.zeros(x.shape[1], dtype=torch.float64), "rows": [], "unit0": None}
        p["n"] += x.shape[0]
        p["s1"] = p["s1"] + xd.sum(0).cpu()
        p["s2"] = p["s2"] + (xd**2).sum(0).cpu()
        keep = max(1, POOL_ROWS // max(self.warmup, 1))
        p["rows"].append(x.detach()[:keep].cpu())
        n = p["n"]
        var = (p["s2"] - p["s1"] ** 2 / n) / max(n - 1, 1)
        return float(var.clamp_min(0).sqrt().mean())

    def _before(self, net, x):
        spec, c = self.spec, self.calls
        if isinstance(spec, Fixed):
            return
        s = spec.name
        if self._eps is None:
            unit = float(data_scale(x.detach().double()))
            if self.warmup:
                self._pool_add(x)
                self._pool["unit0"] = unit
            if s == "scale":
                self._record(self._scale_eps(unit), 0, x.shape[0], unit, "the first batch")
            else:
                self.choose_eps(net, x, why="the first batch")
            return
        if self._pool is not None and c < self.warmup:  # re-check on everything seen so far
            unit = self._pool_add(x)
            ref = self._choice["data_scale"] if s == "scale" else self._pool["unit0"]
            off = ref is None or ref <= 0 or abs(unit / ref - 1) > RECHECK_TOL
            if s == "scale" and off:
                self._record(self._scale_eps(unit), 0, self._pool["n"], unit,
                             f"re-checked at call {c}: the data seen so far have another scale than the "
                             f"rows it was chosen on ({unit:.4g} against {ref:.4g})")
            elif s != "scale" and c == self.warmup - 1 and off:
                rows = torch.cat(self._pool["rows"]).to(x.device)
                self.choose_eps(net, rows, why=f"re-checked at call {c} on rows of the first {self.warmup} "
                                               f"batches (data scale {unit:.4g} against {ref:.4g} of the first)")
            if c == self.warmup - 1:
                self._pool = None  # the warm-up is over
        if s not in RECHOOSING or c % self.every:
            return
        match spec:
            case Schedule(name="rechoose"):
                self.choose_eps(net, x, why=f"rechoose every {self.every} calls")
            case Schedule(name="carry"):
                self.choose_eps(net, x, start=self._eps, why=f"carry every {self.every} calls")
            case Schedule(name="upward"):
                old = self._eps
                e = self.choose_eps(net, x, why=f"upward every {self.every} calls")
                if old > e:
                    self._eps = old
                    self._choice["eps"] = old

    def _loss(self, f, x, g, draw_on=None):
        if self._eps is None:
            raise RuntimeError("eps has not been chosen yet: call the loss on a training batch first "
                               "or call loss.choose_eps(net, x)")
        xs = x.unsqueeze(0) if draw_on is None else x.unsqueeze(0).to(draw_on)
        base = self.noise.draw_base(xs, self.kappa, g)[0].to(device=x.device, dtype=x.dtype)
        return L.cnce_loss(f, x, base, self._eps, self.noise, reduction=self.reduction)


class NCELoss(EnergyLoss):
    """NCE with a learned log-normaliser ``c`` (``loss.log_normaliser``, a parameter: give
    ``loss.parameters()`` to the optimiser too) against a Gaussian noise fitted to ``data``
    (default: to the first minibatch), ``nu = kappa`` (:func:`cnce.nn.losses.nce_loss`)."""

    method = "nce"

    def __init__(self, kappa: int = 10, *, data: torch.Tensor | None = None, seed: int | None = None,
                 generator: torch.Generator | None = None, energy: bool = False, reduction: str = "mean"):
        super().__init__(kappa, seed=seed, generator=generator, energy=energy, reduction=reduction)
        self.log_normaliser = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))
        self._c_seen = None  # (call, value) when c last moved: a c that never moves is not being trained
        self.register_buffer("noise_mean", None)
        self.register_buffer("noise_cov", None)
        if data is not None:
            self._fit(data)

    def _fit(self, data):
        data = check_rows(data, name="data", booleans=False)
        fit = NCEGaussianNoise.fit(data.detach().double().cpu().unsqueeze(0))
        self.noise_mean, self.noise_cov = fit.mean.to(data.device), fit.cov.to(data.device)

    def _before(self, net, x):
        if self.noise_mean is None:
            self._fit(x)
        c = float(self.log_normaliser.detach())
        if self._c_seen is None or c != self._c_seen[1]:
            self._c_seen = (self.calls, c)
        elif self.calls - self._c_seen[0] == STALL_CALLS and self.log_normaliser.grad is not None:
            warnings.warn(f"NCE's log_normaliser has stayed at {c:g} for {STALL_CALLS} calls although it has a "
                          "gradient: is it in the optimiser? Pass list(net.parameters()) + list(loss.parameters())",
                          RuntimeWarning, stacklevel=3)

    @property
    def stalled_calls(self) -> int:
        """Calls since NCE's log-normaliser last changed (a trained one changes at every step)."""
        return 0 if self._c_seen is None else self.calls - self._c_seen[0]

    def _load_from_state_dict(self, state_dict, prefix, *args, **kw):
        for k in ("noise_mean", "noise_cov"):  # buffers that were None when the loss was built
            if prefix + k in state_dict and getattr(self, k) is None:
                setattr(self, k, torch.empty_like(state_dict[prefix + k]))
        super()._load_from_state_dict(state_dict, prefix, *args, **kw)

    def _loss(self, f, x, g, draw_on=None):
        if self.noise_mean is None:
            self._fit(x)
        dt = x.dtype
        noise = NCEGaussianNoise(self.noise_mean.to(dtype=dt, device=x.device), self.noise_cov.to(dtype=dt, device=x.device))
        c = self.log_normaliser.to(dtype=dt, device=x.device)
        return L.nce_loss(f, x, self._randn(x, g, draw_on), c, noise, reduction=self.reduction)


class DSMLoss(EnergyLoss):
    """Denoising score matching (Vincent, 2011) at noise level ``sigma``: a positive number,
    or ``"auto"``, :data:`DSM_SIGMA` data scales of the first minibatch."""

    method = "dsm"

    def __init__(self, kappa: int = 10, sigma="auto", *, seed: int | None = None,
                 generator: torch.Generator | None = None, energy: bool = False, reduction: str = "mean"):
        super().__init__(kappa, seed=seed, generator=generator, energy=energy, reduction=reduction)
        if sigma is None or isinstance(sigma, str):
            if sigma not in (None, "auto"):
                raise InputError(f"sigma must be 'auto' (or None) or a positive number; got {sigma!r}")
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

    def _loss(self, f, x, g, draw_on=None):
        if self.sigma is None:
            raise RuntimeError("sigma has not been chosen yet: call the loss on a training batch first")
        return L.dsm_loss(f, x, self._randn(x, g, draw_on), self.sigma, reduction=self.reduction)


class SSMLoss(EnergyLoss):
    """Sliced score matching (Song et al., 2019); variance-reduced (SSM-VR) unless
    ``variance_reduction=False``."""

    method = "ssm"

    def __init__(self, kappa: int = 10, *, variance_reduction: bool = True, seed: int | None = None,
                 generator: torch.Generator | None = None, energy: bool = False, reduction: str = "mean"):
        super().__init__(kappa, seed=seed, generator=generator, energy=energy, reduction=reduction)
        validate(variance_reduction, Boolean(), "variance_reduction")
        self.variance_reduction = variance_reduction

    def _loss(self, f, x, g, draw_on=None):
        return L.ssm_loss(f, x, self._randn(x, g, draw_on), variance_reduction=self.variance_reduction,
                          reduction=self.reduction)


LOSSES = {"cnce": CNCELoss, "nce": NCELoss, "dsm": DSMLoss, "ssm": SSMLoss}


def make_loss(method: str, *, kappa: int = 10, seed: int | None = None, energy: bool = False, eps=None, sigma=None,
              eps_every=None, eps_rule=None, noise=None, ssm_variance_reduction=None, data=None) -> EnergyLoss:
    """The loss object of ``method`` from :func:`cnce.nn.train`'s arguments. An argument that
    does not apply to ``method`` raises ``ValueError`` naming it (``None``: not given)."""
    if method not in LOSSES:
        raise InputError(f"method must be one of {tuple(LOSSES)} or a loss object (cnce.nn.CNCELoss, ...); got {method!r}")
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
