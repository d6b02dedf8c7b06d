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
# ```{glue:md} verdict
# :format: myst
# ```
#
# Section 4 of the paper fits an unnormalised four-layer network to natural image patches with
# CNCE, one layer at a time, and reports Gabor-like first-layer features, second-layer units
# that pool alike features, contour-like third-layer units and fourth-layer units that pool
# those. The block above says, layer by layer, what holds when we rerun it with the authors'
# own recipe, and what decides whether that recipe learns at all.
#
# The run on this page comes from `data/weights/` (printed below) and was trained on one GPU at
# the paper's sizes; each layer's measure stands beside a baseline that shows what chance, an
# unstructured filter or random weights give. The photographs are not the paper's
# ({doc}`../book/image-data`); what we found in the authors' code is in
# {doc}`../book/authors-code`, and every difference from the paper in
# {doc}`../book/differences`. The {doc}`appendix page <06a_image_appendix>` draws every unit
# of layers 3 and 4 and every D.2 snapshot.
#
# Two words used throughout: a {term}`meta-iteration` is one round of training a layer: draw
# its patches, draw fresh noise, set eps, then run the optimiser on that sample. A
# {term}`main set` is the authors' pool of patches (200,000 for layer 1) that successive
# meta-iterations share, each taking one half of it in turn; a new main set is drawn only at
# meta-iterations 1, 20 and 40.

# %% tags=["parameters"]
# Values you may change; then rerun all cells (Run > Run All Cells).
# scale: how many patches and units the figures analyse:
#   "quick" (the book), "demo", "paper"
scale = "quick"
seed = 0  # any integer: other patches and units drawn for the figures
# device: where a run trains when no weights are committed:
#   "cpu", "cuda" or "auto" (CUDA when present)
device = "auto"
# weights: "auto" (the committed paper run), "paper", "paper-seed1" or a run folder
weights = "auto"

# %% tags=["hide-input"]
import json
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from myst_nb import glue

from cnce.images import claims as image_claims
from cnce.images import data as imdata
from cnce.images import attribution, measures, plots, probes, runs
from cnce.images.runs import find_weights, load_state, network_from_state
from cnce.images.train import make_source, train

#: The committed runs this page reads, in one place (under data/weights). The four-layer runs:
#: the figures show the first (or the run `weights` names), and every listed run with the same
#: configuration enters the tables over seeds. Adding a run is one more name here.
FOUR_LAYER_RUNS = ["paper", "paper-seed1", "paper-seed2"]  # after a change, rerun scripts/image_claims.py
D2_FILE, D2_SNAPSHOT_RUN = "d2/paper.pt", "compare.pt"  # Supp. D.2: its runs, and the one with snapshots
N_TOP = 10_000  # patches searched for the maximal responses, as in the supplement

import textwrap

pd.set_option("display.width", 100)
pd.set_option("display.max_columns", 12)
sizes = measures.analysis_sizes(scale)


def glue_text(name, value, fmt=""):
    """A number or phrase for the prose, formatted here and inserted by myst-nb's glue role."""
    glue(name, format(value, fmt), display=False)


def pct(x):
    return f"{100 * x:.0f}"


# %%
run_dir = find_weights(FOUR_LAYER_RUNS[0] if weights == "auto" and
                       (runs.weights_dir() / FOUR_LAYER_RUNS[0]).is_dir() else weights)
if run_dir is None:  # no committed weights: train the quick configuration
    run_dir = Path("../runs/images/quick")
    train("quick", out=run_dir, device=device, seed=seed)
state = load_state(run_dir)
net, whitener = network_from_state(state)
cfg = state["config"]
side = cfg["patch"]
seed_dirs = [runs.weights_dir() / r for r in FOUR_LAYER_RUNS if (runs.weights_dir() / r / "state.pt").is_file()
             and runs.same_recipe(load_state(runs.weights_dir() / r)["config"], cfg)] or [run_dir]
print(f"figures from configuration {cfg['name']!r} (optimiser {cfg['optimizer']}), seed {state['seed']}, "
      f"trained on {state['device']}; {len(seed_dirs)} seeds of this configuration are committed")
print("layer sizes:", state["sizes"])
glue_text("run_name", cfg["name"])
glue_text("run_D", whitener.D)
glue_text("n_seeds_full", len(seed_dirs))

# %% tags=["nbval-ignore-output"]
print("commit of the training code:", (state["git_commit"] or "unknown")[:10])

# %%
# The claim measures of layers 2-4 and Supp. D.2 over every committed seed take minutes on a
# CPU: scripts/image_claims.py computes them from the committed runs and this page reads them.
claims_file = runs.weights_dir().parent / "checks" / "image-claims.json"
measured, claim_tables, claim_meta = image_claims.load_measured(claims_file)
claim_runs = claim_meta["groups"][""]["runs"] if "groups" in claim_meta else claim_meta["args"]["runs"]
print(f"claim measures of runs {claim_runs} and {claim_meta['args']['d2']}, computed at commit "
      f"{claim_meta['git']['git_commit'][:10]}" + (" with uncommitted changes" if claim_meta["dirty_cnce_or_scripts"] else ""))
if claim_runs != FOUR_LAYER_RUNS:
    print(f"NOTE: this page lists the runs {FOUR_LAYER_RUNS}: rerun scripts/image_claims.py --runs {' '.join(FOUR_LAYER_RUNS)}")


for key_, m_ in measured.items():
    glue_text(f"m_{key_}", m_.verdict)


def show(*keys):
    """Print the committed claim measures ``keys`` (cnce.images.verdicts.Measured), wrapped."""
    for k in keys:
        print(textwrap.fill(str(measured[k]), 100), end="\n\n")


# The deciding claims of layers 2-4 (photo-pack runs) under two measure settings each, with null
# distributions (scripts/image_settings.py; the section "Every verdict under two measure settings")
settings, _, settings_meta = image_claims.load_measured(runs.weights_dir().parent / image_claims.SETTINGS_FILE)
AUTHORS_PROBE = "authors' probe (0.10-0.25 cycles/pixel)"


def show_settings(*keys):
    """Print the photo-pack claims ``keys`` over their settings, wrapped."""
    for k in keys:
        print(textwrap.fill(f"{settings[k].claim}: {settings[k].verdict}", 100), end="\n\n")

# %% [markdown]
# ## Data
#
# Each photograph is converted to grey, log-transformed, scaled to unit variance and cropped
# by four pixels. Because of the logarithm, the gamma encoding of an 8-bit photograph only
# multiplies the log-intensities by a constant, which the variance normalisation removes.
# Patches of 32 x 32 pixels are sampled at random positions; twice as many as needed are drawn
# and the half with the larger variance is kept; each patch loses its mean (the DC component).
# PCA, fitted on 400,000 patches as in the authors' code, whitens the patches and keeps D
# dimensions (the paper and this run: {glue:text}`run_D`). A second, larger set of
# photographs is used further down ({ref}`image-photos`).

# %% tags=["hide-input", "remove-output"]
names = imdata.SKIMAGE_IMAGES
images = imdata.load_skimage_images(names)
plots.glue_figure("fig_photos", plots.plot_photos(images, names))
# their sizes (width x height), smallest and largest, for the data page (megapixels: bundled_mpx below)
by_size = sorted(images, key=lambda im: im.size)
glue_text("bundled_sizes", " to ".join(f"{im.shape[1]} x {im.shape[0]}" for im in (by_size[0], by_size[-1])))

# %% [markdown]
# ```{glue:figure} fig_photos
# :alt: Seven grey photographs in a grid, each titled with its name and size: a cameraman, grass, gravel, a cat, a coffee cup, an astronaut and a rocket launch.
# :name: fig-image-photos
#
# The seven photographs bundled with scikit-image that the run on this page was trained on
# (not the paper's van Hateren images; {doc}`../book/image-data`). See: few, small and partly
# man-made scenes, with many straight edges.
# ```

# %%
print(f"data used for training: {state['data']}")
print(f"PCA whitening to D = {whitener.D} dimensions keeps "
      f"{100 * whitener.retained:.1f} % of the patch variance")
if state["wh2_retained"] is not None:
    print(f"whitening of the 2nd-layer outputs to {state['sizes']['D3']} dims "
          f"keeps {100 * state['wh2_retained']:.1f} %")
glue_text("pca_retained", 100 * whitener.retained, ".0f")

# %% [markdown]
# ## Figure 4: data and conditional noise
#
# The noise of CNCE lives in the whitened space: a noise patch is a data patch plus isotropic
# Gaussian noise of standard deviation eps there (Eq. 13); the Gaussian factors of model and
# noise cancel in G (Eqs. 18-20). Below, both are mapped back to pixels (the data patches
# therefore appear as their projection on the retained PCA components), with eps = 0.75 as in
# the paper's figure.

# %% tags=["hide-input", "remove-output"]
source, _ = make_source(None)
source.whitener = whitener
u = source.draw(36, seed=seed)
y = u + 0.75 * torch.randn(u.shape, generator=torch.Generator().manual_seed(seed))  # Eq. (13)
fig = plots.plot_mosaic({"(a) data patches": whitener.dewhiten(u).reshape(-1, side, side).numpy(),
                         "(b) noise patches, eps = 0.75": whitener.dewhiten(y).reshape(-1, side, side).numpy()},
                        ncol=6, size=3.4)
plots.glue_figure("fig4", fig)

# %% [markdown]
# ```{glue:figure} fig4
# :alt: Two 6 by 6 grids of small grey image patches side by side. Left, data patches with edges, texture and smooth regions. Right, the same patches with noise added: their structure is still visible but partly hidden under blotchy noise.
# :name: fig-image-fig4
#
# Paper Fig. 4: 36 data patches (a) and their conditional noise with eps = 0.75 (b), both
# mapped back to pixels. See: each noise patch is its data patch plus noise, so the
# classifier must tell data from noise near the data, not far from it.
# ```

# %% [markdown]
# ## Training
#
# The layers were trained greedily, layer 1 first, with kappa = 6 noise samples per data
# point and the authors' recipe: in every meta-iteration one half of the current main set,
# fresh noise, eps set by their rule (restarting from 0.5), then one call of their minimiser,
# ten near-exact conjugate-gradient line searches on the whole batch (`cnce.images.cg`).
# The curves show the loss on each meta-iteration's sample *before* its updates; the dotted
# line is 2 log 2, the loss of a model that cannot tell data from noise.

# %%
prov = json.loads((run_dir / "provenance.json").read_text())
for L, h in sorted(state["history"].items()):
    n_patches = cfg["n_patches"][int(L) - 1]
    print(f"layer {L}: {len(h)} meta-iterations x {n_patches} patches, "
          f"loss {h[0]['loss']:.2f} -> {h[-1]['loss']:.2f}, final eps {h[-1]['eps']:.2f}, "
          f"{state['seconds'][L]:.0f} s")

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_training", plots.plot_training(state["history"]))
glue_text("run_seed", state["seed"])

