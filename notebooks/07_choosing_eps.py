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
# # Beyond the paper: how much eps matters, and how good the heuristic is
#
# ```{glue:md} verdict
# :format: myst
# ```
#
# CNCE has one tuning choice, the scale $\varepsilon$ of the conditional noise
# $y = x + \varepsilon \xi$ (Eq. 13; for binary data a flip probability, Eq. 64). The paper
# picks it with a heuristic that it only sketches: start small and grow $\varepsilon$ until
# the loss at the initial parameters is clearly below its $\varepsilon = 0$ value
# $2\log 2$ (the authors' code, which `eps="auto"` follows, is described in
# `cnce.eps`). Adapting the noise is left to future work. Someone who fits their own model
# with `cnce.fit` will want to know two things that neither the paper nor the authors' code
# answers: how much does $\varepsilon$ matter, and can the automatic choice be trusted?
#
# This page measures both on every synthetic model of the paper. For each simulation, the
# heuristic picks $\varepsilon_h$ as usual; we then fit CNCE again at fixed multiples
# $f\,\varepsilon_h$ on a logarithmic grid of {glue:text}`paper_n_factors` points from
# $f =$ {glue:text}`paper_f_lo` to $f =$ {glue:text}`paper_f_hi`. The problems are the
# paper's: the same ground truth, data, initial parameters and noise as Fig. 2, Fig. 3 and
# Supp. Fig. 1, $\kappa =$ {glue:text}`kappa`, and at paper scale
# {glue:text}`paper_n_sims` simulations at $N =$ {glue:text}`paper_N_large` and at a
# smaller $N =$ {glue:text}`paper_N_small`. Each simulation keeps **one noise base** $\xi$ across the whole grid,
# so that from one point of the grid to the next only $\varepsilon$ changes. Each point is
# one batched fit of all simulations (`python -m cnce run eps`).
#
# We also measure two other rules that use neither the ground truth nor a likelihood (the
# model is unnormalised): `scale`, which sets $\varepsilon$ to the data's scale (the mean
# over dimensions of the per-dimension standard deviation, twice the heuristic's starting
# point) with no search; and `pilot`, which runs the heuristic's search a second time with
# the loss evaluated at a first CNCE estimate instead of at the arbitrary initial
# parameters, and refits from that estimate.

# %% tags=["parameters"]
# Values you may change; then rerun all cells (Run > Run All Cells).
# scale "quick": computes the small grid here (and shows the committed
# paper-scale run, if any); "paper": shows a stored paper-scale run; compute
# one with `python -m cnce run eps --scale paper --seed SEED`
# (its time on 2 cores: "Cost" below).
scale = "quick"
# seed 0: the committed runs; another integer: a run of its own
seed = 0

# %%
import numpy as np
import pandas as pd
import torch

from cnce import plotting
from cnce.experiments import (SCALES, STUDIES, eps_sweep, page_results,
                              provenance_table)
from cnce.report import glue

pd.set_option("display.width", 120)
# quick: computed (what CI runs); then a complete committed paper-scale run
# is shown if there is one
df, shown, config = page_results("eps", scale, seed)
studies = [s for s in config.studies if (df.study == s).any()]
N_small, N_large = sorted(df.N.unique().tolist())
kappa = int(df.kappa.dropna().unique().item())
print(f"scale = {shown!r}, seed = {seed}, {config.n_sims} simulations per "
      f"point, kappa = {kappa}, N in {[N_small, N_large]}")

# %% tags=["hide-input"]
short = {s: s.replace("eps-", "") for s in studies}  # short names for the tables
factors = sorted(eps_sweep.with_factor(df).factor.dropna().unique())
heur = df[(df.method == "cnce") & (df.eps_setting == "default")]
bern = heur[heur.study == "eps-bernoulli"].eps
bern_at_one = f"{100 * (bern > 1 - 1e-9).mean():.0f}" if len(bern) else "n/a"  # eps = 1: the admissible limit
print(f"eps = f x the heuristic's eps, {len(factors)} values of f from {factors[0]:.4f} to {factors[-1]:g} "
      f"(Bernoulli: up to 1, since eps <= 1; the heuristic picks 1 in {bern_at_one} % of the simulations)")
