"""The four standard 2-D toy densities, a small MLP energy, and exact log-likelihoods on a grid.

The toys follow the definitions that the score-matching and flow papers' toy code made
standard (FFJORD's ``toy_data.py``, Grathwohl et al., 2019), with random instead of evenly
spaced angles for the rings so that every point is an independent draw:

* ``8gaussians``: 8 isotropic Gaussians, std ``0.5 / 1.414``, centred on a circle of radius
  ``4 / 1.414``, equal weights (closed-form density: :func:`eight_gaussians_log_prob`);
* ``2spirals``: two interleaved spirals with uniform jitter and Gaussian noise 0.1;
* ``checkerboard``: uniform on the 8 black squares of a 4 x 4 board of side 8 (density
  ``1/32`` on them, 0 elsewhere);
* ``rings``: 4 concentric rings of radii 3, 2.25, 1.5 and 0.75, Gaussian noise 0.08.

In two dimensions the normalising constant of any network can be computed on a grid:
:func:`grid_log_normaliser` integrates ``phi`` over the box ``[-L, L]^2`` with the midpoint
rule, and :func:`log_likelihood` returns ``log phi(x) - log Z`` on held-out points, the exact
log-likelihood of the model restricted to the box (up to the quadrature error, measured on
the Gaussian mixture, whose normaliser is known).
"""
from __future__ import annotations

import math

import torch

from .._validation import check_positive_int

__all__ = ["TOYS", "sample_toy", "eight_gaussians_log_prob", "true_log_prob", "MLPEnergy", "GaussianEnergy", "grid",
           "grid_log_normaliser", "log_likelihood", "BOX"]

TOYS = ("8gaussians", "2spirals", "checkerboard", "rings")

#: half-width L of the box [-L, L]^2 on which densities are normalised (holds every toy's data)
BOX = 4.5


def _check_toy(name: str) -> str:
    if name not in TOYS:
        raise ValueError(f"name must be one of {TOYS}; got {name!r}")
    return name


def sample_toy(name: str, n: int, *, generator: torch.Generator | None = None, dtype=torch.float64) -> torch.Tensor:
    """``n`` independent points ``(n, 2)`` of the toy ``name`` (one of :data:`TOYS`).

    Points outside the box ``[-BOX, BOX]^2`` (a few in 10^6 for the Gaussian-noise toys) are
    redrawn, so that every point lies where the grid normalises the densities."""
    _check_toy(name)
    n = check_positive_int(n, "n")
    out = torch.empty(0, 2, dtype=dtype)
    while out.shape[0] < n:
        x = _draw(name, n, generator, dtype)
        x = x[(x.abs() < BOX).all(-1)]
        out = torch.cat([out, x])
    return out[:n]


def _draw(name, n, g, dtype):
    def rand(*s):
        return torch.rand(*s, generator=g, dtype=dtype)

    def randn(*s):
        return torch.randn(*s, generator=g, dtype=dtype)

    if name == "8gaussians":
        k = torch.randint(0, 8, (n,), generator=g)
        ang = k.to(dtype) * (math.pi / 4)
        centres = 4.0 * torch.stack([torch.cos(ang), torch.sin(ang)], -1)
        return (centres + 0.5 * randn(n, 2)) / 1.414
    if name == "2spirals":
        t = torch.sqrt(rand(n)) * 540 * (2 * math.pi / 360)
        arm = torch.stack([-torch.cos(t) * t + rand(n) * 0.5, torch.sin(t) * t + rand(n) * 0.5], -1)
        sign = torch.where(rand(n) < 0.5, -1.0, 1.0).to(dtype).unsqueeze(-1)
        return sign * arm / 3 + 0.1 * randn(n, 2)
    if name == "checkerboard":
        x1 = rand(n) * 4 - 2
        x2 = rand(n) - torch.randint(0, 2, (n,), generator=g).to(dtype) * 2
        x2 = x2 + torch.floor(x1) % 2
        return torch.stack([x1, x2], -1) * 2
    radius = torch.tensor([3.0, 2.25, 1.5, 0.75], dtype=dtype)[torch.randint(0, 4, (n,), generator=g)]
    ang = rand(n) * 2 * math.pi
    return radius.unsqueeze(-1) * torch.stack([torch.cos(ang), torch.sin(ang)], -1) + 0.08 * randn(n, 2)


def eight_gaussians_log_prob(x: torch.Tensor) -> torch.Tensor:
    """The normalised log-density of ``8gaussians`` at ``x (..., 2)`` (closed form)."""
    ang = torch.arange(8, dtype=x.dtype, device=x.device) * (math.pi / 4)
    centres = 4.0 / 1.414 * torch.stack([torch.cos(ang), torch.sin(ang)], -1)
    s2 = (0.5 / 1.414) ** 2
    d2 = ((x.unsqueeze(-2) - centres) ** 2).sum(-1)
    return torch.logsumexp(-0.5 * d2 / s2, -1) - math.log(8) - math.log(2 * math.pi * s2)


def true_log_prob(name: str, x: torch.Tensor) -> torch.Tensor | None:
    """The toy's normalised log-density where it has a closed form (``8gaussians`` and
    ``checkerboard``), else ``None``. The checkerboard's is ``-log 32`` on its squares and
    ``-inf`` off them; the Gaussian mixture's ignores the tiny mass outside the box."""
    _check_toy(name)
    if name == "8gaussians":
        return eight_gaussians_log_prob(x)
    if name == "checkerboard":
        on = ((torch.floor(x[..., 0] / 2) + torch.floor(x[..., 1] / 2)) % 2 == 0) & (x.abs() <= 4).all(-1)
        return torch.where(on, torch.full_like(x[..., 0], -math.log(32.0)), torch.full_like(x[..., 0], -math.inf))
    return None


