"""The epsilon heuristic: choose the conditional-noise scale eps before optimising.

The paper (Sec. 2) only sketches it: start small and increase eps until the loss at the
initial parameters is clearly away from its eps = 0 value ``2 log 2``. The authors' code
(their ``gNoise.m``; facts in ``shared/spec/experiment-settings.md``) does, per simulation:

1. ``base`` = mean over dimensions of the data's per-dimension standard deviation;
2. start at the multiplier ``f = 0.5`` (``eps = f * base``);
3. while ``f < 1000`` (tested *before* each step) and fewer than 500 steps were taken:
   evaluate ``J`` at the *initial* parameters with a fixed noise base (so J is a
   deterministic function of eps), then test both conditions afresh:
   if ``|1 - J / (2 log 2)| < 0.1`` (noise too close to the data: J still near 2 log 2),
   multiply eps by 1.2; else if ``J < 0.5 * 2 log 2`` (noise too easy to tell apart),
   multiply eps by 0.5; else stop.

The direction can therefore change from one step to the next (a shrinking run that lands
too close to ``2 log 2`` grows again), and the cap is not a clamp: a run that keeps growing
stops at the first multiplier that is not below 1000, ``0.5 * 1.2^42 = 1058``.

For the Bernoulli flip noise (eps is a flip probability) the rule starts at 1 with factors
1.1 / 0.9, at most 50 steps, and stops once eps is not below 1.1 (the same loop); their code
can thus end at 1.1, which is not a probability, so the result is clipped to the admissible
1 (``EpsRule.limit``). All simulations run the rule together as one batched loop.

The image model's rules (their ``NoiseProcessor.m``) are the same loop with
``search="bisect"``: grow by ``grow`` until an eps that is too large is met, then bisect
between the largest too-small and the smallest too-large eps (``EpsRule`` documents the
variants: where the cap is tested, whether it clamps, whether the search ends on an
evaluated eps). Every rule is an :class:`EpsRule` instance, named in :data:`RULES`.

:func:`resolve_eps` is the one place where a user's eps becomes numbers (validated, bounded
by the noise's ``eps_max``) or an :class:`EpsSearch` (the noise's declared rule, or a given
one, bounded the same way, with the prefix settings of :class:`~cnce.options.FitOptions`):
:func:`cnce.fit` calls it once; it is meant for the trainers of ``cnce.nn`` and ``cnce.images`` too
(their rules are :data:`NETWORK_RULE` and :func:`image_rule`, with the caps as data).

Every eps input (``fit``'s ``eps``, ``cnce.nn.CNCELoss``'s ``eps``, the experiments' eps
settings, the network study's labels) is read once by :func:`parse_eps` into an
:data:`EpsSpec`, a tagged union: :class:`Fixed` (given), :class:`Heuristic` (chosen by a rule),
:class:`Multiple` (a multiple of the heuristic's eps) or :class:`Schedule` (re-chosen while
training); code matches on these types. :func:`format_eps` writes a spec as text;
:class:`EpsSetting` is the experiments' view of a :class:`Heuristic` or :class:`Multiple`.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Union

import torch

from ._validation import _describe
from .constraints import Integer, Real, _is_bool, validate, validate_fields
from .errors import InputError, InputTypeError
from .losses import LOG4

__all__ = ["EpsSpec", "Fixed", "Heuristic", "Multiple", "Schedule", "parse_eps", "format_eps", "eps_label",
           "parse_eps_label", "EpsRule", "EpsSearch", "EpsSetting", "AUTHORS_RULE", "BERNOULLI_RULE", "SCALE_RULE", "NETWORK_RULE",
           "IMAGE_AUTHORS_RULE", "IMAGE_CARRY_RULE", "IMAGE_LAYER_CAPS", "RULES", "PILOT", "image_rule",
           "resolve_eps", "data_scale", "choose_eps"]

SEARCHES = ("scale", "bisect")


@dataclass(frozen=True)
class EpsRule:
    """Parameters of the epsilon heuristic (defaults: the authors' continuous-data rule).

    J is *too close* to ``2 log 2`` when ``|1 - J / (2 log 2)| < near`` (eps too small) and
    *too far* when ``J < far * 2 log 2`` (eps too large); the search stops at the first eps
    that is neither. How it moves:

    * ``search="scale"`` (the synthetic rules): multiply eps by ``grow`` (too close) or
      ``shrink`` (too far); both tests afresh at every step.
    * ``search="bisect"`` (the image rules): too close raises the lower bound to eps (0 at
      first) and grows eps by ``grow`` while no upper bound is known, else bisects; too far
      lowers the upper bound to eps and bisects. eps is ``f * unit`` with the multiplier
      ``f`` tracked (``shrink`` is not used).

    Where the search stops: while ``eps < cap`` is tested *before* each evaluation, and at
    most ``max_steps`` evaluations, each followed by a step (the synthetic rules; a run that
    keeps growing ends on the first eps at or above the cap, not evaluated there). With
    ``end_evaluated`` (the authors' image rule) the first eps is always evaluated, ``eps <
    cap`` is tested *after* each evaluation and no step follows the last one: the result is
    the last eps evaluated. With ``clamp`` a step past the cap lands on the cap, and the
    search stops there once the cap is itself too close.
    """

    start: float = 0.5  #: initial eps, in units of the data scale (absolute if ``relative=False``)
    grow: float = 1.2  #: factor while J is too close to 2 log 2
    shrink: float = 0.5  #: factor while J is too small (``search="scale"``)
    near: float = 0.1  #: "too close" when ``|1 - J / (2 log 2)| < near``
    far: float = 0.5  #: "too far" when ``J < far * 2 log 2``
    max_steps: int = 500  #: at most this many evaluations of J
    cap: float = 1000.0  #: eps must be below ``cap`` for the search to go on (same units as ``start``)
    relative: bool = True  #: scale start and cap by the data scale
    limit: float | None = None  #: largest admissible eps (absolute): the result is clipped to it; ``None``: no clipping
    search: str = "scale"  #: ``"scale"`` or ``"bisect"`` (see above)
    end_evaluated: bool = False  #: the cap tested after each evaluation, no step after the last one
    clamp: bool = False  #: a step past the cap lands on it

    def __post_init__(self):
        if self.search not in SEARCHES:
            raise InputError(f"search must be one of {SEARCHES}; got {self.search!r}")
        validate_fields(self, dict.fromkeys(("start", "grow", "shrink", "cap"), Real(lo=0, lo_open=True)), prefix="")
        if not (0 <= self.near and 0 <= self.far):
            raise InputError(f"near and far must be >= 0; got near={self.near!r}, far={self.far!r}")
        validate(self.max_steps, Integer(lo=0), "max_steps")
        if self.limit is not None and not self.limit >= 0:
            raise InputError(f"limit must be None or a number >= 0; got {self.limit!r}")

    def replace(self, **changes) -> "EpsRule":
        return dataclasses.replace(self, **changes)

    def bounded(self, upper: float | None) -> "EpsRule":
        """This rule with its result clipped to ``upper`` too (a noise's largest admissible eps)."""
        if upper is None or (self.limit is not None and self.limit <= upper):
            return self
        return self.replace(limit=upper)


AUTHORS_RULE = EpsRule()
BERNOULLI_RULE = EpsRule(start=1.0, grow=1.1, shrink=0.9, max_steps=50, cap=1.1, relative=False, limit=1.0)
#: The data's scale as eps, with no search (twice the heuristic's starting point); an
#: alternative the eps experiment measures. Flip noise clips it to 1 (its noise's bound).
SCALE_RULE = EpsRule(start=1.0, max_steps=0)
#: The image model's rule, the authors' ``NoiseProcessor.m``. ``eps = f * eps_base`` with ``f``
#: from 1 at every call (pass ``unit=eps_base``), grown x1.15 then bisected, at most 20
#: evaluations of J, ``f < cap`` tested after each (cap 4; 8 for layer 4, ``replace(cap=8.0)``).
IMAGE_AUTHORS_RULE = EpsRule(start=1.0, grow=1.15, near=0.05, far=0.2, max_steps=20, cap=4.0, relative=False,
                             search="bisect", end_evaluated=True)
#: The project's earlier image rule, eps carried over between calls (``replace(start=<previous
#: eps>)``, clipped to the cap; absolute units), grown x1.15 then bisected, never above the cap.
IMAGE_CARRY_RULE = EpsRule(start=1.0, grow=1.15, near=0.05, far=0.2, max_steps=20, cap=4.0, relative=False,
                           search="bisect", clamp=True)
#: The cap of the image rules' multiplier per layer of the image model (the authors' values,
#: 8 for layer 4 and 4 below), for :func:`image_rule`.
IMAGE_LAYER_CAPS = (4.0, 4.0, 4.0, 8.0)
#: The rule of the energy networks (``cnce.nn``), the authors' rule with its cap lowered from
#: 1000 to 4 data scales. At initialisation a network is nearly flat, J stays near ``2 log 2``
#: for any moderate eps, and the authors' cap would let eps grow until the noise leaves the
#: data's region altogether.
NETWORK_RULE = AUTHORS_RULE.replace(cap=4.0)
#: Every named rule, for ``fit(eps_rule=RULES[name])`` and the experiments' ``"rule:<name>"`` settings.
RULES = {"authors": AUTHORS_RULE, "bernoulli": BERNOULLI_RULE, "scale": SCALE_RULE, "network": NETWORK_RULE,
         "image-authors": IMAGE_AUTHORS_RULE, "image-carry": IMAGE_CARRY_RULE}
#: The two-stage rule of the eps experiment (``"rule:pilot"``): the noise's own rule run once at
#: the initial parameters, then again at the resulting estimate. It is not an :class:`EpsRule`
#: (it needs a fit between the two searches); the experiment runner carries it out.
PILOT = "pilot"


def image_rule(layer: int, rule: EpsRule = IMAGE_AUTHORS_RULE, caps=IMAGE_LAYER_CAPS) -> EpsRule:
    """``rule`` with the cap of the image model's ``layer`` (1-based) from ``caps``."""
    validate(layer, Integer(lo=1, hi=len(caps)), "layer")
    return rule.replace(cap=float(caps[layer - 1]))


# ------------------------------------------------------------------ the eps specification
@dataclass(frozen=True)
class Fixed:
    """eps given: a number >= 0 (a Python or numpy scalar, a 0-d tensor) or an ``(S,)``
    tensor/array, one per simulation. Its range is checked where it is used
    (:func:`resolve_eps`: finite, ``>= 0`` or ``> 0``, at most the noise's ``eps_max``)."""

    value: object


@dataclass(frozen=True)
class Heuristic:
    """eps chosen by the heuristic: ``rule`` is a name of :data:`RULES` or :data:`PILOT`,
    or ``None`` (the noise's own rule, or the study's eps in the experiments)."""

    rule: str | None = None

    def __post_init__(self):
        if self.rule is not None and self.rule not in RULES and self.rule != PILOT:
            raise InputError(f"rule must be a name in {sorted([*RULES, PILOT])}; got {self.rule!r}")


@dataclass(frozen=True)
class Multiple:
    """eps a multiple ``factor`` (> 0) of the heuristic's eps of each simulation."""

    factor: float

    def __post_init__(self):
        validate(self.factor, Real(lo=0, lo_open=True), "factor")


@dataclass(frozen=True)
class Schedule:
    """eps re-chosen during training by a trainer's schedule ``name`` (``cnce.nn.CNCELoss``'s
    ``cnce.nn.objectives.SCHEDULES``); ``auto`` says it stands for ``eps="auto"`` (the
    trainer's default schedule)."""

    name: str
    auto: bool = False


EpsSpec = Union[Fixed, Heuristic, Multiple, Schedule]
"""The eps specification, one of :class:`Fixed`, :class:`Heuristic`, :class:`Multiple` and
:class:`Schedule`: every eps input is parsed into one of these by :func:`parse_eps`, once, and
code matches on the type."""
KINDS = (Fixed, Heuristic, Multiple, Schedule)
def _forms(kinds, auto: str, rules: bool, schedules, low: str) -> str:
    forms = []
    if Heuristic in kinds or (Schedule in kinds and auto == "auto"):
        forms.append(f"'{auto}'")
    if Schedule in kinds and schedules:
        forms.append(f"one of {tuple(schedules)}")
    if Multiple in kinds:
        forms.append("'x<factor>' with factor > 0")
    if Heuristic in kinds and rules:
        forms.append(f"'rule:<name>' with a name in {sorted([*RULES, PILOT])}")
    if Fixed in kinds:
        forms.append(f"a number {low}")
    return ", ".join(forms[:-1]) + (" or " if len(forms) > 1 else "") + forms[-1]


def parse_eps(value, *, name: str = "eps", kinds=KINDS, auto: str = "auto", rules: bool = False,
              schedules: tuple[str, ...] = (), default: str | None = None, low: str = ">= 0") -> EpsSpec:
    """The one reader of eps inputs: ``value`` as an :class:`EpsSpec` (Sec. 2's eps: given,
    chosen by the heuristic, a multiple of the heuristic's, or re-chosen while training).

    The one grammar (texts as users type them and as tables store them):

    * an :class:`EpsSpec` -> itself;
    * ``auto`` (the word ``"auto"``; the experiments' tables say ``"default"``) ->
      ``Heuristic()``, or with ``default`` (a trainer's default schedule)
      ``Schedule(default, auto=True)``;
    * ``"rule:<name>"`` (with ``rules``) -> ``Heuristic(name)``, a name of :data:`RULES` or
      :data:`PILOT`;
    * ``"x<f>"`` -> ``Multiple(f)``;
    * a name in ``schedules`` -> :class:`Schedule`;
    * a number (not a ``bool``), a tensor or an array -> :class:`Fixed` (its range is checked
      where it is used).

    ``kinds`` are the types the caller accepts; anything else raises
    :class:`~cnce.errors.InputError` naming ``name``, the value and the accepted forms (``low``
    words the bound of a number). :func:`format_eps` writes a spec back as its text.
    """
    spec = _read(value, auto, schedules, default)
    if (spec is None or not isinstance(spec, tuple(kinds))
            or (isinstance(spec, Heuristic) and spec.rule is not None and not rules)):
        raise InputError(f"{name} must be {_forms(kinds, auto, rules, schedules, low)}; got {value!r}")
    return spec


def _read(value, auto, schedules, default):
    """``value`` as a spec, or ``None`` where it is none of the grammar's forms."""
    if isinstance(value, KINDS):
        return value
    if value is None or _is_bool(value):
        return None
    if not isinstance(value, str):
        return Fixed(value)
    if value == auto:
        return Schedule(default, auto=True) if default is not None else Heuristic()
    if value in schedules:
        return Schedule(value)
    try:
        if value.startswith("rule:"):
            return Heuristic(value[5:])
        if value.startswith("x"):
            return Multiple(float(value[1:]))
    except (ValueError, InputError):
        pass
    return None


def format_eps(spec: EpsSpec) -> str:
    """``spec`` as the text :func:`parse_eps` reads back: ``"default"``, ``"rule:<name>"``,
    ``"x<f:g>"``, the schedule's name, or ``f"{value:g}"`` (a scalar :class:`Fixed`)."""
    if isinstance(spec, Heuristic):
        return "default" if spec.rule is None else f"rule:{spec.rule}"
    if isinstance(spec, Multiple):
        return f"x{spec.factor:g}"
    if isinstance(spec, Schedule):
        return spec.name
    if isinstance(spec, Fixed):
        return f"{float(spec.value):g}"
    raise InputTypeError(f"spec must be a cnce.eps.EpsSpec; got {type(spec).__name__}")


def eps_label(spec) -> str:
    """The variant label of a CNCE run in ``cnce.nn.study``'s rows: ``"eps="`` and the schedule's
    name or the fixed number (``"eps=once"``, ``"eps=0.3"``)."""
    if not isinstance(spec, (Fixed, Schedule)):
        raise InputTypeError(f"spec must be a cnce.eps.Fixed or cnce.eps.Schedule; got {spec!r}")
    return "eps=" + format_eps(spec)


def parse_eps_label(label) -> EpsSpec:
    """A label of :func:`eps_label` back as its spec: ``"eps=0.3"`` -> ``Fixed(0.3)``,
    ``"eps=once"`` -> ``Schedule("once")``."""
    text = label[4:] if isinstance(label, str) and label.startswith("eps=") else ""
    if not text or text in ("auto", "default"):
        raise InputError(f"label must be 'eps=<schedule name or number>'; got {label!r}")
    try:
        return Fixed(float(text))
    except ValueError:
        return Schedule(text)


@dataclass(frozen=True)
class EpsSetting:
    """An eps setting of the experiments, the one grammar of their ``eps_setting`` column:

    * ``"default"``: the study's eps (the heuristic, or a fixed ``Study.cnce_eps``);
    * ``"x<f>"``: ``f`` (> 0) times the heuristic's eps of each simulation (``factor``);
    * ``"rule:<name>"``: another rule, a name of :data:`RULES` or :data:`PILOT` (``rule``).

    ``EpsSetting.parse(text)`` is the only place the text is read; ``str(setting)`` writes it
    (``f"x{f:g}"`` for a multiple)."""

    factor: float | None = None  #: the multiple of ``"x<f>"``; ``None`` otherwise
    rule: str | None = None  #: the rule name of ``"rule:<name>"``; ``None`` otherwise

    def __post_init__(self):
        if self.factor is not None and self.rule is not None:
            raise InputError(f"an eps setting is a multiple or a rule, not both; got factor={self.factor!r}, rule={self.rule!r}")
        validate(self.factor, Real(lo=0, lo_open=True) | None, "factor")
        if self.rule is not None and self.rule not in RULES and self.rule != PILOT:
            raise InputError(f"rule must be a name in {sorted([*RULES, PILOT])}; got {self.rule!r}")

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def parse(text) -> "EpsSetting":
        """``"default"``, ``"x<f>"`` or ``"rule:<name>"`` as an :class:`EpsSetting` (read by
        :func:`parse_eps`); :class:`~cnce.errors.InputError` naming the text otherwise."""
        if isinstance(text, EpsSetting):
            return text
        return EpsSetting.of(parse_eps(text, name="eps setting", kinds=(Heuristic, Multiple), auto="default", rules=True))

    @staticmethod
    def of(spec: "Heuristic | Multiple") -> "EpsSetting":
        """The setting of a :class:`Heuristic` or :class:`Multiple` spec."""
        if isinstance(spec, Multiple):
            return EpsSetting(factor=spec.factor)
        if isinstance(spec, Heuristic):
            return EpsSetting(rule=spec.rule)
        raise InputTypeError(f"spec must be a cnce.eps.Heuristic or cnce.eps.Multiple; got {spec!r}")

    @property
    def spec(self) -> "Heuristic | Multiple":
        """This setting as an :class:`EpsSpec`."""
        return Heuristic() if self.factor is None and self.rule is None else (
            Multiple(self.factor) if self.factor is not None else Heuristic(self.rule))

    @property
    def is_default(self) -> bool:
        return self.factor is None and self.rule is None

    @property
    def multiple(self) -> float:
        """The multiple of the heuristic's eps (1 for ``"default"``, ``f`` for ``"x<f>"``, NaN for a rule)."""
        if self.rule is not None:
            return float("nan")
        return 1.0 if self.factor is None else float(self.factor)

    def sort_key(self) -> tuple:
        """The heuristic first, then the multiples in increasing order, then the rules by name."""
        return (0 if self.is_default else 2 if self.rule is not None else 1, self.multiple if self.factor else 0.0,
                self.rule or "")

    def __str__(self) -> str:
        return format_eps(self.spec)


def resolve_eps(eps, noise=None, *, S: int = 1, rule: EpsRule | None = None, positive: bool = False,
                prefix: int | None = None, margin: float = 0.0, dtype=torch.float64, device=None):
    """The one place where a user's eps becomes numbers or a search.

    Args:
        eps: ``"auto"`` (the heuristic), a number >= 0 (a Python or numpy scalar, or a 0-d
            tensor) or an ``(S,)`` tensor/array.
        noise: a :class:`~cnce.noise.ConditionalNoise` (``None``: unbounded, the authors' rule):
            its ``eps_max`` bounds a given eps and the search's result, and its ``eps_rule`` is
            the search's rule unless ``rule`` is given.
        S: the number of simulations (a scalar eps is expanded to ``(S,)``).
        rule: an :class:`EpsRule` for ``eps="auto"`` instead of the noise's; ``ValueError`` with
            a given eps (a rule applies to the search only).
        positive: require eps > 0 (a trainer whose loss has no eps = 0 limit).
        prefix, margin: the prefix settings of the search (:func:`choose_eps`).
        dtype, device: of the returned tensor.

    Returns:
        an ``(S,)`` tensor in ``[0, noise.eps_max]`` (``(0, ...]`` with ``positive``), or an
        :class:`EpsSearch` whose rule is bounded by ``noise.eps_max``.
    """
    if rule is not None and not isinstance(rule, EpsRule):
        raise InputError(f"eps_rule must be a cnce.eps.EpsRule; got {rule!r}")
    upper = getattr(noise, "eps_max", None)
    low = "> 0" if positive else ">= 0"
    spec = parse_eps(eps, kinds=(Fixed, Heuristic), low=low)
    if isinstance(spec, Heuristic):
        if rule is None:
            rule = getattr(noise, "eps_rule", AUTHORS_RULE)
        return EpsSearch(rule.bounded(upper), prefix, margin)
    if rule is not None:
        raise InputError(f"eps_rule applies to eps='auto' only (the heuristic's search); got eps={eps!r} "
                         f"and eps_rule={rule!r}")
    try:
        e = torch.as_tensor(spec.value, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"eps must be 'auto' or a number {low}; got {eps!r}") from exc
    scalar = e.ndim == 0
    if scalar:
        e = e.expand(S).clone()
    if e.shape != (S,):
        raise InputError(f"eps must be a scalar or have shape ({S},); got shape {tuple(e.shape)}")
    shown = repr(e[0].item()) if scalar else _describe(e)
    if not torch.isfinite(e).all() or (e < 0).any() or (positive and (e == 0).any()):
        raise InputError(f"eps must be finite and {low}; got {shown}")
    if upper is not None and (e > upper).any():
        raise InputError(f"eps must lie in [0, {upper}] for this noise (its eps_max); got {shown}")
    return e


@dataclass(frozen=True)
class EpsSearch:
    """eps still to be chosen, as :func:`cnce.fit` settles it for a backend: the ``rule``
    (already bounded by the noise's largest admissible eps) and the prefix settings of
    :func:`choose_eps` (``prefix=None``: all points)."""

    rule: EpsRule
    prefix: int | None = None
    margin: float = 0.0

    def on_all_points(self) -> "EpsSearch":
        """The same rule with every step decided on all points."""
        return EpsSearch(self.rule)

    def run(self, J_of_eps, x, *, active_only: bool = False, return_trace: bool = False, unit=None):
        """:func:`choose_eps` with this search's rule and prefix settings."""
        return choose_eps(J_of_eps, x, self.rule, active_only=active_only, prefix=self.prefix, margin=self.margin,
                          return_trace=return_trace, unit=unit)


def data_scale(x: torch.Tensor) -> torch.Tensor:
    """Mean over dimensions of the per-dimension standard deviation, per simulation ``(S,)``."""
    return x.std(dim=-2).mean(dim=-1)


@dataclass
class EpsTrace:
    """The path the heuristic took: ``eps[k]`` and ``J[k]`` are ``(S,)`` tensors per step.

    A simulation that has stopped repeats its last entry. The last entry is the chosen eps
    (before clipping to ``EpsRule.limit``) with its J; where the rule stopped at the cap or
    the step limit, that J is evaluated once more for the trace only."""

    eps: list = field(default_factory=list)
    J: list = field(default_factory=list)

    def as_tensors(self):
        return torch.stack(self.eps), torch.stack(self.J)


def choose_eps(J_of_eps, x: torch.Tensor, rule: EpsRule = AUTHORS_RULE, *, return_trace: bool = False,
               active_only: bool = False, prefix: int | None = None, margin: float = 0.0, unit=None):
    """Run the heuristic for all simulations at once (the authors' loop, see the module docstring).

    Args:
        J_of_eps: callable ``eps (S,) -> J (S,)``, the CNCE loss at the initial parameters
            with a fixed noise base; with ``active_only``, ``(eps (n,), sims (n,)) -> J (n,)``
            for the simulations ``sims`` (indices) only; with ``prefix``, it also takes the
            keyword ``n_data`` (``None``: all data points), see below.
        x: data ``(S, N, D)`` (for the data scale).
        rule: an :class:`EpsRule`.
        active_only: evaluate J only for the simulations still searching. The chosen eps is
            the same (each simulation's J depends on its own eps only); the work is not: the
            loop runs until the slowest simulation stops, and most stop after one or two
            evaluations (Gaussian, S = 100, N = 5000: 186 evaluations instead of 500;
            ``benchmarks/eps_active.py``).
        prefix: decide the steps on J of the first ``prefix`` data points (and their noise),
            as the fit's progressive sampling does, then evaluate J on all points at the eps
            reached: where the rule stops there too, that eps is the result; elsewhere the
            loop goes on from there on all points. The result satisfies the rule on all the
            data; it equals the full-data rule's eps wherever the prefix takes the same
            decisions, which it does not always do (``benchmarks/eps_prefix.py``: for 8-12 of
            100 Gaussian simulations at N / 16 without ``margin``; hence
            ``FitOptions.eps_prefix`` is off by default). The trace holds the evaluations on
            all points only. ``None`` (default) or ``prefix >= N``: all points throughout.
        margin: with ``prefix``, a step whose prefix J lies within ``margin`` of one of the
            rule's thresholds (``(1 -+ near) 2 log 2``, ``far 2 log 2``) is decided on all
            points instead, so that sampling noise of the prefix rarely flips a decision.
        unit: the unit of ``rule.start`` and ``rule.cap`` (a number or an ``(S,)`` tensor),
            instead of the data scale (``rule.relative``) or 1: e.g. the image rule's
            ``eps_base``.

    Returns:
        ``eps (S,)``, and the :class:`EpsTrace` if ``return_trace``.
    """
    S, N = x.shape[0], x.shape[-2]
    if unit is not None:
        unit = torch.as_tensor(unit, dtype=x.dtype, device=x.device).expand(S)
    elif rule.relative:
        unit = data_scale(x)
        unit = torch.where(unit > 0, unit, torch.ones_like(unit))
    else:
        unit = torch.ones(S, dtype=x.dtype, device=x.device)
    if rule.search == "bisect":
        if prefix is not None and prefix < N:
            raise InputError("prefix applies to search='scale' rules only")
        eps, trace = _bisect(J_of_eps, rule, unit, active_only)
        if rule.limit is not None:
            eps = eps.clamp(max=rule.limit)
        return (eps, trace) if return_trace else eps
    if prefix is not None:
        prefix = int(prefix)
        if prefix < 1:
            raise InputError(f"prefix must be a positive number of data points; got {prefix}")
        if prefix >= N:
            prefix = None
    if not margin >= 0:
        raise InputError(f"margin must be >= 0; got {margin}")

    def J_where(mask, J, eps, n_data):
        """J with the entries of ``mask`` evaluated at the current ``eps`` (on ``n_data`` points)."""
        kw = {} if prefix is None else {"n_data": n_data}
        if not active_only:
            return torch.where(mask, J_of_eps(eps, **kw), J)
        idx = mask.nonzero().squeeze(1)
        J = J.clone()
        J[idx] = J_of_eps(eps[idx], idx, **kw).to(J)
        return J

    cap = rule.cap * unit
    grow = torch.full_like(unit, rule.grow)
    shrink = torch.full_like(unit, rule.shrink)
    trace = EpsTrace()
    thresholds = [(1.0 - rule.near) * LOG4, (1.0 + rule.near) * LOG4, rule.far * LOG4]

    def run(eps, active, steps, n_data):
        """The authors' loop from ``eps`` for the ``active`` simulations, at most ``steps``
        evaluations; returns eps, J at it (NaN where not evaluated) and the steps taken."""
        J = torch.full_like(eps, float("nan"))  # J at the current eps (NaN: not evaluated)
        taken = 0
        for _ in range(steps):
            active = active & (eps < cap)  # the multiplier is tested before each step
            if not active.any():
                break
            J = J_where(active, J, eps, n_data)
            if n_data is not None and margin > 0:  # too near a threshold to decide on the prefix: all points
                near = active & (torch.stack([(J - t).abs() for t in thresholds]).amin(0) < margin)
                if near.any():
                    J = J_where(near, J, eps, None)
            taken += 1
            if return_trace and n_data is None:
                trace.eps.append(eps.clone())
                trace.J.append(J.clone())
            too_close = (1.0 - J / LOG4).abs() < rule.near  # both conditions re-tested at every step
            too_far = J < rule.far * LOG4
            up = active & too_close
            down = active & ~too_close & too_far
            active = up | down
            eps = torch.where(up, eps * grow, torch.where(down, eps * shrink, eps))
            J = torch.where(active, torch.full_like(J, float("nan")), J)
        return eps, J, taken

    eps = rule.start * unit
    everyone = torch.ones(S, dtype=torch.bool, device=eps.device)
    steps = rule.max_steps
    if prefix is not None:  # decide on the prefix, then go on from there on all points
        eps, _, taken = run(eps, everyone, steps, prefix)
        steps = max(steps - taken + 1, 1)
    eps, J, _ = run(eps, everyone, steps, None)
    if return_trace:
        missing = torch.isnan(J)  # stopped at the cap or the step limit: J at the final eps, for the trace
        if missing.any():
            J = J_where(missing, J, eps, None)
        if not trace.eps or not torch.equal(eps, trace.eps[-1]):
            trace.eps.append(eps.clone())
            trace.J.append(J.clone())
    if rule.limit is not None:
        eps = eps.clamp(max=rule.limit)
    return (eps, trace) if return_trace else eps


def _bisect(J_of_eps, rule: EpsRule, unit: torch.Tensor, active_only: bool):
    """The ``search="bisect"`` loop for all simulations at once (see :class:`EpsRule`):
    multipliers ``f`` with bounds ``lo`` (0 at first) and ``hi`` (none at first), J at ``f * unit``.
    Returns ``eps (S,)`` and the :class:`EpsTrace` of the evaluations (stopped simulations
    repeat their last entry)."""
    S = unit.shape[0]
    cap = torch.full_like(unit, rule.cap)
    f = unit.new_full((S,), rule.start)
    if rule.clamp:
        f = f.clamp(max=rule.cap)
    lo = torch.zeros_like(f)
    hi = torch.full_like(f, float("inf"))
    J = torch.full_like(f, float("nan"))
    active = torch.ones(S, dtype=torch.bool, device=f.device)
    trace = EpsTrace()
    for k in range(rule.max_steps):
        if not rule.end_evaluated and not rule.clamp:
            active = active & (f < cap)  # tested before each evaluation
        if not active.any():
            break
        e = f * unit
        if active_only:
            idx = active.nonzero().squeeze(1)
            J = J.clone()
            J[idx] = J_of_eps(e[idx], idx).to(J)
        else:
            J = torch.where(active, J_of_eps(e), J)
        trace.eps.append(e.clone())
        trace.J.append(J.clone())
        close = (1.0 - J / LOG4).abs() < rule.near
        far = ~close & (J < rule.far * LOG4)
        active = active & (close | far)
        if rule.end_evaluated:  # no step after the last evaluation, nor from the cap
            active = active & (f < cap) & (k + 1 < rule.max_steps)
        up, down = active & close, active & far
        lo = torch.where(up, f, lo)
        hi = torch.where(down, f, hi)
        known = torch.isfinite(hi)
        nxt = torch.where(up & ~known, f * rule.grow, 0.5 * (hi + lo))
        f = torch.where(active, nxt, f)
        if rule.clamp:
            at = active & (f >= cap)
            f = torch.where(at, cap, f)
            active = active & ~(at & (lo >= cap))
    return f * unit, trace