paper = SCALES["paper"]  # the paper-scale design, described in the introduction
p_f = (1.0,) + paper.eps_factors
for key, value in {"N_small": N_small, "N_large": N_large, "n_sims": config.n_sims, "n_factors": len(factors),
                   "bern_at_one": bern_at_one, "kappa": kappa, "paper_n_sims": paper.n_sims,
                   "paper_N_small": min(paper.eps_N), "paper_N_large": max(paper.eps_N), "paper_n_factors": len(p_f),
                   "paper_f_lo": f"1/{1 / min(p_f):.0f}", "paper_f_hi": f"{max(p_f):g}"}.items():
    glue(key, value)

# %% [markdown]
# Which run produced these numbers (package version, commit, machine, wall time):

# %% tags=["nbval-ignore-output"]
provenance_table(df)

# %% [markdown]
# ## The error against eps
#
# Solid lines: the median squared error over simulations; dashed: the 0.1 and 0.9
# quantiles, as on the other pages. The x axis is $\log_{10}$ of $\varepsilon$ over the
# heuristic's $\varepsilon_h$ of the same simulation, so the heuristic's choice is at 0
# (star on the grey line). Horizontal lines: MLE's median (dotted) and score matching's
# (dash-dotted), where the model has them (for the Gaussian model score matching is the
# maximum-likelihood estimate, so the two lines coincide). Open markers: the two other rules, at their
# median $\varepsilon / \varepsilon_h$.

# %% mystnb={"image": {"alt": "One panel per model: CNCE's median squared error against eps relative to the heuristic's choice, on log axes, for two sample sizes, with the heuristic's choice marked by a star on a grey vertical line and MLE's and score matching's medians as horizontal lines."}}
labels = {s: STUDIES[s].label for s in studies}
plotting.experiments.eps_sweep_figure(df, labels);

# %% [markdown]
# *Figure: median squared error of CNCE (solid) with its 0.1 and 0.9 quantiles (dashed)
# against the noise scale relative to the heuristic's choice, $\kappa =$ {glue:text}`kappa`, two sample
# sizes per model.*
#
# The heuristic's cell of this experiment is the same fit as the $\kappa =$ {glue:text}`kappa` cell of the
# paper's figures (same data, noise, start and $\varepsilon$), computed again here in its own
# table. Where both are stored they must agree:

# %% tags=["hide-input"]
from cnce.experiments import load_results

same = []
for name, pairs in (("consistency", [("gaussian", "eps-gaussian"), ("ica", "eps-ica")]),
                    ("ring", [("ring-exact", "eps-ring-exact"), ("ring-authors", "eps-ring-authors")]),
                    ("supplementary", [("lognormal", "eps-lognormal"), ("bernoulli", "eps-bernoulli")])):
    try:
        other = load_results(name, shown, seed)
    except (FileNotFoundError, ValueError):
        continue
    for a, b in pairs:
        x = other[(other.study == a) & (other.method == "cnce") & (other.kappa == 10)]
        y = df[(df.study == b) & (df.method == "cnce") & (df.eps_setting == "default")]
        m = x.merge(y, on=["N", "sim"], suffixes=("_fig", "_eps"))
        if len(m):
            same.append((b, len(m), float((m.error_eps / m.error_fig - 1).abs().max()), float((m.eps_eps / m.eps_fig - 1).abs().max())))
for b, n, de, dp in same:
    print(f"{b}: {n} fits also in the paper's figures; largest relative difference of error {'< 1e-6' if de < 1e-6 else f'{de:.1e}'}, "
          f"of eps {'< 1e-6' if dp < 1e-6 else f'{dp:.1e}'}")
if not same:
    print("the figures' runs at this scale and seed are not stored: nothing to compare")

# %% [markdown]
# ## How much eps matters
#
# Per model and $N$: $\log_{10}$ of the median error at the smallest and at the
# largest multiple of the grid over the median error at the heuristic's choice (how many
# decades a poor $\varepsilon$ costs), and the best multiple on the grid.

