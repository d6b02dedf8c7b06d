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
# # Beyond the paper: CNCE for your own energy network
#
# ```{glue:md} verdict_block
# :format: myst
# ```
#
# **The question.** Should you train a neural energy-based model with CNCE? The paper
# compared CNCE with NCE on models with a handful of parameters and fitted one image network
# (2018). Today neural energies are trained with denoising score matching (DSM), sliced score
# matching (SSM) or NCE. This page trains **the same small networks with each of CNCE, NCE,
# DSM and SSM, each tuned on the same validation budget**, on four standard toy densities and
# two densities a practitioner might bring (a mixture of three anisotropic Gaussians and a
# banana), and scores every run by its **exact held-out log-likelihood** (in two dimensions
# the normaliser can be computed on a grid, and checked). It also asks which rule for CNCE's
# noise scale $\varepsilon$ a network should use.
#
# **The answers, from the committed study ({glue:text}`study_desc`).** {glue:text}`rule_verdict`
# {glue:text}`method_verdict` A difference counts when its paired interval over seeds, widened
# for the number of comparisons made (Bonferroni), excludes zero; otherwise the page says "no
# significant difference".
#
# `cnce.nn.train(net, x, method="cnce")` takes any `torch.nn.Module` that maps a batch
# `(B, D)` to unnormalised log-densities `(B,)`; `cnce.nn.CNCELoss` is the same loss as an
# object for a loop of your own, and `cnce.nn.langevin` draws samples from the result.

# %% tags=["parameters"]
# Values you may change; then rerun all cells (Run > Run All Cells).
# scale "quick": the small run this page trains itself (samples, checks) takes
# 300 steps; "paper": the study's number of steps. The study is always the
# committed one (or the one named below).
scale = "quick"
# the stored study shown: "nn-study" is the committed one; compute another
# with `python -m cnce nn-study --name NAME` (about 45 min on one CPU core)
study = "nn-study"
# seed of the small run this page trains itself (samples and the checks)
seed = 0

# %%
import math

import numpy as np
import pandas as pd
import torch

import cnce
import cnce.nn as cnn
from cnce.nn import compare, plots
from cnce.nn import study as nn_study
from cnce.report import glue
from companion.claims.render import glue_verdict_block

pd.set_option("display.width", 120)
LABELS = plots.LABELS
stored = nn_study.load(study)
if stored is None:
    raise FileNotFoundError(f"no stored study {study!r}; compute it with "
                            f"`python -m cnce nn-study --name {study}`")
rows, prov = stored
sc = nn_study.StudySettings(**prov["settings"])
n_runs = len(nn_study.candidates(sc))
df = compare.complete(rows, n_runs)
n_seeds = df.seed.nunique()
print(f"stored study {study!r}: {len(rows)} runs, {n_seeds} complete seeds x "
      f"{df.groupby(['arch', 'dataset']).ngroups} cases x {n_runs} runs, "
      f"{sc.steps} Adam steps each; code commit {prov['git_commit'][:10]}")

# %% tags=["hide-input"]
glue("study_desc", f"{n_seeds} seeds, data redrawn per seed, {sc.steps} training steps "
                   "per run")
for key, value in {"steps": sc.steps, "batch": sc.batch_size, "kappa": sc.kappa,
                   "lr": sc.lr, "hidden": sc.hidden, "layers": sc.layers,
                   "n_train": sc.n_train, "n_val": sc.n_val, "n_test": sc.n_test,
                   "grid": sc.grid, "box": cnn.BOX, "tol": sc.tol, "every": sc.every,
                   "eps_cap": cnn.EPS_CAP, "n_seeds": n_seeds,
                   "fixed_eps": ", ".join(f"{e:g}" for e in nn_study.FIXED_EPS),
                   "dsm_sigmas": ", ".join(f"{e:g}" for e in nn_study.DSM_SIGMAS),
                   "lrs": ", ".join(f"{f * sc.lr:.2g}" for f in nn_study.LR_FACTORS),
                   "quartic_K": sc.quartic_K}.items():
    glue(key, value)

