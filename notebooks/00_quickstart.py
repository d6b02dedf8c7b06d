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
# # Using cnce on your own model
#
# This page shows the package's workflow in a few cells: draw data from a model, estimate its
# parameters with conditional noise-contrastive estimation (CNCE) and with NCE, and measure
# the error. Then it does the same for a model that you write yourself, one whose
# normalising constant has no closed form.
#
# The cell below holds the page's parameters. The book is built with `scale = "quick"`;
# `python -m cnce batch 00 --scale paper` reruns the page with more simulations and data.

# %% tags=["parameters"]
# Values you may change; then rerun all cells (in JupyterLab: Run > Run All Cells).
scale = "quick"  # "quick": 20 simulations of 1000 points each; "paper": 100 simulations of 5000
seed = 0  # any integer: other true parameters, data and noise

# %%
import matplotlib.pyplot as plt
import torch

import cnce
from cnce.models import Gaussian
from cnce.models.base import UnnormalisedModel

S, N = {"quick": (20, 1000), "paper": (100, 5000)}[scale]  # simulations, data points each
print(f"scale={scale}: {S} simulations of {N} data points")

# %% [markdown]
# ## A model from the package
#
# `cnce.models.Gaussian(dim=5)` is the paper's unnormalised five-dimensional Gaussian, whose
# 15 parameters are the unique entries of the precision matrix. A model draws ground-truth
# parameters for `S` independent simulations at once, and samples `N` points for each, so
# `x` has shape `(S, N, D)`. One call to `cnce.fit` then estimates all `S` problems together.

# %%
g = torch.Generator().manual_seed(seed)
model = Gaussian(dim=5)
theta_true = model.random_params(S, generator=g)
x = model.sample(theta_true, N, generator=g)
print("data:", tuple(x.shape), " parameters:", tuple(theta_true.shape))

results = {m: cnce.fit(model, x, method=m, kappa=10, eps="auto", seed=seed) for m in ("cnce", "nce", "mle")}
for name, res in results.items():
    err = model.error(res.theta, theta_true)
    print(f"{name:>4}: median squared error {err.median():.3g}, converged {int(res.converged.sum())}/{S}")

# %% [markdown]
# CNCE chose the noise scale $\varepsilon$ for each simulation with the authors' heuristic:
# it widens or narrows the perturbations $\mathbf{y} = \mathbf{x} + \varepsilon\boldsymbol{\xi}$
# until the loss at the initial parameters is clearly below its value $2\log 2$ at
# $\varepsilon = 0$, but not so far below that data and noise become trivially separable.

# %%
eps = results["cnce"].eps
print(f"eps chosen by the heuristic: median {eps.median():.2f}, range {eps.min():.2f} to {eps.max():.2f}")

# %% [markdown]
# ## Your own unnormalised model
#
# A model is a small subclass of `UnnormalisedModel`: it declares its dimension and number of
# parameters and implements `_log_phi`, the log of the unnormalised density, for a batch of
# `S` parameter vectors and `S` datasets. Here is a one-dimensional density with a quartic
# term,
#
# $$\log\phi(u; \boldsymbol{\theta}) = -\theta_1 u^2 - \theta_2 u^4, \qquad \theta_1, \theta_2 > 0,$$
#
# whose normalising constant $\int \phi(u;\boldsymbol{\theta})\,du$ has no closed form.
# To make test data we also give it a sampler (inverse CDF on a grid) and initial values.
# CNCE and NCE need nothing else: the constant cancels in CNCE, and NCE learns it.

# %%
class Quartic(UnnormalisedModel):
    """log phi(u) = -theta1 u^2 - theta2 u^4 in one dimension (a user-defined example)."""

    name, dim, n_params, smooth = "quartic", 1, 2, True

    def _log_phi(self, u, theta):  # u: (S, M, 1), theta: (S, 2) -> (S, M)
        u = u[..., 0]
        return -theta[:, :1] * u**2 - theta[:, 1:] * u**4

    def init_params(self, S, generator=None):
        return torch.ones(S, 2, dtype=torch.float64)

    def sample(self, theta, n, generator=None):
        grid = torch.linspace(-4, 4, 4001, dtype=torch.float64)
        density = self._log_phi(grid.expand(theta.shape[0], -1).unsqueeze(-1), theta).exp()
        cdf = density.cumsum(-1) / density.sum(-1, keepdim=True)
        uniform = torch.rand(theta.shape[0], n, generator=generator, dtype=torch.float64)
        return grid[torch.searchsorted(cdf, uniform).clamp(max=grid.numel() - 1)].unsqueeze(-1)


quartic = Quartic()
theta_q = torch.tensor([[0.5, 0.25]], dtype=torch.float64).expand(S, 2)
x_q = quartic.sample(theta_q, N, generator=g)
fits_q = {m: cnce.fit(quartic, x_q, method=m, kappa=10, seed=seed) for m in ("cnce", "nce")}
for name, res in fits_q.items():
    med = res.theta.median(dim=0).values
    err = quartic.error(res.theta, theta_q)
    print(f"{name:>4}: median estimate ({med[0]:.2f}, {med[1]:.2f}), true (0.50, 0.25); "
          f"median squared error {err.median():.2g}")

# %% [markdown]
# The histogram of one simulation's data against the fitted density (normalised numerically
# on the plotting grid, only for the picture):

# %%
u = torch.linspace(-3, 3, 601, dtype=torch.float64)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.hist(x_q[0, :, 0].numpy(), bins=50, density=True, color="0.8", label="data (simulation 0)")
for name, res in fits_q.items():
    dens = quartic.log_phi(u.unsqueeze(-1), res.theta[0]).exp()
    ax.plot(u.numpy(), (dens / torch.trapezoid(dens, u)).numpy(), label=f"{name.upper()} fit")
ax.set_xlabel("$u$")
ax.set_ylabel("density")
ax.legend(frameon=False);

# %% [markdown]
# ## Where to go next
#
# - `cnce.fit(model, x, method=...)` also takes `"mle"` (when the model has a normalised
#   form) and `"sm"` (score matching); `kappa` sets the number of noise samples per data point
#   and `eps` a fixed noise scale instead of the heuristic.
# - The following pages reproduce the paper's experiments with the same calls, at a larger
#   scale and with many more simulations.
