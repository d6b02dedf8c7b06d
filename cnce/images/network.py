"""The four-layer unnormalised neural image model of Section 4 (Eqs. 18-25, footnote 1).

Only the *effective* model ``log phi~`` is computed: the Gaussian term ``-u.u/2`` of Eq. (18)
cancels against the one in the conditional noise of Eq. (19), so that G depends on ``phi~``
and the effective noise ``p~_c`` alone (Eq. 20).

Layers (Table 1 of Supp. D.1 for the paper's sizes ``D, K1, K2, D3, K3, K4``)::

    u~  = gain_control(u)                          Eq. (21), u in the D-dim PCA space
    z1  = W1 u~                                    Eq. (22)   K1 x D
    z2  = log((W2**2) z1**2 + 1)                   Eq. (23)   K2 x K1, squared weights
    u3  = gain_control(whiten2(z2))                whitening of z2 to D3 dims, then Eq. (21)
    z3  = W3 u3                                    Eq. (24)   K3 x D3 (max(W3 u3, 0) in
                                                   log phi~^(3) with the authors' "Max" option)
    z4  = (W4**2) z3                               Eq. (24)   K4 x K3, squared weights
    log phi~^(L) = sum_j f_th(z_j^(L) + b_j^(L))   Eq. (25), L = 2, 3, 4
    log phi~^(1) = sum_j f_th(log(z1_j**2 + 1) + b_j^(1))

The network is trained greedily (:mod:`cnce.images.train`): while layer L is trained, layers
``< L`` are frozen, so their output (the *input* of layer L, :meth:`Layer.input` of the
per-layer view :meth:`ImageNetwork.layer`) is computed once per meta-iteration without
gradients and :meth:`Layer.log_phi` evaluates the trainable top.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..constraints import Integer, validate

__all__ = ["f_th", "gain_control", "ImageNetwork", "Layer"]


def f_th(u: torch.Tensor) -> torch.Tensor:
    """The smooth rectifier of footnote 1: ``f_th(u) = 0.25 log(cosh(2u)) + 0.5 u + 0.17``.

    Since ``log cosh(2u) = 2u + log(1 + exp(-4u)) - log 2``, this equals
    ``0.25 softplus(4u) + 0.17 - 0.25 log 2``: one fused, overflow-free operation.
    """
    return 0.25 * F.softplus(4.0 * u) + (0.17 - 0.25 * math.log(2.0))


def gain_control(u: torch.Tensor) -> torch.Tensor:
    """Eq. (21): centre each vector and rescale it to norm ``sqrt(D - 1)``, ``D = u.shape[-1]``."""
    D = u.shape[-1]
    c = u - u.mean(-1, keepdim=True)
    return math.sqrt(D - 1) * c / c.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _orthonormal_rows(K: int, D: int, g: torch.Generator) -> torch.Tensor:
    """``K x D`` matrix with orthonormal rows (``K <= D``) or columns (``K > D``), from a QR of a
    Gaussian matrix."""
    A = torch.randn(max(K, D), min(K, D), generator=g)
    Q, R = torch.linalg.qr(A)
    Q = Q * torch.sign(torch.diagonal(R))  # a unique, uniformly random orthonormal set
    return Q if K > D else Q.T.contiguous()


INITS = ("authors", "orthonormal")
L3_NONLINEARITIES = ("max", "linear")
L3_CENTRES = ("ensemble", "sample")


class ImageNetwork(nn.Module):
    """Weights ``W1..W4``, thresholds ``b1..b4`` and the between-layer whitening (buffers).

    Args:
        D: input dimension (PCA space).
        K1, K2, K3, K4: numbers of units per layer.
        D3: dimension after the intermediate whitening (``<= K2``).
        seed: seed of the random initialisation.
        init: ``"authors"`` (default; their ``SingleNeuronLayer.m`` / ``DoubleNeuronLayer.m``, on
            which the paper is silent): feature weights ``randn / sqrt(D_in - 1)``, thresholds
            ``b1, b2, b3`` uniform in ``[-2, -1]``; pooling weights small and dense, each squared
            weight ``q = 0.01 rand / (D_in - 1)`` with ``D_in`` the input dimension of the feature
            layer below (``D`` for layer 2, ``D3`` for layer 4); ``b4`` uniform in ``[0, 1]`` (their
            "LinearLinear" pooling of layer 4). ``"orthonormal"``: the project's earlier start,
            orthonormal feature rows of norm ``init_scale`` and thresholds ``b_init``.
        init_scale, b_init: used by ``init="orthonormal"`` only.
        l3_nonlinearity: ``"max"`` (default; the rectifying "Max" activator their
            ``run_L3_training.m`` trains layer 3 with): ``log phi~^(3)`` thresholds
            ``max(z3, 0)``; ``"linear"``: ``z3`` as Eq. (24) reads. Layer 4 pools the linear
            ``z3`` either way (their "LinearLinear" layer).
        l3_centre: how ``z2`` is centred before the intermediate whitening: ``"ensemble"``
            (default; the ensemble mean, fitted by :meth:`fit_whitening2`) or ``"sample"`` (the
            authors' code: each sample's mean over its ``K2`` outputs first, then the ensemble
            mean of what remains).
    """

    LAYERS = (1, 2, 3, 4)

    def __init__(self, D: int = 600, K1: int = 600, K2: int = 200, D3: int = 196, K3: int = 60, K4: int = 30, seed: int = 0,
                 init: str = "authors", init_scale: float = 1.0, b_init: float = -2.0, l3_nonlinearity: str = "max",
                 l3_centre: str = "ensemble"):
        super().__init__()
        for name, v in dict(D=D, K1=K1, K2=K2, D3=D3, K3=K3, K4=K4).items():
            validate(v, Integer(lo=2), name)
        if D3 > K2:
            raise ValueError(f"D3 must be <= K2 = {K2}; got {D3!r}")
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}; got {init!r}")
        if l3_nonlinearity not in L3_NONLINEARITIES:
            raise ValueError(f"l3_nonlinearity must be one of {L3_NONLINEARITIES}; got {l3_nonlinearity!r}")
        if l3_centre not in L3_CENTRES:
            raise ValueError(f"l3_centre must be one of {L3_CENTRES}; got {l3_centre!r}")
        self.sizes = dict(D=D, K1=K1, K2=K2, D3=D3, K3=K3, K4=K4)
        self.init = init
        self.l3_nonlinearity = l3_nonlinearity
        self.l3_centre = l3_centre
        g = torch.Generator().manual_seed(int(seed))
        if init == "authors":
            self._init_authors(g)
        else:
            self._init_orthonormal(g, init_scale, b_init)
        # Intermediate whitening of z2 (fitted after layer 2 is trained).
        self.register_buffer("wh2_mean", torch.zeros(K2))
        self.register_buffer("wh2_P", torch.eye(K2)[:, :D3].clone())

    def _init_authors(self, g: torch.Generator) -> None:
        s = self.sizes
        D, K1, K2, D3, K3, K4 = (s[k] for k in ("D", "K1", "K2", "D3", "K3", "K4"))
        u = lambda *shape: torch.rand(*shape, generator=g)  # noqa: E731
        self.W1 = nn.Parameter(torch.randn(K1, D, generator=g) / math.sqrt(D - 1))
        self.b1 = nn.Parameter(-1.0 - u(K1))
        self.W2 = nn.Parameter(torch.sqrt(0.01 * u(K2, K1) / (D - 1)))
        self.b2 = nn.Parameter(-1.0 - u(K2))
        self.W3 = nn.Parameter(torch.randn(K3, D3, generator=g) / math.sqrt(D3 - 1))
        self.b3 = nn.Parameter(-1.0 - u(K3))
        self.W4 = nn.Parameter(torch.sqrt(0.01 * u(K4, K3) / (D3 - 1)))
        self.b4 = nn.Parameter(1.0 - u(K4))

    def _init_orthonormal(self, g: torch.Generator, init_scale: float, b_init: float) -> None:
        s = self.sizes
        D, K1, K2, D3, K3, K4 = (s[k] for k in ("D", "K1", "K2", "D3", "K3", "K4"))
        # Feature layers start with orthonormal rows and negative thresholds. With orthonormal
        # rows sum_j z_j**2 is the same for every gain-controlled input, so G starts near 0 and
        # the loss near 2 log 2; random rows would give G a large zero-mean spread (and a loss far
        # above 2 log 2) that the training must first undo. Rows of norm ~1 with b ~ -2 put the
        # units in the sparse regime (only large |z| are above threshold); small rows with b = 0
        # make the model nearly quadratic, and it then learns second-order cues only.
        self.W1 = nn.Parameter(init_scale * _orthonormal_rows(K1, D, g))
        self.b1 = nn.Parameter(torch.full((K1,), float(b_init)))
        # Pooling weights q = w**2 start small and dense: each unit pools a bit of everything.
        self.W2 = nn.Parameter(torch.rand(K2, K1, generator=g) * math.sqrt(2.0 / K1))
        self.b2 = nn.Parameter(torch.full((K2,), -1.0))
        self.W3 = nn.Parameter(init_scale * _orthonormal_rows(K3, D3, g))
        self.b3 = nn.Parameter(torch.full((K3,), float(b_init)))
        self.W4 = nn.Parameter(torch.rand(K4, K3, generator=g) * math.sqrt(2.0 / K3))
        self.b4 = nn.Parameter(torch.full((K4,), -1.0))

    # -- one layer ----------------------------------------------------------------------------
    def layer(self, layer: int) -> Layer:
        """The per-layer view of layer ``layer`` (1 to 4): its parameters, its input through the
        frozen layers below, its output and ``log phi~^(L)``. The trainer turns a layer number
        into this view once; everything below it works with the view."""
        return Layer(self, layer)

    def layer_params(self, layer: int) -> list[nn.Parameter]:
        return self.layer(layer).params()

    def _check_layer(self, layer: int) -> None:
        if layer not in self.LAYERS:
            raise ValueError(f"layer must be one of {self.LAYERS}; got {layer!r}")

    # -- the blocks ------------------------------------------------------------------------
    def z1(self, u: torch.Tensor) -> torch.Tensor:
        return gain_control(u) @ self.W1.T

    def z2(self, z1: torch.Tensor) -> torch.Tensor:
        return torch.log1p((z1**2) @ (self.W2**2).T)

    def _centre2(self, z2: torch.Tensor) -> torch.Tensor:
        """``z2`` less each sample's mean over its outputs (``l3_centre="sample"``), else as is."""
        return z2 - z2.mean(-1, keepdim=True) if self.l3_centre == "sample" else z2

    def u3(self, z2: torch.Tensor) -> torch.Tensor:
        return gain_control((self._centre2(z2) - self.wh2_mean) @ self.wh2_P)

    def z3(self, u3: torch.Tensor) -> torch.Tensor:
        return u3 @ self.W3.T

    def z4(self, z3: torch.Tensor) -> torch.Tensor:
        return z3 @ (self.W4**2).T

    def fit_whitening2(self, z2: torch.Tensor) -> float:
        """PCA-whiten the layer-2 outputs ``z2 (n, K2)`` to ``D3`` dimensions (the intermediate
        gain control), after the centring of ``l3_centre``; returns the fraction of variance
        retained."""
        z2 = self._centre2(z2.double())
        mean = z2.mean(0)
        lam, V = torch.linalg.eigh(torch.cov((z2 - mean).T))
        lam, V = lam.flip(0).clamp_min(1e-12), V.flip(1)
        D3 = self.sizes["D3"]
        self.wh2_mean.copy_(mean.to(self.wh2_mean))
        self.wh2_P.copy_((V[:, :D3] / lam[:D3].sqrt()).to(self.wh2_P))
        return float(lam[:D3].sum() / lam.sum())

    def layer_input(self, u: torch.Tensor, layer: int) -> torch.Tensor:
        """:meth:`Layer.input` of layer ``layer``."""
        return self.layer(layer).input(u)

    def layer_output(self, h: torch.Tensor, layer: int) -> torch.Tensor:
        """:meth:`Layer.output` of layer ``layer``."""
        return self.layer(layer).output(h)

    def layer_log_phi(self, h: torch.Tensor, layer: int) -> torch.Tensor:
        """:meth:`Layer.log_phi` of layer ``layer``."""
        return self.layer(layer).log_phi(h)

    def log_phi(self, u: torch.Tensor, layer: int = 4) -> torch.Tensor:
        """The effective model ``log phi~^(layer)(u)`` of Eqs. (20) and (25) for patches ``u (..., D)``."""
        view = self.layer(layer)
        return view.log_phi(view.input(u))

    def extra_repr(self) -> str:
        return (", ".join(f"{k}={v}" for k, v in self.sizes.items())
                + f", init={self.init}, l3={self.l3_nonlinearity}, l3_centre={self.l3_centre}")


