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
# # Appendix to the image model: every unit
#
# This page draws every unit of the four-layer image model of {doc}`06_image_model` as the
# paper's supplement does: the first-layer features of CNCE and NCE after each of the first
# eleven meta-iterations (Supp. D.2, on the bundled photographs), and all 60 third-layer units
# with the 25 patches that drive them most (Supp. D.3) and all 30 fourth-layer units with the
# third-layer units they pool and 25 patches each (Supp. D.4) of a photo-pack run, the runs
# whose layer 2-4 verdicts page 06 states. It makes no verdict of its own: the measures, their baselines
# and the verdicts are on {doc}`06_image_model`. The photographs are not the paper's
# ({doc}`../book/image-data`), so no unit here corresponds to a unit of the paper's figures;
# units are numbered from 0.

# %% tags=["parameters"]
# Values you may change; then rerun all cells (Run > Run All Cells).
scale = "quick"  # the figures are the same at every scale: this page only draws
seed = 0  # any integer: another batch of patches for the maximal responses

# %% tags=["hide-input"]
import numpy as np

from cnce.images import data as imdata
from cnce.images import measures, plots, probes, runs
from cnce.images.train import make_source
from myst_nb import glue

#: The runs this page draws, in one place: the four-layer run (a folder under data/weights),
#: and the Supp. D.2 comparison (a file under data/weights and the run inside it whose
#: snapshots are drawn). Adding or swapping a run is a change of these lines only.
FOUR_LAYER_RUN = "photos/paper-seed0"  # a photo-pack run: the verdicts on layers 2-4 rest on these
D2_RUN = ("d2/paper.pt", "compare.pt")
D2_METHODS = {"cnce": "CNCE", "nce-reset": "NCE"}  # NCE as the authors' code runs it (c reset to 0)
N_PATCHES = 10_000  # the batch searched for maximal responses, as in the supplement
N_TOP = 25  # patches shown per unit, as the authors' code shows them


def glue_text(name, value, fmt=""):
    glue(name, format(value, fmt), display=False)


# %% [markdown]
# ## Supp. D.2: CNCE and NCE on the first layer, meta-iteration by meta-iteration
#
# The supplement trains 100 first-layer units with CNCE and with NCE from one common
# initialisation and shows them after each of the first eleven meta-iterations. Below, the
# same for our run of that comparison (seed 0; the first 100 units, features dewhitened as in
# the paper's Fig. 5). NCE here is the authors' variant, whose log-normaliser `c` restarts at
# 0 in every meta-iteration; page 06 measures both variants over three seeds.

# %% tags=["hide-input"]
d2_file, d2_name = D2_RUN
d2 = runs.load_pt(d2_file)[d2_name]
ica = runs.load_pt("ica/paper.pt")  # seed 0's whitening: the D.2 runs share its PCA draw
wh_d2 = imdata.Whitener.from_state_dict(ica["whitener"])


def d2_features(run, whitener, methods, metas):
    """Dewhitened features of each method's snapshots at the meta-iterations ``metas``."""
    return {m: {k: measures.unit_images(run["snapshots"][m][k].float(), whitener)["features"] for k in metas}
            for m in methods}


metas = list(range(12))
feats = d2_features(d2, wh_d2, D2_METHODS, metas)
glue_text("d2_units", len(feats["cnce"][0]))
glue_text("d2_seed", d2["seed"])
print(f"{len(feats['cnce'][0])} units per method, meta-iterations 0 (initialisation) to {metas[-1]}, seed {d2['seed']}")

# %% tags=["hide-input", "remove-output"]
groups = [metas[i:i + 3] for i in range(0, len(metas), 3)]
for g in groups:
    fig = plots.plot_d2_snapshots(feats, g, names=D2_METHODS)
    plots.glue_figure(f"fig_d2_{g[0]}", fig)

