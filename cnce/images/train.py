"""Greedy CNCE (and NCE) training of the neural image model, one layer at a time: the trainer
(:func:`train`), the Supp. D.2 comparison (:func:`train_comparison`) and branches of a finished
run (:func:`branch_state`). One meta-iteration is :mod:`cnce.images.recipe`; saving, loading and
provenance are :mod:`cnce.images.runs`.

Each layer runs ``meta_iters`` *meta-iterations* (the authors' schedule, ``CNCEstimator.m``):
take this meta-iteration's patches, draw fresh noise, set eps with the image-model rule, then
optimise on that sample. Where the paper is silent the defaults follow the authors' code, each
an option of :class:`~cnce.images.configs.ImageConfig`:

* ``eps_rule="authors"``: eps restarts from ``eps_base = 0.5`` at every meta-iteration (also
  the first) and is set by :func:`~cnce.images.recipe.choose_eps_authors`, their ``NoiseProcessor.m`` rule
  (multiplier grown x1.15, then bisected; at most 20 evaluations of J; multiplier cap 4, 8 for
  layer 4). ``"carry"``: the project's earlier rule (:func:`~cnce.images.recipe.choose_eps_carry`, eps carried over).
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
sampled and whitened on the training device (:meth:`PatchSource.draw`), with the seeds of the run's
table (:class:`cnce.images.draws.RunDraws`), computed once when it starts.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import replace
from pathlib import Path

import torch

from cnce import __version__, provenance
from cnce._torch import resolve_device
from cnce.jobs import Job
from cnce.constraints import Integer, validate
from cnce.images.configs import ImageConfig, get_config
from cnce.images.data import PatchSource, Whitener, load_images, load_skimage_images, prepare_image
from cnce.images.draws import RunDraws
from cnce.images.network import ImageNetwork
from cnce.images.recipe import fit_layer3_whitening, start_layer
from cnce.images.runs import (STATE_FILE, DirtyTreeError, cnce_tree, git_commit, load_checkpoint,
                              write_provenance, writes_dirty_weights)

__all__ = ["Trainer", "branch_state", "make_source", "train", "train_comparison", "COMPARE_FILE", "COMPARE_VARIANTS"]

COMPARE_FILE = "compare.pt"
METHODS = ("cnce", "nce")


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



def train(config: str | ImageConfig = "quick", *, out: str | os.PathLike, layers=(1, 2, 3, 4), method: str = "cnce",
          device: str = "auto", seed: int = 0, images: str | os.PathLike | None = None,
          source: PatchSource | None = None, snapshots: bool = False, progress: bool = True,
          threads: int | None = None, monitor=None, allow_dirty: bool = False,
          on_session=None, data: str | None = None) -> dict:
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
        on_session: ``on_session(session)``, called with the record of this invocation (what git
            says of the code, the source hash, device, threads) before it is stored: the caller
            adds or replaces provenance there. A lent GPU machine's copy of the tree carries a
            stale ``.git``, so its driver passes :func:`cnce.images.runs.lent_machine_session`
            (the commit the code came from and the driver script's hash, which
            ``companion.adopt`` checks against that commit). The session always records a hash
            of the package's source (:func:`cnce.provenance.package_source_hash`).
        data: a description of ``source``'s images for the provenance (default: "given PatchSource").
    """
    cfg = get_config(config)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    layers = tuple(int(l) for l in layers)
    if not layers or any(l not in ImageNetwork.LAYERS for l in layers) or list(layers) != sorted(set(layers)):
        raise ValueError(f"layers must be ascending values from {ImageNetwork.LAYERS}; got {layers!r}")
    validate(seed, Integer(), "seed")
    dev = resolve_device(device)
    with torch_switches(dev, threads=threads, tf32=cfg.tf32):
        trainer = Trainer(cfg, out=out, method=method, dev=dev, seed=seed, images=images, source=source,
                          snapshots=snapshots, progress=progress, monitor=monitor, allow_dirty=allow_dirty,
                          on_session=on_session, data=data)
        return trainer.run(layers)


@contextlib.contextmanager
def torch_switches(dev: torch.device, *, threads: int | None = None, tf32: bool = False):
    """The process-wide torch switches a training run sets, restored when it ends (or fails).

    ``threads``: ``torch.set_num_threads`` (None: as is). On the CPU, denormals are flushed to
    zero: Adam drives unused pooling weights towards 0, and their squares (the pooling weights
    q = w**2) into float32's denormal range (below 1.2e-38), where CPU arithmetic is up to 100
    times slower (a layer-2 meta-iteration of `demo` went from 3 s to over 60 s with the authors'
    dense pooling start); torch has no getter for this flag, so it is turned off after (torch's
    default). On CUDA, TF32 matmuls (inputs rounded to 10-bit mantissas) follow ``tf32``."""
    before_threads = torch.get_num_threads()
    before_tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        if threads is not None:
            torch.set_num_threads(int(threads))
        if dev.type == "cpu":
            torch.set_flush_denormal(True)
        if dev.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = bool(tf32)
            torch.backends.cudnn.allow_tf32 = bool(tf32)
        yield
    finally:
        torch.set_num_threads(before_threads)
        if dev.type == "cpu":
            torch.set_flush_denormal(False)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before_tf32


