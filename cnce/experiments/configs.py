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
"""
from __future__ import annotations

from dataclasses import dataclass, field

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

    @property
    def N_max(self) -> int:
        """Data are drawn once per simulation at this size; smaller N take prefixes."""
        return max(self.N + self.N_fixed)

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


@dataclass(frozen=True)
class Block:
    """``methods x N x kappa``; ``N`` and ``kappa`` name grids of a :class:`Scale`."""

    methods: tuple[str, ...]
    N: str = "N"
    kappa: str | None = "kappa"


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
    """One batched fit. ``kappa`` is ``None`` for methods without noise (MLE)."""

    study: str
    method: str
    kappa: int | None
    N: int

    def sort_key(self):
        return (self.study, self.method, -1 if self.kappa is None else self.kappa, self.N)

    def key(self) -> tuple:
        return (self.method, self.N, self.kappa)

    def __str__(self) -> str:
        k = "" if self.kappa is None else f" kappa={self.kappa}"
        return f"{self.study} {self.method}{k} N={self.N}"


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
    ),
    "paper": Scale(
        name="paper",
        n_sims=100,
        N=(100, 500, 1000, 5000, 10000, 20000),
        kappa=(2, 6, 10, 20),
        kappa_sweep=(2, 4, 6, 8, 10, 20, 40, 60),
        N_fixed=(5000,),
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
    )
}

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
            "supplementary",
            "Supp. Fig. 1",
            "Log-normal and Bernoulli consistency: CNCE at each kappa and MLE (Bernoulli also at a fixed eps = 0.2)",
            ("lognormal", "bernoulli", "bernoulli-eps0.2"),
            (Block(("cnce",), "N", "kappa"), Block(("mle",), "N", None)),
        ),
    )
}


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
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int; got {seed!r}")
    fig, sc = FIGURES[name], SCALES[scale]
    cells = set()
    for study in fig.studies:
        for b in fig.blocks:
            Ns = getattr(sc, b.N)
            for method in b.methods:
                kappas = getattr(sc, b.kappa) if (b.kappa is not None and method in KAPPA_METHODS) else (None,)
                for N in Ns:
                    for kappa in kappas:
                        cells.add(Cell(study, method, kappa, int(N)))
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
