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
# # The paper's claims, checked
#
# The paper makes seven claims that this book tests: consistency, CNCE approaching MLE as
# $\kappa$ grows, NCE against CNCE, the ring model (under the authors' data generator and under
# an exact sampler of the model), local minima of ICA, the score-matching limit and the neural
# image model. Each gets four things: what the paper says (in our words), what we measure, the
# verdict, and the page that shows the evidence. The first five are rows of the table below
# (one row per claim and model; click a row's measurement for the paper's statement and all
# numbers; a last row covers the $\varepsilon$ heuristic, which goes beyond the paper); the score-matching limit and the image model, which the results tables
# cannot check, follow under the table in the same four parts. Every measurement in the
# table is computed below from the committed paper-scale results in `data/results/paper/`
# (100 simulations per point), by `cnce.experiments.claims`. Errors are compared through
# $\log_{10}$ of median squared errors (a difference of 1 is a factor of 10). The interval
# after each number is a 95 % bootstrap interval: the simulations are resampled with
# replacement, 2000 times, and since the methods, sample sizes and $\kappa$ of a study share
# each simulation's data and noise, one draw is applied to all of them (paired comparisons). Verdicts follow fixed rules in that module: for
# example, "reproduced" for a consistency claim needs the whole interval of the slope below zero.

# %% tags=["parameters"]
seed = 0

# %% tags=["hide-input"]
import html

from IPython.display import HTML

from cnce.experiments import claims
from cnce.report import badge_html

results, runs = claims.committed_results(seed)
table = claims.claims_table(results, n_boot=2000, seed=seed)
print(f"{len(table)} claims from {len(results)} studies; runs by commit: " + "; ".join(runs))

PAGES = {"02_consistency": "Consistency", "03_cnce_vs_nce": "NCE", "04_ring": "Ring",
         "05_supplementary": "Supp. models", "07_choosing_eps": "Choosing eps"}
html_rows = "".join(
    f"<tr><td><b>{html.escape(r.claim)}</b></td>"
    f"<td><details><summary>{html.escape(r.short)}</summary><div><b>The paper:</b> {html.escape(r.paper)}."
    f"<br><b>Measured</b> (95 % intervals): {html.escape(r.measured)}</div></details></td>"
    f"<td>{badge_html(r.verdict)}</td><td><a href=\"../notebooks/{r.page}.html\">{PAGES[r.page]}</a></td></tr>"
    for r in table.itertuples())
HTML("<table class=\"claims\"><thead><tr><th>claim</th><th>we measure (click: the paper's claim, all numbers)</th>"
     f"<th>verdict</th><th>page</th></tr></thead><tbody>{html_rows}</tbody></table>")

