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
# # Consistency of CNCE (Fig. 2a-b)
#
# ```{glue:md} verdict
# :format: myst
# ```
#
# Section 3.2 of the paper argues empirically that CNCE is consistent: for the Gaussian
# model (Eq. 15, five dimensions, 15 precision parameters) and the ICA model (Eq. 16, four
# sources, a 4 x 4 demixing matrix) the squared estimation error falls on a straight line
# in log-log coordinates as the sample size $N$ grows, and the CNCE curves move towards
# the maximum-likelihood curve as the number of noise samples per data point $\kappa$
# grows. The paper also reports that on ICA a minority of fits end in a local minimum:
# 13 of 100 for MLE and 7 of 100 for CNCE.
#
# This page recomputes both panels with `cnce.fit`. Each point of a curve is one batched
# fit of all simulations; every simulation has its own ground truth, its own data and its
# own noise. Data are drawn once per simulation at the largest $N$ and the smaller sample
# sizes use prefixes of it; likewise one noise base per simulation serves every $N$ and
# $\kappa$ (its prefix). The parameter `scale` selects the grid: `quick` (small, computed
# on the fly) or `paper` (the paper's grid, loaded from the committed results in
# `data/results/paper/`).

# %% tags=["parameters"]
# Values you may change; then rerun all cells (Run > Run All Cells).
# scale: "quick" computes the small grid here (and shows the committed
#   paper-scale run, if any); "paper" shows a stored paper-scale run.
#   To compute one (long on a CPU):
#   python -m cnce run consistency --scale paper --seed SEED
scale = "quick"
# seed: 0 shows the committed runs; another integer a run of its own
seed = 0

# %%
import numpy as np
import pandas as pd
import torch

from cnce import plotting
from cnce.experiments import analysis, page_results, provenance_table

pd.set_option("display.precision", 3)
pd.set_option("display.width", 120)
# quick: computed (what CI runs), then a complete committed paper-scale run
# is shown if there is one
df, shown, config = page_results("consistency", scale, seed)
print(f"{config.figure}: scale = {shown!r}, seed = {seed}, "
      f"{config.n_sims} simulations per point,")
Ns = sorted(df.N.unique().tolist())
kappas = sorted(df.kappa.dropna().unique().tolist())
print(f"N in {Ns}, kappa in {kappas}")
studies = [s for s in ("gaussian", "ica") if (df.study == s).any()]

# %% [markdown]
# Which run produced these numbers (package version, commit, machine, wall time):

# %% tags=["nbval-ignore-output"]
provenance_table(df)

# %% [markdown]
# ## The figure
#
# Solid lines: median over simulations; dashed: the 0.1 and 0.9 quantiles, as in the
# paper. The dotted grey segment has slope $-1$, the rate $1/N$ of the squared error of
# an efficient estimator.

# %% mystnb={"image": {"alt": "Two log-log panels, Gaussian and ICA models: median squared error against the sample size N for CNCE at four values of kappa and for MLE, with the 0.1 and 0.9 quantiles dashed."}}
titles = {"gaussian": "(a) Gaussian model", "ica": "(b) ICA model"}
# the level asymptotic theory predicts for the committed paper-scale curves (page 09)
from companion.theory_levels import predicted_levels

predicted = predicted_levels(shown, seed)
plotting.consistency_figure(df, titles, predicted);

# %% [markdown]
# *Figure: our reproduction of the paper's Fig. 2a-b. Median squared error over simulations
# (solid) with the 0.1 and 0.9 quantiles (dashed), CNCE at each $\kappa$ (one colour and
# marker each) and MLE (black). {glue:text}`predicted_note`*

# %% [markdown]
# ## Slopes
#
# A least-squares line through the medians, $\log_{10}$ error against $\log_{10} N$, for
# each curve. Consistency in quadratic mean shows as a straight line with negative slope;
# a slope of $-1$ is the $1/N$ rate.

# %%
slopes = analysis.with_curve(analysis.fit_slopes(df))
table = slopes.pivot_table(index="curve", columns="study", values="slope",
                           sort=False)
print(table.round(2).to_string())

