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
# # Data on a manifold: the ring model (Fig. 1 and Fig. 3)
#
# ```{glue:md} verdict
# :format: myst
# ```
#
# The ring model (Eq. 17) puts its mass near a sphere of known radius $\mu$:
# $\log\phi(\mathbf{u};\gamma) = -\tfrac{\gamma}{2}(\lVert\mathbf{u}\rVert - \mu)^2$, and only the
# precision $\gamma$ is estimated. The paper uses it to show where conditional noise pays
# off: NCE's Gaussian noise, matched to the data's mean and covariance, mostly lands
# where the data are not (inside the ring, in two dimensions), while CNCE's noise
# $\mathbf{y} = \mathbf{x} + \varepsilon\boldsymbol{\xi}$ stays near the data. In five dimensions with
# $\kappa = 10$ the paper reports CNCE's error about one order of magnitude below NCE's.
#
# **Our verdict, in short.** With data drawn exactly from the model and NCE run to
# convergence, {glue:text}`exact_cnce_edge`: NCE's median error is {glue:text}`exact_nce_gm`
# times CNCE's (geometric mean over $N$), so NCE is {glue:text}`exact_nce_cmp` CNCE
# ($\log_{10}$ of NCE's error over CNCE's: {glue:text}`exact_nce_ci`, 95 % interval). With
# the authors' data generator, which does not sample the model (see the caveat below), NCE's
# median error is {glue:text}`authors_nce_gm` times CNCE's, against the paper's one decade.
# The numbers are computed at the end of this page.
#
# **A caveat about the data.** The authors' code draws the radius from
# $\mathcal{N}(\mu, \sigma^2)$ (truncated at 0.1) and the direction uniformly. A sample of
# the model itself has the radial density
# $p(r) \propto r^{D-1}\exp(-\tfrac{\gamma}{2}(r-\mu)^2)$ on $r > 0$: the factor $r^{D-1}$ is the
# area of the sphere of radius $r$. Without it the data density in $\mathbb{R}^D$ is
# $\propto r^{-(D-1)}\exp(-\tfrac{\gamma}{2}(r-\mu)^2)$, which the model cannot represent for any
# $\gamma$: every estimator is then misspecified and converges to its own
# {term}`pseudo-true value <pseudo-true parameter>` instead of the $\gamma$ that generated the data. We therefore run the comparison
# twice: with the authors' generator (`radial="authors"`) and with an exact sampler of the
# model (`radial="exact"`, inverse-CDF sampling of the radial law). For the exact sampler
# maximum likelihood is well defined and consistent (the partition function is a 1-D
# integral over the radius, computed by quadrature), so MLE is the reference.

# %% tags=["parameters"]
# Values you may change; then rerun all cells (Run > Run All Cells).
# scale: "quick" computes the small grid here (and shows the committed
#   paper-scale run, if any); "paper" shows a stored paper-scale run.
#   To compute one (long on a CPU):
#   python -m cnce run ring --scale paper --seed SEED
scale = "quick"
# seed: 0 shows the committed runs; another integer a run of its own
seed = 0

# %%
import numpy as np
import pandas as pd
import torch

import cnce
from cnce import plotting
from cnce.experiments import analysis, page_results, provenance_table
from cnce.experiments.runner import build_problem
from cnce.noise import NCEGaussianNoise

pd.set_option("display.width", 120)
# quick: computed (what CI runs), then a complete committed paper-scale run
# is shown if there is one
df, shown, config = page_results("ring", scale, seed)
print(f"{config.figure}: scale = {shown!r}, seed = {seed}, "
      f"{config.n_sims} simulations per point, kappa = 10,")
Ns = sorted(df.N.unique().tolist())
print(f"N in {Ns}; generators: {sorted(df.study.unique().tolist())}")

# %% tags=["nbval-ignore-output"]
provenance_table(df)

# %% [markdown]
# ## Fig. 1: the ring in two dimensions, and the two kinds of noise
#
# Left: the (normalised) model density for $\mu = 5$, $\gamma = 4$ ($\sigma = 0.5$). Middle:
# NCE noise, a Gaussian with the mean and covariance of 5000 model samples. Right: CNCE
# noise, $\kappa = 10$ draws per data point, with $\varepsilon$ chosen by the authors'
# heuristic (the value CNCE's own fit picks on these data).