# %% [markdown]
# ```{glue:figure} fig_training
# :alt: Two line plots against meta-iteration, one line per layer. Left, the CNCE loss on each fresh sample falls below the dotted line at 2 log 2 for every layer within a few meta-iterations and stays between about 0.3 and 0.7. Right, eps for each layer, stepping down from 0.5 or 0.75 to 0.25 or 0.125.
# :name: fig-image-training
#
# Training of configuration {glue:text}`run_name`, seed {glue:text}`run_seed`: the loss J on
# each meta-iteration's fresh sample before its updates (left; dotted: 2 log 2, a model that
# cannot tell data from noise) and eps as the authors' rule sets it (right), one line per
# layer. See: every layer's loss falls well below 2 log 2.
# ```

# %% [markdown]
# ## Figure 5 (left): first-layer features
#
# A first-layer unit computes `w . u~` in the whitened space. Two pictures of a weight vector
# `w` live in pixel space:
#
# * its **feature**, `w` mapped back through the whitening ({term}`dewhitened`, multiplied by the
#   inverse of the whitening matrix): the image pattern the unit responds to most per unit of
#   whitened energy. This is what the paper's Fig. 5 shows;
# * its **receptive field**, the pixel filter whose inner product with the mean-free patch
#   gives `w . u`. Whitening flattens the spectrum, so receptive fields emphasise fine scales
#   and features coarse ones.
#
# Below, the same {glue:text}`n_show1` randomly chosen units in both pictures.

# %% tags=["hide-input", "remove-output"]
W1 = net.W1.detach()
pics = measures.unit_images(W1, whitener)
rng = np.random.default_rng(seed)
show_units = np.sort(rng.choice(len(W1), size=min(48, len(W1)), replace=False))
for key in ("features", "receptive fields"):
    plots.glue_figure(f"fig5_{key.split()[0]}", plots.plot_mosaic({"": pics[key][show_units]}, ncol=12, size=6.8))
glue_text("n_show1", len(show_units))
glue_text("K1", len(W1))
glue_text("run_dir_name", str(run_dir.relative_to(runs.weights_dir())) if run_dir.is_relative_to(runs.weights_dir())
          else str(run_dir))

# %% [markdown]
# ```{glue:figure} fig5_features
# :alt: A grid of 48 small grey squares, 12 across and 4 down. Most show a small dark-and-light edge or bar at some position and angle on a flat grey background; a few show a broad smooth ramp or fine noise.
# :name: fig-image-fig5-features
#
# Paper Fig. 5 (left): the features (dewhitened weights, as the paper draws them) of
# {glue:text}`n_show1` randomly chosen of the {glue:text}`K1` first-layer units of run
# {glue:text}`run_dir_name` (the seven bundled photographs). See: most
# are small localised edges at many orientations and positions, all at about one scale.
# ```
#
# ```{glue:figure} fig5_receptive
# :alt: The same 48 units as receptive fields: small, sharp oriented bars and edges, finer than in the features, on flat grey.
# :name: fig-image-fig5-rf
#
# The receptive fields (pixel filters) of the same {glue:text}`n_show1` units. See: the same
# positions and orientations as the features, at a finer scale, since whitening flattens
# the spectrum.
# ```

# %% [markdown]
# **Are they oriented?** Every unit is measured from its Fourier power
# (`cnce.images.measures.filter_properties`): the
# {term}`orientation-selectivity index (OSI) <orientation selectivity index (OSI)>` is
# the length of the power-weighted mean of the doubled angles of the wave vectors: 0 for an
# isotropic filter, 1 for a grating. A unit counts as *oriented* when its OSI exceeds that of
# 95 % of **localised white noise** passed through the same whitening (so 5 % of that
# baseline counts as oriented by construction). Beside the learned units, the same cell
# measures:
#
# * the **positive control**: FastICA, the textbook linear method that finds Gabor-like
#   filters in natural images, run as it is known to work: a complete basis (600 filters at
#   D = 600) from {glue:text}`ica_n_patches` patches (committed, from the same GPU session;
#   `data/weights/ica/`). It ran {glue:text}`ica_iterations` iterations and stopped there
#   without reaching its tolerance: in the last iteration some filter still turned by
#   {glue:text}`ica_turn` (one minus the cosine), against a tolerance of
#   {glue:text}`ica_tol`. The test certifies nothing unless it passes this;
# * the run's **random initialisation**, and **isotropic differences of Gaussians** (localised
#   and band-pass, not oriented): both must fail it.

# %%
ica = runs.load_pt("ica/paper.pt")
wh_ica = imdata.Whitener.from_state_dict(ica["whitener"])
W_init = measures.initial_network(state).W1.detach()
sets = {"learned": W1, "FastICA": ica["W"], "initialisation": W_init,
        **measures.baseline_weights(whitener, len(W1), seed=seed)}
l1, l1_props = measures.layer1_table(sets, whitener)
print(f"FastICA: {ica['info']['K']} filters at D = {ica['info']['D']} from {ica['info']['N']:,} patches, "
      f"{ica['info']['iterations']} iterations, largest last turn {ica['info']['turn']:.1e}")
print(measures.layer1_summary(l1).round(2).to_string())
thresholds = {pic: l1.loc[(pic, "learned"), "osi_threshold"] for pic in ("receptive fields", "features")}

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_l1_measures", plots.plot_layer1_measures(l1_props, thresholds=thresholds))

# %% [markdown]
# ```{glue:figure} fig_l1_measures
# :alt: Four step-histogram panels, receptive fields on top and features below. Left panels, the orientation-selectivity index from 0 to 1, with a dotted vertical threshold line; the learned units and FastICA lie mostly to the right of it, localised noise, isotropic differences of Gaussians and the initialisation to the left. Right panels, the preferred frequency on a log axis from 1/32 to 1/2 cycles per pixel.
# :name: fig-image-l1-measures
#
# The layer-1 measures, as a fraction of each set of units: orientation-selectivity index
# (left; dotted: the oriented threshold, exceeded by 5 % of localised noise) and preferred
# frequency (right), for receptive fields (top) and features (bottom). See: the learned units
# lie with the positive control FastICA above the threshold, the negative controls below it;
# the learned units span a narrow band of frequencies.
# ```

# %% tags=["hide-input"]
glue_text("ica_n_patches", ica["info"]["N"], ",")
glue_text("ica_iterations", ica["info"]["iterations"], ",")
glue_text("ica_turn", ica["info"]["turn"], ".1e")
ICA_TOL = 1e-6  # the tolerance the committed FastICA run was given (scripts/gpu_section4.py)
glue_text("ica_tol", ICA_TOL, ".0e")
for pic, key in (("receptive fields", "rf"), ("features", "feat")):
    for name, short in (("learned", "learned"), ("FastICA", "ica"), ("localised noise", "noise"),
                        ("isotropic DoG", "dog"), ("initialisation", "init")):
        row = l1.loc[(pic, name)]
        glue_text(f"osi_{key}_{short}", row["osi_median"], ".2f")
        glue_text(f"oriented_{key}_{short}", 100 * row["oriented_share"], ".0f")
        glue_text(f"octaves_{key}_{short}", row["octaves"], ".1f")
control_passes = bool(l1.loc[("receptive fields", "FastICA"), "oriented_share"] >= 0.5
                      and l1.loc[("features", "FastICA"), "oriented_share"] >= 0.5)
negatives_fail = bool(max(l1.loc[("receptive fields", n), "oriented_share"] for n in ("initialisation", "isotropic DoG")) <= 0.10)
print("positive control passes:", control_passes, "| negative controls fail:", negatives_fail)

# %% [markdown]
# The positive control passes: {glue:text}`oriented_rf_ica` % of FastICA's receptive fields
# and {glue:text}`oriented_feat_ica` % of its features are oriented (median OSI
# {glue:text}`osi_rf_ica` against {glue:text}`osi_rf_noise` for localised noise), while
# isotropic differences of Gaussians give {glue:text}`oriented_rf_dog` % and the random
# initialisation {glue:text}`oriented_rf_init` %. (The control of earlier versions of this page
# failed; it differed from this one in three things at once: 200 filters at D = 600
# (undercomplete), 20,000 patches (under-sampled) and at most 200 iterations.) The
# learned receptive fields of the run drawn on this page: median OSI {glue:text}`osi_rf_learned`,
# {glue:text}`oriented_rf_learned` % oriented; their features
# {glue:text}`oriented_feat_learned` %.
#
# **Across seeds.** The same measures for every committed seed of this configuration:

# %%
per_seed = []
for d in seed_dirs:
    st = load_state(d)
    n_s, wh_s = network_from_state(st)
    t, _ = measures.layer1_table({"learned": n_s.W1.detach(), **measures.baseline_weights(wh_s, len(n_s.W1), seed=seed)}, wh_s)
    per_seed.append({"seed": st["seed"], "oriented RF": t.loc[("receptive fields", "learned"), "oriented_share"],
                     "oriented features": t.loc[("features", "learned"), "oriented_share"],
                     "median OSI RF": t.loc[("receptive fields", "learned"), "osi_median"],
                     "final J": st["history"]["1"][-1]["loss"]})
per_seed = pd.DataFrame(per_seed).set_index("seed")
print(per_seed.assign(**{c: [f"{pct(v)} %" for v in per_seed[c]] for c in ("oriented RF", "oriented features")})
      .round(3).to_string())
lo, hi = per_seed["oriented RF"].min(), per_seed["oriented RF"].max()
l1_octaves = l1.loc[("features", "learned"), "octaves"]  # spread of preferred frequency (10-90 %)
glue_text("l1_oriented_range", f"{pct(lo)} %" if abs(hi - lo) < 0.005 else f"{pct(lo)}-{pct(hi)} %")
layer1_ok = bool(lo >= 0.5 and control_passes and negatives_fail)

# %% [markdown]
# **Units that hug the border.** Some receptive fields sit against the edge of the patch. A
# patch is a 32 x 32 window cut from a larger image, and its mean is removed; a unit whose
# preferred structure lies partly outside the window sees only its truncated part, and the
# whitened space weights the finest scales most, where the window's edge is itself a sharp
# feature. FastICA, which knows nothing of CNCE, places a similar share of its filters there,
# so we read them as a property of the patch window, not of the estimator:

# %%
border = {name: measures.border_share(l1_props[name, "receptive fields"], side)
          for name in ("learned", "FastICA", "localised noise")}
print({k: round(v, 2) for k, v in border.items()}, "(share with the energy centroid within 4 px of the border;",
      "localised noise is drawn away from the border by construction)")
glue_text("border_learned", pct(border["learned"]))
glue_text("border_ica", pct(border["FastICA"]))

# %% [markdown]
# **The Gabor-fit test, for comparison.** Earlier versions of this page judged the units with
# a least-squares Gabor fit (a unit passes when the fit explains at least half its variance,
# the envelope is narrower than a quarter of the patch and holds at least one cycle). That test
# certifies *localisation*, not orientation, as the next cell shows on the two baselines.

# %%
fit_idx = np.sort(rng.choice(len(W1), size=min(sizes["n_gabor"], len(W1)), replace=False))
gabor_rows = []
for name in ("learned", "localised noise", "isotropic DoG"):
    rf = measures.unit_images(sets[name][fit_idx], whitener)["receptive fields"]
    s = probes.gabor_summary(probes.fit_gabors(rf), side)
    gabor_rows.append({"units": name, "Gabor-like share": s["gabor_like"], "median r2": s["median_r2"]})