# %% tags=["hide-input"]
summ = eps_sweep.sweep_summary(df)
grid = summ[summ.factor.notna()]
rows = []
for s in studies:
    for N in (N_small, N_large):
        g = grid[(grid.study == s) & (grid.N == N)].sort_values("factor")
        h = float(g.loc[g.eps_setting == "default", "log10_median"].iloc[0])
        rows.append({"study": s, "model": short[s], "N": N, "lo_f": g.factor.iloc[0], "hi_f": g.factor.iloc[-1],
                     "at smallest f": g.log10_median.iloc[0] - h, "at largest f": g.log10_median.iloc[-1] - h,
                     "best f": g.factor.iloc[int(np.argmin(g["median"].to_numpy()))]})
cost = pd.DataFrame(rows)
print(cost.drop(columns="study").to_string(index=False, formatters={
    "lo_f": "{:.3g}".format, "hi_f": "{:.3g}".format, "at smallest f": "{:+.2f}".format,
    "at largest f": "{:+.2f}".format, "best f": "{:.3g}".format}))
cont = cost[cost.study != "eps-bernoulli"]  # Bernoulli: the grid ends at the heuristic's choice
for key, value in {"cost_small_lo": f"{cont['at smallest f'].min():.1f}", "cost_small_hi": f"{cont['at smallest f'].max():.1f}",
                   "cost_large_lo": f"{cont['at largest f'].min():.1f}", "cost_large_hi": f"{cont['at largest f'].max():.1f}",
                   "best_f_lo": f"{cont['best f'].min():.3g}", "best_f_hi": f"{cont['best f'].max():.3g}",
                   "n_best_above": f"{int((cont['best f'] > 1).sum())} of {len(cont)}",
                   "n_best_at": f"{int((cont['best f'] == 1).sum())}", "n_best_below": f"{int((cont['best f'] < 1).sum())}",
                   "best_above_lo": f"{cont.loc[cont['best f'] > 1, 'best f'].min():.3g}" if (cont['best f'] > 1).any() else "none",
                   "f_lo": f"1/{1 / factors[0]:.0f}", "f_hi": f"{factors[-1]:g}"}.items():
    glue(key, value)

# %% [markdown]
# On the continuous models, a multiple of {glue:text}`f_lo` of the heuristic's $\varepsilon$ costs
# {glue:text}`cost_small_lo:.1f` to {glue:text}`cost_small_hi:.1f` decades of median squared error, and
# {glue:text}`f_hi` times costs {glue:text}`cost_large_lo:.1f` to {glue:text}`cost_large_hi:.1f` decades: $\varepsilon$
# matters, by orders of magnitude, once it is off by more than a factor of a few. Between the
# two ends lies a valley, and the heuristic lands in it. The best multiple on the grid is
# larger than 1 in {glue:text}`n_best_above` model-and-$N$ cases (from
# {glue:text}`best_above_lo` to {glue:text}`best_f_hi:.3g` times the heuristic's
# $\varepsilon$), exactly 1 (the heuristic's own choice) in {glue:text}`n_best_at` and smaller
# than 1 in {glue:text}`n_best_below`. So where the heuristic misses, its $\varepsilon$ is too
# small, by a factor of up to {glue:text}`best_f_hi:.3g`; how much error that costs is the
# efficiency loss below (largest for {glue:text}`loss_worst`).

# %% [markdown]
# ## The efficiency loss of the heuristic
#
# For each model and $N$: the heuristic's median squared error over the smallest median on
# the grid (so 1 when the heuristic is the grid's best; 2 means that the best fixed multiple
# on the grid halves the median error), with a 95 % bootstrap interval over simulations (all
# grid points resampled together, the grid's best chosen again in every replicate). The grid's
# smallest median is itself an estimate, biased low by the choice among
# {glue:text}`n_factors` noisy values, so the ratio sits above 1 even for a choice that is as
# good as the best. The column `chance ratio` ({term}`chance ratio`) shows how far: the ratio, on the
# odd simulations, of the fixed multiple that is best on the even ones. The {term}`flat part` of a curve is the range of
# multiples whose median error is within a factor {glue:text}`flat_within:g` of the best
# (`eps_sweep.FLAT_WITHIN`); the heuristic is in it when its loss is at most that factor.