# %% tags=["hide-input"]
g = torch.Generator().manual_seed(seed)
ring2 = cnce.models.Ring(dim=2, mu=5.0)
theta2 = torch.tensor([[4.0]], dtype=torch.float64)
x2 = ring2.sample(theta2, 5000, generator=g)  # (1, 5000, 2), exact sampler
res2 = cnce.fit(ring2, x2, method="cnce", kappa=10, seed=seed, device="cpu")
eps2 = float(res2.eps[0])
xi2 = torch.randn(1, 5000, 10, 2, generator=g, dtype=torch.float64)
y_cnce = (x2.unsqueeze(2) + eps2 * xi2).reshape(-1, 2)  # CNCE's noise, Eq. (13)
nce_noise = NCEGaussianNoise.fit(x2)  # NCE's noise: a Gaussian with the data's mean and covariance
y_nce = nce_noise.apply(torch.randn(1, 50000, 2, generator=g, dtype=torch.float64)).reshape(-1, 2)
print(f"eps chosen by the heuristic: {eps2:.2f}; CNCE estimate of gamma: {float(res2.theta[0, 0]):.2f} (true 4.0)")

# %% mystnb={"image": {"alt": "Three square panels of the two-dimensional ring: the model density, a histogram of NCE's Gaussian noise, and a histogram of CNCE's noise, each with a colour bar."}}
plotting.experiments.ring_noise_figure(ring2, theta2, y_nce, y_cnce, eps2);

# %% [markdown]
# *Figure: our version of the paper's Fig. 1, the ring in two dimensions: (a) the model's
# density, (b) NCE's noise and (c) CNCE's noise as histograms (colour bars: density; noise
# points per bin). NCE's noise fills the inside of the ring; CNCE's stays near the data.*

# %%
r_nce = torch.linalg.vector_norm(y_nce, dim=-1)
r_cnce = torch.linalg.vector_norm(y_cnce, dim=-1)
def share(mask):
    return float(mask.double().mean())


print(f"2-D: share of noise within 2 sigma of the ring (|r - 5| < 1): "
      f"NCE {share((r_nce - 5).abs() < 1):.2f}, "
      f"CNCE {share((r_cnce - 5).abs() < 1):.2f}")
# the same ring (mu = 5, gamma = 4) in five dimensions: where does NCE's
# Gaussian noise fall?
x5 = cnce.models.Ring(dim=5, mu=5.0).sample(theta2, 5000, generator=g)
base5 = torch.randn(1, 50000, 5, generator=g, dtype=torch.float64)
y5 = NCEGaussianNoise.fit(x5).apply(base5)
r5 = torch.linalg.vector_norm(y5, dim=-1)
print(f"5-D: share of NCE noise within 2 sigma of the ring "
      f"{share((r5 - 5).abs() < 1):.2f}, "
      f"inside the ring (r < 4) {share(r5 < 4):.2f}; "
      f"in 2-D inside: {share(r_nce < 4):.2f}")

# %% [markdown]
# ## The two data generators in five dimensions
#
# Radii of 20000 points from each generator for $\mu = 5$, $\sigma = 1.5$ (the widest ring
# of the experiments, where the two differ most), against the radial density of the
# model. The authors' radii follow $\mathcal{N}(\mu, \sigma^2)$; the model's radial law is
# pushed outwards by $r^{4}$.

# %% mystnb={"image": {"alt": "Histograms of the radii of five-dimensional ring data from the exact sampler and from the authors' generator, with the model's radial density as a black curve; the legend is below the axes."}}
ring5 = cnce.models.Ring(dim=5, mu=5.0)
theta5 = torch.tensor([[1 / 1.5**2]], dtype=torch.float64)
radii = {}
for radial in ("exact", "authors"):
    u5 = ring5.sample(theta5, 20000, generator=g, radial=radial)
    radii[radial] = torch.linalg.vector_norm(u5, dim=-1).reshape(-1)
plotting.experiments.radii_figure(radii, mu=5.0, gamma=theta5.item(),
                                  dim=5);

# %% [markdown]
# *Figure: not a figure of the paper. Radii of the exact sampler and of the authors'
# generator in five dimensions, against the model's radial density (black).*

# %% [markdown]
# ## Fig. 3: CNCE, NCE and MLE at κ = 10, under both generators