gabor_table = pd.DataFrame(gabor_rows).set_index("units")
print(f"Gabor fits of the receptive fields of {len(fit_idx)} units per set")
print(gabor_table.round(2).to_string())

# %% tags=["hide-input"]
for name, short in (("learned", "learned"), ("localised noise", "noise"), ("isotropic DoG", "dog")):
    glue_text(f"gabor_{short}", 100 * gabor_table.loc[name, "Gabor-like share"], ".0f")

# %% [markdown]
# The Gabor test passes {glue:text}`gabor_learned` % of the learned receptive fields,
# {glue:text}`gabor_noise` % of localised noise and {glue:text}`gabor_dog` % of isotropic
# differences of Gaussians: a pass there means "localised"; the OSI test above is what tells
# oriented units from noise. (The fits are least-squares searches: on another CPU or thread
# count a unit at the pass threshold can fall the other way, so these shares can move by a few
# per cent.)
#
# **Gabor-like: localised, oriented and band-pass.** The paper's word for the first-layer
# features names three properties at once, and the verdict tests all three on each unit's
# receptive field (`cnce.images.measures.gabor_like`): *localised* when a disc much smaller than
# the patch holds more of its energy than for 95 % of white noise; *oriented* by the OSI above;
# *band-pass* when its Fourier power peaks between one cycle per patch and
# {glue:text}`l1g_fmax` cycles/pixel and a band around that peak holds more of it than for 95 %
# of localised noise. Both data sets, three seeds each, under two settings
# ({glue:text}`l1g_settings`; `scripts/image_layer1.py`), each part's share of the units:

# %%
l1g, _, _ = image_claims.load_measured(runs.weights_dir().parent / image_claims.LAYER1_FILE)
l1g_rows = {}
for key, m in l1g.items():
    if key.count(" | ") == 2 and m.testable:
        _, group, setting = key.split(" | ")
        parts = {p: np.mean(v) for p, v in m.extra["parts per seed"].items()}
        refs = m.extra["references per seed"]
        l1g_rows[group, setting] = {**parts, "Gabor-like, lowest seed": min(m.extra["per_seed"]),
                                    "controls: Gabor functions": np.mean(refs["Gabor bank"]["Gabor-like"]),
                                    "noise, blobs, DoG, init.": max(max(refs[k]["Gabor-like"]) for k in
                                                                    ("white noise", "localised noise", "isotropic DoG",
                                                                     "Gaussian blobs", "initialisation"))}
l1g_table = pd.DataFrame(l1g_rows).T.rename_axis(["data", "setting"])
print(l1g_table.round(2).to_string())

# %% tags=["hide-input"]
l1g_seed = [x for k, m in l1g.items() if k.count(" | ") == 2 for x in m.extra["per_seed"]]
l1g_band = [x for k, m in l1g.items() if k.count(" | ") == 2 for x in m.extra["parts per seed"]["band-pass"]]
l1g_init = [x for k, m in l1g.items() if k.count(" | ") == 2
            for x in m.extra["references per seed"]["initialisation"]["band-pass"]]
glue_text("l1g_fmax", sorted({s["f_max"] for s in measures.GABOR_SETTINGS.values()})[0], ".2f")
glue_text("l1g_settings", " or ".join(measures.GABOR_SETTINGS))
glue_text("l1g_lo", 100 * min(l1g_seed), ".0f")
glue_text("l1g_hi", 100 * max(l1g_seed), ".0f")
glue_text("l1g_band_lo", 100 * min(l1g_band), ".0f")
glue_text("l1g_band_hi", 100 * max(l1g_band), ".0f")
glue_text("l1g_neg", 100 * l1g_table["noise, blobs, DoG, init."].max(), ".0f")
glue_text("l1g_init_band", 100 * np.mean(l1g_init), ".0f")

# %% [markdown]
# Per seed {glue:text}`l1g_lo` to {glue:text}`l1g_hi` % of the units pass all three, under both
# settings and on both data sets, against at most {glue:text}`l1g_neg` % for noise, blobs,
# differences of Gaussians and the initialisation. Band-pass is the part that fails most
# ({glue:text}`l1g_band_lo` to {glue:text}`l1g_band_hi` % of the units); whitening alone
# makes random weights band-pass near the PCA cut-off ({glue:text}`l1g_init_band` % of the
# initialisation), so that part tells learned units from random ones only together with the
# other two.
#
# ## Layers 2-4: the photo-pack run
#
# The verdicts on layers 2-4 rest on the photo-pack runs (three seeds; {ref}`image-photos`),
# whose first layer spans the frequencies that the frequency claims need. So the figures and
# measures of layers 2-4 below draw one of them, named here; the patches that drive a unit most
# come from the photo pack when it is built on this machine (`scripts/photo-pack.sh`), else
# from the bundled photographs, as printed.

# %% tags=["nbval-ignore-output"]
LAYERS_2_4_RUN = "photos/paper-seed0"  # one of the runs whose verdicts this page states
state_p = load_state(runs.weights_dir() / LAYERS_2_4_RUN)
net, whitener = network_from_state(state_p)  # from here on: the photo-pack run
pics = measures.unit_images(net.W1.detach(), whitener)
l1_props_p = measures.filter_properties(pics["receptive fields"])
pack_file = runs.weights_dir().parent / "photos" / "pack.npz"
source, patch_data = (make_source(pack_file)[0], "photo pack") if pack_file.is_file() else \
    (make_source(None)[0], "bundled photographs (the photo pack is not built here)")
source.whitener = whitener
glue_text("l24_run", LAYERS_2_4_RUN)
glue_text("l24_patches", patch_data.split(" (")[0])
print(f"layers 2-4: run {LAYERS_2_4_RUN}, trained on the photo pack; patches for the figures from the {patch_data}")

# %% [markdown]
# ## Figure 5 (right): second-layer pooling
#
# The second layer pools squared first-layer outputs with non-negative weights `q = w**2`
# (Eq. 23). Each row shows one randomly chosen second-layer unit, the dewhitened features of
# the first-layer units with the largest pooling weights (at most ten, or fewer when they
# already hold 90 % of the unit's total weight, as in the paper) and bars for the weights
# relative to the largest.

# %% tags=["hide-input", "remove-output"]
q2 = (net.W2.detach() ** 2).numpy()
units2 = np.sort(rng.choice(q2.shape[0], size=min(8, q2.shape[0]), replace=False)).tolist()
plots.glue_figure("fig5_pooling", plots.plot_pooling(units2, q2, pics["features"]))
glue_text("K2", q2.shape[0])

# %% [markdown]
# ```{glue:figure} fig5_pooling
# :alt: Eight rows, one per second-layer unit, each labelled with its index and showing up to ten small grey first-layer features with a thin blue bar beneath each; the bars shorten from left to right. Within a row the features mostly sit at the same place in the patch.
# :name: fig-image-fig5-pooling
#
# Paper Fig. 5 (right), photo-pack run {glue:text}`l24_run`: eight randomly chosen of the
# {glue:text}`K2` second-layer units, each with the first-layer features it pools most (at most ten, or as many as hold 90 % of its
# weight) and a bar for each weight relative to the largest. See: a unit pools features at
# one place in the patch, often of similar orientations.
# ```

# %% [markdown]
# **Does a unit pool alike features?** For every second-layer unit, the pooled first-layer
# units (selected as in the figure) are described by the orientation, preferred frequency and
# position (energy centroid) of their receptive fields, and their mean pairwise spread in each is
# compared with random sets of the same size drawn from all first-layer units
# (`cnce.images.measures.pooling_coherence`). A unit is *coherent* in a property when its
# spread is smaller than that of 95 % of its random sets, so 5 % of units are coherent by
# chance; the p-value says whether the share exceeds that (one-sided binomial test).

# %%
p1 = l1_props_p  # the photo-pack run's receptive fields: the filters the units apply, their frequency their tuning
pool2 = measures.pooling_coherence(q2, p1.orientation, p1.frequency, p1.x, p1.y,
                                   n_random=sizes["n_random"], seed=seed)
s2 = measures.summarise_pooling(pool2)
n2 = s2["with_2_or_more"]
tab2 = measures.pooling_table(s2)
tab2["p (vs 5 %)"] = [measures.above_chance(s2[f"{k}_coherent_share"], n2) for k in ("orientation", "frequency", "position")]
print(tab2.round(3).to_string())
print(f"units: {s2['units']} ({n2} pool two or more), median pooled units {s2['n_pooled_median']:.0f}, "
      f"median share of the largest weight {s2['top_share_median']:.2f}")

# %% [markdown]
# **The verdict's measure** (`cnce.images.layer_claims.pooling_claim`) is this test over
# the three photo-pack seeds, with the first-layer units pictured as receptive fields and as
# features, against two null distributions: *random pooling* (each unit's pooled set replaced
# by a random set of its size) and *shuffled properties* (the first-layer units' properties
# permuted among them). The interval is a t-interval over the seeds. A property is supported
# when the interval lies above every baseline's mean and a permutation test per seed against
# each null distribution ({glue:text}`st_n_perm` draws), corrected for the
# three properties, is significant; a property whose input does not spread (preferred
# frequencies spanning under one octave) is not testable here, with that number:

# %%
show_settings("layer2_position", "layer2_orientation", "layer2_frequency")  # the photo-pack runs, two pictures

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_l2_coherence", plots.plot_pooling_coherence({"layer 2": pool2}))

# %% [markdown]
# ```{glue:figure} fig_l2_coherence
# :alt: Four panels for layer 2. Three scatter plots of the spread of each unit's pooled first-layer units in orientation, frequency and position against the spread of random sets of the same size, with a dotted diagonal: the position points lie far below the diagonal, most orientation points below it, and the frequency points scatter around it within a narrow range of about 0.1 to 0.3 octaves. The fourth panel is a histogram of the share of each unit's largest pooling weight, mostly near 10 percent.
# :name: fig-image-l2-coherence
#
# Pooling coherence of layer 2, photo-pack run {glue:text}`l24_run`: for each second-layer unit (a point) the mean pairwise spread
# of the features it pools against that of random sets of the same size (dotted: equal), in
# orientation, frequency and position, and the share of its largest weight. See: units pool
# first-layer units at one place and mostly of similar orientation; points below the diagonal
# in frequency pool units of alike frequency.
# ```

# %% tags=["hide-input"]
for k, fmt in (("orientation", ".0f"), ("frequency", ".2f"), ("position", ".1f")):
    glue_text(f"l2_{k}", s2[f"{k}_median"], fmt)
    glue_text(f"l2_{k}_random", s2[f"{k}_random_median"], fmt)
    glue_text(f"l2_{k}_coherent", 100 * s2[f"{k}_coherent_share"], ".0f")
glue_text("l2_top_share", 100 * s2["top_share_median"], ".0f")
l2_sig = {k: measures.above_chance(s2[f"{k}_coherent_share"], n2) < 0.01 for k in ("orientation", "frequency", "position")}
for k, sig in l2_sig.items():  # kept for the claims page: whether the share is above chance
    glue_text(f"l2_{k}_words", "above chance" if sig else "not above chance")

