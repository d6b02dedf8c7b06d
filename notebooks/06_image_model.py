# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A four-layer neural image model learned with CNCE
#
# Section 4 of the paper shows that CNCE scales beyond small textbook models: it fits an
# unnormalised, four-layer, fully connected network to natural image patches, one layer at a
# time, and the layers learn the familiar hierarchy of natural-image features (Gabor-like
# edge detectors, their pooling into energy-like units, contour-like third-layer units and
# fourth-layer units that pool those). This page rebuilds that experiment with `cnce.images`.
#
# What differs from the paper, in short (details in the data-provenance note and in
# "Differences from the paper"):
#
# * **Images.** The van Hateren photographs cannot be downloaded here. The page uses seven
#   natural photographs that ship inside the scikit-image package (public domain or CC0), which
#   are 8-bit, gamma-encoded and partly JPEG-compressed, instead of 16-bit linear raw images.
#   Loaders for the real `.iml` files and for a folder of images are in `cnce.images.data`.
# * **Training budget.** The figures come from the largest configuration that was trained and
#   committed under `data/weights/` (printed below). Without a GPU that is `demo`: the paper's
#   layer sizes, but far fewer patches and meta-iterations than the authors used, and Adam
#   minibatches instead of full-batch line searches. The `paper` configuration is ready for a
#   GPU (`python -m cnce image-train --config paper --device cuda --compare`).
#
# The cell below holds the page's parameters: `scale` sets how many patches and features the
# figures analyse (`quick` for the book and CI), `weights` picks the trained run (`"auto"`: the
# largest committed one), `device` where a run without committed weights is trained.

# %% tags=["parameters"]
scale = "quick"
seed = 0
device = "auto"
weights = "auto"

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch

from cnce._torch import resolve_device
from cnce.images import data as imdata
from cnce.images import plots, probes
from cnce.images.train import find_weights, load_state, make_source, network_from_state, train

n_fit, n_top, n_l4 = {"quick": (40, 20_000, 6), "demo": (200, 50_000, 12), "paper": (600, 100_000, 30)}[scale]
run_dir = find_weights(weights)
if run_dir is None:  # a clone without committed weights: train the quick configuration here
    run_dir = Path("../runs/images/quick")
    train("quick", out=run_dir, device=device, seed=seed)
state = load_state(run_dir)
net, whitener = network_from_state(state)
prov = json.loads((run_dir / "provenance.json").read_text())
cfg = state["config"]
print(f"figures from configuration {cfg['name']!r}, seed {state['seed']}, trained on {state['device']}")
print("layer sizes:", state["sizes"])
print("commit of the training code:", (state["git_commit"] or "unknown")[:10])
print("analysis device:", resolve_device(device), "(figures are computed on the CPU)")

# %% [markdown]
# ## Data
#
# Each photograph is converted to grey, log-transformed, scaled to unit variance and cropped
# by four pixels. Because of the logarithm, the gamma encoding of an 8-bit photograph only
# multiplies the log-intensities by a constant, which the variance normalisation removes.
# Patches of 32 x 32 pixels are sampled at random positions; twice as many as needed are drawn
# and the half with the larger variance is kept; each patch loses its mean (the DC component).
# PCA then whitens the patches and keeps 600 dimensions. The training draws fresh patches for
# every meta-iteration.

# %%
names = imdata.SKIMAGE_IMAGES
images = imdata.load_skimage_images(names)
fig, axes = plt.subplots(1, len(images), figsize=(2.0 * len(images), 2.2))
for ax, name, im in zip(axes, names, images):
    ax.imshow(im, cmap="gray")
    ax.set_title(f"{name} {im.shape[1]}x{im.shape[0]}", fontsize=8)
    ax.axis("off")
fig.tight_layout();

# %%
print(f"data used for training: {state['data']}")
print(f"PCA whitening to D = {whitener.D} dimensions keeps {100 * whitener.retained:.1f} % of the patch variance")
if state["wh2_retained"] is not None:
    print(f"whitening of the 2nd-layer outputs to {state['sizes']['D3']} dims keeps {100 * state['wh2_retained']:.1f} %")