# %%
loss = eps_sweep.efficiency_loss(df, n_boot=2000, seed=seed)
flat = eps_sweep.flat_range(eps_sweep.sweep_summary(df),
                            within=eps_sweep.FLAT_WITHIN)

# %% tags=["hide-input"]
table = loss.merge(flat, on=["study", "N"])
table = table.sort_values(["study", "N"], key=lambda c: c.map(studies.index) if c.name == "study" else c).reset_index(drop=True)
show = pd.DataFrame({
    "model": [short[s] for s in table.study], "N": table.N,
    "loss": table.value.map("{:.2f}".format), "95% interval": [f"[{a:.2f}, {b:.2f}]" for a, b in zip(table.lo, table.hi)],
    "chance ratio": table.split_half.map("{:.2f}".format), "best f": table.best_factor.map("{:.3g}".format),
    "flat part (f)": [f"{a:.3g} to {b:.3g}" for a, b in zip(table.flat_lo, table.flat_hi)],
    "in it": table.heuristic_in.map({True: "yes", False: "no"}),
})
print(show.to_string(index=False))
for r in table.itertuples():
    size = "large" if r.N == N_large else "small"
    key = f"{r.study.replace('eps-', '').replace('-', '_')}_{size}"
    glue(f"loss_{key}", f"{r.value:.2f} [{r.lo:.2f}, {r.hi:.2f}]")
    glue(f"best_{key}", f"{r.best_factor:.3g}")
    span = f"{r.flat_lo:.3g} to {r.flat_hi:.3g} times its eps" if r.flat_lo < r.flat_hi else f"only {r.flat_lo:.3g} times its eps"
    glue(f"flat_{key}", f"{'inside' if r.heuristic_in else 'outside'} the flat part ({span})")
n_in = int(table.heuristic_in.sum())
worst = table.loc[table.value.idxmax()]
miss = table[~table.heuristic_in]
glue("miss_side", "the best multiple is larger than 1 in every such case: a somewhat larger eps would do better"
     if len(miss) and (miss.best_factor > 1).all() else
     "the best multiple is smaller than 1 in every such case: a somewhat smaller eps would do better"
     if len(miss) and (miss.best_factor < 1).all() else "the best multiple lies on either side of 1")
by_N = table.pivot(index="study", columns="N", values="value")
for key, value in {"flat_within": f"{eps_sweep.FLAT_WITHIN:g}", "n_flat_in": n_in, "n_cases": len(table), "loss_max": f"{table.value.max():.2f}",
                   "loss_worst": f"{STUDIES[worst.study].label}, N = {worst.N}", "n_miss": len(miss),
                   "n_miss_sig": int((miss.lo > 1).sum()), "n_miss_noise": int((miss.value <= miss.split_half).sum()),
                   "n_small_worse": f"{int((by_N[N_small] > by_N[N_large]).sum())} of {len(by_N)}"}.items():
    glue(key, value)