# %% [markdown]
# Measured: the pooled units' features lie {glue:text}`l2_position` pixels apart (median over
# units) against {glue:text}`l2_position_random` for random sets
# ({glue:text}`l2_position_coherent` % of units coherent), differ in orientation by
# {glue:text}`l2_orientation` degrees against {glue:text}`l2_orientation_random`
# ({glue:text}`l2_orientation_coherent` %) and in frequency by {glue:text}`l2_frequency`
# octaves against {glue:text}`l2_frequency_random` ({glue:text}`l2_frequency_coherent` %).
# The largest weight holds a median {glue:text}`l2_top_share` % of a unit's weight. The
# verdict's measure over the three photo-pack seeds and both pictures of a first-layer unit:
# position, {glue:text}`st_layer2_position`; orientation, {glue:text}`st_layer2_orientation`;
# frequency, {glue:text}`st_layer2_frequency`.
#
# ## Figure 6 and Supp. D.3: third layer
#
# Third-layer units are shown as the paper draws them, as {term}`space-orientation receptive
# fields <space-orientation field>` probed the way the authors' code probes them
# (`cnce.images.probes.AuthorsProbe`: Gabor stimuli at {glue:text}`aprobe_freqs` cycles/pixel,
# a grid of locations per frequency, 121 orientations of which 60 are distinct images, one
# phase). At every probe location a closed polar curve shows the unit's response (above its
# median over all stimuli) against the orientation of the stimulus' bars; its largest radius
# is the stimulus' envelope width, so lower frequencies draw larger circles, and its opacity
# follows its peak. Beside each field, the patches of {glue:text}`n_top` fresh ones that drive
# the unit most. Six units are shown here; all {glue:text}`K3` are on the
# {doc}`appendix page <06a_image_appendix>`.

# %% tags=["hide-input"]
probe = probes.GaborProbe(size=side)  # our probe (12 orientations, 3 frequencies, 4 phases): the measures below
resp3 = probes.probe_layer(net, whitener, probe, layer=3)
aprobe = probes.AuthorsProbe(size=side)  # the authors' probe: the drawings
aresp = probes.probe_layers(net, whitener, aprobe, layers=(3,), linear3=True)  # the icons draw the signed z3
X = source.raw(N_TOP, seed=seed + 1)
top3, _ = probes.top_patches(net, X, whitener, layer=3, k=10)
units3 = list(range(min(6, resp3[0].shape[0])))
glue_text("aprobe_freqs", ", ".join(f"{f:.2f}" for f in aprobe.freqs))
glue_text("n_top", len(X), ",")
glue_text("K3", resp3[0].shape[0])

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig6_l3", plots.plot_layer3_units(aresp[3], aprobe, units3, X, top3))

# %% [markdown]
# ```{glue:figure} fig6_l3
# :alt: Six rows, one per third-layer unit 0 to 5. Each row shows a large square icon of small blue and red polar curves on white at one frequency, denser in some regions than others, and ten grey image patches in two rows of five that contain edges and lines.
# :name: fig-image-fig6-l3
#
# Paper Fig. 6 and Supp. D.3, photo-pack run {glue:text}`l24_run`: third-layer units 0-5 as
# space-orientation fields drawn as the authors draw them (left: the unit's best probe
# frequency only, its linear response, blue where positive and red where negative, scaled by
# its largest magnitude) and the ten of {glue:text}`n_top` patches from the
# {glue:text}`l24_patches` that drive each most (right). See whether a field's blue curves
# line up along a straight or bent contour, and whether its patches hold such a contour there.
# ```

# %% [markdown]
# **Are the fields contour-like?** From each field (`cnce.images.measures.so_rf_properties`):
# the *orientation coherence* (1 when the unit prefers one orientation everywhere in its
# field, as a straight contour detector would), the *frequency share* (1 when it responds at
# one probe frequency only, 1/3 when at all three alike) and the spatial *extent*. The
# baseline is the same network with random layer-3 weights (`cnce.images.measures.random_layer`):
# what remains is the structure that layer 3 itself learned.

# %%
net3 = measures.random_layer(net, 3, seed=seed)
resp3_random = probes.probe_layer(net3, whitener, probe, layer=3)
so3 = {"learned layer 3": measures.so_rf_properties(resp3, probe),
       "random layer 3": measures.so_rf_properties(resp3_random, probe)}
t3 = measures.so_rf_table(so3)
print(t3.round(2).to_string())

# %% [markdown]
# These coherences describe the fields; the paper's sentence is about *contours*, straight or
# bent, longer than a first-layer feature. The verdict's measure
# (`cnce.images.layer_claims.contour_claim`, with `cnce.images.contours`) traces in each
# field, probed with the authors' probe at the unit's best frequency, the strongest smooth
# curve of locations whose preferred orientation follows the curve's tangent; a unit is
# contour-like when that curve holds enough of its response and spans several probe
# locations, straight or bent. It passes hand-built straight, bent and arc detectors and fails
# random, blob and texture units (`tests/test_image_contours.py`); in each network it must
# first pass its positive control, layer-3 units fitted to ideal contour fields through that
# network's own layers 1-2, or the claim is not testable here. Baselines: random layer-3
# weights, and the learned fields with their locations shuffled; all committed seeds:

# %%
show_settings("layer3_contours")  # the photo-pack runs, two probe ranges
l3m = settings[f"layer3_contours | {AUTHORS_PROBE}"]
if "median curve share" in l3m.extra:
    print("median share of a field's response on its best curve, per seed:",
          [round(v, 2) for v in l3m.extra["median curve share"]], "against random weights",
          [round(v, 2) for v in l3m.extra["median curve share, random"]])
if "positive control" in l3m.extra or "control" in l3m.extra:
    c = l3m.extra.get("positive control", l3m.extra.get("control"))
    print(f"positive control inside the network: {100 * c['passed']:.0f} % of {c['n']} hand-built contour units pass "
          f"(median curve share {c['median curve share']:.2f})")

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_l3_coherence", plots.plot_so_coherence(so3))

# %% [markdown]
# ```{glue:figure} fig_l3_coherence
# :alt: Two step-histogram panels comparing learned and random third-layer weights: the orientation coherence of the fields from 0 to 1 (left) and their frequency share from one third to 1 (right). The learned and random curves overlap.
# :name: fig-image-l3-coherence
#
# Third-layer fields of the photo-pack run {glue:text}`l24_run` measured with our probe: orientation coherence (left; 1 for one
# orientation everywhere) and frequency share (right; 1 for one probe frequency), learned
# weights against random layer-3 weights in the same network. See: {glue:text}`l3_see`.
# ```

# %% tags=["hide-input"]
gap3 = t3.loc["learned layer 3", "orientation_coherence"] - t3.loc["random layer 3", "orientation_coherence"]
# the share of learned units more coherent than 95 % of random layer-3 units (5 % by chance)
l3_threshold = np.quantile(so3["random layer 3"]["orientation_coherence"], 0.95)
l3_coherent = float(np.mean(so3["learned layer 3"]["orientation_coherence"] > l3_threshold))
l3_p = measures.above_chance(l3_coherent, len(so3["learned layer 3"]["orientation_coherence"]))
glue_text("l3_coherent_share", pct(l3_coherent))
glue_text("l3_words", "clear" if gap3 >= 0.2 else "weak" if gap3 >= 0.05 else "no")
# the figure's "see" sentence, from the same medians (its caption stood typed before the numbers)
fgap = t3.loc["learned layer 3", "frequency_share"] - t3.loc["random layer 3", "frequency_share"]
glue_text("l3_see", (f"the learned fields are {'more' if gap3 >= 0.05 else 'hardly more'} coherent in orientation than "
                     f"random ones (medians {t3.loc['learned layer 3', 'orientation_coherence']:.2f} against "
                     f"{t3.loc['random layer 3', 'orientation_coherence']:.2f}), while their frequency shares "
                     f"{'nearly coincide' if abs(fgap) < 0.05 else 'differ'} "
                     f"({t3.loc['learned layer 3', 'frequency_share']:.2f} against "
                     f"{t3.loc['random layer 3', 'frequency_share']:.2f})"))
for col, fmt in (("orientation_coherence", ".2f"), ("frequency_share", ".2f"), ("extent", ".1f")):
    glue_text(f"l3_{col}", t3.loc["learned layer 3", col], fmt)
    glue_text(f"l3_{col}_random", t3.loc["random layer 3", col], fmt)

# %% [markdown]
# Measured: median orientation coherence {glue:text}`l3_orientation_coherence` against
# {glue:text}`l3_orientation_coherence_random` with random layer-3 weights, and
# {glue:text}`l3_coherent_share` % of the learned units more coherent than 95 % of the random
# ones (5 % by chance); frequency share {glue:text}`l3_frequency_share` against
# {glue:text}`l3_frequency_share_random`; extent {glue:text}`l3_extent` against
# {glue:text}`l3_extent_random` pixels. A coherent orientation is what a *straight* contour
# detector has; a bent contour detector fails this test by design, and whether the fields
# are *longer* contours than layer 1's the measure does not say. The contour measure, which
# asks exactly that, over the three photo-pack seeds and two probe ranges:
# {glue:text}`st_layer3_contours`.

# %% [markdown]
# ## Figure 6 and Supp. D.4: fourth layer
#
# Fourth-layer units pool third-layer outputs linearly with non-negative weights (Eq. 24).
# For each fourth-layer unit, the upper row shows the space-orientation fields of the
# third-layer units it pools most (bars: pooling weight relative to the largest), the lower
# row the {glue:text}`k_top4` patches from the same batch that drive the unit most. The paper's Fig. 6 shows two
# such units, as below; all {glue:text}`K4` are on the {doc}`appendix page <06a_image_appendix>`.

# %% tags=["hide-input", "remove-output"]
K_TOP4 = 30  # patches drawn per fourth-layer unit
top_idx, top_val = probes.top_patches(net, X, whitener, layer=4, k=K_TOP4)
glue_text("k_top4", K_TOP4)
q4 = (net.W4.detach() ** 2).numpy()
units4 = list(range(min(2, q4.shape[0])))
plots.glue_figure("fig6_l4", plots.plot_layer4_units(units4, q4, aresp[3], aprobe, X, top_idx, top_val))
glue_text("K4", q4.shape[0])

# %% [markdown]
# ```{glue:figure} fig6_l4
# :alt: Two blocks, one per fourth-layer unit 0 and 1. Each starts with the space-orientation icons of the third-layer units it pools, at most six, three to a row, each with a thin blue bar for its pooling weight, followed by three rows of ten grey image patches with thin bars for their responses.
# :name: fig-image-fig6-l4
#
# Paper Fig. 6 and Supp. D.4, photo-pack run {glue:text}`l24_run`: fourth-layer units 0 and
# 1, each with the third-layer fields it pools (at most six, as the authors draw them, or as
# many as hold 90 % of its weight; icons as above; bars: weight relative to the largest) and
# the {glue:text}`k_top4` of {glue:text}`n_top` patches from the {glue:text}`l24_patches` that drive it most (bars: response
# relative to the strongest). See whether the pooled fields share an orientation across
# frequencies (circles of different sizes) or form a corner, as the paper's units 4 and 19 do.
# ```