# %% [markdown]
# ## Figure 4: data and conditional noise
#
# The noise of CNCE lives in the whitened space: a noise patch is a data patch plus isotropic
# Gaussian noise of standard deviation eps there (Eq. 13); the Gaussian factors of model and
# noise cancel in G (Eqs. 18-20). Below, both are mapped back to pixels (the data patches
# therefore appear as their projection on the 600 retained components), with eps = 0.75 as in
# the paper's figure.

# %%
source, _ = make_source(None)
source.whitener = whitener
u = source.draw(36, seed=seed)
g = torch.Generator().manual_seed(seed)
y = u + 0.75 * torch.randn(u.shape, generator=g)
side = source.size
fig = plots.plot_mosaic({"(a) data patches": whitener.dewhiten(u).reshape(-1, side, side).numpy(),
                         "(b) noise patches, eps = 0.75": whitener.dewhiten(y).reshape(-1, side, side).numpy()}, ncol=6);

# %% [markdown]
# ## Training
#
# The layers were trained greedily: layer 1 first, then layer 2 with layer 1 frozen, and so
# on, with kappa = 6 noise samples per data point. In every meta-iteration the training draws
# fresh patches and fresh noise and re-tunes eps with the image-model rule (grow by 1.15 until
# the loss is clearly below 2 log 2, bisect if the noise became too easy to tell apart). The
# curves show the loss on each meta-iteration's fresh sample *before* its updates, so they
# measure the fit on unseen patches; the dotted line is 2 log 2, the loss of a model that
# cannot tell data from noise.

# %%
for L, n in prov.get("meta_iterations_done", {}).items():
    h = state["history"][L]
    print(f"layer {L}: {n} meta-iterations x {cfg['n_patches'][int(L) - 1]} patches, "
          f"{prov['wall_seconds_per_layer'][L] / 60:.1f} min on {state['device']}, "
          f"loss {h[0]['loss']:.3f} -> {h[-1]['loss']:.3f}, final eps {h[-1]['eps']:.3f}")
fig = plots.plot_training(state["history"], title=f"configuration {cfg['name']}");

# %% [markdown]
# ## Figure 5: first-layer features and second-layer pooling
#
# A first-layer unit computes `w . u~` in the whitened space. Mapped back to pixels
# (dewhitened), each weight vector is an image patch: the input pattern the unit responds to
# most per unit of whitened energy.

# %%
W1 = net.W1.detach()
features = whitener.dewhiten(W1).reshape(-1, side, side).numpy()
rng = np.random.default_rng(seed)
show = np.sort(rng.choice(len(features), size=min(100, len(features)), replace=False))
fig = plots.plot_mosaic({f"100 of the {len(features)} first-layer features": features[show]}, ncol=10, size=7);

# %% [markdown]
# **Are they Gabor-like?** A picture can mislead, so a random sample of the features is fitted
# with a Gabor function (a cosine grating under a Gaussian envelope; position, orientation,
# frequency, phase, width and aspect ratio free) by least squares, and the fraction of each
# feature's variance that the fit explains is reported. Dewhitened random vectors are smooth,
# so a blob-like fit already explains part of their variance: the same fit applied to the
# random initial weights of the same units is the baseline. A feature counts as a localised,
# oriented Gabor when the fit explains at least half its variance, the envelope is narrower
# than a quarter of the patch and holds at least one cycle of the grating.

# %%
from cnce.images.configs import ImageConfig, get_config
from cnce.images.network import ImageNetwork

idx = np.sort(rng.choice(len(features), size=min(n_fit, len(features)), replace=False))
fits = probes.fit_gabors(features[idx])
W1_init = ImageNetwork(**get_config(ImageConfig(**cfg)).network_kwargs(), seed=state["seed"]).W1.detach()
init_feats = whitener.dewhiten(W1_init).reshape(-1, side, side).numpy()
base = probes.fit_gabors(init_feats[idx])
good = probes.gabor_like(fits, side)
print(f"Gabor fits of {len(idx)} randomly chosen first-layer features")
print(f"  explained variance, median: learned {np.median(fits['r2']):.2f}, random initialisation {np.median(base['r2']):.2f}")
print(f"  explained variance >= 0.5: learned {(fits['r2'] >= 0.5).mean():.0%}, initialisation {(base['r2'] >= 0.5).mean():.0%}")
print(f"  localised, oriented Gabors (r2 >= 0.5, envelope <= {side // 4} px, >= 1 cycle): "
      f"learned {good.mean():.0%}, initialisation {probes.gabor_like(base, side).mean():.0%}")