class MLPEnergy(torch.nn.Module):
    """A small MLP ``log phi: (B, D) -> (B,)`` with SiLU activations (smooth, so that the
    score-matching losses, which differentiate twice, apply).

    Args:
        dim: input dimension D.
        hidden: units per hidden layer.
        layers: number of hidden layers.
        seed: seeds the initial weights (PyTorch's default initialisation, drawn from a
            generator of its own, so the global random state is untouched).
        dtype: parameter dtype.
    """

    def __init__(self, dim: int = 2, hidden: int = 64, layers: int = 3, *, seed: int = 0, dtype=torch.float32):
        super().__init__()
        dim, hidden, layers = (check_positive_int(dim, "dim"), check_positive_int(hidden, "hidden"),
                               check_positive_int(layers, "layers"))
        sizes = [dim] + [hidden] * layers
        mods = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            mods += [torch.nn.Linear(a, b, dtype=dtype), torch.nn.SiLU()]
        mods.append(torch.nn.Linear(sizes[-1], 1, dtype=dtype))
        self.net = torch.nn.Sequential(*mods)
        g = torch.Generator().manual_seed(int(seed))
        with torch.no_grad():
            for m in self.net:
                if isinstance(m, torch.nn.Linear):  # PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
                    bound = 1.0 / math.sqrt(m.in_features)
                    m.weight.copy_((torch.rand(m.weight.shape, generator=g, dtype=torch.float64) * 2 - 1) * bound)
                    m.bias.copy_((torch.rand(m.bias.shape, generator=g, dtype=torch.float64) * 2 - 1) * bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


class GaussianEnergy(torch.nn.Module):
    """``log phi(x) = -1/2 (x - mu)^T P (x - mu)`` in two dimensions, ``P = L L^T`` with ``L``
    lower triangular (log-parametrised diagonal): a network whose optimum is known in closed
    form for every loss (the data's Gaussian; for DSM the data's Gaussian smoothed by the noise)."""

    def __init__(self, dtype=torch.float64):
        super().__init__()
        self.mu = torch.nn.Parameter(torch.zeros(2, dtype=dtype))
        self.raw = torch.nn.Parameter(torch.zeros(3, dtype=dtype))  # log L11, L21, log L22

    def precision(self) -> torch.Tensor:
        r = self.raw
        z = torch.zeros((), dtype=r.dtype, device=r.device)
        Lc = torch.stack([torch.stack([r[0].exp(), z]), torch.stack([r[1], r[2].exp()])])
        return Lc @ Lc.T

    def forward(self, x):
        d = x - self.mu
        return -0.5 * ((d @ self.precision()) * d).sum(-1)


def grid(n: int = 300, box: float = BOX, *, dtype=torch.float64, device=None) -> tuple[torch.Tensor, float]:
    """Midpoints ``(n * n, 2)`` of an ``n x n`` grid on ``[-box, box]^2`` and the cell area."""
    n = check_positive_int(n, "n")
    if not box > 0:
        raise ValueError(f"box must be > 0; got {box!r}")
    h = 2 * box / n
    t = -box + h * (torch.arange(n, dtype=dtype, device=device) + 0.5)
    gx, gy = torch.meshgrid(t, t, indexing="xy")
    return torch.stack([gx.reshape(-1), gy.reshape(-1)], -1), h * h


@torch.no_grad()
def _log_phi_on(log_phi, u: torch.Tensor, chunk: int = 65536) -> torch.Tensor:
    from .losses import evaluate

    return torch.cat([evaluate(log_phi, u[i:i + chunk]).double() for i in range(0, u.shape[0], chunk)])


def grid_log_normaliser(log_phi, *, n: int = 300, box: float = BOX) -> float:
    """``log Z = log integral_{[-box, box]^2} phi(u) du`` by the midpoint rule on an ``n x n``
    grid (in float64), for a network or callable ``(B, 2) -> (B,)``."""
    dtype, device = _dtype_device(log_phi)
    u, area = grid(n, box, dtype=dtype, device=device)
    return float(torch.logsumexp(_log_phi_on(log_phi, u), 0)) + math.log(area)


def log_likelihood(log_phi, x: torch.Tensor, *, n: int = 300, box: float = BOX) -> float:
    """Mean held-out log-likelihood ``mean log phi(x) - log Z`` of points ``x (N, 2)`` inside the
    box, with ``log Z`` from :func:`grid_log_normaliser`."""
    if x.ndim != 2 or x.shape[-1] != 2:
        raise ValueError(f"x must have shape (N, 2); got {tuple(x.shape)}")
    if not (x.abs() <= box).all():
        raise ValueError(f"x must lie in the box [-{box}, {box}]^2 where the density is normalised")
    dtype, device = _dtype_device(log_phi)
    lz = grid_log_normaliser(log_phi, n=n, box=box)
    return float(_log_phi_on(log_phi, x.to(dtype=dtype, device=device)).mean()) - lz


def _dtype_device(log_phi):
    if isinstance(log_phi, torch.nn.Module):
        p = next(iter(log_phi.parameters()), None)
        if p is not None:
            return p.dtype, p.device
    return torch.float64, None