# %% [markdown]
# **What does a fourth-layer unit pool?** The pooling coherence of the third-layer units each
# fourth-layer unit pools (orientation, probe frequency and centre of their fields, against
# random sets of the same size), and the coherence of the fourth-layer units' own fields
# against the same network with each unit's layer-4 weights randomly permuted.

# %%
p3 = so3["learned layer 3"]
pool4 = measures.pooling_coherence(q4, p3["orientation"], p3["frequency"], p3["x"], p3["y"],
                                   n_random=sizes["n_random"], seed=seed)
s4 = measures.summarise_pooling(pool4)
n4 = s4["with_2_or_more"]
tab4 = measures.pooling_table(s4)
tab4["p (vs 5 %)"] = [measures.above_chance(s4[f"{k}_coherent_share"], n4) for k in ("orientation", "frequency", "position")]
print(tab4.round(3).to_string())
freq_levels = np.unique(np.round(p3["frequency"], 6))
print(f"preferred probe frequencies of the layer-3 units: {freq_levels.tolist()}")
resp4 = probes.probe_layer(net, whitener, probe, layer=4)
net4 = measures.random_layer(net, 4, seed=seed)
resp4_permuted = probes.probe_layer(net4, whitener, probe, layer=4)
so4 = {"learned layer 4": measures.so_rf_properties(resp4, probe),
       "permuted layer 4": measures.so_rf_properties(resp4_permuted, probe)}
t4 = measures.so_rf_table(so4)
print(t4.round(2).to_string())

# %% [markdown]
# The verdict's measures: a fourth-layer unit pools one orientation *across frequencies*
# when its pooled third-layer units are coherent in orientation (as above) and their best
# probe frequencies span at least half an octave
# (`cnce.images.layer_claims.orientation_across_frequency_claim`), with the authors' probe
# and with its extended range (0.05-0.45 cycles/pixel), which could show a spread the
# authors' 0.10-0.25 cannot; and a unit is *corner-like* when its field's traced curve, or two
# touching curves, turn by a large angle (`contour_claim` with `kind="corner"`), against random
# layer-4 weights and shuffled locations, once its positive control passes (layer-4 pooling
# of this network's own layer-3 units fitted to ideal corner fields):

# %%
show_settings("layer4_orientation_across_frequency", "layer4_corners")  # the photo-pack runs, two probe ranges

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_l4_coherence", plots.plot_pooling_coherence({"layer 4": pool4}, units="third-layer"))
left_out = plots.degenerate_spreads(pool4)
glue_text("l4_left_out", (" The " + " and ".join(left_out) + " spread is left out: it is zero for every unit and "
                          "every random set, since all pooled third-layer units prefer the same probe frequency.")
          if left_out else "")

# %% [markdown]
# ```{glue:figure} fig_l4_coherence
# :alt: Two scatter plots for layer 4 of the spread of each unit's pooled third-layer units in orientation and in position against random sets of the same size, with a dotted diagonal; most orientation points lie below the diagonal, the position points somewhat below it. A histogram of the share of each unit's largest pooling weight, spread between 25 and 100 percent.
# :name: fig-image-l4-coherence
#
# Pooling coherence of layer 4, photo-pack run {glue:text}`l24_run`, as for layer 2: per fourth-layer unit the spread of the
# third-layer units it pools against random sets of the same size (dotted: equal), and the
# share of its largest weight.{glue:text}`l4_left_out` See: points below the diagonal pool
# alike units.
# ```

# %% tags=["hide-input"]
for k, fmt in (("orientation", ".0f"), ("frequency", ".2f"), ("position", ".1f")):
    glue_text(f"l4_{k}", s4[f"{k}_median"], fmt)
    glue_text(f"l4_{k}_random", s4[f"{k}_random_median"], fmt)
    glue_text(f"l4_{k}_coherent", 100 * s4[f"{k}_coherent_share"], ".0f")
glue_text("l4_top_share", 100 * s4["top_share_median"], ".0f")
freq_testable = len(freq_levels) > 1
l4_or_sig = measures.above_chance(s4["orientation_coherent_share"], n4) < 0.01
note = (f"{100 * s4['orientation_coherent_share']:.0f} % of the units pool third-layer units coherent in "
        f"orientation (5 % by chance). Pooling one orientation across frequencies (extended probe): "
        f"{settings['layer4_orientation_across_frequency'].verdict}. Corner-like units: "
        f"{settings['layer4_corners'].verdict}.")
glue_text("l4_verdict_note", note)
glue_text("l4_freq_testable", "can" if freq_testable else "cannot")

# %% [markdown]
# Measured: the largest weight holds a median {glue:text}`l4_top_share` % of a fourth-layer
# unit's weight. The pooled third-layer units differ in orientation by
# {glue:text}`l4_orientation` degrees against {glue:text}`l4_orientation_random` for random
# sets ({glue:text}`l4_orientation_coherent` % coherent) and in position by
# {glue:text}`l4_position` against {glue:text}`l4_position_random` pixels
# ({glue:text}`l4_position_coherent` %). The paper's units pool one orientation *across
# frequencies*. With our probe every third-layer unit prefers the same frequency, so the
# frequency spread above is zero for learned and random sets alike and says nothing; with the
# authors' probe and with its extended range (three photo-pack seeds),
# {glue:text}`st_layer4_orientation_across_frequency`. Corner-like units:
# {glue:text}`st_layer4_corners`.
#
# (image-settings)=
# ## Every verdict under two measure settings, against null distributions
#
# A verdict must not hinge on one arbitrary choice of measure. So each deciding claim of
# layers 2-4 (the photo-pack runs, three seeds) and of Supp. D.2 is measured under two
# reasonable settings, and every baseline is a null distribution of
# {glue:text}`st_n_perm` draws per seed rather than one draw: random pooling (each unit's
# pooled set replaced by a random set of its size), the pooled units' properties shuffled,
# random layer-3 weights, the fields' locations shuffled. A seed passes when its permutation
# p-value, the share of null draws at least as large as the learned share, is below the
# threshold (Bonferroni over the layer's claims). The settings: the picture of a first-layer
# unit that gives its orientation, frequency and position (receptive field or feature) for
# layer 2; the probe's range (the authors' 0.10-0.25 cycles/pixel or 0.05-0.45) for layers 3
# and 4; the share of a unit's weight that counts (90 % or 50 %) for sparsity; and for D.2 the
# orientation index, the Fourier index over all frequencies (as logged during training) or a
# grating index at each unit's best frequency (`cnce.images.measures.grating_tuning`), which
# CNCE's larger, noisier fields do not lose on merely for spreading power over frequencies.
# A claim's verdict is "reproduced" or "not reproduced" only when its settings agree;
# otherwise it says which setting decides (`cnce.images.layer_claims.over_settings`).
# Computed by `scripts/image_settings.py` (`data/checks/image-settings.json`):

# %%
settings_file = runs.weights_dir().parent / image_claims.SETTINGS_FILE
settings, _, settings_meta = image_claims.load_measured(settings_file)
print(f"runs {settings_meta['runs']}, computed at commit {settings_meta['git']['git_commit'][:10]}"
      + (" with uncommitted changes" if settings_meta["dirty_cnce_or_scripts"] else "")
      + f"; {settings_meta['args']['n_perm']} null draws per seed")
with pd.option_context("display.max_colwidth", 70, "display.width", 200):
    print(image_claims.settings_table(settings).to_string())
glue_text("st_n_perm", settings_meta["args"]["n_perm"])
for key_, m_ in settings.items():
    if " | " not in key_:
        glue_text(f"st_{key_}", m_.verdict)

# %% [markdown]
# The claims' verdicts over their settings: layer 2 by position,
# {glue:text}`st_layer2_position`; by orientation, {glue:text}`st_layer2_orientation`; by
# frequency, {glue:text}`st_layer2_frequency`. Layer 2 sparse,
# {glue:text}`st_layer2_sparsity`. Layer 3 contour-like, {glue:text}`st_layer3_contours`.
# Layer 4 one orientation across frequencies,
# {glue:text}`st_layer4_orientation_across_frequency`. Layer 4 corners,
# {glue:text}`st_layer4_corners`. PCA to D = 600, {glue:text}`st_pca_variance`. Supp. D.2,
# CNCE faster: {glue:text}`st_d2_faster`.
#
# These sentences judge the *share* of units. The paper's layer-3 and corner sentences are
# about the units it shows, so the verdict block at the top (the claims ledger) tests them as
# *existence*: in every seed more such units than the null distribution's 95 % quantile, the
# share reported beside it. On layer 3 the two readings can differ: the verdict block's word
# is the ledger's, and its row on the claims page says why.
#
# (image-ablation)=
# ## Why the authors' recipe failed here before, and what decides
#
# An earlier version of this page trained the authors' recipe with L-BFGS instead of their
# minimiser, on two main sets instead of three, with PCA fitted on 50,000 patches, and its
# first layer did not become oriented; a run with fresh patches and Adam did. That changed
# several things at once. The **ablation** below changes one thing at a time on layer 1:
# the optimiser (**their CG**, the conjugate-gradient minimiser of their code, written from
# its algorithm in `cnce.images.cg` and tested against scipy; **L-BFGS**; **Adam**, one
# pass of minibatches of 100) crossed with the data schedule (**their main sets**; **fresh**
# patches every meta-iteration), everything else as in the `paper` configuration, at two
# sizes: the paper's (100,000 patches per meta-iteration, D = 600, 600 units) and `demo`'s
# (20,000 patches per meta-iteration and main sets of 40,000, D = 200, 600 units). Every run
# logs per meta-iteration J after its update on its own patches and noise, on the same patches
# with fresh noise (what it memorised of the noise), on unseen patches with fresh noise (what
# it memorised of the patches), eps and the oriented share. All runs were made on one GPU in
# one session from one commit; intervals are 95 % t intervals over seeds (a single seed has
# none).

# %%
results = runs.load_results()
abl = {size: image_claims.seed_table(runs.ablation_records(results, size)) for size in ("paper", "demo")}
for size, t in abl.items():
    print(f"{size} size: mean over seeds [95 % t interval for 3 seeds (2 degrees of freedom), range for 2]")
    show = pd.DataFrame({"seeds": t["seeds"]})
    for c, f in (("oriented", lambda v: f"{100 * v:.0f} %"), ("J_train", "{:.2f}".format), ("J_unseen", "{:.2f}".format)):
        show[c] = [f(m) + (f" [{f(lo)}, {f(hi)}]" if n > 1 else "")
                   for m, lo, hi, n in zip(t[c], t[f"{c}_lo"], t[f"{c}_hi"], t["seeds"])]
    print(show.to_string(), "\n")

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_ablation", plots.plot_ablation({"paper size": abl["paper"], "demo size": abl["demo"]}))