class Trainer:
    """One training run of the image model, with its state explicit.

    ``state`` is what ``<out>/state.pt`` holds (config, method, seed, network, whitening,
    histories, optimiser states, sessions): loaded when the file exists, else new; ``net`` and
    ``source`` are the network and the patches it trains on; ``draws`` is the table of every
    seed the run draws with (:class:`~cnce.images.draws.RunDraws`, computed once). :meth:`run`
    trains layers; each layer is :meth:`train_layer`, which turns the layer number into the
    network's view of the layer (:meth:`ImageNetwork.layer`) once, hands it to the recipe
    (:func:`~cnce.images.recipe.start_layer`) and runs the layer's meta-iterations: the
    patches of the draws table, the recipe's :meth:`~cnce.images.recipe.LayerRecipe.meta_iteration`, the
    record kept and the whole state written atomically. :func:`train` is the function to call;
    it builds a trainer inside :func:`torch_switches`."""

    def __init__(self, cfg: ImageConfig, *, out, method, dev, seed, images=None, source=None, snapshots=False,
                 progress=True, monitor=None, allow_dirty=False, on_session=None, data=None):
        self.cfg, self.method, self.dev, self.seed = cfg, method, dev, seed
        self.draws = RunDraws.of(cfg, seed, ImageNetwork.LAYERS)
        self.snapshots, self.progress, self.monitor = snapshots, progress, monitor
        self.out = Path(out)
        dirty = writes_dirty_weights(self.out)
        if dirty and not allow_dirty:
            raise DirtyTreeError(f"out={str(self.out)!r} is under data/weights/ but cnce/ has uncommitted changes ({dirty}); "
                                 "commit first, or pass allow_dirty=True (recorded in the provenance)")
        # the run's folder, lock and checkpoint (cnce.jobs): held until run() ends or this fails
        self.job = Job(self.out, STATE_FILE, loader=load_checkpoint).acquire()
        try:
            self.state = self._open_state()
            self._add_session(dirty=bool(allow_dirty and dirty), on_session=on_session)
            self.source = self._open_source(images, source, data)
            self.net = ImageNetwork(**cfg.network_kwargs(), seed=seed)
            if self.state["network"] is not None:
                self.net.load_state_dict(self.state["network"])
            self.net.to(dev).requires_grad_(False)
        except BaseException:
            self.job.release()
            raise

    def _open_state(self) -> dict:
        cfg = self.cfg

        def new():
            return dict(config=cfg.to_dict(), sizes=cfg.sizes(), method=self.method, seed=self.seed, history={}, seconds={},
                        snapshots={}, opt={}, data=None, whitener=None, network=None, nce_c={}, wh2_retained=None,
                        device=str(self.dev), torch=str(torch.__version__), package=__version__, git_commit=None)

        resumed = self.job.exists()
        state = self.job.load(new)
        if resumed:
            for key, want in (("config", cfg.to_dict()), ("method", self.method), ("seed", self.seed)):
                if state[key] != want:
                    raise ValueError(f"out={str(self.out)!r} holds a run with a different {key}: {state[key]!r}; use another out")
        return state

    def _add_session(self, *, dirty: bool, on_session) -> None:
        """Every invocation (the first and each resume) records the code it ran with."""
        state, dev = self.state, self.dev
        session = dict(git_commit=git_commit(), cnce_tree=cnce_tree(), images_tree=cnce_tree("cnce/images"),
                       code_commit=None, source_hash=provenance.package_source_hash(exclude=()),
                       allow_dirty=dirty, device=str(dev), threads=torch.get_num_threads(),
                       started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       done={k: len(v) for k, v in state["history"].items()})
        if on_session is not None:
            on_session(session)  # the caller's provenance (a lent machine: the commit, the driver)
        if state["git_commit"] is None:
            state["git_commit"] = session["git_commit"]
        if dev.type == "cuda":
            session["gpu"] = torch.cuda.get_device_name(dev)
        state.setdefault("sessions", []).append(session)

    def _open_source(self, images, source, data) -> PatchSource:
        cfg, state = self.cfg, self.state
        if source is None:
            source, desc = make_source(images, patch=cfg.patch)
        else:
            desc = data or "given PatchSource"
        if state["whitener"] is not None:
            source.whitener = Whitener.from_state_dict(state["whitener"])
        elif source.whitener is None or source.whitener.D != cfg.D:
            source.fit_whitener(cfg.n_whiten, cfg.D, self.draws.whitener, device=self.dev)
        state["whitener"] = source.whitener.state_dict()
        state["data"] = state["data"] or desc
        return source

    def run(self, layers) -> dict:
        """Train ``layers`` (ascending) in turn, write the provenance, return the state; the
        folder's lock is released at the end (also when training fails)."""
        try:
            for layer in layers:
                self.train_layer(layer, layers)
            write_provenance(self.state, self.out)
        finally:
            self.job.release()
        return self.state

    def train_layer(self, layer: int, layers=()) -> None:
        """The meta-iterations of ``layer`` not done yet (none when it is finished): per
        meta-iteration its patches and unseen patches (:class:`~cnce.images.draws.LayerDraws`),
        the recipe's meta-iteration, then the record kept and the whole state written atomically.
        The main set kept for the layer's batches is released when the layer ends."""
        cfg, state, net, dev, source = self.cfg, self.state, self.net, self.dev, self.source
        lk = str(layer)
        if layer > 1 and len(state["history"].get(str(layer - 1), [])) < cfg.meta_iters[layer - 2]:
            raise ValueError(f"layers={tuple(layers)!r}: layer {layer} needs layer {layer - 1} trained first")
        hist = state["history"].setdefault(lk, [])
        n_meta = cfg.meta_iters[layer - 1]
        if layer == 3 and state["wh2_retained"] is None:
            state["wh2_retained"] = fit_layer3_whitening(net, source.draw(cfg.whiten3_samples(), self.draws.layer3_pca, dev), cfg)
        if len(hist) >= n_meta:
            return
        draws = self.draws.layers[layer]
        c0 = 0.0 if cfg.nce_c == "reset" else float(state["nce_c"].get(lk, 0.0))
        eps = hist[-1]["eps"] if hist and cfg.eps_rule == "carry" else cfg.eps_base
        bar = Job.progress(len(hist), n_meta, desc=f"{cfg.name} {self.method} layer {layer}", enabled=self.progress)
        view = net.layer(layer)  # the layer number becomes the network's view of the layer, once
        recipe = start_layer(view, cfg, self.method, dev, pooling_seed=draws.pooling_start, fresh=not hist, c0=c0, eps=eps)
        if self.snapshots and layer == 1 and 0 not in state["snapshots"]:
            state["snapshots"][0] = net.W1.detach().cpu().half()
        for m in bar:
            t0 = time.perf_counter()
            b = draws.batches[m]
            u = source.draw_rows(b.n, b.seed, b.start, b.stop, dev)
            unseen = source.draw(draws.n_unseen, draws.unseen[m], dev)  # never trained on
            rec, opt = recipe.meta_iteration(m, u, unseen, draws.noise[m], opt_state=state["opt"].get(lk))
            del u, unseen
            c = recipe.extra["c"]
            if self.method == "nce":
                rec["c"] = c.item()
            if self.monitor is not None:
                rec.update({k: float(v) for k, v in self.monitor(net, layer, source.whitener).items()})
            if cfg.optimizer == "adam":
                state["opt"][lk] = opt.state_dict()
            rec.update(meta=m, seconds=time.perf_counter() - t0)
            hist.append(rec)
            state["seconds"][lk] = state["seconds"].get(lk, 0.0) + rec["seconds"]
            state["network"] = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
            state["nce_c"][lk] = c.item()
            if m + 1 == n_meta:
                state["opt"].pop(lk, None)  # a finished layer is never resumed: keep the file small
            if self.snapshots and layer == 1:
                state["snapshots"][m + 1] = net.W1.detach().cpu().half()
            state["device"] = str(dev)
            self.job.save(state)
            post = {"loss": f"{rec['loss']:.4f}"}
            if self.method == "cnce":
                post["eps"] = f"{recipe.eps:.3f}"
            bar.set_postfix(post)
        bar.close()
        source.release_rows()
        for p in view.params():
            p.requires_grad_(False)


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
                     on_session=None) -> dict:
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
                   on_session=on_session)
        res["snapshots"][v] = st["snapshots"]
        res["history"][v] = st["history"]["1"]
        res["device"] = st["device"]
        res["sessions"] = st.get("sessions", [])
    res["whitener"] = st["whitener"]
    name = file or (COMPARE_FILE if seed == 0 else f"compare-seed{seed}.pt")
    Path(out).mkdir(parents=True, exist_ok=True)
    provenance.atomic_torch_save({k: v for k, v in res.items() if k != "whitener"}, Path(out) / name)
    return res