# %% mystnb={"image": {"alt": "Two log-log panels, the authors' generator and the exact sampler: median squared error against N for CNCE, NCE and MLE at kappa = 10, with the 0.1 and 0.9 quantiles dashed and the level asymptotic theory predicts dotted (far below the curves under the authors' generator)."}}
titles = {"ring-authors": "authors' generator (as in the paper)",
          "ring-exact": "exact sampler of the model"}
# the level asymptotic theory predicts for the committed paper-scale curves (page 09)
from companion.theory_levels import predicted_levels

predicted = predicted_levels(shown, seed, note="Under the authors' generator the model is misspecified and the "
                             "prediction at the generating γ does not apply (see below).")
plotting.experiments.ring_figure(df, titles, predicted);

# %% [markdown]
# *Figure: our reproduction of the paper's Fig. 3 (ring model, $\kappa = 10$), once with the
# authors' data generator and once with the exact sampler of the model.
# {glue:text}`predicted_note`*

# %% [markdown]
# **What theory predicts (beyond the paper).** The dotted lines are the median squared error of
# the sandwich's normal law at the true $\gamma$ ({doc}`09_standard_errors`). Under the exact
# sampler every estimator is consistent, and at $N \ge$ {glue:text}`ring_large_N` the simulated median over the
# predicted one lies between {glue:text}`ring_exact_range`; theory puts NCE's error at
# {glue:text}`ring_exact_nce` times CNCE's (simulated: {glue:text}`ring_exact_nce_sim`, both
# averaged over $N \ge$ {glue:text}`ring_large_N`). Under the authors' generator theory and simulation part: the
# sandwich at the generating $\gamma$ describes the spread of an estimator around the value it
# converges to, but here each estimator converges to its own pseudo-true value (below), so the
# simulated error flattens at the squared bias and at the largest $N$ ends
# {glue:text}`ring_authors_range` times the predicted level. The table: simulated median over
# predicted per curve and $N$.

# %% tags=["hide-input"]
from cnce.report import glue
from companion.claims.theory import LARGE_N, nce_ratios
from companion.theory_levels import agreement

glue("ring_large_N", LARGE_N)
if predicted is None:
    print("The predicted levels belong to the committed paper-scale run (seed 0); not shown here.")
    for key in ("ring_exact_range", "ring_authors_range", "ring_exact_nce", "ring_exact_nce_sim"):
        glue(key, "(not shown for this run)")
else:
    for study in ["ring-exact", "ring-authors"]:
        print(f"{study}: simulated / predicted median squared error")
        print(agreement(predicted, study).round(2).to_string())
    ex = predicted[(predicted.study == "ring-exact") & (predicted.N >= LARGE_N)]
    r = ex.sim_median / ex.pred_median
    glue("ring_exact_range", f"{r.min():.2f} and {r.max():.2f}")
    nr = nce_ratios(predicted[predicted.study == "ring-exact"]).iloc[0]
    glue("ring_exact_nce", nr["pred"], "{:.2f}")
    glue("ring_exact_nce_sim", nr["sim"], "{:.2f}")
    au = predicted[(predicted.study == "ring-authors")]
    au = au[au.N == au.N.max()]
    r = au.sim_median / au.pred_median
    glue("ring_authors_range", f"{r.min():.0f} to {r.max():.0f}")

# %% [markdown]
# The ratio of NCE's median squared error to CNCE's at each $N$ (the paper reports about
# one order of magnitude, i.e. a ratio near 10; below we call a geometric mean within a
# factor $10^{\pm 0.25}$ of 10 "about one order of magnitude"):

# %%
ratio = analysis.method_ratio(df, "nce", "cnce", by=("study", "N"))
table = ratio.pivot_table(index="N", columns="study", values="ratio")
print(table.round(2).to_string())
for study in ["ring-authors", "ring-exact"]:
    r = ratio[ratio.study == study]
    print(f"{study}: NCE/CNCE median-error ratio "
          f"from {r.ratio.min():.2f} to {r.ratio.max():.2f} "
          f"(geometric mean {10 ** r.log10_ratio.mean():.2f}; "
          f"log10 ratio {r.log10_ratio.mean():.2f})")