# %% [markdown]
# ```{glue:figure} fig_ablation
# :alt: Two bar charts side by side, paper size and demo size, each with six bars for the optimisers cg, lbfgs and adam on main sets (red) and fresh patches (blue), with error bars and a dotted line at 5 percent. At paper size every bar is above 80 percent; at demo size cg and lbfgs on main sets are near 10 to 20 percent, the other four between 60 and 80 percent.
# :name: fig-image-ablation
#
# The layer-1 ablation: the oriented share of the receptive fields at the last
# meta-iteration for each optimiser and data schedule, at the paper's size (left) and
# `demo`'s (right); bars are means over seeds, error bars the 95 % t interval for three seeds
# and the range for two (none for one); dotted: 5 % by chance. See: at the paper's size every
# cell learns oriented units; at `demo`'s size their CG and L-BFGS on main sets do not.
# ```

# %% tags=["hide-input"]
tp, td = abl["paper"], abl["demo"]
# the range over every run of every cell (the quantity the claims ledger's recipe row quotes), not over cell means
abl_paper_runs = [r["oriented"] for r in runs.ablation_records(results, "paper")]
glue_text("abl_paper_min", pct(min(abl_paper_runs)))
glue_text("abl_paper_max", pct(max(abl_paper_runs)))
failing = [(o, s) for (o, s), r in td.iterrows() if r["oriented"] < 0.3]
fail_names = " and ".join(f"{runs.OPT_NAMES[o]}" for o, s in failing)
cfg_p, cfg_d = (results["runs"][f"{size}/cg-main/s0"]["config"] for size in ("paper", "demo"))
changed = [(what, a, b) for what, a, b in (
    ("patches per meta-iteration", cfg_p["n_patches"][0], cfg_d["n_patches"][0]),
    ("main sets", cfg_p["main_set"][0], cfg_d["main_set"][0]),
    ("PCA dimension D", cfg_p["D"], cfg_d["D"]),
    ("patches for the PCA", cfg_p["n_whiten"], cfg_d["n_whiten"]),
    ("patches for choosing eps", cfg_p["eps_n"], cfg_d["eps_n"])) if a != b]
changed_text = "; ".join(f"{what} {b:,} instead of {a:,}" for what, a, b in changed)  # demo's value first
cg_fresh = results["runs"]["demo/cg-fresh/s0"]["history"]["1"]
late = next((r["meta"] + 1 for r in cg_fresh if r.get("oriented", 0) >= 0.25), None)
glue_text("demo_changed", changed_text)
glue_text("demo_n_changed", len(changed))
if failing and all(s == "main" for _, s in failing) and all(td.loc[(o, "fresh"), "oriented"] >= 0.5 for o, _ in failing):
    decides = (f"At demo size {len(changed)} settings change together ({changed_text}), so these runs cannot say which "
               f"of them matters; there {fail_names} on main sets memorise them "
               f"({pct(td.loc[failing[0], 'oriented'])} % oriented; J on unseen patches "
               f"{td.loc[failing[0], 'J_unseen']:.2f}, above 2 log 2), Adam on main sets learns oriented units, and "
               f"their CG on fresh patches learns late (its oriented share first reaches 25 % at meta-iteration "
               f"{late} of {len(cg_fresh)}).")
elif not failing:
    decides = "neither the optimiser nor the data schedule decides at either size."
else:
    decides = "at the smaller size: " + ", ".join(f"{o} on {s}" for o, s in failing) + " fail."
glue_text("ablation_decides", decides)
cg_main = results["runs"]["paper/cg-main/s0"]["history"]["1"]
glue_text("recipe_paper_oriented", pct(tp.loc[("cg", "main"), "oriented"]))
glue_text("recipe_n_paper", int(tp.loc[("cg", "main"), "seeds"]))
glue_text("recipe_gpu", results["calls"][0]["gpu"])
glue_text("recipe_paper_seconds", f"{sum(r['seconds'] for r in cg_main):.0f}")
glue_text("demo_cg_main_unseen", f"{td.loc[('cg', 'main'), 'J_unseen']:.2f}")
glue_text("demo_cg_main_train", f"{td.loc[('cg', 'main'), 'J_train']:.2f}")
# the claims ledger's row on the recipe (the three four-layer runs of this page), quoted beside the ablation cell
from companion.claims import ledger as claims_ledger

glue_text("ledger_recipe_measured", claims_ledger.record("image-authors-recipe")["record"]["measured"])

# %% [markdown]
# **Which factor decides.** At the paper's sizes every cell learns oriented units
# ({glue:text}`abl_paper_min`-{glue:text}`abl_paper_max` % in every run), the authors' recipe with their
# minimiser included ({glue:text}`recipe_paper_oriented` % in this ablation's cell, mean of its
# {glue:text}`recipe_n_paper` seeds; layer 1 took {glue:text}`recipe_paper_seconds` s on one
# {glue:text}`recipe_gpu`, sharing it with three other runs). The claims ledger's row on the
# recipe measures the three four-layer runs of this page instead:
# {glue:text}`ledger_recipe_measured`. So at the paper's size neither their minimiser nor their
# main sets keep layer 1 from orienting; the earlier run's own schedule (two main sets, PCA on
# 50,000 patches) was not rerun, so this does not say what failed there.
# {glue:text}`ablation_decides` The curves below show how: with their minimiser on `demo`'s
# main sets J on the training patches falls to {glue:text}`demo_cg_main_train` while J on
# unseen patches stays at {glue:text}`demo_cg_main_unseen`. At the paper's size the curves
# are closer but not together: at meta-iteration {glue:text}`mem_meta` J is
# {glue:text}`mem_own` on the run's own patches and noise, {glue:text}`mem_fresh` with fresh
# noise and {glue:text}`mem_unseen` on unseen patches, so the model still memorises its noise,
# and some of its patches.

# %% tags=["hide-input", "remove-output"]
mem = {"paper size: their CG, main sets": results["runs"]["paper/cg-main/s0"]["history"]["1"],
       "demo size: their CG, main sets": results["runs"]["demo/cg-main/s0"]["history"]["1"],
       "demo size: their CG, fresh": results["runs"]["demo/cg-fresh/s0"]["history"]["1"]}
plots.glue_figure("fig_memorisation", plots.plot_memorisation(mem))
MEM_META = 11  # the meta-iteration quoted in the prose (1-based, as on the figure's axis)
r_mem = next(r for r in mem["paper size: their CG, main sets"] if r["meta"] + 1 == MEM_META)
glue_text("mem_meta", MEM_META)
for key, col in (("mem_own", "train_loss"), ("mem_fresh", "loss_fresh_noise"), ("mem_unseen", "loss_unseen")):
    glue_text(key, r_mem[col], ".2f")

# %% [markdown]
# ```{glue:figure} fig_memorisation
# :alt: Three line plots of the CNCE loss against meta-iteration, for the paper size with their CG on main sets, the demo size with their CG on main sets, and the demo size with their CG on fresh patches. Each shows three curves: own patches and noise (dashed), own patches with fresh noise (dotted) and unseen patches with fresh noise (solid), and a grey dotted line at 2 log 2. In the middle panel the solid curve stays above 2 log 2 while the dashed one is near zero.
# :name: fig-image-memorisation
#
# Memorisation during layer-1 training, seed 0: J after each meta-iteration's update on the
# run's own patches and noise (dashed), on the same patches with fresh noise (dotted) and on
# unseen patches with fresh noise (solid); grey dotted: 2 log 2. See: a gap between dashed
# and dotted is memorised noise, one between dotted and solid memorised patches; on `demo`'s
# main sets the unseen loss never falls below 2 log 2.
# ```

# %% [markdown]
# What then made the earlier `paper` run fail? Between it and the L-BFGS, main-set cell
# above, which learns, only two things differ: PCA fitted on 50,000 instead of 400,000
# patches, and two main sets instead of three. The earlier run was already stuck during the
# first main set (its J on the other half of the main set hardly moved after the first
# meta-iteration, while the runs that learn lower it steadily; that run is no longer
# committed),
# before the schedules differ, which points at the PCA sample. A check without training (`scripts/check_whitening.py`) whitens 100,000
# unseen patches with each fit and reports the eigenvalues of their covariance, which are all
# 1 for a perfect whitening (the test sample's own spread, up to {glue:text}`white_mp` % at
# this size by the Marchenko-Pastur law, is included in both):

# %%
wpath = runs.weights_dir().parent / "checks" / "whitening-sample.json"
glue_text("white_mp", 100 * ((1 + (600 / 100_000) ** 0.5) ** 2 - 1), ".0f")  # largest eigenvalue of a white sample
if wpath.is_file():
    wt = pd.DataFrame(json.loads(wpath.read_text())["rows"])
    wsum = wt.groupby("n_fit")[["eig_min", "eig_max", "eig_p1", "eig_p99"]].mean()
    print(wsum.round(3).to_string())
    glue_text("white_50k", f"{wsum.loc[50_000, 'eig_min']:.2f}-{wsum.loc[50_000, 'eig_max']:.2f}")
    glue_text("white_400k", f"{wsum.loc[400_000, 'eig_min']:.2f}-{wsum.loc[400_000, 'eig_max']:.2f}")
else:
    print("no whitening check committed")
    glue_text("white_50k", "n/a")
    glue_text("white_400k", "n/a")

# %% [markdown]
# Unseen patches whitened with the 50,000-patch fit have variances from
# {glue:text}`white_50k` along their principal directions, against {glue:text}`white_400k`
# with the 400,000-patch fit. Noise that is isotropic in the whitened space then differs from
# the data along directions the fit got wrong, which a classifier can use without learning
# anything about images.
#
# The check above does not train. The test that does (one GPU session, `data/weights/pca/`):
# layer 1 of the L-BFGS, main-set cell for {glue:text}`pca_n_meta` meta-iterations (two main sets, as in the
# earlier run), with the PCA fitted on 50,000 or on 400,000 patches and nothing else changed,
# two seeds each, logging the oriented share and J on unseen patches after every
# meta-iteration (`cnce.images.attribution.pca_test`):

# %%
pca = attribution.pca_test()
print(textwrap.fill(pca.verdict, 100))
glue_text("pca_verdict", pca.verdict)
glue_text("pca_word", pca.verdict.split(":")[0])
glue_text("pca_n_meta", pca.extra["meta_iterations"])
glue_text("pca_n_seeds", pca.n_seeds)

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_pca_test", plots.plot_pca_test(attribution.pca_histories()))

