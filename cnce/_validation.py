"""Argument checks shared by the public API (internal). Errors name the argument and value."""
from __future__ import annotations

import numbers

import torch

__all__ = ["check_data", "check_theta", "check_kappa", "check_eps", "check_positive_int", "per_simulation"]


def _describe(v) -> str:
    if isinstance(v, torch.Tensor):
        if v.numel() <= 6:
            return f"tensor({v.tolist()})"
        return f"tensor of shape {tuple(v.shape)}"
    return repr(v)


def per_simulation(value, S: int, like: torch.Tensor) -> torch.Tensor:
    """A number or an ``(S,)`` tensor as an ``(S,)`` tensor of ``like``'s dtype and device (a
    scalar is expanded, not copied)."""
    return torch.as_tensor(value, dtype=like.dtype, device=like.device).expand(S)


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            raise ValueError(f"{name} must be an integer >= {minimum}; got the float {value!r}")
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def check_kappa(kappa) -> int:
    """kappa: the number of noise samples per data point, an integer >= 1."""
    return check_positive_int(kappa, "kappa", 1)


def check_data(x, dim: int, *, name: str = "x", dtype=torch.float64, device=None) -> tuple[torch.Tensor, bool]:
    """Return ``(x as (S, N, D) tensor, was_batched)``; reject wrong shapes, NaN and inf."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be a tensor or array of shape (S, N, D) or (N, D); got {type(x).__name__}") from exc
    if x.dtype == torch.bool or not (x.is_floating_point() or x.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
        if x.dtype != torch.bool:
            raise ValueError(f"{name} must hold real numbers; got dtype {x.dtype}")
    x = x.to(dtype=dtype, device=device)
    if x.ndim == 2:
        batched = False
        x = x.unsqueeze(0)
    elif x.ndim == 3:
        batched = True
    else:
        raise ValueError(f"{name} must have shape (S, N, D) or (N, D) with D = {dim}; got shape {tuple(x.shape)}")
    if x.shape[-1] != dim:
        raise ValueError(f"{name} must have last dimension D = {dim} for this model; got shape {tuple(x.shape)}")
    if x.shape[1] < 2:
        raise ValueError(f"{name} must hold at least 2 data points per simulation; got shape {tuple(x.shape)}")
    if x.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one simulation; got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all():
        bad = (~torch.isfinite(x)).nonzero()[0].tolist()
        raise ValueError(f"{name} contains NaN or inf (first at index {bad}); got a non-finite value {x[tuple(bad)].item()!r}")
    return x, batched


def check_theta(theta, n_params: int, S: int | None = None, *, name: str = "theta", dtype=torch.float64, device=None) -> torch.Tensor:
    """Return theta as an ``(S, P)`` tensor (a ``(P,)`` vector is broadcast to S rows)."""
    if not isinstance(theta, torch.Tensor):
        try:
            theta = torch.as_tensor(theta, dtype=dtype)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(f"{name} must be a tensor of shape (S, {n_params}) or ({n_params},); got {type(theta).__name__}") from exc
    theta = theta.to(dtype=dtype, device=device)
    given = tuple(theta.shape)
    if theta.ndim == 1:
        theta = theta.unsqueeze(0)
        if S is not None:
            theta = theta.expand(S, -1)
    if theta.ndim != 2 or theta.shape[-1] != n_params or (S is not None and theta.shape[0] != S):
        want = f"({S if S is not None else 'S'}, {n_params})"
        raise ValueError(f"{name} must have shape {want} or ({n_params},); got shape {given}")
    if torch.isnan(theta).any():
        raise ValueError(f"{name} contains NaN; got {_describe(theta)}")
    return theta


def check_eps(eps, S: int, *, upper: float | None = None, dtype=torch.float64, device=None):
    """A number or an (S,) tensor becomes an (S,) tensor in ``[0, upper]`` (the caller handles
    ``"auto"``)."""
    if isinstance(eps, (bool, str)):
        raise ValueError(f"eps must be 'auto' or a non-negative number; got {eps!r}")
    try:
        e = torch.as_tensor(eps, dtype=dtype, device=device)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"eps must be 'auto' or a non-negative number; got {eps!r}") from exc
    scalar = e.ndim == 0
    if scalar:
        e = per_simulation(e, S, e).clone()
    if e.shape != (S,):
        raise ValueError(f"eps must be a scalar or have shape ({S},); got shape {tuple(e.shape)}")
    if not torch.isfinite(e).all() or (e < 0).any():
        raise ValueError(f"eps must be finite and >= 0; got {_describe(e[0].item() if scalar else e)}")
    if upper is not None and (e > upper).any():
        raise ValueError(f"eps must lie in [0, {upper}] for this noise (a flip probability); got {_describe(e[0].item() if scalar else e)}")
    return e