# %% [markdown]
# ## Does our NCE converge?
#
# The authors' NCE loss has saturated branches whose value disagrees with its gradient
# ({doc}`../book/authors-code`): an optimiser on such a loss can fail and leave a fit at its
# initial value, with its initial error at every $N$. Run under GNU Octave on their ring
# model, most of their NCE fits did not move (the counts, and how they were made, are on that
# page). The paper does not say how its NCE fits ended, so whether its Fig. 3 shows such fits
# is an inference, not a fact we can check. Our NCE must move: below, for each method, the fraction of fits that met the
# convergence test, the largest final gradient norm, the median loss at the start and at the
# end, and the smallest decrease of the loss (positive: every fit lowered its loss).

# %%
conv = analysis.convergence_summary(df, by=("study", "method"))
print(conv.pipe(analysis.format_table, 4))
nce_rows = df[df.method == "nce"]
lowered = int((nce_rows.loss < nce_rows.init_loss).sum())
print(f"NCE fits whose loss decreased: {lowered} of {len(nce_rows)}")

# %% [markdown]
# ## What the authors' generator does to each estimator
#
# Under the authors' generator the model is misspecified, so each estimator has its own
# limit. Two of them can be computed directly:
#
# * **Maximum likelihood** converges to the $\gamma$ that minimises the Kullback-Leibler
#   divergence from the data, which solves $\mathbb{E}_{\text{model}}[(r-\mu)^2] =
#   \mathbb{E}_{\text{data}}[(r-\mu)^2] \approx \sigma^2$. Because the model's radial law is pushed
#   outwards by $r^{D-1}$, its spread about $\mu$ at precision $\gamma$ exceeds $1/\gamma$, so
#   MLE's limit lies *above* the generating $\gamma$.
# * **CNCE with small $\varepsilon$** behaves like score matching (the paper's Theorem on
#   the connection to score matching). Score matching's limit for this model is
#   $\mathbb{E}[1 + (D-1)(1-\mu/r)]/\mathbb{E}[(r-\mu)^2]$, which for $r \sim \mathcal{N}(\mu,\sigma^2)$ is
#   about $\gamma - (D-1)/\mu^2$: *below* the generating $\gamma$.
#
# The error against the generating $\gamma$ therefore cannot fall below the squared bias;
# the curves flatten, and the flattening level differs between estimators. We compute both
# limits for the simulations of the experiment and compare them with the estimates at the
# largest $N$ (relative bias $(\hat\gamma - \gamma)/\gamma$, median over simulations).

# %% tags=["hide-input"]
prob = build_problem("ring-authors", config.n_sims, config.N_max, seed)
mu = prob.model.mu
gamma = prob.theta_true[:, 0]
r = torch.linalg.vector_norm(prob.x, dim=-1)                       # the data actually used
m2 = ((r - mu[:, None]) ** 2).mean(-1)
sm_limit = (1 + (prob.model.dim - 1) * (1 - mu[:, None] / r)).mean(-1) / m2


def dlogZ(gam):  # d log Z / d gamma = -E_model[(r - mu)^2] / 2
    gam = gam.detach().clone().requires_grad_(True)
    (gr,) = torch.autograd.grad(prob.model.log_partition(gam[:, None]).sum(), gam)
    return gr


lo, hi = 0.2 * gamma, 5.0 * gamma                                   # bisection, all simulations at once
for _ in range(80):
    mid = 0.5 * (lo + hi)
    too_small = -2 * dlogZ(mid) > m2                                 # model spread still larger than the data's
    lo, hi = torch.where(too_small, mid, lo), torch.where(too_small, hi, mid)
mle_limit = 0.5 * (lo + hi)

N_max = int(df.N.max())
last = df[df.N == N_max].assign(rel_bias=lambda d: (d.theta_hat_0 - d.theta_true_0) / d.theta_true_0)
rows = []
for study in ["ring-authors", "ring-exact"]:
    for method in ["cnce", "nce", "mle"]:
        rows.append({"generator": study, "method": method,
                     f"median rel. bias at N={N_max}": last[(last.study == study) & (last.method == method)].rel_bias.median()})
rows.append({"generator": "ring-authors", "method": "score-matching limit", f"median rel. bias at N={N_max}": float(((sm_limit - gamma) / gamma).median())})
rows.append({"generator": "ring-authors", "method": "MLE limit (KL projection)", f"median rel. bias at N={N_max}": float(((mle_limit - gamma) / gamma).median())})
print(pd.DataFrame(rows).round(3).to_string(index=False))

