"""Declarative configurations: one per figure of the paper, at two scales.

A figure is described by the *studies* it draws on (a model together with a data
generator, e.g. the ring model with the authors' radial law) and by *blocks*: rectangular
grids ``methods x N x kappa`` whose entries name a grid of the scale (``"N"``,
``"kappa"``, ...). Resolving a figure at a scale gives concrete *cells*; a cell is one
call of :func:`cnce.fit` with all simulations batched, and yields one results row per
simulation.

Two figures that need the same cell (Fig. 2a-b and 2c-f both contain CNCE at each
``kappa`` and ``N``) share it: results are stored per study, not per figure, so a cell
is computed once.

Scales
------
``quick``  small grids so that each notebook runs in about two minutes on two cores (CI and
           the default book build);
``paper``  the grids of the paper (Section 3.2, Supplementary C): 100 simulations,
           ``N`` in {100, 500, 1000, 5000, 10000, 20000}, ``kappa`` in {2, 6, 10, 20}, and the
           noise-to-data sweep ``kappa`` in {2, 4, 6, 8, 10, 20, 40, 60} at ``N = 5000`` (the
           value in the paper's text; the authors' code defaults to 500).

The experiment ``eps`` (beyond the paper) adds a third axis, the noise scale: a cell's
``eps`` is ``"default"`` (the study's eps: the heuristic, or ``Study.cnce_eps``), a fixed
multiple ``"x<f>"`` of the heuristic's eps of each simulation (the heuristic cell of the same
``N`` and ``kappa`` is computed first and its eps read from the store), or ``"rule:<name>"``,
an alternative rule of :data:`EPS_RULES`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..constraints import Integer, validate
from ..eps import PILOT, RULES, EpsRule, EpsSetting

__all__ = [
    "Scale",
    "Study",
    "Block",
    "Figure",
    "Cell",
    "ExperimentConfig",
    "SCALES",
    "STUDIES",
    "FIGURES",
    "KAPPA_METHODS",
    "get_config",
    "experiment_names",
    "EPS_RULES",
    "PILOT_RULES",
    "eps_factor",
    "EpsSetting",
]

#: Methods whose fit takes a number of noise samples per data point.
KAPPA_METHODS = ("cnce", "nce")


@dataclass(frozen=True)
class Scale:
    """The grids that a scale resolves the symbolic block entries to."""

    name: str
    n_sims: int
    N: tuple[int, ...]
    kappa: tuple[int, ...]
    kappa_sweep: tuple[int, ...]
    N_fixed: tuple[int, ...]
    ring_kappa: tuple[int, ...] = (10,)
    #: the eps experiment: sample sizes and multiples of the heuristic's eps (1 is the
    #: heuristic's own cell, ``"default"``, and is not repeated here)
    eps_N: tuple[int, ...] = ()
    eps_factors: tuple[float, ...] = ()

    @property
    def N_max(self) -> int:
        """Data are drawn once per simulation at this size; smaller N take prefixes."""
        return max(self.N + self.N_fixed + self.eps_N)

    @property
    def eps_settings(self) -> tuple[str, ...]:
        """The eps axis of the eps experiment: the heuristic, the fixed multiples, the other rules."""
        return tuple(str(e) for e in (EpsSetting(), *(EpsSetting(factor=f) for f in self.eps_factors),
                                      *(EpsSetting(rule=r) for r in EPS_RULES)))

    @property
    def kappa_max(self) -> int:
        return max(self.kappa + self.kappa_sweep + self.ring_kappa)


@dataclass(frozen=True)
class Study:
    """A model family with its constructor arguments and data generator options.

    ``family`` names a constructor in :mod:`cnce.models`; ``model_kwargs`` go to it and
    ``sample_kwargs`` to ``model.sample``. Studies with the same ``family`` share ground
    truth, initialisations and noise (their seeds derive from the family), so that e.g. the
    two ring generators differ only in the data. ``data_of`` names the study whose data seed
    this one uses (default: its own name), so that two studies can also share their data;
    ``cnce_eps`` fixes CNCE's noise scale instead of the heuristic (``None``: ``eps="auto"``).
    """

    name: str
    family: str
    model_kwargs: tuple = ()
    sample_kwargs: tuple = ()
    label: str = ""
    data_of: str = ""
    cnce_eps: float | None = None
    #: largest multiple of the heuristic's eps in the eps experiment (flip noise: eps <= 1,
    #: and the heuristic mostly picks 1, so the grid stops at 1)
    eps_factor_max: float | None = None


@dataclass(frozen=True)
class Block:
    """``methods x N x kappa (x eps)``; ``N``, ``kappa`` and ``eps`` name grids of a :class:`Scale`.

    ``eps`` (CNCE only) names a tuple of eps settings (see :class:`Cell`); ``None``: the
    study's own eps. With ``if_supported`` the methods a study's model lacks are skipped
    (e.g. score matching for a model that is not smooth)."""

    methods: tuple[str, ...]
    N: str = "N"
    kappa: str | None = "kappa"
    eps: str | None = None
    if_supported: bool = False


@dataclass(frozen=True)
class Figure:
    """The declarative description of one figure (or panel group) of the paper."""

    name: str
    figure: str
    description: str
    studies: tuple[str, ...]
    blocks: tuple[Block, ...]


@dataclass(frozen=True, order=True)
class Cell:
    """One batched fit. ``kappa`` is ``None`` for methods without noise (MLE).

    ``eps`` (CNCE): ``"default"`` (the study's eps), ``"x<f>"`` (``f`` times the heuristic's
    eps of each simulation at this ``N`` and ``kappa``) or ``"rule:<name>"`` (a rule of
    :data:`EPS_RULES`)."""

    study: str
    method: str
    kappa: int | None
    N: int
    eps: str = "default"

    @property
    def eps_setting(self) -> EpsSetting:
        """``eps`` parsed (:class:`cnce.eps.EpsSetting`)."""
        return EpsSetting.parse(self.eps)

    def sort_key(self):
        # the heuristic's cell of an (N, kappa) runs before the fixed multiples that read its eps
        order, f, _ = self.eps_setting.sort_key()
        return (self.study, self.method, -1 if self.kappa is None else self.kappa, self.N, order, f, self.eps)

    def key(self) -> tuple:
        if self.eps_setting.is_default:
            return (self.method, self.N, self.kappa)
        return (self.method, self.N, self.kappa, self.eps)

    def __str__(self) -> str:
        k = "" if self.kappa is None else f" kappa={self.kappa}"
        e = "" if self.eps_setting.is_default else f" eps={self.eps}"
        return f"{self.study} {self.method}{k} N={self.N}{e}"


def eps_factor(setting: str) -> float:
    """The multiple of the heuristic's eps in an eps setting: ``"x0.5"`` -> 0.5, ``"default"`` -> 1.0;
    NaN for another rule (:attr:`cnce.eps.EpsSetting.multiple`). Raises ``ValueError`` naming a
    malformed setting or a rule that the eps experiment does not measure."""
    e = EpsSetting.parse(setting)
    if e.rule is not None and e.rule not in EPS_RULES:
        raise ValueError(f"eps setting must be 'default', 'x<factor>' with factor > 0 or 'rule:<name>' with a name "
                         f"in {sorted(EPS_RULES)}; got {setting!r}")
    return e.multiple


@dataclass(frozen=True)
class ExperimentConfig:
    """A figure resolved at a scale: concrete cells, simulations and seed."""

    name: str
    figure: str
    description: str
    scale: str
    seed: int
    n_sims: int
    N_max: int
    kappa_max: int
    studies: tuple[str, ...]
    cells: tuple[Cell, ...] = field(repr=False)

    def cells_of(self, study: str) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.study == study)


SCALES: dict[str, Scale] = {
    "quick": Scale(
        name="quick",
        n_sims=20,
        N=(100, 250, 500, 1000),
        kappa=(2, 10),
        kappa_sweep=(2, 6, 10, 20),
        N_fixed=(500,),
        eps_N=(250, 1000),
        eps_factors=tuple(round(30 ** (k / 4), 4) for k in (-4, -3, -2, -1, 1, 2, 3, 4)),
    ),
    "paper": Scale(
        name="paper",
        n_sims=100,
        N=(100, 500, 1000, 5000, 10000, 20000),
        kappa=(2, 6, 10, 20),
        kappa_sweep=(2, 4, 6, 8, 10, 20, 40, 60),
        N_fixed=(5000,),
        eps_N=(500, 5000),
        eps_factors=tuple(round(30 ** (k / 7), 4) for k in range(-7, 8) if k != 0),
    ),
}

STUDIES: dict[str, Study] = {
    s.name: s
    for s in (
        Study("gaussian", "gaussian", (("dim", 5),), label="Gaussian (D = 5)"),
        Study("ica", "ica", (("dim", 4),), label="ICA (D = 4)"),
        Study("ring-exact", "ring", (("dim", 5),), (("radial", "exact"),), label="Ring (D = 5), exact sampler"),
        Study("ring-authors", "ring", (("dim", 5),), (("radial", "authors"),), label="Ring (D = 5), authors' generator"),
        Study("lognormal", "lognormal", (), label="Log-normal"),
        Study("bernoulli", "bernoulli", (), label="Bernoulli"),
        # the same problems with a fixed flip probability: the heuristic picks eps = 1 on these
        # data (every bit flipped), where CNCE equals MLE at every kappa
        Study("bernoulli-eps0.2", "bernoulli", (), label="Bernoulli, fixed eps = 0.2", data_of="bernoulli", cnce_eps=0.2),
        # the eps experiment: the same problems (truth, data, initialisation, noise) as the studies
        # above, in tables of their own (their cells have an eps axis)
        Study("eps-gaussian", "gaussian", (("dim", 5),), label="Gaussian (D = 5)", data_of="gaussian"),
        Study("eps-ica", "ica", (("dim", 4),), label="ICA (D = 4)", data_of="ica"),
        Study("eps-ring-exact", "ring", (("dim", 5),), (("radial", "exact"),), label="Ring, exact sampler", data_of="ring-exact"),
        Study("eps-ring-authors", "ring", (("dim", 5),), (("radial", "authors"),), label="Ring, authors' generator",
              data_of="ring-authors"),
        Study("eps-lognormal", "lognormal", (), label="Log-normal", data_of="lognormal"),
        Study("eps-bernoulli", "bernoulli", (), label="Bernoulli", data_of="bernoulli", eps_factor_max=1.0),
    )
}

#: Other eps rules that the eps experiment measures against the authors' heuristic, each an
#: :class:`~cnce.eps.EpsRule` of :data:`cnce.eps.RULES`; none uses the ground truth or a likelihood.
#:
#: * ``"scale"``: eps is the data's scale (the mean over dimensions of the per-dimension
#:   standard deviation), with no search: twice the heuristic's starting point
#:   (:data:`cnce.eps.SCALE_RULE`; flip noise: clipped to 1).
#: * ``"pilot"`` (listed in :data:`PILOT_RULES`): two-stage; fit once with the heuristic, then
#:   rerun the heuristic's search (the noise's own rule) with J evaluated at that estimate
#:   (instead of at the arbitrary initial parameters) and refit from the estimate.
EPS_RULES: dict[str, EpsRule | None] = {"scale": RULES["scale"], PILOT: None}
#: the rules of :data:`EPS_RULES` that run the noise's own rule twice, the second time from a pilot fit
PILOT_RULES = frozenset({PILOT})


FIGURES: dict[str, Figure] = {
    f.name: f
    for f in (
        Figure(
            "consistency",
            "Fig. 2a-b",
            "CNCE at each kappa and MLE against N (Gaussian and ICA)",
            ("gaussian", "ica"),
            (Block(("cnce",), "N", "kappa"), Block(("mle",), "N", None)),
        ),
        Figure(
            "nce",
            "Fig. 2c-f",
            "CNCE against NCE: against N at each kappa, and against kappa at fixed N",
            ("gaussian", "ica"),
            (
                Block(("cnce", "nce"), "N", "kappa"),
                Block(("cnce", "nce"), "N_fixed", "kappa_sweep"),
                Block(("mle",), "N", None),
            ),
        ),
        Figure(
            "ring",
            "Fig. 3",
            "Ring model in 5-D at kappa = 10: CNCE, NCE and MLE under both data generators",
            ("ring-exact", "ring-authors"),
            (Block(("cnce", "nce"), "N", "ring_kappa"), Block(("mle",), "N", None)),
        ),
        Figure(
            "eps",
            "beyond",
            "How much eps matters: CNCE at fixed multiples of the heuristic's eps, against MLE and score matching",
            ("eps-gaussian", "eps-ica", "eps-ring-exact", "eps-ring-authors", "eps-lognormal", "eps-bernoulli"),
            (Block(("cnce",), "eps_N", "ring_kappa", eps="eps_settings"), Block(("mle", "sm"), "eps_N", None, if_supported=True)),
        ),
        Figure(
            "supplementary",
            "Supp. Fig. 1",
            "Log-normal and Bernoulli consistency: CNCE at each kappa and MLE (Bernoulli also at a fixed eps = 0.2)",
            ("lognormal", "bernoulli", "bernoulli-eps0.2"),
            (Block(("cnce",), "N", "kappa"), Block(("mle",), "N", None)),
        ),
    )
}


def _model_methods(study: Study) -> tuple[str, ...]:
    from ..models import model_class

    return model_class(study.family)(**dict(study.model_kwargs)).methods


def experiment_names() -> tuple[str, ...]:
    return tuple(FIGURES)


def _check_choice(value, choices, name):
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}; got {value!r}")


def get_config(name: str, scale: str = "quick", seed: int = 0) -> ExperimentConfig:
    """Resolve figure ``name`` at ``scale`` into concrete cells.

    Raises ``ValueError`` naming the argument for an unknown figure, scale or a bad seed.
    """
    _check_choice(name, FIGURES, "name")
    _check_choice(scale, SCALES, "scale")
    validate(seed, Integer(lo=0), "seed")
    fig, sc = FIGURES[name], SCALES[scale]
    cells = set()
    for study in fig.studies:
        st = STUDIES[study] if study in STUDIES else None
        for b in fig.blocks:
            Ns = getattr(sc, b.N)
            for method in b.methods:
                if b.if_supported and st is not None and method not in _model_methods(st):
                    continue
                kappas = getattr(sc, b.kappa) if (b.kappa is not None and method in KAPPA_METHODS) else (None,)
                settings = getattr(sc, b.eps) if (b.eps is not None and method == "cnce") else ("default",)
                if st is not None and st.eps_factor_max is not None:
                    settings = tuple(e for e in settings if not eps_factor(e) > st.eps_factor_max)
                for N in Ns:
                    for kappa in kappas:
                        for e in settings:
                            cells.add(Cell(study, method, kappa, int(N), e))
    cells = tuple(sorted(cells, key=Cell.sort_key))
    return ExperimentConfig(
        name=name,
        figure=fig.figure,
        description=fig.description,
        scale=scale,
        seed=seed,
        n_sims=sc.n_sims,
        N_max=sc.N_max,
        kappa_max=sc.kappa_max,
        studies=fig.studies,
        cells=cells,
    )
