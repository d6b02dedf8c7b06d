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
import warnings
from dataclasses import dataclass

import torch

from .._validation import check_positive_int

__all__ = ["TOYS", "CASES", "DATASETS", "sample_toy", "ImproperDensityError", "normaliser_check", "NormaliserCheck",
           "QuarticEnergy", "eight_gaussians_log_prob", "true_log_prob", "MLPEnergy", "GaussianEnergy", "grid",
           "grid_log_normaliser", "log_likelihood", "BOX"]

TOYS = ("8gaussians", "2spirals", "checkerboard", "rings")
#: two densities a practitioner would bring: a mixture of three anisotropic
#: Gaussians and a banana (closed-form densities: :func:`true_log_prob`)
CASES = ("mixture3", "banana")
DATASETS = TOYS + CASES

#: half-width L of the box [-L, L]^2 on which densities are normalised (holds every toy's data)
BOX = 4.5


def _check_toy(name: str) -> str:
    if name not in DATASETS:
        raise ValueError(f"name must be one of {DATASETS}; got {name!r}")
    return name


#: the three anisotropic Gaussians of ``mixture3``: weights, means and covariances
_MIX3_W = (0.5, 0.3, 0.2)
_MIX3_MU = ((-1.8, -1.0), (1.8, -0.8), (0.0, 2.0))


def _mix3_cov(dtype=torch.float64):
    out = []
    for (a, b, ang) in ((1.0, 0.25, 0.5), (0.7, 0.2, -0.8), (0.9, 0.35, 0.0)):
        c, s_ = math.cos(ang), math.sin(ang)
        R = torch.tensor([[c, -s_], [s_, c]], dtype=dtype)
        out.append(R @ torch.diag(torch.tensor([a * a, b * b], dtype=dtype)) @ R.T)
    return torch.stack(out)


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
    if name == "mixture3":
        k = torch.multinomial(torch.tensor(_MIX3_W, dtype=torch.float64), n, replacement=True, generator=g)
        Lc = torch.linalg.cholesky(_mix3_cov(dtype))
        mu = torch.tensor(_MIX3_MU, dtype=dtype)
        return mu[k] + (Lc[k] @ randn(n, 2).unsqueeze(-1)).squeeze(-1)
    if name == "banana":
        x1 = 1.5 * randn(n)
        return torch.stack([x1, 0.25 * x1**2 - 1.5 + 0.5 * randn(n)], -1)
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
    """The toy's normalised log-density where it has a closed form (``8gaussians``,
    ``checkerboard``, ``mixture3``, ``banana``), else ``None``. The checkerboard's is ``-log 32``
    on its squares and ``-inf`` off them; the others ignore the mass outside the box (draws
    there are redrawn; below 1e-2 for the banana, far below for the rest)."""
    _check_toy(name)
    if name == "8gaussians":
        return eight_gaussians_log_prob(x)
    if name == "mixture3":
        mvn = torch.distributions.MultivariateNormal(torch.tensor(_MIX3_MU, dtype=x.dtype), _mix3_cov(x.dtype))
        lw = torch.log(torch.tensor(_MIX3_W, dtype=x.dtype))
        return torch.logsumexp(mvn.log_prob(x.unsqueeze(-2)) + lw, -1)
    if name == "banana":
        n1 = torch.distributions.Normal(0.0, 1.5).log_prob(x[..., 0])
        return n1 + torch.distributions.Normal(0.25 * x[..., 0] ** 2 - 1.5, 0.5).log_prob(x[..., 1])
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


class QuarticEnergy(torch.nn.Module):
    """A second architecture: ``log phi(x) = a^T m(x) - sum_k (w_k^T m(x))^2`` with ``m(x)`` the
    monomials of degree 1 and 2 of ``x`` (five in two dimensions) and ``K`` rows ``w_k``: a
    polynomial of degree four whose top-degree part is minus a sum of squares, so it is a
    proper density whenever the quadratic parts of the ``w_k`` span the quadratic forms (its
    initial weights do). Linear in none of its inputs, and smooth: every loss applies."""

    def __init__(self, dim: int = 2, K: int = 8, *, seed: int = 0, dtype=torch.float32):
        super().__init__()
        self.dim = check_positive_int(dim, "dim")
        K = check_positive_int(K, "K")
        self.n_features = self.dim + self.dim * (self.dim + 1) // 2
        g = torch.Generator().manual_seed(int(seed))
        self.a = torch.nn.Parameter((0.1 * torch.randn(self.n_features, generator=g, dtype=torch.float64)).to(dtype))
        self.w = torch.nn.Parameter((torch.randn(K, self.n_features, generator=g, dtype=torch.float64)
                                     / math.sqrt(self.n_features * K)).to(dtype))

    def features(self, x):
        i, j = torch.triu_indices(self.dim, self.dim, device=x.device)
        return torch.cat([x, x[:, i] * x[:, j]], -1)

    def forward(self, x):
        m = self.features(x)
        return m @ self.a - ((m @ self.w.T) ** 2).sum(-1)