# %% [markdown]
# ## The set-up: equal budgets, tuned on validation data
#
# **Data.** The four toys of the score-matching and flow papers' code (`cnce.nn.TOYS`:
# eight Gaussians on a circle, two spirals, a checkerboard, four rings) and two densities of
# our own (`cnce.nn.CASES`: `mixture3`, three anisotropic Gaussians with unequal weights;
# `banana`, a curved ridge), each with {glue:text}`n_train` training, {glue:text}`n_val`
# validation and {glue:text}`n_test` test points, **drawn afresh for every seed**.
# **Networks.** An MLP (`cnce.nn.MLPEnergy`: {glue:text}`layers` hidden layers of
# {glue:text}`hidden` SiLU units) on all six, and a second architecture on the two cases of
# our own, `cnce.nn.QuarticEnergy`: $\log\phi = \mathbf a^\top\mathbf m(\mathbf u) -
# \sum_k(\mathbf w_k^\top\mathbf m(\mathbf u))^2$ with $\mathbf m$ the monomials of degree one
# and two ({glue:text}`quartic_K` squares), a quartic polynomial. One initial network per seed,
# shared by every run of that seed. **Budget.** Adam at learning rate {glue:text}`lr`,
# {glue:text}`steps` steps of {glue:text}`batch` points, $\kappa =$ {glue:text}`kappa` random
# draws per data point for every method (noise points, perturbations or projections).
#
# **Tuning.** Every method gets three candidates, trained in full, and keeps the one with the
# best log-likelihood on the *validation* points; the test points only score the choice:
#
# - **CNCE** (Eqs. 8-9): $\varepsilon$ fixed at {glue:text}`fixed_eps` data scales (the mean
#   per-coordinate standard deviation);
# - **NCE**: Gaussian noise fitted to the data, $\nu = \kappa$, a learned log-normaliser;
#   learning rates {glue:text}`lrs`;
# - **DSM** {cite}`vincent2011`: $\sigma$ at {glue:text}`dsm_sigmas` data scales;
# - **SSM** {cite}`song2019`, variance-reduced: learning rates {glue:text}`lrs`.
#
# The same runs also give each method **at its defaults**, untuned (CNCE with
# `eps="auto"`, DSM with $\sigma$ = 0.1 data scales, NCE and SSM at the common learning rate).
#
# **Score.** The held-out log-likelihood $\frac1M\sum_i \log\phi(\mathbf{x}_i) - \log Z$ with
# $Z = \int\phi$ over the box $[-L, L]^2$, $L =$ {glue:text}`box`, by the midpoint rule on a
# {glue:text}`grid` $\times$ {glue:text}`grid` grid. Two checks guard it
# (`cnce.nn.normaliser_check`, which `cnce.nn.log_likelihood` runs by default): $\log Z$ on a
# box twice as wide must not exceed $\log Z$ on the box by more than {glue:text}`tol` nats
# (otherwise the network's density has mass outside the box and may be improper: an energy
# that falls linearly far from the data, or not at all), and the grid's resolution error
# (Richardson's estimate from a grid half as fine) must stay below {glue:text}`tol` nats. In
# the study every run is scored by the log-likelihood of its density *restricted to the box*
# (a proper density whatever the network does outside; all test points lie in the box), and
# the runs that fail a check are counted and shown; in tuning, a candidate that fails a check
# is chosen only when all three fail.
#
# The checks must be able to fail: a log-density that grows linearly along one axis,
# $0.8\,u_1$, and a mixture with a linearly rising tail must trip the first; the eight
# Gaussians times $e^3$ must pass and give $\log Z = 3$.

# %%
def mixture_times_e3(u):
    return cnn.eight_gaussians_log_prob(u) + 3.0


def linear(u):
    return 0.8 * u[:, 0]


def rising_tail(u):
    return torch.logaddexp(cnn.eight_gaussians_log_prob(u), u.norm(dim=-1) - 6.0)


for name, f in (("8 Gaussians x e^3", mixture_times_e3), ("linear 0.8 u1", linear),
                ("mixture + rising tail", rising_tail)):
    c = cnn.normaliser_check(f, n=sc.grid, tol=sc.tol)
    print(f"{name:>22}: log Z {c.log_z:8.4f}; wider box adds {c.outside:.4f} nats; "
          f"resolution error {'< 1e-4' if c.resolution < 1e-4 else f'{c.resolution:.4f}'}; "
          f"{'passes' if c.ok else 'FAILS (log_likelihood raises)'}")
improper = (~df.proper.astype(bool)).groupby(df.method).mean()
glue("improper_share", ", ".join(f"{LABELS[m]} {100 * improper[m]:.0f} %"
                                 for m in cnn.METHODS))

# %% [markdown]
# Over all runs of the study, the share that fails a check (mostly mass outside the box,
# densities that are not yet, or not at all, confined to the data's region):
# {glue:text}`improper_share`.
#
# ## Which eps rule for a network?
#
# The paper's heuristic (`cnce.eps`) grows or shrinks $\varepsilon$ until the CNCE loss at the
# *initial* parameters is clearly, but not too far, below its $\varepsilon = 0$ value
# $2\log 2$. A network changes as it trains, so the rule can be rerun; its cap is
# {glue:text}`eps_cap` data scales because a freshly initialised network is nearly flat. The
# schedules measured (`cnce.nn.CNCELoss(eps=...)`):
#
# - **once**: the rule on the first minibatch, then fixed;
# - **rechoose**: the rule from its start every {glue:text}`every` steps (this package's
#   earlier default);
# - **carry**: every {glue:text}`every` steps the rule *starting from the current*
#   $\varepsilon$: it stays while the loss is inside the rule's band and moves only when it
#   has left it (hysteresis);
# - **upward**: as rechoose, but $\varepsilon$ never decreases;
# - **fixed k**: $\varepsilon$ = k data scales, k in {glue:text}`fixed_eps`, no search
#   (`eps="scale", factor=k`; the study takes the scale of the whole training set, the loss
#   object that of its first minibatch).
#
# Each is compared with **the best fixed** $\varepsilon$ of each case (of
# {glue:text}`fixed_eps` data scales, picked with hindsight as the one with the best mean test
# log-likelihood, which favours the fixed value), paired by seed. The default is the
# candidate that is never significantly below the best fixed $\varepsilon$, with the highest
# mean difference over the cases.

