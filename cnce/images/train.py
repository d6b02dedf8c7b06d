"""Greedy CNCE (and NCE) training of the neural image model, one layer at a time.

Each layer runs ``meta_iters`` *meta-iterations* (the authors' schedule, ``CNCEstimator.m``):
take this meta-iteration's patches, draw fresh noise, set eps with the image-model rule, then
optimise on that sample. Where the paper is silent the defaults follow the authors' code, each
an option of :class:`~cnce.images.configs.ImageConfig`:

* ``eps_rule="authors"``: eps restarts from ``eps_base = 0.5`` at every meta-iteration (also
  the first) and is set by :func:`choose_eps_authors`, their ``NoiseProcessor.m`` rule
  (multiplier grown x1.15, then bisected; at most 20 evaluations of J; multiplier cap 4, 8 for
  layer 4). ``"carry"``: the project's earlier rule (:func:`choose_eps`, eps carried over).
* patches: ``main_set`` patches are drawn at the meta-iterations their ``CNCEstimator.m``
  draws them (``redraw="authors"``: the first, then every 1-based multiple of ``epoch``) and
  each meta-iteration uses the next ``n_patches``-sized batch of that main set, alternating
  (their 200k/100k, 200k/100k, 150k/150k, 100k/100k; ``DataProcessor.getPCAdataBatch``); with
  ``main_set=None`` every meta-iteration draws ``n_patches`` fresh patches.
* ``optimizer="cg"`` (``paper``): one call of their minimiser per meta-iteration,
  :class:`cnce.images.cg.ConjugateGradients` (Polak-Ribiere conjugate gradients, ``steps`` = 10
  near-exact line searches on the whole batch). ``"lbfgs"``: ``steps`` iterations of torch's
  L-BFGS with strong-Wolfe line searches. Loss and gradient are summed over chunks of
  ``chunk`` data points (each with its ``kappa`` noise samples) on the device.
  ``optimizer="adam"`` (``demo``, ``quick``): one pass of Adam minibatches over each batch, the
  optimiser state carried across meta-iterations.
* NCE's log-normaliser ``c`` is carried from one meta-iteration to the next
  (``nce_c="carry"``) or restarts at 0 at each (``"reset"``, as their ``NCEstimator.m`` does).

Every meta-iteration records, besides eps and the losses the optimiser sees, three values of
J after its update that tell memorisation apart from learning: on (the first ``eps_n`` of) the
patches and noise it was trained on (``train_loss``), on the same patches with fresh noise
(``loss_fresh_noise``) and on unseen patches with fresh noise (``loss_unseen``); and whatever
the ``monitor`` passed to :func:`train` returns (the notebook's oriented share of layer 1).
* pooling layers 2 and 4 start from the network's dense initialisation (``pool_start="dense"``,
  theirs) or from a planted unit of the layer below (``"planted"``, :func:`start_pooling_layer`).

Layers below the trained one are frozen, so their outputs are computed once per meta-iteration.

Noise lives in the whitened input space: ``y = u + eps * xi`` (Eq. 13) is the effective
conditional noise of Eqs. (19)-(20); it is symmetric, so ``G = log phi~(u) - log phi~(y)``
and the CNCE loss is :func:`cnce.losses.cnce_loss` (Eq. 8). NCE uses standard-normal noise in
the same space, whose Gaussian term cancels against Eq. (18) just as in CNCE, so
``G(u) = log phi~(u) + c - log nu`` with a learned ``c``.

After every meta-iteration the whole state (network, whitening, optimiser, history, timings)
is written atomically to ``<out>/state.pt``; :func:`train` resumes from it. Patches are
sampled and whitened on the training device (:meth:`PatchSource.draw`).
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from cnce import __version__, provenance
from cnce import eps as _eps
from cnce._torch import resolve_device
from cnce.losses import LOG4, cnce_loss, nce_loss
from cnce.images.cg import CGSettings, ConjugateGradients
from cnce.images.configs import ImageConfig, get_config
from cnce.images.data import PatchSource, Whitener, load_images, load_skimage_images, prepare_image
from cnce.images.network import ImageNetwork
from cnce.images.runs import STATE_FILE, find_weights, load_state, network_from_state, weights_dir  # noqa: F401 (re-exported)

__all__ = ["branch_state", "choose_eps", "choose_eps_authors", "estimate_flops", "make_source", "start_pooling_layer", "train", "train_comparison", "load_state", "DirtyTreeError", "network_from_state", "find_weights",
           "weights_dir", "STATE_FILE",
           "COMPARE_FILE"]

COMPARE_FILE = "compare.pt"
METHODS = ("cnce", "nce")


def _run_rule(J_of_eps, rule, unit: float = 1.0):
    """One scalar run of a :mod:`cnce.eps` rule: ``(eps, [(eps, J), ...])``."""
    x = torch.zeros(1, 2, 1, dtype=torch.float64)  # the image rules do not read the data's scale
    eps, trace = _eps.choose_eps(lambda e: torch.tensor([float(J_of_eps(float(e[0])))], dtype=torch.float64), x, rule,
                                 unit=unit, return_trace=True)
    pairs = []
    for e, J in zip(trace.eps, trace.J):
        pair = (float(e[0]), float(J[0]))
        if not pairs or pair != pairs[-1]:
            pairs.append(pair)
    return float(eps[0]), pairs


def choose_eps(J_of_eps, *, eps0: float = 0.5, cap: float = 4.0):
    """The project's earlier image-model eps rule (:data:`cnce.eps.IMAGE_CARRY_RULE`): from
    ``eps0`` (the last meta-iteration's eps), grow x1.15 until J is no longer within 5 % of
    2 log 2, bisecting once J falls below 0.2 x 2 log 2; at most 20 evaluations; never above
    ``cap``. Returns ``(eps, trace)`` with ``trace`` the ``(eps, J)`` evaluated."""
    if not eps0 > 0:
        raise ValueError(f"eps0 must be > 0; got {eps0!r}")
    return _run_rule(J_of_eps, _eps.IMAGE_CARRY_RULE.replace(start=min(eps0, cap), cap=cap))


def choose_eps_authors(J_of_eps, *, eps_base: float = 0.5, cap: float = 4.0):
    """The eps rule of the authors' image code (``NoiseProcessor.m``;
    :data:`cnce.eps.IMAGE_AUTHORS_RULE`): ``eps = f * eps_base`` with ``f`` from 1 at *every*
    meta-iteration, grown x1.15 then bisected, at most 20 evaluations of J, ``f < cap`` tested
    before a step (so ``f`` can end just above it, ``1.15**10 = 4.05`` for cap 4); cap 4, 8 for
    layer 4. Returns ``(eps, trace)`` with ``trace`` the ``(eps, J)`` evaluated."""
    if not eps_base > 0:
        raise ValueError(f"eps_base must be > 0; got {eps_base!r}")
    if not cap > 1:
        raise ValueError(f"cap must be > 1; got {cap!r}")
    return _run_rule(J_of_eps, _eps.IMAGE_AUTHORS_RULE.replace(cap=cap), unit=eps_base)


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


def make_source(images: str | os.PathLike | None = None, *, patch: int = 32, halve: bool | None = None) -> tuple[PatchSource, str]:
    """A :class:`PatchSource` from a folder of images (``.iml`` or ordinary files) or, when
    ``images`` is ``None`` or ``"skimage"``, from the photographs bundled with scikit-image.

    ``halve`` (nearest-neighbour halving, as the authors did for 1536 x 1024 van Hateren
    images) defaults to True for folders and False for the small bundled images.
    Returns the source and a description of the data for provenance.
    """
    if images is None or images == "skimage":
        raw, desc, halve = load_skimage_images(), "skimage.data bundled photographs", bool(halve)
    else:
        raw, halve, desc = load_images(images, halve=halve)
    return PatchSource([prepare_image(im, halve=halve) for im in raw], size=patch), desc


def _seed(seed: int, *keys: int) -> int:
    return int(np.random.SeedSequence([int(seed), *map(int, keys)]).generate_state(1)[0])


def _atomic_save(obj, path: Path) -> None:
    provenance.atomic_torch_save(obj, path)


def _git_object(rev: str, path: str) -> str | None:
    """``git rev-parse rev`` with ``+dirty`` when ``path`` has uncommitted changes; ``None`` without git."""
    name = provenance.git("rev-parse", rev)
    if not name:
        return None
    return name + ("+dirty" if provenance.git("status", "--porcelain", "--", path) else "")


def _git_commit() -> str | None:
    """HEAD of the repository holding this package, with ``+dirty`` when ``cnce/`` has
    uncommitted changes (the run then used code that is not in that commit)."""
    return _git_object("HEAD", "cnce")


def _cnce_tree(sub: str = "cnce") -> str | None:
    """The git tree hash of ``sub`` (``cnce`` or ``cnce/images``) at HEAD (``+dirty`` as in
    :func:`_git_commit`). Unlike a commit hash it survives a rebase onto a base that does not
    change ``sub``, so ``cnce/images`` names the image code of a run after a branch is merged."""
    return _git_object(f"HEAD:{sub}", sub)


def _driver_record(driver: str | os.PathLike) -> dict:
    """``{"path": <relative to the repository>, "sha256": <of its source>}`` of a driver script."""
    import hashlib

    p = Path(driver).resolve()
    if not p.is_file():
        raise ValueError(f"driver={str(driver)!r} is not a file")
    try:
        rel = p.relative_to(provenance.REPO_ROOT.resolve()).as_posix()
    except ValueError:
        rel = str(p)
    return {"path": rel, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}


def _batched(fn, x: torch.Tensor, chunk: int) -> torch.Tensor:
    return torch.cat([fn(x[i:i + chunk]) for i in range(0, x.shape[0], chunk)])


def _noisy_inputs(net, layer, cfg, u, method, eps, xi):
    """Layer inputs of the noise of data ``u``: ``u + eps * xi`` (CNCE) or ``xi`` itself (NCE)."""
    chunk = max(1, int(cfg.chunk))
    if method == "cnce":
        return torch.cat([net.layer_input(u[a:a + chunk, None, :] + eps * xi[a:a + chunk], layer)
                          for a in range(0, u.shape[0], chunk)])
    return _batched(lambda v: net.layer_input(v, layer), xi, chunk)


def _loss_fn(net, layer, method, extra, kappa):
    """``loss(hx, hy)``: the CNCE loss (Eq. 8 with G of Eq. 20) or the NCE loss of layer inputs."""
    log_nu = math.log(kappa)

    def loss(hx, hy):
        lx = net.layer_log_phi(hx, layer)
        ly = net.layer_log_phi(hy, layer)
        if method == "cnce":
            return cnce_loss(lx, ly)
        c = extra["c"]
        return nce_loss(lx + c - log_nu, (ly + c - log_nu).reshape(-1))

    return loss


@torch.no_grad()
def _mean_loss(loss, hx, hy, chunk: int) -> float:
    n = hx.shape[0]
    total = torch.zeros((), device=hx.device)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        total += loss(hx[a:b], hy[a:b]) * ((b - a) / n)
    return float(total)


def _run_meta_iteration(net, layer, cfg, u, method, eps, gen, extra, opt, tune_eps=True, unseen=None):
    """One meta-iteration on the batch ``u``: fresh noise, the eps rule (``cfg.eps_rule``;
    skipped when ``tune_eps`` is False), then the optimiser (one call of the authors' conjugate
    gradients or ``steps`` L-BFGS iterations on the whole batch, or one pass of Adam
    minibatches), then the memorisation diagnostics.

    Returns a record with ``eps``, ``loss`` (on the first ``eps_n`` points of the batch with the
    fresh noise, before this meta-iteration's updates: with fresh patches, data the current
    parameters have not seen), ``train_loss`` (after the update, on those points and their
    training noise), ``loss_fresh_noise`` (the same points, new noise), ``loss_unseen`` (the
    patches ``unseen``, new noise; ``NaN`` without them), ``opt_loss`` (the optimiser's own
    final value: the whole batch, or the mean over the Adam pass) and, for ``"cg"``, the line
    searches and evaluations used.
    """
    N, D = u.shape
    kappa = cfg.kappa
    chunk = max(1, int(cfg.chunk))  # data points per chunk, each with its kappa noise points
    n_e = min(cfg.eps_n, N)
    loss_of = _loss_fn(net, layer, method, extra, kappa)
    with torch.no_grad():
        hx = _batched(lambda v: net.layer_input(v, layer), u, chunk)
        if method == "cnce":
            xi = torch.randn(N, kappa, D, generator=gen, device=u.device)
            lx_e = _batched(lambda h: net.layer_log_phi(h, layer), hx[:n_e], chunk)

            def J_of_eps(e):
                total = torch.zeros((), device=u.device)
                for a in range(0, n_e, chunk):
                    b = min(a + chunk, n_e)
                    ly = net.layer_log_phi(net.layer_input(u[a:b, None, :] + e * xi[a:b], layer), layer)
                    total += cnce_loss(lx_e[a:b], ly) * (b - a)
                return total / n_e

            if tune_eps and cfg.eps_rule == "authors":
                eps, trace = choose_eps_authors(J_of_eps, eps_base=cfg.eps_base, cap=cfg.eps_cap[layer - 1])
            elif tune_eps:
                eps, trace = choose_eps(J_of_eps, eps0=eps, cap=8.0 if layer == 4 else 4.0)
            else:
                trace = [(eps, float(J_of_eps(eps)))]
        else:
            xi = torch.randn(N, kappa, D, generator=gen, device=u.device)
            trace = []
        hy = _noisy_inputs(net, layer, cfg, u, method, eps, xi)
        del xi

    def loss_on(idx):
        return loss_of(hx[idx], hy[idx])

    def full_loss(backward: bool) -> torch.Tensor:
        """Mean loss over the batch, summed over chunks on the device (no host sync); with
        ``backward`` the gradients are accumulated chunk by chunk."""
        total = torch.zeros((), device=u.device)
        for a in range(0, N, chunk):
            b = min(a + chunk, N)
            part = loss_on(slice(a, b)) * ((b - a) / N)
            if backward:
                part.backward()
            total += part.detach()
        return total

    loss = _mean_loss(loss_of, hx[:n_e], hy[:n_e], chunk)
    params = [p for g in opt.param_groups for p in g["params"]]
    rec_opt = {}
    if cfg.optimizer in ("lbfgs", "cg"):
        def closure():
            for p in params:
                p.grad = None
            return full_loss(True)

        opt.step(closure)
        with torch.no_grad():
            opt_loss = float(full_loss(False))
        if cfg.optimizer == "cg":
            r = opt.last
            rec_opt = dict(line_searches=r.line_searches, evaluations=r.evaluations, failed_searches=r.failed_searches,
                           cg_stopped=r.stopped)
    else:
        perm = torch.randperm(N, generator=gen, device=u.device)
        acc, nb = torch.zeros((), device=u.device), 0
        for a in range(0, N, cfg.batch):
            opt.zero_grad(set_to_none=True)
            part = loss_on(perm[a:a + cfg.batch])
            part.backward()
            opt.step()
            acc += part.detach()
            nb += 1
        opt_loss = float(acc) / nb
    # memorisation diagnostics, after the update, at this meta-iteration's eps
    with torch.no_grad():
        train_loss = _mean_loss(loss_of, hx[:n_e], hy[:n_e], chunk)
        del hy
        xi2 = torch.randn(n_e, kappa, D, generator=gen, device=u.device)
        fresh = _mean_loss(loss_of, hx[:n_e], _noisy_inputs(net, layer, cfg, u[:n_e], method, eps, xi2), chunk)
        unseen_loss = float("nan")
        if unseen is not None:
            m = unseen.shape[0]
            xi3 = torch.randn(m, kappa, D, generator=gen, device=u.device)
            hxu = _batched(lambda v: net.layer_input(v, layer), unseen, chunk)
            unseen_loss = _mean_loss(loss_of, hxu, _noisy_inputs(net, layer, cfg, unseen, method, eps, xi3), chunk)
    return dict(eps=float(eps), loss=loss, train_loss=train_loss, loss_fresh_noise=fresh, loss_unseen=unseen_loss,
                opt_loss=opt_loss, eps_trace=trace, **rec_opt)


def _chunk_mean(loss_on, n: int, chunk: int, device) -> torch.Tensor:
    total = torch.zeros((), device=device)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        total += loss_on(slice(a, b)) * ((b - a) / n)
    return total


@torch.no_grad()
def start_pooling_layer(net: ImageNetwork, layer: int, seed: int, rest: float = 0.1) -> None:
    """Start pooling layer ``layer`` (2 or 4) where the model below it ended.

    Each pooling unit j gets weight 1 on one distinct, randomly chosen unit pi(j) of the layer
    below and the threshold of that unit; the random dense weights it started with are scaled
    by ``rest`` (a zero weight would stay zero under the squared parametrisation). Then
    ``z2_j`` is close to ``log(z1_pi(j)**2 + 1)`` and ``z4_j`` to ``z3_pi(j)``, and the model
    starts as the trained model below it restricted to the chosen units (the paper notes that
    the first-layer model is the second layer with identity pooling). With the dense pooling
    of the initialisation, which sums the energy of all first-layer units, the loss of layer 2
    started above 2 log 2 and Adam did not recover from there.
    """
    if layer not in (2, 4):
        raise ValueError(f"layer must be 2 or 4; got {layer!r}")
    W, b = getattr(net, f"W{layer}"), getattr(net, f"b{layer}")
    b_below = getattr(net, f"b{layer - 1}")
    K, K_below = W.shape
    g = torch.Generator().manual_seed(int(seed))
    pick = torch.randperm(K_below, generator=g)[:K].to(W.device)
    W.mul_(rest)
    W[torch.arange(K, device=W.device), pick] = 1.0
    b.copy_(b_below[pick])


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


def _batch(source: PatchSource, cfg: ImageConfig, layer: int, m: int, seed: int, dev, cache: dict) -> torch.Tensor:
    """The whitened patches of meta-iteration ``m`` of layer ``layer``: fresh ones, or the next
    ``n_patches`` batch of its main set (:func:`main_set_index`; kept in ``cache``; a resumed run
    redraws it from its seed)."""
    N = cfg.n_patches[layer - 1]
    if cfg.main_set is None:
        return source.draw(N, _seed(seed, layer, m, 0), dev)
    M, E = cfg.main_set[layer - 1], cfg.epoch[layer - 1]
    e, j = main_set_index(m, E, cfg.redraw)
    key = (layer, e)
    if key not in cache:
        cache.clear()
        cache[key] = source.draw(M, _seed(seed, layer, e, 2), dev)
    j %= M // N
    return cache[key][j * N:(j + 1) * N]


def _make_optimizer(cfg: ImageConfig, params, layer: int):
    if cfg.optimizer == "cg":
        # A fresh start per meta-iteration, as the authors' estimateMain.m calls minimize.
        return ConjugateGradients(params, CGSettings(line_searches=cfg.steps))
    if cfg.optimizer == "lbfgs":
        # A fresh L-BFGS per meta-iteration: the objective changes with the fresh sample.
        return torch.optim.LBFGS(params, lr=1.0, max_iter=cfg.steps, history_size=10, line_search_fn="strong_wolfe")
    return torch.optim.Adam(params, lr=cfg.lr_for(layer))


def train(config: str | ImageConfig = "quick", *, out: str | os.PathLike, layers=(1, 2, 3, 4), method: str = "cnce",
          device: str = "auto", seed: int = 0, images: str | os.PathLike | None = None,
          source: PatchSource | None = None, snapshots: bool = False, progress: bool = True,
          threads: int | None = None, monitor=None, allow_dirty: bool = False,
          code_commit: str | None = None, driver: str | os.PathLike | None = None, data: str | None = None) -> dict:
    """Train layers ``layers`` greedily with CNCE (or NCE) and return the final state.

    Resumes from ``<out>/state.pt`` when it exists (same config, method and seed). Writes the
    state atomically after every meta-iteration, and ``<out>/provenance.json`` at the end.
    Refuses (:class:`DirtyTreeError`) to write a run under ``data/weights/`` when ``cnce/`` has
    uncommitted changes, unless ``allow_dirty=True``, which the run's provenance records.

    Args:
        config: ``"quick"``, ``"demo"``, ``"paper"`` or an :class:`ImageConfig`.
        out: output folder.
        layers: layers to train, ascending; each needs the ones below it trained.
        method: ``"cnce"`` or ``"nce"``.
        device: ``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``; float32 either way.
        images: a folder of images (e.g. van Hateren ``.iml`` files); default: bundled photographs.
        source: a ready :class:`PatchSource` (overrides ``images``; its whitener is reused).
        snapshots: keep a float16 copy of ``W1`` after every meta-iteration (Supp. D.2).
        threads: ``torch.set_num_threads`` for this run (None: leave as is).
        monitor: ``monitor(net, layer, whitener) -> dict`` called after every meta-iteration;
            its numbers are added to the meta-iteration's record (e.g. the oriented share).
        allow_dirty: write under ``data/weights/`` from a tree with uncommitted changes.
        code_commit: the commit the code came from, recorded instead of what git reports (the
            copy of the tree on a lent GPU machine carries a stale ``.git``); the provenance also
            records a hash of the package's source (:func:`cnce.provenance.package_source_hash`),
            which :func:`cnce.images.runs.adopt_device_runs` checks against that commit.
        driver: the script that started this run (it chose the config, seed and data); every
            session records its path relative to the repository and the SHA-256 of its source,
            which the adoption checks against the commit too.
        data: a description of ``source``'s images for the provenance (default: "given PatchSource").
    """
    from tqdm.auto import tqdm

    cfg = get_config(config)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    layers = tuple(int(l) for l in layers)
    if not layers or any(l not in ImageNetwork.LAYERS for l in layers) or list(layers) != sorted(set(layers)):
        raise ValueError(f"layers must be ascending values from {ImageNetwork.LAYERS}; got {layers!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int; got {seed!r}")
    dev = resolve_device(device)
    if threads is not None:
        torch.set_num_threads(int(threads))
    if dev.type == "cpu":
        # Adam drives unused pooling weights towards 0, and their squares (the pooling weights
        # q = w**2) into float32's denormal range (below 1.2e-38), where CPU arithmetic is up to
        # 100 times slower: with the authors' dense pooling start a layer-2 meta-iteration of
        # `demo` went from 3 s to over 60 s. Flush denormals to zero (a change below 1.2e-38).
        torch.set_flush_denormal(True)
    if dev.type == "cuda":
        # TF32 matmuls round the inputs to 10-bit mantissas; off unless the config asks for it.
        torch.backends.cuda.matmul.allow_tf32 = bool(cfg.tf32)
        torch.backends.cudnn.allow_tf32 = bool(cfg.tf32)
    out = Path(out)
    dirty = _writes_dirty_weights(out)
    if dirty and not allow_dirty:
        raise DirtyTreeError(f"out={str(out)!r} is under data/weights/ but cnce/ has uncommitted changes ({dirty}); "
                             "commit first, or pass allow_dirty=True (recorded in the provenance)")
    out.mkdir(parents=True, exist_ok=True)
    path = out / STATE_FILE

    if path.is_file():
        state = torch.load(path, map_location="cpu", weights_only=False)
        for key, want in (("config", cfg.to_dict()), ("method", method), ("seed", seed)):
            if state[key] != want:
                raise ValueError(f"out={str(out)!r} holds a run with a different {key}: {state[key]!r}; use another out")
    else:
        state = dict(config=cfg.to_dict(), sizes=cfg.sizes(), method=method, seed=seed, history={}, seconds={},
                     snapshots={}, opt={}, data=None, whitener=None, network=None, nce_c={}, wh2_retained=None,
                     device=str(dev), torch=torch.__version__, package=__version__,
                     git_commit=code_commit or _git_commit())

    # every invocation (the first and each resume) records the code it ran with
    # a given code_commit wins: a copy of the tree on a lent machine may carry a stale .git
    session = dict(git_commit=code_commit or _git_commit(),
                   cnce_tree=None if code_commit else _cnce_tree(),
                   images_tree=None if code_commit else _cnce_tree("cnce/images"),
                   code_commit=code_commit, source_hash=provenance.package_source_hash(exclude=()),
                   allow_dirty=bool(allow_dirty and dirty), device=str(dev), threads=torch.get_num_threads(),
                   started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   done={k: len(v) for k, v in state["history"].items()})
    if driver is not None:
        session["driver"] = _driver_record(driver)
    if dev.type == "cuda":
        session["gpu"] = torch.cuda.get_device_name(dev)
    state.setdefault("sessions", []).append(session)
    if source is None:
        source, desc = make_source(images, patch=cfg.patch)
    else:
        desc = data or "given PatchSource"
    if state["whitener"] is not None:
        source.whitener = Whitener.from_state_dict(state["whitener"])
    elif source.whitener is None or source.whitener.D != cfg.D:
        source.fit_whitener(cfg.n_whiten, cfg.D, _seed(seed, 0, 0, 99), device=dev)
    state["whitener"] = source.whitener.state_dict()
    state["data"] = state["data"] or desc

    net = ImageNetwork(**cfg.network_kwargs(), seed=seed)
    if state["network"] is not None:
        net.load_state_dict(state["network"])
    net.to(dev).requires_grad_(False)

    main_cache: dict = {}
    for layer in layers:
        lk = str(layer)
        if layer > 1 and len(state["history"].get(str(layer - 1), [])) < cfg.meta_iters[layer - 2]:
            raise ValueError(f"layers={layers!r}: layer {layer} needs layer {layer - 1} trained first")
        hist = state["history"].setdefault(lk, [])
        n_meta, N = cfg.meta_iters[layer - 1], cfg.n_patches[layer - 1]
        if layer == 3 and state["wh2_retained"] is None:
            with torch.no_grad():
                u = source.draw(cfg.whiten3_samples(), _seed(seed, layer, 0, 98), dev)
                z2 = _batched(lambda v: net.z2(net.z1(v)), u, cfg.chunk)
                del u
            state["wh2_retained"] = net.fit_whitening2(z2)
            del z2
        if len(hist) >= n_meta:
            continue
        if layer in (2, 4) and not hist and cfg.pool_start == "planted":
            start_pooling_layer(net, layer, _seed(seed, layer, 0, 97))
        for p in net.layer_params(layer):
            p.requires_grad_(True)
        c0 = 0.0 if cfg.nce_c == "reset" else float(state["nce_c"].get(lk, 0.0))
        extra = {"c": torch.tensor(c0, device=dev, requires_grad=True)}
        params = net.layer_params(layer) + ([extra["c"]] if method == "nce" else [])
        eps = hist[-1]["eps"] if hist and cfg.eps_rule == "carry" else cfg.eps_base
        if snapshots and layer == 1 and 0 not in state["snapshots"]:
            state["snapshots"][0] = net.W1.detach().cpu().half()
        bar = tqdm(range(len(hist), n_meta), desc=f"{cfg.name} {method} layer {layer}", disable=not progress,
                   initial=len(hist), total=n_meta)
        for m in bar:
            t0 = time.perf_counter()
            u = _batch(source, cfg, layer, m, seed, dev, main_cache)
            gen = torch.Generator(device=dev).manual_seed(_seed(seed, layer, m, 1))
            opt = _make_optimizer(cfg, params, layer)
            if cfg.optimizer == "adam" and lk in state["opt"]:
                opt.load_state_dict(state["opt"][lk])
            # The authors' rule runs at every meta-iteration. With the "carry" rule and the
            # orthonormal start, G is close to 0 for every eps at a layer's initialisation, so
            # that rule starts at eps_base and applies from the second meta-iteration on.
            tune = cfg.eps_rule == "authors" or m > 0
            if cfg.nce_c == "reset":
                with torch.no_grad():
                    extra["c"].zero_()  # their NCEstimator.m: theta rebuilt with c = 0
            unseen = source.draw(min(cfg.eps_n, N), _seed(seed, layer, m, 3), dev)  # never trained on
            rec = _run_meta_iteration(net, layer, cfg, u, method, eps, gen, extra, opt, tune_eps=tune, unseen=unseen)
            del u, unseen
            if method == "nce":
                rec["c"] = extra["c"].item()
            if monitor is not None:
                rec.update({k: float(v) for k, v in monitor(net, layer, source.whitener).items()})
            if cfg.optimizer == "adam":
                state["opt"][lk] = opt.state_dict()
            eps = rec["eps"]
            rec.update(meta=m, seconds=time.perf_counter() - t0)
            hist.append(rec)
            state["seconds"][lk] = state["seconds"].get(lk, 0.0) + rec["seconds"]
            state["network"] = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
            state["nce_c"][lk] = extra["c"].item()
            if m + 1 == n_meta:
                state["opt"].pop(lk, None)  # a finished layer is never resumed: keep the file small
            if snapshots and layer == 1:
                state["snapshots"][m + 1] = net.W1.detach().cpu().half()
            state["device"] = str(dev)
            _atomic_save(state, path)
            post = {"loss": f"{rec['loss']:.4f}"}
            if method == "cnce":
                post["eps"] = f"{eps:.3f}"
            bar.set_postfix(post)
        bar.close()
        for p in net.layer_params(layer):
            p.requires_grad_(False)
    _write_provenance(state, out)
    return state


#: config fields that layers 3 and 4 alone read (a branch at layer 3 may change them)
UPPER_ONLY = ("name", "l3_centre", "n_whiten3")


def branch_state(parent: dict, config: str | ImageConfig, *, at_layer: int = 3, parent_name: str = "") -> dict:
    """A training state that keeps layers ``1 .. at_layer - 1`` of ``parent`` and starts the layers
    from ``at_layer`` on afresh under ``config`` (their initial weights, batches and noise are the
    parent's, since they derive from the same seed): :func:`train` resumes from it. Only a change
    of the fields of :data:`UPPER_ONLY` is allowed (for example the layer-3 input), so the
    difference between the two runs is that change alone.

    The parent's sessions move to ``branched_from`` (with ``parent_name``); the new run's own
    sessions start empty.
    """
    if at_layer != 3:
        raise ValueError(f"at_layer must be 3 (the layers above the layer-3 input); got {at_layer!r}")
    cfg = get_config(config)
    old = {k: tuple(v) if isinstance(v, list) else v for k, v in parent["config"].items()}
    have = replace(cfg, **{k: v for k, v in old.items() if k in cfg.to_dict() and k not in UPPER_ONLY})
    if have != cfg:
        diff = sorted(k for k, v in cfg.to_dict().items() if k not in UPPER_ONLY and old.get(k, v) != v)
        raise ValueError(f"config differs from the parent's in fields the kept layers read: {diff}")
    done = {k: len(v) for k, v in parent["history"].items()}
    for L in range(1, at_layer):
        if done.get(str(L), 0) < cfg.meta_iters[L - 1]:
            raise ValueError(f"the parent has not finished layer {L}")
    fresh = ImageNetwork(**cfg.network_kwargs(), seed=int(parent["seed"])).state_dict()
    net = {k: (v.clone() if k[1:].isdigit() and int(k[1:]) < at_layer else fresh[k].clone())
           for k, v in parent["network"].items()}
    net["wh2_mean"], net["wh2_P"] = fresh["wh2_mean"].clone(), fresh["wh2_P"].clone()
    keep = lambda d: {k: v for k, v in d.items() if int(k) < at_layer}  # noqa: E731
    return dict(parent, config=cfg.to_dict(), sizes=cfg.sizes(), network=net, history=keep(parent["history"]),
                seconds=keep(parent["seconds"]), nce_c=keep(parent.get("nce_c", {})), opt={}, wh2_retained=None,
                sessions=[], branched_from=dict(run=parent_name, at_layer=at_layer, git_commit=parent.get("git_commit"),
                                                sessions=parent.get("sessions", []),
                                                config=parent["config"]))


#: Supp. D.2 variants: name -> (method, ``nce_c``). ``"nce-reset"`` is NCE as the authors'
#: ``NCEstimator.m`` runs it (c back to 0 at every meta-iteration).
COMPARE_VARIANTS = {"cnce": ("cnce", "carry"), "nce": ("nce", "carry"), "nce-reset": ("nce", "reset")}


def train_comparison(config: str | ImageConfig, *, out: str | os.PathLike, work: str | os.PathLike, seed: int = 0,
                     device: str = "auto", images=None, progress: bool = True, threads: int | None = None,
                     variants=("cnce", "nce"), monitor=None, file: str | None = None, allow_dirty: bool = False,
                     code_commit: str | None = None, driver: str | os.PathLike | None = None) -> dict:
    """Supp. D.2: train the first layer of the smaller comparison network
    (:meth:`ImageConfig.for_comparison`) with CNCE and with NCE from a common initialisation, on
    the same patches per meta-iteration.

    ``variants`` name :data:`COMPARE_VARIANTS` (``"cnce"``, ``"nce"``: c carried over,
    ``"nce-reset"``: c restarts at 0, as in the authors' code). The resumable runs live in
    ``<work>/compare-<variant>``; the first-layer weights after every meta-iteration (float16,
    whitened space) and the histories are written compactly to ``<out>/<file>`` (default
    ``compare.pt``, or ``compare-seed<seed>.pt`` for seeds other than 0). Returns that dictionary.
    """
    base = get_config(config).for_comparison()
    for v in variants:
        if v not in COMPARE_VARIANTS:
            raise ValueError(f"variants must be drawn from {sorted(COMPARE_VARIANTS)}; got {variants!r}")
    source, _ = make_source(images, patch=base.patch)
    res = {"config": base.to_dict(), "seed": seed, "snapshots": {}, "history": {}}
    for v in variants:
        method, nce_c = COMPARE_VARIANTS[v]
        cfg = replace(base, nce_c=nce_c)
        st = train(cfg, out=Path(work) / f"compare-{v}-seed{seed}", layers=(1,), method=method, device=device, seed=seed,
                   source=source, snapshots=True, progress=progress, threads=threads, monitor=monitor,
                   code_commit=code_commit, driver=driver)
        res["snapshots"][v] = st["snapshots"]
        res["history"][v] = st["history"]["1"]
        res["device"] = st["device"]
        res["sessions"] = st.get("sessions", [])
    res["whitener"] = st["whitener"]
    name = file or (COMPARE_FILE if seed == 0 else f"compare-seed{seed}.pt")
    Path(out).mkdir(parents=True, exist_ok=True)
    _atomic_save({k: v for k, v in res.items() if k != "whitener"}, Path(out) / name)
    return res


class DirtyTreeError(ValueError):
    """A run would be written under ``data/weights/`` from code with uncommitted changes."""


def _writes_dirty_weights(out: Path) -> str:
    """The uncommitted changes of ``cnce/`` (``git status --porcelain``) when ``out`` lies under
    ``data/weights/`` of this repository; ``""`` otherwise or without git."""
    try:
        Path(out).resolve().relative_to(weights_dir().resolve())
    except ValueError:
        return ""
    status = provenance.git("status", "--porcelain", "--", "cnce")
    return " ".join(status.split()[:6]) if status else ""


def _write_provenance(state: dict, out: Path) -> None:
    import numpy
    import scipy

    try:
        import skimage

        skv = skimage.__version__
    except ImportError:  # pragma: no cover
        skv = None
    prov = {
        "package": "cnce " + state["package"],
        "git_commit": state["git_commit"],
        "sessions": state.get("sessions", []),
        "config": state["config"],
        "method": state["method"],
        "seed": state["seed"],
        "device": state["device"],
        "data": state["data"],
        "pca_retained_variance": round(Whitener.from_state_dict(state["whitener"]).retained, 4),
        "layer2_whitening_retained_variance": state["wh2_retained"],
        "meta_iterations_done": {k: len(v) for k, v in state["history"].items()},
        "wall_seconds_per_layer": {k: round(v, 1) for k, v in state["seconds"].items()},
        "final_eps": {k: round(v[-1]["eps"], 4) for k, v in state["history"].items() if v},
        "final_loss": {k: round(v[-1]["loss"], 5) for k, v in state["history"].items() if v},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
                     "scipy": scipy.__version__, "scikit-image": skv},
        "machine": platform.machine(),
    }
    if state.get("branched_from"):
        b = state["branched_from"]
        prov["branched_from"] = {k: b.get(k) for k in ("run", "at_layer", "git_commit")}
    provenance.atomic_write_text(out / "provenance.json", json.dumps(prov, indent=2) + "\n")