# %%
for study in studies:
    s = slopes[(slopes.study == study) & (slopes.method == "cnce")]
    m = slopes[(slopes.study == study) & (slopes.method == "mle")]
    m = m.slope.iloc[0]
    print(f"{study}: CNCE slopes from {s.slope.min():.2f} "
          f"to {s.slope.max():.2f} (MLE {m:.2f}); "
          f"smallest r^2 of the CNCE fits {s.r2.min():.3f}")

# %% [markdown]
# ## Does CNCE approach MLE as κ grows?
#
# The ratio of CNCE's median squared error to MLE's, at each $N$ (a ratio of 1 would be
# MLE's accuracy).

# %%
med = analysis.quantile_summary(df, ("study", "method", "kappa", "N"))
mle = med[med.method == "mle"].set_index(["study", "N"])["median"]
cn = med[med.method == "cnce"].copy()
mle_at = mle.loc[list(zip(cn.study, cn.N))].to_numpy()
cn["ratio_to_mle"] = cn["median"].to_numpy() / mle_at
ratio = cn.pivot_table(index=["study", "kappa"], columns="N",
                       values="ratio_to_mle")
print(ratio.round(2).to_string())

# %%
for study in studies:
    r = ratio.loc[study].mean(axis=1)  # mean over N of the ratio, per kappa
    trend = ("falls" if r.is_monotonic_decreasing
             else "does not fall monotonically")
    by_kappa = ", ".join(f"kappa={k}: {v:.2f}" for k, v in r.items())
    print(f"{study}: CNCE/MLE error ratio averaged over N, by kappa: "
          f"{by_kappa} -> {trend} with kappa")

# %% [markdown]
# ## ICA: fits stuck in a local minimum
#
# Every simulation starts from one initialisation (the authors' $\mathbf{B}_0 = 0.1 \times$
# standard normal entries), shared by all methods and sample sizes. A fit that ends in a
# wrong basin keeps a large error however large $N$ is; the paper saw this for 13 of 100
# MLE fits and 7 of 100 CNCE fits, visible as a high, flat 0.9 quantile of MLE in its
# Fig. 2b. **Criterion:** a simulation counts as stuck when its squared error exceeds 1,
# which at the largest $N$ is {glue:text}`threshold_decades` decades above the median error
# there, and of the order of a wrongly recovered row of $\mathbf{B}$ (a row of a demixing
# matrix with a condition number of at most 10 has a squared norm of order one). At small
# $N$ the same threshold also counts plain estimation noise, so the count at the largest
# $N$ is the one to compare. The strip plot shows every simulation's error at the largest
# $N$, with the threshold as a dotted line: stuck runs would form a group of their own to
# its right.

# %% mystnb={"image": {"alt": "Strip plot: one dot per simulation's squared error at the largest N, one row per method and kappa, with a dotted threshold line above which a fit counts as stuck."}}
THRESHOLD = 1.0
if "ica" in studies:
    ica = df[df.study == "ica"]
    N_max = int(ica.N.max())
    plotting.experiments.stuck_strip_plot(ica, THRESHOLD);
else:
    print("ICA results are not available at this scale and seed.")

# %% [markdown]
# *Figure: not a figure of the paper. Each dot is one simulation's squared error at the
# largest $N$, one row per curve; the dotted line is the threshold above which a fit counts
# as stuck.*

# %%
if "ica" in studies:
    stuck = analysis.with_curve(analysis.stuck_counts(ica, THRESHOLD))
    table = stuck.pivot_table(index="curve", columns="N", values="stuck",
                              sort=False)
    print(table.to_string())

else:
    print("ICA results are not available at this scale and seed.")

# %%
if "ica" in studies:
    n = config.n_sims
    at_max = stuck[stuck.N == N_max].set_index("curve")["stuck"]
    mle_count = int(at_max["MLE"])
    cnce_counts = at_max.drop("MLE")
    per_kappa = ", ".join(f"{c.split(', ')[1]}: {v}/{n}"
                          for c, v in cnce_counts.items())
    print(f"Stuck at N = {N_max} (squared error > {THRESHOLD}): "
          f"MLE {mle_count}/{n}; CNCE {per_kappa}")
    print(f"Paper: MLE 13/100, CNCE 7/100 (scaled to {n} simulations: "
          f"MLE {13 * n / 100:.1f}, CNCE {7 * n / 100:.1f})")
    print(f"Ours, per 100 simulations: MLE {100 * mle_count / n:.0f}, "
          f"CNCE {100 * cnce_counts.min() / n:.0f} "
          f"to {100 * cnce_counts.max() / n:.0f}")
    from cnce.report import glue

    median_at_max = ica[ica.N == N_max].error.median()
    glue("threshold_decades", np.log10(THRESHOLD / median_at_max), "{:.1f}")