# %% [markdown]
# ## What is left of the paper's claim
#
# The tables above carry the answer; the cell below states it. Under each generator we
# compare the NCE/CNCE ratio with the paper's order of magnitude, and we check whether
# the curves keep falling (slope of the medians over the three largest $N$).

# %% tags=["hide-input"]
slopes = analysis.fit_slopes(df[df.N >= sorted(df.N.unique())[-3]], by=("study", "method"))
print(slopes.pivot(index="method", columns="study", values="slope").round(2).to_string())
for study in ["ring-authors", "ring-exact"]:
    r = ratio[ratio.study == study]
    gm = 10 ** r.log10_ratio.mean()
    lg = np.log10(gm)
    print(f"{study}: converged NCE's median error is {gm:.1f} x CNCE's (geometric mean over N; "
          f"log10 {lg:.2f}, the paper: about 1)")

# %% [markdown]
# Would an NCE frozen at its starting point explain the paper's gap? Our NCE starts from the
# same initial $\gamma$ as CNCE, drawn independently of the true one. A fit that never moved
# would keep that starting point's error at every $N$:

# %% tags=["hide-input"]
# The verdict block at the top of this page: this page's rows of the claims
# ledger (data/claims/ledger.json, computed from the committed paper-scale results)
from companion.claims.render import glue_verdict_block

glue_verdict_block("04_ring", "On the ring model at κ = 10, with ε from the authors' heuristic, is CNCE's error about an order of magnitude below NCE's, under the authors' data generator and under an exact sampler of the model? (And at the best ε?)")

# %% tags=["hide-input"]
from cnce.report import glue
from companion.claims.ledger import record

ring_row = record("ring-cnce-beats-nce")["record"]
init_err = prob.model.error(prob.theta0, prob.theta_true)            # shared by both generators
for study in ["ring-authors", "ring-exact"]:
    cn = df[(df.study == study) & (df.method == "cnce")].groupby("N").error.median()
    frozen = np.log10(float(init_err.median()) / cn.to_numpy())
    r = ratio[ratio.study == study]
    print(f"{study}: log10(NCE / CNCE) for a frozen NCE {frozen.min():.2f} to {frozen.max():.2f} (mean {frozen.mean():.2f}); "
          f"for our converged NCE {r.log10_ratio.min():.2f} to {r.log10_ratio.max():.2f} (mean {r.log10_ratio.mean():.2f})")
    key = study.replace("ring-", "")
    glue(f"{key}_frozen", frozen.mean(), "{:.1f}")
    glue(f"{key}_frozen_cmp", "more than the paper's one decade" if frozen.mean() > 1.25 else
         "less than the paper's one decade" if frozen.mean() < 0.75 else "about the paper's one decade")
    glue(f"{key}_nce_gm", 10 ** r.log10_ratio.mean(), "{:.1f}")
    glue(f"{key}_nce_log", r.log10_ratio.mean(), "{:.2f}")
    # the words say what the 95 % interval shows (the ledger's ring row)
    ring = ring_row["numbers"]
    glue(f"{key}_nce_ci", ring.get(f"{key}_log10", "(no committed run)"))
    glue(f"{key}_nce_cmp", ring.get(f"{key}_nce_is", "(no committed run)"))
    glue(f"{key}_cnce_edge", ring.get(f"{key}_class", "(no committed run)"))

# %% [markdown]
# ### At the best ε: the verdict depends on ε
#
# The comparison above runs CNCE at the ε the authors' heuristic picks. The ε experiment
# ({doc}`07_choosing_eps`) reran CNCE on the same simulations (same truth, data and noise)
# at fixed multiples of that ε, at two sample sizes. Beside NCE, CNCE at the grid's best
# multiple (chosen on these same simulations, so a little flattering to CNCE):
# $\log_{10}$ of NCE's median error over CNCE's, with paired 95 % bootstrap intervals.

# %% tags=["hide-input"]
from cnce.experiments.claims import committed_results, ring_best_eps

