"""Named configurations of the image-model training: ``quick``, ``demo``, ``paper``, ``paper-l3-ensemble``,
``paper-adam``, ``smoke``.

Every configuration follows the authors' code where the paper is silent (see
:mod:`cnce.images.train`): their initialisation (``init="authors"``), dense pooling starts
(``pool_start="dense"``), the rectified layer-3 unit (``l3_nonlinearity="max"``) and their eps
rule restarted from 0.5 at every meta-iteration (``eps_rule="authors"``); the project's earlier
choices stay available as options (``"orthonormal"``, ``"planted"``, ``"linear"``, ``"carry"``).

* ``paper``: the authors' recipe at the paper's sizes (Supp. D.1, Table 1; PCA to ``D = 600``
  fitted on 400k patches, as their ``DataProcessor.m`` does): main sets of
  200k/200k/150k/100k patches, batches of 100k/100k/150k/100k alternating over them, a new main
  set at the first meta-iteration and whenever the (1-based) meta-iteration is a multiple of
  20/21/8/8 (``redraw="authors"``: layer 1 draws three sets, at meta-iterations 1, 20 and 40),
  40/20/20/20 meta-iterations, each one call of their minimiser (``optimizer="cg"``,
  :mod:`cnce.images.cg`: Polak-Ribiere conjugate gradients, 10 near-exact line searches); J of
  the eps rule on 100k points of the batch; the layer-3 input as their code builds it (each
  sample's mean over its 200 layer-2 outputs removed, then a PCA to 196 dimensions fitted on
  400k samples: ``l3_centre="sample"``, ``n_whiten3``). Meant for one GPU
  (``python -m cnce image-train --config paper --device cuda --out DIR``).
* ``paper-l3-ensemble``: ``paper`` with the project's earlier layer-3 input (the ensemble mean
  removed, PCA on 150k samples), the configuration of the committed four-layer runs on the
  bundled photographs (``data/weights/paper*``; their saved configs are named ``paper`` and
  predate the option, which is why a config without ``l3_centre`` reads as ``"ensemble"``).
* ``demo``: the paper's layer widths (K1 = 600, K2 = 200, D3 = 196, K3 = 60, K4 = 30) on a
  CPU budget: fresh patches every meta-iteration (20,000 for layer 1, 5,000 above it; the
  authors' 40/20/20/20 meta-iterations), one pass of Adam minibatches per meta-iteration
  instead of full-batch line searches (full-batch L-BFGS on a few thousand patches overfits
  the first-layer weights within one meta-iteration), J of the eps rule on 2,000 points, and
  PCA to ``D = 200`` instead of 600. Its layer 1 is measured by the ablation of the image
  page (``data/weights/ablation/``: the cell "adam, fresh" of the demo size, 3 seeds). At
  ``D = 600`` each meta-iteration costs 2.5 times the arithmetic (30 instead of 12 TFLOP in
  all, :func:`estimate_flops`). Layer 1 uses a larger Adam step (1e-2) than
  layers 2-4 (1e-3).
* ``quick``: the ``demo`` recipe with few units and a short schedule (a minute or two on a
  CPU); the image notebook trains it when no committed weights are found.
* ``paper-adam``: ``paper`` with two things changed: fresh patches every meta-iteration
  (100k/100k/150k/100k) and one pass of Adam minibatches of 100 per meta-iteration (the
  layer-1 step of ``demo`` scaled by ``sqrt(200/600)``). Meant for one GPU.
* :func:`ablation_config` changes one thing at a time: the optimiser (``"cg"``, ``"lbfgs"``,
  ``"adam"``) and the data schedule (``"main"``: the authors' main sets, ``"fresh"``: fresh
  patches every meta-iteration) of a base configuration.
* ``smoke``: the ``paper`` recipe at tiny sizes, the CPU test of the GPU command.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from cnce.eps import IMAGE_LAYER_CAPS
from cnce.constraints import Integer, validate

__all__ = ["ImageConfig", "CONFIGS", "get_config", "ablation_config", "estimate_flops", "OPTIMIZERS", "SCHEDULES"]

OPTIMIZERS = ("cg", "lbfgs", "adam")
SCHEDULES = ("main", "fresh")


@dataclass(frozen=True)
class ImageConfig:
    name: str
    # data
    patch: int = 32
    D: int = 600
    n_whiten: int = 50_000
    # layer sizes (Table 1)
    K1: int = 600
    K2: int = 200
    D3: int = 196
    K3: int = 60
    K4: int = 30
    # initialisation (ImageNetwork): "authors" (randn / sqrt(D_in - 1) features, thresholds in
    # [-2, -1], small dense pooling) or "orthonormal" (rows of norm init_scale, thresholds b_init)
    init: str = "authors"
    init_scale: float = 1.0
    b_init: float = -2.0
    # how a pooling layer (2, 4) starts: "dense" (the initialisation; authors) or "planted"
    # (weight 1 on one unit of the layer below, start_pooling_layer)
    pool_start: str = "dense"
    # layer-3 unit while training layer 3: "max" (authors' rectifying activator) or "linear"
    l3_nonlinearity: str = "max"
    # the layer-3 input (the whitening of z2 before the intermediate gain control):
    # "ensemble" removes the ensemble mean of z2 before the PCA (the default, so that a saved
    # config without this key reads as what it computed); "sample" first removes each sample's mean over
    # its K2 layer-2 outputs (the authors' code), then the ensemble mean. The PCA is fitted on
    # `n_whiten3` samples (None: max(n_patches[2], 4 K2), the size of a saved config without this key).
    l3_centre: str = "ensemble"
    n_whiten3: int | None = None
    # CNCE
    kappa: int = 6
    eps_rule: str = "authors"  # "authors": NoiseProcessor.m, from eps_base every meta-iteration; "carry"
    eps_base: float = 0.5
    eps_cap: tuple[float, float, float, float] = IMAGE_LAYER_CAPS  # cap of the multiplier f per layer
    eps_n: int = 100_000  # data points on which the epsilon rule evaluates J (authors: the batch)
    # schedule per layer: patches per meta-iteration (the batch), meta-iterations, optimiser
    # steps each; `main_set` patches are drawn anew at the meta-iterations `redraw` names and
    # the batches alternate over them (authors); main_set=None draws fresh patches every
    # meta-iteration. redraw="authors": at the first meta-iteration and whenever the 1-based
    # meta-iteration is a multiple of `epoch` (CNCEstimator.m); "blocks": every `epoch`
    # meta-iterations from the first (the project's earlier schedule)
    n_patches: tuple[int, int, int, int] = (100_000, 100_000, 150_000, 100_000)
    main_set: tuple[int, int, int, int] | None = (200_000, 200_000, 150_000, 100_000)
    epoch: tuple[int, int, int, int] = (20, 21, 8, 8)
    redraw: str = "authors"
    meta_iters: tuple[int, int, int, int] = (40, 20, 20, 20)
    # "cg": the authors' minimiser, `steps` line searches per meta-iteration (cnce.images.cg);
    # "lbfgs": torch's L-BFGS, `steps` iterations with strong-Wolfe line searches; "adam": one
    # pass of minibatches of `batch` per meta-iteration
    optimizer: str = "cg"
    steps: int = 10
    # NCE's log-normaliser c at the start of a meta-iteration: "carry" (where the last one ended)
    # or "reset" (0, as the authors' NCEstimator.m rebuilds it)
    nce_c: str = "carry"
    # Adam: one pass over each fresh sample in minibatches of `batch`; one step size for all
    # layers, or one per layer
    lr: float | tuple[float, float, float, float] = 3e-4
    batch: int = 100
    chunk: int = 4_096  # data points (each with kappa noise points) per evaluation chunk
    tf32: bool = False  # TF32 matmuls on CUDA
    # Supp. D.2: CNCE vs NCE first-layer features from a common initialisation
    # (the authors' run_partial_CNCE_NCE_training.m: the layer-1 recipe with 100 units)
    compare_K1: int = 100
    compare_n: int = 100_000
    compare_meta: int = 20

    def __post_init__(self):
        for name, allowed in (("init", ("authors", "orthonormal")), ("pool_start", ("dense", "planted")),
                              ("l3_nonlinearity", ("max", "linear")), ("l3_centre", ("ensemble", "sample")),
                              ("eps_rule", ("authors", "carry")),
                              ("optimizer", OPTIMIZERS), ("redraw", ("authors", "blocks")),
                              ("nce_c", ("carry", "reset"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}; got {getattr(self, name)!r}")
        validate(self.n_whiten3, Integer(lo=2 * self.K2) | None, "n_whiten3", note=" (2 K2)")
        if self.main_set is not None and any(m < n for m, n in zip(self.main_set, self.n_patches)):
            raise ValueError(f"main_set must be >= n_patches per layer; got {self.main_set!r} and {self.n_patches!r}")

    def lr_for(self, layer: int) -> float:
        """The Adam step size of layer ``layer`` (1-4)."""
        return float(self.lr[layer - 1] if isinstance(self.lr, (tuple, list)) else self.lr)

    def sizes(self) -> dict:
        return dict(D=self.D, K1=self.K1, K2=self.K2, D3=self.D3, K3=self.K3, K4=self.K4)

    def network_kwargs(self) -> dict:
        """Arguments of :class:`~cnce.images.network.ImageNetwork` (sizes and initialisation)."""
        return dict(self.sizes(), init=self.init, init_scale=self.init_scale, b_init=self.b_init,
                    l3_nonlinearity=self.l3_nonlinearity, l3_centre=self.l3_centre)

    def whiten3_samples(self) -> int:
        """Patches whose layer-2 outputs the layer-3 PCA is fitted on."""
        return int(self.n_whiten3) if self.n_whiten3 is not None else max(self.n_patches[2], 4 * self.K2)

    def for_comparison(self) -> "ImageConfig":
        """The smaller first layer trained for the CNCE/NCE comparison of Supp. D.2."""
        n = (self.compare_n,) + self.n_patches[1:]
        m = (self.compare_meta,) + self.meta_iters[1:]
        main = None if self.main_set is None else (2 * self.compare_n,) + self.main_set[1:]
        return replace(self, name=f"{self.name}-compare", K1=self.compare_K1, n_patches=n, meta_iters=m, main_set=main)

    def to_dict(self) -> dict:
        return asdict(self)


#: The Adam step sizes per layer at the paper's sizes: the layer-1 step of ``demo`` scaled by
#: ``sqrt(200/600)`` (the unscaled step drove the loss up at D = 600).
PAPER_ADAM_LR = (1e-2 * (200 / 600) ** 0.5, 1e-3, 1e-3, 1e-3)

CONFIGS: dict[str, ImageConfig] = {
    "paper": ImageConfig(name="paper", chunk=16_384, n_whiten=400_000, lr=PAPER_ADAM_LR, l3_centre="sample",
                         n_whiten3=400_000),
    # `paper` with the project's earlier layer-3 input (ensemble-centred z2, PCA on 150,000
    # samples): the configuration of the committed runs `paper/` and `paper-seed<k>/` on the
    # bundled photographs (their saved configs, named "paper", predate the option)
    "paper-l3-ensemble": ImageConfig(name="paper-l3-ensemble", chunk=16_384, n_whiten=400_000, lr=PAPER_ADAM_LR),
    # the paper's sizes and batch sizes with fresh patches and Adam (two changes at once; the
    # ablation of notebook 06 changes one at a time)
    "paper-adam": ImageConfig(
        name="paper-adam", chunk=16_384, n_whiten=400_000,
        l3_centre="sample", n_whiten3=400_000,
        main_set=None,
        optimizer="adam", lr=PAPER_ADAM_LR, batch=100,
    ),
    "demo": ImageConfig(
        name="demo", D=200, n_whiten=30_000,
        eps_n=2_000, n_patches=(20_000, 5_000, 5_000, 5_000), main_set=None, meta_iters=(40, 20, 20, 20),
        optimizer="adam", lr=(1e-2, 1e-3, 1e-3, 1e-3), batch=100,
        compare_n=10_000, compare_meta=11,
    ),
    "quick": ImageConfig(
        name="quick", D=200, n_whiten=10_000,
        K1=100, K2=32, D3=28, K3=16, K4=8,
        eps_n=1_000, n_patches=(5_000, 3_000, 3_000, 3_000), main_set=None, meta_iters=(15, 2, 2, 2),
        optimizer="adam", lr=(1e-2, 3e-4, 3e-4, 3e-4), batch=100,
        compare_K1=16, compare_n=1_000, compare_meta=3,
    ),
    # the `paper` recipe (main set and alternating batches, L-BFGS, the authors' eps rule) at
    # tiny sizes: the CPU smoke test of the GPU command
    "smoke": ImageConfig(
        name="smoke", patch=16, D=32, n_whiten=2_000, chunk=256,
        K1=24, K2=12, D3=10, K3=8, K4=4,
        eps_n=400, n_patches=(400, 400, 600, 400), main_set=(800, 800, 600, 400), epoch=(2, 3, 2, 2),
        meta_iters=(3, 2, 2, 2), steps=3,
        compare_K1=8, compare_n=300, compare_meta=2,
    ),
}


# the `demo` sizes with the authors' recipe (main sets twice the batch, their minimiser): the base
# of the CPU-sized ablation
CONFIGS["demo-authors"] = replace(CONFIGS["demo"], name="demo-authors", optimizer="cg",
                                  main_set=(40_000, 10_000, 10_000, 10_000))


def ablation_config(base: str | ImageConfig, optimizer: str, schedule: str) -> ImageConfig:
    """``base`` with its optimiser and data schedule set, nothing else changed.

    ``optimizer``: ``"cg"`` (the authors' minimiser), ``"lbfgs"`` or ``"adam"`` (the step sizes
    of ``base.lr``). ``schedule``: ``"main"`` (main sets of twice the batch, drawn when the
    authors' code draws them; ``base.main_set`` when it has one) or ``"fresh"`` (fresh patches
    every meta-iteration). The name is ``<base>/<optimizer>-<schedule>``, or the name of the
    configuration of :data:`CONFIGS` that it equals (``paper`` is ``paper`` with ``"cg"`` and
    ``"main"``, ``paper-adam`` is ``paper`` with ``"adam"`` and ``"fresh"``).
    """
    cfg = get_config(base)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}; got {optimizer!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}; got {schedule!r}")
    main = cfg.main_set or tuple(2 * n for n in cfg.n_patches)
    out = replace(cfg, name=f"{cfg.name}/{optimizer}-{schedule}", optimizer=optimizer,
                  main_set=main if schedule == "main" else None)
    for known in CONFIGS.values():
        if replace(known, name=out.name) == out:
            return known
    return out


def get_config(name: str | ImageConfig) -> ImageConfig:
    """Look up a named configuration (``quick``, ``demo``, ``paper``, ``smoke``); configs pass through."""
    if isinstance(name, ImageConfig):
        return name
    if name not in CONFIGS:
        raise ValueError(f"config must be one of {sorted(CONFIGS)}; got {name!r}")
    return CONFIGS[name]


def estimate_flops(config: str | ImageConfig, *, eps_evals: float = 6.0, cg_evals: float = 3.0) -> dict:
    """Floating-point operations of a training run, per layer, counting the matrix products
    (2 per multiply-add; gain control, f_th and the loss are O(rows x width) and left out).

    Per meta-iteration of layer L with batch N and ``rows = N (1 + kappa)``:

    * frozen layers below L: one forward pass of the batch and its noise;
    * the eps rule: ``eps_evals`` evaluations of J on ``eps_n`` points (each a forward pass of
      the noise through the frozen layers and layer L); the authors' rule needs 1-20;
    * optimisation: L-BFGS with at most ``steps * 5 // 4`` loss + gradient evaluations (torch's
      ``max_eval`` default), conjugate gradients with ``cg_evals`` evaluations per line search
      (an assumption: up to 20 are allowed), or one Adam pass; a loss + gradient counted as 3 forward passes of
      layer L (only weight gradients are needed); plus two loss-only passes (the fresh-sample
      loss and the training loss).

    Returns ``{"per_layer": {L: flops}, "total": flops, "evals_per_meta": ..}``.
    """
    cfg = get_config(config)
    D, K1, K2, D3, K3, K4 = (cfg.sizes()[k] for k in ("D", "K1", "K2", "D3", "K3", "K4"))
    below = {1: 0, 2: D * K1, 3: D * K1 + K1 * K2 + K2 * D3, 4: D * K1 + K1 * K2 + K2 * D3 + D3 * K3}
    top = {1: D * K1, 2: K1 * K2, 3: D3 * K3, 4: K3 * K4}
    evals = {"lbfgs": cfg.steps * 5 // 4, "cg": cfg.steps * cg_evals}.get(cfg.optimizer, 1)
    per = {}
    for L in (1, 2, 3, 4):
        N = cfg.n_patches[L - 1]
        rows = N * (1 + cfg.kappa)
        n_e = min(cfg.eps_n, N)
        frozen = 2 * rows * below[L]
        eps = eps_evals * 2 * n_e * cfg.kappa * (below[L] + top[L])
        opt = (3 * evals + 2) * 2 * rows * top[L]
        per[L] = float(cfg.meta_iters[L - 1] * (frozen + eps + opt))
    return dict(per_layer=per, total=float(sum(per.values())), evals_per_meta=evals, eps_evals=eps_evals)