if good.any():
    print(f"  of those: median frequency {np.median(fits['freq'][good]):.3f} cycles/px, "
          f"median envelope width {np.median(fits['sigma'][good]):.1f} px")
    ang = np.degrees(fits["theta"][good]) % 180
    near_hv = np.minimum.reduce([ang, np.abs(ang - 90), 180 - ang]) <= 15
    print(f"  orientation within 15 deg of horizontal/vertical: {near_hv.mean():.0%} (uniform: 33%)")
gain = good.mean() - probes.gabor_like(base, side).mean()
print("verdict:", "the learned features are clearly more Gabor-like than the initialisation" if gain >= 0.2 else
      "at this training budget the learned features are NOT more Gabor-like than the random initialisation")
fig = plots.plot_gabor_summary(fits, base["r2"]);

# %% [markdown]
# The second layer pools squared first-layer outputs with non-negative weights `q = w**2`
# (Eq. 23). Each row shows one randomly chosen second-layer unit, the first-layer features with
# the largest pooling weights (at most ten, or fewer when they already hold 90 % of the unit's
# total weight) and bars for the weights relative to the largest.

# %%
q2 = (net.W2.detach() ** 2).numpy()
units2 = np.sort(rng.choice(q2.shape[0], size=min(8, q2.shape[0]), replace=False)).tolist()
fig = plots.plot_pooling(units2, q2, features);

# %% [markdown]
# ## Figure 6 and Supp. D.3-D.4: third and fourth layer
#
# Third-layer units are shown as *space-orientation receptive fields*: the network is probed
# with Gabor stimuli at a grid of positions, twelve orientations and three frequencies (each
# averaged over four phases). At every probe position a polar curve shows the unit's response
# (above its median response) as a function of the stimulus orientation, drawn along the
# stimulus' bars; lower frequencies, whose stimuli are larger, draw larger curves on a coarser
# grid, and the curve's opacity follows its peak.

# %%
probe = probes.GaborProbe(size=side)
resp3 = probes.probe_layer(net, whitener, probe, layer=3)
print("stimuli per frequency:", {f: probe.positions(f).shape[0] * probe.n_orient * probe.n_phase for f in probe.freqs})
fig = plots.plot_space_orientation(resp3, probe);

# %% [markdown]
# Fourth-layer units pool third-layer outputs linearly with non-negative weights (Eq. 24).
# Each row shows a fourth-layer unit: the space-orientation fields of the third-layer units it
# pools most (bars: pooling weight), then the patches from a large fresh batch that drive the
# unit most.

# %%
X = source.raw(n_top, seed=seed + 1)
top_idx, top_val = probes.top_patches(net, X, whitener, layer=4, k=8)
q4 = (net.W4.detach() ** 2).numpy()
units4 = list(range(min(n_l4, q4.shape[0])))
print(f"searched {n_top} patches; fourth-layer units shown: {units4}")
fig = plots.plot_layer4(units4, q4, resp3, probe, X, top_idx);

# %% [markdown]
# ## Supp. D.2: CNCE against NCE on the first layer
#
# A smaller network (the comparison configuration's first layer) was trained from one common
# initialisation with CNCE and with NCE on the same fresh patches, ten-odd optimiser steps per
# meta-iteration. NCE contrasts the data with standard-normal noise in the whitened space (so
# that, as in CNCE, the Gaussian factor of the model cancels) and learns a log-normaliser `c`.
# Below: a sample of the features of both after the first meta-iterations.