# %% [markdown]
# ## Two claims that the results tables cannot check
#
# **The score-matching limit** (Section 2 and Supplementary B: as $\varepsilon \to 0$, the
# CNCE loss minus $2\log 2$, divided by $\varepsilon^2$, tends to half the score-matching
# objective). The theory page checks it on the Gaussian model with {term}`moment-matched antithetic noise`:
# at $\varepsilon =$ {glue:text}`../notebooks/01_theory.py::sm_eps_min:.0e` the ratio is
# {glue:text}`../notebooks/01_theory.py::sm_ratio_mm:.6f` against $J_{SM}/2 =$
# {glue:text}`../notebooks/01_theory.py::sm_half:.6f` (relative difference
# {glue:text}`../notebooks/01_theory.py::sm_rel_dev_mm:.0e`), and the distance falls with slope
# {glue:text}`../notebooks/01_theory.py::sm_slope_mm:.2f` in $\varepsilon$ on log-log axes (2 is
# expected for antithetic noise). It needs a twice-differentiable log-density: for the ICA
# model the small-$\varepsilon$ limit of a finite sample differs from the theorem's (the page
# explains why). With independent noise draws, the ratio diverges like $1/\varepsilon$ in a
# finite sample. This check uses one sample, so it has no bootstrap interval; its precision is
# the relative difference above. Verdict: **{glue:text}`../notebooks/01_theory.py::sm_verdict:s`**
# for models with a twice-differentiable log-density (with moment-matched antithetic noise,
# the ratio reaches $J_{SM}/2$ at the $\varepsilon^2$ rate). See {doc}`../notebooks/01_theory`.
#
# **The neural image model** (Section 4: greedy CNCE learns Gabor-like first-layer features,
# second-layer units that pool alike features, and more complex units above them). We trained
# it at the paper's sizes on a GPU with the authors' recipe (their minimiser and
# {term}`main set` schedule) on other natural images (the photographs bundled with
# scikit-image; see {doc}`differences` and {doc}`image-data`), and measured each layer
# against a baseline ({doc}`../notebooks/06_image_model`, whose first screen gives the verdict
# layer by layer). Layer 1: {glue:text}`../notebooks/06_image_model.py::oriented_rf_learned:s` % of the receptive fields are oriented
# (median {term}`orientation index <orientation selectivity index (OSI)>`
# {glue:text}`../notebooks/06_image_model.py::osi_rf_learned:s`, against {glue:text}`../notebooks/06_image_model.py::osi_rf_noise:s` for localised noise; the positive control
# FastICA {glue:text}`../notebooks/06_image_model.py::oriented_rf_ica:s` %; 5 % by chance), **{glue:text}`../notebooks/06_image_model.py::v_layer1:s`**. Layer 2:
# {glue:text}`../notebooks/06_image_model.py::l2_position_coherent:s` % of the units pool features coherent in position,
# {glue:text}`../notebooks/06_image_model.py::l2_orientation_coherent:s` % in orientation and {glue:text}`../notebooks/06_image_model.py::l2_frequency_coherent:s` % in
# frequency, **{glue:text}`../notebooks/06_image_model.py::v_layer2:s`**. Layer 3: orientation coherence {glue:text}`../notebooks/06_image_model.py::l3_orientation_coherence:s`
# against {glue:text}`../notebooks/06_image_model.py::l3_orientation_coherence_random:s` with random weights, **{glue:text}`../notebooks/06_image_model.py::v_layer3:s`**.
# Layer 4: {glue:text}`../notebooks/06_image_model.py::l4_verdict_note:s` **{glue:text}`../notebooks/06_image_model.py::v_layer4:s`**. The authors' recipe orients
# {glue:text}`../notebooks/06_image_model.py::recipe_paper_oriented:s` % of the first-layer units ({glue:text}`../notebooks/06_image_model.py::recipe_n_paper:s` seeds); an
# ablation over optimiser and data schedule finds that at the paper's sizes neither decides.
# Supp. D.2 (CNCE faster than NCE): {glue:text}`../notebooks/06_image_model.py::d2_verdict:s` **{glue:text}`../notebooks/06_image_model.py::v_d2:s`**.
#
# ## How to read the verdicts
#
# * <span class="cnce-badge cnce-badge-reproduced">reproduced</span> our measurement supports
#   the claim, with its interval on the claim's side.
# * <span class="cnce-badge cnce-badge-partly">partly reproduced</span> the direction agrees but
#   the size does not (for example a smaller gap than the paper's), or the claim holds only
#   under one of two data generators.
# * <span class="cnce-badge cnce-badge-not-reproduced">not reproduced</span> our measurement
#   contradicts the claim, or does not show the effect.
# * <span class="cnce-badge cnce-badge-not-testable">not testable here</span> the run cannot
#   show it (for the Bernoulli model the heuristic mostly picks $\varepsilon = 1$, where CNCE
#   gives the maximum-likelihood estimate; the fixed-$\varepsilon$ run tests the claim instead).
# * <span class="cnce-badge cnce-badge-beyond">beyond the paper</span> a question of ours that
#   the paper does not ask (how good the $\varepsilon$ heuristic's choice is): the row reports
#   what we measure, with no verdict, since a claim the paper does not make cannot be
#   reproduced.
#
# Where our setting differs from the paper's (optimiser, error measure, data), the pages and
# {doc}`differences` say how; a different result is reported as it is, with the reasons we can
# give on the page that shows it.
