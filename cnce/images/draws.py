"""Every random draw of an image-model training run, by name, and the table of a run's seeds.

A run's random draws are named streams (:class:`Stream`); the seed of a stream in meta-iteration
``m`` of layer ``L`` is :func:`stream_seed` ``(seed, L, m, stream)``. The trainer
(:mod:`cnce.images.train`) computes the whole table once when a run starts (:meth:`RunDraws.of`):
the seed of the input PCA's patches, of the layer-3 PCA's sample, and per layer
(:class:`LayerDraws`) the pooling start and, per meta-iteration, where its patches come from
(:class:`Batch`), its noise and its unseen patches. A run is thus reproducible from its seed
and config alone, a resumed run draws what an uninterrupted one would, and the table can be
read before anything is drawn.

Which patches a meta-iteration uses follows the authors' ``CNCEstimator.m``
(:func:`main_set_index`): with ``cfg.main_set`` a large *main set* is drawn at the
meta-iterations theirs draws one and every meta-iteration takes the next ``n_patches``-sized
batch of it; with ``main_set=None`` every meta-iteration draws fresh patches.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from cnce import provenance

__all__ = ["Stream", "stream_seed", "image_seed", "whitener_seed", "main_set_index", "Batch", "LayerDraws", "RunDraws"]


class Stream(enum.IntEnum):
    """The named seed streams of an image-model run: every random draw of a run has one, and its
    seed is :func:`stream_seed` ``(seed, layer, m, stream)`` (the numbers are the keys the
    committed runs were drawn with; a new draw gets a new name here, never a literal)."""

    FRESH_PATCHES = 0  # the patches of a meta-iteration (fresh-patch schedules)
    NOISE = 1  # the noise generator of a meta-iteration
    MAIN_SET = 2  # one of the main sets (the authors' schedule)
    UNSEEN = 3  # patches never trained on (the held-out loss)
    WHITEN_CHECK = 55  # the held-out patches of the whitening check (scripts/check_whitening.py)
    POOLING_START = 97  # the planted start of a pooling layer (layers 2 and 4)
    LAYER3_PCA = 98  # the sample the layer-3 PCA is fitted on
    WHITENER = 99  # the patches the input PCA is fitted on (layer 0, meta-iteration 0)


def stream_seed(seed: int, layer: int, m: int, stream: Stream) -> int:
    """The seed of ``stream`` in meta-iteration ``m`` of ``layer`` of a run with ``seed``:
    :func:`cnce.provenance.int_seed` of ``(seed, layer, m, stream)``."""
    if not isinstance(stream, Stream):
        raise TypeError(f"stream must be a cnce.images.draws.Stream; got {stream!r}")
    return provenance.int_seed(seed, layer, m, int(stream))


#: :func:`cnce.provenance.int_seed` of ``(seed, layer, m, k)``: the scheme under
#: :func:`stream_seed` (kept for callers that hold a stream's number)
image_seed = provenance.int_seed


def whitener_seed(seed: int) -> int:
    """The seed of the patches the input PCA of a run with ``seed`` is fitted on."""
    return stream_seed(seed, 0, 0, Stream.WHITENER)


def main_set_index(m: int, epoch: int, redraw: str = "authors") -> tuple[int, int]:
    """``(e, k)``: meta-iteration ``m`` (0-based) uses main set ``e``, the ``k``-th meta-iteration
    on it. ``redraw="authors"`` (``CNCEstimator.m``: a new set at the first meta-iteration and
    when the 1-based meta-iteration is a multiple of ``epoch``; with ``epoch = 20`` sets start at
    0, 19 and 39); ``"blocks"``: sets start at multiples of ``epoch``."""
    if epoch < 1:
        raise ValueError(f"epoch must be >= 1; got {epoch!r}")
    if redraw == "blocks":
        return divmod(m, epoch)
    if redraw != "authors":
        raise ValueError(f"redraw must be 'authors' or 'blocks'; got {redraw!r}")
    e = (m + 1) // epoch
    start = 0 if e == 0 else e * epoch - 1
    return e, m - start


@dataclass(frozen=True)
class Batch:
    """The patches of one meta-iteration: rows ``start`` to ``stop`` of the ``n`` patches drawn
    with ``seed`` (:meth:`cnce.images.data.PatchSource.draw_rows`). A fresh batch is all of its
    draw; a main set's batches share one draw."""

    n: int
    seed: int
    start: int
    stop: int


@dataclass(frozen=True)
class LayerDraws:
    """The seeds of one layer's training: the planted start of a pooling layer
    (:attr:`Stream.POOLING_START`), and per meta-iteration ``m`` its patches ``batches[m]``, the
    seed of its noise generator ``noise[m]`` and of its ``n_unseen`` unseen patches ``unseen[m]``."""

    number: int
    pooling_start: int
    batches: tuple[Batch, ...]
    noise: tuple[int, ...]
    unseen: tuple[int, ...]
    n_unseen: int

    @classmethod
    def of(cls, cfg, seed: int, layer: int) -> "LayerDraws":
        """The seeds of ``layer`` in a run of config ``cfg`` with ``seed``."""
        N = cfg.n_patches[layer - 1]
        ms = range(cfg.meta_iters[layer - 1])
        if cfg.main_set is None:
            batches = tuple(Batch(N, stream_seed(seed, layer, m, Stream.FRESH_PATCHES), 0, N) for m in ms)
        else:
            M, E = cfg.main_set[layer - 1], cfg.epoch[layer - 1]
            batches = []
            for m in ms:
                e, j = main_set_index(m, E, cfg.redraw)
                j %= M // N
                batches.append(Batch(M, stream_seed(seed, layer, e, Stream.MAIN_SET), j * N, (j + 1) * N))
            batches = tuple(batches)
        return cls(number=layer, pooling_start=stream_seed(seed, layer, 0, Stream.POOLING_START), batches=batches,
                   noise=tuple(stream_seed(seed, layer, m, Stream.NOISE) for m in ms),
                   unseen=tuple(stream_seed(seed, layer, m, Stream.UNSEEN) for m in ms),
                   n_unseen=min(cfg.eps_n, N))


@dataclass(frozen=True)
class RunDraws:
    """The seeds of a whole run: the input PCA's patches (:attr:`Stream.WHITENER`), the layer-3
    PCA's sample (:attr:`Stream.LAYER3_PCA`) and each layer's :class:`LayerDraws`."""

    seed: int
    whitener: int
    layer3_pca: int
    layers: dict

    @classmethod
    def of(cls, cfg, seed: int, layers=(1, 2, 3, 4)) -> "RunDraws":
        """The seeds of a run of config ``cfg`` with ``seed``."""
        return cls(seed=int(seed), whitener=whitener_seed(seed), layer3_pca=stream_seed(seed, 3, 0, Stream.LAYER3_PCA),
                   layers={L: LayerDraws.of(cfg, seed, L) for L in layers})