best_res, _ = committed_results(seed, studies=("ring-authors", "ring-exact", "eps-ring-authors", "eps-ring-exact"))
for study in ["ring-authors", "ring-exact"]:
    key = study.replace("ring-", "")
    if study not in best_res or f"eps-{study}" not in best_res:
        print(f"{study}: no committed eps experiment for seed {seed}")
        glue(f"{key}_best_gm", "(not computed)")
        glue(f"{key}_best_verdict", "(not computed)")
        continue
    b = ring_best_eps(best_res[study], best_res[f"eps-{study}"], n_boot=2000, seed=seed)
    for r in b["table"].itertuples():
        print(f"{study}, N = {r.N}: log10(NCE / CNCE) at the heuristic's eps {r.default.fmt()}, "
              f"at the best multiple ({r.best_factor:.3g} x) {r.best.fmt()}")
    glue(f"{key}_best_gm", 10 ** b["mean_best"].value, "{:.1f}")
    glue(f"{key}_best_verdict", ring_row["numbers"].get(f"{key}_best_class", "(not computed)"))

# %% [markdown]
# Under the authors' generator, CNCE at its best ε is {glue:text}`authors_best_gm` times more
# accurate than NCE (mean over the two $N$), and the test that the verdict above applies to
# each generator finds *{glue:text}`authors_best_verdict`* there; under the exact sampler the
# ratio is {glue:text}`exact_best_gm` and the test finds *{glue:text}`exact_best_verdict`*. So
# the outcome for the authors' generator depends on ε. There CNCE's error is mostly a bias that
# depends on ε and passes close to zero near the best multiple ({doc}`07_choosing_eps`): a
# property of this misspecified problem, not a better rule for choosing ε.

# %% [markdown]
# ### Reading the numbers
#
# * **Our NCE converges.** Every NCE fit lowers its loss from the starting value and ends
#   with a small gradient norm (the convergence table above), so an NCE stuck at its start,
#   as the authors' code may leave one, is not what we compare with. A converged NCE is a
#   stronger baseline than a stuck one.
# * **With the authors' generator** the comparison is between *biased* estimators. The
#   bias table shows that CNCE settles close to its score-matching limit, a little below
#   the generating $\gamma$, while NCE and MLE settle above it, MLE at its KL projection.
#   For these ring sizes CNCE's limit lies closer to the generating $\gamma$, so its
#   squared error against that $\gamma$ is smaller, and all the curves flatten as $N$ grows
#   (the slopes over the largest $N$ are far from $-1$). What remains of the gap at large
#   $N$ is a difference between squared biases under a misspecified model, not a
#   difference in how well the estimators use the data. A converged NCE keeps only part of
#   the paper's gap: its median error is {glue:text}`authors_nce_gm` times CNCE's
#   (geometric mean over $N$, {glue:text}`authors_nce_log:.2f` {term}`decades <decade>`), against the paper's
#   one decade. An NCE frozen at its independent starting value would sit
#   {glue:text}`authors_frozen` decades above CNCE ({glue:text}`authors_frozen_cmp`). The
#   paper's starting values need not be ours, so this neither confirms nor rules out that
#   the paper's NCE fits stopped early.
# * **With the exact sampler** every estimator is consistent, the curves keep falling, and
#   the NCE/CNCE ratio for `ring-exact` measures efficiency. In our runs NCE's median error
#   is {glue:text}`exact_nce_gm` times CNCE's (geometric mean over $N$): NCE with Gaussian
#   noise fitted to the data is {glue:text}`exact_nce_cmp` CNCE at $\kappa = 10$
#   ({glue:text}`exact_nce_ci` decades, 95 % interval). In five
#   dimensions a Gaussian with the data's covariance puts more of its mass near the ring
#   and less inside it than in two (compare the 2-D and 5-D shares printed under Fig. 1),
#   so the picture of Fig. 1 overstates how badly NCE's noise is placed in the 5-D
#   experiment.
#
# The paper's claim that CNCE beats NCE by about an order of magnitude on the ring is
# therefore reproduced only in part, and only under the authors' generator, where it
# rests on a modelling mismatch and on the choice of ε (at the grid's best ε the same test
# finds *{glue:text}`authors_best_verdict`*), and possibly on NCE fits that stopped early: the
# authors' NCE loss disagrees with its gradient in its saturated branches, which can stall a
# line search (a reading of their code, {doc}`../book/authors-code`). With data drawn from
# the model and NCE run to convergence, NCE is {glue:text}`exact_nce_cmp` CNCE on this model.