# %% [markdown]
# Per model (the heuristic's efficiency loss with its 95 % interval, the best multiple on the
# grid, and where the heuristic falls):
#
# * **Gaussian**: {glue:text}`loss_gaussian_large` at $N =$ {glue:text}`N_large` (best
#   multiple {glue:text}`best_gaussian_large:.3g`; {glue:text}`flat_gaussian_large`) and
#   {glue:text}`loss_gaussian_small` at $N =$ {glue:text}`N_small` ({glue:text}`flat_gaussian_small`).
# * **ICA**: {glue:text}`loss_ica_large` at the larger $N$ (best {glue:text}`best_ica_large:.3g`;
#   {glue:text}`flat_ica_large`) and {glue:text}`loss_ica_small` at the smaller
#   ({glue:text}`flat_ica_small`).
# * **Ring, exact sampler**: {glue:text}`loss_ring_exact_large` (best
#   {glue:text}`best_ring_exact_large:.3g`; {glue:text}`flat_ring_exact_large`) and
#   {glue:text}`loss_ring_exact_small` ({glue:text}`flat_ring_exact_small`).
# * **Ring, authors' generator**: {glue:text}`loss_ring_authors_large` (best
#   {glue:text}`best_ring_authors_large:.3g`; {glue:text}`flat_ring_authors_large`) and
#   {glue:text}`loss_ring_authors_small` ({glue:text}`flat_ring_authors_small`).
# * **Log-normal**: {glue:text}`loss_lognormal_large` (best {glue:text}`best_lognormal_large:.3g`;
#   {glue:text}`flat_lognormal_large`) and {glue:text}`loss_lognormal_small`
#   ({glue:text}`flat_lognormal_small`).
# * **Bernoulli**: {glue:text}`loss_bernoulli_large` (best {glue:text}`best_bernoulli_large:.3g`;
#   {glue:text}`flat_bernoulli_large`) and {glue:text}`loss_bernoulli_small`
#   ({glue:text}`flat_bernoulli_small`). Here the grid stops at the heuristic's choice: a flip
#   probability cannot exceed 1, and the heuristic picks $\varepsilon = 1$, where CNCE gives
#   the maximum-likelihood estimate (see the supplementary page), in
#   {glue:text}`bern_at_one` % of the simulations.
#
# The heuristic lies in the flat part in {glue:text}`n_flat_in` of the
# {glue:text}`n_cases` cases; its largest loss is {glue:text}`loss_max:.2f`
# ({glue:text}`loss_worst`). Of the {glue:text}`n_miss` cases outside the flat part,
# {glue:text}`n_miss_sig` have an interval that excludes 1, and in {glue:text}`n_miss_noise`
# the loss is no larger than the column `noise`, what picking the grid's best among noisy
# values alone gives. The loss
# is larger at the smaller $N$ for {glue:text}`n_small_worse` models.

# %% [markdown]
# The one large loss is the ring model under the authors' data generator. There the data do
# not follow the model exactly (see the ring page), so CNCE, like MLE, converges to a point
# other than the true parameters, and which point depends on $\varepsilon$. The heuristic's
# error then hardly falls from the smaller to the larger $N$, unlike with the exact sampler
# ($\log_{10}$ median error at the heuristic's $\varepsilon$, larger $N$ minus smaller):

# %% tags=["hide-input"]
h = summ[summ.eps_setting == "default"].pivot_table(index="study", columns="N", values="log10_median")
drop = (h[N_large] - h[N_small]).reindex(studies)
print(drop.rename(index=short).map("{:+.2f}".format).to_string())
cn = eps_sweep.with_factor(df)
ra = cn[(cn.study == "eps-ring-authors") & (cn.N == N_large) & cn.factor.notna()]
bias = ((ra.theta_hat_0 - ra.theta_true_0) / ra.theta_true_0).groupby(ra.factor).median()  # the ring's gamma
best_f = float(table[(table.study == "eps-ring-authors") & (table.N == N_large)].best_factor.iloc[0])
print(f"ring, authors' generator, N = {N_large}: median relative bias of gamma at the heuristic's eps {bias.loc[1.0]:+.3f}, "
      f"at {best_f:.3g} times it {bias.loc[best_f]:+.3f}")
for key, value in {"drop_authors": f"{drop['eps-ring-authors']:+.2f}", "drop_exact": f"{drop['eps-ring-exact']:+.2f}",
                   "drop_1_over_N": f"{np.log10(N_small / N_large):+.2f}", "bias_h": f"{bias.loc[1.0]:+.3f}",
                   "bias_best": f"{bias.loc[best_f]:+.3f}", "bias_best_f": f"{best_f:.3g}"}.items():
    glue(key, value)

# %% [markdown]
# A drop of {glue:text}`drop_1_over_N:+.2f` is the $1/N$ rate. Under the authors' generator the
# heuristic's error falls by {glue:text}`drop_authors:+.2f` decades, against
# {glue:text}`drop_exact:+.2f` with the exact sampler: the error there is mostly a bias, and the
# sharp dip of that panel's curve is where the $\varepsilon$-dependent bias passes close to
# zero. The median relative bias of the ring's precision $\gamma$ is {glue:text}`bias_h:+.3f` at
# the heuristic's $\varepsilon$ and {glue:text}`bias_best:+.3f` at {glue:text}`bias_best_f:.3g` times
# it. That is a property of this misspecified problem, not a better rule for choosing
# $\varepsilon$.