# %% [markdown]
# ```{glue:figure} fig_pca_test
# :alt: Two line charts over 20 meta-iterations. Left, the oriented share of layer 1 in percent: the two runs with PCA on 400,000 patches climb steadily to about 30 percent, the two with PCA on 50,000 patches stay near 2 percent, below the dotted chance line at 5 percent. Right, J on unseen patches: the 400,000-patch runs fall from about 1.3 to about 0.65, the 50,000-patch runs rise above the dotted 2 log 2 line.
# :name: fig-image-pca-test
#
# The PCA-sample test: layer 1 of the L-BFGS, main-set recipe with the PCA fitted on 50,000
# (red) or 400,000 (blue) patches, {glue:text}`pca_n_seeds` seeds each (solid, dashed), {glue:text}`pca_n_meta`
# meta-iterations. See:
# with the smaller PCA sample the units do not become oriented within these meta-iterations
# and J on unseen patches climbs above 2 log 2 while the model fits its own training patches,
# the failure of the earlier run, until it drops at the last meta-iteration (a new main set);
# with the larger sample both curves move the other way from the first main set on.
# ```
#
# Verdict: {glue:text}`pca_verdict`. Within what ran ({glue:text}`pca_n_meta` meta-iterations,
# {glue:text}`pca_n_seeds` seeds per arm), changing only the PCA sample reproduces the earlier
# failure: the 50,000-patch fit is enough to explain it, without the optimiser or the
# schedule. Whether the 50,000-patch arm would stay unoriented over the full 40
# meta-iterations this test does not say. The mechanism suggested above (noise that differs
# from the data along directions the fit got wrong) is consistent with the rising J on unseen
# patches, though this test does not isolate it.
#
# (image-photos)=
# ## A larger set of photographs: all four layers, three seeds
#
# Whether the bundled photographs give a single-scale first layer depends on the picture of a
# unit: its preferred frequencies spread over {glue:text}`ss_rf_octaves` octaves as receptive
# fields but {glue:text}`ss_feat_octaves` as features (10th to 90th percentile, per seed). So
# layer 2's pooling by frequency cannot be tested there in the first picture (the test needs
# one octave) and can in the second, where it is {glue:text}`ss_l2f_word`
# ({glue:text}`ss_l2f_feat`; `scripts/image_layer1.py`). The photo pack ({glue:text}`pack_n` Debian
# wallpaper photographs, {doc}`../book/image-data`; {glue:text}`pack_ratio` times the bundled
# set's patch positions) was trained with the `paper` recipe at the paper's sizes, all four
# layers, three seeds, with the authors' layer-3 input (each sample's mean over its 200
# layer-2 outputs removed before a PCA fitted on 400,000 samples; the runs above used the
# ensemble mean and 150,000 samples). These runs, the PCA test above and the layer-3 branches
# below came from two calls of one GPU session, each from one commit (`data/weights/photos/`,
# `data/weights/pca/`, `data/weights/l3/`; the last section of this page names both).

# %% tags=["hide-input"]
from cnce.images.pack import patch_positions

pack = json.loads((runs.weights_dir().parent / "checks" / "photo-pack.json").read_text())
bundled = sum(patch_positions(imdata.prepare_image(im).shape, border=0) for im in images)
glue_text("pack_n", len(pack["photos"]))
glue_text("pack_mpx_source", pack["source_pixels"] / 1e6, ".1f")
glue_text("pack_mpx", pack["pixels"] / 1e6, ".2f")
glue_text("pack_positions", pack["patch_positions_32"] / 1e6, ".2f")
glue_text("bundled_positions", bundled / 1e6, ".2f")
glue_text("bundled_mpx", sum(im.size for im in images) / 1e6, ".2f")
glue_text("pack_ratio", pack["patch_positions_32"] / bundled, ".1f")
print(pd.DataFrame([{k: p[k] for k in ("name", "package", "author")} | {"size used": "x".join(map(str, p["shape"][::-1]))}
                    for p in pack["photos"]]).to_string(index=False))

# %% tags=["hide-input"]
l1_file, l1_tables = image_claims.load_measured(runs.weights_dir().parent / image_claims.LAYER1_FILE)[:2]
oct_ = l1_tables["layer-1 octaves"].loc["bundled photographs"]
for pic, key in (("receptive fields", "ss_rf_octaves"), ("features", "ss_feat_octaves")):
    v = oct_[oct_["picture"] == pic]["octaves"]
    glue_text(key, f"{v.min():.2f}-{v.max():.2f}")
glue_text("ss_l2f_feat", l1_file["bundled layer2_frequency | layer-1 features"].verdict)
glue_text("ss_l2f_word", image_claims.badge(l1_file["bundled layer2_frequency"]))

# %%
PHOTO_RUNS = claim_meta["groups"]["photos/"]["runs"]
rows_ph = []
for r in PHOTO_RUNS:
    st_ph = load_state(runs.weights_dir() / r)
    net_ph, wh_ph = network_from_state(st_ph)
    tph, _ = measures.layer1_table({"learned": net_ph.W1.detach(), **measures.baseline_weights(wh_ph, len(net_ph.W1), seed=seed)},
                                   wh_ph)
    s_ = measures.layer1_summary(tph).loc[("receptive fields", "learned")]
    rows_ph.append({"seed": st_ph["seed"], "oriented RF": s_["oriented"], "f p10": s_["f p10"], "f p90": s_["f p90"],
                    "octaves": s_["octaves"], "final J layer 1": st_ph["history"]["1"][-1]["loss"]})
rows_ph = pd.DataFrame(rows_ph).set_index("seed")
print("data:", st_ph["data"])
print(rows_ph.round(2).to_string())
glue_text("photos_oriented", image_claims.format_interval(rows_ph["oriented RF"], share=True))
glue_text("photos_octaves", f"{rows_ph['octaves'].min():.1f}-{rows_ph['octaves'].max():.1f}")
glue_text("photos_f10", f"{rows_ph['f p10'].min():.2f}-{rows_ph['f p10'].max():.2f}")
glue_text("photos_f90", f"{rows_ph['f p90'].min():.2f}-{rows_ph['f p90'].max():.2f}")
glue_text("l1_octaves_bundled", f"{l1.loc[('receptive fields', 'learned'), 'octaves']:.1f} octaves (seed 0)")

# %% [markdown]
# On the photo pack {glue:text}`photos_oriented` of the receptive fields are oriented, and their preferred
# frequencies spread over {glue:text}`photos_octaves` octaves (10th to 90th percentile, from
# {glue:text}`photos_f10` to {glue:text}`photos_f90` cycles/pixel), against
# {glue:text}`l1_octaves_bundled` on the bundled photographs. The same measures of layers 2-4
# as above, for both sets of photographs (three seeds each; the authors' probe, and for the
# frequency claims of layer 4 its extended range):

# %%
CLAIM_KEYS = {"layer 2 pools by position": "layer2_position", "layer 2 pools by orientation": "layer2_orientation",
              "layer 2 pools by frequency": "layer2_frequency", "layer 3: contour-like units": "layer3_contours",
              "layer 4: one orientation across frequencies (authors' probe)": "layer4_orientation_across_frequency",
              "layer 4: one orientation across frequencies (extended probe)": "layer4_orientation_across_frequency_extended",
              "layer 4: corner-like units": "layer4_corners"}


def cell(m):
    """value [interval] and badge of one Measured, for the side-by-side table."""
    if not m.testable:
        return "not testable here"
    lo_, hi_ = m.interval
    return f"{m.value:.2f} [{lo_:.2f}, {hi_:.2f}]: {image_claims.badge(m)}"


both = pd.DataFrame({claim: {"bundled photographs (earlier layer-3 input)": cell(measured[k]),
                             "photo pack (authors' layer-3 input)": cell(measured["photos/" + k])}
                     for claim, k in CLAIM_KEYS.items()}).T
print(both.to_string())
for claim, k in CLAIM_KEYS.items():
    glue_text(f"ph_{k}", measured["photos/" + k].verdict)
changed = [c for c, k in CLAIM_KEYS.items() if image_claims.badge(measured[k]) != image_claims.badge(measured["photos/" + k])]
glue_text("photos_changed", ", ".join(changed) if changed else "none")
print("verdicts that differ between the two sets of photographs:", changed or "none")

# %% [markdown]
# **What the layer-3 input changes.** The photo-pack runs differ from the bundled ones in two
# things: the photographs and the layer-3 input. To tell them apart, layers 3 and 4 of every
# run (six runs) were trained again on their own finished layers 1-2 with the other layer-3
# input, everything else equal: the same initial weights, patches and noise, since these derive
# from the seed (`cnce.images.train.branch_state`; with the same configuration the branch
# reproduces its parent's layers 3-4 exactly in a CPU test at tiny size). Along a row, within one
# set of photographs, the two columns differ in the layer-3 input alone:

# %%
l3_table = attribution.layer3_input_table(measured)
print(l3_table.to_string())
l3_changed = [c for c in l3_table.index
              for imgs in ("bundled photographs", "photo pack")
              if l3_table.loc[c, (imgs, "earlier (ensemble)")].split("; ")[-1] != l3_table.loc[c, (imgs, "authors' (per sample)")].split("; ")[-1]]
l3_groups = ["", "photos/", "photos-l3-ensemble/", "bundled-l3-sample/"]
l3_vals = [measured[g + "layer3_contours"] for g in l3_groups if g + "layer3_contours" in measured]
glue_text("l3_contour_range", f"{100 * min(m.value for m in l3_vals):.0f}-{100 * max(m.value for m in l3_vals):.0f}")
glue_text("l3_contour_random_range", f"{100 * min(m.baselines['random layer-3 weights'] for m in l3_vals):.0f}-"
                                     f"{100 * max(m.baselines['random layer-3 weights'] for m in l3_vals):.0f}")
assert not any(m.verdict.startswith("supported") for m in l3_vals), "the sentence above says no configuration passes"
glue_text("l3_input_changes", "changes the verdict of " + ", ".join(sorted(set(l3_changed))) if l3_changed
          else "changes no verdict")

# %% [markdown]
# The layer-3 input {glue:text}`l3_input_changes`. What the photo pack changes is layer 1's
# range of frequencies, and with it which claims can be tested: on the bundled photographs layer
# 2's pooling by frequency can be tested only in the feature picture ({glue:text}`ss_l2f_word`
# there, see above) and layer 4's pooling of one orientation across frequencies under neither
# probe range; both are measured on the photo pack in both settings. Contour-like third-layer units are
# {glue:text}`l3_contour_range` % of the units in the four configurations (mean over three
# seeds each), against {glue:text}`l3_contour_random_range` % with random layer-3 weights in
# the same networks; in none does the test pass.
#
# **Which run this page shows, and why.** The figures of layer 1 come from the first seed of
# the bundled photographs: the run that the ablation, the PCA test and Supp. D.2 share, and
# whose layer 1 the positive control certifies. The verdicts on layers 2-4 (the block at the
# top and the claims table) come from the photo pack, because only there can the frequency
# claims fail or pass; so the figures of layers 2-4 above draw a photo-pack run
# ({glue:text}`l24_run`), and the appendix page draws every unit of layers 3 and 4 of it beside
# the bundled run. Both sets of photographs are in the table above.

# %% [markdown]
# ## Supp. D.2: CNCE against NCE on the first layer
#
# The supplement trains a first layer of 100 units with CNCE and with NCE from a common start
# and, from pictures, finds that CNCE appears to learn slightly faster after eleven
# meta-iterations, while declining to claim better performance since the comparison is
# qualitative. Here it is run with their recipe (their minimiser, main sets of 200,000,
# 100,000 patches per meta-iteration, D = 600, CNCE with their eps rule), but with our loss
# code and our photographs, for {glue:text}`d2_meta` meta-iterations and
# {glue:text}`d2_n_seeds` seeds, with NCE twice: with its log-normaliser `c` carried from one
# meta-iteration to the next, and reset to 0 at every meta-iteration, as their
# `NCEstimator.m` does. NCE contrasts the data with standard-normal noise in the whitened
# space.