# %% tags=["hide-input"]
rs = compare.rule_study(df)
default = compare.choose_default(rs)
rs_show = rs.assign(**{"rule - best fixed": [
    f"{r['diff']:+.3f} [{r.lo:+.3f}, {r.hi:+.3f}]" for _, r in rs.iterrows()]})
rs_show["case"] = [d if a == "mlp" else f"{d} ({a})" for a, d in zip(rs.arch, rs.dataset)]
print(f"CNCE log-likelihood, eps rule minus the best fixed eps: mean "
      f"[{100 * (1 - (1 - rs.level.iloc[0])):.2f} % interval, Bonferroni over "
      f"{len(rs)} comparisons], {n_seeds} paired seeds")
print(rs_show.pivot(index="case", columns="rule", values="rule - best fixed")
      .loc[list(dict.fromkeys(rs_show.case)), list(dict.fromkeys(rs.rule))].to_string())
best_fixed = rs.drop_duplicates(["arch", "dataset"])
print("best fixed eps per case: " + ", ".join(
    f"{c} {b.split('=')[1]}" for c, b in zip(dict.fromkeys(rs_show.case), best_fixed.best_fixed)))
worse = {r: int((d.outcome == "lower").sum()) for r, d in rs.groupby("rule", sort=False)}
print("cases where the rule is significantly below the best fixed eps: "
      + ", ".join(f"{r} {n}" for r, n in worse.items()))
package_default = (f"fixed {cnn.DEFAULT_FACTOR:g}" if cnn.DEFAULT_SCHEDULE == "scale"
                   else cnn.DEFAULT_SCHEDULE)
print(f"the default (never significantly below, highest mean): {default}; "
      f"the package's eps='auto' is {package_default!r}")

# %% tags=["hide-input"] mystnb={"image": {"alt": "Interval plot, one row per case (data set and network): for each eps schedule a dot at the mean difference in held-out log-likelihood to the best fixed eps and a horizontal bar for its corrected interval, beside a vertical line at zero."}}
plots.interval_figure(rs, group="rule", label="eps rule",
                      xlabel="log-likelihood difference to the best fixed eps (nats)");

# %% [markdown]
# *Figure: not a figure of the paper. CNCE's held-out log-likelihood under each eps schedule
# minus that of the best fixed eps, per case; dots are means over seeds, bars the
# Bonferroni-corrected paired intervals. What to see: which colours have a bar wholly left of
# the zero line (the schedule is significantly worse than the best fixed eps in that case);
# a bar that crosses zero is no significant difference.*
#
# {glue:text}`rule_detail`

# %% tags=["hide-input"]
ok = [r for r, n in worse.items() if n == 0]
glue("rule_verdict",
     (f"eps rule: '{default}' is never significantly below the best fixed eps on the "
      f"{rs.groupby(['arch', 'dataset']).ngroups} cases and has the highest mean"
      + (", so it is what eps=\"auto\" does" if default == package_default else
         f"; the package's eps=\"auto\" is '{package_default}', not this rule")
      if default else
      "eps rule: every schedule is significantly below the best fixed eps somewhere")
     + (f" (candidates never significantly below: {', '.join(ok)})." if ok else "."))
glue("rule_detail",
     "Cases where each candidate falls significantly below the best fixed eps: "
     + "; ".join(f"{r}: {n}" for r, n in worse.items())
     + f". Mean difference over cases: "
     + ", ".join(f"{r} {d['diff'].mean():+.3f}" for r, d in rs.groupby("rule", sort=False))
     + " nats. The best fixed eps itself differs between cases, which a user does not "
       "know beforehand; the intervals are wide at this number of seeds, so 'not "
       "significantly below' bounds the loss only as tightly as the bars show.")

# %% [markdown]
# ## The four methods, tuned on equal terms
#
# Held-out log-likelihood of each method's validation-chosen candidate, mean over seeds
# (higher is better); "(k fail)": k of the chosen runs fail the normaliser check; "true" is
# the log-likelihood of the data's own density where it has a closed form (a ceiling).