# %% [markdown]
# ```{glue:figure} fig_d2_0
# :alt: Two 10 by 10 grids of small grey image patches per row, CNCE on the left and NCE on the right, for the common initialisation and meta-iterations 1 and 2. The initial features are fine-grained noise, identical in both grids; after one and two meta-iterations both grids show smoother blobs and a few large ramps, with a handful of small oriented edges.
# :name: fig-d2-0
#
# Supp. D.2 (the supplement's Figs 2-4): {glue:text}`d2_units` first-layer features of CNCE
# (left) and NCE (right) at the common initialisation (top row) and after meta-iterations 1
# and 2, seed {glue:text}`d2_seed`. See: both start from the same noise; neither has many
# localised oriented features yet.
# ```
#
# ```{glue:figure} fig_d2_3
# :alt: The same two grids for meta-iterations 3, 4 and 5. In the NCE grids most features have become small localised oriented edges on a flat grey background; the CNCE grids still show many noisy or blob-like features among the edges.
# :name: fig-d2-3
#
# Supp. D.2 (Figs 5-7): the same units after meta-iterations 3-5. See: NCE's features become
# small localised edges sooner than CNCE's.
# ```
#
# ```{glue:figure} fig_d2_6
# :alt: The same two grids for meta-iterations 6, 7 and 8. The NCE grids hold mostly small localised oriented edges on flat grey; the CNCE grids still hold many noisy or blob-like features among fewer edges.
# :name: fig-d2-6
#
# Supp. D.2 (Figs 8-10): meta-iterations 6-8. See: NCE's features are mostly small
# localised edges; many of CNCE's are still noisy or larger.
# ```
#
# ```{glue:figure} fig_d2_9
# :alt: The same two grids for meta-iterations 9, 10 and 11. NCE shows small localised oriented edges almost everywhere; CNCE shows many edges too, but many of its features are still noisy patches or broad blobs.
# :name: fig-d2-9
#
# Supp. D.2 (Figs 11-13): meta-iterations 9-11. See: after eleven meta-iterations NCE's
# features look further along than CNCE's, the opposite of the supplement's impression that
# CNCE learns slightly faster; page 06 measures the difference over three seeds.
# ```
#
# ## Supp. D.3: all third-layer units
#
# Each third-layer unit of the photo-pack run {glue:text}`run_name` is drawn as a
# space-orientation receptive field, probed as the authors' code probes it
# (`cnce.images.probes.AuthorsProbe`: Gabor stimuli at {glue:text}`probe_freqs` cycles/pixel, a
# grid of locations per frequency and 121 orientations of which 60 are distinct images) and
# drawn as their plotting code draws it: at the unit's best probe frequency only, at each probe
# location a closed polar curve shows the unit's linear response against the orientation of
# the stimulus' bars, blue where positive and red where negative, scaled by the unit's largest
# magnitude, its largest radius the stimulus' envelope width, and its opacity the curve's peak.
# Beside each field, the {glue:text}`n_top` patches that drive the unit most out of
# {glue:text}`n_patches` fresh patches from the {glue:text}`patch_data` (each shown with its
# mean removed).

# %% tags=["hide-input"]
state = runs.load_state(runs.find_weights(FOUR_LAYER_RUN))
net, whitener = runs.network_from_state(state)
side = state["config"]["patch"]
probe = probes.AuthorsProbe(size=side)
resp = probes.probe_layers(net, whitener, probe, layers=(3,), linear3=True)  # the icons draw the signed z3
pack_file = runs.weights_dir().parent / "photos" / "pack.npz"
source, patch_data = (make_source(pack_file)[0], "photo pack") if pack_file.is_file() else \
    (make_source(None)[0], "bundled photographs (the photo pack is not built here)")
source.whitener = whitener
X = source.raw(N_PATCHES, seed=seed + 1)
top3, _ = probes.top_patches(net, X, whitener, layer=3, k=N_TOP)
top4, val4 = probes.top_patches(net, X, whitener, layer=4, k=N_TOP)
q4 = (net.W4.detach() ** 2).numpy()
K3, K4 = q4.shape[1], q4.shape[0]
print(f"run {FOUR_LAYER_RUN!r} (configuration {state['config']['name']!r}, seed {state['seed']}): "
      f"{K3} third-layer and {K4} fourth-layer units; {probe.n_stimuli()} probe stimuli; {len(X):,} patches searched")
print(f"patches from the {patch_data}")
glue_text("probe_freqs", ", ".join(f"{f:.2f}" for f in probe.freqs))
glue_text("n_patches", len(X), ",")
glue_text("run_name", FOUR_LAYER_RUN)
glue_text("n_top", N_TOP)
glue_text("patch_data", patch_data.split(" (")[0])

# %% tags=["hide-input", "remove-output"]
blocks3 = [list(range(K3))[i:i + 10] for i in range(0, K3, 10)]
for b in blocks3:
    fig = plots.plot_layer3_units(resp[3], probe, b, X, top3, n_patches=N_TOP)
    plots.glue_figure(f"fig_l3_{b[0]}", fig)