# %%
cmp = runs.load_pt(D2_FILE)
d2_rows = runs.d2_records(results)
d2 = pd.DataFrame(d2_rows)
at = sorted({1, 2, 5, 11, int(d2["meta"].max())})
tab = d2[d2["meta"].isin(at)].pivot_table(index="meta", columns="variant", values="oriented", aggfunc=["mean", "min", "max"])
print("oriented share of the receptive fields, per cent (mean, min and max over seeds)")
print((100 * tab).round(0).astype(int).to_string())

# %% tags=["hide-input", "remove-output"]
plots.glue_figure("fig_d2_curves", plots.plot_d2_curves(d2_rows))
c0 = cmp[D2_SNAPSHOT_RUN]
wh_c = imdata.Whitener.from_state_dict(ica["whitener"])  # seed 0's whitening (same PCA draw)
feats = {v: {k: measures.unit_images(c0["snapshots"][v][k][:36].float(), wh_c)["features"] for k in (0, 1, 2, 5, 11)}
         for v in ("cnce", "nce-reset")}
plots.glue_figure("fig_d2_features", plots.plot_comparison(feats, [0, 1, 2, 5, 11], ncol=6,
                                                           names={"cnce": "CNCE", "nce-reset": "NCE"}))
glue_text("d2_snap_seed", c0["seed"])
d2t = claim_tables["d2_table"]
plots.glue_figure("fig_d2_measures", plots.plot_d2_measures(d2t, names={"cnce": "CNCE", "nce-reset": "NCE"}))
for m_ in (11, int(d2t.index.max())):
    for v, short in (("cnce", "cnce"), ("nce-reset", "nce")):
        glue_text(f"d2_rms_{short}_{m_}", d2t.loc[m_, f"rms_{v}"], ".1f")
        glue_text(f"d2_or_{short}_{m_}", pct(d2t.loc[m_, f"oriented_{v}"]))
glue_text("d2_sim_11", d2t.loc[11, "similarity"], ".2f")
glue_text("d2_sim_11_ci", f"{d2t.loc[11, 'similarity_lo']:.2f}-{d2t.loc[11, 'similarity_hi']:.2f}")
glue_text("d2_sim_random", d2t.loc[11, "random_p95"], ".2f")
glue_text("d2_sim_start", f"{d2t.loc[11, 'vs_init_cnce']:.2f} and {d2t.loc[11, 'vs_init_nce-reset']:.2f}")
glue_text("d2_table_end", int(d2t.index.max()))

# %% [markdown]
# ```{glue:figure} fig_d2_curves
# :alt: A line plot of the oriented share of layer 1 against meta-iteration for CNCE, NCE with c carried over and NCE with c reset to 0, each with a shaded band for the range over seeds. Both NCE curves rise faster and end higher than the CNCE curve.
# :name: fig-image-d2-curves
#
# Supp. D.2 measured: the oriented share of the first layer's receptive fields after each
# meta-iteration, mean over seeds with the seeds' range shaded. See: NCE (either variant)
# rises faster than CNCE, the opposite of the supplement's impression.
# ```
#
# ```{glue:figure} fig_d2_measures
# :alt: Three line plots against meta-iteration for seed 0. Left, the oriented share: NCE rises to about 90 percent by meta-iteration 9, CNCE rises slowly to about 70 percent by meta-iteration 20. Middle, the median RMS radius of the receptive fields: NCE's falls from 13 to about 7 pixels by meta-iteration 10, CNCE's only to about 10 by meta-iteration 20. Right, the matched similarity of the two feature sets falls from 1 to about 0.45 and recovers slowly to about 0.55, above the random sets' level of about 0.35 and above each method's similarity to the start.
# :name: fig-image-d2-measures
#
# Supp. D.2 measured on seed {glue:text}`d2_snap_seed`'s snapshots
# (`cnce.images.d2.d2_table`): oriented share (left), median RMS radius of the receptive
# fields (middle) and the best one-to-one matching of the two methods' features by |cosine|
# with its interval over the matched pairs (right; dotted: each method against the common
# start; dashed: the 95th percentile for two random sets). See: NCE's fields become oriented
# and small within ten meta-iterations, CNCE's later; the two sets stay more alike than
# random sets and than either is to the start, but not of the same size.
# ```
#
# ```{glue:figure} fig_d2_features
# :alt: Two rows of five grids of 36 small grey features each, CNCE on top and NCE below, at the initialisation and after meta-iterations 1, 2, 5 and 11. Both start as identical noise; by meta-iteration 5 the NCE features are mostly small localised edges while many CNCE features are still noisy.
# :name: fig-image-d2-features
#
# Supp. D.2 as the supplement draws it: 36 of the 100 features of CNCE (top) and NCE with
# `c` reset (bottom), seed {glue:text}`d2_snap_seed`, at the common initialisation and after
# meta-iterations 1, 2, 5 and 11. All 100 features after every one of the first eleven
# meta-iterations are on the {doc}`appendix page <06a_image_appendix>`. See: NCE's features
# become localised edges sooner.
# ```

# %% tags=["hide-input"]
def diff_by_seed(meta, a="cnce", b="nce-reset"):
    g = d2[d2["meta"] == meta].pivot_table(index="seed", columns="variant", values="oriented")
    return (g[a] - g[b]).to_numpy()


d2_meta = int(d2["meta"].max())
d2_end = d2[d2["meta"] == d2_meta].groupby("variant")["oriented"].mean()
d11 = diff_by_seed(11)
glue_text("d2_verdict", f"After 11 meta-iterations CNCE minus NCE (their code's) in oriented share is "
          f"{image_claims.format_interval(d11, unit=' points', signed=True)}: "
          + ("CNCE learns faster here." if measured["d2_faster"].interval[0] > 0 else "NCE learns faster here."
             if measured["d2_faster"].interval[1] < 0 else "no significant difference."))
glue_text("d2_diff", image_claims.format_interval(d11, unit=" points", signed=True))
glue_text("d2_reset_diff", image_claims.format_interval(diff_by_seed(11, "nce", "nce-reset"), unit=" points", signed=True))
glue_text("d2_n_seeds", d2["seed"].nunique())
glue_text("d2_end_cnce", pct(d2_end["cnce"]))
glue_text("d2_end_nce", pct(d2_end["nce-reset"]))
glue_text("d2_meta", d2_meta)

# %% tags=["hide-input"]

from cnce.images import d2 as d2_measures

from companion.claims.render import glue_verdict_block

# the similar-features claim over every D.2 seed that kept each meta-iteration's weights
d2_similar = d2_measures.similar_over_seeds([m_ for k_, m_ in sorted(measured.items())
                                             if k_ == "d2_similar" or k_.startswith("d2_similar_s")])
glue_text("d2_similar_verdict", d2_similar.verdict)
glue_verdict_block("06_image_model", "On photographs that are not the paper's (layer 1 on seven bundled with "
                   "scikit-image; layers 2-4 on the Debian photo pack, whose first layer spans the frequencies those "
                   "claims need; <a href=\"../book/image-data.html\">which and why</a>): does greedy CNCE learn the "
                   "paper's four-layer image model (Section 4), and does the authors' own recipe get there?",
                   note="From the claims ledger (<code>data/claims/ledger.json</code>): layers 2-4 and Supp. D.2 under "
                   "two measure settings each, against null distributions (<code>data/checks/image-settings.json</code>);"
                   " every unit of a photo-pack run is drawn on the <a href=\"06a_image_appendix.html\">appendix page</a>.")

# %% [markdown]
# Measured: after 11 meta-iterations the oriented share of CNCE minus that of NCE as the
# authors run it is {glue:text}`d2_diff`, paired by seed (the Fourier index over all
# frequencies). Under the two orientation measures of {ref}`image-settings`:
# {glue:text}`st_d2_faster`. Both put NCE ahead; how far depends on the measure, so the page
# says only that the supplement's impression is not reproduced here. After
# {glue:text}`d2_meta` meta-iterations CNCE has {glue:text}`d2_end_cnce` % and NCE
# {glue:text}`d2_end_nce` %. Resetting NCE's normaliser to 0 at every meta-iteration, as
# their code does, changes little: NCE with `c` carried over minus NCE reset is
# {glue:text}`d2_reset_diff`. So resetting `c`, the one handicap of their NCE that we tested,
# does not explain the supplement's impression. Its milder point, that the two methods learn
# similar features, is measured by `cnce.images.d2.similar_claim` over the seeds that kept
# every meta-iteration's weights: {glue:text}`d2_similar_verdict`. On seed 0, after 11
# meta-iterations the best matching of the two feature sets has a mean |cosine| of
# {glue:text}`d2_sim_11` ({glue:text}`d2_sim_11_ci` over the matched pairs), above two random
# sets ({glue:text}`d2_sim_random`, 95th percentile) and above each method's match with the
# common start ({glue:text}`d2_sim_start`), but the features are not of the same kind yet:
# CNCE has {glue:text}`d2_or_cnce_11` % oriented with a median RMS radius of
# {glue:text}`d2_rms_cnce_11` px, NCE {glue:text}`d2_or_nce_11` % and
# {glue:text}`d2_rms_nce_11` px; after {glue:text}`d2_table_end` meta-iterations
# {glue:text}`d2_or_cnce_20` % and {glue:text}`d2_rms_cnce_20` px against
# {glue:text}`d2_or_nce_20` % and {glue:text}`d2_rms_nce_20` px. The impression that CNCE is
# faster does not hold, on these photographs, with the authors' recipe and our loss code.
#
# ## Which run these figures come from
#
# The run's provenance records the package version and commit (checked against the hash of
# the package source the run used), the configuration, seed, device, wall time per layer and
# library versions. Every committed run was trained with `scripts/gpu_section4.py` on one
# lent GPU and taken into the repository with `companion.adopt.adopt_device_runs`, which
# checks the hashes of the package source and of the driver against the commit named:
# {glue:text}`gpu_calls` The command answers, in one call each: layers 2-4 on the photo pack,
# the PCA test and D.2 over three seeds (`--images data/photos/pack.npz`), then the layer-3
# input (`--round l3-input`); {doc}`../book/costs` estimates what the four-layer recipe takes
# on a CPU instead.

# %% tags=["hide-input"]
call_words = []
for rel, what in (("ablation/results.json", "the ablation, D.2's seed 0, FastICA and the runs shown"),
                  ("call2/results.json", "a third seed of the run shown, the photo pack, the PCA test and D.2's seeds 1-2"),
                  ("call3/results.json", "layers 3-4 with the other layer-3 input")):
    res_ = json.loads((runs.weights_dir() / rel).read_text())
    c_ = res_["calls"][0]
    jobs_ = res_["jobs"].values()
    call_words.append(f"{what}: {len(res_['jobs'])} jobs on one {c_['gpu']} shared by {c_['workers']} workers, "
                      f"{max(j['seconds'] for j in jobs_) / 60:.0f} min for the longest (commit {c_['commit'][:7]})")
glue_text("gpu_calls", "; ".join(call_words) + ".")

# %%
keys = ("package", "git_commit", "device", "seed", "wall_seconds_per_layer", "meta_iterations_done", "final_eps")
print(json.dumps({k: prov[k] for k in keys}, indent=1))
print("configuration:", json.dumps(cfg))
