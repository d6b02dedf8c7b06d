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
# This page shows the package's workflow in a few cells: fit a model to one dataset of your
# own, read what the fit returns, estimate many simulated problems at once with conditional
# noise-contrastive estimation (CNCE) and with NCE, and measure the error. Then it does the
# same for a model that you write yourself, one whose normalising constant has no closed
# form, and with a conditional noise distribution of your own.
#
# The cell below holds the page's parameters. The book is built with `scale = "quick"`;
# `python -m companion batch 00 --scale paper` reruns the page with more simulations and data.

# %% tags=["parameters"]
# Values you may change; then rerun all cells (Run > Run All Cells).
# scale: "quick": 20 simulations of 1000 points; "paper": 100 of 5000
scale = "quick"
seed = 0  # any integer: other true parameters, data and noise

# %%
import matplotlib.pyplot as plt
import torch

import cnce
from cnce.models import Gaussian
from cnce.models.base import UnnormalisedModel
from cnce.noise import ConditionalNoise

# simulations, data points each
S, N = {"quick": (20, 1000), "paper": (100, 5000)}[scale]
print(f"scale={scale}: {S} simulations of {N} data points")

# %% [markdown]
# ## One dataset: the call and what it returns
#
# `cnce.fit(model, x)` takes your data as a single array of shape `(N, D)`: $N$ observations
# of dimension $D$ (a `torch.Tensor`, or anything `torch.as_tensor` accepts). **Standardise
# the data first**, so that every dimension has mean 0 and variance 1. The paper assumes this
# right after Eq. (13): CNCE's noise $\mathbf{y} = \mathbf{x} + \varepsilon\boldsymbol{\xi}$ uses
# one scale $\varepsilon$ for every dimension, which only suits dimensions of similar spread.
# The parameters are then those of the standardised data. Here the data are $N$ draws from
# a correlated five-dimensional Gaussian, and the model is the paper's unnormalised Gaussian
# (Eq. 15), whose parameters are the 15 unique entries of the precision matrix.

# %%
g = torch.Generator().manual_seed(seed)
model = Gaussian(dim=5)
theta_mine = model.random_params(1, generator=g)
x_mine = model.sample(theta_mine, N, generator=g)[0]  # your data: (N, 5)
# standardised: mean 0, variance 1 per dimension
x_std = (x_mine - x_mine.mean(0)) / x_mine.std(0)
res = cnce.fit(model, x_std, method="cnce", kappa=10, eps="auto", seed=seed)
print(f"theta: shape {tuple(res.theta.shape)}; "
      f"eps chosen {float(res.eps):.2f}; "
      f"converged {bool(res.converged)} "
      f"after {int(res.n_iter)} Newton steps; "
      f"loss {float(res.init_loss):.4f} at the start, "
      f"{float(res.loss):.4f} at the end")
# the Gaussian has a closed-form MLE: a reference
mle = cnce.fit(model, x_std, method="mle")
dist = float(torch.linalg.vector_norm(res.theta - mle.theta))
norm = float(torch.linalg.vector_norm(mle.theta))
print(f"distance to the maximum-likelihood estimate {dist:.2f} "
      f"(norm of the estimate {norm:.2f})")

# %% [markdown]
# The result is a `FitResult` ({doc}`../book/api` lists every field):
#
# - `theta`: the estimated parameters, `(P,)` for one dataset (`model.n_params` of them, in the
#   model's order; `model.precision(theta)` turns the Gaussian's into a matrix);
# - `eps`: the noise scale $\varepsilon$ used (chosen by the heuristic when `eps="auto"`; NaN for
#   methods without conditional noise);
# - `loss` and `init_loss`: the loss at the end and at the start; `n_iter`, `converged` and
#   `grad_norm`: the optimiser's steps, whether it met its convergence test, and the final
#   gradient norm;
# - `method`, `kappa`, `seconds`, `info` (which backend ran), and for NCE `log_normaliser`,
#   the learned log-normalising constant $c$.
#
# `res.error(model, theta_true)` gives the squared estimation error when the true parameters
# are known, as below.
#
# ## Many simulations at once
#
# `cnce.models.Gaussian(dim=5)` can also draw ground-truth parameters for `S` independent
# simulations at once, and sample `N` points for each, so that `x` has shape `(S, N, D)`. One
# call to `cnce.fit` then estimates all `S` problems together, and every field of the result
# gets a leading axis of length `S`.

