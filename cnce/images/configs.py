"""Named configurations of the image-model training: ``quick``, ``demo`` and ``paper``.

* ``paper``: the paper's layer sizes (Supp. D.1, Table 1) and the authors' schedule
  (200k/200k/150k/100k patches, 40/20/20/20 meta-iterations of 10 line-search steps). Meant
  for a GPU (``device="auto"``); the authors' CPU code needed 1-2 days.
* ``demo``: the paper's layer sizes, trained on far fewer patches (5000 fresh patches per
  meta-iteration; 40 meta-iterations for layer 1, 10 for layers 2-4) with one pass of Adam
  minibatches per meta-iteration instead of full-batch line searches, so that it trains on two
  shared CPU cores in well under an hour. Full-batch L-BFGS on a few thousand patches
  overfits the 360k first-layer weights within one meta-iteration (the loss on the next fresh
  sample rises); one Adam pass over each fresh sample does not.
* ``quick``: D = 600 but few units and a short schedule (a minute or two on a CPU); the image
  notebook trains it when no committed weights are found.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

__all__ = ["ImageConfig", "CONFIGS", "get_config"]


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
    # initialisation: row norm of W1 and W3 (orthonormal rows), thresholds b1 and b3
    init_scale: float = 1.0
    b_init: float = -2.0
    # CNCE
    kappa: int = 6
    eps_n: int = 2_000  # data points used by the epsilon rule
    # schedule per layer: patches per meta-iteration, meta-iterations, optimiser steps each
    n_patches: tuple[int, int, int, int] = (200_000, 200_000, 150_000, 100_000)
    meta_iters: tuple[int, int, int, int] = (40, 20, 20, 20)
    optimizer: str = "lbfgs"  # "lbfgs": `steps` line-search steps per meta-iteration (authors' style)
    steps: int = 10
    lr: float = 3e-4  # Adam: one pass over each fresh sample in minibatches of `batch`
    batch: int = 100
    chunk: int = 4_096  # data points per evaluation chunk (bounds memory)
    # Supp. D.2: CNCE vs NCE first-layer features from a common initialisation
    compare_K1: int = 100
    compare_n: int = 20_000
    compare_meta: int = 11

    def sizes(self) -> dict:
        return dict(D=self.D, K1=self.K1, K2=self.K2, D3=self.D3, K3=self.K3, K4=self.K4)

    def network_kwargs(self) -> dict:
        """Arguments of :class:`~cnce.images.network.ImageNetwork` (sizes and initialisation)."""
        return dict(self.sizes(), init_scale=self.init_scale, b_init=self.b_init)

    def for_comparison(self) -> "ImageConfig":
        """The smaller first layer trained for the CNCE/NCE comparison of Supp. D.2."""
        n = (self.compare_n,) + self.n_patches[1:]
        m = (self.compare_meta,) + self.meta_iters[1:]
        return replace(self, name=f"{self.name}-compare", K1=self.compare_K1, n_patches=n, meta_iters=m)

    def to_dict(self) -> dict:
        return asdict(self)


CONFIGS: dict[str, ImageConfig] = {
    "paper": ImageConfig(name="paper"),
    "demo": ImageConfig(
        name="demo",
        n_whiten=30_000,
        eps_n=1_000,
        n_patches=(5_000, 5_000, 5_000, 5_000),
        meta_iters=(40, 10, 10, 10),
        optimizer="adam",
        lr=1e-3,
        batch=100,
        compare_n=4_000,
        compare_meta=11,
    ),
    "quick": ImageConfig(
        name="quick",
        n_whiten=10_000,
        K1=64,
        K2=32,
        D3=28,
        K3=16,
        K4=8,
        eps_n=1_000,
        n_patches=(3_000, 3_000, 3_000, 3_000),
        meta_iters=(4, 2, 2, 2),
        optimizer="adam",
        lr=3e-4,
        batch=100,
        compare_K1=16,
        compare_n=1_000,
        compare_meta=3,
    ),
}


def get_config(name: str | ImageConfig) -> ImageConfig:
    """Look up a named configuration (``quick``, ``demo``, ``paper``); configs pass through."""
    if isinstance(name, ImageConfig):
        return name
    if name not in CONFIGS:
        raise ValueError(f"config must be one of {sorted(CONFIGS)}; got {name!r}")
    return CONFIGS[name]