# %% [markdown]
# ## The two ends of the grid
#
# **Large $\varepsilon$.** Far from the heuristic's choice on the large side, the noise is easy
# to tell apart from the data and the loss is nearly flat around the start: some fits stop
# after at most one iteration, others run off. The table compares the median error at the
# largest multiple with the median error of the initial parameters, what a fit that learns
# nothing gives (a chance level). Columns: the multiple $f$, $\log_{10}$ of the median error
# there and at the start, and the share of fits that stopped after at most one iteration.

# %% tags=["hide-input"]
from cnce.experiments.runner import build_problem

top = cn[cn.factor == cn.groupby("study").factor.transform("max")]
rows = []
for s in studies:
    p = build_problem(s, config.n_sims, 1, seed)  # truth and initial parameters only (data of size 1)
    init = float(p.model.error(p.theta0, p.theta_true).median())
    for N in (N_small, N_large):
        t = top[(top.study == s) & (top.N == N)]
        rows.append({"model": short[s], "N": N, "f": f"{t.factor.iloc[0]:.3g}",
                     "error at f": f"{np.log10(t.error.median()):.2f}",
                     "at the start": f"{np.log10(init):.2f}".replace("-0.00", "0.00"),
                     "<= 1 iteration": f"{(t.iterations <= 1).mean():.0%}"})
print(pd.DataFrame(rows).to_string(index=False))

# %% [markdown]
# **Small $\varepsilon$.** As $\varepsilon \to 0$ the CNCE loss, expanded in $\varepsilon$,
# turns into score matching (Sec. 2 and Supp. B of the paper; see the theory page). The
# figure shows that with the paper's noise, independent draws of $\xi$, the error does not
# approach score matching's as $\varepsilon$ shrinks: it grows. In a finite sample the
# first-order term of the expansion, $\varepsilon$ times the mean of
# $\nabla \log\phi(x)\cdot\xi$, vanishes only in expectation, and as $\varepsilon \to 0$ it
# dominates the loss. With antithetic noise directions, $\xi$ and $-\xi$, moment-matched so
# that their mean outer product is the identity for each data point, that term is zero in
# every sample and the limit is exactly the score-matching estimate. A known case on the
# Gaussian model ({glue:text}`sm_S` simulations, $N =$ {glue:text}`sm_N`,
# $\kappa =$ {glue:text}`sm_kappa` as {glue:text}`sm_pairs` antithetic pairs): the
# relative distance between CNCE's and score matching's squared errors, with antithetic and
# with independent noise, as $\varepsilon$ shrinks:

# %%
import cnce
from cnce import models, theory
from cnce.noise import draw_base