# %% tags=["hide-input"]
tuned = compare.tuned(df)
order = list(dict.fromkeys(zip(tuned.arch, tuned.dataset)))
case_name = {c: c[1] if c[0] == "mlp" else f"{c[1]} ({c[0]})" for c in order}
rng_true = torch.Generator().manual_seed(seed)
table = []
for c in order:
    d = tuned[(tuned.arch == c[0]) & (tuned.dataset == c[1])]
    row = {"case": case_name[c]}
    for m in cnn.METHODS:
        dm_ = d[d.method == m]
        bad = int((~dm_.proper.astype(bool)).sum())
        row[LABELS[m]] = f"{dm_.ll_test.mean():.2f}" + (f" ({bad} fail)" if bad else "")
    x_true = cnn.sample_toy(c[1], 5000, generator=rng_true)
    tl = cnn.true_log_prob(c[1], x_true)
    row["true"] = "-" if tl is None else f"{float(tl.mean()):.2f}"
    table.append(row)
print(pd.DataFrame(table).set_index("case").to_string())
chosen = tuned.groupby(["method", "variant"]).size().rename("times chosen")
print("\ncandidates chosen on validation data (all cases and seeds):")
print(chosen.to_string())

pair = compare.paired(tuned)
pair["case"] = [case_name[(a, d)] for a, d in zip(pair.arch, pair.dataset)]
pair["CNCE minus"] = [f"{r['diff']:+.2f} [{r.lo:+.2f}, {r.hi:+.2f}] "
                      + {"higher": "higher", "lower": "lower",
                         "no significant difference": "n.s."}[r.outcome]
                      for _, r in pair.iterrows()]
pair["other"] = pair.other.map(LABELS)
print(f"\nCNCE minus each other method, paired by seed: mean "
      f"[{100 * pair.level.iloc[0]:.2f} % interval, Bonferroni over {len(pair)} "
      "comparisons]; n.s. = no significant difference")
print(pair.pivot(index="case", columns="other", values="CNCE minus")
      .loc[[case_name[c] for c in order], ["NCE", "DSM", "SSM"]].to_string())

# %% tags=["hide-input"] mystnb={"image": {"alt": "Interval plot, one row per case: for NCE, DSM and SSM a dot at the mean of CNCE's held-out log-likelihood minus that method's and a horizontal bar for its corrected interval, beside a vertical line at zero."}}
plots.interval_figure(pair.assign(other=pair.other.str.lower()), group="other",
                      label="CNCE minus",
                      xlabel="log-likelihood difference, CNCE minus the other (nats)");

# %% [markdown]
# *Figure: not a figure of the paper. CNCE's held-out log-likelihood minus each other
# method's, all tuned on the same validation budget; dots are means over seeds, bars the
# Bonferroni-corrected paired intervals. What to see: a bar wholly right of the zero line means
# CNCE is significantly higher than that method in that case, wholly left significantly lower,
# and a bar across zero no significant difference.*

# %% tags=["hide-input"]
items = compare.verdict_items(pair.assign(other=pair.other.str.lower()), LABELS)
glue("method_verdict",
     "Tuned methods: " + "; ".join(f"{lab}: {st}" for lab, st in items) + ".")
default_variant = (f"{cnn.DEFAULT_FACTOR:g}" if cnn.DEFAULT_SCHEDULE == "scale"
                   else cnn.DEFAULT_SCHEDULE)  # the study's rows of eps="auto"
defaults = compare.at_defaults(df, default_variant)
dm = defaults[defaults.arch == "mlp"]
mix = dm[dm.dataset == "mixture3"].assign(v=lambda t: t.ll_test)
mix_mean = mix.groupby("method").v.mean()
gap = mix_mean.max() - mix_mean["cnce"]
glue("mix_cnce", f"{mix_mean['cnce']:.2f}")
glue("mix_text", "the highest of the four methods at their defaults" if gap <= 0 else
     f"{gap:.3f} nats below the best of the four methods at their defaults "
     f"({LABELS[mix_mean.idxmax()]}, {mix_mean.max():.2f})")
glue("mix_seeds", mix.seed.nunique())
glue("auto_note", "" if cnn.DEFAULT_SCHEDULE != "scale" else
     f"(The study's CNCE row is eps = {cnn.DEFAULT_FACTOR:g} data scales of the whole "
     "training set; the loss object with eps=\"auto\" takes the scale of its first "
     "minibatch, an estimate of the same number.)")
pd_def = compare.paired(defaults)
glue("default_lower", int((pd_def.outcome == "lower").sum()))
glue("default_higher", int((pd_def.outcome == "higher").sum()))
glue("default_n", len(pd_def))
# the verdict block at the top of this page: its row of the claims ledger (data/claims/ledger.json,
# computed from the committed study by the same comparison functions)
glue_verdict_block("08_energy_networks", "A question of ours, beyond the paper: should a neural "
                   "energy be trained with CNCE rather than NCE, DSM or SSM, and with which eps "
                   "rule? Exact held-out log-likelihood, methods tuned on equal validation "
                   "budgets, six 2-D densities.", name="verdict_block")