else:
    print("ICA results are not available at this scale and seed.")

# %% [markdown]
# How does our MLE compare with the authors'? Their ICA maximum-likelihood routine hands
# the optimiser a natural gradient where it expects the ordinary gradient. Run under GNU
# Octave on their own problems, many of their fits stop short of the optimum, and those with
# a large error reach the right basin once the same likelihood is minimised further with its
# true gradient (the counts are on {doc}`../book/authors-code`); our MLE minimises the exact
# negative log-likelihood. A count of stuck fits is therefore a statement about optimisers
# as much as about estimators: a smaller count than the paper's says that our optimisers
# escape (or never meet) the poor basins from the same kind of starting points, not that the
# likelihood or the CNCE loss has none.
#
# ## Did the optimiser converge?
#
# Fraction of fits that met the convergence test, median iterations, the largest final
# gradient norm, and the smallest decrease of the loss from its starting value.

# %%
print(analysis.convergence_summary(df).pipe(analysis.format_table, 4))

# %% [markdown]
# For ICA the convergence flag is worth a second look: the ICA objectives are piecewise
# smooth (the $|\mathbf{b}_j\cdot\mathbf{u}|$ kinks), so the optimiser's gradient test cannot
# always be met exactly and some fits stop on the stagnation rule instead; the strip plot
# above shows whether any of them ended far from the truth.
#
# ## Against the paper
#
# The paper shows curves, not slopes; a straight line in the log-log plot is its evidence
# for consistency, and a slope of $-1$ is the rate of an efficient estimator. The consistency
# verdict tests that whole sentence: the error falls as $N$ grows (every slope's 95 % interval
# below 0), at about the $1/N$ rate (every interval reaching near $-1$), along a straight line
# (the slopes over the lower and the upper half of the $N$ grid about equal). An error that
# falls, but bends or misses the rate, is "partly reproduced"; the rule, its tolerances and the
# verdict at half and twice them are on the claims page. Slopes steeper than $-1$ that flatten
# as $N$ grows, as on ICA, mean the error is still falling faster than it will asymptotically:
# these sample sizes have not reached the $1/N$ regime. The verdicts
# below are computed from the tables above. Where the grids differ (the `quick` scale),
# only the qualitative shape can be compared.

# %% tags=["hide-input"]
# The verdict block at the top of this page: this page's rows of the claims
# ledger (data/claims/ledger.json, computed from the committed paper-scale results)
from companion.claims.render import glue_verdict_block

glue_verdict_block("02_consistency", "Does CNCE's error fall along a straight line in log-log as N grows, at the 1/N rate (slope −1) of an efficient estimator (the paper's evidence for consistency), does it approach MLE's as κ grows, and do some ICA fits end in a local minimum, as the paper reports?")

# %% tags=["hide-input"]
for study in studies:
    s = slopes[(slopes.study == study) & (slopes.method == "cnce")]
    r = ratio.loc[study].mean(axis=1)
    print(f"{study}: CNCE log-log slopes {s.slope.min():.2f} to {s.slope.max():.2f} with r^2 >= {s.r2.min():.3f} "
          f"(paper: linear decrease); "
          f"CNCE/MLE ratio {r.iloc[0]:.2f} at kappa = {r.index[0]} down to {r.iloc[-1]:.2f} at kappa = {r.index[-1]} "
          f"(paper: approaches MLE as kappa grows)")
if "ica" in studies:
    print(f"ica: stuck at N = {N_max}: MLE {mle_count}/{n}, CNCE {cnce_counts.min()} to {cnce_counts.max()} of {n} "
          f"(paper: 13/100 and 7/100)")