# %%
theta_true = model.random_params(S, generator=g)
x = model.sample(theta_true, N, generator=g)
print("data:", tuple(x.shape), " parameters:", tuple(theta_true.shape))

results = {m: cnce.fit(model, x, method=m, seed=seed)  # kappa = 10 and eps = "auto" by default
           for m in ("cnce", "nce", "mle")}
for name, res in results.items():
    err = model.error(res.theta, theta_true)
    print(f"{name:>4}: median squared error {err.median():.3g}, "
          f"converged {int(res.converged.sum())}/{S}")

# %% [markdown]
# CNCE chose the noise scale $\varepsilon$ for each simulation with the authors' heuristic:
# it widens or narrows the perturbations $\mathbf{y} = \mathbf{x} + \varepsilon\boldsymbol{\xi}$
# until the loss at the initial parameters is clearly below its value $2\log 2$ at
# $\varepsilon = 0$, but not so far below that data and noise become trivially separable.

# %%
eps = results["cnce"].eps
print(f"eps chosen by the heuristic: median {eps.median():.2f}, "
      f"range {eps.min():.2f} to {eps.max():.2f}")

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
#
# The class attributes tell `cnce.fit` what the model is:
#
# - `name`, `dim` ($D$, the data's dimension) and `n_params` ($P$, the length of
#   $\boldsymbol\theta$) are required.
# - `smooth = True` declares that $\log\phi$ is twice differentiable in $\mathbf{u}$ where the
#   data lie, so that score matching (`method="sm"`) applies; the default is `False`. The ICA
#   model, with its kinks $|\mathbf{b}_j\cdot\mathbf{u}|$, is not smooth (see the theory page).
# - Optional declarations make fits faster or enable more methods: `linear = True` with a
#   `features` method when $\log\phi$ is linear in the parameters (each CNCE step is then a
#   logistic regression on fixed features), `discrete = True` for discrete data (bit-flip
#   noise), `log_partition` or `mle_closed_form` for maximum likelihood. The module
#   `cnce.models.base` lists them all ({doc}`../book/api`).

# %%
class Quartic(UnnormalisedModel):
    """log phi(u) = -theta1 u^2 - theta2 u^4 in one dimension."""

    name, dim, n_params, smooth = "quartic", 1, 2, True

    def _log_phi(self, u, theta):  # u: (S, M, 1), theta: (S, 2) -> (S, M)
        u = u[..., 0]
        return -theta[:, :1] * u**2 - theta[:, 1:] * u**4

    def init_params(self, S, generator=None):
        return torch.ones(S, 2, dtype=torch.float64)

    def sample(self, theta, n, generator=None):
        grid = torch.linspace(-4, 4, 4001, dtype=torch.float64)
        u = grid.expand(theta.shape[0], -1).unsqueeze(-1)
        density = self._log_phi(u, theta).exp()
        cdf = density.cumsum(-1) / density.sum(-1, keepdim=True)
        uniform = torch.rand(theta.shape[0], n, generator=generator,
                             dtype=torch.float64)
        i = torch.searchsorted(cdf, uniform).clamp(max=grid.numel() - 1)
        return grid[i].unsqueeze(-1)


quartic = Quartic()
theta_q = torch.tensor([[0.5, 0.25]], dtype=torch.float64).expand(S, 2)
x_q = quartic.sample(theta_q, N, generator=g)
fits_q = {m: cnce.fit(quartic, x_q, method=m, kappa=10, seed=seed)
          for m in ("cnce", "nce")}
for name, res in fits_q.items():
    med = res.theta.median(dim=0).values
    err = quartic.error(res.theta, theta_q)
    print(f"{name:>4}: median estimate ({med[0]:.2f}, {med[1]:.2f}), "
          f"true (0.50, 0.25); median squared error {err.median():.2g}")

# %% [markdown]
# The histogram of one simulation's data against the fitted density (normalised numerically
# on the plotting grid, only for the picture):

# %% tags=["hide-input"] mystnb={"image": {"alt": "Histogram of one simulation of the quartic model's data with the densities of its CNCE and NCE fits drawn over it."}}
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
# *Figure: not a figure of the paper. One simulation of the quartic model's data against the
# densities of its CNCE and NCE fits.*