class Layer:
    """Layer ``number`` of an :class:`ImageNetwork` (:meth:`ImageNetwork.layer`): what the greedy
    training of that layer reads, with the layer fixed once. While layer L is trained the layers
    below it are frozen: :meth:`input` is their output, :meth:`log_phi` the trainable top."""

    def __init__(self, net: ImageNetwork, layer: int):
        net._check_layer(layer)
        self.net, self.number = net, int(layer)

    @property
    def W(self) -> nn.Parameter:
        return getattr(self.net, f"W{self.number}")

    @property
    def b(self) -> nn.Parameter:
        return getattr(self.net, f"b{self.number}")

    def below(self) -> Layer:
        """The layer under this one (layer 1 has none)."""
        return Layer(self.net, self.number - 1)

    def params(self) -> list[nn.Parameter]:
        """The weights and thresholds the training of this layer moves: ``[W, b]``."""
        return [self.W, self.b]

    def input(self, u: torch.Tensor) -> torch.Tensor:
        """The input of this layer given whitened patches ``u (..., D)``, through the frozen
        layers below it: ``u~`` (L1), ``z1`` (L2), ``u3`` (L3), ``z3`` (L4)."""
        net, L = self.net, self.number
        if L == 1:
            return gain_control(u)
        h = net.z1(u)
        if L == 2:
            return h
        h = net.u3(net.z2(h))
        if L == 3:
            return h
        return net.z3(h)

    def output(self, h: torch.Tensor) -> torch.Tensor:
        """Pre-threshold outputs of this layer from its input ``h``: ``log(z1**2 + 1)`` for L1
        (the extra nonlinearity of Sec. 4.1), ``z2``, ``z3`` (``max(z3, 0)`` with
        ``l3_nonlinearity="max"``), ``z4``."""
        net, L = self.net, self.number
        if L == 1:
            return torch.log1p((h @ net.W1.T) ** 2)
        if L == 2:
            return net.z2(h)
        if L == 3:
            z = net.z3(h)
            return torch.relu(z) if net.l3_nonlinearity == "max" else z
        return net.z4(h)

    def log_phi(self, h: torch.Tensor) -> torch.Tensor:
        """Eq. (25): ``log phi~^(L) = sum_j f_th(z_j^(L) + b_j^(L))`` from the layer input ``h``."""
        return f_th(self.output(h) + self.b).sum(-1)

    def __repr__(self) -> str:
        return f"Layer({self.number} of {self.net.extra_repr()})"