# %% [markdown]
# **At the defaults, untuned.** On the three-Gaussian mixture (MLP, {glue:text}`mix_seeds`
# seeds), CNCE with `eps="auto"` has a mean held-out log-likelihood of {glue:text}`mix_cnce`,
# {glue:text}`mix_text`. Over all cases, CNCE at
# its defaults is significantly higher in {glue:text}`default_higher` and significantly lower
# in {glue:text}`default_lower` of {glue:text}`default_n` corrected comparisons with the
# others at theirs. {glue:text}`auto_note`

# %% tags=["hide-input"]
print(f"at the defaults (CNCE eps='auto' = {package_default!r}): CNCE minus the other, "
      "paired, Bonferroni-corrected")
pd_def["case"] = [d if a == "mlp" else f"{d} ({a})" for a, d in zip(pd_def.arch, pd_def.dataset)]
pd_def["CNCE minus"] = [f"{r['diff']:+.2f} [{r.lo:+.2f}, {r.hi:+.2f}]" for _, r in pd_def.iterrows()]
pd_def["other"] = pd_def.other.map(LABELS)
print(pd_def.pivot(index="case", columns="other", values="CNCE minus")
      .loc[list(dict.fromkeys(pd_def.case)), ["NCE", "DSM", "SSM"]].to_string())
print("mixture3 (MLP) at the defaults, mean held-out log-likelihood per method: "
      + ", ".join(f"{LABELS[m]} {mix_mean[m]:.3f}" for m in cnn.METHODS))

# %% [markdown]
# ## Samples beside the data
#
# `cnce.nn.langevin` (Langevin dynamics, here Metropolis-adjusted and annealed through
# temperatures 2 and 1, {glue:text}`final_share` of the steps at $T = 1$, the step size
# adapted toward an acceptance of {glue:text}`target_acc`) draws from a trained network.
# This page trains the MLP on the three-Gaussian mixture with each method at its defaults,
# in a loop of its own with the loss objects (`cnce.nn.CNCELoss(eps="auto")`, ...; the same
# code as `cnce.nn.train`, and bitwise the same result, which the tests check), for fewer
# steps than the study so that the page stays cheap, in float64 so that its printed numbers
# do not depend on the CPU. The loss's own parameters go to the optimiser with the
# network's (NCE's log-normaliser is one, `loss.parameters()`), and `cnce.nn.HealthCheck`
# watches every step for a collapse to a constant network (CNCE's $2\log 2$), a blow-up
# or a normaliser that does not train; `cnce.nn.train` runs the same check.

# %%
demo_steps, demo_batch = (300 if scale == "quick" else sc.steps), 128
g = torch.Generator().manual_seed(seed)
x_demo = cnn.sample_toy("mixture3", 3000, generator=g)
x_demo_test = cnn.sample_toy("mixture3", 3000, generator=g)
demo_losses = {"cnce": cnn.CNCELoss(sc.kappa, eps="auto", seed=seed),
               "nce": cnn.NCELoss(sc.kappa, data=x_demo, seed=seed),
               "dsm": cnn.DSMLoss(sc.kappa, seed=seed),
               "ssm": cnn.SSMLoss(sc.kappa, seed=seed)}
demo_nets, samples = {}, {}
x0 = 3 * torch.randn(1000, 2, generator=torch.Generator().manual_seed(seed + 1),
                     dtype=torch.float64)
for m, loss in demo_losses.items():
    net = cnn.MLPEnergy(2, sc.hidden, sc.layers, seed=seed, dtype=torch.float64)
    # the loss's parameters (NCE's log-normaliser) train with the network's
    opt = torch.optim.Adam(list(net.parameters()) + list(loss.parameters()), lr=sc.lr)
    check = cnn.HealthCheck(loss, lr=sc.lr)
    batches = torch.Generator().manual_seed(seed)
    for step in range(demo_steps):
        xb = x_demo[torch.randint(0, len(x_demo), (demo_batch,), generator=batches)]
        opt.zero_grad()
        value = loss(net, xb)
        value.backward()
        opt.step()
        check(value, net, xb)
    demo_nets[m] = net
    ll = cnn.log_likelihood(net, x_demo_test, n=sc.grid, on_fail="warn")
    samples[m], info = cnn.langevin(net, x0, steps=200, step_size=0.02, seed=seed,
                                    metropolis=True, temperatures=(2, 1), data=x_demo,
                                    return_info=True)
    # acceptance to one decimal: the adapted step follows the last bits of the network
    print(f"{LABELS[m]}: held-out log-likelihood {ll:.2f}; Langevin acceptance at T = 1 "
          f"{info['acceptance'][-1]:.1f}" + (f"; eps {loss.eps:.2f} ({loss.eps_choice['why']})"
                                             if m == "cnce" else ""))