# %% [markdown]
# ## Your own conditional noise
#
# CNCE's noise is a conditional distribution $p_c(\mathbf{y} \mid \mathbf{x})$; the package's
# default is the Gaussian of Eq. (13) (and the bit flips of Eq. 64 for binary data). Another one
# is a subclass of `cnce.noise.ConditionalNoise` with two methods: `draw_base` draws the random
# numbers, shape `(S, N, kappa, D)`, once, and `apply` turns them into noise samples for any
# $\varepsilon$, so that the $\varepsilon$ heuristic can try many values on the same numbers. A
# symmetric $p_c$ (as here) needs nothing else, since its terms cancel in Eq. (9); an asymmetric
# one sets `symmetric = False` and implements `log_prob`, $\log p_c(\mathbf{y}\mid\mathbf{x})$.
# Here is Laplace noise with unit variance per dimension, $\mathbf{y} = \mathbf{x} + \varepsilon\boldsymbol{\ell}$,
# used on the quartic model above.

# %%
class LaplaceNoise(ConditionalNoise):
    """y = x + eps * l, l independent Laplace of variance 1 (symmetric)."""

    symmetric = True

    def draw_base(self, x, kappa, generator=None):
        # x: (S, N, D) -> base (S, N, kappa, D)
        S, N, D = x.shape
        v = torch.rand(S, N, kappa, D, generator=generator, dtype=x.dtype)
        v = v - 0.5
        # inverse CDF of the Laplace law
        return -torch.sign(v) * torch.log1p(-2 * v.abs()) / 2**0.5

    def apply(self, x, base, eps):  # eps: (S,)
        return x.unsqueeze(-2) + eps.view(-1, 1, 1, 1) * base


fit_laplace = cnce.fit(quartic, x_q, method="cnce", kappa=10, seed=seed,
                       noise=LaplaceNoise())
med = fit_laplace.theta.median(dim=0).values
err = quartic.error(fit_laplace.theta, theta_q)
print(f"CNCE with Laplace noise: "
      f"median estimate ({med[0]:.2f}, {med[1]:.2f}), "
      f"true (0.50, 0.25); median squared error {err.median():.2g}; "
      f"median eps {fit_laplace.eps.median():.2f}")

# %% [markdown]
# ## Your own energy network
#
# A neural network is an unnormalised model too. `cnce.nn.train` fits any `torch.nn.Module`
# that maps a batch `(B, D)` to unnormalised log-densities `(B,)` by minibatch CNCE, with
# $\varepsilon$ set by the rule that {doc}`08_energy_networks` found never significantly worse
# than the best fixed $\varepsilon$ (`eps="auto"`: a fixed multiple of the data's scale)
# (`method="nce"`, `"dsm"` and `"ssm"` train it with NCE, denoising or sliced score
# matching instead). In two dimensions
# `cnce.nn.log_likelihood` normalises the network on a grid, so the fit can be scored
# exactly; {doc}`08_energy_networks` compares the four methods this way.

# %%
import cnce.nn

g_net = torch.Generator().manual_seed(seed)
x_net = cnce.nn.sample_toy("8gaussians", 4000, generator=g_net)
x_test = cnce.nn.sample_toy("8gaussians", 1000, generator=g_net)
# float64 weights, so that the printed digits do not depend on the CPU
net = cnce.nn.MLPEnergy(dim=2, hidden=32, layers=2, seed=seed,
                        dtype=torch.float64)
fit_net = cnce.nn.train(net, x_net, method="cnce", kappa=10, eps="auto",
                        steps=300, batch_size=128, lr=1e-2, seed=seed,
                        progress=False)
print(f"eps at the end {fit_net.eps:.2f}; loss {fit_net.history['loss'][0]:.3f} "
      f"at the start, {fit_net.history['loss'][-1]:.3f} at the end; "
      f"held-out log-likelihood {cnce.nn.log_likelihood(net, x_test):.2f}")

# %% [markdown]
# ## Where to go next
#
# - `cnce.fit(model, x, method=...)` also takes `"mle"` (when the model has a normalised
#   form) and `"sm"` (score matching); `kappa` sets the number of noise samples per data point
#   and `eps` a fixed noise scale instead of the heuristic.
# - The following pages reproduce the paper's experiments with the same calls, at a larger
#   scale and with many more simulations.