# %%
cmp_path = run_dir / "compare.pt"
if cmp_path.is_file():
    cmp = torch.load(cmp_path, map_location="cpu", weights_only=False)
    snaps = {m: {k: whitener.dewhiten(v.float()).reshape(-1, side, side).numpy()[:49] for k, v in s.items()}
             for m, s in cmp["snapshots"].items()}
    n_meta = max(snaps["cnce"])
    iters = sorted({0, 1, 2, 3, 5, 8, n_meta} & set(snaps["cnce"]))
    for m, h in cmp["history"].items():
        print(f"{m.upper()}: loss on fresh patches {h[0]['loss']:.3f} -> {h[-1]['loss']:.3f} over {len(h)} meta-iterations")
    fig = plots.plot_comparison(snaps, iters, ncol=7);
else:
    print("no comparison run committed for this configuration (python -m cnce image-train --compare)")

# %% [markdown]
# ## Which run these figures come from, and what it shows
#
# The run's provenance file records the package version and commit, the configuration, seed,
# device, wall time per layer and library versions; it is printed below so that the page
# states exactly what it shows. Retraining: `python -m cnce image-train --config demo --compare`
# (resumes after an interruption; `--config paper --device cuda --compare` on a GPU).
#
# How to read the figures of a CPU-sized run. The `demo` budget is roughly a few hundred times
# smaller than the authors' (5000 fresh patches and one pass of minibatch updates per
# meta-iteration, against 200,000 patches and ten line searches). With that budget the loss on
# fresh patches falls well below 2 log 2, so the network does learn to tell data from noise,
# but the first-layer weights stay close to their random initialisation: the Gabor test above
# says whether they moved towards localised, oriented filters, and for the committed CPU run
# it says they did not (a few features show oriented line segments over the smooth
# background that dewhitening gives any random vector). The higher-layer figures inherit that:
# they show what the code computes, not the paper's contour and corner detectors. Reproducing
# Figures 5 and 6 needs the `paper` configuration, which is meant for a GPU and has not been
# trained in this project yet.
#
# Why the features do not become Gabors here (a diagnosis, not yet a fix). Longer training or
# larger steps did not help in the tests below. The committed run's first-layer weights did
# move (relative change 1.03 from the initialisation, mean row norm 1 -> 1.31), and they lean
# towards the coarsest scales: 3.1 % of their energy lies in the 10 lowest-frequency whitened
# coordinates, against 1.7 % for random rows. Measured on 20,000 fresh patches of the bundled
# photographs: before the gain control of Eq. (21) every whitened PCA coordinate is
# super-Gaussian (kurtosis 4.3 to 5.8, the finest scales included); after it, the 500
# highest-frequency coordinates are almost Gaussian (kurtosis 3.2 to 3.3), while the 10
# lowest-frequency ones carry three times the average variance with kurtosis 9.5. Dividing each
# patch by its whitened norm, which the many fine-scale coordinates dominate, removes the shared
# contrast fluctuation that made the fine scales sparse and inflates the coarse part of patches
# with little fine structure. The most non-Gaussian directions open to the first layer are then
# a few global, coarse ones, and CNCE heads there. Short 100-unit tests (20,000 fresh patches
# and one pass of Adam, lr 3e-3, minibatches of 500 per meta-iteration, rows renormalised to
# norm 1 after each step) moved the weights further (relative change about 1.2 after 8
# meta-iterations), put 8 % of the weight energy into the 10 lowest whitened coordinates, and
# gave large cloudy features (median fitted envelope about 23 px at 0.016 cycles/px) with 0 %
# localised Gabors; eps = 0.25 instead of 0.5, or D = 200 instead of 600, did the same, and
# full-batch L-BFGS without renormalisation grew the rows to norm 3.5 within three
# meta-iterations while the loss on fresh patches rose. Without the gain control the drift
# reverses (towards fine-scale global texture, still 0 % localised Gabors after 12
# meta-iterations), so the gain control is not the only obstacle. More optimisation alone is
# therefore unlikely to give Figure 5's features on these images; natural images closer to the
# authors' van Hateren set, or a change of preprocessing, are the open candidates.

# %%
print(json.dumps({k: prov[k] for k in ("package", "git_commit", "device", "seed", "wall_seconds_per_layer",
                                        "meta_iterations_done", "final_eps")}, indent=1))