class ImproperDensityError(ValueError):
    """The grid normaliser cannot be trusted: mass outside the box, or a grid too coarse."""


def _box_of(box):
    """``box`` as ``((x0, x1), (y0, y1))``: a half-width ``L`` (``[-L, L]^2``) or two intervals."""
    if isinstance(box, (int, float)) and not isinstance(box, bool):
        if not (math.isfinite(box) and box > 0):
            raise ValueError(f"box must be a half-width > 0 or ((x0, x1), (y0, y1)); got {box!r}")
        return ((-float(box), float(box)), (-float(box), float(box)))
    try:
        (a0, a1), (b0, b1) = box
        out = ((float(a0), float(a1)), (float(b0), float(b1)))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"box must be a half-width > 0 or ((x0, x1), (y0, y1)); got {box!r}") from exc
    if not all(math.isfinite(v) for iv in out for v in iv) or not (out[0][0] < out[0][1] and out[1][0] < out[1][1]):
        raise ValueError(f"box must be a half-width > 0 or finite intervals ((x0, x1), (y0, y1)) with x0 < x1 "
                         f"and y0 < y1; got {box!r}")
    return out


def grid(n: int = 300, box=BOX, *, dtype=torch.float64, device=None) -> tuple[torch.Tensor, float]:
    """Midpoints ``(n * n, 2)`` of an ``n x n`` grid on the box (a half-width ``L`` for
    ``[-L, L]^2``, or ``((x0, x1), (y0, y1))``) and the cell area."""
    n = check_positive_int(n, "n")
    (x0, x1), (y0, y1) = _box_of(box)
    hx, hy = (x1 - x0) / n, (y1 - y0) / n
    tx = x0 + hx * (torch.arange(n, dtype=dtype, device=device) + 0.5)
    ty = y0 + hy * (torch.arange(n, dtype=dtype, device=device) + 0.5)
    gx, gy = torch.meshgrid(tx, ty, indexing="xy")
    return torch.stack([gx.reshape(-1), gy.reshape(-1)], -1), hx * hy


@torch.no_grad()
def _log_phi_on(log_phi, u: torch.Tensor, chunk: int = 65536) -> torch.Tensor:
    from .losses import evaluate

    return torch.cat([evaluate(log_phi, u[i:i + chunk]).double() for i in range(0, u.shape[0], chunk)])


def grid_log_normaliser(log_phi, *, n: int = 300, box=BOX) -> float:
    """``log Z = log integral_box phi(u) du`` by the midpoint rule on an ``n x n`` grid (in
    float64), for a network or callable ``(B, 2) -> (B,)``; ``box`` as in :func:`grid`."""
    dtype, device = _dtype_device(log_phi)
    u, area = grid(n, box, dtype=dtype, device=device)
    return float(torch.logsumexp(_log_phi_on(log_phi, u), 0)) + math.log(area)


@dataclass(frozen=True)
class NormaliserCheck:
    """The grid normaliser and its two checks (nats).

    Attributes:
        log_z: ``log Z`` on the box, ``n x n`` cells.
        log_z_wide: on the box widened ``widen`` times about its centre, same cell size.
        log_z_coarse: on the box with ``n // 2 x n // 2`` cells.
        outside: ``log_z_wide - log_z``: ``-log`` of the fraction of the wide box's mass that
            lies in the box (0 for a density that vanishes outside the box).
        resolution: the midpoint rule's error estimated by Richardson's rule,
            ``|log_z - log_z_coarse| / 3`` (the error falls as the cell width squared).
        tol: the tolerance both are compared with.
    """

    log_z: float
    log_z_wide: float
    log_z_coarse: float
    box: tuple
    n: int
    tol: float

    @property
    def outside(self) -> float:
        return self.log_z_wide - self.log_z

    @property
    def resolution(self) -> float:
        return abs(self.log_z - self.log_z_coarse) / 3

    @property
    def ok(self) -> bool:
        return bool(self.outside <= self.tol and self.resolution <= self.tol)

    def problem(self) -> str | None:
        """What fails, in words (``None`` when both checks pass)."""
        bits = []
        if not self.outside <= self.tol:
            bits.append(f"log Z grows by {self.outside:.3g} nats (> tol = {self.tol:g}) when the box "
                        f"{self.box} is widened, so the density has mass outside it (it may be improper: an "
                        "energy that falls linearly, or not at all, far from the data)")
        if not self.resolution <= self.tol:
            bits.append(f"the grid's resolution error is about {self.resolution:.3g} nats (> tol = {self.tol:g}) "
                        f"at n = {self.n}: raise n")
        return "; ".join(bits) or None


