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
# Stand-in page while `cnce.fit` lands.

# %% tags=["parameters"]
scale = "quick"
seed = 0

# %%
import torch
torch.set_num_threads(1)
from cnce.losses import cnce_loss, LOG4

g = torch.Generator().manual_seed(seed)
x = torch.randn(500, 1, generator=g, dtype=torch.float64) * 0.5
theta = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
xi = torch.randn(500, 10, 1, generator=g, dtype=torch.float64)
y = x.unsqueeze(1) + 0.3 * xi
opt = torch.optim.LBFGS([theta], max_iter=200, line_search_fn="strong_wolfe")
def closure():
    opt.zero_grad()
    l = cnce_loss(-0.5 * theta * (x ** 2).sum(-1), -0.5 * theta * (y ** 2).sum(-1))
    l.backward()
    return l
opt.step(closure)
print("estimated precision:", round(theta.item(), 2), "(true 4.0)")

# %% [markdown]
# Math check: $J_N = 2\log 2$ at $\varepsilon = 0$, and
#
# $$G(\mathbf{u}_1, \mathbf{u}_2) = \log \phi(\mathbf{u}_1) - \log \phi(\mathbf{u}_2).$$

# %%
import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(4, 3))
ax.hist(x.squeeze().numpy(), bins=30)
ax.set_xlabel("x");