glue("final_share", f"{100 * cnn.sampling.FINAL_SHARE:.0f} %")
glue("target_acc", f"{cnn.sampling.TARGET_ACCEPTANCE:.2f}")

# %% tags=["hide-input"] mystnb={"image": {"alt": "Five square scatter plots in a row: the three-Gaussian mixture's data points in black, then the Langevin samples from the network trained with CNCE, NCE, DSM and SSM in blue."}}
plots.samples_figure(x_demo[:1000], samples, title="mixture3 data");

# %% [markdown]
# *Figure: not a figure of the paper. Left: 1,000 points of the three-Gaussian mixture.
# Then 1,000 Langevin samples (Metropolis-adjusted, annealed) from the MLP trained with each
# method at its defaults for a few hundred steps; a method whose samples miss a component or
# spread beyond the data has learned a density that does the same. What to see: whether each
# method's samples cover all three clusters of the data, and no more.*
#
# ## Why: the link to score matching and DSM
#
# The paper's score-matching theorem (Sec. 2; {doc}`01_theory`) says that for
# $\mathbf{y} = \mathbf{x} + \varepsilon\boldsymbol\xi$,
# $J(\varepsilon) = 2\log 2 + \frac{\varepsilon^2}{2} J_{SM} + O(\varepsilon^3)$, with
# $J_{SM}$ score matching's objective. It holds for any network; here for the CNCE network
# just trained, with $J_{SM}$ by autograd (`cnce.losses`) and noise in antithetic pairs
# $\pm\boldsymbol\xi$:

# %%
net = demo_nets["cnce"]
x = x_demo[:2000]
xi = torch.randn(2000, sc.kappa, 2, generator=torch.Generator().manual_seed(seed),
                 dtype=torch.float64)
# antithetic pairs (xi, -xi): the terms odd in eps cancel exactly, as they do
# in expectation, so that the finite sample shows the eps^2 term
xi = torch.cat([xi, -xi], dim=1)
J_sm = float(cnce.losses.score_matching_loss(lambda u, th: net(u), x,
                                             torch.zeros(1)).detach())
eps_grid = [0.3, 0.1, 0.03, 0.01, 0.003]
with torch.no_grad():
    excess = [float(cnn.cnce_loss(net, x, xi, e)) - cnce.losses.LOG4
              for e in eps_grid]
ratio = [ex / (e**2 / 2 * J_sm) for ex, e in zip(excess, eps_grid)]
print("eps:  " + "  ".join(f"{e:>6g}" for e in eps_grid))
print("(J - 2 log 2) / (eps^2/2 J_SM):  " + "  ".join(f"{r:.3f}" for r in ratio))
glue("ratio_small", f"{ratio[-1]:.3f}")

# %% [markdown]
# The ratio tends to 1 as $\varepsilon \to 0$ ({glue:text}`ratio_small` at the smallest
# $\varepsilon$): at small $\varepsilon$, CNCE *is* score matching, the objective that SSM
# estimates with random projections. DSM matches the score of the data smoothed with
# $\mathcal N(0, \sigma^2 I)$, so its optimum is biased for every $\sigma > 0$; CNCE with the
# same Gaussian perturbation is consistent for *any* $\varepsilon$ (Sec. 2): a large
# $\varepsilon$ costs variance, not bias. A Gaussian energy shows the difference in closed
# form (`cnce.nn.GaussianEnergy`; the tests check both optima): trained on a Gaussian with
# CNCE at $\varepsilon = 1$ and with DSM at $\sigma = 1$, CNCE finds the data's covariance
# and DSM the covariance plus $\sigma^2 I$. This is why DSM's tuning above prefers small
# $\sigma$ where the data have fine detail.

# %%
cov = torch.tensor([[1.0, 0.6], [0.6, 2.0]], dtype=torch.float64)
g = torch.Generator().manual_seed(seed)
x_gauss = torch.randn(4000, 2, generator=g, dtype=torch.float64)
x_gauss = x_gauss @ torch.linalg.cholesky(cov).T
for method, kw in (("cnce", {"eps": 1.0}), ("dsm", {"sigma": 1.0})):
    energy = cnn.GaussianEnergy()
    cnn.train(energy, x_gauss, method, steps=600, batch_size=500, lr=0.03,
              seed=seed, progress=False, **kw)
    c = torch.linalg.inv(energy.precision().detach())
    print(f"{LABELS[method]}: fitted covariance [[{c[0, 0]:.2f}, {c[0, 1]:.2f}], "
          f"[{c[1, 0]:.2f}, {c[1, 1]:.2f}]]")