def normaliser_check(log_phi, *, n: int = 300, box=BOX, widen: float = 2.0, tol: float = 0.05) -> NormaliserCheck:
    """``log Z`` on the box with the checks of :class:`NormaliserCheck`: on the box widened
    ``widen`` times (same cell size, so ``widen**2`` times the points) and on a grid of half
    the resolution."""
    n = check_positive_int(n, "n", 2)
    if not (isinstance(widen, (int, float)) and widen > 1):
        raise ValueError(f"widen must be a number > 1; got {widen!r}")
    if not (isinstance(tol, (int, float)) and tol > 0):
        raise ValueError(f"tol must be a number > 0; got {tol!r}")
    b = _box_of(box)
    (x0, x1), (y0, y1) = b
    cx, cy, rx, ry = (x0 + x1) / 2, (y0 + y1) / 2, widen * (x1 - x0) / 2, widen * (y1 - y0) / 2
    n_wide = int(round(n * widen))
    return NormaliserCheck(
        log_z=grid_log_normaliser(log_phi, n=n, box=b),
        log_z_wide=grid_log_normaliser(log_phi, n=n_wide, box=((cx - rx, cx + rx), (cy - ry, cy + ry))),
        log_z_coarse=grid_log_normaliser(log_phi, n=n // 2, box=b), box=b, n=n, tol=float(tol))


def log_likelihood(log_phi, x: torch.Tensor, *, n: int = 300, box=BOX, check: bool = True, tol: float = 0.05,
                   on_fail: str = "raise") -> float:
    """Mean held-out log-likelihood ``mean log phi(x) - log Z`` of points ``x (N, 2)`` inside the
    box, with ``log Z`` from :func:`grid_log_normaliser` (``box``: a half-width or
    ``((x0, x1), (y0, y1))``).

    With ``check`` (default), :func:`normaliser_check` first: when ``log Z`` grows by more
    than ``tol`` nats on a box twice as wide (the density has mass outside the box: a network
    whose log-density rises, or falls too slowly, away from the data), or the grid's
    resolution error exceeds ``tol``, the number would not be a log-likelihood of the
    network's density: ``on_fail="raise"`` raises :class:`ImproperDensityError` naming the box,
    ``"warn"`` warns and returns NaN.
    """
    if on_fail not in ("raise", "warn"):
        raise ValueError(f"on_fail must be 'raise' or 'warn'; got {on_fail!r}")
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[-1] != 2:
        raise ValueError(f"x must have shape (N, 2); got {tuple(getattr(x, 'shape', ()))}")
    (x0, x1), (y0, y1) = b = _box_of(box)
    inside = (x[:, 0] >= x0) & (x[:, 0] <= x1) & (x[:, 1] >= y0) & (x[:, 1] <= y1)
    if not inside.all():
        raise ValueError(f"x must lie in the box {b} where the density is normalised; "
                         f"{int((~inside).sum())} of {x.shape[0]} points do not")
    dtype, device = _dtype_device(log_phi)
    if check:
        c = normaliser_check(log_phi, n=n, box=b, tol=tol)
        if not c.ok:
            msg = f"log_likelihood: {c.problem()}"
            if on_fail == "raise":
                raise ImproperDensityError(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            return float("nan")
        lz = c.log_z
    else:
        lz = grid_log_normaliser(log_phi, n=n, box=b)
    return float(_log_phi_on(log_phi, x.to(dtype=dtype, device=device)).mean()) - lz


def _dtype_device(log_phi):
    if isinstance(log_phi, torch.nn.Module):
        p = next(iter(log_phi.parameters()), None)
        if p is not None:
            return p.dtype, p.device
    return torch.float64, None
