"""One meta-iteration of the image model's greedy training, given its sample: the eps rules,
the optimisers, the losses, the update and its diagnostics, and a layer's start.

Each layer runs ``meta_iters`` *meta-iterations* (the authors' schedule, ``CNCEstimator.m``):
take this meta-iteration's patches, draw fresh noise, set eps with the image-model rule, then
optimise on that sample (:func:`run_meta_iteration`). The trainer (:mod:`cnce.images.train`)
loops over layers and meta-iterations, draws the patches (seeds: :mod:`cnce.images.draws`) and
keeps the run's state. At a layer's start it hands this module the layer, once, as the
network's per-layer view (:class:`cnce.images.network.Layer`): :func:`start_layer` makes it
trainable and returns a :class:`LayerRecipe`, whose :meth:`~LayerRecipe.meta_iteration` is one
meta-iteration on the patches and noise seed it is given (optimiser, eps, update, diagnostics).
Below that, code works with the view; no seed is derived here.

Noise lives in the whitened input space: ``y = u + eps * xi`` (Eq. 13) is the effective
conditional noise of Eqs. (19)-(20); it is symmetric, so ``G = log phi~(u) - log phi~(y)``
and the CNCE loss is :func:`cnce.losses.cnce_loss` (Eq. 8). NCE uses standard-normal noise in
the same space, whose Gaussian term cancels against Eq. (18) just as in CNCE, so
``G(u) = log phi~(u) + c - log nu`` with a learned ``c``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from cnce import eps as _eps
from cnce.losses import cnce_loss, nce_loss
from cnce.images.cg import CGSettings, ConjugateGradients
from cnce.images.configs import ImageConfig
from cnce.images.network import ImageNetwork, Layer

__all__ = ["choose_eps_carry", "choose_eps_authors", "run_meta_iteration", "make_optimizer", "start_pooling_layer",
           "start_layer", "LayerRecipe", "fit_layer3_whitening"]


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


def choose_eps_carry(J_of_eps, *, eps0: float = 0.5, cap: float = _eps.IMAGE_LAYER_CAPS[0]):
    """The project's earlier image-model eps rule (:data:`cnce.eps.IMAGE_CARRY_RULE`): from
    ``eps0`` (the last meta-iteration's eps), grow x1.15 until J is no longer within 5 % of
    2 log 2, bisecting once J falls below 0.2 x 2 log 2; at most 20 evaluations; never above
    ``cap``. Returns ``(eps, trace)`` with ``trace`` the ``(eps, J)`` evaluated."""
    if not eps0 > 0:
        raise ValueError(f"eps0 must be > 0; got {eps0!r}")
    return _run_rule(J_of_eps, _eps.IMAGE_CARRY_RULE.replace(start=min(eps0, cap), cap=float(cap)))


def choose_eps_authors(J_of_eps, *, eps_base: float = 0.5, cap: float = _eps.IMAGE_LAYER_CAPS[0]):
    """The eps rule of the authors' image code (``NoiseProcessor.m``;
    :data:`cnce.eps.IMAGE_AUTHORS_RULE`): ``eps = f * eps_base`` with ``f`` from 1 at *every*
    meta-iteration, grown x1.15 then bisected, at most 20 evaluations of J, ``f < cap`` tested
    before a step (so ``f`` can end just above it, ``1.15**10 = 4.05`` for cap 4); cap 4, 8 for
    layer 4. Returns ``(eps, trace)`` with ``trace`` the ``(eps, J)`` evaluated."""
    if not eps_base > 0:
        raise ValueError(f"eps_base must be > 0; got {eps_base!r}")
    if not cap > 1:
        raise ValueError(f"cap must be > 1; got {cap!r}")
    return _run_rule(J_of_eps, _eps.IMAGE_AUTHORS_RULE.replace(cap=float(cap)), unit=eps_base)



def _batched(fn, x: torch.Tensor, chunk: int) -> torch.Tensor:
    return torch.cat([fn(x[i:i + chunk]) for i in range(0, x.shape[0], chunk)])


def _noisy_inputs(layer: Layer, cfg, u, method, eps, xi):
    """Layer inputs of the noise of data ``u``: ``u + eps * xi`` (CNCE) or ``xi`` itself (NCE)."""
    chunk = max(1, int(cfg.chunk))
    if method == "cnce":
        return torch.cat([layer.input(u[a:a + chunk, None, :] + eps * xi[a:a + chunk])
                          for a in range(0, u.shape[0], chunk)])
    return _batched(layer.input, xi, chunk)


def _loss_fn(layer: Layer, method, extra, kappa):
    """``loss(hx, hy)``: the CNCE loss (Eq. 8 with G of Eq. 20) or the NCE loss of layer inputs."""
    log_nu = math.log(kappa)

    def loss(hx, hy):
        lx = layer.log_phi(hx)
        ly = layer.log_phi(hy)
        if method == "cnce":
            return cnce_loss(lx, ly)
        c = extra["c"]
        return nce_loss(lx + c - log_nu, (ly + c - log_nu).reshape(-1))

    return loss


def _chunked_mean(loss, hx, hy, chunk: int, backward: bool = False) -> torch.Tensor:
    """The mean of ``loss`` over the rows of ``hx``/``hy``, summed chunk by chunk on the device
    (no host sync); with ``backward`` the gradients are accumulated chunk by chunk."""
    n = hx.shape[0]
    total = torch.zeros((), device=hx.device)
    for a in range(0, n, chunk):
        b = min(a + chunk, n)
        part = loss(hx[a:b], hy[a:b]) * ((b - a) / n)
        if backward:
            part.backward()
        total += part.detach()
    return total


@torch.no_grad()
def _mean_loss(loss, hx, hy, chunk: int) -> float:
    return float(_chunked_mean(loss, hx, hy, chunk))


def run_meta_iteration(layer: Layer, cfg, u, method, eps, gen, extra, opt, tune_eps=True, unseen=None):
    """One meta-iteration of ``layer`` (the network's per-layer view) on the batch ``u``: fresh noise, the eps rule (``cfg.eps_rule``;
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
    loss_of = _loss_fn(layer, method, extra, kappa)
    cap = cfg.eps_cap[layer.number - 1]
    with torch.no_grad():
        hx = _batched(layer.input, u, chunk)
        if method == "cnce":
            xi = torch.randn(N, kappa, D, generator=gen, device=u.device)
            lx_e = _batched(layer.log_phi, hx[:n_e], chunk)

            def J_of_eps(e):
                total = torch.zeros((), device=u.device)
                for a in range(0, n_e, chunk):
                    b = min(a + chunk, n_e)
                    ly = layer.log_phi(layer.input(u[a:b, None, :] + e * xi[a:b]))  # noqa: F821 (called before the del below)
                    total += cnce_loss(lx_e[a:b], ly) * (b - a)
                return total / n_e

            if tune_eps and cfg.eps_rule == "authors":
                eps, trace = choose_eps_authors(J_of_eps, eps_base=cfg.eps_base, cap=cap)
            elif tune_eps:
                eps, trace = choose_eps_carry(J_of_eps, eps0=eps, cap=cap)
            else:
                trace = [(eps, float(J_of_eps(eps)))]
        else:
            xi = torch.randn(N, kappa, D, generator=gen, device=u.device)
            trace = []
        hy = _noisy_inputs(layer, cfg, u, method, eps, xi)
        del xi

    def loss_on(idx):
        return loss_of(hx[idx], hy[idx])  # noqa: F821 (called before the del below)

    loss = _mean_loss(loss_of, hx[:n_e], hy[:n_e], chunk)
    params = [p for g in opt.param_groups for p in g["params"]]
    rec_opt = {}
    if cfg.optimizer in ("lbfgs", "cg"):
        def closure():
            for p in params:
                p.grad = None
            return _chunked_mean(loss_of, hx, hy, chunk, backward=True)  # noqa: F821 (called before the del below)

        opt.step(closure)
        with torch.no_grad():
            opt_loss = float(_chunked_mean(loss_of, hx, hy, chunk))
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
        fresh = _mean_loss(loss_of, hx[:n_e], _noisy_inputs(layer, cfg, u[:n_e], method, eps, xi2), chunk)
        unseen_loss = float("nan")
        if unseen is not None:
            m = unseen.shape[0]
            xi3 = torch.randn(m, kappa, D, generator=gen, device=u.device)
            hxu = _batched(layer.input, unseen, chunk)
            unseen_loss = _mean_loss(loss_of, hxu, _noisy_inputs(layer, cfg, unseen, method, eps, xi3), chunk)
    return dict(eps=float(eps), loss=loss, train_loss=train_loss, loss_fresh_noise=fresh, loss_unseen=unseen_loss,
                opt_loss=opt_loss, eps_trace=trace, **rec_opt)



def fit_layer3_whitening(net: ImageNetwork, u: torch.Tensor, cfg: ImageConfig) -> float:
    """Fit the whitening of layer 3's input (the PCA of layer-2 outputs) on the whitened patches
    ``u`` (the trainer draws them from :attr:`cnce.images.draws.Stream.LAYER3_PCA`); returns what
    :meth:`ImageNetwork.fit_whitening2` returns."""
    with torch.no_grad():
        z2 = _batched(lambda v: net.z2(net.z1(v)), u, cfg.chunk)
    return net.fit_whitening2(z2)


def start_layer(layer: Layer, cfg: ImageConfig, method: str, dev, *, pooling_seed: int, fresh: bool, c0: float,
                eps: float) -> LayerRecipe:
    """Make ``layer`` (the network's per-layer view) trainable: the planted start of a pooling
    layer (``cfg.pool_start``; a ``fresh`` layer only; drawn with ``pooling_seed``), its weights'
    gradients on, and NCE's log-normaliser ``c`` (from ``c0``). Returns the :class:`LayerRecipe`
    whose :meth:`~LayerRecipe.meta_iteration` runs the layer's meta-iterations, eps starting at ``eps``."""
    if layer.number in (2, 4) and fresh and cfg.pool_start == "planted":
        start_pooling_layer(layer, pooling_seed)
    for p in layer.params():
        p.requires_grad_(True)
    extra = {"c": torch.tensor(c0, device=dev, requires_grad=True)}
    params = layer.params() + ([extra["c"]] if method == "nce" else [])
    return LayerRecipe(layer=layer, cfg=cfg, method=method, dev=dev, params=params, extra=extra, eps=eps)


@dataclass
class LayerRecipe:
    """One layer under training, as its meta-iterations see it (made by :func:`start_layer`):
    the layer (the network's per-layer view), the settings, the parameters the optimiser moves
    (the layer's weights, and NCE's log-normaliser ``c`` in ``extra``) and eps as the next
    meta-iteration starts from it."""

    layer: Layer
    cfg: ImageConfig
    method: str
    dev: torch.device
    params: list
    extra: dict
    eps: float

    def meta_iteration(self, m: int, u: torch.Tensor, unseen: torch.Tensor, noise_seed: int, *, opt_state: dict | None):
        """Meta-iteration ``m`` on the whitened patches ``u``: its noise generator (seeded with
        ``noise_seed``), a fresh optimiser (Adam's state from ``opt_state``), then
        :func:`run_meta_iteration` (the held-out loss on ``unseen``); eps moves on to the
        record's. Returns the record and the optimiser."""
        cfg, dev = self.cfg, self.dev
        gen = torch.Generator(device=dev).manual_seed(int(noise_seed))
        opt = make_optimizer(cfg, self.params, self.layer.number)
        if cfg.optimizer == "adam" and opt_state is not None:
            opt.load_state_dict(opt_state)
        # The authors' rule runs at every meta-iteration. With the "carry" rule and the
        # orthonormal start, G is close to 0 for every eps at a layer's initialisation, so
        # that rule starts at eps_base and applies from the second meta-iteration on.
        tune = cfg.eps_rule == "authors" or m > 0
        if cfg.nce_c == "reset":
            with torch.no_grad():
                self.extra["c"].zero_()  # their NCEstimator.m: theta rebuilt with c = 0
        rec = run_meta_iteration(self.layer, cfg, u, self.method, self.eps, gen, self.extra, opt, tune_eps=tune, unseen=unseen)
        self.eps = rec["eps"]
        return rec, opt


@torch.no_grad()
def start_pooling_layer(layer: Layer, seed: int, rest: float = 0.1) -> None:
    """Start pooling layer ``layer`` (the network's view of layer 2 or 4) where the model below
    it ended.

    Each pooling unit j gets weight 1 on one distinct, randomly chosen unit pi(j) of the layer
    below and the threshold of that unit; the random dense weights it started with are scaled
    by ``rest`` (a zero weight would stay zero under the squared parametrisation). Then
    ``z2_j`` is close to ``log(z1_pi(j)**2 + 1)`` and ``z4_j`` to ``z3_pi(j)``, and the model
    starts as the trained model below it restricted to the chosen units (the paper notes that
    the first-layer model is the second layer with identity pooling). With the dense pooling
    of the initialisation, which sums the energy of all first-layer units, the loss of layer 2
    started above 2 log 2 and Adam did not recover from there.
    """
    if layer.number not in (2, 4):
        raise ValueError(f"layer must be 2 or 4; got {layer.number!r}")
    W, b = layer.W, layer.b
    b_below = layer.below().b
    K, K_below = W.shape
    g = torch.Generator().manual_seed(int(seed))
    pick = torch.randperm(K_below, generator=g)[:K].to(W.device)
    W.mul_(rest)
    W[torch.arange(K, device=W.device), pick] = 1.0
    b.copy_(b_below[pick])


def make_optimizer(cfg: ImageConfig, params, layer: int):
    if cfg.optimizer == "cg":
        # A fresh start per meta-iteration, as the authors' estimateMain.m calls minimize.
        return ConjugateGradients(params, CGSettings(line_searches=cfg.steps))
    if cfg.optimizer == "lbfgs":
        # A fresh L-BFGS per meta-iteration: the objective changes with the fresh sample.
        return torch.optim.LBFGS(params, lr=1.0, max_iter=cfg.steps, history_size=10, line_search_fn="strong_wolfe")
    return torch.optim.Adam(params, lr=cfg.lr_for(layer))