# %% [markdown]
# ```{glue:figure} fig_l3_0
# :alt: Ten rows, one per third-layer unit 0 to 9. Each row shows a large square icon of small blue and red polar curves on white at one frequency, denser in some regions of the square than in others, and beside it 25 grey image patches in five rows of five, which contain edges and lines.
# :name: fig-l3-0
#
# Supp. D.3 (the supplement's Figs 14-17): third-layer units 0-9 of the photo-pack run
# {glue:text}`run_name`. Left: the space-orientation field at the unit's best frequency
# (where and at which orientation the unit responds; blue positive, red negative); right: the
# {glue:text}`n_top` of {glue:text}`n_patches` patches from the {glue:text}`patch_data` that
# drive it most. See whether a field's blue curves line up along one straight or bent
# contour, and whether its patches hold such a contour at that place.
# ```
#
# ```{glue:figure} fig_l3_10
# :alt: Third-layer units 10 to 19, drawn as in the first figure of this section: a space-orientation icon and the 25 strongest patches per row.
# :name: fig-l3-10
#
# Supp. D.3: third-layer units 10-19, drawn as above.
# ```
#
# ```{glue:figure} fig_l3_20
# :alt: Third-layer units 20 to 29, drawn as in the first figure of this section: a space-orientation icon and the 25 strongest patches per row.
# :name: fig-l3-20
#
# Supp. D.3: third-layer units 20-29, drawn as above.
# ```
#
# ```{glue:figure} fig_l3_30
# :alt: Third-layer units 30 to 39, drawn as in the first figure of this section: a space-orientation icon and the 25 strongest patches per row.
# :name: fig-l3-30
#
# Supp. D.3: third-layer units 30-39, drawn as above.
# ```
#
# ```{glue:figure} fig_l3_40
# :alt: Third-layer units 40 to 49, drawn as in the first figure of this section: a space-orientation icon and the 25 strongest patches per row.
# :name: fig-l3-40
#
# Supp. D.3: third-layer units 40-49, drawn as above.
# ```
#
# ```{glue:figure} fig_l3_50
# :alt: Third-layer units 50 to 59, drawn as in the first figure of this section: a space-orientation icon and the 25 strongest patches per row.
# :name: fig-l3-50
#
# Supp. D.3: third-layer units 50-59, drawn as above.
# ```
#
# ## Supp. D.4: all fourth-layer units
#
# For each fourth-layer unit of the photo-pack run {glue:text}`run_name`: the
# space-orientation fields of the third-layer units it pools, at most six (as the authors draw
# them) or as many as hold 90 % of its pooling weight (the bar beneath each is its weight `q`
# relative to the unit's largest, Eq. 24), drawn as above, and below them the
# {glue:text}`n_top` patches of the same {glue:text}`n_patches` that drive it most, each with
# a bar for its response relative to the strongest.

# %% tags=["hide-input", "remove-output"]
blocks4 = [list(range(K4))[i:i + 3] for i in range(0, K4, 3)]
for b in blocks4:
    fig = plots.plot_layer4_units(b, q4, resp[3], probe, X, top4, val4)
    plots.glue_figure(f"fig_l4_{b[0]}", fig)

# %% [markdown]
# ```{glue:figure} fig_l4_0
# :alt: Three blocks, one per fourth-layer unit 0 to 2. Each block starts with up to six space-orientation icons (blue and red polar curves on white), three to a row, with a thin blue bar under each whose length shows the pooling weight, followed by three rows of up to ten grey image patches (25 in all), each with a thin bar showing its response relative to the strongest.
# :name: fig-l4-0
#
# Supp. D.4 (the supplement's Figs 18-47): fourth-layer units 0-2 of the photo-pack run
# {glue:text}`run_name`, patches from the {glue:text}`patch_data`. See whether the pooled
# fields share an orientation (across frequencies: circles of different sizes) or form a
# corner, and whether the {glue:text}`n_top` patches show the same structure.
# ```
#
# ```{glue:figure} fig_l4_3
# :alt: Fourth-layer units 3 to 5, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-3
#
# Supp. D.4: fourth-layer units 3-5, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_6
# :alt: Fourth-layer units 6 to 8, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-6
#
# Supp. D.4: fourth-layer units 6-8, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_9
# :alt: Fourth-layer units 9 to 11, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-9
#
# Supp. D.4: fourth-layer units 9-11, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_12
# :alt: Fourth-layer units 12 to 14, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-12
#
# Supp. D.4: fourth-layer units 12-14, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_15
# :alt: Fourth-layer units 15 to 17, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-15
#
# Supp. D.4: fourth-layer units 15-17, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_18
# :alt: Fourth-layer units 18 to 20, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-18
#
# Supp. D.4: fourth-layer units 18-20, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_21
# :alt: Fourth-layer units 21 to 23, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-21
#
# Supp. D.4: fourth-layer units 21-23, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_24
# :alt: Fourth-layer units 24 to 26, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-24
#
# Supp. D.4: fourth-layer units 24-26, drawn as above.
# ```
#
# ```{glue:figure} fig_l4_27
# :alt: Fourth-layer units 27 to 29, drawn as in the first figure of this section: pooled space-orientation icons with weight bars, then the 25 strongest patches with response bars.
# :name: fig-l4-27
#
# Supp. D.4: fourth-layer units 27-29, drawn as above.
# ```