S_sm, N_sm, kappa_sm = 20, 1000, 10
g = torch.Generator().manual_seed(seed)
gm = models.Gaussian(dim=5)
theta = gm.random_params(S_sm, generator=g)
theta0 = gm.init_params(S_sm, generator=g)
xg = gm.sample(theta, N_sm, generator=g)
xi = draw_base(gm, S_sm, N_sm, kappa_sm, generator=g)
# xi and -xi, kappa / 2 pairs
xi_anti = theory.moment_matched(xi[:, :, : kappa_sm // 2])
sm = cnce.fit(gm, xg, "sm", theta0=theta0, device="cpu")
e_sm = gm.error(sm.theta, theta)
rows = []
for e in (1e-1, 1e-2, 1e-3):
    kw = dict(kappa=kappa_sm, eps=e, theta0=theta0, device="cpu")
    anti = cnce.fit(gm, xg, "cnce", noise_base=xi_anti, **kw)
    ind = cnce.fit(gm, xg, "cnce", noise_base=xi, **kw)
    r_anti = gm.error(anti.theta, theta) / e_sm
    r_ind = gm.error(ind.theta, theta) / e_sm
    rows.append((e, (r_anti - 1).abs().median().item(),
                 torch.log10(r_ind.median()).item()))

# %% tags=["hide-input"]
for e, a, i in rows:
    print(f"eps = {e:.0e}: antithetic, median |error / SM error - 1| = {a:.1e}; "
          f"independent, median log10(error / SM error) = {i:.1f}")
rate = np.polyfit(np.log10([r[0] for r in rows]), np.log10([r[1] for r in rows]), 1)[0]
for key, value in {"sm_S": S_sm, "sm_N": N_sm, "sm_kappa": kappa_sm, "sm_pairs": kappa_sm // 2,
                   "sm_anti_gap": f"{rows[-1][1]:.0e}", "sm_indep_gap": f"{rows[-1][2]:.1f}",
                   "sm_eps_min": f"{rows[-1][0]:.0e}", "sm_anti_rate": f"{rate:.1f}"}.items():
    glue(key, value)

# %% [markdown]
# At $\varepsilon =$ {glue:text}`sm_eps_min:.0e` the antithetic fits are within a relative
# {glue:text}`sm_anti_gap:.0e` of score matching's error, and the distance shrinks like
# $\varepsilon^{p}$ with $p =$ {glue:text}`sm_anti_rate:.1f` (fitted on a log-log scale; 2 is
# expected for antithetic noise); the independent draws are {glue:text}`sm_indep_gap:.1f` decades worse. So the
# score-matching level in the figure is where a small $\varepsilon$ leads only with such noise;
# with the noise of Eq. (13), a small $\varepsilon$ is simply a bad choice.

# %% [markdown]
# ## Other rules against the heuristic
#
# $\log_{10}$ of each rule's median error over the heuristic's, with a paired 95 % bootstrap
# interval (negative: the rule is more accurate), and its median $\varepsilon$ relative to the
# heuristic's. A rule *wins on a model* when the whole interval is below 0 at both sample
# sizes; it could replace the heuristic only if it won on every model and lost on none.

# %%
rules = pd.concat([eps_sweep.rule_comparison(df, f"rule:{r}", n_boot=2000,
                                             seed=seed)
                   for r in ("scale", "pilot")], ignore_index=True)

# %% tags=["hide-input"]
rules = rules.sort_values(["rule", "study", "N"], key=lambda c: c.map(studies.index) if c.name == "study" else c,
                          ascending=[False, True, True]).reset_index(drop=True)
rules["model"] = [short[s] for s in rules.study]
for r in ("scale", "pilot"):
    sub = rules[rules.rule == f"rule:{r}"]
    print(f"rule {r!r}:")
    print(sub.assign(**{"log10 ratio": sub.value.map("{:+.2f}".format),
                        "95% interval": [f"[{a:+.2f}, {b:+.2f}]" for a, b in zip(sub.lo, sub.hi)],
                        "eps / heuristic's": sub.rel_eps.map("{:.2f}".format)})
          [["model", "N", "log10 ratio", "95% interval", "eps / heuristic's"]].to_string(index=False))
winners = []
for r in ("scale", "pilot"):
    sub = rules[rules.rule == f"rule:{r}"]
    win = sub.groupby("study").hi.max() < 0
    lose = sub.groupby("study").lo.max() > 0
    glue(f"{r}_wins", f"{int(win.sum())} of {win.size}")
    glue(f"{r}_loses", f"{int(lose.sum())} of {lose.size}")
    glue(f"{r}_range", f"{sub.value.min():+.2f} to {sub.value.max():+.2f}")
    glue(f"{r}_verdict", "wins on every model" if win.all() else "does not win on every model")
    if win.all():
        winners.append(r)
glue("winners", " and ".join(winners) if winners else "none");

# %% [markdown]
# **Verdict.** The rule `scale` {glue:text}`scale_verdict`: it is more accurate than the
# heuristic (interval below 0 at both $N$) on {glue:text}`scale_wins` models and less accurate
# (interval above 0 at some $N$) on {glue:text}`scale_loses`; its $\log_{10}$ ratios range
# from {glue:text}`scale_range`. The rule `pilot` {glue:text}`pilot_verdict` (wins on
# {glue:text}`pilot_wins`, loses on {glue:text}`pilot_loses`; {glue:text}`pilot_range`).
# Rules that win on every model: {glue:text}`winners`. Only such a rule would be offered as an
# option of `cnce.fit`; `eps="auto"` stays the authors' heuristic. The `scale` rule was chosen after looking at the quick-scale curves,
# which suggested that a larger $\varepsilon$ helps on some models; the paper-scale run above is
# its test.
#
# ## Cost
#
# Each study's provenance file records its runs (the table above). The wall time of the first
# run of the studies shown, with the machine's load average (1, 5 and 15 minutes) when each
# study started and finished: the machine is shared, so the load says how much of its
# cores the run had.

# %% tags=["nbval-ignore-output", "hide-input"]
prov = df.attrs["provenance"]
first = {s: p["runs"][0] for s, p in prov.items() if p and p.get("runs")}
for s, r in first.items():
    print(f"{s}: {r.get('cells_computed')} cells, {r.get('wall_seconds', 0) / 60:.1f} min; "
          f"load average at start {r.get('load_average_start')}, at end {r.get('load_average_end')}")
wall = sum(r.get("wall_seconds") or 0.0 for r in first.values())
cells = sum(r.get("cells_computed") or 0 for r in first.values())
loads = [r[k][0] for r in first.values() for k in ("load_average_start", "load_average_end") if r.get(k)]
r0 = next(iter(first.values()))
print(f"all: {cells} cells in {wall / 60:.0f} min on {r0.get('cpu_count')} CPUs ({r0.get('cpu')}), "
      f"{r0.get('torch_threads')} torch thread(s); 1-minute load average {min(loads, default=float('nan')):.1f} "
      f"to {max(loads, default=float('nan')):.1f}")
for key, value in {"run_minutes": f"{wall / 60:.0f}", "run_cells": cells, "run_cpus": r0.get("cpu_count"),
                   "run_load": f"{min(loads, default=float('nan')):.1f} to {max(loads, default=float('nan')):.1f}"}.items():
    glue(key, value)

# %% [markdown]
# The whole grid, {glue:text}`run_cells` batched fits, took {glue:text}`run_minutes` minutes on
# {glue:text}`run_cpus` shared cores, with a 1-minute load average of {glue:text}`run_load`
# while it ran (so other work shared the cores).
#
# ## In short
#
# * $\varepsilon$ matters: at the ends of the grid CNCE loses {glue:text}`cost_small_lo:.1f` to
#   {glue:text}`cost_small_hi:.1f` decades of median squared error on the small side and
#   {glue:text}`cost_large_lo:.1f` to {glue:text}`cost_large_hi:.1f` on the large side. Around the
#   heuristic's choice lies a valley whose flat part is given per model in the table above.
# * The heuristic lands in the flat part in {glue:text}`n_flat_in` of {glue:text}`n_cases`
#   cases. Where it misses, {glue:text}`miss_side`. Its largest loss is {glue:text}`loss_max:.2f`
#   ({glue:text}`loss_worst`). On the ring under the authors' generator the loss comes from a
#   bias that happens to cancel near one $\varepsilon$, not from a flaw of the rule.
# * Of the other rules, `scale` {glue:text}`scale_verdict` and `pilot`
#   {glue:text}`pilot_verdict` (rules that win on every model: {glue:text}`winners`);
#   `eps="auto"` stays the authors' heuristic.
# * With the paper's independent noise, a very small $\varepsilon$ does not give score matching
#   in a finite sample; with antithetic, moment-matched noise it does.

# %% [markdown]
# ## The verdict, computed
#
# The block at the top of this page comes from this cell: the claims page's rows for this
# page.

# %% tags=["hide-input"]
# The verdict block at the top of this page: this page's rows of the claims
# ledger (data/claims/ledger.json, computed from the committed paper-scale results)
from companion.claims.render import glue_verdict_block

glue_verdict_block("07_choosing_eps", "A question of ours, beyond the paper: how close to the best fixed ε does the authors' heuristic come, on every synthetic model?")
