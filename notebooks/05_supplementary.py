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
# # Non-negative and discrete data (Supp. Fig. 1)
#
# Supplementary C of the paper checks CNCE on two more models, with the same protocol as
# Fig. 2a-b (median and 0.1/0.9 quantiles over simulations, CNCE at each $\kappa$ and MLE):
#
# * a **log-normal** model (Eq. 62): positive data, but Gaussian conditional noise that can
#   leave the positive axis. The model therefore also needs a value for $u \le 0$, a
#   constant $C$ that is learned with the precision $\theta$; only $\theta$'s error is
#   reported (the paper uses the absolute error; we plot the squared error like every
#   other figure, which only doubles the slope on the log scale and keeps the axes
#   comparable). This is the case $\mathbb{X} \subset \mathbb{Y}$ of the paper's extended
#   nonparametric theorem (Supplementary A).
# * a **Bernoulli** model (Eq. 63) with two unnormalised parameters $(\theta_1, \theta_2)$,
#   identified only up to scale, and the bit-flip conditional noise of Eq. (64). Its error
#   is measured after normalising the estimate to sum to one.

# %% tags=["parameters"]
scale = "quick"
seed = 0

# %%
import numpy as np
import pandas as pd
import torch

from cnce import plotting
from cnce.experiments import analysis, page_results, provenance_table

pd.set_option("display.width", 120)
# quick: computed (what CI runs), then a complete committed paper-scale run is shown if there is one
df, shown, config = page_results("supplementary", scale, seed)
print(f"{config.figure}: scale = {shown!r}, seed = {seed}, {config.n_sims} simulations per point,")
print(f"N in {sorted(df.N.unique().tolist())}, kappa in {sorted(df.kappa.dropna().unique().tolist())}")

# %% tags=["nbval-ignore-output"]
provenance_table(df)

# %% [markdown]
# ## The figure

# %%
plotting.consistency_figure(df, {"lognormal": "(a) log-normal model", "bernoulli": "(b) Bernoulli model"});

# %% [markdown]
# ## Slopes and the distance to MLE
#
# Least-squares slopes of $\log_{10}$ median squared error against $\log_{10} N$ (slope
# $-1$ is the $1/N$ rate), and the ratio of CNCE's median error to MLE's averaged over $N$.

# %%
slopes = analysis.with_curve(analysis.fit_slopes(df))
print(slopes.pivot_table(index="curve", columns="study", values="slope", sort=False).round(2).to_string())

# %%
med = analysis.quantile_summary(df, ("study", "method", "kappa", "N"))
mle = med[med.method == "mle"].set_index(["study", "N"])["median"]
cn = med[med.method == "cnce"].copy()
cn["ratio_to_mle"] = cn["median"].to_numpy() / mle.loc[list(zip(cn.study, cn.N))].to_numpy()
ratio = cn.groupby(["study", "kappa"])["ratio_to_mle"].mean().unstack("study")
print(ratio.round(2).to_string())
for study in ["lognormal", "bernoulli"]:
    s = slopes[(slopes.study == study) & (slopes.method == "cnce")]
    r = ratio[study]
    print(f"{study}: CNCE slopes {s.slope.min():.2f} to {s.slope.max():.2f}; CNCE/MLE error ratio "
          f"{r.iloc[0]:.2f} at kappa = {r.index[0]} and {r.iloc[-1]:.2f} at kappa = {r.index[-1]}")

# %% [markdown]
# ## Convergence and the noise scale
#
# For the Bernoulli model $\varepsilon$ is a flip probability (Eq. 64), so the heuristic
# that picks it (a variant of the continuous one, with its own steps and caps) must keep
# it within $[0, 1]$. The table lists, per curve, the fraction of converged
# fits, the largest final gradient norm and the range of $\varepsilon$ that was chosen.

# %%
conv = analysis.convergence_summary(df, by=("study", "method", "kappa"))
eps = df[df.method == "cnce"].groupby(["study", "kappa"])["eps"].agg(["min", "median", "max"])
print(conv[["study", "method", "kappa", "converged", "max_grad_norm", "min_loss_drop"]].pipe(analysis.format_table, 4))
print(eps.round(3).to_string())

# %% [markdown]
# Two things in this table are worth knowing. For the Bernoulli model the heuristic often
# keeps $\varepsilon = 1$: every noise sample is then the flipped bit, which still
# identifies the ratio $\theta_2/\theta_1$ (the only identifiable quantity). For the
# log-normal model the heuristic used to push $\varepsilon$ far above the data's scale
# (towards its hard cap of 1000 times that scale) for some simulations: with the constant
# $C$ of Eq. (62) initialised at 0, the loss at the initial parameters stayed near
# $2\log 2$ for every $\varepsilon$. The package now starts $C$ at $-10$ (the data never
# fall on $u \le 0$), which removes the runaway. The committed paper-scale run was made
# with the new start (its provenance file names the commit). The count below checks the
# fix on whichever run this page shows.

# %%
big = df[(df.study == "lognormal") & (df.method == "cnce")]
scale_eps = big.groupby("sim")["eps"].max()
print(f"log-normal: simulations whose eps exceeded 10 in some cell: {int((scale_eps > 10).sum())} of {scale_eps.size}")

# %% [markdown]
# ## Against the paper
#
# Supp. Fig. 1 shows, for both models, CNCE curves that fall linearly in the log-log
# domain and approach MLE as $\kappa$ grows. The slopes and ratios printed above are the
# corresponding numbers for our run.