print("truth: [[1.00, 0.60], [0.60, 2.00]]; truth + I: [[2.00, 0.60], [0.60, 3.00]]")

# %% [markdown]
# ## Beyond two dimensions: a likelihood with an error bar
#
# The grid that scores the study works in two dimensions. Beyond them
# `cnce.nn.held_out_log_likelihood` estimates $\log Z$ by annealed importance sampling
# (AIS) from a Gaussian mixture fitted to the training data to the network's density, and
# brackets it with a reverse run that starts from the data; it reports the effective sample
# size of its weights and refuses a number when the bracket is wider than its tolerance or
# the weights degenerate (up to three dimensions it uses quadrature, with checks). The
# estimator must be able to fail, so it is first run on a density whose $\log Z$ is known:
# {glue:text}`nd_dim`-D data from a mixture of two Gaussians, whose own log-density plus
# {glue:text}`nd_shift` has $\log Z =$ {glue:text}`nd_shift`. Then an MLP is trained on
# the same data with CNCE (`eps="auto"`) and scored on held-out points, beside the data
# density's own log-likelihood (the ceiling).

# %% tags=["hide-input"]
nd_dim = 5
g = torch.Generator().manual_seed(seed)
nd_w = torch.tensor([0.35, 0.65], dtype=torch.float64)
nd_mu = torch.zeros(2, nd_dim, dtype=torch.float64)
nd_mu[:, 0] = torch.tensor([-1.5, 1.5], dtype=torch.float64)
nd_sd = torch.tensor([0.6, 0.9], dtype=torch.float64)


def nd_log_prob(u):
    d = ((u.unsqueeze(1) - nd_mu) ** 2).sum(-1) / nd_sd**2
    return torch.logsumexp(nd_w.log() - 0.5 * d - nd_dim * nd_sd.log()
                           - 0.5 * nd_dim * math.log(2 * math.pi), -1)


comp = torch.multinomial(nd_w, 6000, replacement=True, generator=g)
x_nd = nd_mu[comp] + nd_sd[comp, None] * torch.randn(6000, nd_dim, generator=g,
                                                      dtype=torch.float64)
x_nd_train, x_nd_test = x_nd[:3000], x_nd[3000:]
nd_shift = 1.5  # log Z of the known density below: its log-density plus this
glue("nd_dim", nd_dim)
glue("nd_shift", f"{nd_shift:g}")

# %%
known = cnn.log_normaliser(lambda u: nd_log_prob(u) + nd_shift, x_nd_train, seed=seed)
# two decimals: the AIS chains' accept decisions may differ in the last bits between CPUs
print(f"known density: log Z {known.log_z:.2f} in [{known.lo:.2f}, {known.hi:.2f}] "
      f"(truth {nd_shift:.2f}); forward {known.forward:.2f}, reverse {known.reverse:.2f}; "
      f"ESS {known.ess:.0f} of {known.chains} chains")
net_nd = cnn.MLPEnergy(nd_dim, 32, 2, seed=seed, dtype=torch.float64)
cnn.train(net_nd, x_nd_train, "cnce", steps=demo_steps, batch_size=demo_batch,
          lr=sc.lr, seed=seed, progress=False)
ll_nd = cnn.held_out_log_likelihood(net_nd, x_nd_test, x_nd_train, seed=seed)
ceiling = float(nd_log_prob(x_nd_test).mean())
print(f"CNCE network, {nd_dim}-D: held-out log-likelihood {ll_nd.value:.2f} in "
      f"[{ll_nd.lo:.2f}, {ll_nd.hi:.2f}] (AIS, ESS {ll_nd.normaliser.ess:.0f} of "
      f"{ll_nd.normaliser.chains}; the mean over the test points has standard error "
      f"{ll_nd.se_points:.2f}); the data density's own: {ceiling:.2f}")
glue("nd_known", f"{known.log_z:.2f} [{known.lo:.2f}, {known.hi:.2f}]")
glue("nd_ll", f"{ll_nd.value:.2f} [{ll_nd.lo:.2f}, {ll_nd.hi:.2f}]")
glue("nd_ceiling", f"{ceiling:.2f}")

# %% [markdown]
# On the known density the estimate is {glue:text}`nd_known` against the truth
# {glue:text}`nd_shift`; the
# network trained for a few hundred steps reaches {glue:text}`nd_ll` nats against the
# ceiling of {glue:text}`nd_ceiling`. The tests check the estimator on Gaussians and
# mixtures in 5 and 10 dimensions, and that it refuses an improper density and a budget too
# small for the density it is given.
#
# ## Beside torchebm
#
# torchebm is a PyTorch library for energy-based models: it trains an energy with
# contrastive divergence, score matching (exact, denoising, sliced) and flow-style
# objectives, and samples it with Langevin dynamics or HMC; it has no CNCE or NCE and no
# likelihood estimate. `cnce.nn` has CNCE, NCE, DSM and SSM as losses, a trainer that
# resumes, a health check, MALA with adaptation and held-out likelihoods with error bars.
# The committed benchmark (`python -m benchmarks.nn_torchebm`) trains the same network on
# the same data with each library's losses at equal settings ({glue:text}`bench_settings`)
# on one CPU thread and scores each run with the held-out log-likelihood above (torchebm
# has none of its own). Measured on {glue:text}`bench_machine`:

# %% tags=["hide-input"]
import json  # noqa: E402

from companion.paths import REPO_ROOT  # noqa: E402

bench = json.loads((REPO_ROOT / "benchmarks" / "results" / "nn-torchebm.json").read_text())
bs = bench["settings"]
glue("bench_settings", f"{bs['steps']} Adam steps of {bs['batch']} points at learning rate "
     f"{bs['lr']:g}, kappa = {bs['kappa']} draws per point, an MLP of {bs['layers']} x "
     f"{bs['hidden']} units")
mach = bench["machine"]
glue("bench_machine", f"{mach['cpu']}, {mach['cores']} cores shared with other jobs (load "
     f"{mach['load_average'][0]:.1f}), torch {mach['torch']}, torchebm {bench['torchebm']}, "
     f"commit {mach['git_commit'][:10]}")
NAMES = {"cnce": "CNCE", "nce": "NCE", "dsm": "DSM", "ssm": "SSM", "cd": "CD (Langevin)"}
tab = pd.DataFrame([{
    "data": f"{r['case']} ({r['D']}-D)", "library": r["library"], "method": NAMES[r["method"]],
    "steps/s": f"{r['steps_per_second']:.0f}",
    "held-out log-lik.": (f"{r['ll']:.2f} +- {r['ll_err']:.2f}" if r["ll"] == r["ll"]
                          else f"refused (<= {r['ll_upper']:.2f})"
                          if r["ll_upper"] == r["ll_upper"] else "refused"),
    "train s": f"{r['train_seconds']:.1f}",
    "log-lik. at half": (f"{r['curve'][0]['ll']:.2f} at {r['curve'][0]['seconds']:.1f} s"
                         if r["curve"] and r["curve"][0]["ll"] == r["curve"][0]["ll"] else "-"),
} for r in bench["rows"]])
print(tab.to_string(index=False))
th = bench["thread_ms"]
glue("thread_1", f"{th['1']:.0f} ms")
glue("thread_2", f"{th['2']:.0f} ms")

# %% [markdown]
# *Table: not from the paper. Steps per second (median step, one thread) and the held-out
# log-likelihood after all steps ("+-": half the estimator's interval; "refused": the AIS
# bracket was wider than its tolerance, with the forward run's stochastic upper bound), and
# after half of them with the training seconds so far. Equal settings are not equal
# optima: each method's best learning rate and noise scale differ, and one seed is shown.*
#
# **Threads.** On that machine one CNCE step of the 2-D network took {glue:text}`thread_1`
# on one torch thread and {glue:text}`thread_2` on two: for networks this small, torch's
# thread pool costs more than it saves, so `cnce.nn.train` and the likelihood estimators
# use one CPU thread for them unless told otherwise (`threads=`); in a loop of your own,
# call `torch.set_num_threads(1)`.

# %% [markdown]
# ## Limits of this study
#
# The networks are small and trained for {glue:text}`steps` steps, sized to the project's
# two-core machine; at that budget several runs are far from converged, and the verdicts are
# about this budget. Each method is tuned over three values of one setting; a wider grid or
# another setting (CNCE's learning rate, DSM's noise schedule) could move a row. Intervals
# over {glue:text}`n_seeds` seeds are wide, so "no significant difference" often means "not
# resolved", not "equal".
#
# ## Reproduce it
#
# - The study: `python -m cnce nn-study` (one CPU thread; it writes
#   `data/results/paper/nn-study.csv` row by row, resumes where it stopped, refuses to mix
#   code versions, and records the commit); this page reads it.
# - Your own network: `cnce.nn.train(net, x, method="cnce", steps=..., batch_size=...,
#   lr=..., seed=..., device="auto", checkpoint="run.pt")`, or a loop of your own with
#   `cnce.nn.CNCELoss(eps="auto")` ({doc}`00_quickstart`).
#
# Which code produced the stored study (commit, source hash, machine, wall time):

# %% tags=["nbval-ignore-output", "hide-input"]
env = prov["runs"][0]["environment"]
print({"git_commit": prov["git_commit"], "package_source_sha256": prov["package_source_sha256"][:16],
       "dirty": env.get("git_dirty_package"), "cpu": env.get("cpu"), "torch": env.get("torch"),
       "sessions": len(prov["runs"]),
       "wall_seconds": round(sum(r.get("wall_seconds", 0) for r in prov["runs"]))})
